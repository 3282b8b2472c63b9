//! The Node addon behind `require('pidguard')`.
//!
//! A thin shell over `pidguard` (the core crate): every function converts its arguments, makes
//! one core call and converts the result or the error. Nothing here decides anything: defaults
//! (the schedule, the tolerance, the policy) are core's, and so are the reports (`ProcessInfo`,
//! `Judgement`, `PidFileCheck`, `TerminateReport`, `StopReport`, `HookReport`, `Spawned` are
//! `pidguard::report`'s structs, napi objects through core's `node` feature; their `index.d.ts`
//! interfaces come from core's type definitions).
//!
//! - Anything that can wait (`cleanupBackgroundHooks`, `terminate`, `stopPidFile`, …) is a
//!   `convert::CoreTask`: it runs on libuv's thread pool and returns a `Promise`, so the event
//!   loop keeps running during a schedule. Checks (`validatePidFile`, `checkPidFile`, `lookup`, `startToken`, `judge`) are
//!   synchronous: they read procfs and a file, never wait; so is `spawn`, which returns once the
//!   command has exec'd and never waits for it.
//! - Errors are `Error`s (`RangeError`s for `PIDGUARD_INVALID_ARGUMENT`) built by one converter (`convert::js_error`): `code` is
//!   `PIDGUARD_<KIND>` derived from `pidguard::ErrorKind`, with `errno`, `path`, `pid` and
//!   `refusal` where known. Bad argument types are `TypeError`s and out-of-range numbers
//!   `RangeError`s, thrown before any system call.
//! - `index.js` adds the seed's snake_case names as aliases of these functions.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod convert;
pub mod guard;
pub mod handle;
pub mod probe;
mod records;

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;
// Core's reports, under the names JavaScript knows them by (`index.d.ts` takes their interfaces
// from core's type definitions).
use pidguard::report::{
    HookView as HookReport, JudgementView as Judgement, PidFileCheckView as PidFileCheck, ProcessInfoView as ProcessInfo,
    SpawnView as Spawned, StopView as StopReport, TerminateView as TerminateReport,
};

use convert::{call, path, task, CoreTask, PathArg};

/// The pidguard version (the crate version; `package.json` carries the same).
#[napi]
pub const VERSION: &str = pidguard::VERSION;

/// One error kind of pidguard, from core's single table (`pidguard::ErrorKind::ALL`).
#[napi(object)]
pub struct ErrorKindInfo {
    /// The `code` property of errors of this kind: `'PIDGUARD_' + slug` in upper snake case.
    pub code: String,
    /// The stable slug (`'no-such-process'`), also the error's `kind` property.
    pub slug: String,
    /// The stable number; the C status of this kind is its negation.
    pub number: i32,
    /// The errno an error of this kind carries when the failure has none of its own.
    pub errno: Option<i32>,
}

/// Every error kind, in code order. Errors thrown by this module have `code` set to one of the
/// `code`s listed here.
#[napi]
pub fn error_kinds() -> Vec<ErrorKindInfo> {
    pidguard::ErrorKind::ALL
        .iter()
        .map(|k| ErrorKindInfo {
            code: convert::code_of(*k),
            slug: k.slug().to_string(),
            number: k.code(),
            errno: k.default_errno(),
        })
        .collect()
}

/// Write an abx-dl pidfile: content = the decimal pid (no newline), atime and mtime =
/// `startTime`, written through a temporary file and `rename` (no reader ever sees a partial
/// file), with the process's start token in the `user.pidguard.token` xattr when it can be read
/// and the process started within 5 s of `startTime`.
///
/// - `pidFile`: `string` or `Buffer`.
/// - `pid`: integer in `1..=2^31-1` (`TypeError`/`RangeError` otherwise, before anything runs).
/// - `startTime`: seconds since the epoch, a float (`Date.now() / 1000` right after spawning).
///
/// Throws `PIDGUARD_INVALID_ARGUMENT` when `startTime` is not finite or `pid` is above
/// `pid_max`; `PIDGUARD_UNTRUSTED` when the target is a symlink, FIFO or directory (nothing it
/// points to is touched); `PIDGUARD_NOT_FOUND`, `PIDGUARD_PERMISSION_DENIED`, `PIDGUARD_IO` from
/// the file system. Nothing is written when it throws.
#[napi(ts_args_type = "pidFile: string | Buffer, pid: number, startTime: number")]
pub fn write_pid_file_with_mtime(env: Env, pid_file: PathArg, pid: Unknown, start_time: Unknown) -> Result<()> {
    let pid = convert::pid(&env, &pid, "pid")?;
    let start_time = convert::number(&env, &start_time, "startTime")?;
    call(&env, || pidguard::write_pid_file_with_mtime(&path(&pid_file), pid, start_time))
}

