/* Shared helpers of the C tests: checks that print the pidguard error, and process helpers.
 * Every process a test starts is its own child; tests signal nothing but their own children. */
#ifndef PIDGUARD_TEST_CHECK_H
#define PIDGUARD_TEST_CHECK_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pidguard.h"

static int checks_passed;

static inline void print_last_error(void) {
    char msg[512];
    size_t n = pidguard_last_error_message(msg, sizeof msg);
    fprintf(stderr, "  last pidguard error (%zu bytes): %s\n", n, msg);
}

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
            print_last_error();                                                       \
            exit(1);                                                                  \
        }                                                                             \
        checks_passed++;                                                              \
    } while (0)

#define CHECK_STATUS(call, expected)                                                   \
    do {                                                                               \
        int s_ = (call);                                                               \
        if (s_ != (expected)) {                                                        \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__, \
                    __LINE__, #call, s_, pidguard_strerror(s_), (int)(expected),       \
                    pidguard_strerror(expected));                                      \
            print_last_error();                                                        \
            exit(1);                                                                   \
        }                                                                              \
        checks_passed++;                                                               \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, PIDGUARD_OK)

/* The last error message of this thread contains `needle`. */
#define CHECK_MESSAGE(needle)                                                          \
    do {                                                                               \
        char m_[1024];                                                                 \
        pidguard_last_error_message(m_, sizeof m_);                                    \
        if (strstr(m_, (needle)) == NULL) {                                            \
            fprintf(stderr, "%s:%d: last error \"%s\" lacks \"%s\"\n", __FILE__,        \
                    __LINE__, m_, (needle));                                           \
            exit(1);                                                                   \
        }                                                                              \
        checks_passed++;                                                               \
    } while (0)

static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* fork + (setsid) + exec; returns once the exec has happened (a close-on-exec pipe reaches EOF)
 * so that /proc/<pid>/cmdline shows the new program. stdout/stderr go to the given files. */
static inline pid_t spawn(char *const argv[], int new_session, const char *out_log, const char *err_log) {
    int p[2];
    if (pipe(p) != 0) { perror("pipe"); exit(1); }
    fcntl(p[1], F_SETFD, FD_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(1); }
    if (pid == 0) {
        close(p[0]);
        if (new_session && setsid() < 0) _exit(126);
        /* Never the harness's pipes: a child that outlives a failed CHECK (exit without its
           kill) must not hold them open and stall the harness reading to the end. */
        {
            int fd = open(out_log ? out_log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) { dup2(fd, 1); close(fd); }
        }
        {
            int fd = open(err_log ? err_log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) { dup2(fd, 2); close(fd); }
        }
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    char c;
    while (read(p[0], &c, 1) > 0) {
    }
    close(p[0]);
    return pid;
}

/* A child that has exited and been reaped: its pid names no process of ours any more. */
static inline pid_t dead_pid(void) {
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(1); }
    if (pid == 0) _exit(0);
    int st;
    waitpid(pid, &st, 0);
    return pid;
}

/* Fields of /proc/<pid>/stat after the last ')': state and process group. 0 when unreadable. */
static inline int read_stat(pid_t pid, char *state, int *pgrp) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    int ppid = 0;
    if (!rp || sscanf(rp + 1, " %c %d %d", state, &ppid, pgrp) != 3) return 0;
    return 1;
}

/* Live (non-zombie) processes whose process group is `pgid`. */
static inline int count_group(pid_t pgid) {
    DIR *d = opendir("/proc");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != 0 || pid <= 0) continue;
        char state;
        int pgrp;
        if (read_stat((pid_t)pid, &state, &pgrp) && pgrp == pgid && state != 'Z' && state != 'X') n++;
    }
    closedir(d);
    return n;
}

/* Wait until `pgid` has at least `n` live members; generous bound (20 s). */
static inline int wait_group_size(pid_t pgid, int n) {
    for (int i = 0; i < 2000; i++) {
        if (count_group(pgid) >= n) return 1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static inline int is_running(pid_t pid) {
    char state;
    int pgrp;
    return read_stat(pid, &state, &pgrp) && state != 'Z' && state != 'X';
}

/* Whether this kernel (and this tracer: valgrind 3.19 lacks pidfd_open) gives pidfds. Without
 * them pidguard falls back to kill(2) after re-reading the start ticks, and cannot learn the exit
 * status of a child without reaping it. */
static inline int pidfd_available(void) {
    long fd = syscall(SYS_pidfd_open, (long)getpid(), 0L);
    if (fd < 0) return 0;
    close((int)fd);
    return 1;
}

static inline void join_path(char *out, size_t len, const char *a, const char *b) {
    snprintf(out, len, "%s/%s", a, b);
}

#endif
