/* abx-dl's three functions (process_utils) on real processes, from C:
 * pidguard_write_pid_file_with_mtime, pidguard_validate_pid_file and
 * pidguard_cleanup_background_hooks, with hooks spawned the way abx-dl spawns them
 * (fork, setsid, exec, a .pid and a .sh beside the logs).
 *
 * usage: seed WORKDIR (an empty directory) */
#define _GNU_SOURCE
#include <math.h>

#include "check.h"

struct hook {
    char dir[512], pid_file[600], sh[600], out_log[600], err_log[600];
    pid_t pid;
};

static void hook_paths(struct hook *h, const char *root, const char *plugin, const char *name) {
    join_path(h->dir, sizeof h->dir, root, plugin);
    mkdir(h->dir, 0755);
    snprintf(h->pid_file, sizeof h->pid_file, "%s/%s.pid", h->dir, name);
    snprintf(h->sh, sizeof h->sh, "%s/%s.sh", h->dir, name);
    snprintf(h->out_log, sizeof h->out_log, "%s/%s.stdout.log", h->dir, name);
    snprintf(h->err_log, sizeof h->err_log, "%s/%s.stderr.log", h->dir, name);
}

static size_t find_hook(const pidguard_cleanup_report *r, const char *name) {
    size_t len = 0;
    CHECK_OK(pidguard_cleanup_report_len(r, &len));
    for (size_t i = 0; i < len; i++) {
        const char *n = NULL;
        CHECK_OK(pidguard_cleanup_report_name(r, i, &n));
        if (strcmp(n, name) == 0) return i;
    }
    fprintf(stderr, "hook %s not in the report\n", name);
    exit(1);
}

