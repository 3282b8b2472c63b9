'use strict';
// cleanupBackgroundHooks on real hooks started the way a spawner starts them
// (child_process.spawn(..., { detached: true }) + writeCmdFile + writePidFileWithMtime), and the
// event loop while a schedule runs.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { pidguard, spawnDetached, spawnGroup, killOurs, waitFor, tempDir, alive, groupMembers, countTicks, ROOT } =
  require('./helpers');

test.after(killOurs);

const NODE = fs.realpathSync(process.execPath);

/** Start a background hook in `dir` as abx-dl does: .sh, logs, spawn detached, pidfile. */
function startHook(dir, name, argv) {
  fs.mkdirSync(dir, { recursive: true });
  pidguard.writeCmdFile(path.join(dir, `${name}.sh`), argv);
  const out = fs.openSync(path.join(dir, `${name}.stdout.log`), 'w');
  const err = fs.openSync(path.join(dir, `${name}.stderr.log`), 'w');
  const child = spawnDetached(argv[0], argv.slice(1), { cwd: dir, stdio: ['ignore', out, err] });
  const startTime = Date.now() / 1000;
  fs.closeSync(out);
  fs.closeSync(err);
  pidguard.writePidFileWithMtime(path.join(dir, `${name}.pid`), child.pid, startTime);
  return child;
}

