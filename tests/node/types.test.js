'use strict';
// index.d.ts type-checks real usage with the TypeScript compiler (strict), through the package's
// `exports` ("types" condition), for both CommonJS and ESM importers. scripts/setup-node.sh
// installs typescript and @types/node (devDependencies of node/package.json) into node/node_modules.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { ROOT, tempDir } = require('./helpers');

const TOOLS = path.join(ROOT, 'node', 'node_modules');
const TSC = path.join(TOOLS, '.bin', 'tsc');

const USAGE = `
import { validatePidFile, validate_pid_file, checkPidFile, terminate, cleanupBackgroundHooks,
  cleanupBackgroundHooksSync, lookup, startToken, judge, errorKinds, writePidFileWithMtime, writeCmdFile,
  stopPidFile, stop_pid_file, guard, ProcessRef,
  type TerminateReport, type ProcessTerminateOptions, type HookReport, type ProcessInfo, type StopReport } from 'pidguard';

const a: boolean = validatePidFile('/tmp/x.pid', { cmdFile: '/tmp/x.sh', tolerance: 5 });
const b: boolean = validate_pid_file(Buffer.from('/tmp/x.pid'), '/tmp/x.sh', 5.0);
// The reports are core's (pidguard::report): their slugs are typed string.
const c: string | undefined = checkPidFile('/tmp/x.pid').verdict;
const c2: boolean = checkPidFile('/tmp/x.pid').isForeign;
const d: Promise<TerminateReport> = terminate(5, { token: 'linux1:…', policy: 'lenient', schedule: 'TERM/2/KILL/1' });
const e: Promise<HookReport[]> = cleanupBackgroundHooks('/tmp', { indexPath: '/tmp/i.jsonl', isTty: true });
const f: HookReport[] = cleanupBackgroundHooksSync(Buffer.from('/tmp'));
const g: ProcessInfo = lookup(1);
const h: string = startToken(1);
const i: string = judge(1, h).verdict;
const j: string[] = errorKinds().map((k) => k.code);
writePidFileWithMtime('/tmp/x.pid', 5, Date.now() / 1000);
writeCmdFile('/tmp/x.sh', ['sleep', '1']);
const k: Promise<StopReport> = stopPidFile('/tmp/x.pid', { retry: 'TERM/5/KILL/2', lenient: true, cmdFile: '/tmp/x.sh' });
const l: typeof stopPidFile = stop_pid_file;
const ent: guard.Entry = guard.read('/tmp/g.json');
const sess: string | undefined = ent.fields['session'];
guard.create('/tmp/g.json', { pid: 5, startToken: 'linux1:…', fields: { session: 's1' } });
guard.replace(Buffer.from('/tmp/g.json'), ent, { pid: 6, startToken: 't' });
const removed: boolean = guard.remove('/tmp/g.json', ent);
const v: guard.Verdict = guard.check('/tmp/g.json');
const vv: 'match' | 'mismatch' | 'unverifiable' | 'gone' | undefined = v.verdict;
const text: string = guard.encode(guard.decode(Buffer.from('{}')));
const sha: string = guard.token_sha256('secret') + guard.tokenSha256(Buffer.from('x'));
async function useGuard(): Promise<boolean> {
  const g: guard.Guard = await guard.acquire('/tmp/g.json', { session: 's1' }, { takeover: false });
  const mine: guard.Entry = g.entry;
  const was: guard.Verdict | null = g.replaced;
  return g.isHeld() && g.release() && mine.pid > 0 && was === null;
}
async function useHandle(): Promise<boolean> {
  const p: ProcessRef = ProcessRef.open(5, 'linux1:…', 'strict');
  const q: ProcessRef = ProcessRef.open(6, null, 'lenient');
  const fd: number | null = p.fd;
  const sent: boolean = p.signal('TERM') && p.signalGroup(9);
  const exited: boolean = await p.wait(1.5) || await q.wait();
  const o: ProcessTerminateOptions = { schedule: 'TERM/5/KILL/2', group: true, reap: false };
  const r: TerminateReport = await p.terminate(o);
  const r2: TerminateReport = await q.terminate('TERM/1/KILL/1');
  p.close();
  return sent && exited && p.hasExited() && p.pinned && p.token.length > 0 && p.pid > 0 && fd !== 0 && r.pid === r2.pid;
}
// @ts-expect-error the policy is 'strict' or 'lenient'
ProcessRef.open(5, null, 'yolo');
// @ts-expect-error a signal is a name or a number
ProcessRef.open(5).signal(['TERM']);
// @ts-expect-error field values are strings
guard.create('/tmp/g.json', { pid: 5, startToken: 't', fields: { n: 1 } });
// @ts-expect-error takeover is a boolean
guard.acquire('/tmp/g.json', {}, { takeover: 'yes' });
// @ts-expect-error a pid is a number, never a string
lookup('123; rm -rf /');
// @ts-expect-error the policy is 'strict' or 'lenient'
terminate(5, { policy: 'yolo' });
// @ts-expect-error the flag is isForeign (core's PidFileCheck)
checkPidFile('/tmp/x.pid').foreign;
// @ts-expect-error options are named cmdFile and tolerance
validatePidFile('/tmp/x.pid', { cmd_file: '/tmp/x.sh' });
export { a, b, c, c2, d, e, f, g, i, j, k, l, sess, removed, vv, text, sha, useGuard, useHandle };
`;

test('index.d.ts type-checks real usage (tsc --strict), from CommonJS and from ESM', () => {
  assert.ok(fs.existsSync(TSC), `no TypeScript compiler at ${TSC}: run scripts/setup-node.sh`);
  const dir = tempDir('tsc');
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.join(ROOT, 'node'), path.join(dir, 'node_modules', 'pidguard'));
  fs.writeFileSync(path.join(dir, 'use.cts'), USAGE);
  fs.writeFileSync(path.join(dir, 'use.mts'), USAGE);
  const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
    '--types', 'node', '--typeRoots', path.join(TOOLS, '@types'), 'use.cts', 'use.mts'];
  try {
    execFileSync(TSC, args, { cwd: dir, encoding: 'utf8' });
  } catch (err) {
    assert.fail(`tsc failed:\n${err.stdout}${err.stderr}`);
  }
});
