'use strict';
// require('pidguard').guard (guard pidfiles) and stopPidFile, on real files and real
// processes. Every process started here is ours and is ended by its own pid/group (killOurs).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { spawn, execFileSync } = require('child_process');
const {
  ROOT, pidguard, spawnDetached, spawnGroup, killOurs, alive, groupMembers, waitFor, tempDir, countTicks, runReadmeExample,
} = require('./helpers');

const { guard } = pidguard;

test.after(killOurs);

/** A record naming this process. */
function me(fields) {
  return { pid: process.pid, startToken: pidguard.startToken(process.pid), fields };
}

/** The code of what `fn()` throws (synchronously). */
function codeOf(fn) {
  try {
    fn();
  } catch (e) {
    return e.code;
  }
  return 'no error';
}

/** A child that exited and was reaped by Node: its pid and the token it had. */
async function deadRecord() {
  const c = spawnDetached('sleep', ['30']);
  await waitFor(() => alive(c.pid));
  const token = pidguard.startToken(c.pid);
  const exited = new Promise((r) => c.on('exit', r));
  process.kill(c.pid, 'SIGKILL'); // ours, not reaped yet: the number is still this child's
  await exited;
  return { pid: c.pid, startToken: token };
}

test('encode/decode round-trip keeps the field order; tokenSha256 is hex SHA-256', () => {
  const e = { pid: 42, startToken: 'linux1:m:b:1:2:3', fields: { zeta: 'z', alpha: 'a', session: 's1' } };
  const text = guard.encode(e);
  assert.equal(text, '{"pid":42,"start_token":"linux1:m:b:1:2:3","zeta":"z","alpha":"a","session":"s1"}\n');
  const back = guard.decode(Buffer.from(text));
  assert.deepEqual(back, e);
  assert.deepEqual(Object.keys(back.fields), ['zeta', 'alpha', 'session']);
  assert.deepEqual(guard.decode(text), e);
  assert.equal(guard.tokenSha256('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(guard.token_sha256(Buffer.from('abc')), guard.tokenSha256('abc'));
  assert.equal(codeOf(() => guard.decode('{"pid":0,"start_token":"t"}')), 'PIDGUARD_BAD_PID');
  assert.equal(codeOf(() => guard.decode('{"pid":1,"start_token":""}')), 'PIDGUARD_BAD_TOKEN');
  assert.equal(codeOf(() => guard.decode('{"pid":1,"start_token":"t","n":1}')), 'PIDGUARD_INVALID_JSON');
  assert.equal(codeOf(() => guard.encode({ pid: 1, startToken: 't', fields: { pid: '2' } })), 'PIDGUARD_INVALID_ARGUMENT');
  assert.throws(() => guard.encode({ pid: 1.5, startToken: 't' }), RangeError);
});

test('create: mode 0600, parent 0700, exactly the encoded bytes; an existing file is PIDGUARD_ALREADY_EXISTS', () => {
  const dir = tempDir('guard-create');
  const file = path.join(dir, 'sub', 'g.json');
  const e = me({ session: 's1' });
  guard.create(file, e);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
  assert.equal(fs.readFileSync(file, 'utf8'), guard.encode(e));
  assert.deepEqual(guard.read(file), e);
  let err;
  try { guard.create(file, me({ session: 's2' })); } catch (x) { err = x; }
  assert.equal(err.code, 'PIDGUARD_ALREADY_EXISTS');
  assert.equal(err.errno, 17);
  assert.equal(fs.readFileSync(file, 'utf8'), guard.encode(e), 'the loser changed nothing');
});

// Racing creators in separate processes, exactly one wins.
const RACER = `
const fs = require('fs');
const p = require(${JSON.stringify(path.join(ROOT, 'node'))});
const [file, go] = process.argv.slice(1);
const entry = { pid: process.pid, startToken: p.startToken(process.pid), fields: { racer: String(process.pid) } };
fs.writeFileSync(go + '.ready.' + process.pid, '');
const nap = new Int32Array(new SharedArrayBuffer(4));
while (!fs.existsSync(go)) Atomics.wait(nap, 0, 0, 1);
let r;
try { p.guard.create(file, entry); r = 'won'; } catch (e) { r = e.code; }
process.stdout.write(JSON.stringify({ pid: process.pid, r, encoded: p.guard.encode(entry) }));
`;

test('create race among 6 processes: exactly one winner, the rest PIDGUARD_ALREADY_EXISTS, file whole', async () => {
  const dir = tempDir('guard-race');
  const file = path.join(dir, 'race', 'g.json');
  const go = path.join(dir, 'go');
  const N = 6;
  const results = [];
  for (let i = 0; i < N; i++) {
    const c = spawn(process.execPath, ['-e', RACER, file, go], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    results.push(new Promise((resolve) => c.on('close', (code) => resolve({ code, out }))));
  }
  assert.ok(await waitFor(() => fs.readdirSync(dir).filter((n) => n.startsWith('go.ready.')).length === N, 60000));
  fs.writeFileSync(go, '');
  const done = (await Promise.all(results)).map((x) => {
    assert.equal(x.code, 0);
    return JSON.parse(x.out);
  });
  const winners = done.filter((x) => x.r === 'won');
  assert.equal(winners.length, 1, JSON.stringify(done.map((x) => x.r)));
  assert.deepEqual(done.filter((x) => x.r !== 'won').map((x) => x.r), Array(N - 1).fill('PIDGUARD_ALREADY_EXISTS'));
  assert.equal(fs.readFileSync(file, 'utf8'), winners[0].encoded);
  assert.equal(guard.read(file).pid, winners[0].pid);
});

test('read refusals: each rule its own code, families UNTRUSTED / MALFORMED, nothing followed or blocked', () => {
  const dir = tempDir('guard-read');
  const good = guard.encode(me({ s: '1' }));
  const put = (name, content, mode = 0o600) => {
    const f = path.join(dir, name);
    fs.writeFileSync(f, content, { mode });
    fs.chmodSync(f, mode);
    return f;
  };
  const err = (f) => {
    try { guard.read(f); } catch (e) { return [e.code, e.family]; }
    return ['no error'];
  };
  const target = put('target.json', good);
  fs.symlinkSync(target, path.join(dir, 'link.json'));
  assert.deepEqual(err(path.join(dir, 'link.json')), ['PIDGUARD_SYMLINK', 'PIDGUARD_UNTRUSTED']);
  assert.deepEqual(err(put('open.json', good, 0o644)), ['PIDGUARD_INSECURE_MODE', 'PIDGUARD_UNTRUSTED']);
  assert.deepEqual(err(put('group.json', good, 0o620)), ['PIDGUARD_INSECURE_MODE', 'PIDGUARD_UNTRUSTED']);
  fs.mkdirSync(path.join(dir, 'dir.json'));
  assert.deepEqual(err(path.join(dir, 'dir.json')), ['PIDGUARD_IS_DIRECTORY', 'PIDGUARD_UNTRUSTED']);
  execFileSync('mkfifo', ['-m', '600', path.join(dir, 'fifo.json')]);
  assert.deepEqual(err(path.join(dir, 'fifo.json')), ['PIDGUARD_NOT_REGULAR_FILE', 'PIDGUARD_UNTRUSTED']);
  fs.linkSync(put('one.json', good), path.join(dir, 'two.json'));
  assert.deepEqual(err(path.join(dir, 'two.json')), ['PIDGUARD_HARD_LINKED', 'PIDGUARD_UNTRUSTED']);
  assert.deepEqual(err(put('big.json', '{"pid":1,"start_token":"t","x":"' + 'a'.repeat(5000) + '"}\n')),
    ['PIDGUARD_TOO_LARGE', 'PIDGUARD_UNTRUSTED']);
  assert.deepEqual(err(put('e1.json', '503\n7\n')), ['PIDGUARD_INVALID_JSON', 'PIDGUARD_MALFORMED']);
  assert.deepEqual(err(put('empty.json', '')), ['PIDGUARD_INVALID_JSON', 'PIDGUARD_MALFORMED']);
  assert.deepEqual(err(put('pid0.json', '{"pid":0,"start_token":"t"}\n')), ['PIDGUARD_BAD_PID', 'PIDGUARD_MALFORMED']);
  assert.deepEqual(err(put('notok.json', '{"pid":5,"start_token":""}\n')), ['PIDGUARD_BAD_TOKEN', 'PIDGUARD_MALFORMED']);
  assert.deepEqual(err(path.join(dir, 'missing.json')), ['PIDGUARD_NOT_FOUND', undefined]);
  // check() refuses the same files (an error, never a "dead" verdict); a missing file is not found.
  assert.equal(codeOf(() => guard.check(path.join(dir, 'link.json'))), 'PIDGUARD_SYMLINK');
  assert.equal(codeOf(() => guard.check(path.join(dir, 'open.json'))), 'PIDGUARD_INSECURE_MODE');
  assert.deepEqual(guard.check(path.join(dir, 'missing.json')), { found: false, stale: false });
  assert.equal(fs.readFileSync(target, 'utf8'), good, "the symlink's target is untouched");
});

test('remove after replace: false, and the new bytes stay intact', () => {
  const dir = tempDir('guard-remove');
  const file = path.join(dir, 'g.json');
  const a = me({ who: 'a' });
  const b = me({ who: 'b' });
  assert.equal(guard.remove(file, a), false, 'missing file: false, no error');
  guard.create(file, a);
  guard.replace(file, a, b);
  assert.equal(guard.remove(file, a), false);
  assert.equal(fs.readFileSync(file, 'utf8'), guard.encode(b));
  assert.equal(guard.remove(file, b), true);
  assert.equal(fs.existsSync(file), false);
  // No retired copies are left behind.
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('replace with a stale old record: PIDGUARD_SUPERSEDED and nothing written', () => {
  const dir = tempDir('guard-replace');
  const file = path.join(dir, 'g.json');
  const a = me({ who: 'a' });
  const b = me({ who: 'b' });
  const c = me({ who: 'c' });
  guard.create(file, a);
  guard.replace(file, a, b);
  assert.equal(codeOf(() => guard.replace(file, a, c)), 'PIDGUARD_SUPERSEDED');
  assert.equal(fs.readFileSync(file, 'utf8'), guard.encode(b));
  // A file that vanished in between is not an error: the new record is created.
  fs.unlinkSync(file);
  guard.replace(file, b, c);
  assert.deepEqual(guard.read(file), c);
});

test('check: our own record is match; a dead holder is gone and stale', async () => {
  const dir = tempDir('guard-check');
  const file = path.join(dir, 'g.json');
  guard.create(file, me({ s: '1' }));
  const v = guard.check(file);
  assert.equal(v.found, true);
  assert.equal(v.verdict, 'match');
  assert.equal(v.reason, 'token-equal');
  assert.equal(v.stale, false);
  assert.equal(v.ownerUid, process.getuid());
  const dead = await deadRecord();
  const file2 = path.join(dir, 'dead.json');
  guard.create(file2, dead);
  const d = guard.check(file2);
  assert.equal(d.verdict, 'gone');
  assert.equal(d.stale, true);
});

test('acquire: held → PIDGUARD_HELD with the holder; takeover; release removes only our record', async () => {
  const dir = tempDir('guard-acquire');
  const file = path.join(dir, 'g.json');
  const first = await guard.acquire(file, { session: 's1' });
  assert.ok(first instanceof guard.Guard);
  assert.equal(first.isHeld(), true);
  assert.equal(first.path, file);
  assert.equal(first.replaced, null);
  assert.deepEqual(first.entry, me({ session: 's1' }));
  assert.equal(fs.readFileSync(file, 'utf8'), guard.encode(first.entry));

  let err;
  try { await guard.acquire(file, { session: 's2' }); } catch (e) { err = e; }
  assert.ok(err instanceof Error);
  assert.equal(err.code, 'PIDGUARD_HELD');
  assert.equal(err.errno, 17);
  assert.equal(err.pid, process.pid);
  assert.equal(err.holder.verdict, 'match');
  assert.equal(err.holder.reason, 'token-equal');
  assert.deepEqual(err.holder.entry, first.entry);

  const second = await guard.acquire(file, { session: 's3' }, { takeover: true });
  assert.equal(second.replaced.verdict, 'match');
  assert.deepEqual(second.replaced.entry, first.entry);
  assert.equal(first.isHeld(), false);
  assert.equal(first.release(), false, 'the displaced holder removes nothing');
  assert.deepEqual(guard.read(file), second.entry);
  assert.equal(second.isHeld(), true);
  assert.equal(second.release(), true);
  assert.equal(second.release(), false, 'a second release is a no-op');
  assert.equal(second.isHeld(), false);
  assert.equal(fs.existsSync(file), false);
  // keep(): the record stays and the handle lets go of it.
  const third = await guard.acquire(file);
  assert.deepEqual(third.keep(), me({}));
  assert.equal(third.release(), false);
  assert.deepEqual(guard.read(file), me({}));
});

// A second Node process holds the guard until it is killed.
const HOLDER = `
const p = require(${JSON.stringify(path.join(ROOT, 'node'))});
p.guard.acquire(process.argv[1], { role: 'holder' }).then((g) => {
  globalThis.held = g;
  process.stdout.write('held\\n');
  setInterval(() => {}, 1000);
}, (e) => { process.stdout.write(e.code + '\\n'); process.exit(1); });
`;

test('acquire against another live process: held; after it dies the stale record is replaced', async () => {
  const dir = tempDir('guard-other');
  const file = path.join(dir, 'g.json');
  const holder = spawnDetached(process.execPath, ['-e', HOLDER, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  holder.stdout.on('data', (d) => { out += d; });
  assert.ok(await waitFor(() => out.includes('held'), 30000), `holder said ${JSON.stringify(out)}`);
  let err;
  try { await guard.acquire(file); } catch (e) { err = e; }
  assert.equal(err.code, 'PIDGUARD_HELD');
  assert.equal(err.holder.entry.pid, holder.pid);
  assert.equal(err.holder.verdict, 'match');
  assert.deepEqual(err.holder.entry.fields, { role: 'holder' });
  const exited = new Promise((r) => holder.on('exit', r));
  process.kill(holder.pid, 'SIGKILL'); // ours and not reaped yet
  await exited;
  const g = await guard.acquire(file, { role: 'next' });
  assert.equal(g.replaced.verdict, 'gone');
  assert.equal(g.replaced.entry.pid, holder.pid);
  assert.equal(g.release(), true);
});

// A handle that is garbage-collected without release() keeps the record: a collection must
// never free a single-instance name while the process still runs.
const COLLECTED = `
const p = require(${JSON.stringify(path.join(ROOT, 'node'))});
(async () => {
  await (async () => { await p.guard.acquire(process.argv[1], { role: 'collected' }); })();
  for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); }
  const v = p.guard.check(process.argv[1]);
  process.stdout.write(JSON.stringify({ found: v.found, verdict: v.verdict, pid: v.entry && v.entry.pid }));
})();
`;

test('a collected handle does not release; the record is stale once its process has exited', async () => {
  const dir = tempDir('guard-gc');
  const file = path.join(dir, 'g.json');
  const c = spawn(process.execPath, ['--expose-gc', '-e', COLLECTED, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  c.stdout.on('data', (d) => { out += d; });
  const code = await new Promise((r) => c.on('close', r));
  assert.equal(code, 0);
  assert.deepEqual(JSON.parse(out), { found: true, verdict: 'match', pid: c.pid });
  const v = guard.check(file);
  assert.equal(v.verdict, 'gone');
  const g = await guard.acquire(file);
  assert.equal(g.replaced.entry.pid, c.pid);
  assert.equal(g.release(), true);
});

test('acquire refuses a file it cannot trust (never taken over, even with takeover)', async () => {
  const dir = tempDir('guard-untrusted');
  const file = path.join(dir, 'g.json');
  fs.writeFileSync(file, guard.encode(me({})), { mode: 0o600 });
  fs.chmodSync(file, 0o666);
  await assert.rejects(guard.acquire(file, {}, { takeover: true }), { code: 'PIDGUARD_INSECURE_MODE' });
  assert.equal(fs.statSync(file).mode & 0o777, 0o666, 'left as it was');
});

test('stopPidFile: a live hook group whose members ignore TERM is stopped whole, off the event loop', async () => {
  const dir = tempDir('stop-live');
  const script = 'trap "" TERM; sleep infinity & sleep infinity & wait';
  const leader = spawnGroup(script);
  const pidFile = path.join(dir, 'on_Snapshot__30_stubborn.bg.pid');
  const cmdFile = path.join(dir, 'on_Snapshot__30_stubborn.bg.sh');
  pidguard.writePidFileWithMtime(pidFile, leader.pid, Date.now() / 1000);
  pidguard.writeCmdFile(cmdFile, ['bash', '-c', script]);
  assert.ok(await waitFor(() => groupMembers(leader.pid).length === 3), 'the hook and its two sleeps run');
  const members = groupMembers(leader.pid);
  const { value: r, ticks } = await countTicks(() => pidguard.stopPidFile(pidFile, { retry: 'TERM/1/KILL/10', cmdFile }));
  assert.equal(r.outcome, 'exited', JSON.stringify(r));
  assert.equal(r.after, 'KILL');
  assert.deepEqual(r.signals.filter((s) => s !== 'CONT'), ['TERM', 'KILL']);
  assert.equal(r.check.reason, 'valid');
  assert.equal(r.check.verdict, 'match');
  assert.equal(r.status, 0);
  assert.equal(r.pidFileRemoved, true);
  assert.equal(r.terminate.group, true);
  assert.equal(fs.existsSync(pidFile), false);
  for (const m of members) assert.equal(alive(m), false, `group member ${m} survived`);
  assert.ok(ticks >= 5, `the event loop kept running during the 1 s TERM wait (${ticks} ticks)`);
});

test('stopPidFile: a stale record naming a live bystander sends nothing and removes only the file', async () => {
  const dir = tempDir('stop-stale');
  // The recorded process: its token goes into the pidfile's xattr, then it is killed and reaped.
  const old = spawnDetached('sleep', ['30']);
  await waitFor(() => alive(old.pid));
  const pidFile = path.join(dir, 'on_Snapshot__40_old.bg.pid');
  pidguard.writePidFileWithMtime(pidFile, old.pid, Date.now() / 1000);
  assert.ok(pidguard.checkPidFile(pidFile).token, 'the pidfile carries the old token');
  const exited = new Promise((r) => old.on('exit', r));
  process.kill(old.pid, 'SIGKILL');
  await exited;
  // The number in the file now names a live bystander leading its own group (as after a reuse);
  // rewriting in place keeps the inode and its token xattr.
  const bystander = spawnGroup('sleep infinity & sleep infinity & wait');
  assert.ok(await waitFor(() => groupMembers(bystander.pid).length === 3));
  const before = groupMembers(bystander.pid);
  fs.writeFileSync(pidFile, String(bystander.pid));
  // Even the lenient policy never acts on a recorded token that names someone else.
  const r = await pidguard.stopPidFile(pidFile, { schedule: 'KILL/1', lenient: true });
  assert.equal(r.outcome, 'stale', JSON.stringify(r));
  assert.equal(r.staleReason, 'mismatch');
  assert.equal(r.check.verdict, 'mismatch');
  assert.deepEqual(r.signals, []);
  assert.equal(r.terminate, undefined);
  assert.equal(r.pidFileRemoved, true);
  assert.equal(r.status, 1);
  for (const m of before) assert.equal(alive(m), true, `bystander ${m} was touched`);
  assert.deepEqual(groupMembers(bystander.pid).sort(), before.sort());
});

test('stopPidFile: argument errors throw at once; unreadable files reject with their code', async () => {
  const dir = tempDir('stop-args');
  assert.throws(() => pidguard.stopPidFile(path.join(dir, 'x.pid'), { retry: 'TERM/1', schedule: 'KILL/1' }),
    { name: 'RangeError', code: 'PIDGUARD_INVALID_ARGUMENT' });
  assert.throws(() => pidguard.stopPidFile(path.join(dir, 'x.pid'), { retry: 'TERM/x' }), { code: 'PIDGUARD_INVALID_ARGUMENT' });
  const missing = await pidguard.stopPidFile(path.join(dir, 'missing.pid'));
  assert.equal(missing.outcome, 'stale');
  assert.equal(missing.staleReason, 'missing');
  fs.writeFileSync(path.join(dir, 'bad.pid'), '503\n7\n');
  await assert.rejects(pidguard.stopPidFile(path.join(dir, 'bad.pid')), { code: 'PIDGUARD_MALFORMED' });
  fs.symlinkSync(path.join(dir, 'bad.pid'), path.join(dir, 'link.pid'));
  await assert.rejects(pidguard.stopPidFile(path.join(dir, 'link.pid')), { code: 'PIDGUARD_UNTRUSTED' });
});

test("docs/node.md's guard example runs and prints what its comments say", () => {
  const { out, expected } = runReadmeExample('Guard pidfiles');
  assert.ok(expected.length >= 4);
  assert.deepEqual(out, expected);
});
