'use strict';
// ProcessRef: core's pinned process handle as a JavaScript class, on real processes. Every
// process started here is its own group leader (setsid) and is stopped through pidguard or, at
// the end, by killOurs() — never by name.
const test = require('node:test');
const assert = require('node:assert/strict');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { ROOT, pidguard, spawnGroup, killOurs, alive, groupMembers, waitFor, tempDir, runReadmeExample } = require('./helpers');

const { ProcessRef } = pidguard;

test.after(killOurs);

/** A group leader (bash) with one member (sleep), once both are up. */
async function groupWithMember() {
  const leader = spawnGroup('sleep infinity & wait');
  assert.ok(await waitFor(() => groupMembers(leader.pid).length === 2), 'the group did not form');
  const member = groupMembers(leader.pid).find((p) => p !== leader.pid);
  return { leader, member };
}

/** Whether the running kernel is at least `major.minor`. */
function kernelAtLeast(major, minor) {
  const [a, b] = os.release().split('.').map((x) => parseInt(x, 10));
  return a > major || (a === major && b >= minor);
}

/** Resolves when Node has reaped `child` (its 'exit' event). */
function reaped(child) {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', r));
}

test('open pins a live process: pid, pinned, fd, token; no constructor', () => {
  const child = spawnGroup('exec sleep infinity');
  const token = pidguard.startToken(child.pid);
  const h = ProcessRef.open(child.pid, token);
  assert.equal(h.pid, child.pid);
  assert.equal(h.token, token);
  assert.equal(h.pinned, true);
  assert.equal(typeof h.fd, 'number');
  assert.ok(h.fd > 2);
  assert.equal(h.hasExited(), false);
  assert.throws(() => new ProcessRef(), /constructor/);
  h.close();
  assert.equal(h.fd, null);
});

test('wait() resolves after a signal, off the event loop (a timer sends the signal)', async () => {
  const child = spawnGroup('exec sleep infinity');
  const h = ProcessRef.open(child.pid, pidguard.startToken(child.pid));
  assert.equal(await h.wait(0.05), false, 'still running');
  const waiting = h.wait(60);
  // The signal is sent by a timer: the wait can only resolve `true` if the event loop keeps
  // running meanwhile (a wait blocking it would time out and resolve `false`).
  setTimeout(() => assert.equal(h.signal('TERM'), true), 20);
  assert.equal(await waiting, true);
  assert.equal(h.hasExited(), true);
  await reaped(child);
  assert.equal(child.signalCode, 'SIGTERM');
  assert.equal(h.signal('KILL'), false, 'exited and reaped: nothing is sent');
  assert.equal(await h.wait(0), true);
});

test('the group is reached after its leader exited and was reaped', async (t) => {
  const { leader, member } = await groupWithMember();
  const h = ProcessRef.open(leader.pid, pidguard.startToken(leader.pid));
  const m = ProcessRef.open(member, pidguard.startToken(member));
  assert.equal(h.signal(15), true);
  assert.equal(await h.wait(), true);
  await reaped(leader);
  assert.ok(alive(member), 'the member outlived its leader');
  if (!kernelAtLeast(6, 9)) {
    // No PIDFD_SIGNAL_PROCESS_GROUP: a reaped leader's group can no longer be proven its own.
    assert.equal(h.signalGroup('SIGTERM'), false, 'nothing is sent to an unproven group');
    m.signal('KILL');
    t.skip(`Linux ${os.release()} cannot reach a reaped leader's group through its pidfd (needs 6.9)`);
    return;
  }
  assert.equal(h.signalGroup('SIGTERM'), true);
  assert.equal(await m.wait(10), true, 'the member got the group signal');
  assert.ok(await waitFor(() => !alive(member)));
});

test('terminate() runs the schedule on the group and keeps the handle usable', async () => {
  const { leader, member } = await groupWithMember();
  const h = ProcessRef.open(leader.pid, pidguard.startToken(leader.pid));
  const r = await h.terminate({ schedule: 'TERM/5/KILL/2' });
  assert.equal(r.outcome, 'exited');
  assert.equal(r.after, 'TERM');
  assert.equal(r.group, true);
  assert.equal(r.pinned, true);
  assert.ok(await waitFor(() => !alive(member)), 'the member was stopped with its group');
  assert.equal(h.hasExited(), true);
  const again = await h.terminate('TERM/0.1/KILL/0.1');
  assert.equal(again.outcome, 'already-gone');
  assert.deepEqual(again.signals, []);
});

test('refused: pid 1, our own pid, no token under the strict policy, a token that does not match', () => {
  assert.throws(() => ProcessRef.open(1, null, 'lenient'), { code: 'PIDGUARD_REFUSED', refusal: 'init' });
  assert.throws(() => ProcessRef.open(process.pid, pidguard.startToken(process.pid)), { code: 'PIDGUARD_REFUSED', refusal: 'own-pid' });
  const child = spawnGroup('exec sleep infinity');
  assert.throws(() => ProcessRef.open(child.pid), { code: 'PIDGUARD_REFUSED', refusal: 'unverifiable' });
  const other = pidguard.startToken(process.pid);
  assert.throws(() => ProcessRef.open(child.pid, other), { code: 'PIDGUARD_REFUSED', refusal: 'mismatch' });
  // The lenient policy takes a live process without a token (with a warning).
  const h = ProcessRef.open(child.pid, null, 'lenient');
  assert.equal(h.signal('KILL'), true);
});

