/* The C runner of the shared conformance vectors (the JSON files of tests/vectors/; schema in
 * tests/vectors/README.md).
 *
 * Driven by the shared fixture (core/examples/vector_fixture.rs, `vector_fixture drive -- ./vectors`),
 * which sets each case up on real processes with this program as the caller, then sends one
 * tab-separated line per case on stdin:
 *
 *   call  pid_file  cmd_file  tolerance  pid  token  policy  schedule  start_time  umask  dir
 *
 * (empty fields for none). This program makes the call through libpidguard and prints one JSON
 * line: the answer normalised as the other runners normalise theirs (slugs for the enums),
 * `"error_code": <status>` for a negative status (the driver turns it into the error-kind slug
 * through core's table), or `"skip": reason` for a call the C binding does not have. The driver
 * compares and prints `vectors (vectors): N passed, N failed, N skipped`. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "pidguard.h"

enum { CALL, PID_FILE, CMD_FILE, TOLERANCE, PID, TOKEN, POLICY, SCHEDULE, START_TIME, UMASK, DIR_, NFIELDS };

/* Slugs of the header's enums, indexed by value (the same slugs core's as_str() gives). */
static const char *const CHECK_REASONS[] = {"valid", "missing", "unreadable", "not-regular", "malformed", "bad-token", "gone",
                                            "zombie", "mismatch", "foreign", "unverifiable", "mtime-skew", "cmd-mismatch"};
static const char *const VERDICTS[] = {NULL, "match", "mismatch", "unverifiable", "gone"};
static const char *const REASONS[] = {NULL, "token-equal", "boot-id-differs", "start-ticks-differ", "pidfs-inode-differs",
                                      "no-recorded-token", "live-token-unreadable", "foreign-pid-namespace", "foreign-machine",
                                      "no-such-process", "zombie"};
static const char *const OUTCOMES[] = {"already-gone", "exited", "unkillable", "refused", "error"};
static const char *const REFUSALS[] = {NULL, "non-positive-pid", "above-pid-max", "init", "own-pid", "own-group", "parent",
                                       "mismatch", "unverifiable", "untrusted-pidfile", "not-the-recorded-process"};
static const char *const HOOK_OUTCOMES[] = {"stale", "foreign", "unreadable", "already-gone", "exited", "unkillable", "refused", "error",
                                            "unverified"};

#define SLUG(table, v) (((v) >= 0 && (size_t)(v) < sizeof(table) / sizeof(table[0])) ? (table)[(v)] : "unknown")

/* A JSON value for a slug that may be absent. */
static void put_slug(const char *key, const char *slug, bool comma) {
    if (slug) {
        printf("\"%s\":\"%s\"%s", key, slug, comma ? "," : "");
    } else {
        printf("\"%s\":null%s", key, comma ? "," : "");
    }
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGTERM: return "TERM";
    case SIGKILL: return "KILL";
    case SIGINT: return "INT";
    case SIGHUP: return "HUP";
    case SIGQUIT: return "QUIT";
    default: return NULL;
    }
}

static const char *opt(char *f) { return f[0] ? f : NULL; }

