/* pidguard_process: the pinned process handle, on real process groups (each its own session).
 * Every process started here is stopped through pidguard or by its own pid; none by name. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/utsname.h>

#include "check.h"

static char *const GROUP_ARGV[] = {"/bin/bash", "-c", "sleep infinity & wait", NULL};
static char *const SLEEP_ARGV[] = {"/bin/sleep", "infinity", NULL};

/* A group leader (bash) with one member (sleep), once both are up. */
static pid_t group_with_member(void) {
    pid_t leader = spawn(GROUP_ARGV, 1, "/dev/null", "/dev/null");
    CHECK(wait_group_size(leader, 2));
    return leader;
}

static void token_of(pid_t pid, char *buf, size_t len) {
    size_t n = 0;
    CHECK_OK(pidguard_start_token(pid, buf, len, &n));
    CHECK(n < len);
}

/* Handles still open: if a CHECK fails, exit() kills their processes through their pidfds, so a
 * failing run leaves nothing behind. (Not through pidguard: at exit, the Rust library's
 * thread-locals are already destroyed.) Children write to /dev/null, so that even a leftover
 * never holds the test harness's pipes open. */
static pidguard_process *opened[32];

static void kill_leftovers(void) {
    for (size_t i = 0; i < sizeof opened / sizeof opened[0]; i++) {
        int fd = -1;
        if (opened[i] != NULL && pidguard_process_pidfd(opened[i], &fd) == 0 && fd >= 0)
            syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
    }
}

static pidguard_process *open_checked(pid_t pid) {
    char token[256];
    token_of(pid, token, sizeof token);
    pidguard_process *p = NULL;
    CHECK_OK(pidguard_process_open(pid, token, PIDGUARD_POLICY_STRICT, &p));
    CHECK(p != NULL);
    for (size_t i = 0; i < sizeof opened / sizeof opened[0]; i++) {
        if (opened[i] == NULL) {
            opened[i] = p;
            break;
        }
    }
    return p;
}

static void release(pidguard_process *p) {
    for (size_t i = 0; i < sizeof opened / sizeof opened[0]; i++) {
        if (opened[i] == p) opened[i] = NULL;
    }
    pidguard_process_free(p);
}

static int kernel_at_least(int major, int minor) {
    struct utsname u;
    int a = 0, b = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &a, &b) != 2) return 0;
    return a > major || (a == major && b >= minor);
}

/* The member of a group whose leader is `leader`, from /proc. */
static pid_t member_of(pid_t leader) {
    DIR *d = opendir("/proc");
    CHECK(d != NULL);
    pid_t found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        char state;
        int pgrp;
        if (*end == 0 && pid > 0 && pid != leader && read_stat((pid_t)pid, &state, &pgrp) && pgrp == leader) found = (pid_t)pid;
    }
    closedir(d);
    return found;
}

static void accessors_wait_and_signal(void) {
    pid_t pid = spawn(SLEEP_ARGV, 1, "/dev/null", "/dev/null");
    char token[256], again[256];
    token_of(pid, token, sizeof token);
    pidguard_process *p = open_checked(pid);

    int32_t got_pid = 0;
    CHECK_OK(pidguard_process_pid(p, &got_pid));
    CHECK(got_pid == pid);
    int fd = -2;
    CHECK_OK(pidguard_process_pidfd(p, &fd));
    CHECK(pidfd_available() ? fd > 2 : fd == -1); /* valgrind 3.19: no pidfd, unpinned */
    size_t n = 0;
    CHECK_OK(pidguard_process_token(p, NULL, 0, &n));
    CHECK(n == strlen(token));
    CHECK_OK(pidguard_process_token(p, again, sizeof again, &n));
    CHECK(strcmp(again, token) == 0);

    bool exited = true;
    CHECK_OK(pidguard_process_has_exited(p, &exited));
    CHECK(!exited);
    exited = true;
    CHECK_OK(pidguard_process_wait(p, 50, &exited));
    CHECK(!exited);

    bool sent = false;
    CHECK_OK(pidguard_process_signal(p, SIGTERM, &sent));
    CHECK(sent);
    CHECK_OK(pidguard_process_wait(p, -1, &exited));
    CHECK(exited);
    CHECK_OK(pidguard_process_has_exited(p, &exited));
    CHECK(exited);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    /* Reaped: nothing is sent, whatever holds the number now. */
    sent = true;
    CHECK_OK(pidguard_process_signal(p, SIGKILL, &sent));
    CHECK(!sent);
    CHECK_OK(pidguard_process_signal(p, SIGKILL, NULL));
    CHECK_OK(pidguard_process_wait(p, 0, &exited));
    CHECK(exited);
    release(p);
}

