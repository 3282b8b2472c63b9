/* The guard-pidfile API from C on real files and processes: pidguard_entry, create, read
 * (each refusal with its own status), remove, replace, check, acquire/held/release, the
 * snprintf-like encoders, NULL arguments, and pidguard_stop_pid_file.
 *
 * usage: guard WORKDIR (an empty directory) */
#define _GNU_SOURCE
#include <poll.h>

#include "check.h"

static char root[512];

static void at(char *out, size_t len, const char *name) {
    join_path(out, len, root, name);
}

/* Write `content` to `path` with exactly `mode` (a file planted by someone else). */
static void plant(const char *path, const char *content, size_t len, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, content, len) == (ssize_t)len);
    CHECK(fchmod(fd, mode) == 0);
    close(fd);
}

/* The whole content of a file into buf (NUL-terminated); its length, or -1. */
static long slurp(const char *path, char *buf, size_t len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = 0;
    return (long)n;
}

/* The encoding of an entry (what the file holds). */
static void encoded(const pidguard_entry *e, char *buf, size_t len) {
    size_t n = 0;
    CHECK_OK(pidguard_entry_encode(e, buf, len, &n));
    CHECK(n < len);
}

static pidguard_entry *entry(int pid, const char *token) {
    pidguard_entry *e = NULL;
    CHECK_OK(pidguard_entry_new(pid, token, &e));
    CHECK(e != NULL);
    return e;
}

static pidguard_entry *me(void) {
    pidguard_entry *e = NULL;
    CHECK_OK(pidguard_entry_current(&e));
    return e;
}

/* Our own start token with field `index` (0-based after "linux1") replaced by `value`. */
static void my_token_with(int index, const char *value, char *out, size_t len) {
    char tok[256];
    size_t n = 0;
    CHECK_OK(pidguard_start_token(getpid(), tok, sizeof tok, &n));
    char *parts[8];
    int k = 0;
    for (char *p = strtok(tok, ":"); p && k < 8; p = strtok(NULL, ":")) parts[k++] = p;
    CHECK(k == 6 && strcmp(parts[0], "linux1") == 0);
    parts[index + 1] = (char *)value;
    /* Other start ticks stand for another process only in a record without a pidfs inode:
     * with inodes on both sides the inode decides alone. */
    if (index == 3) parts[5] = "-";
    /* Another machine is another machine id and another boot: an equal boot id proves the same
     * kernel, and the machine id is then not consulted. */
    if (index == 0) parts[2] = "00000000-0000-4000-8000-000000000000";
    snprintf(out, len, "%s:%s:%s:%s:%s:%s", parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]);
}

/* A start token recorded for a process that has since exited and been reaped. */
static void token_of_dead(pid_t *pid, char *tok, size_t len) {
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        for (;;) pause();
    }
    size_t n = 0;
    CHECK_OK(pidguard_start_token(child, tok, len, &n));
    CHECK(kill(child, SIGKILL) == 0);
    int st;
    CHECK(waitpid(child, &st, 0) == child);
    *pid = child;
}

