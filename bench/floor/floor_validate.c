/* The floor of the rules for `validate_pid_file` of a token record: a single-threaded C program
 * (no pidguard) that makes only the system calls the rules need for one check of an abx-dl
 * pidfile carrying a start token, and makes the same judgement with them, with no allocation,
 * paths on the stack and the machine's facts (boot id, machine id, PID namespace, whether pidfds
 * live on pidfs) read once at start, as pidguard reads them once per process. It is the peer
 * pidguard's validate is measured against (bench/floor/validate.sh); it is not a check anyone
 * should run: it knows only the shapes the benchmark makes (an absolute path; as a privileged
 * caller, root's directories down to the record's own directory) and gives up on anything else.
 *
 *   floor_validate PIDFILE N [WARM]
 *       WARM checks (default 100), then N checks timed; each must say "valid" (the record names
 *       a live process that is the one recorded). Prints one JSON line:
 *       {"contender": "floor", "n": N, "valid": V, "cpu_us": C, "wall_us": W, "user_us": U, "sys_us": S}
 *       per check: CPU from CLOCK_PROCESS_CPUTIME_ID, wall from CLOCK_MONOTONIC, user and system
 *       from getrusage(RUSAGE_SELF).
 *
 * Per check, in order (BENCHMARKS.md, "System calls per `validate_pid_file` of a token record"):
 *   getresuid                               the privilege, decided once per call
 *   capget                                  (neither uid 0 only: CAP_KILL)
 *   privileged, the short path walk:
 *     newfstatat(prefix, AT_SYMLINK_NOFOLLOW) for "/" and each directory down to the record's:
 *                                           a directory; no unsafe transition (a directory of a
 *                                           user leading to another owner's); every entry but
 *                                           the last directory's changeable only by root
 *     openat2(dir, O_PATH|O_DIRECTORY, RESOLVE_NO_SYMLINKS), newfstatat(fd, "", AT_EMPTY_PATH):
 *                                           the directory looked at, by its dev and inode
 *     openat(fd, name, O_RDONLY|O_NONBLOCK|O_NOFOLLOW), close(fd)
 *   unprivileged: openat(path, O_RDONLY|O_NONBLOCK|O_NOFOLLOW)
 *   newfstatat(fd, "", AT_EMPTY_PATH)       a regular file; owner and mode; links (privileged:
 *                                           more than one is noted); mtime; size
 *   pread64                                 the pid: Python's int(text.strip()), 1..4194304
 *   fgetxattr(user.pidguard.token)          the token: linux1, 5 or 6 fields, parsed
 *   close
 *   (the token's boot and PID namespace against this machine's: no call)
 *   pidfd_open(pid)                         ESRCH: gone
 *   newfstatat(pidfd, "", AT_EMPTY_PATH)    the pidfs inode
 *   poll(pidfd, POLLIN, 0)                  readable: exited (a zombie); else alive
 *   close(pidfd)
 *   (the pidfs inodes compared: equal is a match)
 * That is 11 calls for an unprivileged caller (getresuid, capget, then 9) and 17 for root at
 * /tmp/x/y/tok.pid (getresuid, 4 newfstatat of the path, openat2, newfstatat, openat, close,
 * then 8); bench/floor/validate.sh checks it with `strace -f -c`. The `user.pidguard.scope` xattr
 * is not read: it says what a stop reaches, not who the process is, so no rule of this answer
 * needs it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef PIDFS_MAGIC
#define PIDFS_MAGIC 0x50494446
#endif
#define PID_MAX_LIMIT 4194304
#define MAX_CONTENT 4096

/* The machine's facts, read once. */
static char boot_id[64];
static char machine_id[256];
static uint64_t pidns_ino;
static int on_pidfs;

enum answer { VALID, MISSING, UNREADABLE, NOT_REGULAR, MALFORMED, BAD_TOKEN, GONE, ZOMBIE, MISMATCH, FOREIGN, UNVERIFIABLE };

/* What the check found, as pidguard's report keeps it (owner, mode, mtime, links). */
struct found {
    uint32_t uid, mode;
    double mtime;
    int linked;
    int pid;
};

struct token {
    const char *machine, *boot;
    size_t machine_len, boot_len;
    uint64_t pidns, ticks, pidfs;
    int has_pidfs;
};

static void read_fact(const char *path, char *out, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror(path); exit(1); }
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0) { fprintf(stderr, "%s: empty\n", path); exit(1); }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ')) n--;
    out[n] = 0;
}

static void machine_facts(void) {
    read_fact("/proc/sys/kernel/random/boot_id", boot_id, sizeof boot_id);
    read_fact("/etc/machine-id", machine_id, sizeof machine_id);
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0) { perror("/proc/self/ns/pid"); exit(1); }
    pidns_ino = st.st_ino;
    int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    struct statfs sf;
    if (fd < 0 || fstatfs(fd, &sf) != 0) { perror("pidfd"); exit(1); }
    on_pidfs = sf.f_type == PIDFS_MAGIC;
    close(fd);
}

