'use strict';
// abx-plugins' `acquireSessionLock` (chrome_utils.js) against a lock whose holder died and whose
// pid was since taken by another process.
//
// Run as `node session_lock.js CHROME_UTILS_JS` inside a private PID namespace, as root
// (scripts/test-integrations.sh): a child takes the lock through the given chrome_utils.js and
// exits without releasing it; its pid is then given to a stranger (`sleep infinity`, through
// ns_last_pid); this process then asks for the lock with abx-plugins' default 10 s timeout.
// Prints one JSON object: `waited_s` (seconds until the call returned or threw), `taken`
// (whether it got the lock), `reused` (the stranger got the holder's pid).
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync, spawn } = require('child_process');

const utilsPath = path.resolve(process.argv[2]);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-lock-'));
const lockFile = path.join(dir, 'session.lock');

// The holder: takes the lock and exits without releasing it (a crash, a SIGKILL).
const holder = spawnSync(process.execPath, ['-e', `
  const { acquireSessionLock } = require(${JSON.stringify(utilsPath)});
  acquireSessionLock(${JSON.stringify(lockFile)}).then(() => process.exit(0));
`], { stdio: ['ignore', 'inherit', 'inherit'] });
if (holder.status !== 0) throw new Error(`the holder failed: ${holder.status}`);
const held = JSON.parse(fs.readFileSync(lockFile, 'utf8'));

// The stranger takes the holder's pid (the next pid handed out is ns_last_pid + 1).
fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(held.pid - 1));
const stranger = spawn('sleep', ['infinity'], { stdio: 'ignore' });
const reused = stranger.pid === held.pid;

const { acquireSessionLock } = require(utilsPath);
const t0 = process.hrtime.bigint();
acquireSessionLock(lockFile).then(
  (release) => finish(true, release),
  () => finish(false, null),
);

function finish(taken, release) {
  const waited = Number(process.hrtime.bigint() - t0) / 1e9;
  if (release) release();
  stranger.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify({ waited_s: Math.round(waited * 10) / 10, taken, reused, startToken: Boolean(held.startToken) }));
  process.exit(0);
}
