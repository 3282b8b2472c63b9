'use strict';
// require('pidguard'): the native addon, plus the seed's snake_case names as aliases of the same
// functions (validate_pid_file === validatePidFile), also inside the `guard` namespace
// (guard.token_sha256 === guard.tokenSha256). The addon is `pidguard.node`, copied from
// cargo's build (scripts/test-node.sh does it: target/debug/libpidguard_node.so).
const path = require('path');

let native;
try {
  native = require(path.join(__dirname, 'pidguard.node'));
} catch (e) {
  if (e && e.code === 'MODULE_NOT_FOUND') {
    e.message = `pidguard: ${path.join(__dirname, 'pidguard.node')} is missing. Build it with ` +
      '`cargo build -p pidguard-node` and copy target/debug/libpidguard_node.so there ' +
      '(scripts/test-node.sh does both).\n' + e.message;
  }
  throw e;
}

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