function readIndex(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

test('cleanup of real hooks: a TERM-trapping group is fully stopped, a stale pidfile naming a live bystander sends it nothing', async () => {
  const out = tempDir('cleanup');
  const index = path.join(out, 'index.jsonl');

  // Hook 1: bash that ignores SIGTERM, with two children that inherit the ignored TERM.
  const trapDir = path.join(out, 'trap');
  const trapHook = startHook(trapDir, 'on_Snapshot__10_trap.bg',
    ['bash', '-c', "trap '' TERM; echo started; sleep infinity & sleep infinity & wait"]);

  // Hook 2: a Node hook that reports an ArchiveResult on stdout, writes an output file, exits on TERM.
  const nodeDir = path.join(out, 'nodehook');
  fs.mkdirSync(nodeDir, { recursive: true });
  const script = path.join(nodeDir, 'hook.js');
  fs.writeFileSync(script, [
    "require('fs').writeFileSync('output.txt', 'data');",
    "console.log(JSON.stringify({ type: 'ArchiveResult', status: 'succeeded', output_str: 'hello from the hook' }));",
    "process.on('SIGTERM', () => process.exit(0));",
    'setInterval(() => {}, 1000);',
  ].join('\n'));
  const nodeHook = startHook(nodeDir, 'on_Snapshot__20_node.bg', [NODE, script]);

  // A bystander in its own group: it records any SIGTERM it receives.
  const marker = path.join(out, 'bystander-got-signal');
  const bystander = spawnGroup(`trap 'echo TERM >> ${marker}' TERM; trap 'echo HUP >> ${marker}' HUP; while :; do sleep 0.1; done`);
  // A stale pidfile (as the original wrote it, no token) whose pid is now the bystander's: its
  // mtime is an hour before the bystander started.
  const staleDir = path.join(out, 'stale');
  fs.mkdirSync(staleDir);
  const stalePid = path.join(staleDir, 'on_Snapshot__30_old.bg.pid');
  fs.writeFileSync(stalePid, String(bystander.pid));
  const bt = pidguard.lookup(bystander.pid).createTime - 3600;
  fs.utimesSync(stalePid, bt, bt);

  assert.ok(await waitFor(() => groupMembers(trapHook.pid).length >= 3), 'trap hook children did not start');
  assert.ok(await waitFor(() => fs.existsSync(path.join(nodeDir, 'output.txt')) &&
    fs.readFileSync(path.join(nodeDir, 'on_Snapshot__20_node.bg.stdout.log'), 'utf8').includes('ArchiveResult')));
  assert.equal(pidguard.validatePidFile(path.join(trapDir, 'on_Snapshot__10_trap.bg.pid'),
    path.join(trapDir, 'on_Snapshot__10_trap.bg.sh')), true);

  const reports = await pidguard.cleanupBackgroundHooks(out, { indexPath: index, isTty: true, schedule: 'TERM/0.5/KILL/3' });
  const by = Object.fromEntries(reports.map((r) => [r.name, r]));
  assert.deepEqual(Object.keys(by).sort(), ['on_Snapshot__10_trap.bg', 'on_Snapshot__20_node.bg', 'on_Snapshot__30_old.bg']);

  const trap = by['on_Snapshot__10_trap.bg'];
  assert.equal(trap.outcome, 'exited', JSON.stringify(trap));
  assert.equal(trap.after, 'KILL');
  assert.deepEqual(trap.signals, ['TERM', 'CONT', 'KILL']);
  assert.equal(trap.verdict, 'match');
  assert.equal(trap.pid, trapHook.pid);
  assert.equal(trap.succeeded, true);
  assert.equal(trap.pidFileRemoved, true);
  assert.deepEqual(trap.cmd, ['bash', '-c', "trap '' TERM; echo started; sleep infinity & sleep infinity & wait"]);
  assert.deepEqual(groupMembers(trapHook.pid), [], 'survivors in the trap hook group');

  const node = by['on_Snapshot__20_node.bg'];
  assert.equal(node.outcome, 'exited', JSON.stringify(node));
  assert.equal(node.after, 'TERM');
  assert.deepEqual(node.outputFiles, ['hook.js', 'output.txt']);
  assert.ok(!alive(nodeHook.pid));

  const stale = by['on_Snapshot__30_old.bg'];
  assert.equal(stale.outcome, 'stale', JSON.stringify(stale));
  assert.equal(stale.reason, 'mtime-skew');
  assert.deepEqual(stale.signals, []);
  assert.equal(stale.pidFileRemoved, true);
  assert.ok(!fs.existsSync(stalePid));
  // The bystander got nothing: alive, and its traps never ran.
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(alive(bystander.pid), 'the bystander was killed');
  assert.ok(!fs.existsSync(marker), `the bystander received: ${fs.existsSync(marker) && fs.readFileSync(marker, 'utf8')}`);

  // The JSONL index: one Process and one ArchiveResult line per finalized hook, as abx-dl writes.
  const lines = readIndex(index);
  assert.equal(lines.length, 6, JSON.stringify(lines));
  const results = lines.filter((l) => l.type === 'ArchiveResult');
  const processes = lines.filter((l) => l.type === 'Process');
  assert.equal(results.length, 3);
  assert.equal(processes.length, 3);
  const nodeResult = results.find((r) => r.hook_name === 'on_Snapshot__20_node.bg');
  assert.equal(nodeResult.status, 'succeeded');
  assert.equal(nodeResult.output_str, 'hello from the hook');
  assert.equal(nodeResult.plugin, 'nodehook');
  assert.deepEqual(nodeResult.output_files, ['hook.js', 'output.txt']);
  const nodeProcess = processes.find((p) => p.id === nodeResult.process_id);
  assert.deepEqual(nodeProcess.cmd, [NODE, script]);
  assert.equal(nodeProcess.pid, nodeHook.pid);
  assert.equal(nodeProcess.pwd, nodeDir);
  for (const r of results) {
    assert.match(r.id, /^[0-9a-f]{12}-[0-9a-f]{20}$/);
    // A hook that ended by itself (the stale record) has an exit status nobody here learnt:
    // unknown, never a success (issue 45).
    const stale = r.hook_name === 'on_Snapshot__30_old.bg';
    assert.equal(r.status, stale ? 'unknown' : 'succeeded', JSON.stringify(r));
    const p = processes.find((x) => x.id === r.process_id);
    if (stale) assert.equal(p.exit_code, null, JSON.stringify(p));
  }
  // On success the logs are deleted; the .sh is kept.
  assert.ok(!fs.existsSync(path.join(trapDir, 'on_Snapshot__10_trap.bg.stdout.log')));
  assert.ok(fs.existsSync(path.join(trapDir, 'on_Snapshot__10_trap.bg.sh')));
});

test('the event loop keeps ticking during a 2-second schedule (cleanupBackgroundHooks)', async () => {
  const out = tempDir('loop');
  const hook = startHook(path.join(out, 'h'), 'on_Snapshot__10_stubborn.bg', ['bash', '-c', "trap '' TERM; sleep infinity & wait"]);
  assert.ok(await waitFor(() => groupMembers(hook.pid).length >= 2));
  const r = await countTicks(() => pidguard.cleanupBackgroundHooks(out, { isTty: true, noFinalize: true, schedule: 'TERM/2/KILL/1' }));
  assert.equal(r.value[0].outcome, 'exited');
  assert.equal(r.value[0].after, 'KILL');
  // TERM is ignored, so the schedule waits its full 2 s before KILL: a lower bound, not a race.
  assert.ok(r.elapsed >= 1.9, `elapsed ${r.elapsed}s`);
  // A 20 ms timer ran throughout: ~100 ticks; a blocked loop gives 0 and a 2 s gap.
  assert.ok(r.ticks >= 20, `only ${r.ticks} ticks in ${r.elapsed}s`);
  assert.ok(r.maxGap < 1000, `the event loop stalled for ${r.maxGap} ms`);
  assert.deepEqual(groupMembers(hook.pid), []);
});

test('the event loop keeps ticking while terminate() waits', async () => {
  const p = spawnGroup("trap '' TERM; sleep infinity & wait");
  assert.ok(await waitFor(() => groupMembers(p.pid).length >= 2));
  const token = pidguard.startToken(p.pid);
  const r = await countTicks(() => pidguard.terminate(p.pid, { token, schedule: 'TERM/1.5/KILL/2' }));
  assert.equal(r.value.outcome, 'exited');
  assert.ok(r.elapsed >= 1.4, `elapsed ${r.elapsed}s`);
  assert.ok(r.ticks >= 15, `only ${r.ticks} ticks`);
  assert.ok(r.maxGap < 1000, `the event loop stalled for ${r.maxGap} ms`);
});

test('cleanupBackgroundHooksSync blocks the event loop (the counter-check of the test above)', async () => {
  const out = tempDir('sync');
  const hook = startHook(path.join(out, 'h'), 'on_Snapshot__10_stubborn.bg', ['bash', '-c', "trap '' TERM; sleep infinity & wait"]);
  assert.ok(await waitFor(() => groupMembers(hook.pid).length >= 2));
  let ticks = 0;
  const t = setInterval(() => ticks++, 20);
  const t0 = Date.now();
  const reports = pidguard.cleanupBackgroundHooksSync(out, { isTty: true, noFinalize: true, schedule: 'TERM/1/KILL/2' });
  const elapsed = Date.now() - t0;
  clearInterval(t);
  assert.equal(reports[0].outcome, 'exited');
  assert.ok(elapsed >= 900, `elapsed ${elapsed} ms`);
  assert.equal(ticks, 0);
});

test('isTty false (the default) also prints the two JSON lines to stdout, as abx-dl does', () => {
  const out = tempDir('tty');
  const dir = path.join(out, 'h');
  fs.mkdirSync(dir);
  // A stale record (no such process): finalized as succeeded without any signal.
  fs.writeFileSync(path.join(dir, 'on_Snapshot__10_gone.bg.pid'), '99999999');
  const index = path.join(out, 'index.jsonl');
  const code = `require(${JSON.stringify(path.join(ROOT, 'node'))})` +
    `.cleanupBackgroundHooks(${JSON.stringify(out)}, { indexPath: ${JSON.stringify(index)} })` +
    '.then((r) => process.stderr.write(r[0].outcome))';
  const stdout = execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  const lines = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.type), ['Process', 'ArchiveResult']);
  assert.equal(lines[1].hook_name, 'on_Snapshot__10_gone.bg');
  assert.deepEqual(readIndex(index), lines);
});

