/* pidguard at the edges, from C: a leader whose main thread exited while a worker runs, a machine
 * id written after the record, another machine's record, and no /proc (a forked child in its
 * own mount namespace with /proc unmounted). Every process started here is our own child and is
 * stopped through pidguard or by its own pid. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>

#include "check.h"

static void *worker(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

/* A child in its own session whose main thread calls pthread_exit while a worker runs: its
 * /proc/<pid>/stat says Z, the process lives (openclaw/openclaw PR #137726). */
static pid_t spawn_leader_exits(void) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setsid();
        /* Never hold the harness's pipes open. */
        int null = open("/dev/null", O_RDWR);
        dup2(null, 1);
        dup2(null, 2);
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0) _exit(1);
        pthread_exit(NULL);
    }
    return pid;
}

static int threads_of(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    int n = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
    fclose(f);
    return n;
}

static void wait_leader_z(pid_t pid) {
    for (int i = 0; i < 1000; i++) {
        char state = 0;
        int pgrp = 0;
        if (read_stat(pid, &state, &pgrp) && state == 'Z' && threads_of(pid) == 2) return;
        usleep(10000);
    }
    CHECK(!"the leader never showed Z with a live thread");
}

/* Field `field` (0-based, split at ':') of `token` replaced by `value`, into `out`. */
static void with_field(const char *token, int field, const char *value, char *out, size_t len) {
    char copy[256];
    snprintf(copy, sizeof copy, "%s", token);
    out[0] = 0;
    int i = 0;
    for (char *save = NULL, *f = strtok_r(copy, ":", &save); f != NULL; f = strtok_r(NULL, ":", &save), i++) {
        if (i) strncat(out, ":", len - strlen(out) - 1);
        strncat(out, i == field ? value : f, len - strlen(out) - 1);
    }
}

static void a_leader_whose_main_thread_exited_is_alive(void) {
    pid_t pid = spawn_leader_exits();
    wait_leader_z(pid);
    pidguard_process_info info;
    CHECK_OK(pidguard_lookup(pid, &info));
    CHECK(info.state == 'Z');
    CHECK(!info.zombie);
    char token[256];
    size_t n = 0;
    CHECK_OK(pidguard_start_token(pid, token, sizeof token, &n));
    pidguard_verdict v;
    pidguard_reason r;
    CHECK_OK(pidguard_judge(pid, token, &v, &r));
    CHECK(v == PIDGUARD_VERDICT_MATCH);
    struct pidguard_terminate_result res;
    CHECK_OK(pidguard_terminate(pid, token, PIDGUARD_POLICY_STRICT, "TERM/5/KILL/5", 0, &res));
    CHECK(res.outcome == PIDGUARD_OUTCOME_EXITED);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
}

static void an_equal_boot_id_proves_the_same_kernel(void) {
    pid_t pid = spawn((char *const[]){"/bin/sleep", "infinity", NULL}, 1, "/dev/null", "/dev/null");
    char token[256], other[256], foreign[256];
    size_t n = 0;
    for (int i = 0; i < 500 && pidguard_start_token(pid, token, sizeof token, &n) != 0; i++) usleep(10000);
    with_field(token, 1, "writtenbeforemachineid", other, sizeof other);
    pidguard_verdict v;
    pidguard_reason r;
    CHECK_OK(pidguard_judge(pid, other, &v, &r));
    CHECK(v == PIDGUARD_VERDICT_MATCH && r == PIDGUARD_REASON_TOKEN_EQUAL);
    with_field(other, 2, "00000000-0000-4000-8000-000000000000", foreign, sizeof foreign);
    CHECK_OK(pidguard_judge(pid, foreign, &v, &r));
    CHECK(v == PIDGUARD_VERDICT_UNVERIFIABLE && r == PIDGUARD_REASON_FOREIGN_MACHINE);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void without_proc_the_machine_identity_is_unknown(void) {
    if (geteuid() != 0) {
        printf("skip - no /proc case needs root\n");
        return;
    }
    /* valgrind itself reads /proc of the process it runs: the case runs natively only. */
    const char *preload = getenv("LD_PRELOAD");
    if (preload != NULL && strstr(preload, "vgpreload") != NULL) {
        printf("skip - no /proc case under valgrind\n");
        return;
    }
    pid_t pid = spawn((char *const[]){"/bin/sleep", "infinity", NULL}, 1, "/dev/null", "/dev/null");
    char token[256];
    size_t n = 0;
    for (int i = 0; i < 500 && pidguard_start_token(pid, token, sizeof token, &n) != 0; i++) usleep(10000);
    fflush(stdout);
    pid_t c = fork();
    CHECK(c >= 0);
    if (c == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) _exit(77);
        while (umount2("/proc", MNT_DETACH) == 0) {
        }
        if (access("/proc/self", F_OK) == 0) _exit(78);
        pidguard_verdict v;
        pidguard_reason r;
        if (pidguard_judge(pid, token, &v, &r) != 0) _exit(2);
        if (v != PIDGUARD_VERDICT_UNVERIFIABLE || r != PIDGUARD_REASON_MACHINE_IDENTITY_UNREADABLE) _exit(3);
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(c, &status, 0) == c);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        printf("skip - no mount namespace here\n");
    } else {
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK(is_running(pid));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

int main(void) {
    a_leader_whose_main_thread_exited_is_alive();
    an_equal_boot_id_proves_the_same_kernel();
    without_proc_the_machine_identity_is_unknown();
    printf("edges: %d checks passed\n", checks_passed);
    return 0;
}
