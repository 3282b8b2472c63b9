'use strict';
// One scenario of abx-plugins' Chrome helpers, run through one copy of its chrome_utils.js:
//
//   node scenarios.js <variant> <scenario>        prints one JSON object: what was observed
//
// <variant> names the copy (ABX_CHROME_UTILS_<VARIANT> is its path): `original` (as released) or
// `patched` (tests/abx_plugins/chrome_utils.patch applied: the helpers taken from
// `pidguard/abx-plugins`). Scenarios: `kill` (launch Chromium as the launcher hook does, stop it with
// killChrome), `reuse` (an old crawl's chrome.pid whose pid a bystander got, swept by
// killZombieChrome), `eperm` (another user's live browser, swept by an unprivileged third user),
// `pid1` (a chrome.pid that names pid 1, swept).
//
// Run by scripts/test-abx-plugins.sh inside a private PID namespace (`unshare --pid --fork
// --mount-proc`, pid 1 a shell that reaps orphans): `reuse` forces a pid with ns_last_pid, and
// every process here is the test's own. What this file does itself (observing, ending what a
// scenario left) goes through pidguard's addon, never through a bare number; the helpers under
// test are abx-plugins' real functions. Needs root (ns_last_pid, and uids 65534/65533 for `eperm`).
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn, spawnSync } = require('child_process');
const pidguard = require(process.env.PIDGUARD_NODE_DIR || path.join(__dirname, '..', '..', 'node'));

const [variant, scenario, ...rest] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const utilsPath = () => {
  const p = process.env[`ABX_CHROME_UTILS_${String(variant).toUpperCase()}`];
  if (!p) throw new Error(`ABX_CHROME_UTILS_${String(variant).toUpperCase()} is not set`);
  return p;
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `pred` until it holds or `ms` pass (a deadline, not a fixed sleep). Whether it held. */
async function waitFor(pred, ms) {
  const end = Date.now() + ms;
  for (;;) {
    if (await pred()) return true;
    if (Date.now() >= end) return false;
    await sleep(20);
  }
}

/** Every live (non-zombie) process of this PID namespace, from /proc. */
function procs() {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    let stat;
    let status;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
      status = fs.readFileSync(`/proc/${name}/status`, 'latin1');
    } catch (_) {
      continue;
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (f[0] === 'Z' || f[0] === 'X') continue;
    const uid = Number((/^Uid:\s+(\d+)/m.exec(status) || [])[1]);
    out.push({ pid: Number(name), comm, ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]), uid });
  }
  return out;
}

/** Chromium's processes (the browser, its zygotes, renderers and crashpad handlers). */
const browserProcs = () => procs().filter((p) => /^(chromium|chrome|chrome_crashpad|headless_shell)/.test(p.comm));

/** End processes this scenario left, each pinned by a pidfd before its SIGKILL. */
async function endAll(list) {
  for (const p of list) {
    try {
      const ref = pidguard.ProcessRef.open(p.pid, null, 'lenient');
      try { ref.signal('KILL'); } finally { ref.close(); }
    } catch (_) { /* gone meanwhile */ }
  }
  await waitFor(() => list.every((p) => !pidguard.isProcessAlive(p.pid)), 5000);
}

/** `launchChromium` of the variant, with the options the launcher hook passes for a local,
 * headless, sandbox-less browser (root needs --no-sandbox), then the two writes
 * `ensureChromeSession` makes right after it (chrome.pid rewritten in place, cdp_url.txt): the
 * rest of that function is CDP work through puppeteer, which this test does not install. */
async function launch(cu, crawlDir) {
  const outputDir = path.join(crawlDir, 'chrome');
  const r = await cu.launchChromium({
    binary: CHROMIUM,
    outputDir,
    CRAWL_DIR: crawlDir,
    CHROME_USER_DATA_DIR: path.join(crawlDir, 'profile'),
    CHROME_DOWNLOADS_DIR: path.join(crawlDir, 'downloads'),
    PERSONAS_DIR: path.join(crawlDir, 'personas'),
    CHROMEWEBSTORE_EXTENSIONS_DIR: path.join(crawlDir, 'extensions'),
    CHROME_SANDBOX: false,
    CHROME_HEADLESS: true,
    CHROME_USER_AGENT: '',
    CHROME_ARGS: [],
    CHROME_ARGS_EXTRA: [],
    timeoutMs: 60000,
  });
  if (!r.success) throw new Error(`launchChromium failed: ${r.error}`);
  fs.writeFileSync(path.join(outputDir, 'chrome.pid'), String(r.pid));
  fs.writeFileSync(path.join(outputDir, 'cdp_url.txt'), r.cdpUrl);
  return { ...r, outputDir };
}

