'use strict';
// At the edges, from Node: a leader whose main thread exited while a worker runs, no /proc, a live
// pid above kernel.pid_max, a machine id written after the record. Every process is started here
// and ended here by pid; the cases that change /proc or pid_max run in a private mount or PID
// namespace.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { execFileSync, spawnSync } = require('child_process');
const { pidguard, spawnDetached, spawnGroup, killOurs, waitFor, tempDir, alive } = require('./helpers');

test.after(killOurs);

const ROOT = path.resolve(__dirname, '..', '..');
const isRoot = process.getuid && process.getuid() === 0;
const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

function buildLeaderExits(dir) {
  const src = path.join(dir, 'leader_exits.c');
  fs.writeFileSync(src, '#include <pthread.h>\n#include <unistd.h>\nstatic void *w(void *a){ (void)a; for(;;) pause(); return 0; }\n'
    + 'int main(void){ pthread_t t; pthread_create(&t, 0, w, 0); pthread_exit(0); }\n');
  const exe = path.join(dir, 'leader_exits');
  execFileSync('cc', ['-O2', '-pthread', '-o', exe, src]);
  return exe;
}
const status = (pid) => { try { return fs.readFileSync(`/proc/${pid}/status`, 'utf8'); } catch { return ''; } };

test('a leader whose main thread exited is alive: lookup, token, judge, stop', { skip: !have('cc') && 'no C compiler' }, async () => {
  const dir = tempDir('edges-lz');
  const exe = buildLeaderExits(dir);
  const p = spawnDetached(exe, []);
  assert.ok(await waitFor(() => status(p.pid).includes('State:\tZ') && status(p.pid).includes('Threads:\t2')), status(p.pid));
  const info = pidguard.lookup(p.pid);
  assert.equal(info.state, 'Z');
  assert.equal(info.isZombie, false);
  const tok = pidguard.startToken(p.pid);
  assert.deepEqual(pidguard.judge(p.pid, tok), { verdict: 'match', reason: 'token-equal' });
  const pf = path.join(dir, 'on_Snapshot__1_lz.bg.pid');
  pidguard.writePidFileWithMtime(pf, p.pid, info.createTime);
  const r = await pidguard.stopPidFile(pf, { schedule: 'TERM/5/KILL/5' });
  assert.equal(r.outcome, 'exited', JSON.stringify(r));
  assert.ok(await waitFor(() => p.exitCode !== null || p.signalCode !== null));
});

test('an equal boot id proves the same kernel whatever the machine id; cleanup stops the hook', async () => {
  const dir = tempDir('edges-mi');
  const p = spawnGroup('exec sleep infinity');
  assert.ok(await waitFor(() => pidguard.lookup(p.pid).name === 'sleep'));
  const f = pidguard.startToken(p.pid).split(':');
  f[1] = 'writtenbeforemachineid';
  const pf = path.join(dir, 'on_Snapshot__1_h.bg.pid');
  pidguard.writePidFileWithMtime(pf, p.pid, pidguard.lookup(p.pid).createTime);
  execFileSync('python3', ['-c', 'import os,sys; os.setxattr(sys.argv[1], "user.pidguard.token", sys.argv[2].encode())', pf, f.join(':')]);
  const reports = await pidguard.cleanupBackgroundHooks(dir, { schedule: 'TERM/5/KILL/5' });
  assert.equal(reports[0].outcome, 'exited', JSON.stringify(reports[0]));
});

test('without /proc every record is kept: machine-identity-unreadable', { skip: (!isRoot || !have('unshare')) && 'needs root and unshare' }, async () => {
  const dir = tempDir('edges-np');
  fs.mkdirSync(path.join(dir, 'out'));
  const p = spawnGroup('exec sleep infinity');
  assert.ok(await waitFor(() => pidguard.lookup(p.pid).name === 'sleep'));
  const pf = path.join(dir, 'out', 'on_Snapshot__1_h.bg.pid');
  pidguard.writePidFileWithMtime(pf, p.pid, pidguard.lookup(p.pid).createTime);
  const tok = pidguard.startToken(p.pid);
  const child = `
    const pidguard = require(${JSON.stringify(path.join(ROOT, 'node'))});
    const [pid, tok, dir] = process.argv.slice(1);
    (async () => {
      const out = { judge: pidguard.judge(Number(pid), tok) };
      const r = await pidguard.cleanupBackgroundHooks(dir + '/out', { schedule: 'TERM/1/KILL/1' });
      out.cleanup = [r[0].outcome, r[0].pidFileRemoved];
      console.log(JSON.stringify(out));
    })();`;
  const script = 'while mountpoint -q /proc; do umount -l /proc || exit 99; done; exec "$0" "$@"';
  const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, process.execPath, '-e', child, String(p.pid), tok, dir],
    { encoding: 'utf8', env: process.env });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.deepEqual(out.judge, { verdict: 'unverifiable', reason: 'machine-identity-unreadable: ENOENT' });
  assert.deepEqual(out.cleanup, ['unverified', false]);
  assert.ok(alive(p.pid) && fs.existsSync(pf));
});

test('a live pid above pid_max is judged by its identity', { skip: (!isRoot || !have('unshare')) && 'needs root and unshare' }, () => {
  const dir = tempDir('edges-pm');
  const child = `
    const fs = require('fs');
    const { spawn } = require('child_process');
    const pidguard = require(${JSON.stringify(path.join(ROOT, 'node'))});
    const put = (f, v) => fs.writeFileSync('/proc/sys/kernel/' + f, v);
    try { put('pid_max', '100000'); put('ns_last_pid', '50000'); } catch (e) { console.log(JSON.stringify({ skip: String(e) })); process.exit(0); }
    const c = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    const dir = process.argv[1];
    const pf = dir + '/on_Snapshot__1_h.bg.pid';
    (async () => {
      while (pidguard.lookup(c.pid).name !== 'sleep') await new Promise((r) => setTimeout(r, 10));
      pidguard.writePidFileWithMtime(pf, c.pid, pidguard.lookup(c.pid).createTime);
      put('pid_max', '32768');
      const r = await pidguard.cleanupBackgroundHooks(dir, { schedule: 'TERM/5/KILL/5' });
      console.log(JSON.stringify({ pid: c.pid, outcome: r[0].outcome }));
      process.exit(0);
    })();`;
  const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, '-e', child, dir], { encoding: 'utf8', env: process.env });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  if (out.skip) return;
  assert.ok(out.pid > 32768, JSON.stringify(out));
  assert.equal(out.outcome, 'exited');
});
