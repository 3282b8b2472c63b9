#!/usr/bin/env bash
# Run every test: Rust (unit, integration, doc), then each binding's suite that exists, the CLI,
# abx-dl's own process code with pidguard swapped in (test-abx-dl.sh: when a Python >= 3.12
# exists; it says so and skips otherwise), the packages a user installs
# (scripts/test-packages.sh), and finally a check that none of this touched the system Python.
# Every step runs even after another failed (a newcomer sees flaky from broken at once); the run
# ends with one table of all steps, their times and results, and exits non-zero if any failed.
#
# What it needs from the machine is installed by scripts/install-system-deps.sh (apt-get; the one
# step that changes the system). Python tools go into .venv/, Node tools into node/node_modules.
# PIDGUARD_SKIP_PACKAGES=1 skips the release builds of scripts/test-packages.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
t0=$SECONDS
rows=()
failed=0
timed() { # NAME CMD...: run, and remember how long it took and how it ended
  local s=$SECONDS rc=0
  "${@:2}" || rc=$?
  if [ $rc = 0 ]; then
    rows+=("$(printf '%-22s %5d s  passed' "$1" $((SECONDS - s)))")
  else
    failed=$((failed + 1))
    rows+=("$(printf '%-22s %5d s  FAILED (exit %d)' "$1" $((SECONDS - s)) $rc)")
  fi
  return 0
}
skipped() { rows+=("$(printf '%-22s %5s    skipped (%s)' "$1" - "$2")"); }
print_table() {
  echo "== steps =="
  printf '  %s\n' "${rows[@]}"
  printf '  %-22s %5d s\n' total $((SECONDS - t0))
}

# The system interpreter's packages before anything ran (compared at the end).
mkdir -p target
SYS_PY=$(command -v python3 || true)
if [ -n "$SYS_PY" ]; then
  "$SYS_PY" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null | sort > target/system-pip-before.txt || true
fi

timed system-deps bash scripts/install-system-deps.sh
timed python-env bash scripts/setup-python.sh
timed node-env bash scripts/setup-node.sh
# Every script below (and any it starts) finds the project's Python tools first.
export PATH="$ROOT/.venv/bin:$PATH"

# The default members (core, cli, ffi-c): the Python and Node crates turn on core's `python`
# and `node` features, and one cargo invocation that builds them with ffi-c would link pyo3 and
# napi into the C library. Each binding's script builds its own crate.
echo "== cargo build (core, cli, ffi-c) =="
timed cargo-build cargo build --locked --all-targets
echo "== cargo test =="
# Every test binary runs even after one failed: a failure does not hide the others' results.
timed cargo-test cargo test --locked --no-fail-fast

# The suites in their usual order, then any other scripts/test-*.sh (packages and the
# system check last, below).
others=()
for f in scripts/test-*.sh; do
  name=$(basename "$f" .sh); name=${name#test-}
  case "$name" in c | python | node | cli | abx-dl | packages | system-untouched) ;; *) others+=("$name") ;; esac
done
for name in c python node cli abx-dl "${others[@]}"; do
  if [ -f "scripts/test-$name.sh" ]; then
    echo "== $name tests =="
    timed "$name" bash "scripts/test-$name.sh"
  fi
done
if [ "${PIDGUARD_SKIP_PACKAGES:-0}" != 1 ]; then
  echo "== packages (release builds, installed outside the clone) =="
  timed packages bash scripts/test-packages.sh
else
  skipped packages "PIDGUARD_SKIP_PACKAGES=1"
fi
echo "== the scripts left the system Python alone =="
timed system-untouched bash scripts/test-system-untouched.sh target/system-pip-before.txt

print_table
if [ $failed = 0 ]; then
  echo "== all test suites passed =="
else
  echo "== $failed step(s) FAILED (see the table above; each step's output is above it) =="
  exit 1
fi
