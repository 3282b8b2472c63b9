'use strict';
// `npm install ./node` into a fresh project, then require('pidguard'), import from 'pidguard',
// and the README's Node example, run as written.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { ROOT, tempDir, runReadmeExample } = require('./helpers');

let project;

test.before(() => {
  project = tempDir('pkg');
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'uses-pidguard', version: '1.0.0', private: true }));
  // A local directory has no dependencies to fetch: no registry access is needed.
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', path.join(ROOT, 'node')],
    { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] });
});

function run(args) {
  return execFileSync(process.execPath, args, { cwd: project, encoding: 'utf8', timeout: 60000 });
}

test("require('pidguard') after npm install ./node", () => {
  const out = run(['-e', "const p = require('pidguard'); console.log(typeof p.validatePidFile, p.validate_pid_file === p.validatePidFile, p.lookup(process.pid).pid === process.pid)"]);
  assert.equal(out.trim(), 'function true true');
});

test("import { ... } from 'pidguard' (ESM)", () => {
  const out = run(['--input-type=module', '-e',
    "import pidguard, { startToken, start_token } from 'pidguard'; console.log(startToken === pidguard.startToken, start_token === startToken, startToken(process.pid).startsWith('linux1:'))"]);
  assert.equal(out.trim(), 'true true true');
});

test("the README's Node example runs and prints what its comments say", () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Node\n'));
  const m = /```js\n([\s\S]*?)```/.exec(section);
  assert.ok(m, 'no ```js block in the README Node section');
  fs.writeFileSync(path.join(project, 'example.js'), m[1]);
  const out = run([path.join(project, 'example.js')]).trim().split('\n');
  // Each `console.log(...)  // expected` comment in the example is the line it must print.
  const expected = [...m[1].matchAll(/console\.log\(.*\/\/ (.*)$/gm)].map((x) => x[1].trim());
  assert.ok(expected.length >= 2);
  assert.deepEqual(out, expected);
});

test("docs/node.md's first example (background hooks) runs and prints what its comments say", () => {
  const { out, expected } = runReadmeExample(null);
  assert.ok(expected.length >= 4);
  assert.deepEqual(out, expected);
});