/** A fresh directory for one scenario, readable by everyone (the `eperm` users too). */
function scratch(name) {
  const d = fs.mkdtempSync(path.join(process.env.ABX_SCRATCH || os.tmpdir(), `${variant}-${name}-`));
  fs.chmodSync(d, 0o755);
  return d;
}

// (1) Launch Chromium as the launcher hook does, stop it with killChrome(pid, outputDir).
async function kill() {
  const cu = require(utilsPath());
  const crawl = scratch('kill');
  const r = await launch(cu, crawl);
  const before = browserProcs();
  const ok = await cu.killChrome(r.pid, r.outputDir);
  const atReturn = browserProcs();
  const inGroup = atReturn.filter((p) => p.pgid === r.pid || p.pid === r.pid).length;
  // Helpers outside the group (crashpad handlers: their own session) may exit on their own.
  await waitFor(() => browserProcs().length === 0, 2000);
  const after = browserProcs();
  await endAll(after);
  return {
    'killChrome resolved': ok,
    'browser processes before': before.length,
    'left at return': atReturn.length,
    'left in its group': inGroup,
    'left outside it (setsid)': atReturn.length - inGroup,
    'left 2 s later': after.length,
    'chrome.pid removed': !fs.existsSync(path.join(r.outputDir, 'chrome.pid')),
  };
}

// (2) An old crawl's chrome.pid; its browser died; a bystander got the pid; the sweep runs.
async function reuse() {
  const cu = require(utilsPath());
  const root = scratch('reuse');
  const old = path.join(root, 'crawl-old');
  const current = path.join(root, 'crawl-current');
  fs.mkdirSync(current);
  const r = await launch(cu, old);
  const pid = r.pid;
  // The browser crashes: its whole group dies, Node reaps it, the namespace's pid 1 reaps the
  // rest. Its number is free once no process is left with it as process group or session.
  const exited = new Promise((res) => r.process.once('exit', res));
  const ref = pidguard.ProcessRef.openChild(pid);
  ref.signalGroup('KILL');
  ref.close();
  await exited;
  await endAll(browserProcs());
  const free = await waitFor(() => !procs().some((p) => p.pid === pid || p.pgid === pid || p.sid === pid), 5000);
  if (!free) return { skipped: `pid ${pid} still in use after the browser was killed` };
  // A bystander with its own session gets exactly that pid (ns_last_pid: the next fork's pid - 1).
  let bystander = null;
  for (let i = 0; i < 50 && !bystander; i++) {
    fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
    const c = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    if (c.pid === pid) bystander = c;
    else {
      const gone = new Promise((res) => c.once('exit', res));
      c.kill('SIGKILL'); // our own unreaped child: its pid is still ours
      await gone;
    }
  }
  if (!bystander) return { skipped: `could not place a bystander at pid ${pid}` };
  let bystanderSignal = null;
  bystander.once('exit', (code, sig) => { bystanderSignal = sig || `exit ${code}`; });
  process.env.SNAP_DIR = current;
  process.env.CRAWL_DIR = current;
  const killed = await cu.killZombieChrome(root, { quiet: true, excludeCrawlDirs: [current] });
  // A signal sent to it has been delivered by the time the sweep returns; its exit event follows.
  await waitFor(() => bystanderSignal !== null || pidguard.isProcessAlive(pid), 1000);
  await waitFor(() => bystanderSignal !== null, pidguard.isProcessAlive(pid) ? 0 : 2000);
  const alive = bystanderSignal === null && pidguard.isProcessAlive(pid);
  const endedBy = bystanderSignal;
  if (alive) await endAll([{ pid }]);
  return {
    'bystander at the pid': true,
    'bystander alive after sweep': alive,
    'bystander ended by': endedBy,
    'sweep count': killed,
    'chrome.pid removed': !fs.existsSync(path.join(r.outputDir, 'chrome.pid')),
  };
}

