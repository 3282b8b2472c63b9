#!/usr/bin/env bash
# Run every test: Rust (unit, integration, doc), then each binding's suite, the CLI, abx-dl's and
# abx-plugins' own process code with pidguard swapped in (each skips, with its reason, when no
# Python >= 3.12 is installed or namespaces cannot be made), the packages a user installs
# (scripts/test-packages.sh), and finally a check that none of this touched the system Python.
# Every step runs even after another failed (a newcomer sees flaky from broken at once); the run
# ends with one table of all steps — passed, FAILED (with why: exit status, could not start,
# timed out) or skipped (with the step's own reason) — then the exact command that reruns each
# failed step, and exits non-zero if any failed. The step runner is scripts/lib/steps.sh: a
# heartbeat line every 60 s while a step runs, and a time limit per step (30 min unless the step
# line says otherwise; PIDGUARD_STEP_TIMEOUT=S changes the default).
#
# What it needs from the machine is installed by scripts/install-system-deps.sh (apt-get; the one
# step that changes the system). Python tools go into .venv/, Node tools into node/node_modules.
# PIDGUARD_SKIP_PACKAGES=1 skips the release builds of scripts/test-packages.sh.
#
# To rerun one step, run its command (the table prints it), e.g. `bash scripts/test-cli.sh`.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=scripts/lib/steps.sh
. scripts/lib/steps.sh

# The system interpreter's packages before anything ran (compared at the end).
mkdir -p target
SYS_PY=$(command -v python3 || true)
if [ -n "$SYS_PY" ]; then
  "$SYS_PY" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null | sort > target/system-pip-before.txt || true
fi

step system-deps bash scripts/install-system-deps.sh
step python-env bash scripts/setup-python.sh
step node-env bash scripts/setup-node.sh
# Every script below (and any it starts) finds the project's Python tools first.
export PATH="$ROOT/.venv/bin:$PATH"

# The default members (core, cli, ffi-c): the Python and Node crates turn on core's `python`
# and `node` features, and one cargo invocation that builds them with ffi-c would link pyo3 and
# napi into the C library. Each binding's script builds its own crate.
STEP_TIMEOUT=2400 step cargo-build cargo build --locked --all-targets
# Every test binary runs even after one failed: a failure does not hide the others' results.
STEP_TIMEOUT=2700 step cargo-test cargo test --locked --no-fail-fast

# The suites, one line each, in this order; then any other scripts/test-*.sh not named here (a
# new script is never forgotten), then the packages and the system check last.
step c bash scripts/test-c.sh
step python bash scripts/test-python.sh
step node bash scripts/test-node.sh
step cli bash scripts/test-cli.sh
step abx-dl bash scripts/test-abx-dl.sh
step abx-plugins bash scripts/test-abx-plugins.sh
step integrations bash scripts/test-integrations.sh
step cross bash scripts/test-cross.sh
for f in scripts/test-*.sh; do
  name=$(basename "$f" .sh); name=${name#test-}
  case "$name" in packages | system-untouched) continue ;; esac
  step "$name" bash "$f"
done
if [ "${PIDGUARD_SKIP_PACKAGES:-0}" != 1 ]; then
  STEP_TIMEOUT=2400 step packages bash scripts/test-packages.sh
else
  skipped_step packages "PIDGUARD_SKIP_PACKAGES=1"
fi
step system-untouched bash scripts/test-system-untouched.sh target/system-pip-before.txt

if steps_table; then
  echo "== all test suites passed (skipped steps are listed above with their reasons) =="
else
  exit 1
fi
