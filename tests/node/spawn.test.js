'use strict';
// `spawn`: a command started inside a scope is stopped whole by `stopPidFile`.
//
// The tree: a shell that double-forks and `setsid`s a `sleep` (a daemon that leaves the command's
// process group and session), then execs a `sleep` of its own (the recorded process). Every
// process of the tree carries a marker in its environment, so survivors are counted by what they
// are; a process counts as alive unless it is a zombie (this sandbox's pid 1 reaps orphans
// slowly). The caller's own child (the supervisor, or the command) is reaped by the test through
// `ProcessRef.openChild(…).terminate({ reap: true })`, as `spawn`'s documentation says.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const pidguard = require(path.join(__dirname, '..', '..', 'node'));
const { tempDir, waitFor, runReadmeExample } = require('./helpers');

const MARK = 'PIDGUARD_TEST_SPAWN_MARK';
const TREE = ['sh', '-c', '(setsid sh -c "echo \\$\\$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600" &); exec sleep 3600'];

function statFields(pid) {
  let s;
  try { s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1'); } catch { return null; }
  return s.slice(s.lastIndexOf(')') + 2).split(' ');
}
const aliveNotZombie = (pid) => { const f = statFields(pid); return f !== null && f[0] !== 'Z' && f[0] !== 'X'; };
const sessionOf = (pid) => Number(statFields(pid)[3]);

/** Live (not zombie) processes whose environment holds MARK=mark. */
function marked(mark) {
  const needle = `${MARK}=${mark}`;
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let env;
    try { env = fs.readFileSync(`/proc/${name}/environ`, 'latin1').split('\0'); } catch { continue; }
    if (env.includes(needle) && aliveNotZombie(Number(name))) out.push(Number(name));
  }
  return out;
}

/** End what a failed test left: each marked process through a pin, its environment read again
 * while the handle holds it (a reused pid is never signalled). */
function endMarked(mark) {
  for (const pid of marked(mark)) {
    try {
      const ref = pidguard.ProcessRef.open(pid, pidguard.startToken(pid));
      const env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
      if (env.includes(`${MARK}=${mark}`) && !ref.hasExited()) ref.signal('KILL');
      ref.close();
    } catch { /* gone, or not ours */ }
  }
}

/** A fresh marker in this process's environment (which spawn hands to the command). */
function newMark(t) {
  const mark = crypto.randomUUID();
  process.env[MARK] = mark;
  t.after(() => { endMarked(mark); delete process.env[MARK]; });
  return mark;
}

/** Spawn TREE in `scope`; wait until the daemon has left the command's session. */
async function startTree(dir, scope) {
  const s = pidguard.spawn(TREE, path.join(dir, 'tree.pid'), { scope, cwd: dir });
  const daemonFile = path.join(dir, 'daemon.pid');
  assert.ok(await waitFor(() => fs.existsSync(daemonFile), 20000), 'the daemon never wrote its pid');
  const daemon = Number(fs.readFileSync(daemonFile, 'utf8'));
  const token = pidguard.startToken(daemon);
  assert.ok(await waitFor(() => sessionOf(daemon) === daemon, 20000), 'the daemon never left its session');
  assert.notEqual(sessionOf(daemon), sessionOf(s.pid), 'the daemon did not escape the command\'s session');
  return { s, daemon, token };
}

/** Reap the caller's own child of a spawn (through its pidfd); its shell-style exit code. */
async function reap(s) {
  const ref = pidguard.ProcessRef.openChild(s.supervisorPid ?? s.pid);
  assert.ok(await ref.wait(20), 'the spawn\'s child did not exit');
  const r = await ref.terminate({ reap: true });
  ref.close();
  return r.exitCode;
}

function cgroup2Mounts() {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean)
    .map((l) => l.split(' - ')).filter(([, r]) => r.split(' ')[0] === 'cgroup2').map(([l]) => l.split(' ')[4]);
}

/** Why no cgroup v2 leaf can be made here, or null when one can. */
let leafProbe;
async function noLeaf() {
  if (leafProbe === undefined) {
    const dir = tempDir('probe');
    try {
      const s = pidguard.spawn(['true'], path.join(dir, 'probe.pid'), { scope: 'cgroup' });
      await reap(s);
      await pidguard.stopPidFile(path.join(dir, 'probe.pid'));
      leafProbe = null;
    } catch (e) {
      leafProbe = e.message;
    }
  }
  return leafProbe;
}

