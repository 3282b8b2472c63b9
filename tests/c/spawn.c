/* pidguard_spawn(): a command started inside a scope is stopped whole by pidguard_stop_pid_file().
 *
 * The tree: a shell that double-forks and setsid()s a sleep (a daemon that leaves the command's
 * process group and session), then execs a sleep of its own (the recorded process). Every process
 * of the tree carries a marker in its environment, so survivors are counted by what they are; a
 * process counts as alive unless it is a zombie (this sandbox's pid 1 reaps orphans slowly). The
 * caller's own child (the supervisor, or the command) is reaped here with waitpid(), as the
 * header says.
 *
 *   spawn WORKDIR           the scoped stops (cgroup where a leaf can be made, supervisor), the
 *                           group limitation, bad input. Without pidfds (valgrind 3.19) only
 *                           the group limitation and bad input run: a scope is stopped through
 *                           pidfds.
 *   spawn WORKDIR hidden    run where no cgroup2 mount is visible (a mount namespace): an explicit
 *                           cgroup scope fails cleanly (nothing created), auto takes a supervisor.
 */
#define _GNU_SOURCE
#include "check.h"
#include <grp.h>

#define MARK "PIDGUARD_TEST_SPAWN_MARK"
static char mark_entry[96]; /* "MARK=<value>" as it appears in /proc/<pid>/environ */

static const char *const TREE[] = {
    "sh", "-c",
    "(setsid sh -c \"echo \\$\\$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600\" &); "
    "exec sleep 3600",
};

/* Whether /proc/<pid>/environ holds mark_entry. */
static int has_mark(pid_t pid) {
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    size_t want = strlen(mark_entry);
    for (ssize_t i = 0; i < n;) {
        size_t len = strnlen(buf + i, (size_t)(n - i));
        if (len == want && memcmp(buf + i, mark_entry, want) == 0) return 1;
        i += (ssize_t)len + 1;
    }
    return 0;
}

/* Live (not zombie) processes carrying the marker; their pids into `pids` (up to `cap`). */
static int marked(pid_t *pids, int cap) {
    DIR *d = opendir("/proc");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != 0 || pid <= 0) continue;
        if (has_mark((pid_t)pid) && is_running((pid_t)pid)) {
            if (pids && n < cap) pids[n] = (pid_t)pid;
            n++;
        }
    }
    closedir(d);
    return n;
}

/* At exit (a CHECK that failed half-way): end every marked process through a pin — its token,
 * the handle, its environment read again while the handle holds it — so a reused pid is never
 * signalled. */
static void end_marked(void) {
    pid_t pids[64];
    int n = marked(pids, 64);
    for (int i = 0; i < n && i < 64; i++) {
        char token[256];
        size_t len;
        struct pidguard_process *p = NULL;
        if (pidguard_start_token(pids[i], token, sizeof token, &len) != 0 || len >= sizeof token) continue;
        if (pidguard_process_open(pids[i], token, PIDGUARD_POLICY_STRICT, &p) != 0) continue;
        bool exited = true;
        if (has_mark(pids[i]) && pidguard_process_has_exited(p, &exited) == 0 && !exited)
            pidguard_process_signal(p, SIGKILL, NULL);
        pidguard_process_free(p);
    }
}

