// A background hook shaped like abx-plugins' Chrome launcher (plugins/chrome/chrome_utils.js):
// Node starts Chromium with `spawn(binary, args, { detached: true })` — a new session, outside
// the hook's process group — writes what it started, and stays alive as the hook.
//
//   node chrome_hook.js CHROMIUM USER_DATA_DIR PORT
//
// Prints one line `browser <pid>` on stdout once spawned. Used by tests/cli/scope_tests.sh and
// core/tests/scopes.rs; never run outside a test.
'use strict';
const { spawn } = require('child_process');

const [binary, userDataDir, port] = process.argv.slice(2);
if (!binary || !userDataDir || !port) {
  console.error('usage: node chrome_hook.js CHROMIUM USER_DATA_DIR PORT');
  process.exit(64);
}
const args = [
  '--headless=new',
  '--no-sandbox', // root cannot use Chromium's sandbox
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-sync',
  '--mute-audio',
  `--user-data-dir=${userDataDir}`,
  `--remote-debugging-port=${port}`,
  '--remote-debugging-address=127.0.0.1',
  'about:blank',
];
const browser = spawn(binary, args, { detached: true, stdio: 'ignore' });
browser.on('error', (e) => {
  console.error(`chrome_hook: spawn ${binary}: ${e.message}`);
  process.exit(1);
});
console.log(`browser ${browser.pid}`);
// The hook stays alive, as abx-dl's background hooks do, until it is stopped.
setInterval(() => {}, 1 << 30);