static void group_reached_after_the_leader_was_reaped(void) {
    pid_t leader = group_with_member();
    pid_t member = member_of(leader);
    CHECK(member > 0);
    pidguard_process *p = open_checked(leader);
    pidguard_process *m = open_checked(member);
    bool sent = false, exited = false;
    CHECK_OK(pidguard_process_signal(p, SIGTERM, &sent));
    CHECK(sent);
    CHECK(waitpid(leader, NULL, 0) == leader);
    CHECK_OK(pidguard_process_has_exited(m, &exited));
    CHECK(!exited);
    if (pidfd_available() && kernel_at_least(6, 9)) {
        CHECK_OK(pidguard_process_signal_group(p, SIGTERM, &sent));
        CHECK(sent);
        CHECK_OK(pidguard_process_wait(m, 20000, &exited));
        CHECK(exited);
    } else {
        /* No pidfd group signal (or no pidfd at all): a reaped leader's group can no longer be
         * proven its own, so nothing is sent to it. */
        CHECK_OK(pidguard_process_signal_group(p, SIGTERM, &sent));
        CHECK(!sent);
        CHECK_OK(pidguard_process_signal(m, SIGKILL, &sent));
        printf("skipped: without pidfds or before Linux 6.9 a reaped leader's group is out of reach\n");
    }
    release(m);
    release(p);
}

static void terminate_keeps_the_handle(void) {
    pid_t leader = group_with_member();
    pidguard_process *p = open_checked(leader);
    pidguard_terminate_result r;
    CHECK_OK(pidguard_process_terminate(p, "TERM/5/KILL/2", 0, &r));
    CHECK(r.outcome == PIDGUARD_OUTCOME_EXITED);
    CHECK(r.exited_after == SIGTERM);
    CHECK(r.group);
    CHECK(r.pinned == (pidfd_available() != 0));
    CHECK(r.refusal == PIDGUARD_REFUSAL_NONE);
    CHECK(count_group(leader) == 0);
    bool exited = false;
    CHECK_OK(pidguard_process_has_exited(p, &exited));
    CHECK(exited);
    CHECK_OK(pidguard_process_terminate(p, NULL, 0, &r));
    CHECK(r.outcome == PIDGUARD_OUTCOME_ALREADY_GONE);
    CHECK(r.signals_sent == 0);
    CHECK(waitpid(leader, NULL, 0) == leader);
    release(p);
}

