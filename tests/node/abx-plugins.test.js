'use strict';
// require('pidguard/abx-plugins'): abx-plugins' Chrome helpers with their names and call shapes,
// every rule core's. The names and shapes are compared with abx-plugins 1.13.572's chrome_utils.js
// when that release is installed (scripts/test-abx-plugins.sh installs it into .venv-abx-plugins
// and points ABX_PLUGINS_DIR at its plugins; otherwise that test says why it skipped). The
// side-by-side proof inside abx-plugins' own code is scripts/test-abx-plugins.sh.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { spawnSync, execFileSync } = require('child_process');
const {
  ROOT, pidguard, spawnDetached, spawnGroup, killOurs, alive, groupMembers, waitFor, tempDir, runReadmeExample,
} = require('./helpers');

const abx = require(path.join(ROOT, 'node', 'lib', 'abx-plugins.js'));
const NAMES = ['writePidWithMtime', 'writeCmdScript', 'isProcessAlive', 'killChrome', 'killZombieChrome'];
const ABX_VERSION = '1.13.572';

test.after(killOurs);

/** abx-plugins' `plugins` directory of the pinned release, or why there is none. */
function releasePlugins() {
  let dir = process.env.ABX_PLUGINS_DIR;
  if (!dir) {
    const lib = path.join(ROOT, '.venv-abx-plugins', 'lib');
    const py = fs.existsSync(lib) ? fs.readdirSync(lib).find((d) => d.startsWith('python3')) : null;
    if (py) dir = path.join(lib, py, 'site-packages', 'abx_plugins', 'plugins');
  }
  if (!dir || !fs.existsSync(path.join(dir, 'chrome', 'chrome_utils.js'))) {
    return { why: `abx-plugins ${ABX_VERSION} is not installed (bash scripts/test-abx-plugins.sh installs it into .venv-abx-plugins)` };
  }
  const site = path.resolve(dir, '..', '..');
  if (!fs.existsSync(path.join(site, `abx_plugins-${ABX_VERSION}.dist-info`))) {
    return { why: `the abx-plugins installed in ${site} is not ${ABX_VERSION}` };
  }
  return { dir };
}

/** `name(params)` of each function as written in a source text (`async` noted). */
function signatures(source) {
  const out = {};
  for (const name of NAMES) {
    const m = new RegExp(`^(async )?function ${name}\\(([^)]*)\\)`, 'm').exec(source);
    if (m) out[name] = { async: Boolean(m[1]), params: m[2].replace(/\s+/g, ' ').trim() };
  }
  return out;
}

/** Run `script` in a Node process where the release's chrome_utils.js can be required. */
function withRelease(dir, script) {
  const nm = tempDir('abx-nm'); // abx-plugins' hooks need NODE_MODULES_DIR; nothing is loaded from it here
  return execFileSync(process.execPath, ['-e', `const cu = require(${JSON.stringify(path.join(dir, 'chrome', 'chrome_utils.js'))});\n${script}`],
    { encoding: 'utf8', env: { ...process.env, NODE_MODULES_DIR: nm }, timeout: 60000 });
}

test(`the names and call shapes are abx-plugins ${ABX_VERSION}'s (chrome_utils.js)`, (t) => {
  const rel = releasePlugins();
  if (!rel.dir) return t.skip(rel.why);
  const source = fs.readFileSync(path.join(rel.dir, 'chrome', 'chrome_utils.js'), 'utf8');
  const theirs = signatures(source);
  const ours = signatures(fs.readFileSync(path.join(ROOT, 'node', 'lib', 'abx-plugins.js'), 'utf8'));
  assert.deepEqual(Object.keys(theirs).sort(), [...NAMES].sort(), 'the release defines each name');
  for (const name of NAMES) {
    assert.equal(ours[name].params, theirs[name].params, `${name}(${theirs[name].params})`);
    assert.equal(abx[name].length, new Function(`return function (${theirs[name].params}) {}`)().length, `${name}.length`);
  }
  // What the release exports (isProcessAlive is internal to it: used, not exported).
  const exported = JSON.parse(withRelease(rel.dir, `console.log(JSON.stringify(Object.fromEntries(${JSON.stringify(NAMES)}
    .filter((n) => n in cu).map((n) => [n, { type: typeof cu[n], length: cu[n].length, async: cu[n].constructor.name === 'AsyncFunction' }]))))`));
  assert.deepEqual(Object.keys(exported).sort(), ['killChrome', 'killZombieChrome', 'writeCmdScript', 'writePidWithMtime']);
  for (const [name, e] of Object.entries(exported)) {
    assert.equal(typeof abx[name], e.type, name);
    assert.equal(abx[name].length, e.length, `${name}.length`);
    assert.equal(e.async, theirs[name].async);
  }
  // Theirs are async functions; ours return Promises too (argument errors are thrown at once).
  assert.deepEqual(NAMES.filter((n) => theirs[n].async).sort(), ['killChrome', 'killZombieChrome']);
});