// (3) Another user's (uid 65534) live browser in an old crawl; a third user (uid 65533) sweeps.
async function eperm() {
  const root = scratch('eperm');
  const old = path.join(root, 'crawl-old');
  const current = path.join(root, 'crawl-current');
  const home = path.join(root, 'home');
  for (const d of [old, current, home, path.join(old, 'chrome')]) fs.mkdirSync(d, { recursive: true });
  fs.chownSync(old, 65534, 65534);
  fs.chownSync(home, 65534, 65534);
  // Both users may write in the session's chrome directory (a shared data directory).
  fs.chmodSync(path.join(old, 'chrome'), 0o777);
  const env = { ...process.env, HOME: home, SNAP_DIR: current, CRAWL_DIR: current };
  const launcher = spawn(process.execPath, [__filename, variant, 'eperm-launch', old],
    { uid: 65534, gid: 65534, env, cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  launcher.stdout.on('data', (d) => { out += d; });
  const launched = await waitFor(() => out.includes('\n'), 60000);
  const ours = () => procs().filter((p) => p.uid === 65534);
  if (!launched) {
    launcher.stdin.end();
    await endAll(ours());
    return { skipped: 'the browser did not start as uid 65534' };
  }
  const { pid, error } = JSON.parse(out.split('\n')[0]);
  if (!pid) {
    launcher.stdin.end();
    await endAll(ours());
    return { error: `the launcher (uid 65534) failed: ${error}` };
  }
  const pidFile = path.join(old, 'chrome', 'chrome.pid');
  const sweep = spawnSync(process.execPath, [__filename, variant, 'eperm-sweep', root],
    { uid: 65533, gid: 65533, env: { ...env, HOME: '/' }, cwd: '/', encoding: 'utf8', timeout: 120000 });
  const swept = JSON.parse((sweep.stdout || '').trim().split('\n').pop() || '{}');
  const result = {
    'browser owner uid': 65534,
    'sweeper uid': 65533,
    'sweep count': swept.killed === undefined ? `error: ${sweep.stderr}` : swept.killed,
    'browser alive after sweep': pidguard.isProcessAlive(pid),
    'chrome.pid kept': fs.existsSync(pidFile),
  };
  launcher.stdin.end();
  await waitFor(() => launcher.exitCode !== null || launcher.signalCode !== null, 5000);
  await endAll(ours());
  return result;
}

// The launcher of (3), as uid 65534: launch, say the pid, wait for stdin to close.
async function epermLaunch(crawlDir) {
  const cu = require(utilsPath());
  const r = await launch(cu, crawlDir);
  process.stdout.write(`${JSON.stringify({ pid: r.pid })}\n`);
  await new Promise((res) => { process.stdin.on('end', res); process.stdin.resume(); });
  return null;
}

// The sweeper of (3), as uid 65533.
async function epermSweep(root) {
  const cu = require(utilsPath());
  const killed = await cu.killZombieChrome(root, { quiet: true, excludeCrawlDirs: [path.join(root, 'crawl-current')] });
  return { killed };
}

// (4) An old crawl's chrome.pid that says `1` (a record from a container where the browser ran
// as pid 1, or a planted file), swept. Run in a PID namespace of its own, nested in this one: the
// original's answer reaches every process of its namespace, and the table's runner is outside.
async function pid1() {
  const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'sh', '-c', 'node "$0" "$1" pid1-inner; exit $?', __filename, variant],
    { encoding: 'utf8', timeout: 120000 });
  const last = (r.stdout || '').trim().split('\n').pop();
  try {
    return JSON.parse(last);
  } catch (_) {
    return { error: `the nested namespace: exit ${r.status} ${r.signal || ''} ${(r.stderr || '').trim()}` };
  }
}

async function pid1Inner() {
  const cu = require(utilsPath());
  const root = scratch('pid1');
  const old = path.join(root, 'crawl-old', 'chrome');
  const current = path.join(root, 'crawl-current');
  fs.mkdirSync(old, { recursive: true });
  fs.mkdirSync(current);
  fs.writeFileSync(path.join(old, 'chrome.pid'), '1');
  const bystander = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
  let endedBy = null;
  bystander.once('exit', (code, sig) => { endedBy = sig || `exit ${code}`; });
  process.env.SNAP_DIR = current;
  process.env.CRAWL_DIR = current;
  const killed = await cu.killZombieChrome(root, { quiet: true, excludeCrawlDirs: [current] });
  await waitFor(() => endedBy !== null || pidguard.isProcessAlive(bystander.pid), 1000);
  await waitFor(() => endedBy !== null, pidguard.isProcessAlive(bystander.pid) ? 0 : 2000);
  const alive = endedBy === null;
  const result = {
    'bystander alive after sweep': alive,
    'bystander ended by': endedBy,
    'sweep count': killed,
    'chrome.pid kept': fs.existsSync(path.join(old, 'chrome.pid')),
  };
  if (alive) await endAll([{ pid: bystander.pid }]);
  return result;
}

const SCENARIOS = { kill, reuse, eperm, pid1, 'eperm-launch': epermLaunch, 'eperm-sweep': epermSweep, 'pid1-inner': pid1Inner };

(async () => {
  const run = SCENARIOS[scenario];
  if (!run) throw new Error(`unknown scenario ${scenario}`);
  const result = await run(...rest);
  if (result !== null) process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
})().catch((e) => {
  process.stdout.write(`${JSON.stringify({ error: String(e && e.stack || e) })}\n`);
  process.exit(1);
});