static void refusals_and_gone(void) {
    pidguard_process *p = (pidguard_process *)&p; /* a sentinel: outputs are untouched on failure */
    pidguard_process *const sentinel = p;
    CHECK_STATUS(pidguard_process_open(1, NULL, PIDGUARD_POLICY_LENIENT, &p), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_INIT);
    CHECK_MESSAGE("init");
    char me[256];
    token_of(getpid(), me, sizeof me);
    CHECK_STATUS(pidguard_process_open(getpid(), me, PIDGUARD_POLICY_STRICT, &p), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_OWN_PID);
    CHECK_STATUS(pidguard_process_open(0, NULL, PIDGUARD_POLICY_LENIENT, &p), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_NON_POSITIVE_PID);

    pid_t pid = spawn(SLEEP_ARGV, 1, "/dev/null", "/dev/null");
    CHECK_STATUS(pidguard_process_open(pid, NULL, PIDGUARD_POLICY_STRICT, &p), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_UNVERIFIABLE);
    CHECK_STATUS(pidguard_process_open(pid, me, PIDGUARD_POLICY_LENIENT, &p), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_MISMATCH);
    /* A success leaves the last failure as it was, like errno. */
    int32_t got = 0;
    pidguard_process *lenient = NULL;
    CHECK_OK(pidguard_process_open(pid, NULL, PIDGUARD_POLICY_LENIENT, &lenient));
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_MISMATCH);
    /* Another kind of failure forgets the refusal. */
    CHECK_STATUS(pidguard_process_pid(lenient, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_NONE);
    CHECK_OK(pidguard_process_pid(lenient, &got));
    CHECK(got == pid);
    CHECK_OK(pidguard_process_signal(lenient, SIGKILL, NULL));
    CHECK(waitpid(pid, NULL, 0) == pid);
    pidguard_process_free(lenient);

    CHECK_STATUS(pidguard_process_open(dead_pid(), NULL, PIDGUARD_POLICY_LENIENT, &p), PIDGUARD_ENO_SUCH_PROCESS);
    CHECK(pidguard_last_error_errno() == ESRCH);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_NONE);
    CHECK(p == sentinel);
}

