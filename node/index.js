'use strict';
// require('pidguard'): the native addon, plus the seed's snake_case names as aliases of the same
// functions (validate_pid_file === validatePidFile), also inside the `guard` namespace
// (guard.token_sha256 === guard.tokenSha256).
//
// The loader follows napi-rs's layout. The addon for this machine is, in this order:
//   1. the file named by PIDGUARD_NATIVE_PATH, when set (scripts/test-node.sh points it at the
//      debug build it just made);
//   2. `pidguard.<platform>.node` beside this file (`npm run build` in a clone puts it here);
//   3. the platform package `pidguard-<platform>` (an optional dependency of the published
//      package; node/npm/<platform>/ in the repository);
//   4. `pidguard.node` beside this file (a plain cargo build copied by hand).
// <platform> is napi-rs's name: linux-x64-gnu, linux-arm64-gnu, linux-x64-musl, linux-arm64-musl.
const fs = require('fs');
const path = require('path');

/** Whether this Node runs on musl libc (Alpine) rather than glibc. */
function isMusl() {
  try {
    const report = process.report && process.report.getReport();
    const header = report && (typeof report === 'string' ? JSON.parse(report) : report).header;
    if (header) return !header.glibcVersionRuntime;
  } catch (_) { /* fall through */ }
  try {
    return fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl');
  } catch (_) {
    return false;
  }
}

/** napi-rs's platform name of this process: `linux-x64-gnu`, … */
function platformName() {
  const abi = process.platform === 'linux' ? (isMusl() ? '-musl' : '-gnu') : '';
  return `${process.platform}-${process.arch}${abi}`;
}

function loadNative() {
  const platform = platformName();
  const candidates = [];
  if (process.env.PIDGUARD_NATIVE_PATH) candidates.push(process.env.PIDGUARD_NATIVE_PATH);
  candidates.push(path.join(__dirname, `pidguard.${platform}.node`), `pidguard-${platform}`,
    path.join(__dirname, 'pidguard.node'));
  const failures = [];
  for (const c of candidates) {
    try {
      return require(c);
    } catch (e) {
      // A file that exists but does not load (wrong ABI, missing symbol) is reported as such.
      if (e && e.code === 'MODULE_NOT_FOUND' && !(path.isAbsolute(c) && fs.existsSync(c))) {
        failures.push(`${c}: not found`);
      } else {
        failures.push(`${c}: ${e && e.message}`);
      }
    }
  }
  const err = new Error(
    `pidguard: no native addon for ${platform}. Tried:\n  ${failures.join('\n  ')}\n` +
    'pidguard is not published on npm yet: build the addon in a clone (`cd node && npm ci && npm run build`), ' +
    'or install the platform package\'s tarball with this one (`npm run package` in node/ packs both into dist/npm/; ' +
    'see docs/node.md, "Packaging").');
  err.code = 'MODULE_NOT_FOUND';
  throw err;
}

// Before any addon is loaded: on a system no addon is built for, a clear refusal that says why
// (code 'unsupported', the error kind's slug), instead of a loader error from a foreign binary.
if (process.platform !== 'linux') {
  const err = new Error(
    `pidguard: unsupported platform '${process.platform}': pidguard is run-tested on Linux only; ` +
    'macOS and FreeBSD are compile-checked only and no addon is built for them. ' +
    "See docs/platforms.md in pidguard's source for what works where.");
  err.code = 'unsupported';
  throw err;
}

const native = loadNative();

/** `writePidFileWithMtime` → `write_pid_file_with_mtime`. */
function snakeCase(name) {
  return name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}

/** The exports of one scope, plus a snake_case alias of every camelCase function. */
function withAliases(scope) {
  const api = {};
  for (const [name, value] of Object.entries(scope)) {
    // A namespace of the addon (`guard`) is a plain object: the same treatment, one level down.
    api[name] = value && typeof value === 'object' ? withAliases(value) : value;
  }
  for (const [name, value] of Object.entries(scope)) {
    const alias = snakeCase(name);
    // Classes (guard.Guard) keep their one name.
    if (typeof value === 'function' && alias !== name && !/^[A-Z]/.test(name)) api[alias] = value;
  }
  return Object.freeze(api);
}

module.exports = withAliases(native);
