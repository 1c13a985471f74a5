// libcurl, opened on first use: see CCurl.h.

// CURLOPT_PROTOCOLS and CURLOPT_REDIR_PROTOCOLS, deprecated since 7.85, are
// what a libcurl older than that has (ccurl_easy_allow_only_http).
#define CURL_DISABLE_DEPRECATION 1
#include "CCurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#if defined(__APPLE__)
#define CCURL_LIBRARY "libcurl.4.dylib"
#else
#define CCURL_LIBRARY "libcurl.so.4"
#endif

// The functions, from the library ccurl_load opened. Written once, by load()
// under `once`; read only after pthread_once has returned, which orders the
// writes before every read.
static struct {
    curl_version_info_data *(*version_info)(CURLversion version);
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    void (*easy_reset)(CURL *handle);
    const char *(*easy_strerror)(CURLcode code);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *multi);
    CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption option, ...);
    CURLMcode (*multi_add_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_perform)(CURLM *multi, int *running);
    CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd *fds, unsigned int count, int timeout_ms, int *ready);
    CURLMcode (*multi_wakeup)(CURLM *multi);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *remaining);
    const char *(*multi_strerror)(CURLMcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *line);
    void (*slist_free_all)(struct curl_slist *list);
} curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[512];
// libcurl's version (0xXXYYZZ) and its text, once the library is open.
static unsigned int version_number;
static const char *version_text = "of unknown version";