test('killChrome and killZombieChrome return Promises; the others return at once', async () => {
  const sweep = abx.killZombieChrome(path.join(tempDir('abx-shape'), 'none'), { quiet: true });
  assert.ok(sweep instanceof Promise);
  assert.equal(await sweep, 0);
  const gone = spawnSync('true').pid; // reaped: nothing of it is left
  const kill = abx.killChrome(gone);
  assert.ok(kill instanceof Promise);
  assert.equal(typeof await kill, 'boolean');
});

test("require('pidguard/abx-plugins') and import from it resolve through the package's exports", () => {
  const project = tempDir('abx-pkg');
  fs.mkdirSync(path.join(project, 'node_modules'));
  fs.symlinkSync(path.join(ROOT, 'node'), path.join(project, 'node_modules', 'pidguard'));
  const opts = { cwd: project, encoding: 'utf8', timeout: 60000 };
  const cjs = execFileSync(process.execPath, ['-e',
    `const a = require('pidguard/abx-plugins'); console.log(Object.keys(a).join(','), Object.isFrozen(a))`], opts);
  assert.equal(cjs.trim(), `${['spawn', ...NAMES].join(',')} true`);
  const esm = execFileSync(process.execPath, ['--input-type=module', '-e',
    "import abx, { killChrome, isProcessAlive } from 'pidguard/abx-plugins'; console.log(killChrome === abx.killChrome, isProcessAlive(process.pid))"], opts);
  assert.equal(esm.trim(), 'true true');
});

test('writePidWithMtime: the same bytes and mtime as the original, plus the start token', (t) => {
  const dir = tempDir('abx-write');
  const child = spawnGroup('exec sleep infinity');
  const start = Date.now() / 1000;
  const ours = path.join(dir, 'ours.pid');
  abx.writePidWithMtime(ours, child.pid, start);
  assert.equal(fs.readFileSync(ours, 'latin1'), String(child.pid), 'the decimal pid, no newline');
  assert.ok(Math.abs(fs.statSync(ours).mtimeMs - start * 1000) < 1, 'mtime is the start time');
  const check = pidguard.checkPidFile(ours);
  assert.equal(check.valid, true);
  assert.ok(check.token.startsWith('linux1:'), 'the token xattr is written');
  // abx-plugins' own reader of chrome.pid.
  assert.equal(parseInt(fs.readFileSync(ours, 'utf8').trim(), 10), child.pid);
  const rel = releasePlugins();
  if (!rel.dir) return t.diagnostic(`compared with the spec only: ${rel.why}`);
  const theirs = path.join(dir, 'theirs.pid');
  withRelease(rel.dir, `cu.writePidWithMtime(${JSON.stringify(theirs)}, ${child.pid}, ${start})`);
  assert.deepEqual(fs.readFileSync(ours), fs.readFileSync(theirs));
  // The original sets it through a Date, which drops what is below a millisecond (and float
  // error in `start * 1000` can drop one more); ours keeps the seconds given, to the nanosecond.
  assert.ok(Math.abs(fs.statSync(ours).mtimeMs - fs.statSync(theirs).mtimeMs) <= 1);
});