/* getresuid, and capget when neither uid is 0: a real or effective uid 0, or CAP_KILL. */
static int privileged(void) {
    uid_t r, e, s;
    getresuid(&r, &e, &s);
    if (r == 0 || e == 0) return 1;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    return syscall(SYS_capget, &h, d) == 0 && (d[0].effective & (1u << CAP_KILL));
}

/* Only root can change the entry of a directory (uid, mode) leading to child_uid's. */
static int root_only_entry(uint32_t uid, uint32_t mode, uint32_t child_uid) {
    return uid == 0 && ((mode & 022) == 0 || ((mode & S_ISVTX) && child_uid == 0));
}

/* The privileged open: the short walk (pidguard's `chase::resolve_stable`). -1 with errno, or
 * -2 for "take the component walk" (not in this floor). */
static int open_stable(const char *path) {
    if (path[0] != '/') return -2;
    char prefix[4096];
    size_t plen = 1;
    prefix[0] = '/';
    prefix[1] = 0;
    const char *last = strrchr(path, '/') + 1;
    if (!*last || !strcmp(last, ".") || !strcmp(last, "..")) return -2;
    struct stat parent, st;
    int have_parent = 0;
    const char *p = path;
    for (;;) {
        if (lstat(prefix, &st) != 0 || !S_ISDIR(st.st_mode)) return -2;
        /* The component after this one (the next directory, or the last name). */
        while (*p == '/') p++;
        const char *end = strchr(p, '/');
        int is_last_dir = p == last;
        if (have_parent) {
            if (parent.st_uid != 0 && parent.st_uid != st.st_uid) return -2; /* unsafe transition */
            if (!is_last_dir && !root_only_entry(parent.st_uid, parent.st_mode, st.st_uid)) return -2;
        }
        parent = st;
        have_parent = 1;
        if (is_last_dir) break;
        size_t n = (size_t)(end - p);
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return -2;
        if (plen + n + 2 > sizeof prefix) return -2;
        if (plen > 1) prefix[plen++] = '/';
        memcpy(prefix + plen, p, n);
        plen += n;
        prefix[plen] = 0;
        p = end;
    }
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
    int dfd = (int)syscall(SYS_openat2, AT_FDCWD, prefix, &how, sizeof how);
    if (dfd < 0) return -2;
    struct stat ds;
    if (fstat(dfd, &ds) != 0 || ds.st_dev != parent.st_dev || ds.st_ino != parent.st_ino) { close(dfd); return -2; }
    int fd = openat(dfd, last, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    int saved = errno;
    close(dfd);
    errno = saved;
    return fd;
}

/* Python's str.strip() set for ASCII (the benchmark's content is ASCII; pidguard also strips
 * the Unicode White_Space of UTF-8 text, which this floor gives up on). */
static int py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

static int parse_pid(const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++) if (b[i] >= 0x80) return -2; /* not in this floor */
    while (n && py_space(b[n - 1])) n--;
    size_t i = 0;
    while (i < n && py_space(b[i])) i++;
    if (i == n) return -1;
    int64_t v = 0;
    for (; i < n; i++) {
        if (b[i] < '0' || b[i] > '9') return -1;
        v = v * 10 + (b[i] - '0');
        if (v > PID_MAX_LIMIT) return -1;
    }
    return v >= 1 ? (int)v : -1;
}

static int field_ok(const char *s, size_t n) {
    if (!n) return 0;
    for (size_t i = 0; i < n; i++) if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == ':') return 0;
    return 1;
}

static int decimal(const char *s, size_t n, uint64_t *out) {
    if (!n) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v)) return 0;
    }
    *out = v;
    return 1;
}

/* `linux1:<machine>:<boot>:<pidns>:<ticks>[:<pidfs or ->]` */
static int parse_token(const char *s, size_t n, struct token *t) {
    const char *f[6];
    size_t l[6];
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == ':') {
            if (k == 6) return 0;
            f[k] = s + start;
            l[k] = i - start;
            k++;
            start = i + 1;
        }
    }
    if (!(l[0] == 6 && !memcmp(f[0], "linux1", 6))) return 0;
    if (k != 5 && k != 6) return 0;
    if (!field_ok(f[1], l[1]) || !field_ok(f[2], l[2])) return 0;
    t->machine = f[1]; t->machine_len = l[1];
    t->boot = f[2]; t->boot_len = l[2];
    if (!decimal(f[3], l[3], &t->pidns) || !decimal(f[4], l[4], &t->ticks)) return 0;
    t->has_pidfs = 0;
    t->pidfs = 0;
    if (k == 6 && !(l[5] == 1 && f[5][0] == '-')) {
        if (!decimal(f[5], l[5], &t->pidfs)) return 0;
        t->has_pidfs = 1;
    }
    return 1;
}