static void load(void) {
    // RTLD_LAZY binds libcurl's libraries as the dynamic loader binds a
    // linked one: each library marked BIND_NOW (most of Debian's) at once,
    // the others as their functions are first called. RTLD_NOW bound those
    // others whole as well: 2.75 M instructions more than linking libcurl, for
    // a program that requests a token at once (BENCHMARKS.md).
    void *library = dlopen(CCURL_LIBRARY, RTLD_LAZY | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(load_error, sizeof load_error, "%s", reason != NULL ? reason : CCURL_LIBRARY " could not be opened");
        return;
    }
    // Every libcurl has curl_version_info: read first, so that a library
    // too old for what follows is named by its version.
    *(void **)&curl.version_info = dlsym(library, "curl_version_info");
    if (curl.version_info != NULL) {
        const curl_version_info_data *info = curl.version_info(CURLVERSION_FIRST);
        if (info != NULL) {
            version_number = info->version_num;
            if (info->version != NULL) version_text = info->version;
        }
    }
    // A libcurl older than 7.68 lacks curl_multi_wakeup: refused here, with
    // the name of what is missing and the version needed, not by a crash later.
#define CCURL_SYMBOL(field)                                                                        \
    do {                                                                                           \
        *(void **)&curl.field = dlsym(library, "curl_" #field);                                    \
        if (curl.field == NULL) {                                                                  \
            snprintf(load_error, sizeof load_error,                                                \
                     "%s (libcurl %s) has no curl_" #field ": libcurl " CCURL_MINIMUM_VERSION_TEXT \
                     " or later is needed",                                                        \
                     CCURL_LIBRARY, version_text);                                                 \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    CCURL_SYMBOL(version_info);
    CCURL_SYMBOL(global_init);
    CCURL_SYMBOL(easy_init);
    CCURL_SYMBOL(easy_cleanup);
    CCURL_SYMBOL(easy_reset);
    CCURL_SYMBOL(easy_strerror);
    CCURL_SYMBOL(easy_setopt);
    CCURL_SYMBOL(easy_getinfo);
    CCURL_SYMBOL(multi_init);
    CCURL_SYMBOL(multi_cleanup);
    CCURL_SYMBOL(multi_setopt);
    CCURL_SYMBOL(multi_add_handle);
    CCURL_SYMBOL(multi_remove_handle);
    CCURL_SYMBOL(multi_perform);
    CCURL_SYMBOL(multi_poll);
    CCURL_SYMBOL(multi_wakeup);
    CCURL_SYMBOL(multi_info_read);
    CCURL_SYMBOL(multi_strerror);
    CCURL_SYMBOL(slist_append);
    CCURL_SYMBOL(slist_free_all);
#undef CCURL_SYMBOL
    loaded = 1;
}

int ccurl_load(void) {
    pthread_once(&once, load);
    return loaded ? 0 : -1;
}

const char *ccurl_load_error(void) {
    return ccurl_load() == 0 ? "" : load_error;
}

unsigned int ccurl_version_number(void) {
    return ccurl_load() == 0 ? version_number : 0;
}

const char *ccurl_version_text(void) {
    return ccurl_load() == 0 ? version_text : "";
}

#define CCURL_NOT_LOADED "libcurl could not be loaded"

CURLcode ccurl_global_init(void) {
    return ccurl_load() == 0 ? curl.global_init(CURL_GLOBAL_ALL) : CURLE_FAILED_INIT;
}

CURL *ccurl_easy_init(void) {
    return ccurl_load() == 0 ? curl.easy_init() : NULL;
}

void ccurl_easy_cleanup(CURL *handle) {
    if (ccurl_load() == 0) curl.easy_cleanup(handle);
}

void ccurl_easy_reset(CURL *handle) {
    if (ccurl_load() == 0) curl.easy_reset(handle);
}

const char *ccurl_easy_strerror(CURLcode code) {
    return ccurl_load() == 0 ? curl.easy_strerror(code) : CCURL_NOT_LOADED;
}

CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return ccurl_load() == 0 ? curl.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return ccurl_load() == 0 ? curl.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return ccurl_load() == 0 ? curl.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return ccurl_load() == 0 ? curl.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return ccurl_load() == 0 ? curl.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_allow_only_http(CURL *handle, unsigned int version) {
    if (ccurl_load() != 0) return CURLE_FAILED_INIT;
    if (version >= CCURL_PROTOCOLS_STR_VERSION) {
        CURLcode code = curl.easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
        return code != CURLE_OK ? code : curl.easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    }
    long mask = CURLPROTO_HTTP | CURLPROTO_HTTPS;
    CURLcode code = curl.easy_setopt(handle, CURLOPT_PROTOCOLS, mask);
    return code != CURLE_OK ? code : curl.easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS, mask);
}

CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value) {
    return ccurl_load() == 0 ? curl.easy_setopt(handle, option, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_setopt_opensocket_callback(CURL *handle, ccurl_opensocket_callback value) {
    return ccurl_load() == 0 ? curl.easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return ccurl_load() == 0 ? curl.easy_getinfo(handle, info, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return ccurl_load() == 0 ? curl.easy_getinfo(handle, info, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return ccurl_load() == 0 ? curl.easy_getinfo(handle, info, value) : CURLE_FAILED_INIT;
}

CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return ccurl_load() == 0 ? curl.easy_getinfo(handle, info, value) : CURLE_FAILED_INIT;
}

CURLM *ccurl_multi_init(void) {
    return ccurl_load() == 0 ? curl.multi_init() : NULL;
}

CURLMcode ccurl_multi_cleanup(CURLM *multi) {
    return ccurl_load() == 0 ? curl.multi_cleanup(multi) : CURLM_INTERNAL_ERROR;
}

CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return ccurl_load() == 0 ? curl.multi_setopt(multi, option, value) : CURLM_INTERNAL_ERROR;
}

CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *handle) {
    return ccurl_load() == 0 ? curl.multi_add_handle(multi, handle) : CURLM_INTERNAL_ERROR;
}

CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *handle) {
    return ccurl_load() == 0 ? curl.multi_remove_handle(multi, handle) : CURLM_INTERNAL_ERROR;
}

CURLMcode ccurl_multi_perform(CURLM *multi, int *running) {
    return ccurl_load() == 0 ? curl.multi_perform(multi, running) : CURLM_INTERNAL_ERROR;
}

CURLMcode ccurl_multi_poll(CURLM *multi, struct curl_waitfd *fds, unsigned int count, int timeout_ms, int *ready) {
    return ccurl_load() == 0 ? curl.multi_poll(multi, fds, count, timeout_ms, ready) : CURLM_INTERNAL_ERROR;
}

CURLMcode ccurl_multi_wakeup(CURLM *multi) {
    return ccurl_load() == 0 ? curl.multi_wakeup(multi) : CURLM_INTERNAL_ERROR;
}

CURLMsg *ccurl_multi_info_read(CURLM *multi, int *remaining) {
    return ccurl_load() == 0 ? curl.multi_info_read(multi, remaining) : NULL;
}

const char *ccurl_multi_strerror(CURLMcode code) {
    return ccurl_load() == 0 ? curl.multi_strerror(code) : CCURL_NOT_LOADED;
}

struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *line) {
    return ccurl_load() == 0 ? curl.slist_append(list, line) : NULL;
}

void ccurl_slist_free_all(struct curl_slist *list) {
    if (ccurl_load() == 0) curl.slist_free_all(list);
}
