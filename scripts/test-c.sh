#!/usr/bin/env bash
# The C library as a user gets it: install into a temporary prefix with scripts/install-c.sh,
# compile the README's example with pkg-config (shared and static), run both; then the C test
# programs (tests/c/, natively and under valgrind) and the header checks through cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in cc g++ valgrind pkg-config readelf; do
  command -v "$tool" >/dev/null || { echo "test-c: $tool is missing (bash scripts/install-system-deps.sh installs it)" >&2; exit 1; }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
bash scripts/install-c.sh "$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# The README's first ```c block after "## C".
awk '/^## C$/{c=1} c&&/^```c$/{p=1;next} p&&/^```$/{exit} p' README.md > "$tmp/example.c"
passed=0
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -pedantic "$tmp/example.c" $(pkg-config --cflags --libs pidguard) \
  -Wl,-rpath,"$(pkg-config --variable=libdir pidguard)" -o "$tmp/example"
(cd "$tmp" && ./example) && passed=$((passed + 1))
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -pedantic "$tmp/example.c" $(pkg-config --cflags pidguard) \
  "$tmp/prefix/lib/libpidguard.a" $(pkg-config --libs-only-l --static pidguard | sed 's/-lpidguard//') -o "$tmp/example-static"
(cd "$tmp" && ./example-static) && passed=$((passed + 1))
echo "installed-library examples: $passed of 2 passed"
[ "$passed" = 2 ] || exit 1
# The shared conformance vectors: tests/c/vectors.c, built against the installed library, makes
# each call; the shared fixture (core/examples/vector_fixture.rs) sets every case up with that
# program as the caller, drives it, compares, and prints "vectors (c): N passed, N failed, N
# skipped". Inside a private PID namespace where one can be made (the pid-reuse cases need it).
cargo build -q -p pidguard-core --example vector_fixture
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -pedantic tests/c/vectors.c $(pkg-config --cflags --libs pidguard) -lm \
  -Wl,-rpath,"$(pkg-config --variable=libdir pidguard)" -o "$tmp/vectors"
fixture="${CARGO_TARGET_DIR:-target}/debug/examples/vector_fixture"
sh tests/vectors/in-pidns.sh "$fixture" drive --vectors tests/vectors --lang c -- "$tmp/vectors"
# The option parity table (tests/operations/options.json), which every surface runs.
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -pedantic tests/c/options.c $(pkg-config --cflags --libs pidguard) \
  -Wl,-rpath,"$(pkg-config --variable=libdir pidguard)" -o "$tmp/options"
python3 tests/c/options_parity.py "$tmp/options"
if ! out="$(cargo test -q -p pidguard-ffi-c --test c_programs --test header --test reports 2>&1)"; then
  echo "$out"
  exit 1
fi
echo "$out" | grep -E "^test result"
echo "C tests: all passed"
