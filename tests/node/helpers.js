'use strict';
// Helpers for the Node tests. Every process started here is tracked and, if still running when
// the test file ends, killed by its own pid/group (never by name): `killOurs()` in an `after` hook.
// Detached children get their own session and process group (setsid), like a spawner's hooks.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const pidguard = require(path.join(ROOT, 'node'));

const started = [];

/** `child_process.spawn(cmd, args, { detached: true })`, tracked for `killOurs`. */
function spawnDetached(cmd, args, opts = {}) {
  const child = spawn(cmd, args, { detached: true, stdio: 'ignore', ...opts });
  started.push(child);
  child.on('error', () => {});
  return child;
}

/** `bash -c script` as the leader of its own process group. */
function spawnGroup(script, opts = {}) {
  return spawnDetached('bash', ['-c', script], opts);
}

/** Whether Node has not reaped the child yet (so its pid, and its group number, are still ours). */
function notReaped(child) {
  return child.exitCode === null && child.signalCode === null;
}

/** Kill, by group, every child we started that Node has not reaped yet. */
function killOurs() {
  for (const c of started) {
    if (c.pid && notReaped(c)) {
      // The leader is not reaped, so the group number cannot belong to anyone else.
      try { process.kill(-c.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
  }
}

function statFields(pid) {
  let s;
  try { s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1'); } catch { return null; }
  return s.slice(s.lastIndexOf(')') + 2).split(' ');
}

/** Whether `pid` exists and is not a zombie. */
function alive(pid) {
  const f = statFields(pid);
  return f !== null && f[0] !== 'Z';
}

/** Live (non-zombie) members of process group `pgid`, from /proc. */
function groupMembers(pgid) {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(name);
    if (f && f[0] !== 'Z' && Number(f[2]) === pgid) out.push(Number(name));
  }
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Wait (asynchronously) until `cond()` holds or `ms` pass; returns the last `cond()`. */
async function waitFor(cond, ms = 10000) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (cond()) return true;
    await sleep(20);
  }
  return cond();
}

const tempDirs = [];
process.on('exit', () => {
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A fresh temporary directory, removed when the test file's process exits. */
function tempDir(tag) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `pidguard-node-${tag}-`));
  tempDirs.push(d);
  return d;
}

/** Count event-loop timer ticks while `promiseFn()` runs; the longest gap between ticks too. */
async function countTicks(promiseFn, everyMs = 20) {
  let ticks = 0;
  let last = Date.now();
  let maxGap = 0;
  const t = setInterval(() => {
    const now = Date.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
    ticks++;
  }, everyMs);
  const t0 = Date.now();
  try {
    const value = await promiseFn();
    maxGap = Math.max(maxGap, Date.now() - last);
    return { value, ticks, maxGap, elapsed: (Date.now() - t0) / 1000 };
  } finally {
    clearInterval(t);
  }
}

/**
 * Run the ```js block under `## heading` of docs/node.md (the page's first block when heading is
 * null) as written, with require('pidguard') resolving to node/. Returns the lines it printed and
 * the lines its `console.log(…)  // expected` comments say it prints.
 */
function runReadmeExample(heading) {
  const assert = require('node:assert/strict');
  const { execFileSync } = require('child_process');
  const page = fs.readFileSync(path.join(ROOT, 'docs', 'node.md'), 'utf8');
  let section = page;
  if (heading !== null) {
    section = page.slice(page.indexOf(`\n## ${heading}\n`));
    assert.ok(section.startsWith(`\n## ${heading}\n`), `no "## ${heading}" in docs/node.md`);
  }
  const m = /```js\n([\s\S]*?)```/.exec(section);
  assert.ok(m, `no \`\`\`js block under "## ${heading}"`);
  const dir = tempDir('readme');
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.join(ROOT, 'node'), path.join(dir, 'node_modules', 'pidguard'));
  fs.writeFileSync(path.join(dir, 'example.js'), m[1]);
  const out = execFileSync(process.execPath, ['example.js'], { cwd: dir, encoding: 'utf8', timeout: 60000 }).trim().split('\n');
  const expected = [...m[1].matchAll(/console\.log\(.*\/\/ (.*)$/gm)].map((x) => x[1].trim());
  return { out, expected };
}

module.exports = {
  ROOT, pidguard, spawnDetached, spawnGroup, notReaped, killOurs, alive, groupMembers, sleep, waitFor, tempDir,
  countTicks, runReadmeExample,
};
