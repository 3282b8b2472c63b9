'use strict';
// The same inputs as core/tests/foundation.rs, through Node: the verdicts and reasons must be the
// same as the Rust tests' (until the conformance issue makes one shared set of vectors).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { pidguard, spawnGroup, spawnDetached, killOurs, waitFor, tempDir, alive } = require('./helpers');

test.after(killOurs);

/** The token with its start ticks (field 5) moved by `delta`. */
// Other start ticks stand for another process only in a record without a pidfs inode: with
// inodes on both sides the inode decides alone (and ticks are not read).
function shiftTicks(token, delta) {
  const f = token.split(':');
  f[4] = String(Number(f[4]) + delta);
  f[5] = '-';
  return f.join(':');
}

test('token and lookup of a live process; match, mismatch, unverifiable', async () => {
  const p = spawnGroup('exec sleep infinity');
  assert.ok(await waitFor(() => pidguard.lookup(p.pid).name === 'sleep'), 'bash did not exec sleep');
  const info = pidguard.lookup(p.pid);
  assert.equal(info.pid, p.pid);
  assert.equal(info.pgid, p.pid);
  assert.notEqual(info.state, 'Z');
  assert.equal(info.name, 'sleep');
  assert.deepEqual(info.argv, ['sleep', 'infinity']);
  const tok = pidguard.startToken(p.pid);
  assert.equal(tok, info.token);
  assert.match(tok, /^linux1:[^:]+:[^:]+:\d+:\d+:(\d+|-)$/);
  assert.equal(Number(tok.split(':')[4]), info.startTicks);
  assert.deepEqual(pidguard.judge(p.pid, tok), { verdict: 'match', reason: 'token-equal' });
  assert.deepEqual(pidguard.judge(p.pid, shiftTicks(tok, 1)), { verdict: 'mismatch', reason: 'start-ticks-differ' });
  assert.deepEqual(pidguard.judge(p.pid), { verdict: 'unverifiable', reason: 'no-recorded-token' });
  assert.deepEqual(pidguard.judge(p.pid, null), { verdict: 'unverifiable', reason: 'no-recorded-token' });
});

test('a record from another boot is a mismatch, from another machine unverifiable, a new machine id alone changes nothing', () => {
  const p = spawnGroup('exec sleep infinity');
  const f = pidguard.startToken(p.pid).split(':');
  const otherBoot = [...f];
  otherBoot[2] = '00000000-0000-4000-8000-000000000000';
  assert.deepEqual(pidguard.judge(p.pid, otherBoot.join(':')), { verdict: 'mismatch', reason: 'boot-id-differs' });
  // Another machine: another machine id and another boot (an equal boot id proves the same
  // kernel whatever the machine id: rook/rook#182).
  const otherMachine = [...f];
  otherMachine[1] = '0123456789abcdef0123456789abcdef';
  assert.deepEqual(pidguard.judge(p.pid, otherMachine.join(':')), { verdict: 'match', reason: 'token-equal' });
  otherMachine[2] = '00000000-0000-4000-8000-000000000000';
  assert.deepEqual(pidguard.judge(p.pid, otherMachine.join(':')), { verdict: 'unverifiable', reason: 'foreign-machine' });
  assert.ok(alive(p.pid));
});

test('a zombie is gone; once reaped, no such process', async () => {
  // A short sleep is forked by bash, which then execs a long sleep: the long sleep never reaps
  // it, so it stays a zombie. (`true &` raced: bash could reap it before the exec.)
  const p = spawnGroup('sleep 0.3 & echo $!; exec sleep infinity', { stdio: ['ignore', 'pipe', 'ignore'] });
  const zpid = Number(await new Promise((r) => p.stdout.once('data', (d) => r(String(d).trim()))));
  assert.ok(await waitFor(() => { try { return fs.readFileSync(`/proc/${zpid}/stat`, 'latin1').includes(') Z'); } catch { return false; } }));
  assert.deepEqual(pidguard.judge(zpid), { verdict: 'gone', reason: 'zombie' });
  assert.equal(pidguard.lookup(zpid).state, 'Z');
  assert.throws(() => pidguard.startToken(zpid), (e) => e.code === 'PIDGUARD_NO_SUCH_PROCESS');
  process.kill(p.pid, 'SIGKILL'); // sleep, our child; the zombie is re-parented and reaped
  await waitFor(() => !fs.existsSync(`/proc/${zpid}`));
  assert.deepEqual(pidguard.judge(zpid), { verdict: 'gone', reason: 'no-such-process' });
});

test('pidfile round trip with token (mode 0644, mtime = start time; a token outlives a clock step)', () => {
  const d = tempDir('rt');
  const p = spawnGroup('exec sleep infinity');
  const t = Date.now() / 1000;
  const pf = path.join(d, 'on_x.bg.pid');
  pidguard.writePidFileWithMtime(pf, p.pid, t);
  assert.equal(fs.readFileSync(pf, 'utf8'), String(p.pid));
  const st = fs.statSync(pf, { bigint: true });
  assert.equal(Number(st.mode & 0o777n), 0o644);
  const c = pidguard.checkPidFile(pf);
  assert.equal(c.valid, true, JSON.stringify(c));
  assert.equal(c.reason, 'valid');
  assert.equal(c.verdict, 'match');
  assert.equal(c.token, pidguard.startToken(p.pid), 'token xattr expected on this file system');
  assert.ok(Math.abs(c.mtime - t) < 1e-6, `${c.mtime} vs ${t}`);
  fs.utimesSync(pf, 1_000_000, 1_000_000);
  assert.equal(pidguard.validatePidFile(pf), true);
  assert.equal(pidguard.validate_pid_file(pf, null, 5.0), true);
});

