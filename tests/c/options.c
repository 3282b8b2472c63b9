/* The C column of the option parity table (tests/operations/options.json), driven by
 * tests/c/options_parity.py, which sets every case up and compares. One call per run:
 *
 *   options check PIDFILE CMDFILE|- TOLERANCE|- [--argv WORD...]
 *   options stop  PIDFILE SCHEDULE|- TOLERANCE|- [POLICY GROUP]
 *
 * `-` is "not given" (C has no null: the tolerance is then has_tolerance = false; stop takes
 * core's defaults from pidguard_stop_options_init()) and calls pidguard_stop_pid_file_with(). Prints `reason SLUG`, `ok`, or `error TEXT` (pidguard_strerror of the status). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pidguard.h"

static const char *const CHECK_REASONS[] = {"valid", "missing", "unreadable", "not-regular", "malformed", "bad-token", "gone",
                                            "zombie", "mismatch", "foreign", "unverifiable", "mtime-skew", "cmd-mismatch"};

static const char *given(const char *s) { return strcmp(s, "-") == 0 ? NULL : s; }

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: options check|stop PIDFILE X TOLERANCE [--argv WORD...]\n");
        return 2;
    }
    const char *tol = given(argv[4]);
    int st;
    if (strcmp(argv[1], "check") == 0) {
        struct pidguard_check_options o = {0};
        o.cmd_file = given(argv[3]);
        if (tol) {
            o.has_tolerance = true;
            o.tolerance = strtod(tol, NULL);
        }
        if (argc > 5 && strcmp(argv[5], "--argv") == 0) {
            o.argv = (const char *const *)&argv[6];
            o.argc = (size_t)(argc - 6);
        }
        struct pidguard_pid_file_check c;
        st = pidguard_check_pid_file_with(argv[2], &o, &c);
        if (st == 0) {
            unsigned r = (unsigned)c.reason;
            printf("reason %s\n", r < sizeof CHECK_REASONS / sizeof CHECK_REASONS[0] ? CHECK_REASONS[r] : "unknown");
            return 0;
        }
    } else {
        struct pidguard_stop_options o;
        if (pidguard_stop_options_init(&o) != 0) {
            fprintf(stderr, "pidguard_stop_options_init failed\n");
            return 2;
        }
        o.schedule = given(argv[3]);
        if (argc > 6) {
            o.policy = atoi(argv[5]);
            o.group = strcmp(argv[6], "0") != 0;
        }
        if (tol) {
            o.tolerance = strtod(tol, NULL);
        }
        struct pidguard_stop_result r;
        st = pidguard_stop_pid_file_with(argv[2], &o, &r);
        if (st == 0) {
            printf("ok\n");
            return 0;
        }
    }
    printf("error %s\n", pidguard_strerror(st));
    return 0;
}
