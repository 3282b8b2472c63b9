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
    if ('schedule' in c) opts.schedule = c.schedule;
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
