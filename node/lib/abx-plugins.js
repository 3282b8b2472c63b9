'use strict';
// require('pidguard/abx-plugins'): abx-plugins' Chrome pidfile and kill helpers, pinned.
//
// abx-plugins (PyPI `abx-plugins`, checked against its release 1.13.572) keeps its browser's pidfile
// and stops the browser in `abx_plugins/plugins/chrome/chrome_utils.js`. This module has the same
// names and call shapes, so a maintainer swaps them in with one statement at the top of that file:
//
//     ({ writePidWithMtime, writeCmdScript, isProcessAlive, killChrome, killZombieChrome } =
//       require("pidguard/abx-plugins"));
//
// (tests/abx_plugins/chrome_utils.patch is that change as a diff). Every rule is core's: this file
// translates the call shapes and awaits. Who is judged how, what is signalled, which pidfile is
// removed and when — all of it is a core operation (`stopPidFile`, `probePidFile`, `checkPidFile`,
// `ProcessRef`, `isProcessAlive`, `writePidFileWithMtime`, `writeCmdFile`), the same ones the
// Python, C and command-line surfaces use. The differences from the original are listed in
// docs/node.md ("abx-plugins").
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { EventEmitter } = require('events');
const { Readable } = require('stream');
const pidguard = require('../index.js');

/** The name of the browser's pidfile in a Chrome session directory (abx-plugins' `chrome.pid`). */
const CHROME_PID_FILE = 'chrome.pid';
/** abx-plugins' hook records in a session's `chrome/` directory: `on_*chrome_*.pid`, not `chrome.pid` (core's `RecordNames`). */
const HOOK_RECORD_NAMES = Object.freeze({ prefix: 'on_', contains: 'chrome_', suffix: '.pid', except: [CHROME_PID_FILE] });

/** The hook scripts whose live process marks a crawl as in use (abx-plugins' launch and tab hooks). */
const CHROME_HOOK_SCRIPTS = [
  'on_CrawlSetup__90_chrome_launch.daemon.bg.js',
  'on_Snapshot__00_chrome_launch.daemon.bg.js',
  'on_Snapshot__01_chrome_tab.daemon.bg.js',
];

/** How deep the sweep descends below its directory (abx-plugins' value). */
const SWEEP_MAX_DEPTH = 10;

/** A `TypeError` with Node's own code, as the addon throws for an argument of the wrong type. */
function typeError(name, expected, value) {
  const got = value === null ? 'null' : typeof value;
  const e = new TypeError(`The "${name}" argument must be ${expected}. Received type ${got}`);
  e.code = 'ERR_INVALID_ARG_TYPE';
  return e;
}

/** A `RangeError` with Node's own code, as the addon throws for a number it cannot take. */
function rangeError(name, expected, value) {
  const e = new RangeError(`The value of "${name}" is out of range. It must be ${expected}. Received ${value}`);
  e.code = 'ERR_OUT_OF_RANGE';
  return e;
}

/**
 * `killChrome`'s `timeoutMs` as core's escalation schedule: SIGTERM, wait half of it, SIGKILL,
 * wait the rest — the original's split (it waits `remaining / 2` after SIGTERM). The schedule
 * syntax and its limits (at most a day per wait) are core's; a value it refuses throws
 * `PIDGUARD_INVALID_ARGUMENT` from the call that parses it.
 */
function scheduleFor(timeoutMs) {
  if (typeof timeoutMs !== 'number') throw typeError('timeoutMs', 'of type number', timeoutMs);
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw rangeError('timeoutMs', 'a finite number >= 0', timeoutMs);
  // Milliseconds, as decimal seconds (never exponent notation, which the schedule does not take).
  const half = Math.floor(timeoutMs / 2);
  return `TERM/${(half / 1000).toFixed(3)}/KILL/${((timeoutMs - half) / 1000).toFixed(3)}`;
}

/** `outputDir` as the original reads it: falsy means none; otherwise a path string. */
function optionalDir(name, value) {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value !== 'string') throw typeError(name, 'of type string or null', value);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Pidfiles
// ---------------------------------------------------------------------------------------------

