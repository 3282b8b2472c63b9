'use strict';
// Run by reuse.test.js as PID 1 of a private PID namespace (`unshare --pid --fork --mount-proc`):
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
  while (fs.existsSync(`/proc/${old}`)) await sleep(1);
  // The next fork gets `old`.
  fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(old - 1));
  const bystander = spawn(argv[0], argv.slice(1), { detached: true, stdio: 'ignore', cwd: dir });
  const reused = bystander.pid === old;
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
  if (bystander.exitCode === null && bystander.signalCode === null) process.kill(-bystander.pid, 'SIGKILL');
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