test('writeCmdScript: bash runs the same command as the original writes it', (t) => {
  const dir = tempDir('abx-cmd');
  const args = ['%s\\n', 'a b', "it's", '$HOME', '`id`', 5, ''];
  const file = path.join(dir, 'ours.sh');
  abx.writeCmdScript(file, 'printf', args);
  assert.equal(fs.statSync(file).mode & 0o777, 0o755);
  const text = fs.readFileSync(file, 'utf8');
  assert.ok(text.startsWith('#!/bin/bash\n') && text.endsWith('\n'));
  const printed = execFileSync('bash', [file], { encoding: 'utf8' });
  assert.equal(printed, args.slice(1).map((a) => `${a}\n`).join(''));
  assert.throws(() => abx.writeCmdScript(file, 'x', 5), TypeError);
  assert.throws(() => abx.writeCmdScript(file, 'x', ['a\0b']), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  const rel = releasePlugins();
  if (!rel.dir) return t.diagnostic(`compared with bash only: ${rel.why}`);
  const theirs = path.join(dir, 'theirs.sh');
  withRelease(rel.dir, `cu.writeCmdScript(${JSON.stringify(theirs)}, 'printf', ${JSON.stringify(args)})`);
  assert.equal(execFileSync('bash', [theirs], { encoding: 'utf8' }), printed);
});

test('isProcessAlive: a zombie is not alive, EPERM is; a pid <= 0 names no process', () => {
  assert.equal(abx.isProcessAlive(process.pid), true);
  for (const n of [0, -1, -process.pid, 3.5, NaN]) assert.equal(abx.isProcessAlive(n), false, String(n));
  for (const bad of ['1', null, undefined, {}]) assert.throws(() => abx.isProcessAlive(bad), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  // A zombie: the child has exited; Node cannot reap it while this loop holds the event loop.
  const child = spawnDetached('sh', ['-c', 'exit 0']);
  const t0 = Date.now();
  let state = null;
  while (Date.now() - t0 < 10000) {
    try { state = fs.readFileSync(`/proc/${child.pid}/stat`, 'latin1').split(') ')[1][0]; } catch (_) { state = null; }
    if (state === 'Z') break;
  }
  assert.equal(state, 'Z');
  assert.equal(abx.isProcessAlive(child.pid), false, 'a zombie is gone');
});

test('isProcessAlive: another user\'s process is alive (EPERM from kill(pid, 0))', (t) => {
  if (process.getuid() !== 0) return t.skip('needs root, to run the check as uid 65534');
  const child = spawnGroup('exec sleep infinity');
  const r = spawnSync(process.execPath, ['-e',
    `console.log(require(${JSON.stringify(path.join(ROOT, 'node', 'lib', 'abx-plugins.js'))}).isProcessAlive(${child.pid}))`],
  { uid: 65534, gid: 65534, encoding: 'utf8', cwd: '/', timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'true');
});

test('killChrome: bad arguments throw at once (TypeError, RangeError with the code), nothing runs', async () => {
  const child = spawnGroup('exec sleep infinity');
  for (const bad of ['123', String(child.pid), null, undefined, true, 10n, [child.pid]]) {
    assert.throws(() => abx.killChrome(bad), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }, String(bad));
  }
  for (const bad of [child.pid + 0.5, NaN, Infinity, 2 ** 31]) {
    assert.throws(() => abx.killChrome(bad), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }, String(bad));
  }
  for (const bad of [0, -1, -child.pid, 2 ** 31 - 1]) {
    assert.throws(() => abx.killChrome(bad), { name: 'RangeError', code: 'PIDGUARD_INVALID_ARGUMENT' }, String(bad));
  }
  assert.throws(() => abx.killChrome(child.pid, 5), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => abx.killChrome(child.pid, null, '1000'), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  for (const bad of [-1, NaN, Infinity]) {
    assert.throws(() => abx.killChrome(child.pid, null, bad), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }, String(bad));
  }
  // A wait above core's limit (a day) is refused when core parses the schedule, before any signal.
  await assert.rejects(abx.killChrome(child.pid, null, 1e12), { name: 'RangeError', code: 'PIDGUARD_INVALID_ARGUMENT' });
  assert.equal(alive(child.pid), true, 'nothing was signalled');
});

test('killChrome: a recorded browser is stopped with its group, and its record removed', async () => {
  const dir = tempDir('abx-kill');
  const browser = spawnGroup('sleep infinity & sleep infinity & wait');
  await waitFor(() => groupMembers(browser.pid).length === 3);
  abx.writePidWithMtime(path.join(dir, 'chrome.pid'), browser.pid, Date.now() / 1000);
  assert.equal(await abx.killChrome(browser.pid, dir), true);
  assert.deepEqual(groupMembers(browser.pid), []);
  assert.equal(fs.existsSync(path.join(dir, 'chrome.pid')), false);
});

test('killChrome: our own child is stopped without a record; a TERM-ignoring one by SIGKILL within timeoutMs', async () => {
  const browser = spawnGroup('trap "" TERM; sleep infinity & wait');
  await waitFor(() => groupMembers(browser.pid).length === 2);
  const t0 = Date.now();
  assert.equal(await abx.killChrome(browser.pid, null, 1000), true);
  assert.ok(Date.now() - t0 < 5000);
  assert.deepEqual(groupMembers(browser.pid), []);
});

test('killChrome: our own child whose record core cannot prove (no token, mtime an hour off) is stopped as our child', async () => {
  const dir = tempDir('abx-legacy');
  const browser = spawnGroup('sleep infinity & wait');
  await waitFor(() => groupMembers(browser.pid).length === 2);
  const pidFile = path.join(dir, 'chrome.pid');
  fs.writeFileSync(pidFile, String(browser.pid)); // the original's writer: no token
  fs.utimesSync(pidFile, Date.now() / 1000 - 3600, Date.now() / 1000 - 3600);
  assert.equal(pidguard.checkPidFile(pidFile).reason, 'mtime-skew');
  assert.equal(await abx.killChrome(browser.pid, dir), true);
  assert.deepEqual(groupMembers(browser.pid), []);
  assert.equal(fs.existsSync(pidFile), false, 'judged again once the child is gone: stale, removed');
});

test('killChrome: a pid that is neither recorded nor our child is not signalled (false)', async () => {
  const dir = tempDir('abx-stranger');
  // A process that is not our child: its parent shell exits at once and it is reparented.
  const out = execFileSync('setsid', ['sh', '-c', 'sleep 3600 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' });
  const pid = Number(out.trim());
  const token = pidguard.startToken(pid);
  try {
    assert.equal(await abx.killChrome(pid), false);
    // A chrome.pid naming another process does not make this one the browser.
    const other = spawnGroup('exec sleep infinity');
    abx.writePidWithMtime(path.join(dir, 'chrome.pid'), other.pid, Date.now() / 1000);
    assert.equal(await abx.killChrome(pid, dir), false);
    assert.equal(alive(pid), true);
    assert.equal(alive(other.pid), true);
    assert.equal(fs.existsSync(path.join(dir, 'chrome.pid')), true);
  } finally {
    await pidguard.terminate(pid, { token, schedule: 'KILL/5' });
  }
  // No process at that pid any more: nothing of it is left, so true.
  assert.ok(await waitFor(() => !pidguard.isProcessAlive(pid)));
  assert.equal(await abx.killChrome(pid), true);
});

/** A crawl layout below a fresh root: `<root>/<name>/chrome/`. */
function crawl(root, name) {
  const d = path.join(root, name, 'chrome');
  fs.mkdirSync(d, { recursive: true });
  return d;
}

test('killZombieChrome: a stale crawl\'s browser is stopped; excluded, in-use and undecided ones are left', async () => {
  const root = tempDir('abx-sweep');
  const sweepOpts = { quiet: true, excludeCurrentRuntimeDirs: false };
  const start = () => spawnGroup('sleep infinity & wait');
  // Stale: recorded with its token, no hook.
  const stale = start();
  abx.writePidWithMtime(path.join(crawl(root, 'stale'), 'chrome.pid'), stale.pid, Date.now() / 1000);
  fs.mkdirSync(path.join(root, 'stale', '.persona'));
  // Excluded by the caller.
  const excluded = start();
  abx.writePidWithMtime(path.join(crawl(root, 'current'), 'chrome.pid'), excluded.pid, Date.now() / 1000);
  fs.mkdirSync(path.join(root, 'current', '.persona'));
  // In use: its launch hook's pidfile names a live process.
  const inUse = start();
  const hook = spawnGroup('exec sleep infinity');
  const busy = crawl(root, 'busy');
  abx.writePidWithMtime(path.join(busy, 'chrome.pid'), inUse.pid, Date.now() / 1000);
  abx.writePidWithMtime(path.join(busy, 'on_CrawlSetup__90_chrome_launch.daemon.bg.pid'), hook.pid, Date.now() / 1000);
  // Undecided: a token-less record (the original's writer) whose mtime is an hour off.
  const legacy = start();
  const old = path.join(crawl(root, 'legacy'), 'chrome.pid');
  fs.writeFileSync(old, String(legacy.pid));
  fs.utimesSync(old, Date.now() / 1000 - 3600, Date.now() / 1000 - 3600);
  // A dead hook's pidfile in a stale crawl: not in use, and kept (asking is a probe: it never acts).
  const dead = spawnGroup('exec sleep infinity');
  const deadHook = path.join(crawl(root, 'stale2'), 'on_Snapshot__01_chrome_tab.daemon.bg.pid');
  abx.writePidWithMtime(deadHook, dead.pid, Date.now() / 1000);
  await pidguard.terminate(dead.pid, { token: pidguard.startToken(dead.pid), schedule: 'KILL/5' });
  assert.ok(await waitFor(() => !pidguard.isProcessAlive(dead.pid)));

  const killed = await abx.killZombieChrome(root, { ...sweepOpts, excludeCrawlDirs: [path.join(root, 'current')] });
  assert.equal(killed, 1);
  assert.deepEqual(groupMembers(stale.pid), [], 'the stale crawl\'s browser and its group');
  assert.equal(fs.existsSync(path.join(root, 'stale', 'chrome', 'chrome.pid')), false);
  assert.equal(fs.existsSync(path.join(root, 'stale', '.persona')), true, 'persona directories are left in place');
  assert.equal(alive(excluded.pid), true);
  assert.equal(fs.existsSync(path.join(root, 'current', '.persona')), true);
  assert.equal(alive(inUse.pid), true);
  assert.equal(alive(legacy.pid), true, 'an unproven record sends nothing');
  assert.equal(fs.existsSync(old), true, 'and is kept');
  assert.equal(fs.existsSync(deadHook), true, 'a probe removes nothing');
});

test('killZombieChrome: an excluded session whose hook\'s first process exited while its scope runs is left running', async (t) => {
  // A launcher that exits once its browser is up: the hook's record names a gone process, and
  // its scope still holds the browser. Asking whether the session is in use must not stop it
  // (pinPidFile did: it stopped the scope before answering).
  for (const scope of ['supervisor', 'cgroup']) {
    const root = tempDir(`abx-scope-${scope}`);
    const current = crawl(root, 'current');
    const hookFile = path.join(current, 'on_CrawlSetup__90_chrome_launch.daemon.bg.pid');
    const said = path.join(current, 'browser.pid');
    let s;
    try {
      s = pidguard.spawn(['sh', '-c', `sleep 3600 & echo $! > ${said}.tmp && mv ${said}.tmp ${said}`], hookFile, { scope, cwd: current });
    } catch (e) {
      if (scope === 'cgroup') { t.diagnostic(`cgroup: skipped, no leaf can be made here: ${e.message}`); continue; }
      throw e;
    }
    assert.ok(await waitFor(() => fs.existsSync(said), 20000), `${scope}: the browser started`);
    const browser = Number(fs.readFileSync(said, 'utf8').trim());
    assert.ok(await waitFor(() => !alive(s.pid), 20000), `${scope}: the launcher exited`);
    const probe = pidguard.probePidFile(hookFile);
    assert.equal(probe.running, true, `${scope}: ${JSON.stringify(probe)}`);
    assert.ok(probe.scopeMembers >= 1, `${scope}: ${JSON.stringify(probe)}`);
    const browserRecord = path.join(current, 'chrome.pid');
    abx.writePidWithMtime(browserRecord, browser, Date.now() / 1000);
    await abx.killZombieChrome(root, { quiet: true, excludeCurrentRuntimeDirs: false, excludeSessionDirs: [path.dirname(current)] });
    assert.equal(alive(browser), true, `${scope}: the current session's browser was killed by the sweep`);
    assert.equal(fs.existsSync(hookFile), true, `${scope}: the hook's record was removed`);
    await pidguard.stopPidFile(hookFile, { schedule: 'TERM/5/KILL/5' });
    assert.ok(await waitFor(() => !alive(browser), 10000), `${scope}: the stop reached the scope`);
  }
});

test('killZombieChrome: a missing or malformed chrome.pid is skipped, never a throw; bad options throw at once', async () => {
  const root = tempDir('abx-malformed');
  const victim = spawnGroup('exec sleep infinity');
  crawl(root, 'none');
  const contents = ['', 'abc', `${victim.pid}abc`, `${victim.pid} ${victim.pid}`, `-${victim.pid}`, '0', '1e3', `+${victim.pid}`];
  contents.forEach((c, i) => fs.writeFileSync(path.join(crawl(root, `bad${i}`), 'chrome.pid'), c));
  fs.mkdirSync(path.join(crawl(root, 'dirpid'), 'chrome.pid'));
  assert.equal(await abx.killZombieChrome(root, { quiet: true, excludeCurrentRuntimeDirs: false }), 0);
  assert.equal(alive(victim.pid), true);
  contents.forEach((c, i) => assert.equal(fs.readFileSync(path.join(root, `bad${i}`, 'chrome', 'chrome.pid'), 'utf8'), c, 'kept'));
  assert.equal(await abx.killZombieChrome(path.join(root, 'no-such-dir'), { quiet: true }), 0);
  assert.throws(() => abx.killZombieChrome(5), { name: 'TypeError' });
  assert.throws(() => abx.killZombieChrome(root, 'quiet'), { name: 'TypeError' });
  assert.throws(() => abx.killZombieChrome(root, { excludeCrawlDirs: root }), { name: 'TypeError' });
});

test('lib/abx-plugins.d.ts type-checks real usage (tsc --strict), from CommonJS and from ESM', (t) => {
  const tools = path.join(ROOT, 'node', 'node_modules');
  const tsc = path.join(tools, '.bin', 'tsc');
  if (!fs.existsSync(tsc)) return t.skip(`no TypeScript compiler at ${tsc}: run scripts/setup-node.sh`);
  const usage = `
import abx, { writePidWithMtime, writeCmdScript, isProcessAlive, killChrome, killZombieChrome } from 'pidguard/abx-plugins';
writePidWithMtime('/tmp/chrome.pid', 5, Date.now() / 1000);
writeCmdScript('/tmp/cmd.sh', '/usr/bin/chromium', ['--headless=new', 1]);
const a: boolean = isProcessAlive(5);
const b: Promise<boolean> = killChrome(5, '/tmp/chrome', 10000);
const c: Promise<boolean> = abx.killChrome(5);
const d: Promise<number> = killZombieChrome('/data', { excludeCrawlDirs: ['/data/c1'], quiet: true });
const e: Promise<number> = killZombieChrome();
// @ts-expect-error a pid is a number
killChrome('5');
// @ts-expect-error the exclusions are a list
killZombieChrome('/data', { excludeCrawlDirs: '/data/c1' });
export { a, b, c, d, e };
`;
  const dir = tempDir('abx-tsc');
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.join(ROOT, 'node'), path.join(dir, 'node_modules', 'pidguard'));
  fs.writeFileSync(path.join(dir, 'use.cts'), usage);
  fs.writeFileSync(path.join(dir, 'use.mts'), usage);
  const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
    '--types', 'node', '--typeRoots', path.join(tools, '@types'), 'use.cts', 'use.mts'];
  try {
    execFileSync(tsc, args, { cwd: dir, encoding: 'utf8' });
  } catch (err) {
    assert.fail(`tsc failed:\n${err.stdout}${err.stderr}`);
  }
});