static size_t count_lines_with(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[8192];
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) n++;
    fclose(f);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: seed WORKDIR\n"); return 2; }
    const char *root = argv[1];
    char index[600];
    join_path(index, sizeof index, root, "index.jsonl");

    /* 1. A real hook: a process group leader (setsid) with two children. */
    struct hook sleeper;
    hook_paths(&sleeper, root, "plugin_sleep", "on_Snapshot__10_sleeper.bg");
    char *sleeper_argv[] = {"/bin/sh", "-c", "sleep infinity & sleep infinity & wait", NULL};
    const char *const sleeper_cmd[] = {"/bin/sh", "-c", "sleep infinity & sleep infinity & wait"};
    CHECK_OK(pidguard_write_cmd_file(sleeper.sh, sleeper_cmd, 3));
    double started = now_seconds();
    sleeper.pid = spawn(sleeper_argv, 1, sleeper.out_log, sleeper.err_log);
    CHECK_OK(pidguard_write_pid_file_with_mtime(sleeper.pid_file, sleeper.pid, started));
    CHECK(wait_group_size(sleeper.pid, 3));
    {
        FILE *f = fopen(sleeper.pid_file, "r");
        char content[32] = {0};
        CHECK(f != NULL);
        CHECK(fread(content, 1, sizeof content - 1, f) > 0);
        fclose(f);
        char expected[32];
        snprintf(expected, sizeof expected, "%d", (int)sleeper.pid);
        CHECK(strcmp(content, expected) == 0); /* the decimal pid, no newline */
        struct stat st;
        CHECK(stat(sleeper.pid_file, &st) == 0);
        double mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
        CHECK(mtime > started - 1e-6 && mtime < started + 1e-6);
        CHECK((st.st_mode & 0777) == 0644);
    }
    /* An output file the hook "produced". */
    {
        char out[700];
        join_path(out, sizeof out, sleeper.dir, "out.txt");
        FILE *f = fopen(out, "w");
        CHECK(f != NULL);
        fputs("result\n", f);
        fclose(f);
    }

    bool valid = false;
    CHECK_OK(pidguard_validate_pid_file(sleeper.pid_file, sleeper.sh, 5.0, &valid));
    CHECK(valid);
    CHECK_OK(pidguard_validate_pid_file(sleeper.pid_file, NULL, 5.0, &valid));
    CHECK(valid);
    pidguard_pid_file_check check;
    CHECK_OK(pidguard_check_pid_file(sleeper.pid_file, sleeper.sh, 5.0, &check));
    CHECK(check.valid && check.reason == PIDGUARD_CHECK_VALID && check.pid == sleeper.pid);
    /* The token in the xattr decides (tmpfs and ext4 both take user xattrs). */
    if (check.has_token) {
        CHECK(check.verdict == PIDGUARD_VERDICT_MATCH);
        CHECK(check.verdict_reason == PIDGUARD_REASON_TOKEN_EQUAL);
    } else {
        fprintf(stderr, "note: no user xattrs here; the mtime rule decided\n");
        CHECK(check.verdict == PIDGUARD_VERDICT_UNVERIFIABLE);
    }
    CHECK(!check.foreign);
    /* The file's owner and mode, and the token the xattr holds. */
    CHECK(check.owner_uid == (int64_t)getuid() && check.mode >= 0 && (check.mode & 0777) == 0644);
    CHECK(check.has_token == (check.token != NULL));

    /* Another command file: with a matching token the token alone decides (a hook run through
     * its shebang has another argv than its .sh); without one, the argv rule says it is not
     * that hook. */
    char other_sh[700];
    join_path(other_sh, sizeof other_sh, root, "other.sh");
    const char *const other_cmd[] = {"/usr/bin/python3", "hook.py"};
    CHECK_OK(pidguard_write_cmd_file(other_sh, other_cmd, 2));
    CHECK_OK(pidguard_validate_pid_file(sleeper.pid_file, other_sh, 5.0, &valid));
    CHECK(valid == check.has_token);
    CHECK_OK(pidguard_check_pid_file(sleeper.pid_file, other_sh, 5.0, &check));
    CHECK(check.reason == (check.has_token ? PIDGUARD_CHECK_VALID : PIDGUARD_CHECK_CMD_MISMATCH));

    /* 2. A dead hook: its pid was reaped. Stale: removed, nothing signalled. */
    struct hook dead;
    hook_paths(&dead, root, "plugin_dead", "on_Snapshot__20_dead.bg");
    const char *const dead_cmd[] = {"/nonexistent/dead-hook"};
    CHECK_OK(pidguard_write_cmd_file(dead.sh, dead_cmd, 1));
    dead.pid = dead_pid();
    CHECK_OK(pidguard_write_pid_file_with_mtime(dead.pid_file, dead.pid, now_seconds()));
    CHECK_OK(pidguard_validate_pid_file(dead.pid_file, dead.sh, 5.0, &valid));
    CHECK(!valid);

    /* 3. A bystander: alive, but the pidfile's mtime is 1000 s off its start (a recycled pid
     *    as abx-dl's mtime rule sees it). It must survive cleanup untouched. */
    struct hook bystander;
    hook_paths(&bystander, root, "plugin_bystander", "on_Snapshot__30_bystander.bg");
    char *bystander_argv[] = {"/bin/sleep", "infinity", NULL};
    const char *const bystander_cmd[] = {"/bin/sleep", "infinity"};
    CHECK_OK(pidguard_write_cmd_file(bystander.sh, bystander_cmd, 2));
    bystander.pid = spawn(bystander_argv, 1, NULL, NULL);
    CHECK_OK(pidguard_write_pid_file_with_mtime(bystander.pid_file, bystander.pid, now_seconds() - 1000.0));
    CHECK_OK(pidguard_check_pid_file(bystander.pid_file, bystander.sh, 5.0, &check));
    CHECK(!check.valid && check.reason == PIDGUARD_CHECK_MTIME_SKEW && !check.has_token);

    /* 4. One cleanup. is_tty = true: the JSON lines go to the index only. */
    pidguard_cleanup_report *report = NULL;
    double t0 = now_seconds();
    CHECK_OK(pidguard_cleanup_background_hooks(root, index, true, "TERM/10/KILL/5", NULL, &report));
    CHECK(report != NULL);
    CHECK(now_seconds() - t0 < 14.0); /* generous: SIGTERM ends the group at once */
    size_t len = 0;
    CHECK_OK(pidguard_cleanup_report_len(report, &len));
    CHECK(len == 3);

    size_t i = find_hook(report, "on_Snapshot__10_sleeper.bg");
    pidguard_hook_outcome outcome;
    pidguard_verdict verdict;
    pidguard_check_reason reason;
    pidguard_refusal refusal;
    const int32_t *signals = NULL;
    size_t n = 0;
    int32_t pid = 0, exit_code = 0;
    bool removed = false, succeeded = false;
    const char *s = NULL;
    const char *const *strings = NULL;
    double started_at = 0, ended_at = 0;
    CHECK_OK(pidguard_cleanup_report_outcome(report, i, &outcome));
    CHECK(outcome == PIDGUARD_HOOK_EXITED);
    CHECK_OK(pidguard_cleanup_report_pid(report, i, &pid));
    CHECK(pid == sleeper.pid);
    CHECK_OK(pidguard_cleanup_report_reason(report, i, &reason));
    CHECK(reason == PIDGUARD_CHECK_VALID);
    CHECK_OK(pidguard_cleanup_report_verdict(report, i, &verdict));
    CHECK(verdict == PIDGUARD_VERDICT_MATCH || verdict == PIDGUARD_VERDICT_UNVERIFIABLE);
    CHECK_OK(pidguard_cleanup_report_refusal(report, i, &refusal));
    CHECK(refusal == PIDGUARD_REFUSAL_NONE);
    CHECK_OK(pidguard_cleanup_report_signals(report, i, &signals, &n));
    CHECK(n >= 1 && signals != NULL && signals[0] == SIGTERM);
    CHECK_OK(pidguard_cleanup_report_exit_code(report, i, &exit_code));
    /* Our own child: its status is known through its pidfd (unknown, -1, without pidfds). */
    CHECK(exit_code == 128 + SIGTERM || (!pidfd_available() && exit_code == -1));
    CHECK_OK(pidguard_cleanup_report_pid_file_removed(report, i, &removed));
    CHECK(removed);
    CHECK_OK(pidguard_cleanup_report_succeeded(report, i, &succeeded));
    CHECK(succeeded);
    CHECK_OK(pidguard_cleanup_report_error(report, i, &s));
    CHECK(s == NULL);
    CHECK_OK(pidguard_cleanup_report_dir(report, i, &s));
    CHECK(strcmp(s, sleeper.dir) == 0);
    CHECK_OK(pidguard_cleanup_report_pid_file(report, i, &s));
    CHECK(strcmp(s, sleeper.pid_file) == 0);
    CHECK_OK(pidguard_cleanup_report_cmd(report, i, &strings, &n));
    CHECK(n == 3 && strcmp(strings[0], "/bin/sh") == 0 && strcmp(strings[2], sleeper_cmd[2]) == 0);
    CHECK_OK(pidguard_cleanup_report_output_files(report, i, &strings, &n));
    CHECK(n == 1 && strcmp(strings[0], "out.txt") == 0);
    CHECK_OK(pidguard_cleanup_report_leftovers(report, i, &signals, &n));
    CHECK(n == 0 && signals == NULL);
    CHECK_OK(pidguard_cleanup_report_times(report, i, &started_at, &ended_at));
    CHECK(started_at > started - 1e-3 && started_at < started + 1e-3 && ended_at >= started_at);
    int32_t after = 0;
    pidguard_reason verdict_reason;
    double elapsed = -1;
    CHECK_OK(pidguard_cleanup_report_after(report, i, &after));
    CHECK(after == SIGTERM);
    CHECK_OK(pidguard_cleanup_report_verdict_reason(report, i, &verdict_reason));
    CHECK(verdict_reason == (verdict == PIDGUARD_VERDICT_MATCH ? PIDGUARD_REASON_TOKEN_EQUAL : PIDGUARD_REASON_NO_RECORDED_TOKEN));
    CHECK_OK(pidguard_cleanup_report_elapsed(report, i, &elapsed));
    CHECK(elapsed >= 0 && elapsed < 14.0);
    CHECK_OK(pidguard_cleanup_report_notes(report, i, &strings, &n));
    CHECK(n == 0 && strings == NULL);
    CHECK(access(sleeper.pid_file, F_OK) != 0);
    CHECK(access(sleeper.sh, F_OK) == 0);      /* the .sh is always kept */
    CHECK(access(sleeper.out_log, F_OK) != 0); /* logs removed on success */
    /* The whole group is gone, and the leader died of our SIGTERM. */
    CHECK(count_group(sleeper.pid) == 0);
    int st = 0;
    CHECK(waitpid(sleeper.pid, &st, 0) == sleeper.pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);

    i = find_hook(report, "on_Snapshot__20_dead.bg");
    CHECK_OK(pidguard_cleanup_report_outcome(report, i, &outcome));
    CHECK(outcome == PIDGUARD_HOOK_STALE);
    CHECK_OK(pidguard_cleanup_report_reason(report, i, &reason));
    CHECK(reason == PIDGUARD_CHECK_GONE);
    CHECK_OK(pidguard_cleanup_report_signals(report, i, &signals, &n));
    CHECK(n == 0 && signals == NULL);
    CHECK_OK(pidguard_cleanup_report_exit_code(report, i, &exit_code));
    CHECK(exit_code == -1);
    CHECK_OK(pidguard_cleanup_report_pid_file_removed(report, i, &removed));
    CHECK(removed);
    CHECK_OK(pidguard_cleanup_report_after(report, i, &after));
    CHECK(after == 0);
    CHECK_OK(pidguard_cleanup_report_elapsed(report, i, &elapsed));
    CHECK(isnan(elapsed)); /* nothing ran */

    i = find_hook(report, "on_Snapshot__30_bystander.bg");
    CHECK_OK(pidguard_cleanup_report_outcome(report, i, &outcome));
    CHECK(outcome == PIDGUARD_HOOK_STALE);
    CHECK_OK(pidguard_cleanup_report_reason(report, i, &reason));
    CHECK(reason == PIDGUARD_CHECK_MTIME_SKEW);
    CHECK_OK(pidguard_cleanup_report_signals(report, i, &signals, &n));
    CHECK(n == 0);
    CHECK(is_running(bystander.pid)); /* never signalled */
    CHECK(waitpid(bystander.pid, &st, WNOHANG) == 0);

    /* abx-dl's index: one Process and one ArchiveResult line per finalized hook. */
    CHECK(count_lines_with(index, "\"ArchiveResult\"") == 3);
    CHECK(count_lines_with(index, "\"Process\"") == 3);

    /* Accessors past the end fail and leave the output alone. */
    pid = 12345;
    CHECK_STATUS(pidguard_cleanup_report_pid(report, 3, &pid), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(pid == 12345);
    CHECK_MESSAGE("out of range");
    pidguard_cleanup_report_free(report);
    pidguard_cleanup_report_free(NULL);

    /* A second cleanup finds nothing left to stop: only the bystander's record is gone too. */
    CHECK_OK(pidguard_cleanup_background_hooks(root, NULL, true, NULL, NULL, &report));
    CHECK_OK(pidguard_cleanup_report_len(report, &len));
    CHECK(len == 0);
    pidguard_cleanup_report_free(report);

    /* End the bystander we started ourselves, through pidguard, with its token. */
    char token[256];
    size_t token_len = 0;
    CHECK_OK(pidguard_start_token(bystander.pid, token, sizeof token, &token_len));
    pidguard_terminate_result result;
    CHECK_OK(pidguard_terminate(bystander.pid, token, PIDGUARD_POLICY_STRICT, "TERM/10/KILL/5", 0, &result));
    CHECK(result.outcome == PIDGUARD_OUTCOME_EXITED && result.exited_after == SIGTERM);
    CHECK(waitpid(bystander.pid, &st, 0) == bystander.pid && WIFSIGNALED(st));

    printf("seed: %d checks passed\n", checks_passed);
    return 0;
}