static int eq(const char *a, size_t n, const char *b) { return strlen(b) == n && !memcmp(a, b, n); }

static enum answer check(const char *path, struct found *out) {
    int priv = privileged();
    int fd = priv ? open_stable(path) : open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -2) { fprintf(stderr, "floor: %s needs the component walk (not in this floor)\n", path); exit(1); }
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? MISSING : errno == ELOOP ? NOT_REGULAR : UNREADABLE;
    struct stat st;
    if (fstat(fd, &st) != 0) { close(fd); return UNREADABLE; }
    if (!S_ISREG(st.st_mode)) { close(fd); return NOT_REGULAR; }
    out->uid = st.st_uid;
    out->mode = st.st_mode;
    out->linked = st.st_nlink > 1 && priv;
    out->mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec * 1e-9;
    unsigned char buf[MAX_CONTENT + 1];
    size_t want = st.st_size > MAX_CONTENT ? MAX_CONTENT + 1 : (size_t)st.st_size, len = 0;
    while (len < want) {
        ssize_t r = pread(fd, buf + len, want - len, (off_t)len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { close(fd); return UNREADABLE; }
        if (r == 0) break;
        len += (size_t)r;
    }
    int pid = len > MAX_CONTENT ? -1 : parse_pid(buf, len);
    if (pid == -2) { fprintf(stderr, "floor: non-ASCII content (not in this floor)\n"); exit(1); }
    if (pid < 0) { close(fd); return MALFORMED; }
    out->pid = pid;
    char tok[256];
    ssize_t tn = fgetxattr(fd, "user.pidguard.token", tok, sizeof tok);
    close(fd);
    if (tn < 0) { fprintf(stderr, "floor: no token (not in this floor)\n"); exit(1); }
    struct token t;
    if (!parse_token(tok, (size_t)tn, &t)) return BAD_TOKEN;
    /* The machine's facts: another boot of this machine is a mismatch, of another machine (or a
     * namespace) foreign; no process is looked at. */
    if (!eq(t.boot, t.boot_len, boot_id)) return eq(t.machine, t.machine_len, machine_id) && strcmp(machine_id, "unknown") ? MISMATCH : FOREIGN;
    if (t.pidns != pidns_ino) return FOREIGN;
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd < 0) return errno == ESRCH || errno == EINVAL || errno == ENOENT ? GONE : UNVERIFIABLE;
    struct stat ps;
    if (!on_pidfs || fstat(pfd, &ps) != 0) { close(pfd); fprintf(stderr, "floor: no pidfs inode (not in this floor)\n"); exit(1); }
    struct pollfd pl = {.fd = pfd, .events = POLLIN};
    int exited = poll(&pl, 1, 0);
    if (exited < 0) { close(pfd); return UNVERIFIABLE; }
    if (exited) { close(pfd); return ZOMBIE; } /* (pidguard tells a zombie from a reaped process by a null signal) */
    close(pfd);
    if (!t.has_pidfs) { fprintf(stderr, "floor: token without a pidfs inode (not in this floor)\n"); exit(1); }
    return t.pidfs == (uint64_t)ps.st_ino ? VALID : MISMATCH;
}

static double secs(struct timespec t) { return (double)t.tv_sec + (double)t.tv_nsec / 1e9; }
static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: floor_validate PIDFILE N [WARM]\n"); return 2; }
    const char *path = argv[1];
    long n = atol(argv[2]), warm = argc > 3 ? atol(argv[3]) : 100;
    machine_facts();
    struct found f;
    for (long i = 0; i < warm; i++) {
        enum answer a = check(path, &f);
        if (a != VALID) { fprintf(stderr, "floor: %s is not valid (answer %d)\n", path, a); return 1; }
    }
    struct timespec c0, c1, w0, w1;
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    clock_gettime(CLOCK_MONOTONIC, &w0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    long valid = 0;
    for (long i = 0; i < n; i++) valid += check(path, &f) == VALID;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    getrusage(RUSAGE_SELF, &r1);
    double k = n ? 1e6 / (double)n : 0;
    printf("{\"contender\": \"floor\", \"n\": %ld, \"valid\": %ld, \"cpu_us\": %.4f, \"wall_us\": %.4f, \"user_us\": %.4f, \"sys_us\": %.4f}\n",
           n, valid, (secs(c1) - secs(c0)) * k, (secs(w1) - secs(w0)) * k, (tv(r1.ru_utime) - tv(r0.ru_utime)) * k,
           (tv(r1.ru_stime) - tv(r0.ru_stime)) * k);
    return valid == n ? 0 : 1;
}
