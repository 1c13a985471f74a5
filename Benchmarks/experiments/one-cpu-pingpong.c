// The smallest client of `make bench`'s server: what one CPU shared with
// nginx does to a client, whatever its language (BENCHMARKS.md, issue 15,
// eleventh pass). Not part of `make bench`; run by one-cpu-table.py.
//
//     cc -O2 -o one-cpu-pingpong one-cpu-pingpong.c
//     taskset -c 0 ./one-cpu-pingpong PORT REQUESTS CONNECTIONS ORDER WORK_NS
//
// It opens CONNECTIONS keep-alive connections to 127.0.0.1:PORT, keeps one
// signed GET /api/resource in flight on each, and waits for answers with
// poll(2), as libcurl does. After each answer it spins WORK_NS nanoseconds,
// standing in for the work a real client does per request (parsing,
// bookkeeping, the caller's code). ORDER 0 sends each connection's next
// request as soon as its answer is read (libcurl's order); ORDER 1 reads
// every ready answer first and then sends the next requests back to back;
// ORDER 2 sends as ORDER 0 does into a corked socket (TCP_CORK) and uncorks
// the turn's sockets when it ends, as a client could do around libcurl.
// It prints requests/s, CPU per request and, per request, the times it slept
// (voluntary context switches) and was preempted (involuntary ones).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { maxConnections = 256 };

static long nanosecondsSince(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000000000L + (now.tv_nsec - start->tv_nsec);
}

static void work(long nanoseconds) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (nanosecondsSince(&start) < nanoseconds) {
    }
}

static int connectTo(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        perror("connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s PORT REQUESTS CONNECTIONS ORDER WORK_NS\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), total = atoi(argv[2]), count = atoi(argv[3]), order = atoi(argv[4]);
    long workNanoseconds = atol(argv[5]);
    if (count < 1 || count > maxConnections || total < count) {
        fprintf(stderr, "CONNECTIONS must be 1 to %d and at most REQUESTS\n", maxConnections);
        return 2;
    }
    char request[256];
    int requestLength = snprintf(request, sizeof request,
        "GET /api/resource HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        "Authorization: Bearer bench-access-token-6f2c1a9e4b7d\r\nAccept: */*\r\n\r\n", port);
    int fds[maxConnections];
    for (int i = 0; i < count; i++) {
        fds[i] = connectTo(port);
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int sent = 0, answered = 0;
    for (int i = 0; i < count; i++, sent++) {
        if (send(fds[i], request, requestLength, 0) != requestLength) {
            perror("send");
            return 1;
        }
    }
    struct pollfd polled[maxConnections];
    int answeredNow[maxConnections];
    char buffer[16384];
    while (answered < total) {
        for (int i = 0; i < count; i++) {
            polled[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        }
        if (poll(polled, count, -1) < 0) {
            perror("poll");
            return 1;
        }
        int ready = 0;
        for (int i = 0; i < count; i++) {
            if (!polled[i].revents) {
                continue;
            }
            // Each answer (about 170 bytes) arrives in one segment.
            ssize_t got = recv(fds[i], buffer, sizeof buffer, 0);
            if (got <= 0) {
                fprintf(stderr, "connection %d closed\n", i);
                return 1;
            }
            answered++;
            work(workNanoseconds);
            if (order == 0 || order == 2) {
                if (order == 2) {
                    int on = 1;
                    setsockopt(fds[i], IPPROTO_TCP, TCP_CORK, &on, sizeof on);
                }
                if (sent < total && send(fds[i], request, requestLength, 0) == requestLength) {
                    sent++;
                }
                if (order == 2) {
                    answeredNow[ready++] = i;
                }
            } else {
                answeredNow[ready++] = i;
            }
        }
        if (order == 2) {
            // The turn is over: release what it wrote, back to back.
            for (int j = 0; j < ready; j++) {
                int off = 0;
                setsockopt(fds[answeredNow[j]], IPPROTO_TCP, TCP_CORK, &off, sizeof off);
            }
            ready = 0;
        }
        for (int j = 0; j < ready && sent < total; j++) {
            if (send(fds[answeredNow[j]], request, requestLength, 0) == requestLength) {
                sent++;
            }
        }
    }
    double seconds = nanosecondsSince(&start) / 1e9;
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = usage.ru_utime.tv_sec * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_sec * 1e6 + usage.ru_stime.tv_usec;
    printf("{\"requests_per_second\": %.0f, \"cpu_us_per_request\": %.2f, \"sleeps_per_request\": %.3f, \"preemptions_per_request\": %.3f}\n",
        total / seconds, cpu / total, (double)usage.ru_nvcsw / total, (double)usage.ru_nivcsw / total);
    return 0;
}
