#!/usr/bin/env node
'use strict';
// `npm run build`: the addon and the scope supervisor program for this machine (or --target), laid
// out as napi-rs lays them out — without @napi-rs/cli, whose dependencies want a newer Node than
// the package supports (docs/node.md, "Packaging"). It does what `napi build --platform --release
// --strip` did here:
//
//   1. cargo build --release -p pidguard-node [--target TRIPLE]  (the release profile strips)
//   2. copy target/[TRIPLE/]release/libpidguard_node.so to node/pidguard.<platform>.node
//   3. build pidguard-scope (core/src/bin/pidguard-scope.rs needs only std: one rustc call) and put
//      it beside that file as node/pidguard-scope, mode 0755 (the addon execs the program found
//      beside itself)
//   4. with --pack DIR: copy both into npm/<platform>/ and `npm pack` it and the main package (with
//      napi-rs's optionalDependencies, packMain) into DIR: the two tarballs docs/node.md installs,
//      made as scripts/release.sh makes them
//
// Usage: node scripts/build.js [--debug] [--target TRIPLE] [--pack DIR]
// Environment: CARGO (default cargo), RUSTC (default rustc), CARGO_TARGET_DIR; for a target whose
// std rustc cannot find (scripts/release.sh's -Zbuild-std builds), PIDGUARD_SCOPE_PROGRAM names
// a pidguard-scope built for that target, and PIDGUARD_ADDON a built addon, used instead.
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const NODE_DIR = path.join(__dirname, '..');
const ROOT = path.join(NODE_DIR, '..');

/** napi-rs's platform name of a Rust target triple (the four the package is built for). */
const PLATFORMS = {
  'x86_64-unknown-linux-gnu': 'linux-x64-gnu',
  'aarch64-unknown-linux-gnu': 'linux-arm64-gnu',
  'x86_64-unknown-linux-musl': 'linux-x64-musl',
  'aarch64-unknown-linux-musl': 'linux-arm64-musl',
};

function hostTriple(rustc) {
  const v = execFileSync(rustc, ['-vV'], { encoding: 'utf8' });
  return /^host: (.*)$/m.exec(v)[1];
}

function run(cmd, args, opts = {}) {
  console.error(`build: ${cmd} ${args.join(' ')}`);
  execFileSync(cmd, args, { stdio: 'inherit', ...opts });
}

/** Copy `from` to `to` through a temporary file and rename (a running copy is never rewritten). */
function install(from, to, mode) {
  const tmp = `${to}.tmp-${process.pid}`;
  fs.copyFileSync(from, tmp);
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, to);
}

function main(argv) {
  let debug = false;
  let target = null;
  let packDir = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--debug') debug = true;
    else if (argv[i] === '--target') target = argv[++i];
    else if (argv[i] === '--pack') packDir = path.resolve(argv[++i]);
    else throw new Error(`build: unknown argument ${argv[i]} (usage: scripts/build.js [--debug] [--target TRIPLE] [--pack DIR])`);
  }
  const cargo = process.env.CARGO || 'cargo';
  const rustc = process.env.RUSTC || 'rustc';
  const triple = target || hostTriple(rustc);
  const platform = PLATFORMS[triple];
  if (!platform) throw new Error(`build: no napi-rs platform for ${triple} (known: ${Object.keys(PLATFORMS).join(', ')})`);
  const targetDir = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target');
  const profile = debug ? 'debug' : 'release';

  // 1, 2: the addon.
  const addon = path.join(NODE_DIR, `pidguard.${platform}.node`);
  if (process.env.PIDGUARD_ADDON) {
    install(process.env.PIDGUARD_ADDON, addon, 0o644);
  } else {
    const args = ['build', '--locked', '-p', 'pidguard-node'];
    if (!debug) args.push('--release');
    if (target) args.push('--target', target);
    run(cargo, args, { cwd: ROOT });
    const lib = path.join(targetDir, ...(target ? [target] : []), profile, 'libpidguard_node.so');
    install(lib, addon, 0o644);
  }
  // 3: the supervisor program, beside the addon.
  const scope = path.join(NODE_DIR, 'pidguard-scope');
  if (process.env.PIDGUARD_SCOPE_PROGRAM) {
    install(process.env.PIDGUARD_SCOPE_PROGRAM, scope, 0o755);
  } else {
    const out = path.join(targetDir, 'node-scope', triple);
    fs.mkdirSync(out, { recursive: true });
    run(rustc, ['--edition', '2021', '--crate-type', 'bin', '--crate-name', 'pidguard_scope',
      '-C', 'opt-level=s', '-C', 'panic=abort', '-C', 'strip=symbols', '-C', 'debuginfo=0',
      '--target', triple, '-o', path.join(out, 'pidguard-scope'),
      path.join(ROOT, 'core', 'src', 'bin', 'pidguard-scope.rs')]);
    install(path.join(out, 'pidguard-scope'), scope, 0o755);
  }
  console.error(`build: ${path.relative(ROOT, addon)} and ${path.relative(ROOT, scope)} (${triple})`);

  // 4: the two tarballs.
  if (packDir) {
    const pkg = path.join(NODE_DIR, 'npm', platform);
    install(addon, path.join(pkg, `pidguard.${platform}.node`), 0o644);
    install(scope, path.join(pkg, 'pidguard-scope'), 0o755);
    fs.mkdirSync(packDir, { recursive: true });
    run('npm', ['pack', '--silent', '--pack-destination', packDir], { cwd: pkg, stdio: ['ignore', 'ignore', 'inherit'] });
    packMain(path.join(targetDir, 'npm-stage'), packDir);
  }
}

/**
 * Pack the main package as napi-rs's `pre-publish` lays it out: package.json gains
 * `optionalDependencies` on every platform package of `napi.targets`, at the same version (npm
 * then installs only the one whose os/cpu/libc match). Packed from a staged copy of the package's
 * `files`: the package.json in the repository stays without them, so `npm ci` in node/ never asks
 * the registry for the platform packages.
 */
function packMain(stageRoot, packDir) {
  const manifest = JSON.parse(fs.readFileSync(path.join(NODE_DIR, 'package.json'), 'utf8'));
  const stage = path.join(stageRoot, 'main');
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(stage, { recursive: true });
  for (const f of manifest.files) {
    fs.cpSync(path.join(NODE_DIR, f), path.join(stage, f), { recursive: true });
  }
  manifest.optionalDependencies = {};
  for (const t of manifest.napi.targets) {
    if (!PLATFORMS[t]) throw new Error(`build: napi.targets names ${t}, which has no platform name here`);
    manifest.optionalDependencies[`pidguard-${PLATFORMS[t]}`] = manifest.version;
  }
  delete manifest.devDependencies;
  delete manifest.scripts;
  fs.writeFileSync(path.join(stage, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  run('npm', ['pack', '--silent', '--pack-destination', packDir], { cwd: stage, stdio: ['ignore', 'ignore', 'inherit'] });
}

try {
  main(process.argv.slice(2));
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
