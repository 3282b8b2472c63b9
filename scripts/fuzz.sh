#!/usr/bin/env bash
# Build the coverage-guided fuzz targets of fuzz/ (cargo fuzz, libFuzzer) and run each for
# MINUTES minutes (default 10), one after another, then print each target's exec count and
# crashes. Not part of scripts/test.sh.
#
#   scripts/fuzz.sh [MINUTES] [TARGET...]      e.g. scripts/fuzz.sh 1 schedule cmd_line
#
# Only a stable rustc is needed: cargo fuzz needs nightly flags, which RUSTC_BOOTSTRAP=1 allows.
# Installs cargo-fuzz with `cargo install --root target/cargo-tools` (inside the project, not
# ~/.cargo) when missing. Corpora grow in fuzz/corpus/<target>
# (gitignored; seeded from fuzz/seeds/<target>), crashes land in fuzz/artifacts/<target>.
# Exit status: 1 when any target crashed, 0 otherwise.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

minutes="${1:-10}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(pid_content guard_json proc_stat start_token cmd_line schedule)
fi
secs=$(awk -v m="$minutes" 'BEGIN { s = int(m * 60); print (s < 1 ? 1 : s) }')

tools="$(cd .. && pwd)/target/cargo-tools"
export PATH="$tools/bin:$PATH"
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz into target/cargo-tools =="
  cargo install --locked --root "$tools" cargo-fuzz
fi
export RUSTC_BOOTSTRAP=1
# Debug assertions on (overflow checks), no sanitizer: the parsers are safe Rust, so ASan would
# only halve the exec rate.
flags=(-a -s none)

echo "== building ${targets[*]} =="
for t in "${targets[@]}"; do
  cargo fuzz build "${flags[@]}" "$t"
done

mkdir -p logs
summary=()
crashed=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  seeds=()
  [ -d "seeds/$t" ] && seeds=("seeds/$t")
  log="logs/$t.log"
  echo "== $t: ${secs}s (log: fuzz/$log) =="
  set +e
  cargo fuzz run "${flags[@]}" "$t" "corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$secs" -print_final_stats=1 -max_len=4096 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(awk '/stat::number_of_executed_units/ { n = $2 } END { print n + 0 }' "$log")
  rate=$(awk '/stat::average_exec_per_sec/ { n = $2 } END { print n + 0 }' "$log")
  crashes=$(find "artifacts/$t" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' \) | wc -l)
  corpus=$(find "corpus/$t" -type f | wc -l)
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    crashed=1
    grep -m1 -A3 "panicked at" "$log" || tail -5 "$log"
  fi
  line=$(printf '%-12s execs=%-11s exec/s=%-8s corpus=%-6s crashes=%s rc=%s' "$t" "$execs" "$rate" "$corpus" "$crashes" "$rc")
  echo "$line"
  summary+=("$line")
done

echo "== fuzz summary (${minutes} min per target) =="
printf '%s\n' "${summary[@]}"
exit "$crashed"
