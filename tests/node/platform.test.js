'use strict';
// On a system no addon is built for, require('pidguard') (and import) refuses at once with an
// Error whose code is 'unsupported' and whose message names docs/platforms.md, before any addon
// is loaded (never a loader crash).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { execFileSync } = require('child_process');
const { ROOT } = require('./helpers');

const ENTRY = path.join(ROOT, 'node', 'index.js');

function probe(platform) {
  const script = `
    Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
    const loaded = () => Object.keys(require.cache).filter((k) => k.endsWith('.node')).length;
    try {
      require(${JSON.stringify(ENTRY)});
      console.log(JSON.stringify({ imported: true }));
    } catch (e) {
      console.log(JSON.stringify({ code: e.code, message: e.message, addons: loaded() }));
    }`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 }));
}

test('an unbuilt platform refuses at require, naming the docs', () => {
  for (const platform of ['darwin', 'freebsd']) {
    const r = probe(platform);
    assert.equal(r.code, 'unsupported');
    assert.match(r.message, new RegExp(`unsupported platform '${platform}'`));
    assert.match(r.message, /docs\/platforms\.md/);
    assert.match(r.message, /compile-checked only/);
    assert.equal(r.addons, 0, 'refused before any addon was loaded');
  }
});

test('linux loads as before', () => {
  assert.equal(process.platform, 'linux');
  assert.deepEqual(probe('linux'), { imported: true });
});