/// Options of `validatePidFile` and `checkPidFile` (core's `CheckOptions`: the same names,
/// defaults and errors as in every other surface).
#[napi(object)]
pub struct PidFileOptions {
    /// The hook's `.sh` command file (abx-dl up to 1.12); when present, the live command must
    /// match its last line.
    #[napi(ts_type = "string | Buffer")]
    pub cmd_file: Option<PathArg>,
    /// The hook's argv instead (abx-dl's current release, `expected_argv`); an empty array
    /// records nothing. Giving both `argv` and `cmdFile` is a `RangeError`
    /// (`PIDGUARD_INVALID_ARGUMENT`).
    pub argv: Option<Vec<String>>,
    /// Allowed distance between the file's mtime and the process's create time, in seconds, for
    /// pidfiles without a start token. `undefined` or `null`: 5.0 (core's `DEFAULT_TOLERANCE`).
    /// A value that is not a finite number >= 0 admits no skew (`mtime-skew`), never an error.
    #[napi(ts_type = "number | null")]
    pub tolerance: Option<convert::Seconds>,
}

/// The second argument of `validatePidFile` and `checkPidFile`: the command file, or the options.
type CmdFileOrOptions = Option<Either<PathArg, PidFileOptions>>;

/// Core's `check_pid_file_with` with the arguments of `validatePidFile` and `checkPidFile`,
/// parsed by core's `CheckOptions::from_parts`.
fn check(env: &Env, pid_file: &PathArg, cmd_file: CmdFileOrOptions, tolerance: Option<f64>) -> Result<pidguard::PidFileCheck> {
    let (cmd, argv, opt_tol) = match cmd_file {
        None => (None, None, None),
        Some(Either::A(p)) => (Some(path(&p)), None, None),
        Some(Either::B(o)) => (o.cmd_file.as_ref().map(path), o.argv, convert::given(o.tolerance)),
    };
    call(env, || {
        let opts = pidguard::CheckOptions::from_parts(cmd.as_deref(), argv.as_deref(), tolerance.or(opt_tol))?;
        Ok(pidguard::check_pid_file_with(&path(pid_file), &opts))
    })
}

/// `validate_pid_file` of abx-dl: `true` when the pidfile names a live process that is the one
/// it recorded (by its start token when the file has one, else by the mtime rule), and its
/// command matches the `.sh` file when given. Every failure is `false`, never an exception.
///
/// Call it as `validatePidFile(pidFile, { cmdFile, argv, tolerance })` or, as the seed does,
/// `validate_pid_file(pidFile, cmdFile, tolerance)`; `tolerance` is in seconds (default 5.0).
/// Throws only for bad arguments: a `TypeError` for a wrong type, a `RangeError`
/// (`PIDGUARD_INVALID_ARGUMENT`) for `argv` and `cmdFile` both given.
#[napi(ts_args_type = "pidFile: string | Buffer, options?: string | Buffer | PidFileOptions | null, tolerance?: number | null")]
pub fn validate_pid_file(env: Env, pid_file: PathArg, options: CmdFileOrOptions, tolerance: Option<f64>) -> Result<bool> {
    let (cmd, argv, opt_tol) = match options {
        None => (None, None, None),
        Some(Either::A(p)) => (Some(path(&p)), None, None),
        Some(Either::B(o)) => (o.cmd_file.as_ref().map(path), o.argv, convert::given(o.tolerance)),
    };
    call(&env, || {
        let opts = pidguard::CheckOptions::from_parts(cmd.as_deref(), argv.as_deref(), tolerance.or(opt_tol))?;
        Ok(pidguard::validate_pid_file_with(&path(&pid_file), &opts))
    })
}

/// Judge an abx-dl pidfile and say why (`validatePidFile` with the reason). Same arguments as
/// `validatePidFile`; never throws for a bad file, only for arguments of the wrong type.
#[napi(ts_args_type = "pidFile: string | Buffer, options?: string | Buffer | PidFileOptions | null, tolerance?: number | null")]
pub fn check_pid_file(env: Env, pid_file: PathArg, options: CmdFileOrOptions, tolerance: Option<f64>) -> Result<PidFileCheck> {
    check(&env, &pid_file, options, tolerance).map(|c| (&c).into())
}

/// Write a hook's command file: `#!/bin/bash\n` + the argv joined as `shlex.join` joins it +
/// `\n`, mode 0755, through a temporary file and `rename`.
///
/// As abx-dl writes it: an empty argv gives the shebang line alone, and a line break inside an
/// argument is quoted (and read back as one argument). Throws `PIDGUARD_INVALID_ARGUMENT` for
/// an argument with a NUL;
/// `PIDGUARD_UNTRUSTED` when `path` is a symlink, FIFO or directory; file system errors.
#[napi(ts_args_type = "path: string | Buffer, argv: string[]")]
pub fn write_cmd_file(env: Env, path: PathArg, argv: Vec<String>) -> Result<()> {
    call(&env, || pidguard::write_cmd_file(&convert::path(&path), &argv))
}

