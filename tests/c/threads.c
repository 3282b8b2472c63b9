/* Two threads fail over and over with different errors; each must always read back its own
 * last-error message and errno, never the other's. Compile with -pthread. */
#define _GNU_SOURCE
#include <pthread.h>
#include "check.h"

#define ROUNDS 2000

static pthread_barrier_t start;

static void *null_path_thread(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ROUNDS; i++) {
        if (pidguard_write_pid_file_with_mtime(NULL, 1, 0.0) != PIDGUARD_EINVALID_ARGUMENT) return "status A";
        char m[256];
        size_t n = pidguard_last_error_message(m, sizeof m);
        if (strcmp(m, "argument `pid_file` is NULL") != 0 || n != strlen(m)) return "message A";
        if (pidguard_last_error_errno() != EINVAL) return "errno A";
    }
    return NULL;
}

static void *missing_dir_thread(void *arg) {
    const char *path = arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ROUNDS; i++) {
        if (pidguard_write_pid_file_with_mtime(path, 1, 0.0) != PIDGUARD_ENOT_FOUND) return "status B";
        char m[1024];
        pidguard_last_error_message(m, sizeof m);
        if (strncmp(m, path, strlen(path)) != 0) return "message B";
        if (pidguard_last_error_errno() != ENOENT) return "errno B";
    }
    return NULL;
}

static void *quiet_thread(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    /* Never fails: must never see another thread's message. */
    for (int i = 0; i < ROUNDS; i++) {
        size_t len = 0;
        if (pidguard_start_token(getpid(), NULL, 0, &len) != PIDGUARD_OK) return "status C";
        if (pidguard_last_error_message(NULL, 0) != 0 || pidguard_last_error_errno() != 0) return "message C";
    }
    return NULL;
}

/* Another thread never sees this thread's held guard holder. */
static void *held_thread(void *arg) {
    (void)arg;
    pidguard_guard_verdict v;
    if (pidguard_last_held(&v, NULL) != PIDGUARD_ENOT_FOUND) return "held leaked";
    return NULL;
}

static void held_is_per_thread(const char *dir) {
    char path[700];
    join_path(path, sizeof path, dir, "guard.json");
    pidguard_entry *e = NULL;
    CHECK_OK(pidguard_entry_current(&e));
    pidguard_guard *g = NULL, *g2 = NULL;
    CHECK_OK(pidguard_guard_acquire(path, e, 0, &g));
    CHECK_STATUS(pidguard_guard_acquire(path, e, 0, &g2), PIDGUARD_EHELD);
    pthread_t t;
    void *r;
    CHECK(pthread_create(&t, NULL, held_thread, NULL) == 0 && pthread_join(t, &r) == 0);
    CHECK(r == NULL);
    pidguard_guard_verdict v;
    CHECK_OK(pidguard_last_held(&v, NULL));
    CHECK(v.found && v.verdict == PIDGUARD_VERDICT_MATCH);
    CHECK_OK(pidguard_guard_release(g, NULL));
    pidguard_entry_free(e);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: threads WORKDIR\n"); return 2; }
    char path[700];
    join_path(path, sizeof path, argv[1], "no-such-dir/thread.pid");
    CHECK(pthread_barrier_init(&start, NULL, 3) == 0);
    pthread_t a, b, c;
    CHECK(pthread_create(&a, NULL, null_path_thread, NULL) == 0);
    CHECK(pthread_create(&b, NULL, missing_dir_thread, path) == 0);
    CHECK(pthread_create(&c, NULL, quiet_thread, NULL) == 0);
    void *ra, *rb, *rc;
    CHECK(pthread_join(a, &ra) == 0 && pthread_join(b, &rb) == 0 && pthread_join(c, &rc) == 0);
    if (ra || rb || rc) {
        fprintf(stderr, "thread failure: %s %s %s\n", ra ? (char *)ra : "-", rb ? (char *)rb : "-", rc ? (char *)rc : "-");
        return 1;
    }
    checks_passed += 3 * ROUNDS;
    /* The main thread never failed: it has no message either. */
    CHECK(pidguard_last_error_message(NULL, 0) == 0);
    pthread_barrier_destroy(&start);
    held_is_per_thread(argv[1]);
    printf("threads: %d checks passed\n", checks_passed);
    return 0;
}
