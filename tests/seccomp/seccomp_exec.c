/* seccomp_exec: run a command under a seccomp filter that answers chosen system calls with an
 * error, as older container runtimes' default profiles did (Docker before 20.10 answered EPERM
 * for clone3; others answered ENOSYS for system calls they did not know).
 *
 *   seccomp_exec ERRNO CALLS -- COMMAND [ARG...]
 *
 * ERRNO: EPERM or ENOSYS. CALLS: a comma-separated list of pidfd_open, pidfd_send_signal,
 * clone3, openat2, pidfd_getfd, close_range, or "all" (every one of them), or "none" (a filter
 * that answers nothing: the control). The filter is installed with PR_SET_NO_NEW_PRIVS and
 * seccomp(SECCOMP_SET_MODE_FILTER) (no privilege needed), is inherited by every child, and a
 * call from another architecture (x32, i386) is killed rather than let through unfiltered.
 * Exit status: 125 on a usage error or when the filter cannot be installed (the reason on
 * stderr), 127 when COMMAND cannot be executed, else COMMAND's. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "seccomp_exec knows the x86_64 system call numbers only"
#endif

static const struct { const char *name; int nr; } CALLS[] = {
    {"pidfd_send_signal", 424}, {"pidfd_open", 434}, {"clone3", 435},
    {"close_range", 436},       {"openat2", 437},    {"pidfd_getfd", 438},
};
#define NCALLS (sizeof CALLS / sizeof CALLS[0])

static int usage(const char *why) {
  fprintf(stderr, "seccomp_exec: %s\nusage: seccomp_exec EPERM|ENOSYS CALL[,CALL...]|all|none -- COMMAND [ARG...]\n", why);
  return 125;
}

int main(int argc, char **argv) {
  if (argc < 5 || strcmp(argv[3], "--") != 0) return usage("wrong arguments");
  int err;
  if (strcmp(argv[1], "EPERM") == 0) err = EPERM;
  else if (strcmp(argv[1], "ENOSYS") == 0) err = ENOSYS;
  else return usage("ERRNO must be EPERM or ENOSYS");

  int chosen[NCALLS], n = 0;
  if (strcmp(argv[2], "all") == 0) {
    for (size_t i = 0; i < NCALLS; i++) chosen[n++] = CALLS[i].nr;
  } else if (strcmp(argv[2], "none") != 0) {
    char *list = strdup(argv[2]), *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      size_t i = 0;
      while (i < NCALLS && strcmp(CALLS[i].name, t) != 0) i++;
      if (i == NCALLS) { fprintf(stderr, "seccomp_exec: unknown system call %s\n", t); return 125; }
      chosen[n++] = CALLS[i].nr;
    }
    free(list);
  }

  /* arch check, load nr, one JEQ per call, allow; then the error answer. */
  struct sock_filter prog[6 + 2 * NCALLS + 1];
  size_t k = 0;
  prog[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  prog[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  prog[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  /* A call of the x32 ABI (bit 30 set) would pass the numbers below: it is killed. */
  prog[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
  prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  for (int i = 0; i < n; i++) {
    prog[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)chosen[i], 0, 1);
    prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA));
  }
  prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog fprog = {.len = (unsigned short)k, .filter = prog};

  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) { perror("seccomp_exec: PR_SET_NO_NEW_PRIVS"); return 125; }
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) { perror("seccomp_exec: seccomp"); return 125; }
  execvp(argv[4], argv + 4);
  fprintf(stderr, "seccomp_exec: cannot execute %s: %s\n", argv[4], strerror(errno));
  return 127;
}