/// Everything procfs says about `pid` now (a zombie is returned with `state === 'Z'`).
///
/// Throws `TypeError`/`RangeError` for a pid that is not an integer in `1..=2^31-1`;
/// `PIDGUARD_INVALID_ARGUMENT` above `pid_max`; `PIDGUARD_NO_SUCH_PROCESS` (errno `ESRCH`) when
/// there is no such process.
#[napi(ts_args_type = "pid: number")]
pub fn lookup(env: Env, pid: Unknown) -> Result<ProcessInfo> {
    let pid = convert::pid(&env, &pid, "pid")?;
    call(&env, || pidguard::lookup(pid).map(|i| (&i).into()))
}

/// The start token of the live process `pid`:
/// `linux1:<machine_id>:<boot_id>:<pidns_ino>:<start_ticks>:<pidfs_ino or ->`. Store it with a
/// pid to recognise the process later (`judge`, `terminate`).
///
/// Throws `TypeError`/`RangeError` for a bad pid; `PIDGUARD_NO_SUCH_PROCESS` when there is no
/// such process or it is a zombie.
#[napi(ts_args_type = "pid: number")]
pub fn start_token(env: Env, pid: Unknown) -> Result<String> {
    let pid = convert::pid(&env, &pid, "pid")?;
    call(&env, || pidguard::start_token(pid).map(|t| t.to_string()))
}

/// Is the process at `pid` the one `token` names? One of four verdicts, never a guess. Without a
/// token a live process is `'unverifiable'`. `EPERM` is never read as dead.
///
/// Throws `TypeError`/`RangeError` for a bad pid; `PIDGUARD_INVALID_ARGUMENT` for a malformed
/// token or a pid above `pid_max`.
#[napi(ts_args_type = "pid: number, token?: string | null")]
pub fn judge(env: Env, pid: Unknown, token: Option<String>) -> Result<Judgement> {
    let pid = convert::pid(&env, &pid, "pid")?;
    let token = token.as_deref().map(|t| convert::token(&env, t)).transpose()?;
    call(&env, || pidguard::judge(pid, token.as_ref()).map(|j| (&j).into()))
}

/// Options of `terminate`.
#[napi(object)]
pub struct TerminateOptions {
    /// The start token recorded for the process (from `startToken`). Without it the identity is
    /// `'unverifiable'`, which only the lenient policy accepts.
    pub token: Option<String>,
    /// Who may be signalled on the strength of the verdict: `'strict'` (core's default; only
    /// `'match'`) or `'lenient'` (`'unverifiable'` too, with a warning: for a record written
    /// before tokens existed that the user names explicitly).
    #[napi(ts_type = "'strict' | 'lenient'")]
    pub policy: Option<String>,
    /// start-stop-daemon `--retry` syntax, e.g. `'TERM/2/KILL/1'` (the default), `'5'`, `'-9'`.
    pub schedule: Option<String>,
    /// Signal the process group the target leads (default true). A target that does not lead
    /// its group is always signalled alone.
    pub group: Option<bool>,
    /// Reap the target if it is this process's own child (default false: Node's
    /// `child_process` reaps its children itself).
    pub reap: Option<bool>,
}

/// Stop the process `pid` (and the process group it leads) with an escalation schedule, off the
/// event loop. The process is pinned with a pidfd and its identity checked against `token` under
/// `policy` before any signal; signals go only through the pin, so none can reach a process that
/// reused the number.
///
/// Resolves to a `TerminateReport` (`outcome` `'exited'`, `'unkillable'`, …). Throws at once
/// `TypeError`/`RangeError` for a bad pid or option type and `PIDGUARD_INVALID_ARGUMENT` for a
/// malformed token or schedule. Rejects with `PIDGUARD_REFUSED` (`.refusal` says why: `'init'`,
/// `'own-pid'`, `'mismatch'`, `'unverifiable'`, …) when the target may not be signalled,
/// `PIDGUARD_NO_SUCH_PROCESS` (errno `ESRCH`) when it is gone or a zombie, and
/// `PIDGUARD_PERMISSION_DENIED` (errno `EPERM`) when the kernel refused the signal (another
/// user's process).
#[napi(ts_args_type = "pid: number, options?: TerminateOptions | null", ts_return_type = "Promise<TerminateReport>")]
pub fn terminate(env: Env, pid: Unknown, options: Option<TerminateOptions>) -> Result<AsyncTask<CoreTask<TerminateReport>>> {
    let pid = convert::pid(&env, &pid, "pid")?;
    let o = options.unwrap_or(TerminateOptions { token: None, policy: None, schedule: None, group: None, reap: None });
    let token = o.token.as_deref().map(|t| convert::token(&env, t)).transpose()?;
    let policy = convert::policy(&env, o.policy.as_deref())?;
    let opts = convert::terminate_options(&env, o.schedule.as_deref(), o.group, o.reap)?;
    Ok(task(move || pidguard::terminate_pid(pid, token.as_ref(), policy, &opts).map(|r| (&r).into())))
}

