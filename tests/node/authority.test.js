'use strict';
// A pidfile carries its owner's authority, never more (docs/security.md), from Node: a caller with
// real uid 0 and a lowered effective uid (process.seteuid(U), as a root service that lowers only its
// effective uid) must not be steered at root's process by U's pidfile, even one with the target's
// exact start token (anyone can compute it from /proc); U's own process, named by U's own pidfile,
// is still stopped. The uid switch happens in a child Node process, so this test runner keeps its
// uids. Runs as root; otherwise skips with the reason. Seen failing on the rule that compared the
// owner with the effective uid only (root's process was killed).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { ROOT, spawnDetached, killOurs, alive, waitFor, tempDir } = require('./helpers');

const U = 4242;
test.after(killOurs);

const CHILD = `
const pidguard = require(${JSON.stringify(path.join(ROOT, 'node'))});
const [rootRec, ownRec, U] = [process.argv[1], process.argv[2], Number(process.argv[3])];
process.seteuid(U);
const out = { uid: process.getuid(), euid: process.geteuid() };
(async () => {
  for (const [name, rec] of [['root', rootRec], ['own', ownRec]]) {
    try {
      const r = await pidguard.stopPidFile(rec, { schedule: 'TERM/1/KILL/1' });
      out[name] = { outcome: r.outcome, refusal: r.refusal ?? null };
    } catch (e) {
      out[name] = { error: String(e) };
    }
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

test('a caller with real uid 0 and effective uid U is refused at root\'s process by U\'s pidfile', async (t) => {
  if (process.getuid() !== 0) return t.skip('needs root: the caller lowers only its effective uid');
  const pidguard = require(path.join(ROOT, 'node'));
  const dir = tempDir('pg-authority');
  fs.chmodSync(dir, 0o755);
  const rootProc = spawnDetached('sleep', ['infinity']);
  const own = spawnDetached('sleep', ['infinity'], { uid: U, gid: U });
  const comm = (pid) => { try { return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return ''; } };
  assert.ok(await waitFor(() => comm(rootProc.pid) === 'sleep' && comm(own.pid) === 'sleep', 30000), 'the processes never ran sleep');
  const record = (name, pid) => {
    const p = path.join(dir, name);
    pidguard.writePidFileWithMtime(p, pid, pidguard.lookup(pid).createTime);
    fs.chownSync(p, U, U);
    return p;
  };
  const rootRec = record('on_Snapshot__root.bg.pid', rootProc.pid);
  const ownRec = record('on_Snapshot__own.bg.pid', own.pid);
  const out = JSON.parse(execFileSync(process.execPath, ['-e', CHILD, rootRec, ownRec, String(U)], { encoding: 'utf8', timeout: 60000 }));
  assert.equal(out.uid, 0);
  assert.equal(out.euid, U);
  assert.deepEqual(out.root, { outcome: 'refused', refusal: 'untrusted-pidfile' }, JSON.stringify(out));
  assert.ok(alive(rootProc.pid), "root's process was signalled");
  assert.ok(fs.existsSync(rootRec), "the refused record was removed");
  assert.equal(out.own.outcome, 'exited', JSON.stringify(out));
  assert.ok(await waitFor(() => !alive(own.pid), 10000), "the user's own process still runs");
});