static pid_t session_of(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    char state;
    int ppid, pgrp, sid;
    if (!rp || sscanf(rp + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4) return -1;
    return sid;
}

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Spawn TREE in `dir` (its own directory) with `scope`; wait (up to 20 s) until the daemon has
 * left the command's session; its pid and token into the outputs. */
static void start_tree(const char *dir, int32_t scope, pidguard_spawn_result *s, pid_t *daemon, char *token, size_t token_cap) {
    char pid_file[512], daemon_file[512];
    join_path(pid_file, sizeof pid_file, dir, "tree.pid");
    join_path(daemon_file, sizeof daemon_file, dir, "daemon.pid");
    pidguard_spawn_options o = {0};
    o.scope = scope;
    o.cwd = dir;
    CHECK_OK(pidguard_spawn(pid_file, (const char *const *)TREE, 3, &o, s));
    *daemon = 0;
    for (int i = 0; i < 2000 && *daemon == 0; i++) {
        FILE *f = fopen(daemon_file, "r");
        if (f) {
            int d = 0;
            if (fscanf(f, "%d", &d) == 1) *daemon = d;
            fclose(f);
        }
        if (*daemon == 0) pause_ms(10);
    }
    CHECK(*daemon > 0);
    size_t len;
    CHECK_OK(pidguard_start_token(*daemon, token, token_cap, &len));
    CHECK(len < token_cap);
    for (int i = 0; i < 2000 && session_of(*daemon) != *daemon; i++) pause_ms(10);
    CHECK(session_of(*daemon) == *daemon);
    CHECK(session_of(*daemon) != session_of(s->pid)); /* it escaped the command's session */
}

static int reap(const pidguard_spawn_result *s);
static int dir_is_empty(const char *dir);
static void make_dir(char *out, size_t len, const char *work, const char *name);

/* options->env is the command's whole environment (its PATH finds a bare name); ours is untouched. */
static void env_is_the_commands_environment(const char *work, int32_t mode) {
    char dir[512], bin[600], probe[700], p[600], path_entry[700], line[4096];
    make_dir(dir, sizeof dir, work, mode == PIDGUARD_SCOPE_MODE_SUPERVISOR ? "env-supervisor" : "env-group");
    join_path(bin, sizeof bin, dir, "bin");
    CHECK(mkdir(bin, 0755) == 0);
    join_path(probe, sizeof probe, bin, "pidguard-env-probe");
    FILE *f = fopen(probe, "w");
    CHECK(f != NULL);
    fputs("#!/bin/sh\nexec /usr/bin/env\n", f);
    fclose(f);
    CHECK(chmod(probe, 0755) == 0);
    snprintf(path_entry, sizeof path_entry, "PATH=%s:/usr/bin:/bin", bin);
    const char *const env[] = {"HOOK_A=1", "HOOK_B=a=b c", path_entry, NULL};
    const char *const argv[] = {"pidguard-env-probe"};
    pidguard_spawn_options o = {0};
    o.scope = mode;
    o.env = env;
    pidguard_spawn_result s;
    join_path(p, sizeof p, dir, "e.pid");
    const char *before = getenv(MARK);
    CHECK_STATUS(pidguard_spawn(p, argv, 1, &o, &s), 0);
    int st = reap(&s);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    pidguard_stop_result r;
    pidguard_stop_pid_file(p, NULL, PIDGUARD_POLICY_STRICT, NULL, 5.0, &r);
    FILE *out = fopen(s.stdout_path, "r");
    CHECK(out != NULL);
    int n = 0, a = 0, b = 0, path_ok = 0;
    while (fgets(line, sizeof line, out)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "PWD=", 4) == 0) continue; /* the probe's /bin/sh adds PWD itself */
        n++;
        a += strcmp(line, "HOOK_A=1") == 0;
        b += strcmp(line, "HOOK_B=a=b c") == 0;
        path_ok += strcmp(line, path_entry) == 0;
    }
    fclose(out);
    CHECK(n == 3 && a == 1 && b == 1 && path_ok == 1);
    CHECK(before != NULL && getenv(MARK) == before && getenv("HOOK_A") == NULL);
    /* Not on our PATH: without env it is not found. */
    join_path(p, sizeof p, dir, "n.pid");
    CHECK_STATUS(pidguard_spawn(p, argv, 1, NULL, &s), PIDGUARD_ENOT_FOUND);
}

/* Reap the spawn's child of the caller (the supervisor, else the command); its wait status. */
static int reap(const pidguard_spawn_result *s) {
    int st = 0;
    pid_t child = s->supervisor_pid ? s->supervisor_pid : s->pid;
    CHECK(waitpid(child, &st, 0) == child);
    return st;
}

static void make_dir(char *out, size_t len, const char *work, const char *name) {
    join_path(out, len, work, name);
    CHECK(mkdir(out, 0755) == 0);
}

/* Whether a cgroup v2 leaf can be made here: a probe spawn with PIDGUARD_SCOPE_MODE_CGROUP. */
static int leaf_possible(const char *work) {
    char dir[512], pid_file[600];
    make_dir(dir, sizeof dir, work, "probe");
    join_path(pid_file, sizeof pid_file, dir, "probe.pid");
    pidguard_spawn_options o = {0};
    o.scope = PIDGUARD_SCOPE_MODE_CGROUP;
    const char *const argv[] = {"true"};
    pidguard_spawn_result s;
    int rc = pidguard_spawn(pid_file, argv, 1, &o, &s);
    if (rc != 0) {
        CHECK(rc == PIDGUARD_EIO);
        print_last_error();
        return 0;
    }
    reap(&s);
    pidguard_stop_result r;
    CHECK_OK(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, NULL, 5.0, &r));
    return 1;
}