/// Options of `cleanupBackgroundHooks`: core's `CleanupOptions`, the same on every surface;
/// every default is the seed's (core's).
#[napi(object)]
pub struct CleanupOptions {
    /// Where the `Process` and `ArchiveResult` JSON lines are appended, one object a line.
    #[napi(ts_type = "string | Buffer")]
    pub index_path: Option<PathArg>,
    /// When false (the default), the lines appended to `indexPath` are also printed to stdout,
    /// as abx-dl does.
    pub is_tty: Option<bool>,
    /// Escalation schedule, start-stop-daemon `--retry` syntax; default `'TERM/2/KILL/1'`.
    pub schedule: Option<String>,
    /// Glob (`*`, `?`) matched against file names below the directory; default `'on_*.pid'`.
    pub pattern: Option<String>,
    /// Tolerance of the mtime rule for pidfiles without a token, seconds; default 5.0.
    #[napi(ts_type = "number | null")]
    pub tolerance: Option<convert::Seconds>,
    /// Skip finalizing (no index lines, logs kept); default false.
    pub no_finalize: Option<bool>,
}

fn cleanup_options(env: &Env, o: Option<CleanupOptions>) -> Result<pidguard::CleanupOptions> {
    let mut opts = pidguard::CleanupOptions::default();
    let Some(o) = o else { return Ok(opts) };
    if let Some(p) = &o.index_path {
        opts.index_path = Some(path(p));
    }
    if let Some(t) = o.is_tty {
        opts.is_tty = t;
    }
    if let Some(s) = &o.schedule {
        opts.schedule = convert::schedule(env, s)?;
    }
    if let Some(p) = o.pattern {
        opts.pattern = p;
    }
    if let Some(t) = convert::given(o.tolerance) {
        opts.tolerance = t;
    }
    if let Some(n) = o.no_finalize {
        opts.no_finalize = n;
    }
    Ok(opts)
}

/// Stop every background hook below `outputDir` that is provably still itself, with its
/// process group (all hooks in parallel, with the schedule), remove stale pidfiles without
/// signalling anything, and finalize each hook as abx-dl does (JSON lines to `indexPath`).
/// Runs off the event loop; resolves to one `HookReport` per pidfile found.
///
/// Throws at once for argument types and a malformed schedule; rejects with
/// `PIDGUARD_NOT_FOUND`, `PIDGUARD_PERMISSION_DENIED`, `PIDGUARD_INVALID_ARGUMENT` (not a
/// directory) or `PIDGUARD_IO` only when `outputDir` cannot be read: every per-hook problem is
/// in its report.
#[napi(ts_args_type = "outputDir: string | Buffer, options?: CleanupOptions | null", ts_return_type = "Promise<HookReport[]>")]
pub fn cleanup_background_hooks(env: Env, output_dir: PathArg, options: Option<CleanupOptions>) -> Result<AsyncTask<CoreTask<Vec<HookReport>>>> {
    let opts = cleanup_options(&env, options)?;
    let dir = path(&output_dir);
    Ok(task(move || cleanup(&dir, &opts)))
}

fn cleanup(dir: &std::path::Path, opts: &pidguard::CleanupOptions) -> pidguard::Result<Vec<HookReport>> {
    pidguard::cleanup_background_hooks(dir, opts, None).map(|v| v.iter().map(Into::into).collect())
}

/// `cleanupBackgroundHooks` on the calling thread: blocks the event loop for as long as the
/// schedule runs (up to 3 s per round with the default). Same arguments, returns the reports,
/// throws what the Promise would reject with.
#[napi(ts_args_type = "outputDir: string | Buffer, options?: CleanupOptions | null")]
pub fn cleanup_background_hooks_sync(env: Env, output_dir: PathArg, options: Option<CleanupOptions>) -> Result<Vec<HookReport>> {
    let opts = cleanup_options(&env, options)?;
    call(&env, || cleanup(&path(&output_dir), &opts))
}

