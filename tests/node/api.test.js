'use strict';
// The shape of require('pidguard'): names and aliases, the ESM entry, generated types, the
// error-kind parity with core, argument checks before any system call, and error objects.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ROOT, pidguard, tempDir, spawnGroup, killOurs, alive, waitFor } = require('./helpers');
const gen = require(path.join(ROOT, 'node', 'scripts', 'gen-types.js'));

test.after(killOurs);

const CAMEL = ['writePidFileWithMtime', 'validatePidFile', 'checkPidFile', 'writeCmdFile', 'cleanupBackgroundHooks',
  'cleanupBackgroundHooksSync', 'lookup', 'startToken', 'judge', 'terminate', 'errorKinds', 'stopPidFile'];
const SEED = ['write_pid_file_with_mtime', 'validate_pid_file', 'cleanup_background_hooks', 'write_cmd_file',
  'stop_pid_file'];
const GUARD = ['create', 'read', 'remove', 'replace', 'check', 'encode', 'decode', 'tokenSha256', 'acquire'];

test('camelCase functions and the seed\'s snake_case names are the same functions', () => {
  for (const name of CAMEL) assert.equal(typeof pidguard[name], 'function', name);
  for (const name of SEED) assert.equal(typeof pidguard[name], 'function', name);
  assert.equal(pidguard.validate_pid_file, pidguard.validatePidFile);
  assert.equal(pidguard.write_pid_file_with_mtime, pidguard.writePidFileWithMtime);
  assert.equal(pidguard.cleanup_background_hooks, pidguard.cleanupBackgroundHooks);
  assert.equal(pidguard.write_cmd_file, pidguard.writeCmdFile);
  assert.equal(pidguard.check_pid_file, pidguard.checkPidFile);
  assert.equal(pidguard.start_token, pidguard.startToken);
  assert.equal(pidguard.stop_pid_file, pidguard.stopPidFile);
  assert.ok(Object.isFrozen(pidguard));
  for (const name of GUARD) assert.equal(typeof pidguard.guard[name], 'function', `guard.${name}`);
  assert.equal(pidguard.guard.token_sha256, pidguard.guard.tokenSha256);
  assert.equal(typeof pidguard.guard.Guard, 'function');
  assert.equal(typeof pidguard.ProcessRef, 'function');
  assert.equal(typeof pidguard.ProcessRef.open, 'function');
  assert.equal(pidguard.process_ref, undefined, 'classes keep their one name');
  assert.ok(Object.isFrozen(pidguard.guard));
});

test('VERSION matches package.json and the crate', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'node', 'package.json'), 'utf8'));
  const cargo = fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8');
  const crateVersion = /\[workspace\.package\][^[]*?\nversion = "([^"]+)"/.exec(cargo)[1];
  assert.equal(pidguard.VERSION, crateVersion);
  assert.equal(pkg.version, crateVersion);
});

test('the ESM entry exports the same functions as require()', async () => {
  const esm = await import(path.join(ROOT, 'node', 'index.mjs'));
  const names = Object.keys(esm).filter((n) => n !== 'default').sort();
  assert.deepEqual(names, Object.keys(pidguard).sort());
  for (const n of names) assert.equal(esm[n], pidguard[n], n);
  assert.equal(esm.default, pidguard);
});

