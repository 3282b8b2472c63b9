// Types of `pidguard/abx-plugins` (hand-written: this module is JavaScript, not generated from the
// addon). abx-plugins 1.13.572's `chrome_utils.js` names and call shapes; see node/lib/abx-plugins.js.

/** Options of `killZombieChrome`, abx-plugins' names. */
export interface KillZombieChromeOptions {
  /** Crawl directories never treated as stale (a session at or below one is skipped). */
  excludeCrawlDirs?: string[] | null;
  /** Session directories never treated as stale. */
  excludeSessionDirs?: string[] | null;
  /** Also skip `$SNAP_DIR` and `$CRAWL_DIR` (default true). */
  excludeCurrentRuntimeDirs?: boolean;
  /** No progress lines on stderr. */
  quiet?: boolean;
  /** Accepted and ignored: the active profile's lock files are cleared by `launchChromium` before every launch. */
  CHROME_USER_DATA_DIR?: string | null;
}

/** Options of `spawn`: `child_process.spawn`'s that `launchChromium` passes, plus pidguard's scope. */
export interface SpawnOptions {
  /** `'pipe'`, `'ignore'`, or one of those per stream; stdin is always `/dev/null`. */
  stdio?: 'pipe' | 'ignore' | Array<'pipe' | 'ignore' | null | undefined>;
  /** Accepted; the browser always leads a new session (what `true` means). */
  detached?: boolean;
  /** The browser's working directory. */
  cwd?: string;
  /** The browser's whole environment (as `child_process.spawn` reads it; default this process's). */
  env?: NodeJS.ProcessEnv | Record<string, string | number | boolean | undefined>;
  /** The scope (default `'auto'`: a cgroup v2 leaf, else a supervisor). */
  scope?: 'auto' | 'cgroup' | 'supervisor' | 'group';
}

/** What `spawn` returns: the part of `ChildProcess` that `launchChromium` uses. */
export interface ScopedChild extends NodeJS.EventEmitter {
  readonly pid: number | undefined;
  readonly spawnfile: string;
  readonly spawnargs: string[];
  readonly stdin: null;
  readonly stdout: import('stream').Readable | null;
  readonly stderr: import('stream').Readable | null;
  readonly exitCode: number | null;
  readonly signalCode: string | null;
  readonly killed: boolean;
  /** Signal the browser alone through its pinned handle; whether it was sent. */
  kill(signal?: string | number): boolean;
  ref(): this;
  unref(): this;
  on(event: 'exit' | 'close', listener: (code: number | null, signal: string | null) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  on(event: 'spawn', listener: () => void): this;
  once(event: 'exit' | 'close', listener: (code: number | null, signal: string | null) => void): this;
  once(event: 'error', listener: (err: Error) => void): this;
  once(event: 'spawn', listener: () => void): this;
}

/** `child_process.spawn(command, args, { stdio, detached: true })` in a scope, recorded at once. */
export function spawn(command: string, args?: readonly string[], options?: SpawnOptions | null): ScopedChild;
/** Write `pid` with atime and mtime `startTimeSeconds`, plus its start token (xattr), atomically. */
export function writePidWithMtime(filePath: string | Buffer, pid: number, startTimeSeconds: number): void;
/** Write `#!/bin/bash` and the quoted command line, mode 0755, atomically. */
export function writeCmdScript(filePath: string | Buffer, binary: unknown, args: Iterable<unknown>): void;
/** Whether the process exists and has not exited: EPERM is alive, a zombie is not. */
export function isProcessAlive(pid: number): boolean;
/** Stop the browser `pid` (and its process group) when a record or parentage proves it is the browser; resolves to whether it is gone. */
export function killChrome(pid: number, outputDir?: string | null, timeoutMs?: number): Promise<boolean>;
/** Stop the browsers of stale crawls below `snapDir`; resolves to how many were stopped. */
export function killZombieChrome(snapDir?: string | null, options?: KillZombieChromeOptions | null): Promise<number>;

declare const abx: {
  spawn: typeof spawn;
  writePidWithMtime: typeof writePidWithMtime;
  writeCmdScript: typeof writeCmdScript;
  isProcessAlive: typeof isProcessAlive;
  killChrome: typeof killChrome;
  killZombieChrome: typeof killZombieChrome;
};
export default abx;