/// Options of `stopPidFile`: core's `StopOptions`, the same on every surface; every default is
/// core's.
#[napi(object)]
pub struct StopOptions {
    /// Escalation schedule, start-stop-daemon `--retry` syntax (`'TERM/5/KILL/2'`, `'5'`,
    /// `'-9'`); default `'TERM/2/KILL/1'`.
    pub schedule: Option<String>,
    /// Deprecated: `schedule` under start-stop-daemon's name. Giving both with different values
    /// throws a `RangeError`.
    pub retry: Option<String>,
    /// `'strict'` (default): act only on a proven identity. `'lenient'`: also act on a token-less
    /// pidfile whose mtime is off (`'mtime-skew'`), with a `warning` in the report. A recorded
    /// token that cannot be confirmed is refused either way.
    #[napi(ts_type = "'strict' | 'lenient'")]
    pub policy: Option<String>,
    /// Deprecated: `policy: 'lenient'` (true) or `'strict'` (false). Giving both with different
    /// meanings throws a `RangeError`.
    pub lenient: Option<bool>,
    /// The hook's `.sh` command file; the live argv must match its last line. Default: the
    /// `.sh` beside the pidfile when it exists.
    #[napi(ts_type = "string | Buffer")]
    pub cmd_file: Option<PathArg>,
    /// Tolerance of the mtime rule for token-less pidfiles, seconds; default 5.0.
    #[napi(ts_type = "number | null")]
    pub tolerance: Option<convert::Seconds>,
    /// Signal the process group the target leads (default true).
    pub group: Option<bool>,
}

/// One of an option and its deprecated alias: both given with different values is an invalid
/// argument (a `RangeError`).
fn one_of(env: &Env, name: &str, v: Option<String>, alias: &str, a: Option<String>) -> Result<Option<String>> {
    match (v, a) {
        (Some(v), Some(a)) if v != a => {
            Err(convert::js_error(env, &pidguard::Error::invalid(format!("\"{name}\" ({v:?}) and its alias \"{alias}\" ({a:?}) disagree: give one"))))
        }
        (v, a) => Ok(v.or(a)),
    }
}

/// Core's stop options from JavaScript's (core parses and validates them).
fn stop_options(env: &Env, o: Option<StopOptions>) -> Result<pidguard::StopOptions> {
    let Some(o) = o else { return Ok(pidguard::StopOptions::default()) };
    let schedule = one_of(env, "schedule", o.schedule, "retry", o.retry)?;
    let lenient = o.lenient.map(|l| if l { "lenient" } else { "strict" }.to_string());
    let policy = one_of(env, "policy", o.policy, "lenient", lenient)?;
    pidguard::StopOptions::from_args(schedule.as_deref(), policy.as_deref(), o.cmd_file.as_ref().map(path), convert::given(o.tolerance), o.group)
        .map_err(|e| convert::js_error(env, &e))
}

/// Stop the process an abx-dl pidfile names, with its process group and nothing else, off the
/// event loop (core's `stop_pid_file`, what `pidguard stop` does). A stale record (gone,
/// proven reuse, missing) sends nothing and removes the file if unchanged; a record whose
/// identity is not proven is refused; otherwise the process is pinned, re-checked, and the
/// schedule runs.
///
/// Throws at once a `RangeError` (`PIDGUARD_INVALID_ARGUMENT`) for a malformed schedule, an
/// unknown policy, a tolerance that is not finite seconds >= 0, or an option and its alias
/// (`schedule`/`retry`, `policy`/`lenient`) that disagree; a `TypeError` for option types.
/// Rejects (nothing sent) with `PIDGUARD_MALFORMED` (content is not one pid, or a bad token
/// xattr), `PIDGUARD_UNTRUSTED` (not a regular file), `PIDGUARD_PERMISSION_DENIED` (unreadable).
#[napi(ts_args_type = "pidFile: string | Buffer, options?: StopOptions | null", ts_return_type = "Promise<StopReport>")]
pub fn stop_pid_file(env: Env, pid_file: PathArg, options: Option<StopOptions>) -> Result<AsyncTask<CoreTask<StopReport>>> {
    let opts = stop_options(&env, options)?;
    let pid_file = path(&pid_file);
    Ok(task(move || pidguard::stop_pid_file(&pid_file, &opts).map(|r| (&r).into())))
}

/// Options of `pinPidFile`; every default is core's.
#[napi(object)]
pub struct PinOptions {
    /// The hook's argv (abx-dl's current release keeps it in memory); an empty list records
    /// nothing. Give this or `cmdFile`, not both.
    pub argv: Option<Vec<String>>,
    /// The hook's `.sh` command file (older releases).
    #[napi(ts_type = "string | Buffer")]
    pub cmd_file: Option<PathArg>,
    /// Tolerance of the mtime rule for token-less pidfiles, seconds; default 5.0.
    #[napi(ts_type = "number | null")]
    pub tolerance: Option<convert::Seconds>,
}

