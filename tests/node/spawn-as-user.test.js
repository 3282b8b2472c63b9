'use strict';
// `spawn(argv, pidFile, { uid, gid, groups })`: the command runs as exactly that identity, in a
// scope it cannot leave; a stop by the spawner reaches its whole tree; a caller that may not take
// the identity is refused before anything is made. And a command killed by a signal under a
// supervisor reads as signalled (`exitSignal`), not as an exit code. Needs root for the identity
// tests (skipped otherwise). Survivors are counted by a marker in the environment.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const pidguard = require(path.join(__dirname, '..', '..', 'node'));
const { waitFor } = require('./helpers');

const MARK = 'PIDGUARD_TEST_SPAWN_USER_MARK';
const NOBODY = 65534;
const root = process.getuid() === 0;
const TREE = ['sh', '-c',
  "sleep 3600 & echo $! > child.pid; setsid sh -c 'echo $$ > grand.pid; exec sleep 3600' & " +
  '(setsid sh -c "echo \\$\\$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600" &); exec sleep 3600'];

function statFields(pid) {
  let s;
  try { s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1'); } catch { return null; }
  return s.slice(s.lastIndexOf(')') + 2).split(' ');
}
const aliveNotZombie = (pid) => { const f = statFields(pid); return f !== null && f[0] !== 'Z' && f[0] !== 'X'; };

function marked(mark) {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let env;
    try { env = fs.readFileSync(`/proc/${name}/environ`, 'latin1').split('\0'); } catch { continue; }
    if (env.includes(`${MARK}=${mark}`) && aliveNotZombie(Number(name))) out.push(Number(name));
  }
  return out;
}

function newMark(t) {
  const mark = crypto.randomUUID();
  process.env[MARK] = mark;
  t.after(() => {
    for (const pid of marked(mark)) {
      try {
        const ref = pidguard.ProcessRef.open(pid, pidguard.startToken(pid));
        const env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
        if (env.includes(`${MARK}=${mark}`) && !ref.hasExited()) ref.signal('KILL');
        ref.close();
      } catch { /* gone */ }
    }
    delete process.env[MARK];
  });
  return mark;
}

/** A directory nobody may write: /tmp/pidguard-node-user-XXXX, mode 0777. */
function sharedDir(t) {
  const d = fs.mkdtempSync(path.join('/tmp', 'pidguard-node-user-'));
  fs.chmodSync(d, 0o777);
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

/** [Uid, Gid, Groups] of /proc/<pid>/status as arrays of numbers. */
function ids(pid) {
  const out = {};
  for (const line of fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const [k, v] = line.split(':');
    if (['Uid', 'Gid', 'Groups'].includes(k)) out[k] = v.trim() === '' ? [] : v.trim().split(/\s+/).map(Number);
  }
  return [out.Uid, out.Gid, out.Groups];
}

async function reap(s) {
  const ref = pidguard.ProcessRef.openChild(s.supervisorPid ?? s.pid);
  assert.ok(await ref.wait(20), 'the spawn\'s child did not exit');
  const r = await ref.terminate({ reap: true });
  ref.close();
  return r;
}

test('spawn with uid/gid/groups: the whole tree runs as exactly that identity, and a stop leaves 0 survivors', { skip: !root && 'needs root' }, async (t) => {
  const mark = newMark(t);
  const dir = sharedDir(t);
  const s = pidguard.spawn(TREE, path.join(dir, 'tree.pid'), { scope: 'supervisor', cwd: dir, uid: 'nobody', gid: NOBODY, groups: [NOBODY, 100] });
  try {
    assert.equal(s.runAs, 'uid=65534 gid=65534 groups=100,65534');
    const pids = [s.pid];
    for (const n of ['child', 'grand', 'daemon']) {
      const f = path.join(dir, `${n}.pid`);
      // The file exists before `echo` has written its line: wait for the whole line.
      assert.ok(await waitFor(() => fs.existsSync(f) && fs.readFileSync(f, 'utf8').endsWith('\n'), 20000), `${n}.pid was never written`);
      pids.push(Number(fs.readFileSync(f, 'utf8')));
    }
    for (const pid of pids) {
      const [uid, gid, groups] = ids(pid);
      assert.deepEqual([uid, gid, groups.sort((a, b) => a - b)], [[NOBODY, NOBODY, NOBODY, NOBODY], [NOBODY, NOBODY, NOBODY, NOBODY], [100, NOBODY]]);
    }
    assert.deepEqual(ids(s.supervisorPid)[0], [0, 0, 0, 0], 'the supervisor keeps the spawner\'s identity');
    const r = await pidguard.stopPidFile(path.join(dir, 'tree.pid'), { schedule: 'TERM/5/KILL/5' });
    assert.deepEqual([r.outcome, r.scope, r.pidFileRemoved], ['exited', 'supervisor', true]);
    assert.deepEqual(marked(mark), [], 'a process of the tree survived the stop');
  } finally {
    await reap(s);
  }
});

test('spawn as another user by a caller that may not: PIDGUARD_PERMISSION_DENIED, nothing started', { skip: !root && 'needs root' }, (t) => {
  const mark = newMark(t);
  const dir = sharedDir(t);
  const script = `
    const pidguard = require(${JSON.stringify(path.join(__dirname, '..', '..', 'node'))});
    process.setgroups([]); process.setgid(${NOBODY}); process.setuid(${NOBODY});
    try {
      pidguard.spawn(['sleep', '3600'], process.argv[1] + '/x.pid', { uid: 0 });
      console.log('started');
    } catch (e) { console.log(e.code); }`;
  const r = spawnSync(process.execPath, ['-e', script, dir], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.stdout.trim(), 'PIDGUARD_PERMISSION_DENIED', r.stderr);
  assert.deepEqual(fs.readdirSync(dir), [], 'a refused spawn left a file');
  assert.deepEqual(marked(mark), [], 'a refused spawn left a process');
});

test('bad uid values are refused before anything is made', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pidguard-node-uid-'));
  for (const uid of [-1, 1.5, 4294967295]) {
    assert.throws(() => pidguard.spawn(['true'], path.join(dir, 'x.pid'), { uid }), { code: 'ERR_INVALID_ARG_VALUE' });
  }
  assert.deepEqual(fs.readdirSync(dir), []);
  fs.rmSync(dir, { recursive: true });
});

test('a command killed by a signal under a supervisor reads as signalled: exitSignal, not only 128 + signal', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pidguard-node-sig-'));
  for (const scope of ['supervisor', 'group']) {
    const s = pidguard.spawn(['sh', '-c', 'kill -TERM $$'], path.join(dir, `k-${scope}.pid`), { scope });
    const r = await reap(s);
    assert.equal(r.exitSignal, 15, `${scope}: ${JSON.stringify(r)}`);
    assert.equal(r.exitCode, 128 + 15);
  }
  fs.rmSync(dir, { recursive: true });
});
