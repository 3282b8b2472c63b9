/* Every status code, NULL arguments, outputs left alone on failure, truncated error buffers,
 * the snprintf-like start token, and the other entry points (judge, lookup, terminate) on real
 * processes.
 *
 * usage: status WORKDIR (an empty directory) */
#define _GNU_SOURCE
#include <math.h>
#include "check.h"

/* Not in the header: a test-only symbol that panics inside the boundary. */
int pidguard_internal_test_panic(void);

/* Every status the header names. Listing them here makes this file fail to compile if one
 * disappears; ffi-c/tests/header.rs checks that the list matches core's table. */
static const int ALL_STATUSES[] = {
    PIDGUARD_OK,           PIDGUARD_EINVALID_ARGUMENT, PIDGUARD_ENOT_FOUND,
    PIDGUARD_EALREADY_EXISTS, PIDGUARD_EMALFORMED,     PIDGUARD_EUNTRUSTED,
    PIDGUARD_ENO_SUCH_PROCESS, PIDGUARD_EPERMISSION_DENIED, PIDGUARD_ETIMED_OUT,
    PIDGUARD_EHELD,        PIDGUARD_ESUPERSEDED,       PIDGUARD_EUNSUPPORTED,
    PIDGUARD_EREFUSED,     PIDGUARD_EIO,               PIDGUARD_EPANIC,
    PIDGUARD_ESYMLINK,     PIDGUARD_EIS_DIRECTORY,     PIDGUARD_ENOT_REGULAR_FILE,
    PIDGUARD_EHARD_LINKED, PIDGUARD_EINSECURE_MODE,    PIDGUARD_ETOO_LARGE,
    PIDGUARD_EINVALID_JSON, PIDGUARD_EBAD_PID,         PIDGUARD_EBAD_TOKEN,
};
#define N_STATUSES (sizeof ALL_STATUSES / sizeof ALL_STATUSES[0])

static void strerror_names_every_status(void) {
    const char *unknown = pidguard_strerror(-1000);
    CHECK(strcmp(unknown, "unknown pidguard status") == 0);
    CHECK(strcmp(pidguard_strerror(1), unknown) == 0);
    CHECK(strcmp(pidguard_strerror(PIDGUARD_OK), "success") == 0);
    for (size_t i = 0; i < N_STATUSES; i++) {
        CHECK(ALL_STATUSES[i] == -(int)i); /* dense, 0 down to -(n-1): never renumbered */
        const char *t = pidguard_strerror(ALL_STATUSES[i]);
        CHECK(t != NULL && strcmp(t, unknown) != 0);
        for (size_t j = 0; j < i; j++) CHECK(strcmp(t, pidguard_strerror(ALL_STATUSES[j])) != 0);
    }
    CHECK(strcmp(pidguard_strerror(PIDGUARD_ENO_SUCH_PROCESS), "no such process") == 0);
    CHECK(strcmp(pidguard_strerror(PIDGUARD_EPANIC), "panic") == 0);
    CHECK(strcmp(pidguard_strerror(PIDGUARD_EINSECURE_MODE), "insecure mode") == 0);
    /* Refined statuses map to their family; every other value to itself. */
    for (int s = PIDGUARD_ESYMLINK; s >= PIDGUARD_ETOO_LARGE; s--) CHECK(pidguard_status_family(s) == PIDGUARD_EUNTRUSTED);
    for (int s = PIDGUARD_EINVALID_JSON; s >= PIDGUARD_EBAD_TOKEN; s--) CHECK(pidguard_status_family(s) == PIDGUARD_EMALFORMED);
    for (int s = PIDGUARD_OK; s >= PIDGUARD_EPANIC; s--) CHECK(pidguard_status_family(s) == s);
    CHECK(pidguard_status_family(-1000) == -1000);
    CHECK(pidguard_status_family(15) == 15);
}