/// Judge an abx-dl pidfile as abx-dl's `graceful_kill_by_pid_file` does and pin what it names
/// (core's `pin_pid_file`), synchronously (it reads procfs and the record, it never waits): the
/// directory is opened once and the record read from it (owner and mode from that descriptor);
/// a record proven stale (gone, zombie, mismatch, mtime-skew, cmd-mismatch, malformed) is
/// retired by content through that directory's descriptor; core's owner rule (a file owned by
/// another uid aims only at that uid's processes) and the protected targets apply.
///
/// Returns a `ProcessRef` when the process may be signalled (signal it, `terminate()` it, or
/// `await ref.wait(seconds)` on its pidfd; a record another user owns comes restricted to that
/// user's processes), else the `StopReport` saying why not (`outcome` `'stale'`, `'refused'`
/// or `'foreign'`, `refusal`, `pidFileRemoved`).
///
/// Throws a `RangeError` `PIDGUARD_INVALID_ARGUMENT` for `argv` and `cmdFile` both given (before
/// anything is read) and for a tolerance that is not finite seconds >= 0;
/// `PIDGUARD_UNTRUSTED` for a symlink/FIFO; `PIDGUARD_MALFORMED` for a bad token xattr;
/// `PIDGUARD_PERMISSION_DENIED` when the record cannot be read.
#[napi(ts_args_type = "pidFile: string | Buffer, options?: PinOptions | null")]
pub fn pin_pid_file(env: Env, pid_file: PathArg, options: Option<PinOptions>) -> Result<Either<handle::ProcessRef, StopReport>> {
    let (argv, cmd_file, tolerance) = match options {
        Some(o) => (o.argv, o.cmd_file.as_ref().map(path), convert::given(o.tolerance)),
        None => (None, None, None),
    };
    let pin = call(&env, || {
        let opts = pidguard::CheckOptions::from_parts(cmd_file.as_deref(), argv.as_deref(), tolerance)?;
        pidguard::pin_pid_file(&path(&pid_file), opts.recorded, opts.tolerance)
    })?;
    Ok(match pin {
        pidguard::PidFilePin::Pinned(h) => Either::A(handle::ProcessRef::new(h)),
        pidguard::PidFilePin::Left(r) => Either::B((&r).into()),
    })
}

/// Whether a process with this pid exists and has not exited (core's `is_process_alive`, abx-dl's
/// `is_process_alive`): a zombie is not alive; a process whose identity cannot be read (EPERM,
/// a `hidepid` /proc) is; a pid <= 0 (a group, every process) or above pid_max is not. Throws
/// `TypeError` for a non-number.
#[napi(ts_args_type = "pid: number")]
pub fn is_process_alive(env: Env, pid: Unknown) -> Result<bool> {
    let n = convert::number(&env, &pid, "pid")?;
    // A fraction or NaN names no process; core decides the rest (<= 0, above pid_max).
    if n.fract() != 0.0 || n.is_nan() {
        return Ok(false);
    }
    Ok(pidguard::is_process_alive(n.clamp(i64::MIN as f64, i64::MAX as f64) as i64))
}

/// Options of `spawn`; every default is core's.
#[napi(object)]
pub struct SpawnOptions {
    /// The scope the command runs in: `'auto'` (the default: a cgroup v2 leaf of its own where
    /// one can be made, else a subreaper supervisor; `note` says why no leaf), `'cgroup'` (a leaf,
    /// or an error), `'supervisor'`, or `'group'` (its process group only: a descendant that
    /// calls `setsid` escapes a stop).
    #[napi(ts_type = "'auto' | 'cgroup' | 'supervisor' | 'group'")]
    pub scope: Option<String>,
    /// The command's working directory (default: this process's).
    #[napi(ts_type = "string | Buffer")]
    pub cwd: Option<PathArg>,
    /// Where the command's stdout goes, truncated (default `<pidFile without .pid>.stdout.log`).
    #[napi(ts_type = "string | Buffer")]
    pub stdout: Option<PathArg>,
    /// Where the command's stderr goes, truncated (default `<pidFile without .pid>.stderr.log`).
    #[napi(ts_type = "string | Buffer")]
    pub stderr: Option<PathArg>,
    /// Write a guard record (one JSON object; exactly one of racing starters wins) instead of an
    /// abx-dl pidfile and its `.sh` (default false).
    pub guard: Option<bool>,
    /// The command's environment: exactly these names and string values, in the object's key
    /// order (default: this process's environment). Its `PATH` is where a bare program name is
    /// looked up. `process.env` is never touched. A name that is empty or holds `=` or NUL, or a
    /// value with NUL: `PIDGUARD_INVALID_ARGUMENT`; a value that is not a string: a `TypeError`
    /// (unlike `child_process.spawn`, nothing is coerced; `undefined` is not skipped).
    pub env: Option<indexmap::IndexMap<String, String>>,
    /// Start the command as this user (`child_process.spawn`'s `uid`): a uid, or a user name
    /// (all digits and no such name: that number). Its real, effective and saved uid become
    /// exactly that, set in its own process before it execs (setgroups, setresgid, setresuid,
    /// then read back). Unlike `child_process`, `uid` alone also sets the user's primary group
    /// and its groups as initgroups(3) gives them: this process's groups never pass to the
    /// command. The scope (its leaf or supervisor), the pidfile and the logs stay this
    /// process's. Root may ask for any identity, and so may root that lowered only its effective
    /// uid (ids (0, U, 0)); anyone else only for ids it already holds — else
    /// `PIDGUARD_PERMISSION_DENIED` before anything is made.
    #[napi(ts_type = "number | string")]
    pub uid: Option<Either<f64, String>>,
    /// Its real, effective and saved gid (`child_process.spawn`'s `gid`): a gid or a group name.
    /// Default with `uid`: the user's primary group; without: unchanged.
    #[napi(ts_type = "number | string")]
    pub gid: Option<Either<f64, String>>,
    /// Exactly these supplementary groups (gids or names; `[]`: none). Default with `uid`: the
    /// user's groups; without: unchanged. (`child_process` has no such option.)
    #[napi(ts_type = "Array<number | string>")]
    pub groups: Option<Vec<Either<f64, String>>>,
}