/**
 * Write `pid` to `filePath` with atime and mtime `startTimeSeconds` (seconds since the epoch),
 * as abx-plugins does — the same bytes (the decimal pid, no newline) and the same mtime, so its
 * own readers (`parseInt(readFileSync(...))`, the mtime rule of abx-dl) keep working — plus the
 * process's start token in the `user.pidguard.token` xattr, written through a temporary file and
 * `rename` (core's `writePidFileWithMtime`).
 *
 * For a browser this module's `spawn` started (and not recorded here yet), the record is not
 * written afresh: its temporary record moves to `filePath` (core's `moveRecord`), with the
 * start token and the scope (`user.pidguard.scope`) — `filePath` must then be free (a record of
 * another live process there is `PIDGUARD_HELD`), and a browser already reaped is
 * `PIDGUARD_NO_SUCH_PROCESS`.
 *
 * Throws (nothing written): `TypeError`/`RangeError` for a `pid` that is not an integer number
 * fitting a `pid_t`; `PIDGUARD_INVALID_ARGUMENT` for a pid outside 1..pid_max or a start time
 * that is not finite; `PIDGUARD_UNTRUSTED` for a symlink, FIFO or directory at `filePath`;
 * file-system errors.
 */
function writePidWithMtime(filePath, pid, startTimeSeconds) {
  const l = typeof pid === 'number' ? launched.get(pid) : undefined;
  if (l === undefined) {
    pidguard.writePidFileWithMtime(filePath, pid, startTimeSeconds);
    return;
  }
  // A browser `spawn` started: its record (token and scope) moves here from its temporary path.
  if (pidguard.moveRecord(l.pidFile, filePath, pid, startTimeSeconds)) {
    launched.delete(pid);
    try { fs.rmdirSync(l.dir); } catch (_) { /* not empty: left as it is */ }
  }
}

/**
 * Write the shell script that re-runs the browser: `#!/bin/bash`, then `binary` and `args`
 * quoted for bash on one line, mode 0755, through a temporary file and `rename` (core's
 * `writeCmdFile`: the quoting of Python's `shlex.join`, which abx-dl reads back). Each argument
 * is turned into a string with `String()`, as the original does.
 *
 * Throws `TypeError` when `args` is not iterable; `PIDGUARD_INVALID_ARGUMENT` for an argument
 * holding a NUL; `PIDGUARD_UNTRUSTED` for a symlink, FIFO or directory at `filePath`;
 * file-system errors.
 */
function writeCmdScript(filePath, binary, args) {
  pidguard.writeCmdFile(filePath, [binary, ...args].map(String));
}

/**
 * Whether a process with this pid exists and has not exited (core's `isProcessAlive`): a zombie
 * is not alive; a process of another user (`EPERM`) is, and so is one whose /proc entry cannot
 * be read; a pid <= 0 (a group, or every process) is not, nor is a fraction. Nothing is
 * signalled. Throws `TypeError` (`ERR_INVALID_ARG_TYPE`) for a value that is not a number.
 */
function isProcessAlive(pid) {
  return pidguard.isProcessAlive(pid);
}

// ---------------------------------------------------------------------------------------------
// Stopping the browser
// ---------------------------------------------------------------------------------------------

