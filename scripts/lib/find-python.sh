# shellcheck shell=bash
# find_python MIN_MINOR: set FOUND_PYTHON to the first CPython 3.MIN_MINOR or later among $ABX_PYTHON,
# python3.12, python3.13, python3 and pyenv's 3.12*/3.13* builds. Tells "not installed" from
# "could not run":
#   0  found (its path in $FOUND_PYTHON)
# (variables, not stdout: call it without $(...), so that the reason reaches the caller)
#   1  none installed, or only older ones (the reason in $FIND_PYTHON_WHY): a skip
#   2  one is installed but could not be run (fork failed, no memory, a crash): a failure;
#      $FIND_PYTHON_WHY says which and what it printed
find_python() {
  local min=$1 root c p out rc older=()
  FIND_PYTHON_WHY= FOUND_PYTHON=
  root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-/root/.pyenv}")
  local broken=()
  for c in "${ABX_PYTHON:-}" python3.12 python3.13 python3 "$root"/versions/3.12*/bin/python "$root"/versions/3.13*/bin/python; do
    [ -n "$c" ] || continue
    p=$(command -v "$c" 2>/dev/null) || continue
    rc=0
    out=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>&1) || rc=$?
    if [ $rc != 0 ] || ! [[ $out =~ ^3\.[0-9]+$ ]]; then
      broken+=("$p (exit $rc: $(printf '%s' "$out" | tail -n 1))")
      continue
    fi
    if [ "${out#3.}" -ge "$min" ]; then
      FOUND_PYTHON=$p
      return 0
    fi
    older+=("$p is $out")
  done
  if [ ${#broken[@]} -gt 0 ]; then
    FIND_PYTHON_WHY="installed but could not be run: ${broken[*]}"
    return 2
  fi
  if [ ${#older[@]} -gt 0 ]; then
    FIND_PYTHON_WHY="no Python >= 3.$min installed (${older[*]})"
  else
    FIND_PYTHON_WHY="no Python >= 3.$min installed"
  fi
  return 1
}

# can_unshare ARGS...: whether `unshare ARGS...` works here. 0 yes; 1 not allowed or not
# supported here (a skip: $UNSHARE_WHY says so); 2 it failed for another reason (out of processes
# or memory: a failure, $UNSHARE_WHY has its message).
can_unshare() {
  local out rc=0
  UNSHARE_WHY=
  command -v unshare >/dev/null 2>&1 || { UNSHARE_WHY="unshare(1) is not installed"; return 1; }
  out=$(unshare "$@" 2>&1) || rc=$?
  [ $rc = 0 ] && return 0
  UNSHARE_WHY="unshare $*: $(printf '%s' "$out" | tail -n 1)"
  case $out in
    *"Operation not permitted"* | *"Invalid argument"* | *"Function not implemented"* | *"No space left on device"*) return 1 ;;
  esac
  return 2
}
