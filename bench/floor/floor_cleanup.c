/* The floor of the rules for a cleanup of stale hook records: a single-threaded C program that
 * makes only the system calls BENCHMARKS.md lists for one stale record ("System calls per stale
 * record": 24 at 1 per directory, 20.04 at 100) and does the same work with them — judge, remove
 * by content, index — with no allocation per record, paths built on the stack and a plain byte
 * writer for the index lines. It is the peer pidguard's cleanup is measured against
 * (bench/floor/bench.py); it is not a cleanup anyone should run: it knows only the shape
 * `scenarios make-stale` writes (token-less `.pid` naming a dead pid, `.sh`, two empty logs)
 * and gives up on anything else.
 *
 *   floor_cleanup ROOT INDEX      prints `{"removed": N, "cpu_s": S, "wall_s": W}`
 *
 * Per record, in order (the numbers of BENCHMARKS.md's table):
 *   1 openat2(root, dir, O_DIRECTORY, RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)   (once per directory)
 *   2,3 getdents64                                                         (per directory)
 *   4-7 openat(.sh), statx, pread64, close
 *   8-11 openat(.pid), statx, pread64, fgetxattr(user.pidguard.token) -> ENODATA
 *   12 pidfd_open(pid) -> ESRCH
 *   13,14 newfstatat(log) x2
 *   15 newfstatat(.pid)           the compare: same inode, mtime and size
 *   16 renameat(.pid -> .pg-<24 hex>.pidguard-retired)
 *   17 newfstatat(private name)   the re-check
 *   18,19 pread64, fgetxattr      the re-check through the descriptor judged
 *   20 close
 *   -  write(index)               one per 64 hooks
 *   21-23 unlinkat(private), unlinkat(log) x2
 *   24 close(dir)                 (per directory)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define NAME_MAX_ 256

struct pending {
    int dfd;               /* the hook's directory (closed when its last hook is flushed) */
    int last_of_dir;       /* this hook is the directory's last one */
    char priv[64];         /* the retired record's private name */
    char base[NAME_MAX_];  /* the hook's name without `.pid` */
};

static struct pending pend[BATCH];
static int npend;
static char out[1 << 20];
static size_t outlen;
static int index_fd;
static uint64_t rng_state;
static long removed;