static void bad_arguments(void) {
    pid_t pid = spawn(SLEEP_ARGV, 1, "/dev/null", "/dev/null");
    char token[256];
    token_of(pid, token, sizeof token);
    pidguard_process *p = NULL;
    CHECK_STATUS(pidguard_process_open(pid, token, 7, &p), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_open(pid, "not a token", PIDGUARD_POLICY_STRICT, &p), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_open(pid, token, PIDGUARD_POLICY_STRICT, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(p == NULL);
    p = open_checked(pid);
    bool b = false;
    int fd = 0;
    size_t n = 0;
    pidguard_terminate_result r;
    r.outcome = (pidguard_outcome)99;
    CHECK_STATUS(pidguard_process_signal(NULL, SIGTERM, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_signal(p, 0, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_signal(p, 1000, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_signal_group(p, -9, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_terminate(p, "TERM/x", 0, &r), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_terminate(p, NULL, 0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_terminate(NULL, NULL, 0, &r), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(r.outcome == (pidguard_outcome)99);
    CHECK_STATUS(pidguard_process_wait(p, 0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_wait(NULL, 0, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_has_exited(NULL, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_pidfd(p, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_pidfd(NULL, &fd), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_token(p, NULL, 5, &n), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_token(p, NULL, 0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(fd == 0 && n == 0);
    CHECK(is_running(pid));
    pidguard_process_free(NULL);
    bool sent = false;
    CHECK_OK(pidguard_process_signal(p, SIGKILL, &sent));
    CHECK(sent);
    CHECK(waitpid(pid, NULL, 0) == pid);
    release(p);
}

struct waiter {
    pidguard_process *p;
    int status;
    bool exited;
};

static void *wait_forever(void *arg) {
    struct waiter *w = arg;
    w->status = pidguard_process_wait(w->p, -1, &w->exited);
    return NULL;
}

static void a_wait_on_one_thread_a_signal_on_another(void) {
    pid_t pid = spawn(SLEEP_ARGV, 1, "/dev/null", "/dev/null");
    struct waiter w = {open_checked(pid), -1, false};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_forever, &w) == 0);
    bool sent = false;
    CHECK_OK(pidguard_process_signal(w.p, SIGTERM, &sent));
    CHECK(sent);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(w.status == 0 && w.exited);
    CHECK(waitpid(pid, NULL, 0) == pid);
    release(w.p);
}

/* EPERM from the kernel: a child running as nobody signals a root process through a handle. */
static void the_kernel_refusing_is_permission_denied(void) {
    if (geteuid() != 0) {
        printf("skipped: EPERM needs root to run a child as another user\n");
        return;
    }
    pid_t target = spawn(SLEEP_ARGV, 1, "/dev/null", "/dev/null");
    char token[256];
    token_of(target, token, sizeof token);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        pidguard_process *p = NULL;
        if (pidguard_process_open(target, token, PIDGUARD_POLICY_STRICT, &p) != 0) _exit(4);
        int code = 0;
        bool sent = false;
        pidguard_terminate_result r;
        r.outcome = (pidguard_outcome)99;
        if (pidguard_process_signal(p, SIGTERM, &sent) != PIDGUARD_EPERMISSION_DENIED || pidguard_last_error_errno() != EPERM) code = 5;
        if (pidguard_process_signal_group(p, SIGTERM, &sent) != PIDGUARD_EPERMISSION_DENIED) code = 6;
        if (pidguard_process_terminate(p, "TERM/0.1/KILL/0.1", 0, &r) != PIDGUARD_EPERMISSION_DENIED || pidguard_last_error_errno() != EPERM) code = 7;
        if (r.outcome != (pidguard_outcome)99 || sent) code = 8;
        release(p);
        _exit(code);
    }
    int st = 0;
    CHECK(waitpid(child, &st, 0) == child);
    CHECK(WIFEXITED(st));
    if (WEXITSTATUS(st) != 0) fprintf(stderr, "EPERM child exited %d\n", WEXITSTATUS(st));
    CHECK(WEXITSTATUS(st) == 0);
    CHECK(is_running(target));
    pidguard_process *p = open_checked(target);
    pidguard_terminate_result r;
    CHECK_OK(pidguard_process_terminate(p, "KILL/5", 0, &r));
    CHECK(r.outcome == PIDGUARD_OUTCOME_EXITED);
    CHECK(waitpid(target, NULL, 0) == target);
    release(p);
}

/* The caller's own child, pinned without a token — even after it exited unreaped, so its
 * group's live member is still reached; a process that is not our child is refused. */
static void open_child_reaches_the_group_of_an_unreaped_leader(void) {
    static char *const EXITING[] = {"/bin/bash", "-c", "sleep infinity & exit 0", NULL};
    pid_t leader = spawn(EXITING, 1, "/dev/null", "/dev/null");
    pid_t member = 0;
    for (int i = 0; i < 500 && !member; i++) {
        member = member_of(leader);
        if (!member) usleep(10000);
    }
    CHECK(member > 0);
    pidguard_process *p = NULL;
    CHECK_OK(pidguard_process_open_child(leader, &p));
    opened[31] = p;
    pidguard_terminate_result r;
    CHECK_OK(pidguard_process_terminate(p, "TERM/5/KILL/5", 0, &r));
    CHECK(r.outcome == PIDGUARD_OUTCOME_EXITED);
    CHECK(!is_running(member));
    opened[31] = NULL;
    pidguard_process_free(p);
    CHECK(waitpid(leader, NULL, 0) == leader);
    pidguard_process *q = NULL;
    CHECK_STATUS(pidguard_process_open_child(getppid(), &q), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_process_open_child(1, &q), PIDGUARD_EREFUSED);
    CHECK_STATUS(pidguard_process_open_child(leader, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(q == NULL);
}

int main(void) {
    atexit(kill_leftovers);
    open_child_reaches_the_group_of_an_unreaped_leader();
    accessors_wait_and_signal();
    group_reached_after_the_leader_was_reaped();
    terminate_keeps_the_handle();
    refusals_and_gone();
    bad_arguments();
    a_wait_on_one_thread_a_signal_on_another();
    the_kernel_refusing_is_permission_denied();
    printf("process: %d checks passed\n", checks_passed);
    return 0;
}