/// A `uid`, `gid` or `groups` entry as core's: an integer from 0 to 4294967294 (else a
/// `RangeError`-like `ERR_INVALID_ARG_VALUE`), or a name core looks up.
fn id_spec(env: &Env, v: Either<f64, String>, what: &str) -> Result<pidguard::launch::IdSpec> {
    match v {
        Either::A(n) if n.fract() == 0.0 && (0.0..4294967295.0).contains(&n) => Ok(pidguard::launch::IdSpec::Id(n as u32)),
        Either::A(n) => Err(convert::invalid_value(env, &format!("{what}: {n} is not a user or group id (an integer from 0 to 4294967294)"))),
        Either::B(s) => s.parse().map_err(|e: pidguard::Error| convert::invalid_value(env, &format!("{what}: {}", e.message()))),
    }
}

/// Start `argv` in a new session inside a scope, with its output in files (stdin `/dev/null`,
/// this process's environment unless `options.env` is given), and record it in `pidFile` (core's `launch::spawn`, what
/// `pidguard run` does). Synchronous: it returns once the command has exec'd and is recorded,
/// and never waits for the command. `stopPidFile` and `cleanupBackgroundHooks` then stop every
/// process of the scope, `setsid` or not.
///
/// The caller's own child is `supervisorPid` when there is one, else `pid`. Node does not know
/// it (`child_process` reaps only what it spawned) and pidguard does not reap it: until it is
/// reaped its pid, and the process group `pid` leads, stay provably the command's, so a later
/// stop still reaches them. Reap it once it is stopped or has ended:
/// `const ref = ProcessRef.openChild(child); await ref.wait(); (await ref.terminate({ reap: true })).exitCode`
/// (a supervisor exits with the command's status). A long-running program that never reaps keeps
/// one zombie per spawn until it exits.
///
/// Throws a `TypeError` for an `argv` that is not an array of strings or a bad option type, and
/// (`ERR_INVALID_ARG_VALUE`) for an unknown scope or a `uid`/`gid`/`groups` entry that is not an
/// id or a name; `PIDGUARD_PERMISSION_DENIED` when this process may not start a command as the
/// identity asked for; `PIDGUARD_NOT_FOUND` for a user or group name with no entry; `PIDGUARD_INVALID_ARGUMENT` (a `RangeError`)
/// for an empty `argv` or a NUL in a word; `PIDGUARD_NOT_FOUND`/`PIDGUARD_PERMISSION_DENIED` when the program or `cwd`
/// cannot be used, `PIDGUARD_HELD` when `pidFile` still names a live process — all before
/// anything is created; `PIDGUARD_IO` when `scope: 'cgroup'` and no leaf can be made, or when the
/// fork, the cgroup join or the exec fails (the message names the step). On any error nothing is
/// left running and no leaf is left.
#[napi(ts_args_type = "argv: string[], pidFile: string | Buffer, options?: SpawnOptions | null")]
pub fn spawn(env: Env, argv: Unknown, pid_file: PathArg, options: Option<SpawnOptions>) -> Result<Spawned> {
    let (argv, opts) = spawn_options(&env, &argv, options)?;
    let pid_file = path(&pid_file);
    call(&env, || pidguard::launch::spawn(&pid_file, &argv, &opts).map(|s| (&s).into()))
}

/// What `spawnPiped` started: `spawn`'s report and the read ends of the command's output.
#[napi(object, object_from_js = false)]
pub struct PipedSpawn {
    /// As `spawn` returns it (`stdout` and `stderr` are `''`: no log files).
    pub spawned: Spawned,
    /// The read end of the command's stdout: a pipe descriptor now owned by the caller (hand it
    /// to `new net.Socket({ fd, readable: true })`, which closes it; or close it with
    /// `fs.closeSync`). Close-on-exec, blocking.
    pub stdout_fd: i32,
    /// The read end of the command's stderr (as `stdoutFd`).
    pub stderr_fd: i32,
}

