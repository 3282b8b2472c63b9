'use strict';
// abx-plugins' chrome_utils.js as released and with pidguard/abx-plugins patched in, side by side:
// each scenario of scenarios.js runs once per copy, each in a fresh Node process, and one table
// shows both columns. Exits 1 when the patched column fails what it must hold (the original's
// failures are what the table is there to show: they are printed, not failed on).
//
// Run by scripts/test-abx-plugins.sh inside a private PID namespace, as root.
const path = require('path');
const { spawnSync } = require('child_process');

const VERSION = process.env.ABX_PLUGINS_VERSION || '?';
const VARIANTS = ['original', 'patched'];

/** What the patched column must show, and what the original is expected to show instead. */
const SCENARIOS = [
  {
    name: 'kill',
    title: '1 launch Chromium as the launcher hook does, then killChrome(pid, outputDir)',
    must: { 'killChrome resolved': true, 'left in its group': 0, 'chrome.pid removed': true },
    bug: {},
  },
  {
    name: 'reuse',
    title: "2 an old crawl's chrome.pid, its pid reused by a bystander (ns_last_pid), killZombieChrome",
    must: { 'bystander alive after sweep': true, 'sweep count': 0 },
    bug: { 'bystander alive after sweep': false },
  },
  {
    name: 'eperm',
    title: "3 another user's live browser (uid 65534), swept by uid 65533 (kill(pid, 0): EPERM)",
    must: { 'browser alive after sweep': true, 'chrome.pid kept': true },
    bug: { 'chrome.pid kept': false },
  },
  {
    name: 'pid1',
    title: "4 an old crawl's chrome.pid naming pid 1, killZombieChrome (in a nested PID namespace)",
    must: { 'bystander alive after sweep': true, 'sweep count': 0, 'chrome.pid kept': true },
    bug: { 'bystander alive after sweep': false },
  },
];

function run(variant, scenario) {
  const r = spawnSync(process.execPath, [path.join(__dirname, 'scenarios.js'), variant, scenario],
    { encoding: 'utf8', timeout: 300000, stdio: ['ignore', 'pipe', 'pipe'] });
  const last = (r.stdout || '').trim().split('\n').pop();
  try {
    return JSON.parse(last);
  } catch (_) {
    return { error: `exit ${r.status} ${r.signal || ''}: ${(r.stderr || '').trim().split('\n').slice(-5).join(' | ')}` };
  }
}

const show = (v) => (v === undefined ? '-' : JSON.stringify(v));
let failed = 0;
const notes = [];
console.log(`\nabx-plugins ${VERSION} chrome_utils.js: original | patched (helpers from pidguard/abx-plugins)`);
for (const s of SCENARIOS) {
  const [orig, ours] = VARIANTS.map((v) => run(v, s.name));
  console.log(`  ${s.title}`);
  for (const [label, res] of [['original', orig], ['patched', ours]]) {
    if (res.skipped) notes.push(`${s.name}/${label}: skipped: ${res.skipped}`);
    if (res.error) notes.push(`${s.name}/${label}: error: ${res.error}`);
  }
  if (ours.error || ours.skipped) failed++;
  const keys = [...new Set([...Object.keys(orig), ...Object.keys(ours)])].filter((k) => k !== 'error' && k !== 'skipped');
  for (const k of keys) {
    let mark = '';
    if (k in s.must && ours[k] !== s.must[k]) {
      mark = '   <- FAILED (patched must be ' + show(s.must[k]) + ')';
      failed++;
    } else if (k in s.bug && orig[k] === s.bug[k]) {
      mark = '   (the original\'s failure, shown)';
    } else if (k in s.bug) {
      mark = '   (note: the original did not fail here this time)';
    }
    console.log(`    ${k.padEnd(28)} ${show(orig[k]).padStart(12)} | ${show(ours[k]).padEnd(12)}${mark}`);
  }
}
for (const n of notes) console.log(`  ${n}`);
console.log(failed ? `\nabx-plugins side by side: FAILED (${failed})` : '\nabx-plugins side by side: the patched column holds');
process.exit(failed ? 1 : 0);