static void null_arguments(const char *root) {
    char pidfile[600];
    join_path(pidfile, sizeof pidfile, root, "null.pid");
    bool valid = true;
    size_t len = 777;
    pidguard_pid_file_check check;
    memset(&check, 0x5a, sizeof check);
    pidguard_pid_file_check before = check;
    pidguard_verdict verdict = (pidguard_verdict)99;
    pidguard_reason reason = (pidguard_reason)99;
    pidguard_process_info info;
    pidguard_terminate_result result;
    memset(&result, 0x5a, sizeof result);
    pidguard_terminate_result result_before = result;
    pidguard_cleanup_report *report = (pidguard_cleanup_report *)&len; /* sentinel, never freed */

    CHECK_STATUS(pidguard_write_pid_file_with_mtime(NULL, getpid(), now_seconds()), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("`pid_file` is NULL");
    CHECK(pidguard_last_error_errno() == EINVAL);
    CHECK_STATUS(pidguard_write_pid_file_with_mtime("", getpid(), now_seconds()), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("empty path");
    CHECK_STATUS(pidguard_validate_pid_file(NULL, NULL, 5.0, &valid), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_validate_pid_file(pidfile, NULL, 5.0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("`valid_out` is NULL");
    CHECK(valid == true);
    CHECK_STATUS(pidguard_check_pid_file(NULL, NULL, 5.0, &check), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_check_pid_file(pidfile, NULL, 5.0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(memcmp(&check, &before, sizeof check) == 0);
    const char *const argv_with_null[] = {"/bin/true", NULL};
    CHECK_STATUS(pidguard_write_cmd_file(NULL, argv_with_null, 1), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_write_cmd_file(pidfile, NULL, 1), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_write_cmd_file(pidfile, argv_with_null, 2), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("`argv[1]` is NULL");
    CHECK(access(pidfile, F_OK) != 0); /* nothing written */
    CHECK_STATUS(pidguard_start_token(getpid(), NULL, 0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_start_token(getpid(), NULL, 16, &len), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("`buf` is NULL");
    CHECK(len == 777);
    CHECK_STATUS(pidguard_judge(getpid(), NULL, NULL, &reason), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_judge(getpid(), NULL, &verdict, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(verdict == (pidguard_verdict)99 && reason == (pidguard_reason)99);
    CHECK_STATUS(pidguard_lookup(getpid(), NULL), PIDGUARD_EINVALID_ARGUMENT);
    (void)info;
    CHECK_STATUS(pidguard_terminate(getpid(), NULL, PIDGUARD_POLICY_STRICT, NULL, 0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("`result_out` is NULL");
    CHECK_STATUS(pidguard_cleanup_background_hooks(NULL, NULL, true, NULL, NULL, &report), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_cleanup_background_hooks(root, NULL, true, NULL, NULL, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(report == (pidguard_cleanup_report *)&len);
    CHECK_STATUS(pidguard_cleanup_report_len(NULL, &len), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("`report` is NULL");
    const char *s = "untouched";
    CHECK_STATUS(pidguard_cleanup_report_name(NULL, 0, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(strcmp(s, "untouched") == 0);
    /* Outputs are checked before anything happens: no process is signalled here. */
    CHECK(memcmp(&result, &result_before, sizeof result) == 0);
    pidguard_cleanup_report_free(NULL);
}

static void invalid_arguments(const char *root) {
    char pidfile[600];
    join_path(pidfile, sizeof pidfile, root, "invalid.pid");
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(pidfile, getpid(), NAN), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("not finite");
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(pidfile, getpid(), INFINITY), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(pidfile, 0, now_seconds()), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(pidfile, -1, now_seconds()), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(pidfile, 1 << 30, now_seconds()), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("from 1 to 4194304");
    CHECK(access(pidfile, F_OK) != 0);
    /* As abx-dl's write_cmd_file: an empty argv gives the shebang line alone. */
    const char *const none[] = {"x"};
    CHECK_OK(pidguard_write_cmd_file(pidfile, none, 0));
    const char *const bad_utf8[] = {"/bin/echo", "\xff\xfe"};
    CHECK_STATUS(pidguard_write_cmd_file(pidfile, bad_utf8, 2), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("not UTF-8");
    /* A line break inside an argument is quoted the shlex.join way, as abx-dl writes it. */
    const char *const newline[] = {"/bin/echo", "a\nb"};
    CHECK_OK(pidguard_write_cmd_file(pidfile, newline, 2));
    unlink(pidfile);
    size_t len = 0;
    CHECK_STATUS(pidguard_start_token(-5, NULL, 0, &len), PIDGUARD_EINVALID_ARGUMENT);
    pidguard_verdict v;
    pidguard_reason r;
    CHECK_STATUS(pidguard_judge(getpid(), "garbage", &v, &r), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("not a pidguard start token");
    pidguard_terminate_result res;
    CHECK_STATUS(pidguard_terminate(getpid(), NULL, 7, NULL, 0, &res), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("policy 7");
    CHECK_STATUS(pidguard_terminate(getpid(), NULL, PIDGUARD_POLICY_STRICT, "TERM/x", 0, &res), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("bad schedule");
    pidguard_cleanup_report *report = NULL;
    CHECK_STATUS(pidguard_cleanup_background_hooks(root, NULL, true, "NOPE/1", NULL, &report), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(report == NULL);
}

static void file_system_statuses(const char *root) {
    char path[700], target[700], link[700], file[700];
    /* ENOT_FOUND: the directory does not exist. */
    join_path(path, sizeof path, root, "no-such-dir/x.pid");
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(path, getpid(), now_seconds()), PIDGUARD_ENOT_FOUND);
    CHECK(pidguard_last_error_errno() == ENOENT);
    CHECK_MESSAGE("no-such-dir");
    pidguard_cleanup_report *report = NULL;
    join_path(path, sizeof path, root, "no-such-dir");
    CHECK_STATUS(pidguard_cleanup_background_hooks(path, NULL, true, NULL, NULL, &report), PIDGUARD_ENOT_FOUND);
    CHECK(report == NULL);

    /* EUNTRUSTED: a symlink at the target; what it points to is not touched. */
    join_path(target, sizeof target, root, "precious.txt");
    FILE *f = fopen(target, "w");
    CHECK(f != NULL);
    fputs("precious", f);
    fclose(f);
    join_path(link, sizeof link, root, "link.pid");
    CHECK(symlink(target, link) == 0);
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(link, getpid(), now_seconds()), PIDGUARD_EUNTRUSTED);
    char buf[32] = {0};
    f = fopen(target, "r");
    CHECK(f != NULL && fread(buf, 1, sizeof buf - 1, f) == 8);
    fclose(f);
    CHECK(strcmp(buf, "precious") == 0);
    const char *const argv[] = {"/bin/true"};
    CHECK_STATUS(pidguard_write_cmd_file(link, argv, 1), PIDGUARD_EUNTRUSTED);

    /* EIO: a path through a regular file (ENOTDIR); errno says which. */
    join_path(file, sizeof file, target, "x.pid");
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(file, getpid(), now_seconds()), PIDGUARD_EIO);
    CHECK(pidguard_last_error_errno() == ENOTDIR);

    /* EINVALID_ARGUMENT: cleanup of something that is not a directory. */
    CHECK_STATUS(pidguard_cleanup_background_hooks(target, NULL, true, NULL, NULL, &report), PIDGUARD_EINVALID_ARGUMENT);

    /* EPERMISSION_DENIED: a directory the caller may not write. Root may write anywhere, so a
     * child drops to an unprivileged uid first. */
    char locked[700];
    join_path(locked, sizeof locked, root, "locked");
    CHECK(mkdir(locked, 0755) == 0);
    join_path(path, sizeof path, locked, "x.pid");
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        if (geteuid() == 0) {
            if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        } else if (chmod(locked, 0555) != 0) {
            _exit(4);
        }
        int s = pidguard_write_pid_file_with_mtime(path, getpid(), now_seconds());
        _exit(s == PIDGUARD_EPERMISSION_DENIED && pidguard_last_error_errno() == EACCES ? 0 : 5);
    }
    int st = 0;
    CHECK(waitpid(child, &st, 0) == child);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(access(path, F_OK) != 0);
}

static void process_statuses(void) {
    pid_t gone = dead_pid();
    char token[256];
    size_t len = 999;
    CHECK_STATUS(pidguard_start_token(gone, token, sizeof token, &len), PIDGUARD_ENO_SUCH_PROCESS);
    CHECK(len == 999);
    CHECK(pidguard_last_error_errno() == ESRCH);
    pidguard_process_info info;
    CHECK_STATUS(pidguard_lookup(gone, &info), PIDGUARD_ENO_SUCH_PROCESS);

    /* A zombie has exited: it has no token to record, but lookup still describes it. */
    pid_t zombie = fork();
    CHECK(zombie >= 0);
    if (zombie == 0) _exit(7);
    siginfo_t si;
    CHECK(waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT) == 0);
    CHECK_STATUS(pidguard_start_token(zombie, token, sizeof token, &len), PIDGUARD_ENO_SUCH_PROCESS);
    CHECK_OK(pidguard_lookup(zombie, &info));
    CHECK(info.zombie && info.state == 'Z' && info.pid == zombie && info.ppid == getpid());
    pidguard_verdict v;
    pidguard_reason r;
    CHECK_OK(pidguard_judge(zombie, NULL, &v, &r));
    CHECK(v == PIDGUARD_VERDICT_GONE && r == PIDGUARD_REASON_ZOMBIE);
    int st;
    CHECK(waitpid(zombie, &st, 0) == zombie && WEXITSTATUS(st) == 7);
    CHECK_OK(pidguard_judge(zombie, NULL, &v, &r));
    CHECK(v == PIDGUARD_VERDICT_GONE && r == PIDGUARD_REASON_NO_SUCH_PROCESS);
}

static void panics_become_a_status(void) {
    CHECK_STATUS(pidguard_internal_test_panic(), PIDGUARD_EPANIC);
    CHECK_MESSAGE("pidguard_internal_test_panic: panic: ");
    CHECK_MESSAGE("index out of bounds");
    /* The library still works afterwards, on this thread too. */
    size_t len = 0;
    CHECK_OK(pidguard_start_token(getpid(), NULL, 0, &len));
    CHECK_STATUS(pidguard_internal_test_panic(), PIDGUARD_EPANIC);
}

static void truncated_error_buffers(const char *root) {
    /* A message with a two-byte character where a short buffer would cut it in half. */
    char path[700];
    snprintf(path, sizeof path, "%s/no-such-\xc3\xa9/x.pid", root);
    CHECK_STATUS(pidguard_write_pid_file_with_mtime(path, getpid(), now_seconds()), PIDGUARD_ENOT_FOUND);
    size_t full = pidguard_last_error_message(NULL, 0);
    CHECK(full > strlen(path));
    char *whole = malloc(full + 1);
    CHECK(whole != NULL);
    CHECK(pidguard_last_error_message(whole, full + 1) == full);
    CHECK(strlen(whole) == full && strncmp(whole, path, strlen(path)) == 0);

    char buf[64];
    /* buf_len 0 with a buffer: nothing written, the length returned. */
    memset(buf, 'X', sizeof buf);
    CHECK(pidguard_last_error_message(buf, 0) == full);
    CHECK(buf[0] == 'X');
    /* buf_len 1: only the NUL. */
    CHECK(pidguard_last_error_message(buf, 1) == full);
    CHECK(buf[0] == 0 && buf[1] == 'X');
    /* 8 bytes: 7 characters and the NUL, nothing written past buf_len. */
    memset(buf, 'X', sizeof buf);
    CHECK(pidguard_last_error_message(buf, 8) == full);
    CHECK(strlen(buf) == 7 && strncmp(buf, whole, 7) == 0 && buf[8] == 'X');
    /* Exactly full bytes: one character short. */
    char *almost = malloc(full);
    CHECK(almost != NULL);
    CHECK(pidguard_last_error_message(almost, full) == full);
    CHECK(strlen(almost) == full - 1 && strncmp(almost, whole, full - 1) == 0);
    /* A cut inside "\xc3\xa9" backs off to the character boundary. */
    size_t e = strlen(root) + strlen("/no-such-"); /* offset of \xc3 */
    char *cut = malloc(e + 2);
    CHECK(cut != NULL);
    memset(cut, 'X', e + 2);
    CHECK(pidguard_last_error_message(cut, e + 2) == full); /* room for e + 1 bytes */
    CHECK(strlen(cut) == e && strncmp(cut, whole, e) == 0);
    free(cut);
    free(almost);
    free(whole);

    /* The start token copies the same way. */
    size_t len = 0;
    CHECK_OK(pidguard_start_token(getpid(), NULL, 0, &len));
    CHECK(len > 20 && len < 256);
    char token[256], small[8];
    size_t len2 = 0;
    CHECK_OK(pidguard_start_token(getpid(), token, sizeof token, &len2));
    CHECK(len2 == len && strlen(token) == len && strncmp(token, "linux1:", 7) == 0);
    CHECK_OK(pidguard_start_token(getpid(), small, sizeof small, &len2));
    CHECK(len2 == len && strlen(small) == 7 && strncmp(small, token, 7) == 0);
}

static void judge_lookup_terminate(void) {
    char *sleep_argv[] = {"/bin/sleep", "infinity", NULL};
    pid_t child = spawn(sleep_argv, 1, NULL, NULL);
    char token[256];
    size_t len = 0;
    CHECK_OK(pidguard_start_token(child, token, sizeof token, &len));

    pidguard_process_info info;
    CHECK_OK(pidguard_lookup(child, &info));
    CHECK(info.pid == child && info.ppid == getpid() && info.pgid == child && info.sid == child);
    CHECK(info.group_leader && !info.zombie && strcmp(info.name, "sleep") == 0);
    CHECK(info.uid == (int64_t)getuid() && info.start_ticks > 0 && isfinite(info.create_time));
    /* The fields added from core's ProcessInfo: kept per thread until the next lookup. */
    CHECK(info.token && strcmp(info.token, token) == 0);
    CHECK(info.argv && info.n_argv == 2 && strcmp(info.argv[0], "/bin/sleep") == 0 && strcmp(info.argv[1], "infinity") == 0);
    CHECK(info.argv[2] == NULL && info.exe && strstr(info.exe, "sleep") != NULL);

    pidguard_verdict v;
    pidguard_reason r;
    CHECK_OK(pidguard_judge(child, token, &v, &r));
    CHECK(v == PIDGUARD_VERDICT_MATCH && r == PIDGUARD_REASON_TOKEN_EQUAL);
    CHECK_OK(pidguard_judge(child, NULL, &v, &r));
    CHECK(v == PIDGUARD_VERDICT_UNVERIFIABLE && r == PIDGUARD_REASON_NO_RECORDED_TOKEN);
    /* Another start time: the token proves this is not the recorded process. */
    char other[512];
    unsigned long long ns = 0, ticks = 0;
    char machine[128], boot[64], tail[64] = "-";
    CHECK(sscanf(token, "linux1:%127[^:]:%63[^:]:%llu:%llu:%63s", machine, boot, &ns, &ticks, tail) >= 4);
    /* Recorded without a pidfs inode ("-"): with inodes on both sides the inode decides alone. */
    (void)tail;
    snprintf(other, sizeof other, "linux1:%s:%s:%llu:%llu:-", machine, boot, ns, ticks + 1);
    CHECK_OK(pidguard_judge(child, other, &v, &r));
    CHECK(v == PIDGUARD_VERDICT_MISMATCH);

    pidguard_terminate_result res;
    /* Refused, and nothing sent: a mismatching token, no token under the strict policy, the
     * caller itself, init, pid 0 — the same errors Python and Node raise. */
    CHECK_STATUS(pidguard_terminate(child, other, PIDGUARD_POLICY_LENIENT, NULL, 0, &res), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_MISMATCH);
    CHECK_STATUS(pidguard_terminate(child, NULL, PIDGUARD_POLICY_STRICT, NULL, 0, &res), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_UNVERIFIABLE);
    CHECK_STATUS(pidguard_terminate(getpid(), NULL, PIDGUARD_POLICY_LENIENT, NULL, 0, &res), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_OWN_PID);
    CHECK_STATUS(pidguard_terminate(1, NULL, PIDGUARD_POLICY_LENIENT, NULL, 0, &res), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_INIT);
    CHECK_STATUS(pidguard_terminate(0, NULL, PIDGUARD_POLICY_LENIENT, NULL, 0, &res), PIDGUARD_EREFUSED);
    CHECK(pidguard_last_error_refusal() == PIDGUARD_REFUSAL_NON_POSITIVE_PID);
    CHECK_STATUS(pidguard_terminate(child, token, PIDGUARD_POLICY_STRICT, NULL, 4, &res), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("PIDGUARD_TERMINATE_");
    CHECK(is_running(child));

    /* The real stop: SIGTERM ends it; its status is known to us, its parent. */
    CHECK_OK(pidguard_terminate(child, token, PIDGUARD_POLICY_STRICT, "TERM/10/KILL/5", 0, &res));
    CHECK(res.outcome == PIDGUARD_OUTCOME_EXITED && res.exited_after == SIGTERM && res.group);
    CHECK(res.refusal == PIDGUARD_REFUSAL_NONE && res.signals_sent >= 1 && res.elapsed < 10.0);
    CHECK(res.pinned == (pidfd_available() != 0));
    CHECK(res.exit_code == 128 + SIGTERM || (!res.pinned && res.exit_code == -1));
    CHECK(res.pid == child && res.stopped && res.signals && res.signals[0] == SIGTERM && res.error == NULL);
    CHECK(res.exit_signal == SIGTERM || (!res.pinned && res.exit_signal == 0));
    CHECK(res.group_mode != PIDGUARD_GROUP_MODE_NONE && res.survivors == NULL && res.n_survivors == 0);
    int st;
    CHECK(waitpid(child, &st, 0) == child && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    /* Reaped: the same call now finds it gone (a successor of the number would be MISMATCH). */
    int again = pidguard_terminate(child, token, PIDGUARD_POLICY_STRICT, NULL, 0, &res);
    CHECK(again == PIDGUARD_ENO_SUCH_PROCESS || again == PIDGUARD_EREFUSED);

    /* Unkillable by the schedule: it ignores SIGTERM and the schedule never sends SIGKILL. */
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t stubborn = fork();
    CHECK(stubborn >= 0);
    if (stubborn == 0) {
        setsid();
        signal(SIGTERM, SIG_IGN);
        close(p[0]);
        close(p[1]); /* ready */
        for (;;) pause();
    }
    close(p[1]);
    char c;
    while (read(p[0], &c, 1) > 0) {
    }
    close(p[0]);
    CHECK_OK(pidguard_start_token(stubborn, token, sizeof token, &len));
    CHECK_OK(pidguard_terminate(stubborn, token, PIDGUARD_POLICY_STRICT, "TERM/0.3", 0, &res));
    CHECK(res.outcome == PIDGUARD_OUTCOME_UNKILLABLE && res.exited_after == 0 && !res.stopped);
    CHECK(res.n_survivors == 1 && res.survivors[0] == stubborn);
    CHECK(is_running(stubborn));
    /* The caller chooses the group and the reaping, as in Python and Node. */
    CHECK_OK(pidguard_terminate(stubborn, token, PIDGUARD_POLICY_STRICT, "KILL/10", PIDGUARD_TERMINATE_NO_GROUP | PIDGUARD_TERMINATE_REAP, &res));
    CHECK(res.outcome == PIDGUARD_OUTCOME_EXITED && res.exited_after == SIGKILL && !res.group);
    if (res.pinned) {
        /* Reaped by pidguard through the pidfd, as asked: nothing is left for waitpid. */
        CHECK(res.exit_signal == SIGKILL && res.exit_code == 128 + SIGKILL);
        errno = 0;
        CHECK(waitpid(stubborn, &st, WNOHANG) == -1 && errno == ECHILD);
    } else {
        /* Without a pidfd (valgrind answers pidfd_open with ENOSYS) the status is read by number
         * while /proc/<pid> still answers for the child, but it is never reaped: a reap by
         * number could take a successor's status. */
        CHECK(res.exit_signal == SIGKILL && res.exit_code == 128 + SIGKILL);
        CHECK(waitpid(stubborn, &st, 0) == stubborn && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: status WORKDIR\n"); return 2; }
    /* A fresh thread has no last error. */
    char buf[16] = "XXXX";
    CHECK(pidguard_last_error_message(buf, sizeof buf) == 0 && buf[0] == 0);
    CHECK(pidguard_last_error_message(NULL, 0) == 0);
    CHECK(pidguard_last_error_errno() == 0);
    CHECK(strlen(pidguard_version()) > 0);

    strerror_names_every_status();
    null_arguments(argv[1]);
    invalid_arguments(argv[1]);
    file_system_statuses(argv[1]);
    process_statuses();
    panics_become_a_status();
    truncated_error_buffers(argv[1]);
    judge_lookup_terminate();

    /* Statuses no C entry point can produce yet (the guard-pidfile API is not exposed): they
     * are named by the header and pidguard_strerror() above. */
    printf("status: %d checks passed\n", checks_passed);
    return 0;
}