test('a process that is gone is PIDGUARD_NO_SUCH_PROCESS', async () => {
  const child = spawnGroup('exit 0');
  await reaped(child);
  assert.throws(() => ProcessRef.open(child.pid, null, 'lenient'), { code: 'PIDGUARD_NO_SUCH_PROCESS', errno: 3 });
});

test('argument types are checked before anything happens; a closed handle throws', async () => {
  const child = spawnGroup('exec sleep infinity');
  const h = ProcessRef.open(child.pid, pidguard.startToken(child.pid));
  assert.throws(() => ProcessRef.open('123'), TypeError);
  assert.throws(() => ProcessRef.open(0), { code: 'PIDGUARD_REFUSED' });
  assert.throws(() => ProcessRef.open(child.pid, null, 'yolo'), TypeError);
  assert.throws(() => ProcessRef.open(child.pid, 'not a token'), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  assert.throws(() => h.signal(1.5), RangeError);
  assert.throws(() => h.signal({}), TypeError);
  assert.throws(() => h.signal('BOGUS'), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  assert.throws(() => h.signal(0), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  assert.throws(() => h.wait(-1), RangeError);
  assert.throws(() => h.wait(Infinity), RangeError);
  assert.throws(() => h.wait('1'), TypeError);
  assert.throws(() => h.wait(true), TypeError);
  assert.throws(() => h.terminate('TERM/x'), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  assert.equal(alive(child.pid), true, 'nothing was sent');
  // A wait pending at close() still resolves: the pidfd is kept until it finishes.
  const waiting = h.wait(10);
  h.close();
  h.close();
  assert.equal(h.fd, null);
  assert.equal(h.pid, child.pid);
  assert.throws(() => h.signal('TERM'), { code: 'PIDGUARD_INVALID_ARGUMENT', pid: child.pid });
  assert.throws(() => h.hasExited(), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  assert.throws(() => h.wait(), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  assert.throws(() => h.terminate(), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  process.kill(child.pid, 'SIGKILL'); // our own unreaped child: the number is still its own
  assert.equal(await waiting, true);
});

test('the kernel refusing a signal (EPERM) is PIDGUARD_PERMISSION_DENIED, from signal and terminate', (t) => {
  if (process.getuid() !== 0) {
    t.skip('needs root to run a child as another user');
    return;
  }
  const child = spawnGroup('exec sleep infinity');
  const token = pidguard.startToken(child.pid);
  const script = `
    const pg = require(${JSON.stringify(path.join(ROOT, 'node'))});
    const out = {};
    const h = pg.ProcessRef.open(${child.pid}, ${JSON.stringify(token)});
    try { out.signal = h.signal('TERM'); } catch (e) { out.signal = [e.code, e.errno]; }
    try { out.group = h.signalGroup('TERM'); } catch (e) { out.group = [e.code, e.errno]; }
    h.terminate('TERM/0.1/KILL/0.1').then(
      (r) => { out.terminate = r.outcome; },
      (e) => { out.terminate = [e.code, e.errno]; },
    ).then(() => console.log(JSON.stringify(out)));
  `;
  const r = spawnSync(process.execPath, ['-e', script], { uid: 65534, gid: 65534, encoding: 'utf8', cwd: tempDir('eperm'), timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(out, {
    signal: ['PIDGUARD_PERMISSION_DENIED', 1],
    group: ['PIDGUARD_PERMISSION_DENIED', 1],
    terminate: ['PIDGUARD_PERMISSION_DENIED', 1],
  });
  assert.equal(alive(child.pid), true, 'nothing reached it');
});

test("docs/node.md's handle example runs and prints what its comments say", () => {
  const { out, expected } = runReadmeExample('Process handles');
  assert.ok(expected.length >= 4);
  assert.deepEqual(out, expected);
});

test('pinPidFile: a valid record gives a handle to await, a stale one a report (retired); isProcessAlive', async () => {
  const fs = require('fs');
  const dir = tempDir('pin');
  const child = spawnGroup('sleep infinity');
  const pidFile = path.join(dir, 'on_x.pid');
  pidguard.writePidFileWithMtime(pidFile, child.pid, Date.now() / 1000);
  const ref = pidguard.pinPidFile(pidFile, { argv: [] });
  assert.ok(ref instanceof ProcessRef, 'a valid record is pinned');
  assert.equal(ref.pid, child.pid);
  assert.equal(pidguard.isProcessAlive(child.pid), true);
  assert.equal(ref.signalGroup(15), true);
  assert.equal(await ref.wait(20), true);
  ref.close();
  assert.ok(await waitFor(() => !alive(child.pid)));
  // Gone now: the record is stale and retired, nothing is signalled.
  const report = pidguard.pinPidFile(pidFile, { argv: [] });
  assert.ok(!(report instanceof ProcessRef));
  assert.equal(report.outcome, 'stale');
  assert.equal(report.pidFileRemoved, true);
  assert.equal(fs.existsSync(pidFile), false);
  assert.throws(() => pidguard.pinPidFile(pidFile, { argv: [], cmdFile: pidFile }), { name: 'RangeError', code: 'PIDGUARD_INVALID_ARGUMENT' });
  for (const n of [0, -1, 2 ** 40, 1.5]) assert.equal(pidguard.isProcessAlive(n), false, String(n));
  assert.equal(pidguard.isProcessAlive(process.pid), true);
  assert.throws(() => pidguard.isProcessAlive('1'), TypeError);
});
