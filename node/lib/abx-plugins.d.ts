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
  writePidWithMtime: typeof writePidWithMtime;
  writeCmdScript: typeof writeCmdScript;
  isProcessAlive: typeof isProcessAlive;
  killChrome: typeof killChrome;
  killZombieChrome: typeof killZombieChrome;
};
export default abx;