test("docs/node.md's abx-plugins example runs and prints what its comments say", () => {
  const { out, expected } = runReadmeExample('abx-plugins');
  assert.ok(expected.length >= 2);
  assert.deepEqual(out, expected);
});

// --- spawn: the launcher's scoped spawn ----------------------------------------------------------

/** Live (not zombie) processes whose environment holds `marker` (an escapee has no parent left). */
function liveWithMarker(marker) {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      if (!fs.readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(marker)) continue;
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
      if (!/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))) out.push(Number(name));
    } catch (_) { /* gone meanwhile */ }
  }
  return out;
}

/** End what is left of one test's tree, each process pinned by a pidfd before its SIGKILL. */
function endMarked(marker) {
  for (const p of liveWithMarker(marker)) {
    try {
      const ref = pidguard.ProcessRef.open(p, null, 'lenient');
      try { ref.signal('KILL'); } finally { ref.close(); }
    } catch (_) { /* gone meanwhile */ }
  }
}

test("spawn: launchChromium's call shape — pid, output streams, 'exit' with (code, signal), kill through a pin", async (t) => {
  const marker = `PIDGUARD_TEST_MARKER=abx-spawn-${process.pid}`;
  process.env.PIDGUARD_TEST_MARKER = marker.split('=')[1];
  t.after(() => endMarked(marker));
  const child = abx.spawn('sh', ['-c', 'echo to-out; echo to-err >&2; exit 7'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  assert.ok(Number.isInteger(child.pid) && child.pid > 0);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  assert.deepEqual([code, signal], [7, null]);
  await new Promise((resolve) => (child.stdout.closed && child.stderr.closed ? resolve() : child.once('close', resolve)));
  assert.equal(out, 'to-out\n');
  assert.equal(err, 'to-err\n');
  assert.equal(child.kill(), false, 'nothing is sent once it has exited');

  const sleeper = abx.spawn('sleep', ['300'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise((resolve) => sleeper.once('exit', (c, s) => resolve([c, s])));
  assert.equal(sleeper.kill('SIGTERM'), true);
  assert.deepEqual(await exited, [null, 'SIGTERM']);
  assert.equal(sleeper.killed, true);

  const missing = abx.spawn('/nonexistent/chromium', [], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  assert.equal(missing.pid, undefined);
  const e = await new Promise((resolve) => missing.once('error', resolve));
  assert.equal(e.code, 'PIDGUARD_NOT_FOUND');
  assert.throws(() => abx.spawn('sh', ['-c', 'true'], { uid: 0 }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => abx.spawn('sh', ['-c', 'true'], { env: 'A=1' }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => abx.spawn(5), { code: 'ERR_INVALID_ARG_TYPE' });

  // env as child_process reads it: the whole environment, undefined left out, others strings.
  const withEnv = abx.spawn('/usr/bin/env', [], { stdio: ['ignore', 'pipe', 'ignore'], env: { A: 'x y', N: 3, U: undefined } });
  let envOut = '';
  withEnv.stdout.on('data', (d) => { envOut += d; });
  assert.deepEqual(await new Promise((resolve) => withEnv.once('exit', (c, s) => resolve([c, s]))), [0, null]);
  await new Promise((resolve) => (withEnv.stdout.closed ? resolve() : withEnv.once('close', resolve)));
  assert.deepEqual(envOut.split('\n').filter(Boolean), ['A=x y', 'N=3']);
});

test('spawn + writePidWithMtime: chrome.pid carries the scope, and killChrome stops a setsid escapee', async (t) => {
  const marker = `PIDGUARD_TEST_MARKER=abx-escapee-${process.pid}`;
  process.env.PIDGUARD_TEST_MARKER = marker.split('=')[1];
  t.after(() => endMarked(marker));
  const outputDir = tempDir('abx-launch');
  const child = abx.spawn('sh', ['-c', "setsid sh -c 'exec sleep 3600' </dev/null >/dev/null 2>&1 & exec sleep infinity"],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const pidFile = path.join(outputDir, 'chrome.pid');
  abx.writePidWithMtime(pidFile, child.pid, Date.now() / 1000);
  assert.equal(fs.readFileSync(pidFile, 'latin1'), String(child.pid), "abx-plugins' bytes");
  const pin = pidguard.pinPidFile(pidFile);
  assert.ok(pin instanceof pidguard.ProcessRef, 'the record is proven');
  const scope = pin.scope;
  pin.close();
  assert.ok(scope === 'cgroup' || scope === 'supervisor', `chrome.pid records the scope (${scope})`);
  assert.ok(await waitFor(() => liveWithMarker(marker).length >= 2, 10000), 'the escapee started');
  const escapee = liveWithMarker(marker).find((p) => p !== child.pid);
  assert.notEqual(pidguard.lookup(escapee).pgid, child.pid, 'the escapee left the group');
  assert.equal(await abx.killChrome(child.pid, outputDir, 4000), true);
  assert.ok(await waitFor(() => liveWithMarker(marker).length === 0, 5000), `left: ${liveWithMarker(marker)}`);
  assert.equal(fs.existsSync(pidFile), false, 'the record is removed');
  await exited;
});

test('processesRunning: core lists the live processes whose command line names a string, with their cwd; killZombieChrome reads no /proc itself', async () => {
  const dir = tempDir('abx-running');
  const marker = `pidguard-running-marker-${process.pid}`;
  const p = spawnGroup(`exec -a ${marker} sleep 300`, { cwd: dir });
  assert.ok(await waitFor(() => pidguard.processesRunning([marker]).length === 1, 10000), 'listed');
  const [found] = pidguard.processesRunning([marker]);
  assert.equal(found.pid, p.pid);
  assert.equal(fs.realpathSync(found.cwd), fs.realpathSync(dir));
  process.kill(-p.pid, 'SIGKILL');
  assert.ok(await waitFor(() => pidguard.processesRunning([marker]).length === 0, 10000), 'gone once killed');
  const source = fs.readFileSync(path.join(ROOT, 'node', 'lib', 'abx-plugins.js'), 'utf8');
  assert.doesNotMatch(source, /['`]\/proc/, 'abx-plugins.js opens no /proc path itself');
});

test('killZombieChrome: a hook record replaced by a FIFO, a directory, a symlink or an unreadable chrome directory keeps its session in use', async () => {
  // A user who owns the session folder replaces root's hook record: the record cannot be
  // used, and an unusable record means "in use" (core's decision table): the browser runs on.
  const cases = {
    fifo: (f) => execFileSync('mkfifo', [f]),
    directory: (f) => fs.mkdirSync(f),
    symlink: (f) => fs.symlinkSync('/nonexistent', f),
  };
  for (const [name, plant] of Object.entries(cases)) {
    const root = tempDir(`abx-unusable-${name}`);
    const browser = spawnGroup('sleep infinity & wait');
    const dir = crawl(root, 'session');
    abx.writePidWithMtime(path.join(dir, 'chrome.pid'), browser.pid, Date.now() / 1000);
    plant(path.join(dir, 'on_CrawlSetup__90_chrome_launch.daemon.bg.pid'));
    const r = pidguard.recordsInUse(dir, { prefix: 'on_', contains: 'chrome_', suffix: '.pid', except: ['chrome.pid'] });
    assert.equal(r.inUse, true, `${name}: ${JSON.stringify(r)}`);
    assert.equal(r.records, 1, name);
    const killed = await abx.killZombieChrome(root, { quiet: true, excludeCurrentRuntimeDirs: false });
    assert.equal(killed, 0, name);
    assert.equal(alive(browser.pid), true, `${name}: the sweep killed the browser of a session whose hook record is unusable`);
  }
  // A chrome directory core cannot list (here: one that vanished) counts as in use too.
  const gone = pidguard.recordsInUse(path.join(tempDir('abx-unlisted'), 'no-such-chrome'));
  assert.equal(gone.inUse, true);
  assert.match(gone.error, /cannot be listed/);
});

test('killZombieChrome: folder names reach the log lines escaped by core (no terminal escape, no forged line)', async () => {
  const root = tempDir('abx-escapes');
  const evil = 'c\x1b]0;PWNED\x07\x1b[2J\n[+] all clear';
  const browser = spawnGroup('sleep infinity & wait');
  abx.writePidWithMtime(path.join(crawl(root, evil), 'chrome.pid'), browser.pid, Date.now() / 1000);
  fs.mkdirSync(path.join(root, evil, '.persona'));
  const lines = [];
  const orig = console.error;
  console.error = (line) => lines.push(String(line));
  let killed;
  try {
    killed = await abx.killZombieChrome(root, { excludeCurrentRuntimeDirs: false });
  } finally {
    console.error = orig;
  }
  assert.equal(killed, 1);
  const out = lines.join('\n');
  assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(out), `a control character reached the log: ${JSON.stringify(out)}`);
  assert.ok(!out.split('\n').includes('[+] all clear'), `a forged line: ${JSON.stringify(out)}`);
  assert.ok(out.includes('c\\x1b]0;PWNED\\x07\\x1b[2J\\n[+] all clear'), JSON.stringify(out));
  assert.equal(pidguard.printable('a\nb\x1b'), 'a\\nb\\x1b');
  assert.equal(pidguard.printablePath(Buffer.from([0x61, 0xff, 0x0a])), 'a\\xff\\n');
});
