#!/usr/bin/env bash
# The scripts must not install anything into the system interpreter: run the demo
# (scripts/demo.sh) and compare the system python3's `pip list` with BEFORE (a `pip list
# --format=freeze | sort` taken before scripts/test.sh started). Also: pidguard is not importable
# from the system interpreter, and .venv/ is ignored by git.
#   bash scripts/test-system-untouched.sh [BEFORE]   (without BEFORE: a snapshot is taken now,
#                                                     and only demo.sh is checked)
set -euo pipefail
cd "$(dirname "$0")/.."
# The system interpreter: python3 from PATH without the project's .venv.
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v "^$PWD/.venv" | paste -sd: -)
export PATH
SYS_PY=$(command -v python3 || true)
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
if [ -z "$SYS_PY" ]; then
  echo "skip - no system python3"
  echo "system-untouched: 0 passed, 0 failed, 1 skipped"
  . scripts/lib/skip.sh
  skip_step "system-untouched: no system python3 to compare"
fi
export LC_ALL=C
freeze() { "$SYS_PY" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null | sort; }
before=$(mktemp)
trap 'rm -f "$before"' EXIT
if [ -n "${1:-}" ] && [ -s "$1" ]; then sort "$1" > "$before"; else freeze > "$before"; fi

bash scripts/demo.sh > /tmp/pidguard-demo-$$.txt 2>&1 && ok "scripts/demo.sh passes" || { bad "scripts/demo.sh failed"; tail -20 /tmp/pidguard-demo-$$.txt; }
grep -q "demo passed" /tmp/pidguard-demo-$$.txt && ok "the demo says it passed" || bad "the demo did not say it passed"
rm -f /tmp/pidguard-demo-$$.txt

if diff -u "$before" <(freeze) > /tmp/pidguard-pipdiff-$$.txt; then
  ok "the system interpreter's pip list is unchanged ($(wc -l < "$before") packages, $SYS_PY)"
else
  bad "the system interpreter's pip list changed:"; cat /tmp/pidguard-pipdiff-$$.txt
fi
rm -f /tmp/pidguard-pipdiff-$$.txt
if grep -qi '^pidguard==' "$before"; then
  # Installed before these scripts ran (by hand, or by an older checkout's scripts): not theirs to judge.
  echo "skip - pidguard was already in the system interpreter before the scripts ran"
else
  (cd / && "$SYS_PY" -c 'import pidguard' 2>/dev/null) && bad "pidguard is importable from the system interpreter" || ok "pidguard is not installed in the system interpreter"
fi
grep -qE 'maturin|pytest|mypy|psutil' <(freeze | grep -vFf "$before" || true) && bad "tools leaked into the system interpreter" || ok "no tool of the scripts in the system interpreter"
if [ -d .git ] || git rev-parse --git-dir >/dev/null 2>&1; then
  git check-ignore -q .venv && ok ".venv/ is ignored by git" || bad ".venv/ is not git-ignored"
  [ -z "$(git status --porcelain --ignored=no -- node/node_modules .venv 2>/dev/null)" ] && ok "no installed tool shows up in git status" || bad "git status shows installed files"
fi
grep -q 'apt-get\|pip install\|npm install' scripts/demo.sh && bad "scripts/demo.sh installs something" || ok "scripts/demo.sh installs nothing (it needs only cargo)"
echo "system-untouched: $pass passed, $fail failed"
[ "$fail" = 0 ]