/**
 * Stop the browser `pid` with its process group, and nothing else; resolves to `true` when it
 * is gone, `false` when something may still run — the original's boolean.
 *
 * What proves that `pid` is the browser, in this order:
 * 1. `outputDir/chrome.pid` names `pid`: core's `stopPidFile` judges the record (its start token,
 *    or for a record written without one the mtime rule), pins the browser with a pidfd, runs
 *    SIGTERM, half of `timeoutMs`, SIGKILL, the rest, on the group the browser leads, and removes
 *    the record by content once the browser is gone or proven stale. A record proven stale (the
 *    browser exited, its pid reused) sends nothing and resolves `true` (the browser is gone,
 *    whoever has the number now); one that cannot be judged (another user's browser, an
 *    unreadable identity, another PID namespace) sends nothing, is kept, and resolves `false`.
 * 2. Otherwise (no such record, one core could not prove, or a process still at `pid` after a
 *    stale record), `pid` is this process's own unreaped child (the browser `launchChromium`
 *    spawned): pinned as such (`ProcessRef.openChild`) and stopped by the same schedule; a record
 *    core could not prove is then judged again, now stale, and removed by core.
 * 3. Otherwise nothing proves what `pid` is now: nothing is sent. Without a record, resolves
 *    `true` when there is no process at `pid` (core's `isProcessAlive`), else `false`.
 *
 * The pid is checked synchronously, as every pid of the Node surface: `TypeError`
 * (`ERR_INVALID_ARG_TYPE`) for a non-number, `RangeError` (`ERR_OUT_OF_RANGE`) for a fraction or
 * a number outside a `pid_t`, `RangeError` `PIDGUARD_INVALID_ARGUMENT` for a pid <= 0 or above
 * pid_max; `outputDir` must be a string or null (`TypeError`), `timeoutMs` a finite number >= 0
 * (`TypeError`/`RangeError`). The schedule made of `timeoutMs` is parsed by core when the stop
 * starts: one it refuses (a wait above a day) rejects with `PIDGUARD_INVALID_ARGUMENT` before
 * any signal. Otherwise the Promise never rejects.
 *
 * A browser this module's `spawn` started is recorded with its scope: the stop of step 1 reaches
 * every process of its tree, also helpers that left its process group (Chromium's
 * `chrome_crashpad_handler`s call `setsid`). Without a scope (a browser `child_process` started)
 * those helpers are not reached.
 */
function killChrome(pid, outputDir = null, timeoutMs = 10000) {
  pidguard.judge(pid); // the Node surface's pid checks, thrown here rather than as a rejection
  const dir = optionalDir('outputDir', outputDir);
  const schedule = scheduleFor(timeoutMs);
  // The record that names this browser: `outputDir/chrome.pid`, else the temporary record of a
  // browser this module's `spawn` started and nobody recorded yet. Which one names it is read by
  // core; every stop below judges it afresh.
  const inDir = dir === null ? null : path.join(dir, CHROME_PID_FILE);
  const pending = launched.get(pid);
  const pidFile = inDir !== null && pidguard.checkPidFile(inDir).pid === pid ? inDir : pending ? pending.pidFile : inDir;
  const recorded = pidFile !== null && pidguard.checkPidFile(pidFile).pid === pid;
  // What the record says about the browser: `true` gone (stopped now, or proven stale),
  // `false` kept undecided, `null` nothing (no such record, or it vanished meanwhile).
  const stopRecord = async () => {
    let r;
    try {
      r = await pidguard.stopPidFile(pidFile, { schedule });
    } catch (e) {
      if (e.code === 'PIDGUARD_INVALID_ARGUMENT') throw e; // the schedule: before anything is sent
      return false; // a record that cannot be read or judged: nothing was sent, it is kept
    }
    if (r.outcome === 'exited' || r.outcome === 'already-gone') return true;
    if (r.outcome === 'stale') return r.staleReason === 'missing' ? null : true;
    return false; // refused, foreign, unkillable, error: kept
  };
  return (async () => {
    const said = recorded ? await stopRecord() : null;
    if (said === true && !pidguard.isProcessAlive(pid)) return true;
    let ref;
    try {
      ref = pidguard.ProcessRef.openChild(pid);
    } catch (_) {
      // Not our child (or reaped already): what runs at `pid` now is not the browser's business
      // once the record proved it gone; without a record, only proof of absence says gone.
      return said === null ? !pidguard.isProcessAlive(pid) : said;
    }
    let gone;
    try {
      const r = await ref.terminate({ schedule });
      gone = r.outcome === 'exited' || r.outcome === 'already-gone';
    } catch (e) {
      if (e.code === 'PIDGUARD_INVALID_ARGUMENT') throw e; // the schedule: before anything is sent
      gone = false; // the kernel or a safety rule refused a signal
    } finally {
      ref.close();
    }
    // Our child's record that core could not prove (written without a token, its mtime off):
    // now that the child is gone, core judges it stale and removes it.
    if (gone && said === false) await stopRecord();
    return gone;
  })();
}

// ---------------------------------------------------------------------------------------------
// Launcher
// ---------------------------------------------------------------------------------------------