static void scoped_tree_is_stopped_whole(const char *work, int32_t mode, pidguard_scope scope) {
    char dir[512], pid_file[600];
    make_dir(dir, sizeof dir, work, scope == PIDGUARD_SCOPE_CGROUP ? "cgroup" : "supervisor");
    join_path(pid_file, sizeof pid_file, dir, "tree.pid");
    pidguard_spawn_result s;
    pid_t daemon;
    char token[256];
    start_tree(dir, mode, &s, &daemon, token, sizeof token);
    CHECK(s.scope == scope);
    CHECK(s.scope_record != NULL && strncmp(s.scope_record, scope == PIDGUARD_SCOPE_CGROUP ? "cgroup:" : "supervisor:", scope == PIDGUARD_SCOPE_CGROUP ? 7 : 11) == 0);
    CHECK(s.note == NULL);
    CHECK((s.supervisor_pid != 0) == (scope == PIDGUARD_SCOPE_SUPERVISOR));
    CHECK(strcmp(s.pid_file, pid_file) == 0 && s.cmd_file != NULL && strstr(s.stdout_path, "tree.stdout.log") != NULL);
    CHECK(marked(NULL, 0) >= 2);

    pidguard_stop_result r;
    CHECK_OK(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, "TERM/5/KILL/5", 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_EXITED && r.pid_file_removed);
    CHECK(marked(NULL, 0) == 0); /* nothing of the scope survived, the setsid daemon included */
    CHECK(!is_running(daemon));
    CHECK(r.scope == scope && r.has_terminate && r.terminate.scope == scope);
    int st = reap(&s);
    /* The command died of SIGTERM; a supervisor ends by the same signal (its status is the
     * command's own). */
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

/* A command killed by a signal reads as signalled through the caller's child in every scope:
 * waitid() says CLD_KILLED and the signal, waitpid() WIFSIGNALED. */
static void a_signalled_command_reads_as_signalled(const char *work, int32_t mode, const char *name) {
    char dir[512], p[600];
    make_dir(dir, sizeof dir, work, name);
    join_path(p, sizeof p, dir, "k.pid");
    pidguard_spawn_options o = {0};
    o.scope = mode;
    pidguard_spawn_result s;
    const char *const killer[] = {"sh", "-c", "kill -TERM $$"};
    CHECK_OK(pidguard_spawn(p, killer, 3, &o, &s));
    pid_t child = s.supervisor_pid ? s.supervisor_pid : s.pid;
    siginfo_t info;
    memset(&info, 0, sizeof info);
    CHECK(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT) == 0);
    CHECK(info.si_code == CLD_KILLED && info.si_status == SIGTERM);
    int st = reap(&s);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && !WCOREDUMP(st));
}

/* Whether /proc/<pid>/status has `key` (Uid or Gid) with all four numbers equal to `want`. */
static int four_ids(pid_t pid, const char *key, unsigned want) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = 0;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        unsigned a, b, c, d;
        if (strncmp(line, key, klen) == 0 && line[klen] == ':' && sscanf(line + klen + 1, "%u %u %u %u", &a, &b, &c, &d) == 4)
            ok = a == want && b == want && c == want && d == want;
    }
    fclose(f);
    return ok;
}

/* As root: a tree started with user/group/extra_groups runs as exactly that identity, and the
 * stop leaves nothing. Then, dropped to nobody in a child process: asking for root is
 * PIDGUARD_EPERMISSION_DENIED with nothing created. */
