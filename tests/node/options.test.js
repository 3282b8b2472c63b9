'use strict';
// The Node column of the option parity table (tests/operations/options.json): the tolerance, the
// recorded command (`cmdFile` or `argv`) and the schedule give the same answer or the same error
// kind here as in Rust, C, Python and the CLI, whose tests run the same table. An option core
// refuses is a RangeError with code PIDGUARD_INVALID_ARGUMENT, as Node's own APIs throw for a
// value they do not accept.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const pidguard = require(path.join(__dirname, '..', '..', 'node'));
const { tempDir } = require('./helpers');

const { cases } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'operations', 'options.json'), 'utf8'));

function kindOf(e) {
  assert.ok(typeof e.kind === 'string', `not a pidguard error: ${e}`);
  if (e.kind === 'invalid-argument') assert.ok(e instanceof RangeError, `${e.code} is not a RangeError`);
  return { error: e.kind };
}

async function startSleeper() {
  const child = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' });
  const deadline = Date.now() + 30000;
  for (;;) {
    let argv = '';
    try { argv = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'latin1'); } catch { /* not yet */ }
    if (argv === 'sleep\0' + '1000\0') return child;
    assert.ok(Date.now() < deadline, 'sleep never finished its exec');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function runCase(c, dir) {
  const opts = {};
  if ('tolerance' in c) opts.tolerance = c.tolerance;
  if (c.op === 'check') {
    const child = await startSleeper();
    try {
      const pf = path.join(dir, 'on_x.pid');
      const ct = pidguard.lookup(child.pid).createTime + c.skew;
      fs.writeFileSync(pf, String(child.pid));
      fs.utimesSync(pf, ct, ct);
      const rec = c.recorded || {};
      if ('sh' in rec) {
        opts.cmdFile = path.join(dir, 'on_x.sh');
        fs.writeFileSync(opts.cmdFile, `#!/bin/bash\n${rec.sh}\n`);
      }
      if ('argv' in rec) opts.argv = rec.argv;
      try {
        const got = { reason: pidguard.checkPidFile(pf, opts).reason };
        assert.equal(pidguard.validatePidFile(pf, opts), got.reason === 'valid');
        return got;
      } catch (e) {
        return kindOf(e);
      }
    } finally {
      process.kill(-child.pid, 'SIGKILL');
      await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', r)));
    }
  }
  if (c.op === 'stop') {
    for (const k of ['schedule', 'policy', 'group']) if (k in c) opts[k] = c[k];
    try {
      await pidguard.stopPidFile(path.join(dir, 'absent.pid'), opts);
      return { ok: true };
    } catch (e) {
      return kindOf(e);
    }
  }
  throw new Error(`unknown op ${c.op}`);
}

for (const c of cases) {
  test(`option case ${c.name}`, async () => {
    const dir = tempDir();
    assert.deepEqual(await runCase(c, dir), c.expect);
  });
}

// The Node column of the table's option names: every option of core's StopOptions and
// CleanupOptions is a property of the matching interface in index.d.ts (generated from the
// #[napi(object)] structs), so an option missing in Node fails here.
const { fields } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'operations', 'options.json'), 'utf8'));
const dts = fs.readFileSync(path.join(__dirname, '..', '..', 'node', 'index.d.ts'), 'utf8');
for (const [op, iface] of [['stop', 'StopOptions'], ['cleanup', 'CleanupOptions']]) {
  test(`every ${op} option of the table is a property of ${iface}`, () => {
    const m = dts.match(new RegExp(`export interface ${iface} \\{([\\s\\S]*?)\\n\\}`));
    assert.ok(m, `no interface ${iface} in index.d.ts`);
    const props = new Set([...m[1].matchAll(/^\s*(\w+)\??:/gm)].map((x) => x[1]));
    const want = Object.values(fields[op]).map((row) => row.node).filter(Boolean);
    assert.ok(want.length > 0);
    assert.deepEqual(want.filter((n) => !props.has(n)), [], `${iface} lacks these options`);
    for (const alias of Object.keys(fields.aliases.node[op] || {})) assert.ok(props.has(alias), `${iface} lacks the alias ${alias}`);
  });
}

test('stopPidFile: policy, and its deprecated alias lenient; both disagreeing is a RangeError', async () => {
  const dir = tempDir();
  const absent = path.join(dir, 'absent.pid');
  for (const o of [{ policy: 'lenient' }, { policy: 'strict' }, { lenient: true }, { policy: 'lenient', lenient: true },
    { policy: 'strict', lenient: false }, { schedule: 'KILL/1', retry: 'KILL/1' }, { group: false }]) {
    assert.equal((await pidguard.stopPidFile(absent, o)).outcome, 'stale', JSON.stringify(o));
  }
  for (const o of [{ policy: 'lenient', lenient: false }, { policy: 'strict', lenient: true }, { policy: 'loose' },
    { schedule: 'KILL/1', retry: 'TERM/1' }, { tolerance: -1 }]) {
    assert.throws(() => pidguard.stopPidFile(absent, o), { name: 'RangeError', code: 'PIDGUARD_INVALID_ARGUMENT' }, JSON.stringify(o));
  }
});