/**
 * The browsers this module started and whose record has not reached its final path yet: pid →
 * `{ pidFile, dir }` (the temporary record `spawn` wrote, in a private directory). Their
 * `writePidWithMtime` moves the record (core's `moveRecord`) instead of writing a new one.
 */
const launched = new Map();

/** Signal numbers → names (`'SIGTERM'`), as `child_process` reports an exit by signal. */
const SIGNAL_NAMES = Object.fromEntries(Object.entries(os.constants.signals).map(([name, n]) => [n, name]));

/** The `stdio` of a `child_process.spawn` call, as `[stdout, stderr]` piped or not. */
function pipedStdio(stdio) {
  const s = stdio === undefined || stdio === null ? 'pipe' : stdio;
  const each = typeof s === 'string' ? [s, s, s] : s;
  if (!Array.isArray(each)) throw typeError('options.stdio', 'a string or an array', s);
  const [stdin = 'ignore', stdout = 'pipe', stderr = 'pipe'] = each;
  const ok = (v, allowed) => v === null || v === undefined || allowed.includes(v);
  if (!ok(stdin, ['ignore', 'pipe']) || !ok(stdout, ['ignore', 'pipe']) || !ok(stderr, ['ignore', 'pipe']) || each.length > 3) {
    const e = new TypeError(`options.stdio: only 'ignore' and 'pipe' for stdin, stdout and stderr (stdin is /dev/null). Received ${JSON.stringify(s)}`);
    e.code = 'ERR_INVALID_ARG_VALUE';
    throw e;
  }
  return [stdout !== 'ignore', stderr !== 'ignore'];
}

/**
 * Start the browser as `child_process.spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'],
 * detached: true })` does in abx-plugins' `launchChromium`, inside a scope (core's `spawn`): a
 * cgroup v2 leaf of its own where one can be made, else a subreaper supervisor. `detached: true`'s
 * meaning is kept whatever is passed: the browser leads a new session and process group. Every
 * process it starts stays in the scope, `setsid` or not (Chromium's `chrome_crashpad_handler`s),
 * so a stop of its record — `killChrome`, `killZombieChrome`, pidguard's `stopPidFile` — reaches
 * them all.
 *
 * The browser is recorded at once, with its start token and scope, in a pidfile of a private
 * temporary directory (`<tmpdir>/pidguard-launch-XXXXXX/<command's name>.pid`): nothing runs
 * unrecorded. `writePidWithMtime(file, pid, t)` for this pid then moves that record to `file`
 * (core's `moveRecord`), so `chrome.pid` carries the token and the `user.pidguard.scope` xattr.
 *
 * Returns a `ChildProcess`-like `EventEmitter`:
 * - `pid` (`undefined` when the start failed), `spawnfile`, `spawnargs`, `stdin` (`null`);
 * - `stdout`, `stderr`: readable streams of the browser's output (`null` for `'ignore'`): sockets
 *   over pipes core made; they end once every process holding them has closed them;
 * - `'spawn'` (next tick) once started, or `'error'` (next tick, as `child_process` does) with
 *   core's error (`PIDGUARD_NOT_FOUND`, …) when nothing could be started;
 * - `'exit'` with `(code, signal)` once the caller's own child has exited (the browser, or in
 *   supervisor mode the supervisor, which exits with the browser's status once its whole tree has
 *   ended), then `'close'` once the streams have closed too; `exitCode`, `signalCode` as
 *   `child_process` sets them. The child is waited for off the event loop (one thread of libuv's
 *   pool while it runs) and reaped by this module;
 * - `kill(sig = 'SIGTERM')`: the signal sent to the browser alone through a handle pinned at
 *   spawn (a pidfd): `true` when sent, `false` once it has exited; never reaches a process that
 *   reused its pid;
 * - `ref()`/`unref()`: whether the wait keeps the event loop alive (it does by default).
 *
 * Options: `stdio` (`'pipe'`, `'ignore'`, or an array of those; stdin is always `/dev/null`),
 * `detached` (accepted; always true in effect), `cwd`, `env` (as `child_process.spawn` reads
 * it: the browser's whole environment, `undefined` values left out, others made strings; default
 * this process's), and pidguard's `scope` (`'auto'`, the default; `'cgroup'`, `'supervisor'`,
 * `'group'`). `uid`, `gid`, `shell` and the other options of `child_process.spawn` are not
 * supported: a `TypeError` (`ERR_INVALID_ARG_VALUE`) names one given. Argument type errors
 * (`command` not a string, `args` not an array of strings) are thrown at once, as
 * `child_process.spawn` throws them.
 */
