// Typed wrappers for libcurl's variadic functions.
//
// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are C variadic
// functions, which Swift cannot call. Each wrapper below fixes the type of the
// variadic argument so Swift sees an ordinary function.
#ifndef CCURL_H
#define CCURL_H

#include <curl/curl.h>

typedef size_t (*ccurl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);

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

static inline CURLcode ccurl_global_init(void) {
    return curl_global_init(CURL_GLOBAL_ALL);
}

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
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