test('cleanup of a directory that is not there rejects with PIDGUARD_NOT_FOUND and the path', async () => {
  const missing = path.join(tempDir('nodir'), 'missing');
  await assert.rejects(pidguard.cleanupBackgroundHooks(missing), (e) => {
    assert.equal(e.code, 'PIDGUARD_NOT_FOUND');
    assert.ok(e.message.includes(missing));
    return true;
  });
  assert.throws(() => pidguard.cleanupBackgroundHooksSync(missing), (e) => e.code === 'PIDGUARD_NOT_FOUND');
});

test('hook names that are not UTF-8 read apart in reports (core\'s lossless form: \\xNN, a backslash doubled)', async () => {
  const out = tempDir('bytes');
  const plug = path.join(out, 'p');
  fs.mkdirSync(plug, { recursive: true });
  const names = [Buffer.from('on_a\xff.bg', 'latin1'), Buffer.from('on_a\xfe.bg', 'latin1'), Buffer.from('on_a\\xff.bg')];
  for (const n of names) {
    const file = Buffer.concat([Buffer.from(plug + '/'), n, Buffer.from('.pid')]);
    fs.writeFileSync(file, '4194303');
    fs.utimesSync(file, 1e9, 1e9);
  }
  const index = path.join(out, 'index.jsonl');
  const reports = await pidguard.cleanupBackgroundHooks(out, { indexPath: index, isTty: true });
  assert.deepEqual(reports.map((r) => r.name).sort(), ['on_a\\\\xff.bg', 'on_a\\xfe.bg', 'on_a\\xff.bg']);
  assert.deepEqual(reports.map((r) => path.basename(r.pidFile)).sort(), ['on_a\\\\xff.bg.pid', 'on_a\\xfe.bg.pid', 'on_a\\xff.bg.pid']);
  const hookNames = readIndex(index).filter((l) => l.type === 'ArchiveResult').map((l) => l.hook_name).sort();
  assert.deepEqual(hookNames, ['on_a\\\\xff.bg', 'on_a\\xfe.bg', 'on_a\\xff.bg']);
});
