'use strict';
// The Node column of the operations table (tests/operations/operations.json): every operation of
// pidguard has a Node name, and each resolves under require('pidguard').
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const pidguard = require(path.join(__dirname, '..', '..', 'node'));

test('every operation has a Node name that exists', () => {
  const { operations } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'operations', 'operations.json'), 'utf8'));
  assert.ok(operations.length >= 20);
  const missing = operations.filter((op) => {
    if (!op.node) return true;
    const f = op.node.split('.').reduce((o, k) => (o == null ? o : o[k]), pidguard);
    return typeof f !== 'function';
  }).map((op) => [op.op, op.node]);
  assert.deepEqual(missing, []);
});