test('pidfile without token uses the mtime rule (tolerance in seconds)', () => {
  const d = tempDir('mt');
  const p = spawnGroup('exec sleep infinity');
  const info = pidguard.lookup(p.pid);
  const pf = path.join(d, 'on_y.bg.pid');
  fs.writeFileSync(pf, String(p.pid));
  fs.utimesSync(pf, info.createTime + 1, info.createTime + 1);
  assert.equal(pidguard.validatePidFile(pf), true);
  assert.equal(pidguard.checkPidFile(pf).verdict, 'unverifiable');
  fs.utimesSync(pf, info.createTime + 6, info.createTime + 6);
  const c = pidguard.checkPidFile(pf);
  assert.equal(c.reason, 'mtime-skew');
  assert.equal(c.valid, false);
  assert.equal(pidguard.validatePidFile(pf), false);
  // The tolerance, as an option or as the seed's third argument.
  assert.equal(pidguard.validatePidFile(pf, { tolerance: 10 }), true);
  assert.equal(pidguard.validate_pid_file(pf, null, 10), true);
});

test('malformed contents are false: two numbers, a sign, huge content', () => {
  const d = tempDir('bad');
  const pf = path.join(d, 'on_z.pid');
  for (const content of ['', '\n', '0', '-1', '+5', '5_0', '5\0', '99999999', 'abc', '503\n7\n']) {
    fs.writeFileSync(pf, content);
    const c = pidguard.checkPidFile(pf);
    assert.equal(c.reason, 'malformed', JSON.stringify(content));
    assert.equal(pidguard.validatePidFile(pf), false);
  }
  fs.writeFileSync(pf, Buffer.alloc(10 << 20, '7'));
  assert.equal(pidguard.checkPidFile(pf).reason, 'malformed');
  assert.equal(pidguard.checkPidFile(path.join(d, 'missing.pid')).reason, 'missing');
});

test('write refuses a symlink; check does not follow it', () => {
  const d = tempDir('sym');
  const victim = path.join(d, 'victim');
  fs.writeFileSync(victim, 'keep');
  const pf = path.join(d, 'on_s.pid');
  fs.symlinkSync(victim, pf);
  assert.throws(() => pidguard.writePidFileWithMtime(pf, process.pid, Date.now() / 1000), (e) => e.code === 'PIDGUARD_UNTRUSTED');
  assert.equal(fs.readFileSync(victim, 'utf8'), 'keep');
  assert.equal(pidguard.checkPidFile(pf).reason, 'not-regular');
});

test('the command file decides for a token-less record: a matching command is valid, another is cmd-mismatch', () => {
  const d = tempDir('cmd');
  const p = spawnDetached('sleep', ['30']);
  const pf = path.join(d, 'on_c.bg.pid');
  const sh = path.join(d, 'on_c.bg.sh');
  pidguard.writeCmdFile(sh, ['sleep', 'infinity']);
  pidguard.writePidFileWithMtime(pf, p.pid, Date.now() / 1000);
  assert.equal(pidguard.validatePidFile(pf, { cmdFile: sh }), true);
  assert.equal(pidguard.validate_pid_file(pf, sh), true); // the seed's positional form
  pidguard.writeCmdFile(sh, ['sleep', '31']);
  // With the start token the token decides (a hook may exec into another program) ...
  assert.equal(pidguard.validatePidFile(pf, { cmdFile: sh }), pidguard.checkPidFile(pf).token != null);
  // ... a record without one (as the Python original writes it) gets the command rules.
  pidguard.writePidFileWithMtime(pf, p.pid, Date.now() / 1000);
  fs.writeFileSync(pf + '.tmp', fs.readFileSync(pf));
  fs.utimesSync(pf + '.tmp', fs.statSync(pf).atime, fs.statSync(pf).mtime);
  fs.renameSync(pf + '.tmp', pf);
  assert.ok(pidguard.checkPidFile(pf).token == null);
  assert.equal(pidguard.validatePidFile(pf, { cmdFile: sh }), false);
  assert.equal(pidguard.checkPidFile(pf, sh).reason, 'cmd-mismatch');
  assert.equal(pidguard.checkPidFile(Buffer.from(pf), { cmdFile: Buffer.from(sh) }).reason, 'cmd-mismatch');
});

test('terminate: a group whose children ignore SIGTERM ends up empty', async () => {
  const { groupMembers } = require('./helpers');
  const p = spawnGroup("trap '' TERM; sleep infinity & sleep infinity & wait");
  assert.ok(await waitFor(() => groupMembers(p.pid).length >= 3));
  const token = pidguard.startToken(p.pid);
  const r = await pidguard.terminate(p.pid, { token, schedule: 'TERM/0.3/KILL/2' });
  assert.equal(r.outcome, 'exited', JSON.stringify(r));
  assert.equal(r.after, 'KILL');
  assert.equal(r.group, true);
  assert.equal(r.pinned, true);
  assert.deepEqual(r.signals, ['TERM', 'CONT', 'KILL']);
  assert.deepEqual(groupMembers(p.pid), []);
});

test('terminate returns as soon as the target exits; a wrong token is refused', async () => {
  const p = spawnGroup('exec sleep infinity');
  const token = pidguard.startToken(p.pid);
  await assert.rejects(pidguard.terminate(p.pid, { token: shiftTicks(token, 7), policy: 'lenient' }),
    (e) => e.code === 'PIDGUARD_REFUSED' && e.refusal === 'mismatch');
  assert.ok(alive(p.pid), 'a mismatched token must not signal');
  const r = await pidguard.terminate(p.pid, { token, schedule: 'TERM/20/KILL/1' });
  assert.equal(r.outcome, 'exited');
  assert.equal(r.after, 'TERM');
  assert.ok(r.elapsed < 10, `took ${r.elapsed}s`);
});
