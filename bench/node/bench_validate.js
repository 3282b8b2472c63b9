'use strict';
// validatePidFile from Node: the pidguard addon versus a plain-JS equivalent, alternating in one
// run on the same two pidfiles (with and without the start-token xattr) naming the same live
// child. Per-call times from process.hrtime over batches. Prints one JSON object per case.
//
// Usage: node bench_validate.js ADDON.node [rounds] [batch] [dir]
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const addon = require(path.resolve(process.argv[2]));
const rounds = Number(process.argv[3] || 30);
const batch = Number(process.argv[4] || 500);
const base = process.argv[5] || os.tmpdir();

// The plain-JS way, as a competent user writes it: read and parse the pidfile, stat it for the
// mtime, read /proc/<pid>/stat for the state and start ticks; boot time read once at load.
const BTIME = Number(/^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'latin1'))[1]);
const CLK_TCK = 100; // sysconf(_SC_CLK_TCK) on Linux (USER_HZ)
function plainValidate(pidFile, tolerance = 5.0) {
  try {
    const text = fs.readFileSync(pidFile, 'latin1').trim();
    if (!/^\d+$/.test(text)) return false;
    const pid = Number(text);
    const mtime = fs.statSync(pidFile).mtimeMs / 1000;
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (f[0] === 'Z' || f[0] === 'X') return false;
    const createTime = BTIME + Number(f[19]) / CLK_TCK;
    return Math.abs(createTime - mtime) <= tolerance;
  } catch {
    return false;
  }
}

function perCallUs(fn, file) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < batch; i++) {
    if (fn(file) !== true) throw new Error(`${fn.name}(${file}) is not true`);
  }
  return Number(process.hrtime.bigint() - t) / 1000 / batch;
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function summary(v) {
  const s = [...v].sort((a, b) => a - b);
  return { median_us: quantile(s, 0.5), q1_us: quantile(s, 0.25), q3_us: quantile(s, 0.75), min_us: s[0], max_us: s[s.length - 1] };
}

const child = spawn('sleep', ['100000'], { detached: true, stdio: 'ignore' });
const dir = fs.mkdtempSync(path.join(base, 'pidguard-bench-node-'));
try {
  const ct = addon.lookup(child.pid).createTime;
  const withToken = path.join(dir, 'tok.pid');
  addon.writePidFileWithMtime(withToken, child.pid, ct);
  const withoutToken = path.join(dir, 'notok.pid');
  fs.writeFileSync(withoutToken, String(child.pid));
  fs.utimesSync(withoutToken, ct, ct);
  const pg = (f) => addon.validatePidFile(f);
  for (const [name, file] of [['with_token', withToken], ['without_token', withoutToken]]) {
    if (!pg(file) || !plainValidate(file)) throw new Error(`fixture ${file} is not valid`);
    const a = [];
    const b = [];
    for (let r = 0; r < rounds; r++) {
      a.push(perCallUs(pg, file));
      b.push(perCallUs(plainValidate, file));
    }
    const ratios = a.map((x, i) => b[i] / x).sort((x, y) => x - y);
    const sa = summary(a);
    const sb = summary(b);
    console.log(JSON.stringify({
      bench: 'node_validate', case: name, rounds, batch, node: process.version,
      pidguard: sa, plain_js: sb, ratio_of_medians: sb.median_us / sa.median_us, ratio_median_per_round: quantile(ratios, 0.5),
    }));
  }
} finally {
  child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
}
