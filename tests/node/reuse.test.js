'use strict';
// Real PID reuse inside a private PID namespace (see reuse-child.js). The record's pid is
// forced onto a bystander group leader with the same command line, started within milliseconds
// (often within the same 10 ms clock tick): cleanup must judge the record stale and send nothing.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { spawnSync } = require('child_process');
const { ROOT } = require('./helpers');

const probe = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { encoding: 'utf8' });
const why = probe.error ? `unshare: ${probe.error.message}` : probe.status !== 0 ? `unshare refused: ${probe.stderr.trim()}` : null;

test('a reused pid (same command, same start time) is stale and its new owner gets nothing', { skip: why || false }, () => {
  // bash as PID 1 reaps the orphans (killed hook children) that would otherwise keep the number.
  const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'bash', '-c', '"$@"; exit $?', 'init',
    process.execPath, path.join(__dirname, 'reuse-child.js'), path.join(ROOT, 'node'), '8'], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, `reuse-child failed: ${r.stderr}`);
  const rounds = JSON.parse(r.stdout.trim().split('\n').pop());
  const reused = rounds.filter((x) => x.reused);
  assert.ok(reused.length >= 3, `pid reuse was forced in only ${reused.length} of ${rounds.length} rounds: ${r.stdout}`);
  for (const x of rounds) assert.equal(x.hadToken, true, 'the pidfile carries no token: no user xattrs on this file system?');
  for (const x of reused) {
    assert.equal(x.outcome, 'stale', JSON.stringify(x));
    assert.equal(x.reason, 'mismatch', JSON.stringify(x));
    assert.deepEqual(x.signals, []);
    assert.equal(x.bystanderAlive, true, JSON.stringify(x));
    assert.equal(x.bystanderGotTerm, false, JSON.stringify(x));
  }
});