/** `child_process.spawn`'s reading of `options.env`: every own key whose value is not
 * `undefined`, the value made a string; `undefined`/`null` for this process's environment. */
function childEnv(env) {
  if (env === undefined || env === null) return undefined;
  if (typeof env !== 'object') throw typeError('options.env', 'of type object', env);
  const out = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = `${v}`;
  return out;
}

function spawn(command, args = [], options = {}) {
  if (typeof command !== 'string') throw typeError('file', 'of type string', command);
  if (!Array.isArray(args)) {
    if (args !== null && typeof args === 'object' && options && Object.keys(options).length === 0) {
      options = args;
      args = [];
    } else {
      throw typeError('args', 'an instance of Array', args);
    }
  }
  if (!args.every((a) => typeof a === 'string')) throw typeError('args', 'an array of strings', args);
  if (options === null || options === undefined) options = {};
  if (typeof options !== 'object') throw typeError('options', 'of type object', options);
  for (const k of Object.keys(options)) {
    if (!['stdio', 'detached', 'cwd', 'env', 'scope', 'windowsHide'].includes(k) && options[k] !== undefined) {
      const e = new TypeError(`pidguard/abx-plugins spawn: option "${k}" is not supported`);
      e.code = 'ERR_INVALID_ARG_VALUE';
      throw e;
    }
  }
  const [pipeOut, pipeErr] = pipedStdio(options.stdio);
  const env = childEnv(options.env);

  const child = new EventEmitter();
  Object.assign(child, {
    pid: undefined, spawnfile: command, spawnargs: [command, ...args], stdin: null, stdout: null, stderr: null,
    exitCode: null, signalCode: null, killed: false,
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pidguard-launch-'));
  const pidFile = path.join(dir, `${path.basename(command).replace(/[^A-Za-z0-9_.-]/g, '_') || 'command'}.pid`);
  let started;
  try {
    started = pidguard.spawnPiped([command, ...args], pidFile, { scope: options.scope || 'auto', cwd: options.cwd, env });
  } catch (e) {
    fs.rmdirSync(dir); // our own empty directory: a failed spawn leaves nothing (core's rule)
    child.stdout = pipeOut ? Readable.from([]) : null;
    child.stderr = pipeErr ? Readable.from([]) : null;
    child.kill = () => false;
    child.ref = child.unref = () => {};
    process.nextTick(() => child.emit('error', e));
    return child;
  }
  const pid = started.spawned.pid;
  child.pid = pid;
  launched.set(pid, { pidFile, dir });
  const stream = (fd, wanted) => {
    const s = new net.Socket({ fd, readable: true, writable: false });
    if (wanted) return s;
    s.resume(); // read and dropped, so the browser never blocks on a full pipe
    return null;
  };
  child.stdout = stream(started.stdoutFd, pipeOut);
  child.stderr = stream(started.stderrFd, pipeErr);

  // The browser pinned now, by the token of its record, for kill(); null if it is gone already.
  let browser = null;
  try {
    browser = pidguard.ProcessRef.open(pid, pidguard.checkPidFile(pidFile).token);
  } catch (_) { /* exited at once: kill() sends nothing */ }
  child.kill = (sig = 'SIGTERM') => {
    if (browser === null) return false;
    const sent = browser.signal(sig === 0 ? 0 : sig);
    if (sent && sig !== 0) child.killed = true;
    return sent;
  };

  // The caller's own child: the browser, or the supervisor that exits with its status.
  const own = pidguard.ProcessRef.openChild(started.spawned.supervisorPid || pid);
  // A timer keeps the event loop alive while the child runs (ref/unref), as child_process does.
  const keep = setInterval(() => {}, 1 << 30);
  child.ref = () => { keep.ref(); return child; };
  child.unref = () => { keep.unref(); return child; };
  const open = [child.stdout, child.stderr].filter(Boolean);
  let exited = false;
  const maybeClose = () => {
    if (exited && open.every((s) => s.destroyed || s.closed)) {
      child.emit('close', child.exitCode, child.signalCode);
    }
  };
  for (const s of open) s.once('close', maybeClose);
  (async () => {
    let code = null;
    let signal = null;
    try {
      await own.wait();
      const r = await own.terminate({ group: false, reap: true });
      // child_process's pair: the code of a normal exit, else the name of the killing signal.
      signal = r.exitSignal ? SIGNAL_NAMES[r.exitSignal] || null : null;
      code = signal === null ? r.exitCode ?? null : null;
    } catch (_) { /* reaped elsewhere: the status is unknown */ }
    own.close();
    if (browser !== null) browser.close();
    browser = null;
    clearInterval(keep);
    child.exitCode = code;
    child.signalCode = signal;
    exited = true;
    child.emit('exit', code, signal);
    maybeClose();
  })();
  process.nextTick(() => child.emit('spawn'));
  return child;
}

// ---------------------------------------------------------------------------------------------
// The sweep
// ---------------------------------------------------------------------------------------------

/** A directory from the environment (abx-plugins reads SNAP_DIR and CRAWL_DIR), else the cwd. */
function envDir(name) {
  const v = (process.env[name] || '').trim();
  return path.resolve(v || process.cwd());
}

/**
 * The Chrome session files below `root`: each `<session>/chrome/chrome.pid`, each session's
 * `chrome` directory (its hook records are core's to list and judge: `recordsInUse`), and each
 * `<session>/.persona` directory. Directory
 * entries are taken from `readdir` (a symlink is never followed); an unreadable directory is
 * skipped, as abx-plugins skips it. A runtime directory (`isRuntime`) is not descended into
 * beyond its own `chrome` and `.persona`: its other children are archived outputs.
 */
function findSessionFiles(root, isRuntime) {
  const found = { chromePids: [], chromeDirs: [], personaDirs: [] };
  const walk = (dir, depth) => {
    if (depth > SWEEP_MAX_DEPTH) return;
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (_) {
      return;
    }
    const runtime = isRuntime(path.resolve(dir));
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const full = path.join(dir, entry.name);
      if (entry.name === 'chrome') {
        found.chromePids.push({ pidFile: path.join(full, CHROME_PID_FILE), sessionDir: dir });
        found.chromeDirs.push({ chromeDir: full, sessionDir: dir });
      } else if (entry.name === '.persona') {
        found.personaDirs.push({ personaDir: full, sessionDir: dir });
      } else if (!runtime && !entry.name.startsWith('.') && entry.name !== 'node_modules') {
        walk(full, depth + 1);
      }
    }
  };
  walk(root, 0);
  return found;
}

/**
 * Live processes running one of abx-plugins' Chrome hook scripts (core's `processesRunning`):
 * `{ pid, cwd }` (`cwd` null when it cannot be read). `null` when the process list cannot be
 * read: nothing can then be said about which crawls are in use.
 */
function chromeHookProcesses() {
  try {
    return pidguard.processesRunning(CHROME_HOOK_SCRIPTS).map((p) => ({ pid: p.pid, cwd: p.cwd == null ? null : path.resolve(p.cwd) }));
  } catch (_) {
    return null;
  }
}

/** Whether `ancestor` is `pid` or one of its ancestors now (parent pids read by core's `lookup`). */
function hasAncestor(pid, ancestor) {
  const seen = new Set();
  let p = pid;
  while (p > 0 && !seen.has(p)) {
    if (p === ancestor) return true;
    seen.add(p);
    try {
      p = pidguard.lookup(p).ppid;
    } catch (_) {
      return false;
    }
  }
  return false;
}

/**
 * Stop the browsers of stale crawls below `snapDir` (abx-plugins' `killZombieChrome`, run by its
 * `on_CrawlSetup__89_chrome_kill_zombies.js` hook); resolves to the number of browsers stopped.
 *
 * Which crawls are stale is abx-plugins' layout and options, kept as they are: every
 * `<session>/chrome/chrome.pid` below `snapDir` (default `$SNAP_DIR`, else the cwd), skipping
 * sessions at or below `options.excludeCrawlDirs`, `options.excludeSessionDirs`, and — unless
 * `options.excludeCurrentRuntimeDirs` is false — `$SNAP_DIR` and `$CRAWL_DIR`; a session is in
 * use while one of its hook pidfiles (`chrome/on_*chrome_*.pid`) names a live hook, or a live
 * launch/tab hook process runs in it or is the browser's ancestor. `options.quiet` silences the
 * progress lines on stderr. `options.CHROME_USER_DATA_DIR` is accepted and not used: the original
 * clears that profile's lock files after its sweep, and `launchChromium` clears the same files
 * before every launch.
 *
 * What is done with each record is core's:
 * - a session's hook records (`chrome/on_*chrome_*.pid`) are listed and asked by core's
 *   `recordsInUse`, which never acts: a record whose hook runs — or whose first process exited
 *   while its scope still holds processes — and one that cannot be judged (another user's
 *   hook, an unreadable identity, a FIFO, directory or symlink at a record's name, a `chrome`
 *   directory that cannot be listed) keep the session in use; nothing is signalled or removed
 *   for them. A record moved out of `chrome/` is no evidence: the live hook processes are
 *   asked too (below);
 * - each stale session's `chrome.pid` is stopped by `stopPidFile` (the schedule of
 *   `killChrome`'s default 10 s): a browser proven to be the recorded one is stopped with its
 *   process group and its record removed; a record proven stale (its pid gone or reused by
 *   another process) is removed and nothing is sent; a record that cannot be judged — another
 *   user's browser (`EPERM`), an unreadable identity, another machine or PID namespace, a
 *   token-less record whose mtime is off — is kept and nothing is sent;
 * - a missing or malformed `chrome.pid` is skipped and kept, as the original skips it.
 * - `.persona` directories of stale sessions are removed (abx-plugins' housekeeping) unless the
 *   session's browser record was kept undecided.
 *
 * Throws `TypeError` at once for `snapDir` that is not a string or null, `options` that is not
 * an object, or exclusion lists that are not arrays of strings; after that it never rejects: a
 * record that cannot be read is skipped. When a hook process's directory
 * cannot be read, or the process list cannot be read, nothing tells which crawls are in use: no browser is
 * stopped.
 */
function killZombieChrome(snapDir = null, options = {}) {
  const given = optionalDir('snapDir', snapDir);
  if (options === null || options === undefined) options = {};
  if (typeof options !== 'object') throw typeError('options', 'of type object', options);
  const dirs = (name) => {
    const v = options[name];
    if (v === null || v === undefined) return [];
    if (!Array.isArray(v) || !v.every((d) => typeof d === 'string')) throw typeError(`options.${name}`, 'an array of strings', v);
    return v.map((d) => path.resolve(d));
  };
  const excludeCrawl = new Set(dirs('excludeCrawlDirs'));
  const excludeSession = new Set(dirs('excludeSessionDirs'));
  if (options.excludeCurrentRuntimeDirs !== false) {
    excludeSession.add(envDir('SNAP_DIR'));
    excludeSession.add(envDir('CRAWL_DIR'));
  }
  const root = given === null ? envDir('SNAP_DIR') : path.resolve(given);
  return sweep(root, Boolean(options.quiet), (dir) => excludeCrawl.has(dir) || excludeSession.has(dir));
}

/** The body of `killZombieChrome`, its arguments checked. */
async function sweep(root, quiet, excluded) {
  const log = (line) => { if (!quiet) console.error(line); };
  // Every name in a line goes through core's escaping (control characters as `\n`, `\x1b`):
  // folder names are the users' and must not drive root's terminal or forge a line.
  const shown = (p) => pidguard.printablePath(p);
  const within = (dir) => {
    const rel = path.relative(root, dir);
    return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
  };
  // The crawl a session belongs to: its nearest excluded ancestor inside the root, else itself.
  const owningCrawl = (sessionDir) => {
    for (let d = path.resolve(sessionDir); within(d); d = path.dirname(d)) {
      if (excluded(d)) return d;
      if (path.dirname(d) === d) break;
    }
    return path.resolve(sessionDir);
  };

  log('[*] Checking for zombie Chrome processes...');
  if (!fs.existsSync(root)) {
    log('[+] No snapshot directory found');
    return 0;
  }
  const found = findSessionFiles(root, excluded);

  // Sessions in use, by their hooks' records in `<session>/chrome/`: core lists the directory
  // and probes every record named `on_*chrome_*.pid` whatever stands at the name (a FIFO,
  // directory or symlink a user put there is a record that cannot be used: in use), and a
  // directory it cannot list is in use too. A probe never acts.
  const liveSessions = new Set();
  for (const { chromeDir, sessionDir } of found.chromeDirs) {
    if (pidguard.recordsInUse(chromeDir, HOOK_RECORD_NAMES).inUse) liveSessions.add(path.resolve(sessionDir));
  }

  // Sessions in use, by their hook processes (listed by core once, when first needed).
  let hooks;
  const crawlInUse = (crawlDir, browserPid) => {
    if (hooks === undefined) {
      hooks = chromeHookProcesses();
      if (hooks === null) log('[!] the process list cannot be read: which crawls are in use is unknown, nothing is stopped');
    }
    if (hooks === null) return true;
    for (const h of hooks) {
      if (browserPid && hasAncestor(browserPid, h.pid)) return true;
      if (h.cwd === null) return true; // a hook whose directory is unknown may be this crawl's
      const session = path.basename(h.cwd) === 'chrome' ? path.dirname(h.cwd) : h.cwd;
      if (owningCrawl(session) === crawlDir) return true;
    }
    return false;
  };

  let killed = 0;
  const keptSessions = new Set();
  for (const { pidFile, sessionDir } of found.chromePids) {
    const crawlDir = owningCrawl(sessionDir);
    if (excluded(crawlDir)) continue;
    let pid;
    try {
      pid = pidguard.checkPidFile(pidFile).pid;
    } catch (_) {
      pid = null;
    }
    if (pid === null || pid === undefined) continue; // missing or malformed: skipped, kept
    if (liveSessions.has(path.resolve(sessionDir)) || crawlInUse(crawlDir, pid)) continue;
    let report;
    try {
      report = await pidguard.stopPidFile(pidFile, { schedule: scheduleFor(10000) });
    } catch (e) {
      log(`[!] Skipped ${shown(pidFile)}: ${pidguard.printable(String(e && e.message))}`);
      keptSessions.add(path.resolve(sessionDir));
      continue;
    }
    if (report.outcome === 'exited') {
      killed++;
      log(`[+] Killed zombie (PID ${pid}) from stale crawl ${shown(path.basename(crawlDir))}`);
    } else if (report.outcome === 'stale') {
      log(`[+] Stale ${shown(pidFile)} (${report.staleReason}): nothing sent${report.pidFileRemoved ? ', removed' : ''}`);
    } else if (report.outcome !== 'already-gone') {
      keptSessions.add(path.resolve(sessionDir));
      log(`[!] Kept ${shown(pidFile)} (PID ${pid}): ${report.outcome}${report.refusal ? ` (${report.refusal})` : ''}` +
        `${report.detail ? `: ${pidguard.printable(report.detail)}` : ''}${report.error ? `: ${pidguard.printable(report.error)}` : ''}`);
    }
  }

  // Stale crawls' `.persona` directories are left in place: a recursive removal by path over
  // directories other users may write is a file decision outside core, which a privileged sweep
  // must not make (a swapped directory or symlink would aim it anywhere). Listed, not removed.
  for (const { personaDir, sessionDir } of found.personaDirs) {
    const crawlDir = owningCrawl(sessionDir);
    if (excluded(crawlDir)) continue;
    log(`[*] Left stale runtime persona dir in place: ${shown(personaDir)}`);
  }

  log(killed > 0 ? `[+] Killed ${killed} zombie process(es)` : '[+] No zombies found');
  return killed;
}

module.exports = Object.freeze({
  spawn,
  writePidWithMtime,
  writeCmdScript,
  isProcessAlive,
  killChrome,
  killZombieChrome,
});