static void as_another_user(const char *work) {
    if (geteuid() != 0) {
        printf("skipped: spawning as another user needs root\n");
        return;
    }
    char dir[512], p[600];
    make_dir(dir, sizeof dir, work, "as-user");
    CHECK(chmod(dir, 0777) == 0);
    join_path(p, sizeof p, dir, "u.pid");
    pidguard_spawn_options o = {0};
    o.scope = PIDGUARD_SCOPE_MODE_SUPERVISOR;
    o.user = "nobody";
    o.group = "65534";
    const char *const groups[] = {"65534", NULL};
    o.extra_groups = groups;
    pidguard_spawn_result s;
    const char *const sleeper[] = {"sleep", "3600"};
    CHECK_OK(pidguard_spawn(p, sleeper, 2, &o, &s));
    CHECK(s.run_as != NULL && strcmp(s.run_as, "uid=65534 gid=65534 groups=65534") == 0);
    CHECK(four_ids(s.pid, "Uid", 65534) && four_ids(s.pid, "Gid", 65534));
    CHECK(four_ids(s.supervisor_pid, "Uid", 0));
    pidguard_stop_result r;
    CHECK_OK(pidguard_stop_pid_file(p, NULL, PIDGUARD_POLICY_STRICT, "TERM/5/KILL/5", 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_EXITED && marked(NULL, 0) == 0);
    reap(&s);

    pid_t c = fork();
    CHECK(c >= 0);
    if (c == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(3);
        pidguard_spawn_options d = {0};
        d.user = "0";
        pidguard_spawn_result t;
        int rc = pidguard_spawn(p, sleeper, 2, &d, &t);
        _exit(rc == PIDGUARD_EPERMISSION_DENIED ? 0 : 4);
    }
    int st;
    CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(dir_is_empty(dir) && marked(NULL, 0) == 0);
}

/* A record whose first process is gone while its scope still runs (the recorded sleep killed,
 * the setsid daemon left in the scope): pidguard_probe_pid_file() says running, counts the
 * daemon, and signals nothing; the record's stop then reaches the daemon. */
static void a_probe_never_acts(const char *work, int32_t mode, const char *name) {
    char dir[512], pid_file[600];
    make_dir(dir, sizeof dir, work, name);
    join_path(pid_file, sizeof pid_file, dir, "tree.pid");
    pidguard_spawn_result s;
    pid_t daemon;
    char token[256];
    start_tree(dir, mode, &s, &daemon, token, sizeof token);
    CHECK(kill(s.pid, SIGKILL) == 0);
    if (s.supervisor_pid == 0) CHECK(waitpid(s.pid, NULL, 0) == s.pid); /* our own child */
    for (int i = 0; i < 2000 && kill(s.pid, 0) == 0; i++) pause_ms(10); /* the supervisor reaps it */
    CHECK(kill(s.pid, 0) != 0);
    pidguard_probe_result p;
    CHECK_OK(pidguard_probe_pid_file(pid_file, NULL, &p));
    CHECK(p.running && p.in_use && p.scope_members >= 1 && p.check.reason == PIDGUARD_CHECK_GONE);
    CHECK(is_running(daemon));
    pidguard_stop_result r;
    CHECK_OK(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, "TERM/5/KILL/5", 5.0, &r));
    for (int i = 0; i < 2000 && is_running(daemon); i++) pause_ms(10);
    CHECK(!is_running(daemon));
    if (s.supervisor_pid) reap(&s);
}

/* The documented limitation of PIDGUARD_SCOPE_MODE_GROUP: the daemon that left the group lives. */
static void group_stop_leaves_the_setsid_daemon(const char *work) {
    char dir[512], pid_file[600];
    make_dir(dir, sizeof dir, work, "group");
    join_path(pid_file, sizeof pid_file, dir, "tree.pid");
    pidguard_spawn_result s;
    pid_t daemon;
    char token[256];
    start_tree(dir, PIDGUARD_SCOPE_MODE_GROUP, &s, &daemon, token, sizeof token);
    CHECK(s.scope == PIDGUARD_SCOPE_GROUP && s.scope_record == NULL && s.supervisor_pid == 0);
    pidguard_stop_result r;
    CHECK_OK(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, "TERM/5/KILL/5", 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_EXITED && r.scope == PIDGUARD_SCOPE_GROUP);
    pid_t left[8];
    CHECK(marked(left, 8) == 1 && left[0] == daemon);
    int st = reap(&s);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    /* Ours to end: by the token read while it was known to be the daemon. */
    pidguard_terminate_result t;
    CHECK_OK(pidguard_terminate(daemon, token, PIDGUARD_POLICY_STRICT, "KILL/5", 0, &t));
    CHECK(t.stopped && marked(NULL, 0) == 0);
}

static int dir_is_empty(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n == 0;
}

