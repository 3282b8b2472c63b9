'use strict';
// Run by reuse.test.js in a private PID namespace (`unshare --pid --fork --mount-proc bash -c`;
// bash is PID 1 there and reaps orphans, which Node would not):
// a real PID reuse that touches nothing outside. For each round: start a hook as a spawner does,
// record it (with its token), kill it and let Node reap it, then force its pid onto a bystander
// group leader with the *same* command line (writing pid-1 to ns_last_pid), so that the
// command check and the mtime rule both say "same process": only the start token can tell.
// Then run cleanupBackgroundHooks and report what happened to the bystander. Prints one JSON line.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const pidguard = require(process.argv[2]);
const rounds = Number(process.argv[3] || 5);
// `drop-token` rewrites each pidfile as the Python original would (no xattr): the manual
// break-the-guard check. Then the command and mtime checks pass and the bystander is killed.
const dropToken = process.argv[4] === 'drop-token';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const alive = (pid) => {
  try { return !fs.readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].startsWith('Z'); } catch { return false; }
};

/** Whether any process, zombies included, has `n` as its process group or session. */
function holdsNumber(n) {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let st;
    try { st = fs.readFileSync(`/proc/${name}/stat`, 'latin1'); } catch { continue; }
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    if (Number(f[2]) === n || Number(f[3]) === n) return true;
  }
  return false;
}

async function round(i) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `pidguard-reuse-${i}-`));
  const marker = path.join(dir, 'bystander-got-signal');
  const argv = ['bash', '-c', `trap 'echo TERM >> ${marker}' TERM; while :; do sleep 0.05; done`];
  const name = 'on_Snapshot__10_reuse.bg';
  pidguard.writeCmdFile(path.join(dir, `${name}.sh`), argv);
  const hook = spawn(argv[0], argv.slice(1), { detached: true, stdio: 'ignore', cwd: dir });
  pidguard.writePidFileWithMtime(path.join(dir, `${name}.pid`), hook.pid, Date.now() / 1000);
  const hadToken = pidguard.checkPidFile(path.join(dir, `${name}.pid`)).token !== undefined;
  if (dropToken) {
    // The same record as the original Python writes it: a new file (so no xattr), mtime = start.
    const pf = path.join(dir, `${name}.pid`);
    const { mtimeMs } = fs.statSync(pf);
    fs.unlinkSync(pf);
    fs.writeFileSync(pf, String(hook.pid));
    fs.utimesSync(pf, mtimeMs / 1000, mtimeMs / 1000);
  }
  const old = hook.pid;
  process.kill(-old, 'SIGKILL'); // our own hook's group, not yet reaped
  await new Promise((r) => hook.on('exit', r));
  // The number stays allocated while any process (a zombie too) has it as its group or session:
  // wait until the hook's killed children are reaped (by the bash that is PID 1 here).
  while (fs.existsSync(`/proc/${old}`) || holdsNumber(old)) await sleep(2);
  // The next fork gets `old`: a small shell writes ns_last_pid and forks the bystander right
  // away (as its own group leader), leaving no room for another allocation in between.
  const launcher = spawn('bash', ['-c', `echo ${old - 1} > /proc/sys/kernel/ns_last_pid; setsid "$@" & echo $!`, 'launch', ...argv],
    { stdio: ['ignore', 'pipe', 'inherit'], cwd: dir });
  const got = Number(await new Promise((r) => launcher.stdout.once('data', (d) => r(String(d).trim()))));
  await new Promise((r) => launcher.on('exit', r));
  const bystander = { pid: got };
  const reused = got === old;
  await sleep(30);
  let report = null;
  if (reused) {
    [report] = await pidguard.cleanupBackgroundHooks(dir, { isTty: true, noFinalize: true, schedule: 'TERM/0.5/KILL/1' });
    await sleep(100);
  }
  const result = {
    reused,
    old,
    got: bystander.pid,
    hadToken,
    outcome: report && report.outcome,
    reason: report && report.reason,
    signals: report && report.signals,
    bystanderAlive: alive(bystander.pid),
    bystanderGotTerm: fs.existsSync(marker),
  };
  // The bystander is ours (started just above; orphaned to us, PID 1 here, and never reaped), so
  // its group number is still its own.
  try { process.kill(-bystander.pid, 'SIGKILL'); } catch { /* gone */ }
  fs.rmSync(dir, { recursive: true, force: true });
  return result;
}

async function main() {
  // Warm up libuv's thread pool first: its threads take pids too, and must not take `old`.
  await pidguard.cleanupBackgroundHooks(os.tmpdir(), { pattern: 'no-such-file-*', isTty: true });
  const results = [];
  for (let i = 0; i < rounds; i++) results.push(await round(i));
  console.log(JSON.stringify(results));
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