static void run(char **f) {
    const char *call = f[CALL];
    const char *pid_file = f[PID_FILE];
    const char *cmd_file = opt(f[CMD_FILE]);
    double tolerance = strtod(f[TOLERANCE], NULL);
    int32_t pid = (int32_t)strtol(f[PID], NULL, 10);
    int st;
    if (strcmp(call, "validate") == 0) {
        bool valid = false;
        st = pidguard_validate_pid_file(pid_file, cmd_file, tolerance, &valid);
        if (st < 0) { printf("{\"error_code\":%d}\n", st); return; }
        printf("{\"valid\":%s}\n", valid ? "true" : "false");
    } else if (strcmp(call, "check") == 0) {
        pidguard_pid_file_check c;
        st = pidguard_check_pid_file(pid_file, cmd_file, tolerance, &c);
        if (st < 0) { printf("{\"error_code\":%d}\n", st); return; }
        printf("{\"valid\":%s,\"reason\":\"%s\",", c.valid ? "true" : "false", SLUG(CHECK_REASONS, c.reason));
        if (c.pid > 0) printf("\"pid\":%d,", c.pid); else printf("\"pid\":null,");
        put_slug("verdict", SLUG(VERDICTS, c.verdict), true);
        put_slug("verdict_reason", SLUG(REASONS, c.verdict_reason), false);
        printf("}\n");
    } else if (strcmp(call, "write") == 0) {
        st = pidguard_write_pid_file_with_mtime(pid_file, pid, strtod(f[START_TIME], NULL));
        if (st < 0) printf("{\"error_code\":%d}\n", st); else printf("{\"error\":null}\n");
    } else if (strcmp(call, "terminate") == 0) {
        pidguard_terminate_result r;
        int32_t policy = strcmp(f[POLICY], "lenient") == 0 ? PIDGUARD_POLICY_LENIENT : PIDGUARD_POLICY_STRICT;
        st = pidguard_terminate(pid, opt(f[TOKEN]), policy, opt(f[SCHEDULE]), 0, &r);
        /* As the Python and Node runners do: a target gone or refused before anything was sent
         * is an error of the call, compared as the outcome it stands for. */
        if (st == PIDGUARD_ENO_SUCH_PROCESS) { printf("{\"outcome\":\"already-gone\",\"refusal\":null,\"after\":null}\n"); return; }
        if (st == PIDGUARD_EREFUSED) {
            printf("{\"outcome\":\"refused\",");
            put_slug("refusal", SLUG(REFUSALS, pidguard_last_error_refusal()), true);
            printf("\"after\":null}\n");
            return;
        }
        if (st < 0) { printf("{\"error_code\":%d}\n", st); return; }
        printf("{\"outcome\":\"%s\",", SLUG(OUTCOMES, r.outcome));
        put_slug("refusal", SLUG(REFUSALS, r.refusal), true);
        put_slug("after", r.outcome == PIDGUARD_OUTCOME_EXITED ? signal_name(r.exited_after) : NULL, true);
        printf("\"elapsed\":%.6f}\n", r.elapsed);
    } else if (strcmp(call, "cleanup") == 0) {
        pidguard_cleanup_report *rep = NULL;
        st = pidguard_cleanup_background_hooks(f[DIR_], NULL, true, opt(f[SCHEDULE]), NULL, &rep);
        if (st < 0) { printf("{\"error_code\":%d}\n", st); return; }
        size_t n = 0;
        pidguard_cleanup_report_len(rep, &n);
        bool found = false;
        for (size_t i = 0; i < n && !found; i++) {
            const char *pf = NULL;
            pidguard_cleanup_report_pid_file(rep, i, &pf);
            if (!pf || strcmp(pf, pid_file) != 0) continue;
            found = true;
            pidguard_hook_outcome o;
            pidguard_check_reason reason;
            pidguard_refusal refusal;
            bool removed = false;
            pidguard_cleanup_report_outcome(rep, i, &o);
            pidguard_cleanup_report_reason(rep, i, &reason);
            pidguard_cleanup_report_refusal(rep, i, &refusal);
            pidguard_cleanup_report_pid_file_removed(rep, i, &removed);
            printf("{\"outcome\":\"%s\",\"reason\":\"%s\",\"pid_file_removed\":%s,", SLUG(HOOK_OUTCOMES, o),
                   SLUG(CHECK_REASONS, reason), removed ? "true" : "false");
            put_slug("refusal", SLUG(REFUSALS, refusal), false);
            printf("}\n");
        }
        if (!found) printf("{\"outcome\":\"not-reported\"}\n");
        pidguard_cleanup_report_free(rep);
    } else if (strcmp(call, "guard_read") == 0) {
        pidguard_entry *e = NULL;
        st = pidguard_guard_read(pid_file, &e);
        if (st < 0) { printf("{\"error_code\":%d}\n", st); return; }
        int32_t epid = 0;
        const char *tok = NULL;
        pidguard_entry_pid(e, &epid);
        pidguard_entry_start_token(e, &tok);
        /* Tokens are printable ASCII without quotes or backslashes (checked before printing). */
        bool plain = tok && strpbrk(tok, "\"\\") == NULL;
        printf("{\"pid\":%d,\"start_token\":\"%s\"}\n", epid, plain ? tok : "(unprintable)");
        pidguard_entry_free(e);
    } else if (strcmp(call, "guard_check") == 0) {
        pidguard_guard_verdict v;
        st = pidguard_guard_check(pid_file, &v, NULL);
        if (st < 0) { printf("{\"error_code\":%d}\n", st); return; }
        printf("{\"found\":%s,", v.found ? "true" : "false");
        if (v.found) printf("\"pid\":%d,", v.pid); else printf("\"pid\":null,");
        put_slug("verdict", v.found ? SLUG(VERDICTS, v.verdict) : NULL, true);
        put_slug("verdict_reason", v.found ? SLUG(REASONS, v.reason) : NULL, false);
        printf("}\n");
    } else if (strcmp(call, "guard_create") == 0) {
        pidguard_entry *e = NULL;
        st = pidguard_entry_new(pid, f[TOKEN], &e);
        if (st == 0) st = pidguard_guard_create(pid_file, e);
        pidguard_entry_free(e);
        if (st < 0) printf("{\"error_code\":%d}\n", st); else printf("{\"error\":null}\n");
    } else {
        printf("{\"skip\":\"unknown call\"}\n");
    }
}

int main(void) {
    char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *fields[NFIELDS];
        char *p = line;
        for (int i = 0; i < NFIELDS; i++) {
            fields[i] = p;
            char *tab = p ? strchr(p, '\t') : NULL;
            if (tab) {
                *tab = '\0';
                p = tab + 1;
            } else {
                p = NULL;
            }
            if (!fields[i]) fields[i] = "";
        }
        mode_t old = 0;
        bool set_umask = fields[UMASK][0] != '\0';
        if (set_umask) old = umask((mode_t)strtol(fields[UMASK], NULL, 10));
        run(fields);
        if (set_umask) umask(old);
        fflush(stdout);
    }
    return 0;
}