test('index.d.ts and index.mjs are what the generator makes from the current code', () => {
  const src = process.env.PIDGUARD_NODE_TYPEDEFS || gen.findTypeDefs(ROOT);
  assert.ok(src && fs.existsSync(src), 'no napi type definitions found: run scripts/test-node.sh (it builds them)');
  const { dts, mjs } = gen.generate(gen.readTypeDefs(src));
  const fix = 'stale generated file: run `bash scripts/test-node.sh --update-types` and commit the result';
  assert.equal(fs.readFileSync(path.join(ROOT, 'node', 'index.d.ts'), 'utf8'), dts, `index.d.ts: ${fix}`);
  assert.equal(fs.readFileSync(path.join(ROOT, 'node', 'index.mjs'), 'utf8'), mjs, `index.mjs: ${fix}`);
  // Every runtime export is declared, and nothing else.
  const declared = new Set();
  for (const m of dts.matchAll(/^export declare (?:function|const|class) (\w+)/gm)) declared.add(m[1]);
  for (const m of dts.matchAll(/^ {2}(\w+) as (\w+),$/gm)) declared.add(m[2]);
  for (const m of dts.matchAll(/^export declare namespace (\w+) \{$/gm)) declared.add(m[1]);
  assert.deepEqual([...declared].sort(), Object.keys(pidguard).sort());
  // The same one level down: every member of a namespace object (guard) is declared in its
  // namespace, and nothing else.
  for (const m of dts.matchAll(/^export declare namespace (\w+) \{\n([\s\S]*?)^\}$/gm)) {
    const inner = new Set();
    for (const x of m[2].matchAll(/^ {2}export (?:function|const|class) (\w+)/gm)) inner.add(x[1]);
    assert.equal(typeof pidguard[m[1]], 'object', m[1]);
    assert.ok(Object.isFrozen(pidguard[m[1]]), `${m[1]} is frozen`);
    assert.deepEqual([...inner].sort(), Object.keys(pidguard[m[1]]).sort(), `namespace ${m[1]}`);
  }
});

test('error kinds: one list, derived from core/src/error.rs (parity)', () => {
  const text = fs.readFileSync(path.join(ROOT, 'core', 'src', 'error.rs'), 'utf8');
  const table = [...text.matchAll(/^\s*([A-Z]\w*) = (\d+), "([a-z-]+)", (None|Some\(libc::(E[A-Z0-9]+)\));/gm)];
  assert.ok(table.length >= 14, 'could not read the error_kinds! table');
  const expected = table.map((m) => ({
    code: 'PIDGUARD_' + m[3].toUpperCase().replace(/-/g, '_'),
    slug: m[3],
    number: Number(m[2]),
    errno: m[5] ? os.constants.errno[m[5]] : undefined,
  }));
  const got = pidguard.errorKinds().map((k) => ({ code: k.code, slug: k.slug, number: k.number, errno: k.errno }));
  assert.deepEqual(got, expected);
  assert.ok(got.some((k) => k.code === 'PIDGUARD_NO_SUCH_PROCESS' && k.errno === os.constants.errno.ESRCH));
});

// Each pid-taking function, called with `pid` as its pid argument.
const PID_CALLS = {
  lookup: (pid) => pidguard.lookup(pid),
  startToken: (pid) => pidguard.startToken(pid),
  judge: (pid) => pidguard.judge(pid),
  terminate: (pid) => pidguard.terminate(pid, { policy: 'lenient', schedule: 'KILL/1' }),
  writePidFileWithMtime: (pid, file) => pidguard.writePidFileWithMtime(file, pid, Date.now() / 1000),
};

test('a pid that is not a number is a TypeError, thrown before anything runs', () => {
  const dir = tempDir('args');
  let coerced = false;
  const sneaky = { valueOf() { coerced = true; return process.pid; }, toString() { coerced = true; return '1'; } };
  const show = (v) => (v !== null && typeof v === 'object' ? 'an object' : String(v));
  for (const [name, call] of Object.entries(PID_CALLS)) {
    for (const bad of ['123; rm -rf /', '123', String(process.pid), '', null, undefined, true, 10n, sneaky, [5], Symbol('x')]) {
      const file = path.join(dir, `${name}.pid`);
      assert.throws(() => call(bad, file), (e) => {
        assert.ok(e instanceof TypeError, `${name}(${show(bad)}): ${e}`);
        assert.equal(e.code, 'ERR_INVALID_ARG_TYPE');
        return true;
      });
      assert.ok(!fs.existsSync(file), `${name} wrote a file for pid ${show(bad)}`);
    }
  }
  assert.equal(coerced, false, 'an argument was coerced');
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('a pid that is a float, NaN, infinite or does not fit a pid_t is a RangeError, thrown before anything runs', () => {
  const dir = tempDir('range');
  for (const [name, call] of Object.entries(PID_CALLS)) {
    for (const bad of [3.5, process.pid + 0.5, NaN, Infinity, -Infinity, 2 ** 31, 2 ** 32 + 1, 2 ** 53, -(2 ** 31) - 1]) {
      assert.throws(() => call(bad, path.join(dir, 'x.pid')), (e) => {
        assert.ok(e instanceof RangeError, `${name}(${bad}): ${e}`);
        assert.equal(e.code, 'ERR_OUT_OF_RANGE');
        return true;
      });
    }
  }
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('a pid <= 0 or above pid_max is core\'s to judge, as in every language: refused or an invalid argument', async () => {
  const dir = tempDir('range-core');
  for (const bad of [0, -0, -1, -process.pid, 2 ** 31 - 1]) {
    await assert.rejects(pidguard.terminate(bad, { policy: 'lenient', schedule: 'KILL/1' }),
      (e) => e.code === 'PIDGUARD_REFUSED' && ['non-positive-pid', 'above-pid-max'].includes(e.refusal));
    for (const name of ['lookup', 'startToken', 'judge', 'writePidFileWithMtime']) {
      assert.throws(() => PID_CALLS[name](bad, path.join(dir, 'x.pid')), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT', `${name}(${bad})`);
    }
  }
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('argument errors of Promise functions are thrown synchronously, not as rejections', () => {
  assert.throws(() => pidguard.terminate('1'), TypeError);
  assert.throws(() => pidguard.terminate(1, { policy: 'yolo' }), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_VALUE');
  assert.throws(() => pidguard.terminate(1, { schedule: 'TERM/x' }), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT');
  assert.throws(() => pidguard.terminate(1, { token: 'not-a-token' }), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT');
  assert.throws(() => pidguard.cleanupBackgroundHooks(os.tmpdir(), { schedule: 'forever/TERM' }),
    (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT');
});

test('errors: code PIDGUARD_<KIND>, errno where there is one, the path in the message', () => {
  const dir = tempDir('err');
  const victim = path.join(dir, 'victim');
  fs.writeFileSync(victim, 'keep');
  const link = path.join(dir, 'on_s.pid');
  fs.symlinkSync(victim, link);
  assert.throws(() => pidguard.writePidFileWithMtime(link, process.pid, Date.now() / 1000), (e) => {
    assert.ok(e instanceof Error);
    assert.equal(e.code, 'PIDGUARD_UNTRUSTED');
    assert.equal(e.kind, 'untrusted');
    assert.ok(e.message.includes(link), e.message);
    assert.equal(e.path, link);
    return true;
  });
  assert.equal(fs.readFileSync(victim, 'utf8'), 'keep');

  const missing = path.join(dir, 'no', 'such', 'dir', 'x.pid');
  assert.throws(() => pidguard.writePidFileWithMtime(missing, process.pid, Date.now() / 1000), (e) => {
    assert.equal(e.code, 'PIDGUARD_NOT_FOUND');
    assert.equal(e.errno, os.constants.errno.ENOENT);
    assert.ok(e.message.includes(missing), e.message);
    return true;
  });

  for (const t of [NaN, Infinity]) {
    assert.throws(() => pidguard.writePidFileWithMtime(path.join(dir, 't.pid'), 5, t),
      (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT' && e.errno === os.constants.errno.EINVAL);
  }
  assert.ok(!fs.existsSync(path.join(dir, 't.pid')));

  // Above the kernel's hard limit (PID_MAX_LIMIT, 4194304): core's range check, as in the Rust
  // test `lookup_refuses_bad_pids`. kernel.pid_max bounds nothing: a free pid above it is gone.
  assert.throws(() => pidguard.lookup(4194305), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT');
  const pidMax = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
  if (pidMax < 4194304) {
    assert.throws(() => pidguard.lookup(pidMax + 1), (e) => e.code === 'PIDGUARD_NO_SUCH_PROCESS');
  }
  // As abx-dl's write_cmd_file: an empty argv gives the shebang line alone, a line break is quoted.
  pidguard.writeCmdFile(path.join(dir, 'x.sh'), []);
  assert.equal(fs.readFileSync(path.join(dir, 'x.sh'), 'utf8'), '#!/bin/bash\n\n');
  pidguard.writeCmdFile(path.join(dir, 'x.sh'), ['echo', 'a\nb']);
  assert.equal(fs.readFileSync(path.join(dir, 'x.sh'), 'utf8'), "#!/bin/bash\necho 'a\nb'\n");
  assert.throws(() => pidguard.writeCmdFile(path.join(dir, 'x.sh'), ['a\0b']), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT');
  // Buffers are paths too.
  pidguard.writeCmdFile(Buffer.from(path.join(dir, 'b.sh')), ['sleep', '1']);
  assert.equal(fs.readFileSync(path.join(dir, 'b.sh'), 'utf8'), '#!/bin/bash\nsleep 1\n');
});

test('a gone process: PIDGUARD_NO_SUCH_PROCESS with errno ESRCH', async () => {
  const child = spawnGroup('exit 0');
  const pid = child.pid;
  await new Promise((r) => child.on('exit', r));
  await waitFor(() => !fs.existsSync(`/proc/${pid}`));
  for (const call of [() => pidguard.lookup(pid), () => pidguard.startToken(pid)]) {
    assert.throws(call, (e) => e.code === 'PIDGUARD_NO_SUCH_PROCESS' && e.errno === os.constants.errno.ESRCH && e.pid === pid);
  }
  await assert.rejects(pidguard.terminate(pid, { policy: 'lenient' }), (e) => {
    assert.ok(e instanceof Error);
    assert.equal(e.code, 'PIDGUARD_NO_SUCH_PROCESS');
    return true;
  });
});

test('terminate refuses protected targets with PIDGUARD_REFUSED and .refusal', async () => {
  const cases = [[1, 'init'], [process.pid, 'own-pid']];
  for (const [pid, refusal] of cases) {
    await assert.rejects(pidguard.terminate(pid, { policy: 'lenient' }), (e) => {
      assert.equal(e.code, 'PIDGUARD_REFUSED');
      assert.equal(e.refusal, refusal);
      assert.equal(e.pid, pid);
      return true;
    });
  }
  // Strict policy (the default) without a token: identity unproven, nothing is sent.
  const p = spawnGroup('exec sleep infinity');
  await assert.rejects(pidguard.terminate(p.pid), (e) => e.code === 'PIDGUARD_REFUSED' && e.refusal === 'unverifiable');
  assert.ok(alive(p.pid));
});