static void bad_input_is_refused_before_anything_is_created(const char *work) {
    char dir[512], p[600];
    make_dir(dir, sizeof dir, work, "bad");
    join_path(p, sizeof p, dir, "x.pid");
    pidguard_spawn_result s;
    pidguard_spawn_options o = {0};
    const char *const ok[] = {"sleep", "1"};
    const char *const nul_word[] = {"sleep", NULL};
    const char *const not_utf8[] = {"sleep", "\xff"};
    const char *const missing[] = {"no-such-program-pidguard"};
    CHECK_STATUS(pidguard_spawn(p, ok, 0, NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("empty");
    CHECK_STATUS(pidguard_spawn(p, NULL, 0, NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_spawn(p, NULL, 2, NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_spawn(p, nul_word, 2, NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_spawn(p, not_utf8, 2, NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_spawn(NULL, ok, 2, NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_spawn(p, ok, 2, NULL, NULL), PIDGUARD_EINVALID_ARGUMENT);
    o.scope = 4;
    CHECK_STATUS(pidguard_spawn(p, ok, 2, &o, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_spawn(p, missing, 1, NULL, &s), PIDGUARD_ENOT_FOUND);
    o.scope = 0;
    const char *const no_equals[] = {"A", NULL};
    const char *const empty_name[] = {"=1", NULL};
    o.env = no_equals;
    CHECK_STATUS(pidguard_spawn(p, ok, 2, &o, &s), PIDGUARD_EINVALID_ARGUMENT);
    o.env = empty_name;
    CHECK_STATUS(pidguard_spawn(p, ok, 2, &o, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(dir_is_empty(dir));
    CHECK(marked(NULL, 0) == 0);
}

/* Where no cgroup2 mount is visible: an explicit cgroup scope fails with PIDGUARD_EIO before
 * anything is created; auto takes a supervisor and says why, and is still stopped whole. */
static void hidden(const char *work) {
    char dir[512], p[600];
    make_dir(dir, sizeof dir, work, "hidden");
    join_path(p, sizeof p, dir, "cg.pid");
    pidguard_spawn_options o = {0};
    o.scope = PIDGUARD_SCOPE_MODE_CGROUP;
    pidguard_spawn_result s;
    const char *const sleeper[] = {"sleep", "3600"};
    CHECK_STATUS(pidguard_spawn(p, sleeper, 2, &o, &s), PIDGUARD_EIO);
    CHECK_MESSAGE("no cgroup leaf could be made");
    CHECK(dir_is_empty(dir) && marked(NULL, 0) == 0);

    pid_t daemon;
    char token[256];
    start_tree(dir, PIDGUARD_SCOPE_MODE_AUTO, &s, &daemon, token, sizeof token);
    CHECK(s.scope == PIDGUARD_SCOPE_SUPERVISOR && s.note != NULL && strstr(s.note, "no cgroup leaf could be made") != NULL);
    pidguard_stop_result r;
    join_path(p, sizeof p, dir, "tree.pid");
    CHECK_OK(pidguard_stop_pid_file(p, NULL, PIDGUARD_POLICY_STRICT, "TERM/5/KILL/5", 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_EXITED && marked(NULL, 0) == 0);
    CHECK(r.scope == PIDGUARD_SCOPE_SUPERVISOR);
    int st = reap(&s);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: spawn WORKDIR [hidden]\n");
        return 2;
    }
    char value[48];
    snprintf(value, sizeof value, "%d-%ld", (int)getpid(), (long)time(NULL));
    snprintf(mark_entry, sizeof mark_entry, "%s=%s", MARK, value);
    CHECK(setenv(MARK, value, 1) == 0);
    atexit(end_marked);
    if (argc > 2 && strcmp(argv[2], "hidden") == 0) {
        hidden(argv[1]);
        printf("spawn (cgroup2 hidden): %d checks passed\n", checks_passed);
        return 0;
    }
    bad_input_is_refused_before_anything_is_created(argv[1]);
    group_stop_leaves_the_setsid_daemon(argv[1]);
    env_is_the_commands_environment(argv[1], PIDGUARD_SCOPE_MODE_GROUP);
    if (!pidfd_available()) {
        printf("skipped: scoped stops need pidfds (valgrind 3.19 has none)\n");
    } else {
        if (leaf_possible(argv[1])) {
            scoped_tree_is_stopped_whole(argv[1], PIDGUARD_SCOPE_MODE_CGROUP, PIDGUARD_SCOPE_CGROUP);
            a_probe_never_acts(argv[1], PIDGUARD_SCOPE_MODE_CGROUP, "probe-cgroup");
        } else
            printf("skipped: no cgroup v2 leaf can be made here\n");
        scoped_tree_is_stopped_whole(argv[1], PIDGUARD_SCOPE_MODE_SUPERVISOR, PIDGUARD_SCOPE_SUPERVISOR);
        env_is_the_commands_environment(argv[1], PIDGUARD_SCOPE_MODE_SUPERVISOR);
        a_probe_never_acts(argv[1], PIDGUARD_SCOPE_MODE_SUPERVISOR, "probe-supervisor");
        a_signalled_command_reads_as_signalled(argv[1], PIDGUARD_SCOPE_MODE_SUPERVISOR, "signalled-supervisor");
        as_another_user(argv[1]);
    }
    a_signalled_command_reads_as_signalled(argv[1], PIDGUARD_SCOPE_MODE_GROUP, "signalled-group");
    printf("spawn: %d checks passed\n", checks_passed);
    return 0;
}
