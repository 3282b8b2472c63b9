/* A pidfile carries its owner's authority, never more, from C: a caller with real uid 0 and
 * effective uid U (seteuid(U), as a root daemon that lowers only its effective uid) must not be
 * steered at root's process by U's pidfile, even one with the process's exact start token;
 * U's own process named by U's own pidfile is still stopped. Runs as root; otherwise says so.
 *
 * usage: authority WORKDIR (an empty directory) */
#define _GNU_SOURCE
#include "check.h"

#define U 4242

/* U's abx-dl pidfile for `pid` (with its token and create time), owned by U. */
static void user_record(const char *path, pid_t pid) {
    pidguard_process_info info;
    CHECK_OK(pidguard_lookup(pid, &info));
    CHECK_OK(pidguard_write_pid_file_with_mtime(path, pid, info.create_time));
    CHECK(chown(path, U, U) == 0);
}

static pid_t spawn_as(uid_t uid) {
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(1); }
    if (pid == 0) {
        setsid();
        /* Not the test's stdout: a failed check must not leave the harness waiting on the pipe. */
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); }
        if (uid != 0 && (setgid(uid) != 0 || setuid(uid) != 0)) _exit(126);
        execlp("sleep", "sleep", "infinity", (char *)NULL);
        _exit(127);
    }
    return pid;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: authority WORKDIR\n"); return 2; }
    if (geteuid() != 0) {
        printf("skipped: needs root (the caller lowers only its effective uid)\n0 checks passed\n");
        return 0;
    }
    char root_rec[600], own_rec[600];
    join_path(root_rec, sizeof root_rec, argv[1], "on_Snapshot__root.bg.pid");
    join_path(own_rec, sizeof own_rec, argv[1], "on_Snapshot__own.bg.pid");
    CHECK(chown(argv[1], U, U) == 0);
    pid_t root_proc = spawn_as(0), own = spawn_as(U);
    /* Until both have exec'd sleep (their /proc comm), so the tokens are final. */
    for (int i = 0; i < 3000; i++) {
        char c1[64] = "", c2[64] = "", p[64];
        FILE *f;
        snprintf(p, sizeof p, "/proc/%d/comm", (int)root_proc);
        if ((f = fopen(p, "r"))) { if (!fgets(c1, sizeof c1, f)) c1[0] = 0; fclose(f); }
        snprintf(p, sizeof p, "/proc/%d/comm", (int)own);
        if ((f = fopen(p, "r"))) { if (!fgets(c2, sizeof c2, f)) c2[0] = 0; fclose(f); }
        if (strcmp(c1, "sleep\n") == 0 && strcmp(c2, "sleep\n") == 0) break;
        CHECK(i < 2999);
        usleep(10000);
    }
    user_record(root_rec, root_proc);
    user_record(own_rec, own);

    CHECK(seteuid(U) == 0);
    uid_t r, e, s;
    CHECK(getresuid(&r, &e, &s) == 0 && r == 0 && e == U && s == 0);
    pidguard_stop_result res;
    CHECK_OK(pidguard_stop_pid_file(root_rec, NULL, PIDGUARD_POLICY_STRICT, "TERM/1/KILL/1", 5.0, &res));
    CHECK(res.outcome == PIDGUARD_STOP_REFUSED);
    CHECK(res.refusal == PIDGUARD_REFUSAL_UNTRUSTED_PIDFILE);
    CHECK_MESSAGE("untrusted-pidfile");
    CHECK(is_running(root_proc));
    CHECK(access(root_rec, F_OK) == 0);

    CHECK_OK(pidguard_stop_pid_file(own_rec, NULL, PIDGUARD_POLICY_STRICT, "TERM/1/KILL/1", 5.0, &res));
    CHECK(res.outcome == PIDGUARD_STOP_EXITED);
    CHECK(seteuid(0) == 0);
    int st;
    CHECK(waitpid(own, &st, 0) == own && WIFSIGNALED(st));
    CHECK(is_running(root_proc));
    kill(root_proc, SIGKILL);
    waitpid(root_proc, &st, 0);
    printf("%d checks passed\n", checks_passed);
    return 0;
}