/// `spawn` with the command's stdout and stderr in two pipes instead of log files (core's
/// `SpawnOptions::pipe_output`): `child_process.spawn`'s `stdio: ['ignore', 'pipe', 'pipe']`,
/// with the scope, the session and the record of `spawn`. The descriptors are the caller's:
/// close them (or the streams made of them) when done, or they leak. A read sees end-of-file
/// once the command and every descendant holding the streams have closed them.
///
/// Throws as `spawn`, and `PIDGUARD_INVALID_ARGUMENT` when `options.stdout` or `options.stderr`
/// is given.
#[napi(ts_args_type = "argv: string[], pidFile: string | Buffer, options?: SpawnOptions | null")]
pub fn spawn_piped(env: Env, argv: Unknown, pid_file: PathArg, options: Option<SpawnOptions>) -> Result<PipedSpawn> {
    use std::os::fd::IntoRawFd;
    let (argv, mut opts) = spawn_options(&env, &argv, options)?;
    opts.pipe_output = true;
    let pid_file = path(&pid_file);
    let mut s = call(&env, || pidguard::launch::spawn(&pid_file, &argv, &opts))?;
    let spawned: Spawned = (&s).into();
    let Some(p) = s.output.take() else { return Err(napi::Error::from_reason("spawnPiped: core gave no pipes")) };
    Ok(PipedSpawn { spawned, stdout_fd: p.stdout.into_raw_fd(), stderr_fd: p.stderr.into_raw_fd() })
}

/// Move the record of `pid` that `spawn` (or `spawnPiped`) just wrote at `from` to `to`, with
/// its start token and scope, for a spawner that learns the final path only after the spawn
/// (core's `launch::move_record`): `from` must name `pid`, carry a token and be valid (or name
/// the caller's exited, unreaped child); `to` must be free (no record of a live process);
/// `to` gets the pid, mtime `startTime` (seconds since the epoch, taken right after the spawn),
/// the token and the scope; then `from` and its `.sh` are removed by content. Returns `true`
/// when the whole record moved; `false` when `to` was written without the token or scope (no
/// user xattrs there, or `startTime` more than 5 s from the process's start): `from` is kept.
///
/// Throws (nothing written) `TypeError`/`RangeError` for a bad `pid` or `startTime`;
/// `PIDGUARD_INVALID_ARGUMENT` when `from` names another pid, has no token, cannot be judged
/// valid, or is `to`; `PIDGUARD_NOT_FOUND` when there is no record at `from`;
/// `PIDGUARD_NO_SUCH_PROCESS` when `pid` is gone; `PIDGUARD_HELD` when `to` names a live
/// process; `PIDGUARD_UNTRUSTED` and file-system errors from the writer.
#[napi(ts_args_type = "from: string | Buffer, to: string | Buffer, pid: number, startTime: number")]
pub fn move_record(env: Env, from: PathArg, to: PathArg, pid: Unknown, start_time: Unknown) -> Result<bool> {
    let pid = convert::pid(&env, &pid, "pid")?;
    let start_time = convert::number(&env, &start_time, "startTime")?;
    call(&env, || pidguard::launch::move_record(&path(&from), &path(&to), pid, start_time))
}

/// `spawn`'s arguments as core's.
fn spawn_options(env: &Env, argv: &Unknown, options: Option<SpawnOptions>) -> Result<(Vec<String>, pidguard::launch::SpawnOptions)> {
    let env = *env;
    let argv = convert::string_array(&env, argv, "argv")?;
    let mut opts = pidguard::launch::SpawnOptions::default();
    if let Some(o) = options {
        if let Some(s) = &o.scope {
            // An unknown name is an invalid option value, as for `policy`.
            opts.scope = s.parse().map_err(|e: pidguard::Error| convert::invalid_value(&env, e.message()))?;
        }
        opts.cwd = o.cwd.as_ref().map(path);
        opts.stdout = o.stdout.as_ref().map(path);
        opts.stderr = o.stderr.as_ref().map(path);
        if o.guard == Some(true) {
            opts.format = pidguard::launch::RecordFormat::Guard;
        }
        opts.env = o.env.map(|e| e.into_iter().map(|(k, v)| (k.into(), v.into())).collect());
        opts.user = o.uid.map(|u| id_spec(&env, u, "uid")).transpose()?;
        opts.group = o.gid.map(|g| id_spec(&env, g, "gid")).transpose()?;
        opts.extra_groups = o.groups.map(|gs| gs.into_iter().map(|g| id_spec(&env, g, "groups")).collect::<Result<Vec<_>>>()).transpose()?;
    }
    Ok((argv, opts))
}
