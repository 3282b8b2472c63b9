#!/usr/bin/env bash
# Type-check pidguard-core, the C library (ffi-c) and the CLI for the systems this machine
# cannot boot: x86_64-apple-darwin, aarch64-apple-darwin and x86_64-unknown-freebsd. These are
# compile checks only (docs/platforms.md): nothing is linked or run for them. Then the same check
# for this Linux host with the same compiler, so a cfg that breaks Linux fails here too.
#
# The compiler is Debian's rustc-web/cargo-web with its std source (rust-web-src), which is
# where `-Zbuild-std` looks for it; rustup's toolchains stay first on PATH and are untouched.
# They are installed with apt-get when missing or older than 1.96 (bookworm-security), as
# scripts/install-system-deps.sh installs the other system tools. When that is impossible
# because this is not root (and there is no sudo) or there is no network, the check is SKIPPED
# and says so loudly (exit 77 with the reason in $PIDGUARD_SKIP_FILE under scripts/test.sh,
# scripts/lib/steps.sh; exit 0 when run by hand); any other failure fails.
#
# std is built once per target (35–68 s each, ~1.1 GB in all) into target/cross (one target
# directory per checkout: two copies of one package in one target dir confuse cargo's
# freshness); later runs re-check pidguard in seconds. A warning in pidguard's own crates fails
# the check too: a cfg that leaves code unused on one system is a bug Linux does not show.
#
#   bash scripts/test-cross.sh              every target
#   bash scripts/test-cross.sh TARGET...    only these (e.g. x86_64-unknown-freebsd)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MIN_MINOR=96 # rustc 1.96: the version verified with this Cargo.lock (shared/TOOLCHAIN.md)
PACKAGES=(rustc-web cargo-web rust-web-src)
STD_SRC=/usr/lib/rustlib/src/rust/library
TARGETS=(x86_64-apple-darwin aarch64-apple-darwin x86_64-unknown-freebsd)
[ $# -gt 0 ] && TARGETS=("$@")

. scripts/lib/skip.sh
say() { echo "test-cross: $*"; }
skip_loudly() {
  echo
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  echo "!! test-cross: SKIPPED — macOS and FreeBSD were NOT type-checked: $*"
  echo "!! Install them by hand: apt-get update && apt-get install -y ${PACKAGES[*]}"
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  echo
  skip_step "cross: $*"
}

# The Debian toolchain is usable when cargo, rustc (>= 1.$MIN_MINOR) and the std source exist.
toolchain_ok() {
  [ -x /usr/bin/cargo ] && [ -x /usr/bin/rustc ] && [ -f "$STD_SRC/Cargo.lock" ] || return 1
  local minor
  minor=$(/usr/bin/rustc --version 2>/dev/null | sed -n 's/^rustc 1\.\([0-9]*\)\..*/\1/p')
  [ -n "$minor" ] && [ "$minor" -ge $MIN_MINOR ]
}

if ! toolchain_ok; then
  have=$(/usr/bin/rustc --version 2>/dev/null || echo none)
  say "Debian's Rust toolchain is missing or older than 1.$MIN_MINOR (have: $have): installing ${PACKAGES[*]}"
  command -v apt-get >/dev/null 2>&1 || { say "no apt-get here: install a rustc >= 1.$MIN_MINOR with its std source at $STD_SRC" >&2; exit 1; }
  if [ "$(id -u)" = 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    skip_loudly "not root and no passwordless sudo, so apt-get cannot install ${PACKAGES[*]}"
  fi
  log=$(mktemp)
  # The index first: without it apt may offer bookworm's 1.85 instead of bookworm-security's 1.96.
  ok=1
  "${sudo[@]}" apt-get update -qq >"$log" 2>&1 || ok=0
  if [ $ok = 1 ]; then
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${PACKAGES[@]}" >>"$log" 2>&1 || ok=0
  fi
  if grep -qiE 'Temporary failure resolving|Could not resolve|Failed to fetch|Network is unreachable|Could not connect|Connection timed out' "$log" && ! toolchain_ok; then
    cat "$log"
    rm -f "$log"
    skip_loudly "no network: apt-get could not reach the Debian mirrors"
  fi
  if [ $ok = 0 ] || ! toolchain_ok; then
    cat "$log" >&2
    rm -f "$log"
    say "FAILED to install a usable toolchain (have now: $(/usr/bin/rustc --version 2>/dev/null || echo none); need 1.$MIN_MINOR or later, from bookworm-security)" >&2
    exit 1
  fi
  rm -f "$log"
  say "installed: $(/usr/bin/rustc --version)"
fi

# Only the Debian compiler, for these commands only.
deb_cargo() {
  env PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 \
    CARGO_TARGET_DIR="$ROOT/target/cross" /usr/bin/cargo "$@"
}
CRATES=(-p pidguard-core -p pidguard-ffi-c -p pidguard-cli)

rows=()
failed=0
check() { # NAME CARGO-ARGS...: one check; its output shown, its warnings in our crates counted
  local name=$1 s=$SECONDS rc=0 out
  shift
  say "== $name: cargo check $* =="
  out=$(deb_cargo check --locked --message-format short "${CRATES[@]}" "$@" 2>&1) || rc=$?
  echo "$out" | grep -vE '^\s+(Compiling|Checking) ' || true
  local warnings
  warnings=$(echo "$out" | grep -cE '^(core|cli|ffi-c)/[^ ]*: warning' || true)
  if [ $rc = 0 ] && [ "$warnings" != 0 ]; then
    rc=1
    say "$name: $warnings warning(s) in pidguard's own crates (see above)"
  fi
  if [ $rc = 0 ]; then
    rows+=("$(printf '%-34s %5d s  passed' "$name" $((SECONDS - s)))")
  else
    failed=$((failed + 1))
    rows+=("$(printf '%-34s %5d s  FAILED' "$name" $((SECONDS - s)))")
  fi
}

say "$(/usr/bin/rustc --version); target dir target/cross"
for t in "${TARGETS[@]}"; do
  check "$t" -Zbuild-std=std,panic_abort --target "$t"
done
# This host, with the same compiler and Debian's prebuilt std (no -Zbuild-std).
host=$(/usr/bin/rustc -vV | sed -n 's/^host: //p')
check "$host (host)" --target "$host"

echo "== test-cross: compile checks (type-check only: nothing was linked or run) =="
printf '  %s\n' "${rows[@]}"
if [ $failed != 0 ]; then
  say "$failed check(s) FAILED"
  exit 1
fi
say "all passed"
