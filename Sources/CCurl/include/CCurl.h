// libcurl for the transport, loaded when the first transport starts.
//
// libcurl is opened with dlopen (ccurl_load) rather than linked: with its
// dependencies (OpenSSL, GnuTLS, Kerberos, LDAP, libssh2, ... 32 libraries on
// Debian 12, each bound at once) it costs a process about 11 million
// instructions and 8 MiB before main, which a program that sends nothing,
// such as `oauth2 token --print-access-token` on a valid token, never needs
// to pay.
//
// Every libcurl function the transport calls has a wrapper here. Each loads
// libcurl on its first call (once per process) and fails as libcurl itself
// would when it cannot be loaded: CURLE_FAILED_INIT, CURLM_INTERNAL_ERROR or
// NULL. The variadic curl_easy_setopt, curl_easy_getinfo and
// curl_multi_setopt, which Swift cannot call, get one wrapper per argument
// type.
#ifndef CCURL_H
#define CCURL_H

#include <curl/curl.h>

typedef size_t (*ccurl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
typedef curl_socket_t (*ccurl_opensocket_callback)(void *clientp, curlsocktype purpose, struct curl_sockaddr *address);

// Loads libcurl (libcurl.so.4) and its functions, once per process; 0 when
// they are there, else -1, and ccurl_load_error says why.
int ccurl_load(void);
// Why libcurl could not be loaded (the dynamic loader's message), or "".
const char *ccurl_load_error(void);

// The oldest libcurl the transport works with: 7.68.0 brought
// curl_multi_wakeup, which it needs. CURLVERSION_NUM form (0xXXYYZZ).
#define CCURL_MINIMUM_VERSION 0x074400
#define CCURL_MINIMUM_VERSION_TEXT "7.68.0"
// From 7.85.0 on, the allowed protocols are given as text
// (CURLOPT_PROTOCOLS_STR); before, as a bitmask (CURLOPT_PROTOCOLS).
#define CCURL_PROTOCOLS_STR_VERSION 0x075500

// The loaded libcurl's version in CURLVERSION_NUM form (7.88.1 is 0x075801),
// and as text ("7.88.1"); 0 and "" when libcurl could not be loaded.
unsigned int ccurl_version_number(void);
const char *ccurl_version_text(void);

CURLcode ccurl_global_init(void);

CURL *ccurl_easy_init(void);
void ccurl_easy_cleanup(CURL *handle);
void ccurl_easy_reset(CURL *handle);
const char *ccurl_easy_strerror(CURLcode code);
CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
// Allows HTTP and HTTPS only, for the request and for every redirect it
// follows, with the options a libcurl of `version` has: setting
// CURLOPT_PROTOCOLS_STR on one older than 7.85 fails with
// CURLE_UNKNOWN_OPTION (48), and so did every request there.
CURLcode ccurl_easy_allow_only_http(CURL *handle, unsigned int version);
CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value);
// CURLOPT_OPENSOCKETFUNCTION: libcurl asks `value` for every socket it
// connects with (after resolving, for each address it tries).
CURLcode ccurl_easy_setopt_opensocket_callback(CURL *handle, ccurl_opensocket_callback value);
CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value);
CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);

CURLM *ccurl_multi_init(void);
CURLMcode ccurl_multi_cleanup(CURLM *multi);
CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *handle);
CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *handle);
CURLMcode ccurl_multi_perform(CURLM *multi, int *running);
CURLMcode ccurl_multi_poll(CURLM *multi, struct curl_waitfd *fds, unsigned int count, int timeout_ms, int *ready);
CURLMcode ccurl_multi_wakeup(CURLM *multi);
CURLMsg *ccurl_multi_info_read(CURLM *multi, int *remaining);
const char *ccurl_multi_strerror(CURLMcode code);

struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *line);
void ccurl_slist_free_all(struct curl_slist *list);

#if defined(__linux__)
#include <sched.h>
#if !defined(__USE_GNU)
// glibc declares it only under _GNU_SOURCE, which Swift's Glibc module lacks.
extern int sched_getaffinity(int pid, size_t cpusetsize, void *mask);
#endif
#endif

// How many CPUs this process may run on (its affinity mask, as `taskset`
// sets it); 0 when unknown. Swift's cooperative pool has as many threads.
static inline int ccurl_allowed_cpus(void) {
#if defined(__linux__)
    unsigned long long mask[16] = {0};
    if (sched_getaffinity(0, sizeof(mask), mask) != 0) {
        return 0;
    }
    int count = 0;
    for (int i = 0; i < 16; i++) {
        count += __builtin_popcountll(mask[i]);
    }
    return count;
#else
    return 0;
#endif
}

// CURLMsg keeps its result in an anonymous union; these read it without
// relying on how Swift imports the union.
static inline int ccurl_msg_is_done(const CURLMsg *message) {
    return message->msg == CURLMSG_DONE;
}

static inline CURLcode ccurl_msg_result(const CURLMsg *message) {
    return message->data.result;
}

#endif