static void entries(void) {
    pidguard_entry *e = entry(4242, "linux1:m:b:1:2:-");
    int32_t pid = 0;
    const char *s = NULL;
    CHECK_OK(pidguard_entry_pid(e, &pid));
    CHECK(pid == 4242);
    CHECK_OK(pidguard_entry_start_token(e, &s));
    CHECK(strcmp(s, "linux1:m:b:1:2:-") == 0);

    /* Fields: appended in order, replaced in place. */
    CHECK_OK(pidguard_entry_set_field(e, "session", "s1"));
    CHECK_OK(pidguard_entry_set_field(e, "socket", "/run/x.sock"));
    CHECK_OK(pidguard_entry_set_field(e, "session", "s2"));
    size_t len = 0;
    CHECK_OK(pidguard_entry_fields_len(e, &len));
    CHECK(len == 2);
    const char *name = NULL, *value = NULL;
    CHECK_OK(pidguard_entry_field_at(e, 0, &name, &value));
    CHECK(strcmp(name, "session") == 0 && strcmp(value, "s2") == 0);
    CHECK_STATUS(pidguard_entry_field_at(e, 2, &name, &value), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(strcmp(name, "session") == 0); /* outputs untouched on failure */
    CHECK_OK(pidguard_entry_field(e, "socket", &value));
    CHECK(strcmp(value, "/run/x.sock") == 0);
    CHECK_OK(pidguard_entry_field(e, "absent", &value));
    CHECK(value == NULL);

    /* The one encoding, snprintf-like. */
    const char *want = "{\"pid\":4242,\"start_token\":\"linux1:m:b:1:2:-\",\"session\":\"s2\",\"socket\":\"/run/x.sock\"}\n";
    size_t n = 0;
    CHECK_OK(pidguard_entry_encode(e, NULL, 0, &n));
    CHECK(n == strlen(want));
    char small[10];
    memset(small, 'x', sizeof small);
    CHECK_OK(pidguard_entry_encode(e, small, sizeof small, &n));
    CHECK(n == strlen(want) && strlen(small) == 9 && strncmp(small, want, 9) == 0);
    char buf[512];
    encoded(e, buf, sizeof buf);
    CHECK(strcmp(buf, want) == 0);

    /* decode(encode(e)) is e; clone is e. */
    pidguard_entry *d = NULL, *c = NULL;
    CHECK_OK(pidguard_entry_decode((const uint8_t *)buf, strlen(buf), &d));
    CHECK_OK(pidguard_entry_clone(d, &c));
    char buf2[512];
    encoded(c, buf2, sizeof buf2);
    CHECK(strcmp(buf, buf2) == 0);

    /* Rules are core's: a setter that would break one changes nothing. */
    CHECK_STATUS(pidguard_entry_set_pid(e, 0), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_pid(e, -7), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_start_token(e, ""), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_field(e, "pid", "1"), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_field(e, "start_token", "t"), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_field(e, "", "v"), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_field(e, "bad\xff", "v"), PIDGUARD_EINVALID_ARGUMENT);
    char *huge = malloc(5000);
    CHECK(huge != NULL);
    memset(huge, 'a', 4999);
    huge[4999] = 0;
    CHECK_STATUS(pidguard_entry_set_field(e, "big", huge), PIDGUARD_EINVALID_ARGUMENT);
    free(huge);
    encoded(e, buf2, sizeof buf2);
    CHECK(strcmp(buf2, want) == 0);
    CHECK_OK(pidguard_entry_set_pid(e, 7));
    CHECK_OK(pidguard_entry_set_start_token(e, "tok"));
    CHECK_OK(pidguard_entry_pid(e, &pid));
    CHECK_OK(pidguard_entry_start_token(e, &s));
    CHECK(pid == 7 && strcmp(s, "tok") == 0);

    pidguard_entry *bad = (pidguard_entry *)0x1;
    CHECK_STATUS(pidguard_entry_new(0, "t", &bad), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_new(5, "", &bad), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(bad == (pidguard_entry *)0x1);

    /* Decoding refusals, each with its own status in the MALFORMED family. */
    struct { const char *text; int status; } cases[] = {
        {"", PIDGUARD_EINVALID_JSON},
        {"\n", PIDGUARD_EINVALID_JSON},
        {"[1]", PIDGUARD_EINVALID_JSON},
        {"{\"pid\":1,\"pid\":2,\"start_token\":\"t\"}", PIDGUARD_EINVALID_JSON},
        {"{\"pid\":1,\"start_token\":\"t\",\"n\":3}", PIDGUARD_EINVALID_JSON},
        {"{\"start_token\":\"t\"}", PIDGUARD_EBAD_PID},
        {"{\"pid\":0,\"start_token\":\"t\"}", PIDGUARD_EBAD_PID},
        {"{\"pid\":\"5\",\"start_token\":\"t\"}", PIDGUARD_EBAD_PID},
        {"{\"pid\":1}", PIDGUARD_EBAD_TOKEN},
        {"{\"pid\":1,\"start_token\":\"\"}", PIDGUARD_EBAD_TOKEN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_STATUS(pidguard_entry_decode((const uint8_t *)cases[i].text, strlen(cases[i].text), &bad), cases[i].status);
        CHECK(pidguard_status_family(cases[i].status) == PIDGUARD_EMALFORMED);
    }
    CHECK(bad == (pidguard_entry *)0x1);

    /* The current process. */
    pidguard_entry *m = me();
    CHECK_OK(pidguard_entry_pid(m, &pid));
    CHECK(pid == getpid());
    char tok[256];
    CHECK_OK(pidguard_start_token(getpid(), tok, sizeof tok, &n));
    CHECK_OK(pidguard_entry_start_token(m, &s));
    CHECK(strcmp(s, tok) == 0);

    pidguard_entry_free(m);
    pidguard_entry_free(c);
    pidguard_entry_free(d);
    pidguard_entry_free(e);
    pidguard_entry_free(NULL);
}

static void sha256(void) {
    char buf[65];
    size_t n = 0;
    CHECK_OK(pidguard_token_sha256((const uint8_t *)"abc", 3, buf, sizeof buf, &n));
    CHECK(n == 64 && strcmp(buf, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    CHECK_OK(pidguard_token_sha256(NULL, 0, buf, sizeof buf, &n));
    CHECK(strcmp(buf, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
    char small[5];
    CHECK_OK(pidguard_token_sha256((const uint8_t *)"abc", 3, small, sizeof small, &n));
    CHECK(n == 64 && strcmp(small, "ba78") == 0);
    CHECK_OK(pidguard_token_sha256((const uint8_t *)"abc", 3, NULL, 0, &n));
    CHECK(n == 64);
    /* Binary secrets: the length counts, not a NUL. */
    CHECK_OK(pidguard_token_sha256((const uint8_t *)"a\0b", 3, buf, sizeof buf, &n));
    CHECK(strcmp(buf, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") != 0);
    CHECK_STATUS(pidguard_token_sha256(NULL, 3, buf, sizeof buf, &n), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_token_sha256((const uint8_t *)"abc", 3, NULL, 8, &n), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_token_sha256((const uint8_t *)"abc", 3, buf, sizeof buf, NULL), PIDGUARD_EINVALID_ARGUMENT);
}

static void create_read_remove_replace(void) {
    char dir[600], path[700], buf[1024], buf2[1024];
    at(dir, sizeof dir, "new-dir");
    snprintf(path, sizeof path, "%s/a.json", dir);
    pidguard_entry *a = me();
    CHECK_OK(pidguard_entry_set_field(a, "session", "A"));
    pidguard_entry *b = me();
    CHECK_OK(pidguard_entry_set_field(b, "session", "B"));
    pidguard_entry *c = me();
    CHECK_OK(pidguard_entry_set_field(c, "session", "C"));

    /* create: parent made 0700, file 0600 whatever the umask; a second create fails. */
    mode_t old_umask = umask(0);
    CHECK_OK(pidguard_guard_create(path, a));
    umask(old_umask);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0700);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
    CHECK_STATUS(pidguard_guard_create(path, b), PIDGUARD_EALREADY_EXISTS);
    CHECK(pidguard_last_error_errno() == EEXIST);
    encoded(a, buf, sizeof buf);
    CHECK(slurp(path, buf2, sizeof buf2) > 0 && strcmp(buf, buf2) == 0);

    /* read gives the record back. */
    pidguard_entry *r = NULL;
    CHECK_OK(pidguard_guard_read(path, &r));
    encoded(r, buf2, sizeof buf2);
    CHECK(strcmp(buf, buf2) == 0);
    pidguard_entry_free(r);

    /* remove only by content. */
    bool removed = true;
    CHECK_OK(pidguard_guard_remove(path, b, &removed));
    CHECK(!removed && access(path, F_OK) == 0);

    /* replace a → b; then removing a finds nothing of its own: false, b's bytes intact. */
    CHECK_OK(pidguard_guard_replace(path, a, b));
    removed = true;
    CHECK_OK(pidguard_guard_remove(path, a, &removed));
    CHECK(!removed);
    encoded(b, buf, sizeof buf);
    CHECK(slurp(path, buf2, sizeof buf2) > 0 && strcmp(buf, buf2) == 0);

    /* replace with a stale old record: SUPERSEDED, nothing written. */
    CHECK_STATUS(pidguard_guard_replace(path, a, c), PIDGUARD_ESUPERSEDED);
    CHECK(slurp(path, buf2, sizeof buf2) > 0 && strcmp(buf, buf2) == 0);

    CHECK_OK(pidguard_guard_remove(path, b, &removed));
    CHECK(removed && access(path, F_OK) != 0);
    removed = true;
    CHECK_OK(pidguard_guard_remove(path, b, &removed));
    CHECK(!removed);
    CHECK_STATUS(pidguard_guard_read(path, &r), PIDGUARD_ENOT_FOUND);
    /* replace of a vanished file creates the new record. */
    CHECK_OK(pidguard_guard_replace(path, a, c));
    encoded(c, buf, sizeof buf);
    CHECK(slurp(path, buf2, sizeof buf2) > 0 && strcmp(buf, buf2) == 0);
    /* A symlink at the name is taken: create never follows it. */
    char link[700], target[700];
    at(target, sizeof target, "precious.txt");
    plant(target, "precious", 8, 0644);
    at(link, sizeof link, "link.json");
    CHECK(symlink(target, link) == 0);
    CHECK_STATUS(pidguard_guard_create(link, a), PIDGUARD_EALREADY_EXISTS);
    CHECK(slurp(target, buf2, sizeof buf2) == 8 && strcmp(buf2, "precious") == 0);

    pidguard_entry_free(a);
    pidguard_entry_free(b);
    pidguard_entry_free(c);
}

static void read_refusals(void) {
    char path[700], target[700], buf[128];
    pidguard_entry *e = me();
    char good[512];
    encoded(e, good, sizeof good);
    pidguard_entry *r = (pidguard_entry *)0x1;
    pidguard_guard_verdict v;
    pidguard_entry *holder = (pidguard_entry *)0x1;

    /* Symlink: not followed, target untouched, refused, and never taken over. */
    at(target, sizeof target, "real.json");
    plant(target, good, strlen(good), 0600);
    at(path, sizeof path, "symlink.json");
    CHECK(symlink(target, path) == 0);
    CHECK_STATUS(pidguard_guard_read(path, &r), PIDGUARD_ESYMLINK);
    CHECK(pidguard_last_error_errno() == ELOOP);
    CHECK_STATUS(pidguard_guard_check(path, &v, &holder), PIDGUARD_ESYMLINK);
    pidguard_guard *g = (pidguard_guard *)0x1;
    CHECK_STATUS(pidguard_guard_acquire(path, e, PIDGUARD_ACQUIRE_TAKEOVER, &g), PIDGUARD_ESYMLINK);
    CHECK(g == (pidguard_guard *)0x1);
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));

    /* Directory. */
    at(path, sizeof path, "dir.json");
    CHECK(mkdir(path, 0700) == 0);
    CHECK_STATUS(pidguard_guard_read(path, &r), PIDGUARD_EIS_DIRECTORY);

    /* FIFO: refused without blocking. */
    at(path, sizeof path, "fifo.json");
    CHECK(mkfifo(path, 0600) == 0);
    CHECK_STATUS(pidguard_guard_read(path, &r), PIDGUARD_ENOT_REGULAR_FILE);

    /* Hard link: another name may be someone else's. */
    at(path, sizeof path, "linked.json");
    CHECK(link(target, path) == 0);
    CHECK_STATUS(pidguard_guard_read(path, &r), PIDGUARD_EHARD_LINKED);
    CHECK_STATUS(pidguard_guard_read(target, &r), PIDGUARD_EHARD_LINKED);
    CHECK(unlink(path) == 0);
    CHECK_OK(pidguard_guard_read(target, &r));
    pidguard_entry_free(r);
    r = (pidguard_entry *)0x1;

    /* Group- or world-accessible. */
    mode_t modes[] = {0640, 0604, 0660, 0666};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        snprintf(buf, sizeof buf, "mode-%o.json", (unsigned)modes[i]);
        at(path, sizeof path, buf);
        plant(path, good, strlen(good), modes[i]);
        CHECK_STATUS(pidguard_guard_read(path, &r), PIDGUARD_EINSECURE_MODE);
        CHECK_STATUS(pidguard_guard_acquire(path, e, PIDGUARD_ACQUIRE_TAKEOVER, &g), PIDGUARD_EINSECURE_MODE);
    }

    /* Too large, even when it is valid JSON with padding. */
    at(path, sizeof path, "large.json");
    char *big = malloc(5000);
    CHECK(big != NULL);
    memset(big, ' ', 5000);
    memcpy(big, good, strlen(good));
    plant(path, big, 5000, 0600);
    free(big);
    CHECK_STATUS(pidguard_guard_read(path, &r), PIDGUARD_ETOO_LARGE);

    /* Content refusals. */
    struct { const char *name, *text; int status; } cases[] = {
        {"empty.json", "", PIDGUARD_EINVALID_JSON},
        {"nl.json", "\n", PIDGUARD_EINVALID_JSON},
        {"pid-only.json", "503\n7\n", PIDGUARD_EINVALID_JSON},
        {"pid0.json", "{\"pid\":0,\"start_token\":\"t\"}\n", PIDGUARD_EBAD_PID},
        {"pidmax.json", "{\"pid\":2147483647,\"start_token\":\"t\"}\n", PIDGUARD_EBAD_PID},
        {"notoken.json", "{\"pid\":5,\"start_token\":\"\"}\n", PIDGUARD_EBAD_TOKEN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        at(path, sizeof path, cases[i].name);
        plant(path, cases[i].text, strlen(cases[i].text), 0600);
        CHECK_STATUS(pidguard_guard_read(path, &r), cases[i].status);
        CHECK_STATUS(pidguard_guard_check(path, &v, NULL), cases[i].status);
    }
    /* A token that read accepts but check cannot judge. */
    at(path, sizeof path, "oddtoken.json");
    const char *odd = "{\"pid\":5,\"start_token\":\"not-a-token\"}\n";
    plant(path, odd, strlen(odd), 0600);
    CHECK_OK(pidguard_guard_read(path, &r));
    pidguard_entry_free(r);
    r = (pidguard_entry *)0x1;
    CHECK_STATUS(pidguard_guard_check(path, &v, &holder), PIDGUARD_EBAD_TOKEN);
    CHECK(holder == (pidguard_entry *)0x1);

    /* Missing: an error for read, "not found" for check. */
    at(path, sizeof path, "missing.json");
    CHECK_STATUS(pidguard_guard_read(path, &r), PIDGUARD_ENOT_FOUND);
    CHECK(r == (pidguard_entry *)0x1);
    CHECK_OK(pidguard_guard_check(path, &v, &holder));
    CHECK(!v.found && holder == NULL && v.verdict == PIDGUARD_VERDICT_NONE && v.pid == 0 && v.owner_uid == -1);

    for (int s = PIDGUARD_ESYMLINK; s >= PIDGUARD_ETOO_LARGE; s--) CHECK(pidguard_status_family(s) == PIDGUARD_EUNTRUSTED);
    pidguard_entry_free(e);
}

static void check_verdicts(void) {
    char path[700], tok[256];
    pidguard_guard_verdict v;
    pidguard_entry *holder = NULL;
    bool removed;

    /* Ourselves: MATCH, with the record back. */
    at(path, sizeof path, "check-me.json");
    pidguard_entry *m = me();
    CHECK_OK(pidguard_entry_set_field(m, "session", "s1"));
    CHECK_OK(pidguard_guard_create(path, m));
    CHECK_OK(pidguard_guard_check(path, &v, &holder));
    CHECK(v.found && v.verdict == PIDGUARD_VERDICT_MATCH && v.reason == PIDGUARD_REASON_TOKEN_EQUAL);
    CHECK(v.pid == getpid() && v.owner_uid == (int64_t)geteuid() && !v.stale);
    const char *session = NULL;
    CHECK_OK(pidguard_entry_field(holder, "session", &session));
    CHECK(session && strcmp(session, "s1") == 0);
    pidguard_entry_free(holder);
    holder = NULL;
    CHECK_OK(pidguard_guard_check(path, &v, NULL)); /* holder not wanted */
    CHECK_OK(pidguard_guard_remove(path, m, &removed));
    CHECK(removed);

    /* A holder that exited: GONE, stale. */
    pid_t dead;
    token_of_dead(&dead, tok, sizeof tok);
    pidguard_entry *d = entry(dead, tok);
    at(path, sizeof path, "check-dead.json");
    CHECK_OK(pidguard_guard_create(path, d));
    CHECK_OK(pidguard_guard_check(path, &v, NULL));
    CHECK(v.found && v.verdict == PIDGUARD_VERDICT_GONE && v.stale && v.pid == dead);

    /* Our pid with other start ticks: proven reuse. From another boot: MISMATCH too. From
     * another machine or PID namespace: UNVERIFIABLE, not stale. */
    struct { int field; const char *value; pidguard_verdict verdict; pidguard_reason reason; bool stale; } cases[] = {
        {3, "1", PIDGUARD_VERDICT_MISMATCH, PIDGUARD_REASON_START_TICKS_DIFFER, true},
        {1, "00000000-0000-0000-0000-000000000000", PIDGUARD_VERDICT_MISMATCH, PIDGUARD_REASON_BOOT_ID_DIFFERS, true},
        {0, "another-machine", PIDGUARD_VERDICT_UNVERIFIABLE, PIDGUARD_REASON_FOREIGN_MACHINE, false},
        {2, "12345", PIDGUARD_VERDICT_UNVERIFIABLE, PIDGUARD_REASON_FOREIGN_PID_NAMESPACE, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        my_token_with(cases[i].field, cases[i].value, tok, sizeof tok);
        pidguard_entry *x = entry(getpid(), tok);
        char name[64];
        snprintf(name, sizeof name, "check-%zu.json", i);
        at(path, sizeof path, name);
        CHECK_OK(pidguard_guard_create(path, x));
        CHECK_OK(pidguard_guard_check(path, &v, NULL));
        CHECK(v.found && v.verdict == cases[i].verdict && v.reason == cases[i].reason && v.stale == cases[i].stale);
        pidguard_entry_free(x);
    }
    pidguard_entry_free(d);
    pidguard_entry_free(m);
}

static void acquire_held_release(void) {
    char path[700], buf[1024], buf2[1024], tok[256];
    at(path, sizeof path, "run/app.json");
    pidguard_entry *mine = me();
    CHECK_OK(pidguard_entry_set_field(mine, "session", "first"));
    pidguard_guard *g = NULL;
    CHECK_OK(pidguard_guard_acquire(path, mine, 0, &g));
    CHECK(g != NULL);
    bool held = false;
    CHECK_OK(pidguard_guard_is_held(g, &held));
    CHECK(held);
    const char *p = NULL;
    CHECK_OK(pidguard_guard_path(g, &p));
    CHECK(strcmp(p, path) == 0);
    const pidguard_entry *ge = NULL;
    CHECK_OK(pidguard_guard_entry(g, &ge));
    encoded(ge, buf, sizeof buf);
    encoded(mine, buf2, sizeof buf2);
    CHECK(strcmp(buf, buf2) == 0);
    pidguard_guard_verdict v;
    pidguard_entry *holder = (pidguard_entry *)0x1;
    CHECK_OK(pidguard_guard_replaced(g, &v, &holder));
    CHECK(!v.found && holder == NULL);

    /* A second instance is turned away and told who holds it. */
    pidguard_entry *other = me();
    CHECK_OK(pidguard_entry_set_field(other, "session", "second"));
    pidguard_guard *g2 = (pidguard_guard *)0x1;
    CHECK_STATUS(pidguard_guard_acquire(path, other, 0, &g2), PIDGUARD_EHELD);
    CHECK(g2 == (pidguard_guard *)0x1);
    CHECK(pidguard_last_error_errno() == EEXIST);
    CHECK_MESSAGE("held by pid");
    CHECK_OK(pidguard_last_held(&v, &holder));
    CHECK(v.found && v.verdict == PIDGUARD_VERDICT_MATCH && v.pid == getpid() && !v.stale);
    CHECK(holder != NULL);
    encoded(holder, buf2, sizeof buf2);
    CHECK(strcmp(buf, buf2) == 0);
    pidguard_entry_free(holder);
    /* Still there after a call that succeeds; gone after one that fails. */
    size_t n;
    CHECK_OK(pidguard_token_sha256(NULL, 0, NULL, 0, &n));
    CHECK_OK(pidguard_last_held(&v, NULL));
    CHECK_STATUS(pidguard_guard_read(NULL, &holder), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_last_held(&v, &holder), PIDGUARD_ENOT_FOUND);
    CHECK_STATUS(pidguard_guard_acquire(path, other, 2, &g2), PIDGUARD_EINVALID_ARGUMENT);

    /* Release removes our record. */
    bool removed = false;
    CHECK_OK(pidguard_guard_release(g, &removed));
    CHECK(removed && access(path, F_OK) != 0);

    /* A stale holder is replaced, and the guard says whom it displaced. */
    pid_t dead;
    token_of_dead(&dead, tok, sizeof tok);
    pidguard_entry *stale = entry(dead, tok);
    CHECK_OK(pidguard_guard_create(path, stale));
    CHECK_OK(pidguard_guard_acquire(path, mine, 0, &g));
    CHECK_OK(pidguard_guard_replaced(g, &v, &holder));
    CHECK(v.found && v.verdict == PIDGUARD_VERDICT_GONE && v.stale && v.pid == dead && holder != NULL);
    pidguard_entry_free(holder);

    /* Someone takes over (explicitly): our release removes nothing, their bytes stay. */
    CHECK_OK(pidguard_guard_acquire(path, other, PIDGUARD_ACQUIRE_TAKEOVER, &g2));
    CHECK_OK(pidguard_guard_replaced(g2, &v, NULL));
    CHECK(v.found && v.verdict == PIDGUARD_VERDICT_MATCH);
    CHECK_OK(pidguard_guard_is_held(g, &held));
    CHECK(!held);
    removed = true;
    CHECK_OK(pidguard_guard_release(g, &removed));
    CHECK(!removed);
    encoded(other, buf, sizeof buf);
    CHECK(slurp(path, buf2, sizeof buf2) > 0 && strcmp(buf, buf2) == 0);

    /* A forked child's copy is not the holder: its free and release remove nothing. */
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        bool r = true;
        int s = pidguard_guard_release(g2, &r);
        _exit(s == 0 && !r && access(path, F_OK) == 0 ? 0 : 9);
    }
    int st;
    CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(slurp(path, buf2, sizeof buf2) > 0 && strcmp(buf, buf2) == 0);

    /* free releases too (for cleanup paths). */
    pidguard_guard_free(g2);
    CHECK(access(path, F_OK) != 0);
    pidguard_guard_free(NULL);

    /* keep leaves the record for someone else to release. */
    CHECK_OK(pidguard_guard_acquire(path, mine, 0, &g));
    CHECK_OK(pidguard_guard_keep(g));
    CHECK(access(path, F_OK) == 0);

    /* An unverifiable holder (another PID namespace) is held, not taken, unless asked. */
    my_token_with(2, "12345", tok, sizeof tok);
    pidguard_entry *foreign = entry(getpid(), tok);
    CHECK_OK(pidguard_guard_replace(path, mine, foreign));
    CHECK_STATUS(pidguard_guard_acquire(path, mine, 0, &g), PIDGUARD_EHELD);
    CHECK_OK(pidguard_last_held(&v, NULL));
    CHECK(v.verdict == PIDGUARD_VERDICT_UNVERIFIABLE && v.reason == PIDGUARD_REASON_FOREIGN_PID_NAMESPACE);
    CHECK_OK(pidguard_guard_acquire(path, mine, PIDGUARD_ACQUIRE_TAKEOVER, &g));
    CHECK_OK(pidguard_guard_release(g, NULL));
    /* Another machine's record is never taken over. */
    my_token_with(0, "another-machine", tok, sizeof tok);
    pidguard_entry *far = entry(getpid(), tok);
    CHECK_OK(pidguard_guard_create(path, far));
    CHECK_STATUS(pidguard_guard_acquire(path, mine, PIDGUARD_ACQUIRE_TAKEOVER, &g), PIDGUARD_EHELD);
    CHECK_OK(pidguard_last_held(&v, NULL));
    CHECK(v.reason == PIDGUARD_REASON_FOREIGN_MACHINE);
    bool removed2;
    CHECK_OK(pidguard_guard_remove(path, far, &removed2));
    CHECK(removed2);

    pidguard_entry_free(far);
    pidguard_entry_free(foreign);
    pidguard_entry_free(stale);
    pidguard_entry_free(other);
    pidguard_entry_free(mine);
}

/* pidguard_pin_pid_file(): a valid record gives a handle (its pidfd to wait on), a stale one the
 * report, retired; pidguard_is_process_alive(). */
static void pin_pid_file_and_is_alive(void) {
    char pid_file[700];
    at(pid_file, sizeof pid_file, "pinned.pid");
    char *const argv[] = {"/bin/sleep", "infinity", NULL};
    double t0 = now_seconds();
    pid_t w = spawn(argv, 1, NULL, NULL);
    CHECK_OK(pidguard_write_pid_file_with_mtime(pid_file, w, t0));
    const char *const expected[] = {"/bin/sleep", "infinity"};
    pidguard_process *p = NULL;
    pidguard_stop_result r;
    memset(&r, 0, sizeof r);
    CHECK_OK(pidguard_pin_pid_file(pid_file, NULL, expected, 2, 5.0, &p, &r));
    CHECK(p != NULL);
    int fd = -1;
    CHECK_OK(pidguard_process_pidfd(p, &fd));
    CHECK(pidfd_available() ? fd > 2 : fd == -1); /* valgrind: no pidfd, unpinned */
    bool alive = false;
    CHECK_OK(pidguard_is_process_alive(w, &alive));
    CHECK(alive);
    bool sent = false;
    CHECK_OK(pidguard_process_signal_group(p, SIGTERM, &sent));
    CHECK(sent);
    if (fd >= 0) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        CHECK(poll(&pfd, 1, 20000) == 1);
    } else {
        bool exited = false;
        CHECK_OK(pidguard_process_wait(p, 20000, &exited));
        CHECK(exited);
    }
    pidguard_process_free(p);
    int st;
    CHECK(waitpid(w, &st, 0) == w && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    CHECK_OK(pidguard_is_process_alive(w, &alive));
    CHECK(!alive);
    /* Gone: stale, retired, no handle. */
    p = (pidguard_process *)&r;
    CHECK_OK(pidguard_pin_pid_file(pid_file, NULL, NULL, 0, 5.0, &p, &r));
    CHECK(p == NULL && r.outcome == PIDGUARD_STOP_STALE && r.reason == PIDGUARD_CHECK_GONE && r.pid_file_removed);
    CHECK(access(pid_file, F_OK) != 0);
    CHECK_STATUS(pidguard_pin_pid_file(pid_file, pid_file, expected, 2, 5.0, &p, &r), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_pin_pid_file(pid_file, NULL, NULL, 0, -1.0, &p, &r), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_OK(pidguard_is_process_alive(0, &alive));
    CHECK(!alive);
    CHECK_OK(pidguard_is_process_alive(-1, &alive));
    CHECK(!alive);
    CHECK_STATUS(pidguard_is_process_alive(1, NULL), PIDGUARD_EINVALID_ARGUMENT);
}

static void stop(void) {
    char pid_file[700], sh[700];
    at(pid_file, sizeof pid_file, "worker.pid");
    at(sh, sizeof sh, "worker.sh");
    pidguard_stop_result r;

    /* A live worker leading its group: stopped, pidfile removed. */
    char *const argv[] = {"/bin/sleep", "infinity", NULL};
    double t0 = now_seconds();
    pid_t w = spawn(argv, 1, NULL, NULL);
    CHECK_OK(pidguard_write_pid_file_with_mtime(pid_file, w, t0));
    const char *const cmd[] = {"/bin/sleep", "infinity"};
    CHECK_OK(pidguard_write_cmd_file(sh, cmd, 2));
    CHECK_OK(pidguard_stop_pid_file(pid_file, sh, PIDGUARD_POLICY_STRICT, "TERM/10/KILL/5", 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_EXITED && r.exit_status == 0 && r.pid == w);
    CHECK(r.exited_after == SIGTERM && r.signals_sent >= 1 && r.group && r.pid_file_removed && !r.warning);
    CHECK(r.reason == PIDGUARD_CHECK_VALID && r.refusal == PIDGUARD_REFUSAL_NONE);
    /* The fields added from core's StopReport, and the nested check and termination reports. */
    CHECK(strcmp(r.pid_file, pid_file) == 0 && r.format == PIDGUARD_FORMAT_ABX_DL && !r.has_stale_reason);
    CHECK(r.signals && r.signals[0] == SIGTERM && r.error == NULL && r.detail == NULL && r.warning_message == NULL);
    CHECK(r.check.valid && r.check.pid == w && r.check.reason == r.reason && r.check.verdict == r.verdict);
    CHECK(r.has_terminate && r.terminate.pid == w && r.terminate.outcome == PIDGUARD_OUTCOME_EXITED);
    CHECK(r.terminate.signals_sent == r.signals_sent && r.terminate.signals[0] == SIGTERM && r.terminate.stopped);
    int st;
    CHECK(waitpid(w, &st, 0) == w && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    CHECK(access(pid_file, F_OK) != 0);

    /* Nothing there now: stale, exit status 1. */
    CHECK_OK(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, NULL, 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_STALE && r.reason == PIDGUARD_CHECK_MISSING && r.exit_status == 1);
    CHECK(r.signals_sent == 0 && !r.pid_file_removed);
    CHECK(r.has_stale_reason && r.stale_reason == PIDGUARD_CHECK_MISSING && r.signals == NULL);
    CHECK(!r.has_terminate && r.terminate.pid == 0 && r.terminate.signals == NULL && r.check.token == NULL);

    /* A dead pid: stale, pidfile removed, nothing sent. */
    pid_t dead = dead_pid();
    CHECK_OK(pidguard_write_pid_file_with_mtime(pid_file, dead, now_seconds()));
    CHECK_OK(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, NULL, 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_STALE && r.reason == PIDGUARD_CHECK_GONE && r.exit_status == 1);
    CHECK(r.pid_file_removed && r.signals_sent == 0 && access(pid_file, F_OK) != 0);

    /* A token-less record whose mtime is far from the process start: nothing is proven, so it is
     * refused as unverifiable under the strict policy (exit status 5, file kept), and stopped
     * with a warning under the lenient one. */
    w = spawn(argv, 1, NULL, NULL);
    CHECK_OK(pidguard_write_pid_file_with_mtime(pid_file, w, now_seconds() - 3600));
    CHECK_OK(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, NULL, 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_REFUSED && r.exit_status == 5 && r.reason == PIDGUARD_CHECK_MTIME_SKEW);
    CHECK(r.refusal == PIDGUARD_REFUSAL_UNVERIFIABLE && r.signals_sent == 0 && !r.pid_file_removed);
    CHECK_MESSAGE("refused to signal");
    CHECK(is_running(w) && access(pid_file, F_OK) == 0);
    CHECK_OK(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_LENIENT, "TERM/10/KILL/5", 5.0, &r));
    CHECK(r.outcome == PIDGUARD_STOP_EXITED && r.exit_status == 0 && r.warning && r.pid_file_removed);
    CHECK(r.warning_message && strstr(r.warning_message, "lenient") != NULL);
    CHECK_MESSAGE("lenient");
    CHECK(waitpid(w, &st, 0) == w);

    /* Bad input is a status (the command's exit 4), and nothing is sent. */
    plant(pid_file, "503\n7\n", 6, 0644);
    CHECK_STATUS(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, NULL, 5.0, &r), PIDGUARD_EMALFORMED);
    CHECK_STATUS(pidguard_stop_pid_file(pid_file, NULL, 9, NULL, 5.0, &r), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, "TERM/x", 5.0, &r), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_stop_pid_file(NULL, NULL, PIDGUARD_POLICY_STRICT, NULL, 5.0, &r), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_stop_pid_file(pid_file, NULL, PIDGUARD_POLICY_STRICT, NULL, 5.0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(unlink(pid_file) == 0);
}

static void null_arguments(void) {
    char path[700];
    at(path, sizeof path, "null.json");
    pidguard_entry *e = me();
    pidguard_entry *out = NULL;
    const pidguard_entry *cout = NULL;
    pidguard_guard *g = NULL;
    pidguard_guard_verdict v;
    const char *s = NULL;
    int32_t pid;
    size_t n;
    bool b;
    char buf[8];
    CHECK_STATUS(pidguard_entry_new(1, NULL, &out), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_new(1, "t", NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_current(NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_clone(NULL, &out), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_clone(e, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_pid(NULL, &pid), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_pid(e, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_start_token(NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_start_token(e, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_pid(NULL, 5), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_start_token(NULL, "t"), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_start_token(e, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_field(NULL, "a", "b"), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_field(e, NULL, "b"), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_set_field(e, "a", NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_MESSAGE("argument `value` is NULL");
    CHECK_STATUS(pidguard_entry_field(NULL, "a", &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_field(e, NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_field(e, "a", NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_fields_len(NULL, &n), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_fields_len(e, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_field_at(NULL, 0, &s, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_field_at(e, 0, NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_field_at(e, 0, &s, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_encode(NULL, buf, sizeof buf, &n), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_encode(e, NULL, 8, &n), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_encode(e, buf, sizeof buf, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_decode(NULL, 3, &out), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_entry_decode((const uint8_t *)"{}", 2, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_create(NULL, e), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_create("", e), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_create(path, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(access(path, F_OK) != 0);
    CHECK_STATUS(pidguard_guard_read(NULL, &out), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_read(path, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_remove(NULL, e, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_remove(path, NULL, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_remove(path, e, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_replace(NULL, e, e), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_replace(path, NULL, e), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_replace(path, e, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_check(NULL, &v, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_check(path, NULL, &out), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_acquire(NULL, e, 0, &g), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_acquire(path, NULL, 0, &g), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_acquire(path, e, 0, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK(access(path, F_OK) != 0);
    CHECK_STATUS(pidguard_last_held(NULL, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_release(NULL, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_keep(NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_entry(NULL, &cout), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_path(NULL, &s), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_is_held(NULL, &b), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_replaced(NULL, &v, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_OK(pidguard_guard_acquire(path, e, 0, &g));
    CHECK_STATUS(pidguard_guard_entry(g, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_path(g, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_is_held(g, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_STATUS(pidguard_guard_replaced(g, NULL, NULL), PIDGUARD_EINVALID_ARGUMENT);
    CHECK_OK(pidguard_guard_release(g, NULL));
    CHECK(access(path, F_OK) != 0);
    pidguard_entry_free(e);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
        return 2;
    }
    snprintf(root, sizeof root, "%s", argv[1]);
    entries();
    sha256();
    create_read_remove_replace();
    read_refusals();
    check_verdicts();
    acquire_held_release();
    stop();
    pin_pid_file_and_is_alive();
    null_arguments();
    printf("guard.c: %d checks passed\n", checks_passed);
    return 0;
}