for (const scope of ['cgroup', 'supervisor']) {
  test(`a tree in a ${scope} scope is stopped whole by stopPidFile, its setsid daemon included`, async (t) => {
    if (scope === 'cgroup' && (await noLeaf())) return t.skip(`no cgroup v2 leaf can be made here: ${leafProbe}`);
    const mark = newMark(t);
    const dir = tempDir(`spawn-${scope}`);
    const { s, daemon } = await startTree(dir, scope);
    assert.equal(s.scope, scope);
    assert.ok(s.scopeRecord.startsWith(`${scope}:`));
    assert.equal(s.note, undefined);
    assert.equal(s.supervisorPid !== undefined, scope === 'supervisor');
    assert.equal(s.pidFile, path.join(dir, 'tree.pid'));
    assert.equal(s.cmdFile, path.join(dir, 'tree.sh'));
    assert.equal(s.stdout, path.join(dir, 'tree.stdout.log'));
    assert.ok(marked(mark).includes(s.pid) && marked(mark).includes(daemon));

    const r = await pidguard.stopPidFile(path.join(dir, 'tree.pid'), { schedule: 'TERM/5/KILL/5' });
    assert.deepEqual([r.outcome, r.scope, r.terminate.scope, r.pidFileRemoved], ['exited', scope, scope, true]);
    assert.deepEqual(marked(mark), [], 'a process of the scope survived the stop');
    assert.ok(!aliveNotZombie(daemon));
    if (scope === 'cgroup') {
      const leaf = path.join(cgroup2Mounts()[0], s.scopeRecord.split(':').slice(3).join(':'));
      assert.ok(!fs.existsSync(leaf), `the leaf ${leaf} was not removed`);
    }
    // The command died of SIGTERM; a supervisor exits with the command's status.
    assert.equal(await reap(s), 128 + 15);
  });
}

test('without a scope (scope: group) the setsid daemon survives the stop: the documented limitation', async (t) => {
  const mark = newMark(t);
  const dir = tempDir('spawn-group');
  const { s, daemon, token } = await startTree(dir, 'group');
  assert.deepEqual([s.scope, s.scopeRecord, s.supervisorPid], ['group', undefined, undefined]);
  try {
    const r = await pidguard.stopPidFile(path.join(dir, 'tree.pid'), { schedule: 'TERM/5/KILL/5' });
    assert.deepEqual([r.outcome, r.scope], ['exited', 'group']);
    assert.deepEqual(marked(mark), [daemon], 'the daemon should have escaped a group stop');
    assert.equal(await reap(s), 128 + 15);
  } finally {
    // Ours to end: pinned by the token read while it was known to be the daemon.
    if (aliveNotZombie(daemon)) await pidguard.terminate(daemon, { token, schedule: 'KILL/5' });
  }
  assert.deepEqual(marked(mark), []);
});

test('cleanupBackgroundHooks stops a spawned hook whole', async (t) => {
  const mark = newMark(t);
  const dir = tempDir('spawn-cleanup');
  const { s } = await startTree(dir, 'auto');
  assert.equal(s.scope, (await noLeaf()) ? 'supervisor' : 'cgroup');
  fs.renameSync(path.join(dir, 'tree.pid'), path.join(dir, 'on_Snapshot__10_tree.bg.pid'));
  fs.renameSync(path.join(dir, 'tree.sh'), path.join(dir, 'on_Snapshot__10_tree.bg.sh'));
  const [h] = await pidguard.cleanupBackgroundHooks(dir, { isTty: true, schedule: 'TERM/5/KILL/5' });
  assert.deepEqual([h.outcome, h.scope], ['exited', s.scope]);
  assert.deepEqual(marked(mark), []);
  await reap(s);
});

