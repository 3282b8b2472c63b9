#!/usr/bin/env bash
# Run every test: Rust (unit, integration, doc), then each binding's suite that exists.
# test-abx-dl.sh runs abx-dl's own process code with pidguard swapped in when a Python >= 3.12
# exists (it says so and skips otherwise).
# Installs what it needs (scripts/setup.sh). Exit status is non-zero if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== cargo build (workspace) =="
cargo build --workspace --all-targets
echo "== cargo test =="
cargo test --workspace

for lang in c python node cli abx-dl; do
  if [ -f "scripts/test-$lang.sh" ]; then
    echo "== $lang tests =="
    bash "scripts/test-$lang.sh"
  fi
done
echo "== all test suites passed =="
