#!/usr/bin/env bash
# Node addon tests: build the addon (`cargo build -p pidguard-node`: on its own, so core's `node`
# feature never reaches the C library of a workspace build), copy the addon to node/pidguard.node, then run `node --test` on the test files (files, not a
# folder: newer Node treats arguments as globs). The type definitions napi-derive wrote during the
# build (the addon's, and core's report interfaces from its `node` feature) are handed to the
# tests, which regenerate index.d.ts and index.mjs and diff them.
#
#   bash scripts/test-node.sh                   run the tests
#   bash scripts/test-node.sh --update-types    rewrite node/index.d.ts and node/index.mjs
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-node.sh

# Cargo's JSON messages say where the addon and the type definitions of this build are.
json=$(mktemp)
trap 'rm -f "$json"' EXIT
cargo build -p pidguard-node --message-format=json-render-diagnostics >"$json"
read -r lib typedefs coredefs < <(node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter((l) => l.startsWith("{")).map(JSON.parse);
  const id = (m) => m.package_id && /pidguard-node/.test(m.package_id) || (m.manifest_path || "").endsWith("/node/Cargo.toml");
  const art = lines.find((m) => m.reason === "compiler-artifact" && m.target && m.target.name === "pidguard_node");
  const bs = lines.find((m) => m.reason === "build-script-executed" && id(m));
  const lib = art && art.filenames.find((f) => f.endsWith(".so"));
  const core = lines.filter((m) => m.reason === "build-script-executed" && /pidguard-core/.test(m.package_id || ""))
    .map((m) => require("path").join(m.out_dir, "pidguard-core")).find((f) => require("fs").existsSync(f));
  if (!lib || !bs || !core) { console.error("test-node: the build did not report the addon, its build script or core'"'"'s type definitions"); process.exit(1); }
  console.log(lib, require("path").join(bs.out_dir, "pidguard-node"), core);
' "$json")
cp "$lib" node/pidguard.node
# The tests load this fresh debug build, whatever `npm run build` left beside index.js.
export PIDGUARD_NATIVE_PATH="$PWD/node/pidguard.node"
export PIDGUARD_CORE_TYPEDEFS="$coredefs"

if [ "${1:-}" = --update-types ]; then
  node node/scripts/gen-types.js "$typedefs"
  echo "test-node: wrote node/index.d.ts and node/index.mjs"
  exit 0
fi

files=()
for f in tests/node/*.test.js; do
  [ "$f" = tests/node/vectors.test.js ] || files+=("$f")
done
PIDGUARD_NODE_TYPEDEFS="$typedefs" node --test "${files[@]}"
# The shared conformance vectors, inside a private PID namespace where one can be made (the
# pid-reuse cases need it); prints "vectors (node): N passed, N failed, N skipped".
echo "== node --test tests/node/vectors.test.js (shared conformance vectors) =="
sh tests/vectors/in-pidns.sh node --test tests/node/vectors.test.js
