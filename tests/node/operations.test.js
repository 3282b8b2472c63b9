'use strict';
// The Node column of the operations table (tests/operations/operations.json): every operation of
// pidguard has a Node name, and each resolves under require('pidguard').
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const pidguard = require(path.join(__dirname, '..', '..', 'node'));

test('every operation has a Node name that exists', () => {
  const { operations } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'operations', 'operations.json'), 'utf8'));
  assert.ok(operations.length >= 20);
  const missing = operations.filter((op) => {
    if (!op.node) return true;
    const f = op.node.split('.').reduce((o, k) => (o == null ? o : o[k]), pidguard);
    return typeof f !== 'function';
  }).map((op) => [op.op, op.node]);
  assert.deepEqual(missing, []);
});

// The reports of tests/operations/reports.json (core's pidguard::report::FIELDS) against what
// Node really hands out: a real object of each report, from the addon, and its interface in
// index.d.ts. napi leaves out a member whose value is None, so a table field missing from an
// object must be one the interface declares optional (`name?:`); every key of an object, and
// every member of the interface, must be a table field.
const { spawnSync } = require('node:child_process');
const { spawnDetached, killOurs, tempDir } = require('./helpers');

test.after(killOurs);

const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** The members of `export interface name { … }` in index.d.ts: name → optional. */
function interfaceMembers(dts, name) {
  const m = new RegExp(`^export interface ${name} \\{\\n([\\s\\S]*?)^\\}$`, 'm').exec(dts);
  assert.ok(m, `index.d.ts has no interface ${name}`);
  return new Map([...m[1].matchAll(/^ {2}(\w+)(\??):/gm)].map((x) => [x[1], x[2] === '?']));
}

test('every report object and its index.d.ts interface has exactly the fields of reports.json', async () => {
  const { reports } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'operations', 'reports.json'), 'utf8'));
  const dts = fs.readFileSync(path.join(__dirname, '..', '..', 'node', 'index.d.ts'), 'utf8');
  const dir = tempDir('reports');

  // A process of our own to terminate, and one to stop through an abx-dl pidfile.
  const child = spawnDetached('sleep', ['300']);
  const token = pidguard.startToken(child.pid);
  const stopped = spawnDetached('sleep', ['300']);
  const pidFile = path.join(dir, 'stopped.pid');
  pidguard.writePidFileWithMtime(pidFile, stopped.pid, Date.now() / 1000);
  // A stale hook: a reaped child's pid, recorded in 2001 (whoever has the number now started later).
  const hooks = path.join(dir, 'hooks');
  fs.mkdirSync(hooks);
  const gone = spawnSync('true').pid;
  pidguard.writePidFileWithMtime(path.join(hooks, 'on_Snapshot__10_stale.bg.pid'), gone, 1e9);
  pidguard.writeCmdFile(path.join(hooks, 'on_Snapshot__10_stale.bg.sh'), ['true']);
  const checked = path.join(dir, 'checked.pid');
  pidguard.writePidFileWithMtime(checked, process.pid, Date.now() / 1000);

  const stop = await pidguard.stopPidFile(pidFile, { schedule: 'TERM/5/KILL/2' });
  assert.equal(stop.outcome, 'exited');
  // A spawn (under a supervisor, so that supervisorPid is set), stopped and its supervisor reaped.
  const spawned = pidguard.spawn(['sleep', 'infinity'], path.join(dir, 'spawned.pid'), { scope: 'supervisor' });
  assert.equal((await pidguard.stopPidFile(path.join(dir, 'spawned.pid'), { schedule: 'TERM/5/KILL/2' })).outcome, 'exited');
  const sup = pidguard.ProcessRef.openChild(spawned.supervisorPid);
  assert.ok(await sup.wait(20));
  await sup.terminate({ reap: true });
  const objects = {
    ProcessInfo: [pidguard.lookup(process.pid)],
    Judgement: [pidguard.judge(process.pid, token)],
    PidFileCheck: [pidguard.checkPidFile(checked), stop.check],
    TerminateReport: [await pidguard.terminate(child.pid, { token, schedule: 'TERM/5/KILL/2' }), stop.terminate],
    StopReport: [stop],
    HookReport: pidguard.cleanupBackgroundHooksSync(hooks, { isTty: true, indexPath: path.join(dir, 'index.jsonl') }),
    Spawned: [spawned],
  };
  assert.equal(objects.TerminateReport[0].outcome, 'exited');
  assert.equal(objects.HookReport.length, 1);
  assert.equal(objects.HookReport[0].outcome, 'stale');
  assert.deepEqual(Object.keys(objects).sort(), Object.keys(reports).sort(), 'a report of reports.json has no object here');

  for (const [name, fields] of Object.entries(reports)) {
    const want = fields.map(camel);
    const members = interfaceMembers(dts, name);
    assert.deepEqual([...members.keys()], want, `index.d.ts interface ${name}`);
    for (const obj of objects[name]) {
      assert.ok(obj && typeof obj === 'object', `${name}: no object`);
      const keys = Object.keys(obj);
      assert.deepEqual(keys.filter((k) => !want.includes(k)), [], `${name}: keys not in reports.json`);
      const absent = want.filter((f) => !keys.includes(f));
      assert.deepEqual(absent.filter((f) => !members.get(f)), [], `${name}: fields neither in the object nor optional`);
    }
  }
});

test('a path that is not UTF-8 (given as a Buffer) comes back in a report as a string in core\'s lossless form (\\xNN for a bad byte)', async () => {
  const dir = tempDir('bytes');
  const bad = Buffer.from([0x66, 0xff, 0x66]); // "f\xfff"
  const missing = Buffer.concat([Buffer.from(dir + '/'), bad, Buffer.from('.pid')]);
  const stop = await pidguard.stopPidFile(missing);
  assert.equal(stop.outcome, 'stale');
  assert.equal(stop.pidFile, `${dir}/f\\xfff.pid`);
  const hooks = Buffer.concat([Buffer.from(dir + '/'), bad]);
  fs.mkdirSync(hooks);
  const gone = spawnSync('true').pid;
  pidguard.writePidFileWithMtime(Buffer.concat([hooks, Buffer.from('/on_Snapshot__10_x.bg.pid')]), gone, 1e9);
  const [hook] = pidguard.cleanupBackgroundHooksSync(hooks, { isTty: true, noFinalize: true });
  assert.equal(hook.outcome, 'stale');
  assert.equal(hook.dir, `${dir}/f\\xfff`);
  assert.equal(hook.pidFile, `${dir}/f\\xfff/on_Snapshot__10_x.bg.pid`);
});