static uint64_t next_random(void) { /* splitmix64, seeded once from getrandom */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void put(const char *s, size_t n) { memcpy(out + outlen, s, n); outlen += n; }
static void puts_(const char *s) { put(s, strlen(s)); }
static void put_json_string(const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    out[outlen++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { out[outlen++] = '\\'; out[outlen++] = (char)c; }
        else if (c == '\n') { out[outlen++] = '\\'; out[outlen++] = 'n'; }
        else if (c < 0x20) { put("\\u00", 4); out[outlen++] = hex[c >> 4]; out[outlen++] = hex[c & 15]; }
        else out[outlen++] = (char)c;
    }
    out[outlen++] = '"';
}
static void put_long(long v) { char b[24]; int n = snprintf(b, sizeof b, "%ld", v); put(b, (size_t)n); }
static const char *root_path;
/* `"<12 hex>-<20 hex>"`: the shape of pidguard's record ids. */
static void make_id(char b[40]) {
    uint64_t a = next_random(), c = next_random(), d = next_random();
    snprintf(b, 40, "\"%012llx-%016llx%04llx\"", (unsigned long long)(a & 0xffffffffffffULL), (unsigned long long)c, (unsigned long long)(d & 0xffff));
}
/* `"YYYY-MM-DDTHH:MM:SS.ffffffZ"` */
static void iso(char b[40], time_t sec, long nsec) {
    struct tm tm;
    gmtime_r(&sec, &tm);
    size_t n = strftime(b, 40, "\"%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(b + n, 40 - n, ".%06ldZ\"", nsec / 1000);
}
/* `"a/b"` as one JSON string. */
static void put_json_string2(const char *a, const char *b) {
    put_json_string(a, strlen(a));
    outlen--; /* reopen the string */
    out[outlen++] = '/';
    size_t mark = outlen;
    put_json_string(b, strlen(b));
    memmove(out + mark, out + mark + 1, outlen - mark - 1); /* drop the second opening quote */
    outlen--;
}

/* Append the index lines of the waiting hooks, then unlink their files and close the
 * directories they were the last hook of. */
static void flush(void) {
    if (outlen && write(index_fd, out, outlen) != (ssize_t)outlen) { perror("write index"); exit(1); }
    outlen = 0;
    for (int i = 0; i < npend; i++) {
        struct pending *p = &pend[i];
        char name[NAME_MAX_ + 16];
        unlinkat(p->dfd, p->priv, 0);
        snprintf(name, sizeof name, "%s.stdout.log", p->base);
        unlinkat(p->dfd, name, 0);
        snprintf(name, sizeof name, "%s.stderr.log", p->base);
        unlinkat(p->dfd, name, 0);
        if (p->last_of_dir) close(p->dfd);
    }
    npend = 0;
}

static int regular_empty(int dfd, const char *name) {
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

/* One hook `base` (its `.pid` is `pidname`) in directory `dfd`; 1 when its record was retired. */
static int judge_and_retire(int dfd, const char *dirname, const char *base, const char *pidname, int last_of_dir) {
    char name[NAME_MAX_ + 16], cmd[4096], buf[64], tok[256];
    struct statx sx;
    /* The `.sh`: the report's cmd; a regular file of ours. */
    snprintf(name, sizeof name, "%s.sh", base);
    ssize_t cmdlen = 0;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) == 0 && S_ISREG(sx.stx_mode)) cmdlen = pread(fd, cmd, sizeof cmd, 0);
        close(fd);
        if (cmdlen < 0) cmdlen = 0;
    }
    /* The last line of the `.sh` is the command. */
    while (cmdlen > 0 && cmd[cmdlen - 1] == '\n') cmdlen--;
    ssize_t start = cmdlen;
    while (start > 0 && cmd[start - 1] != '\n') start--;
    /* The judgement. */
    fd = openat(dfd, pidname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) != 0 || !S_ISREG(sx.stx_mode) || (sx.stx_mode & 0022) || sx.stx_nlink != 1) { close(fd); return 0; }
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) { close(fd); return 0; }
    buf[n] = 0;
    long pid = strtol(buf, NULL, 10);
    if (pid <= 0 || fgetxattr(fd, "user.pidguard.token", tok, sizeof tok) >= 0 || errno != ENODATA) { close(fd); return 0; }
    int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (pfd >= 0 || errno != ESRCH) { if (pfd >= 0) close(pfd); close(fd); return 0; } /* only ESRCH proves gone */
    /* The logs: regular and empty, nothing to copy. */
    snprintf(name, sizeof name, "%s.stdout.log", base);
    int logs_ok = regular_empty(dfd, name);
    snprintf(name, sizeof name, "%s.stderr.log", base);
    logs_ok = logs_ok && regular_empty(dfd, name);
    /* Remove by content: the compare, the claim, the re-check. */
    struct stat st;
    if (!logs_ok || fstatat(dfd, pidname, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_ino != sx.stx_ino ||
        st.st_mtim.tv_sec != sx.stx_mtime.tv_sec || st.st_mtim.tv_nsec != (long)sx.stx_mtime.tv_nsec || (uint64_t)st.st_size != sx.stx_size) {
        close(fd);
        return 0;
    }
    struct pending *p = &pend[npend];
    uint64_t r1 = next_random(), r2 = next_random();
    snprintf(p->priv, sizeof p->priv, ".pg-%016llx%08llx.pidguard-retired", (unsigned long long)r1, (unsigned long long)(r2 & 0xffffffffULL));
    if (renameat(dfd, pidname, dfd, p->priv) != 0) { close(fd); return 0; }
    char again[64];
    if (fstatat(dfd, p->priv, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_ino != sx.stx_ino ||
        pread(fd, again, sizeof again - 1, 0) != n || memcmp(again, buf, (size_t)n) != 0 ||
        fgetxattr(fd, "user.pidguard.token", tok, sizeof tok) >= 0 || errno != ENODATA) {
        renameat(dfd, p->priv, dfd, pidname); /* not ours after all: put it back */
        close(fd);
        return 0;
    }
    close(fd);
    /* The two index lines, as pidguard writes them (finalize's records): the command as an argv
     * (the floor splits on spaces: the records it knows have no quotes), started at the
     * pidfile's mtime, ended now. */
    char started[40], ended[40], pid_id[40], res_id[40];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    iso(started, sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec);
    iso(ended, now.tv_sec, now.tv_nsec);
    make_id(pid_id);
    make_id(res_id);
    puts_("{\"type\":\"Process\",\"id\":"); puts_(pid_id);
    puts_(",\"cmd\":[");
    for (ssize_t i = start, first = 1; i < cmdlen;) {
        ssize_t j = i;
        while (j < cmdlen && cmd[j] != ' ') j++;
        if (j > i) { if (!first) out[outlen++] = ','; put_json_string(cmd + i, (size_t)(j - i)); first = 0; }
        i = j + 1;
    }
    puts_("],\"pwd\":"); put_json_string2(root_path, dirname);
    puts_(",\"pid\":"); put_long(pid);
    puts_(",\"exit_code\":0,\"stdout\":\"\",\"stderr\":\"\",\"started_at\":"); puts_(started);
    puts_(",\"ended_at\":"); puts_(ended);
    puts_("}\n{\"type\":\"ArchiveResult\",\"id\":"); puts_(res_id);
    puts_(",\"plugin\":"); put_json_string(dirname, strlen(dirname));
    puts_(",\"hook_name\":"); put_json_string(base, strlen(base));
    puts_(",\"status\":\"succeeded\",\"process_id\":"); puts_(pid_id);
    puts_(",\"output_files\":[],\"start_ts\":"); puts_(started);
    puts_(",\"end_ts\":"); puts_(ended);
    puts_("}\n");
    p->dfd = dfd;
    p->last_of_dir = last_of_dir;
    snprintf(p->base, sizeof p->base, "%s", base);
    npend++;
    removed++;
    return 1;
}

static double secs(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: floor_cleanup ROOT INDEX\n"); return 2; }
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    root_path = argv[1];
    if (getrandom(&rng_state, sizeof rng_state, 0) != sizeof rng_state) { perror("getrandom"); return 1; }
    index_fd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    int root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (index_fd < 0 || root < 0) { perror("open"); return 1; }
    static char rootents[1 << 20], ents[1 << 16];
    long rn;
    while ((rn = syscall(SYS_getdents64, root, rootents, sizeof rootents)) > 0) {
        for (long off = 0; off < rn;) {
            struct dirent64 *de = (struct dirent64 *)(rootents + off);
            off += de->d_reclen;
            if (de->d_name[0] == '.' || de->d_type != DT_DIR) continue;
            struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS };
            int dfd = (int)syscall(SYS_openat2, root, de->d_name, &how, sizeof how);
            if (dfd < 0) continue;
            /* The directory's pidfiles (names in one buffer). */
            char names[BATCH * 4][NAME_MAX_];
            int count = 0;
            long n;
            while ((n = syscall(SYS_getdents64, dfd, ents, sizeof ents)) > 0) {
                for (long o = 0; o < n;) {
                    struct dirent64 *e = (struct dirent64 *)(ents + o);
                    o += e->d_reclen;
                    size_t len = strlen(e->d_name);
                    if (len > 4 && memcmp(e->d_name + len - 4, ".pid", 4) == 0 && count < (int)(sizeof names / sizeof names[0]))
                        memcpy(names[count++], e->d_name, len + 1);
                }
            }
            for (int i = 0; i < count; i++) {
                char base[NAME_MAX_];
                size_t len = strlen(names[i]) - 4;
                memcpy(base, names[i], len);
                base[len] = 0;
                if (npend == BATCH) flush();
                judge_and_retire(dfd, de->d_name, base, names[i], 0);
            }
            /* The directory closes with its last waiting hook, or now when none waits. */
            if (npend > 0 && pend[npend - 1].dfd == dfd) pend[npend - 1].last_of_dir = 1;
            else close(dfd);
        }
    }
    flush();
    close(root);
    close(index_fd);
    getrusage(RUSAGE_SELF, &r1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double cpu = secs(r1.ru_utime) - secs(r0.ru_utime) + secs(r1.ru_stime) - secs(r0.ru_stime);
    printf("{\"removed\": %ld, \"cpu_s\": %.6f, \"wall_s\": %.6f}\n", removed, cpu, (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9);
    return 0;
}
