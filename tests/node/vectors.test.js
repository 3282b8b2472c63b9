'use strict';
// The Node runner of the shared conformance vectors (tests/vectors/*.json; schema in
// tests/vectors/README.md). Every case is set up on real processes by the shared fixture
// (core/examples/vector_fixture.rs, built by cargo); the call goes through this binding
// (require('pidguard')); the answer is normalised exactly as the other three runners normalise
// theirs and compared with the case's `expect`. Prints
// `vectors (node): N passed, N failed, N skipped`.
//
// scripts/test-node.sh runs this file inside a private PID namespace (tests/vectors/in-pidns.sh),
// where the pid-reuse cases can force a pid onto a bystander; elsewhere they are skipped.

const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { spawn, execFileSync } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const pidguard = require(path.join(ROOT, 'node'));

function fixturePath() {
  if (process.env.PIDGUARD_VECTOR_FIXTURE) return process.env.PIDGUARD_VECTOR_FIXTURE;
  const target = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target');
  const p = path.join(target, 'debug', 'examples', 'vector_fixture');
  if (!fs.existsSync(p)) {
    execFileSync('cargo', ['build', '-q', '-p', 'pidguard-core', '--example', 'vector_fixture'], { cwd: ROOT, stdio: 'inherit' });
  }
  return p;
}

/** The fixture process, one JSON reply per request line. */
function startFixture() {
  const child = spawn(fixturePath(), ['serve', '--vectors', path.join(ROOT, 'tests', 'vectors'), '--caller', String(process.pid)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (l) => waiting.shift()(JSON.parse(l)));
  return {
    ask(req) {
      return new Promise((resolve) => {
        waiting.push(resolve);
        child.stdin.write(req + '\n');
      });
    },
    close() {
      child.stdin.end();
      return new Promise((resolve) => child.on('close', resolve));
    },
  };
}

/** The error-kind slug of a thrown error: pidguard's `.kind`; the binding's own argument range
 * checks (RangeError, made before core is called) count as invalid-argument. */
function errorSlug(e) {
  if (e && typeof e.kind === 'string') return e.kind;
  if (e instanceof RangeError) return 'invalid-argument';
  throw e;
}

async function terminate(s) {
  let r;
  try {
    r = await pidguard.terminate(s.pid, { token: s.token ?? undefined, policy: s.policy, schedule: s.schedule });
  } catch (e) {
    if (e && e.code === 'PIDGUARD_REFUSED') return { outcome: 'refused', refusal: e.refusal };
    if (e && e.code === 'PIDGUARD_NO_SUCH_PROCESS') return { outcome: 'already-gone' };
    return { error: errorSlug(e) };
  }
  const out = { outcome: r.outcome, elapsed: r.elapsed };
  if (r.outcome === 'exited') out.after = r.after;
  if (r.outcome === 'refused') out.refusal = r.refusal;
  return out;
}

/** Make the case's call through the binding; the answer as the other runners give it, or
 * `{ skip: reason }` when this binding has no such call. */
async function call(s) {
  const opts = { cmdFile: s.cmd_file ?? undefined, tolerance: s.tolerance };
  const guarded = (f) => {
    try {
      return f();
    } catch (e) {
      return { error: errorSlug(e) };
    }
  };
  switch (s.call) {
    case 'validate':
      return guarded(() => ({ valid: pidguard.validatePidFile(s.pid_file, opts) }));
    case 'check':
      return guarded(() => {
        const c = pidguard.checkPidFile(s.pid_file, opts);
        return { valid: c.valid, reason: c.reason, pid: c.pid ?? null, verdict: c.verdict ?? null, verdict_reason: c.verdictReason ?? null };
      });
    case 'write':
      return guarded(() => {
        pidguard.writePidFileWithMtime(s.pid_file, s.pid, Number(s.start_time));
        return { error: null };
      });
    case 'terminate':
      return terminate(s);
    case 'cleanup':
      return guarded(() => {
        const reports = pidguard.cleanupBackgroundHooksSync(s.dir, { isTty: true, schedule: s.schedule, tolerance: s.tolerance });
        const r = reports.find((x) => x.pidFile === s.pid_file);
        if (!r) return { outcome: 'not-reported' };
        return { outcome: r.outcome, reason: r.reason, pid_file_removed: r.pidFileRemoved, refusal: r.refusal ?? null };
      });
    case 'guard_read':
    case 'guard_check':
    case 'guard_create':
      if (!pidguard.guard) return { skip: 'the Node binding has no guard API yet (another branch adds it)' };
      return guardCall(s);
    default:
      throw new Error(`unknown call ${s.call}`);
  }
}

/** The guard calls, once the binding has them (`guard.read/check/create`). */
function guardCall(s) {
  const g = pidguard.guard;
  try {
    if (s.call === 'guard_read') {
      const e = g.read(s.pid_file);
      return { pid: e.pid, start_token: e.startToken };
    }
    if (s.call === 'guard_check') {
      const v = g.check(s.pid_file);
      return { found: v.found, pid: v.entry ? v.entry.pid : null, verdict: v.identity ?? v.verdict ?? null, verdict_reason: v.reason ?? null };
    }
    g.create(s.pid_file, { pid: s.pid, startToken: s.token ?? '' });
    return { error: null };
  } catch (e) {
    return { error: errorSlug(e) };
  }
}

/** Each expected key must be equal, or one of the values of an expected array; `elapsed_below`
 * bounds `actual.elapsed` (seconds). */
function compare(expect, actual) {
  const bad = [];
  for (const [k, want] of Object.entries(expect)) {
    if (k === 'elapsed_below') {
      const e = actual.elapsed;
      if (!(typeof e === 'number' && e < want)) bad.push(`elapsed: want < ${want}, got ${e}`);
      continue;
    }
    const got = actual[k] === undefined ? null : actual[k];
    const ok = Array.isArray(want) ? want.some((w) => w === got) : want === got;
    if (!ok) bad.push(`${k}: want ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
  }
  return bad;
}

test('shared conformance vectors', { timeout: 600000 }, async () => {
  const fx = startFixture();
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const lines = [];
  try {
    for (const name of (await fx.ask('list')).cases) {
      const s = await fx.ask(`setup ${name}`);
      if (s.skip) {
        await fx.ask(`finish ${name}`);
        skipped += 1;
        lines.push(`skip ${name}: ${s.skip}`);
        continue;
      }
      const old = s.umask !== null && s.umask !== undefined ? process.umask(s.umask) : null;
      let actual;
      try {
        actual = await call(s);
      } finally {
        if (old !== null) process.umask(old);
      }
      if (actual.skip) {
        await fx.ask(`finish ${name}`);
        skipped += 1;
        lines.push(`skip ${name}: ${actual.skip}`);
        continue;
      }
      Object.assign(actual, (await fx.ask(`finish ${name}`)).post);
      const bad = compare(s.expect, actual);
      if (bad.length) {
        failed += 1;
        lines.push(`FAIL ${name}: ${bad.join('; ')}  (answer ${JSON.stringify(actual)})`);
      } else {
        passed += 1;
      }
    }
  } finally {
    await fx.close();
  }
  const summary = `vectors (node): ${passed} passed, ${failed} failed, ${skipped} skipped`;
  for (const l of lines) console.log(l);
  console.log(summary);
  assert.strictEqual(failed, 0, summary);
});