test('bad input is refused before anything is created', (t) => {
  const mark = newMark(t);
  const dir = tempDir('spawn-bad');
  const p = path.join(dir, 'x.pid');
  const cases = [
    [() => pidguard.spawn([], p), (e) => e instanceof RangeError && e.code === 'PIDGUARD_INVALID_ARGUMENT' && /empty/.test(e.message)],
    [() => pidguard.spawn('sleep 1', p), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE'],
    [() => pidguard.spawn(['sleep', 1], p), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE'],
    [() => pidguard.spawn(['sleep', null], p), (e) => e instanceof TypeError],
    [() => pidguard.spawn(['sleep', '1\0'], p), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT'],
    [() => pidguard.spawn(['sleep', '1'], p, { scope: 'session' }), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_VALUE'],
    [() => pidguard.spawn(['sleep', '1'], p, { scope: 1 }), (e) => e instanceof Error],
    [() => pidguard.spawn(['no-such-program-pidguard'], p), (e) => e.code === 'PIDGUARD_NOT_FOUND'],
    [() => pidguard.spawn(['sleep', '1'], p, { env: { A: 1 } }), (e) => e instanceof Error && !e.code?.startsWith('PIDGUARD_')],
    [() => pidguard.spawn(['sleep', '1'], p, { env: { '': '1' } }), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT'],
    [() => pidguard.spawn(['sleep', '1'], p, { env: { 'A=B': '1' } }), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT'],
    [() => pidguard.spawn(['sleep', '1'], p, { env: { A: '1\0' } }), (e) => e.code === 'PIDGUARD_INVALID_ARGUMENT'],
  ];
  for (const [call, check] of cases) {
    assert.throws(call, check);
  }
  assert.deepEqual(fs.readdirSync(dir), []);
  assert.deepEqual(marked(mark), []);
});

for (const scope of ['group', 'supervisor', 'auto']) {
  test(`env is the command's whole environment (scope ${scope}); process.env is untouched`, async () => {
    const dir = tempDir('spawn-env');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'pidguard-env-probe'), '#!/bin/sh\nexec /usr/bin/env\n', { mode: 0o755 });
    const before = { ...process.env };
    const env = { HOOK_A: '1', HOOK_B: 'two words', PATH: `${bin}:/usr/bin:/bin` };
    const s = pidguard.spawn(['pidguard-env-probe'], path.join(dir, 'e.pid'), { scope, env });
    const child = pidguard.ProcessRef.openChild(s.supervisorPid || s.pid);
    assert.ok(await child.wait(20));
    assert.equal((await child.terminate({ reap: true })).exitCode, 0);
    // (The probe's /bin/sh adds PWD itself.)
    const seen = fs.readFileSync(s.stdout, 'utf8').split('\n').filter((l) => l && !l.startsWith('PWD='));
    assert.deepEqual(seen, ['HOOK_A=1', 'HOOK_B=two words', `PATH=${bin}:/usr/bin:/bin`]);
    assert.deepEqual({ ...process.env }, before);
    // Not on this process's PATH: without env it is not found.
    assert.throws(() => pidguard.spawn(['pidguard-env-probe'], path.join(dir, 'n.pid'), { scope }), (e) => e.code === 'PIDGUARD_NOT_FOUND');
  });
}

test('with cgroup2 hidden, scope cgroup fails cleanly and auto falls back to a supervisor', (t) => {
  const mounts = cgroup2Mounts();
  if (process.getuid() !== 0 || mounts.length === 0) return t.skip('needs root and a cgroup2 mount to hide');
  if (spawnSync('unshare', ['--mount', 'true']).status !== 0) return t.skip('cannot make a mount namespace');
  const mark = newMark(t);
  const dir = tempDir('spawn-hidden');
  const script = `
    const path = require('path');
    const pidguard = require(${JSON.stringify(path.join(__dirname, '..', '..', 'node'))});
    const dir = process.argv[1];
    const out = {};
    try { pidguard.spawn(['sleep', '3600'], path.join(dir, 'cg.pid'), { scope: 'cgroup' }); out.cgroup = 'started'; }
    catch (e) { out.cgroup = e.code + ': ' + e.message; }
    out.files = require('fs').readdirSync(dir);
    const s = pidguard.spawn(['sh', '-c', '(setsid sleep 3600 &); exec sleep 3600'], path.join(dir, 'auto.pid'));
    out.auto = [s.scope, s.note];
    pidguard.stopPidFile(path.join(dir, 'auto.pid'), { schedule: 'TERM/5/KILL/5' }).then(async (r) => {
      out.stop = [r.outcome, r.scope];
      const ref = pidguard.ProcessRef.openChild(s.supervisorPid);
      out.supervisorExited = await ref.wait(20);
      if (out.supervisorExited) out.exitCode = (await ref.terminate({ reap: true })).exitCode;
      console.log(JSON.stringify(out));
    });
  `;
  const umounts = mounts.map((m) => `umount -l ${m}`).join('; ');
  const r = spawnSync('unshare', ['--mount', 'sh', '-c', `${umounts}; exec "$0" "$@"`, process.execPath, '-e', script, dir],
    { encoding: 'utf8', timeout: 120000, env: process.env });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout);
  assert.match(out.cgroup, /^PIDGUARD_IO: spawn: no cgroup leaf could be made/);
  assert.deepEqual(out.files, [], 'a failed spawn left files behind');
  assert.equal(out.auto[0], 'supervisor');
  assert.match(out.auto[1], /no cgroup leaf could be made/);
  assert.deepEqual(out.stop, ['exited', 'supervisor']);
  assert.equal(out.supervisorExited, true);
  assert.equal(out.exitCode, 128 + 15);
  assert.deepEqual(marked(mark), []);
});

test('the Scopes example of docs/node.md runs and prints what it says', () => {
  const { out, expected } = runReadmeExample('Scopes');
  assert.deepEqual(out, expected);
});

test('spawn as root: a log another user planted (0666, sticky shared directory) is replaced, and gets none of the output', async (t) => {
  if (process.geteuid() !== 0) return t.skip('needs root (chown)');
  const dir = tempDir('spawn-planted');
  const shared = path.join(dir, 'shared');
  fs.mkdirSync(shared, { mode: 0o1777 });
  fs.chmodSync(shared, 0o1777);
  const out = path.join(shared, 'job.stdout.log');
  fs.writeFileSync(out, '');
  fs.chmodSync(out, 0o666);
  fs.chownSync(out, 65534, 65534);
  const users = fs.openSync(out, 'r'); // the user's own descriptor on the file they planted
  try {
    const s = pidguard.spawn(['sh', '-c', 'echo root-secret'], path.join(dir, 'job.pid'),
      { scope: 'group', stdout: out, stderr: path.join(shared, 'job.stderr.log') });
    assert.ok(await waitFor(() => fs.readFileSync(out, 'utf8') === 'root-secret\n', 20000));
    assert.equal(fs.readFileSync(users, 'utf8'), '', "the user's file received root's output");
    assert.equal(fs.statSync(out).uid, 0);
    assert.equal(await reap(s), 0);
  } finally {
    fs.closeSync(users);
  }
});
