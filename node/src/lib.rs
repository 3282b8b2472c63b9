//! The Node addon behind `require('pidguard')`.
//!
//! A thin shell over `pidguard` (the core crate): every function converts its arguments, makes
//! one core call and converts the result or the error. Nothing here decides anything: defaults
//! (the schedule, the tolerance, the policy) are core's.
//!
//! - Anything that can wait (`cleanupBackgroundHooks`, `terminate`) is an `AsyncTask`: it runs
//!   on libuv's thread pool and returns a `Promise`, so the event loop keeps running during a
//!   schedule. Checks (`validatePidFile`, `checkPidFile`, `lookup`, `startToken`, `judge`) are
//!   synchronous: they read procfs and a file, never wait.
//! - Errors are `Error`s built by one converter (`convert::js_error`): `code` is
//!   `PIDGUARD_<KIND>` derived from `pidguard::ErrorKind`, with `errno`, `path`, `pid` and
//!   `refusal` where known. Bad argument types are `TypeError`s and out-of-range numbers
//!   `RangeError`s, thrown before any system call.
//! - `index.js` adds the seed's snake_case names as aliases of these functions.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod convert;
pub mod guard;
pub mod handle;

use napi::bindgen_prelude::*;
use napi::{Env, Task};
use napi_derive::napi;

use convert::{epoch_secs, js_error, path, PathArg};

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
    convert::no_panic(|| pidguard::write_pid_file_with_mtime(&path(&pid_file), pid, start_time)).map_err(|e| js_error(&env, &e))
}

/// Options of `validatePidFile` and `checkPidFile`.
#[napi(object)]
pub struct PidFileOptions {
    /// The hook's `.sh` command file; when present, the live command must match its last line.
    #[napi(ts_type = "string | Buffer")]
    pub cmd_file: Option<PathArg>,
    /// Allowed distance between the file's mtime and the process's create time, in seconds, for
    /// pidfiles without a start token. Default 5.0 (core's `DEFAULT_TOLERANCE`).
    pub tolerance: Option<f64>,
}

fn pidfile_args(cmd_file: Option<Either<PathArg, PidFileOptions>>, tolerance: Option<f64>) -> (Option<std::path::PathBuf>, f64) {
    let (cmd, opt_tol) = match cmd_file {
        None => (None, None),
        Some(Either::A(p)) => (Some(path(&p)), None),
        Some(Either::B(o)) => (o.cmd_file.as_ref().map(path), o.tolerance),
    };
    (cmd, tolerance.or(opt_tol).unwrap_or(pidguard::DEFAULT_TOLERANCE))
}

/// `validate_pid_file` of abx-dl: `true` when the pidfile names a live process that is the one
/// it recorded (by its start token when the file has one, else by the mtime rule), and its
/// command matches the `.sh` file when given. Every failure is `false`, never an exception.
///
/// Call it as `validatePidFile(pidFile, { cmdFile, tolerance })` or, as the seed does,
/// `validate_pid_file(pidFile, cmdFile, tolerance)`; `tolerance` is in seconds (default 5.0).
/// Throws only for arguments of the wrong type.
#[napi(ts_args_type = "pidFile: string | Buffer, options?: string | Buffer | PidFileOptions | null, tolerance?: number | null")]
pub fn validate_pid_file(
    env: Env,
    pid_file: PathArg,
    options: Option<Either<PathArg, PidFileOptions>>,
    tolerance: Option<f64>,
) -> Result<bool> {
    let (cmd, tol) = pidfile_args(options, tolerance);
    convert::no_panic(|| Ok(pidguard::validate_pid_file(&path(&pid_file), cmd.as_deref(), tol))).map_err(|e| js_error(&env, &e))
}

/// The full answer of `checkPidFile`.
#[napi(object)]
pub struct PidFileCheck {
    /// What `validatePidFile` returns.
    pub valid: bool,
    /// Why: `'valid'`, `'missing'`, `'unreadable'`, `'not-regular'`, `'malformed'`,
    /// `'bad-token'`, `'gone'`, `'zombie'`, `'mismatch'`, `'foreign'`, `'unverifiable'`,
    /// `'mtime-skew'` or `'cmd-mismatch'` (core's `CheckReason` slugs).
    pub reason: String,
    /// The pid in the file, when it parsed.
    pub pid: Option<i32>,
    /// The identity verdict, when the process was judged.
    #[napi(ts_type = "'match' | 'mismatch' | 'unverifiable' | 'gone'")]
    pub verdict: Option<String>,
    /// Why that verdict (`'token-equal'`, `'start-ticks-differ'`, `'zombie'`, …).
    pub verdict_reason: Option<String>,
    /// The recorded start token, when the file carries one.
    pub token: Option<String>,
    /// The file's mtime, seconds since the epoch.
    pub mtime: Option<f64>,
    /// The live process's psutil-compatible create time, seconds since the epoch.
    pub create_time: Option<f64>,
    /// The file's owner uid, when it could be opened.
    pub owner_uid: Option<u32>,
    /// The file's mode bits, when it could be opened.
    pub mode: Option<u32>,
    /// Whether the record belongs to another machine or PID namespace (leave it alone).
    pub foreign: bool,
}

/// Judge an abx-dl pidfile and say why (`validatePidFile` with the reason). Same arguments as
/// `validatePidFile`; never throws for a bad file, only for arguments of the wrong type.
#[napi(ts_args_type = "pidFile: string | Buffer, options?: string | Buffer | PidFileOptions | null, tolerance?: number | null")]
pub fn check_pid_file(
    env: Env,
    pid_file: PathArg,
    options: Option<Either<PathArg, PidFileOptions>>,
    tolerance: Option<f64>,
) -> Result<PidFileCheck> {
    let (cmd, tol) = pidfile_args(options, tolerance);
    convert::no_panic(|| Ok(pidguard::check_pid_file(&path(&pid_file), cmd.as_deref(), tol)))
        .map(pid_file_check)
        .map_err(|e| js_error(&env, &e))
}

fn pid_file_check(c: pidguard::PidFileCheck) -> PidFileCheck {
    PidFileCheck {
        valid: c.valid,
        reason: c.reason.as_str().to_string(),
        pid: c.pid,
        verdict: c.judgement.map(|j| j.verdict.as_str().to_string()),
        verdict_reason: c.judgement.map(|j| j.reason.to_string()),
        token: c.token.as_ref().map(ToString::to_string),
        mtime: c.mtime,
        create_time: c.create_time,
        owner_uid: c.owner.map(|o| o.0),
        mode: c.owner.map(|o| o.1),
        foreign: c.is_foreign(),
    }
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
    convert::no_panic(|| pidguard::write_cmd_file(&convert::path(&path), &argv)).map_err(|e| js_error(&env, &e))
}

/// What procfs says about one process.
#[napi(object)]
pub struct ProcessInfo {
    /// The pid.
    pub pid: i32,
    /// The parent pid.
    pub ppid: i32,
    /// The process group id.
    pub pgid: i32,
    /// The session id.
    pub sid: i32,
    /// The real uid, when readable.
    pub uid: Option<u32>,
    /// The state letter of `/proc/<pid>/stat` (`'Z'` is a zombie).
    pub state: String,
    /// Start time in clock ticks since boot.
    pub start_ticks: f64,
    /// The start token (`linux1:…`), as `startToken(pid)` returns it.
    pub token: String,
    /// psutil-compatible create time, seconds since the epoch (used only by the mtime format).
    pub create_time: f64,
    /// The command name (`comm`).
    pub name: String,
    /// The argv, when readable (empty for kernel threads and zombies).
    pub argv: Option<Vec<String>>,
    /// The executable's path, when readable.
    pub exe: Option<String>,
}

/// Everything procfs says about `pid` now (a zombie is returned with `state === 'Z'`).
///
/// Throws `TypeError`/`RangeError` for a pid that is not an integer in `1..=2^31-1`;
/// `PIDGUARD_INVALID_ARGUMENT` above `pid_max`; `PIDGUARD_NO_SUCH_PROCESS` (errno `ESRCH`) when
/// there is no such process.
#[napi(ts_args_type = "pid: number")]
pub fn lookup(env: Env, pid: Unknown) -> Result<ProcessInfo> {
    let pid = convert::pid(&env, &pid, "pid")?;
    let i = convert::no_panic(|| pidguard::lookup(pid)).map_err(|e| js_error(&env, &e))?;
    Ok(ProcessInfo {
        pid: i.pid,
        ppid: i.ppid,
        pgid: i.pgid,
        sid: i.sid,
        uid: i.uid,
        state: i.state.to_string(),
        start_ticks: i.start_ticks as f64,
        token: i.token.to_string(),
        create_time: i.create_time,
        name: i.name,
        argv: i.argv,
        exe: i.exe.map(|p| p.to_string_lossy().into_owned()),
    })
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
    convert::no_panic(|| pidguard::start_token(pid)).map(|t| t.to_string()).map_err(|e| js_error(&env, &e))
}

/// A verdict with its reason.
#[napi(object)]
pub struct Judgement {
    /// `'match'`, `'mismatch'`, `'unverifiable'` or `'gone'`.
    #[napi(ts_type = "'match' | 'mismatch' | 'unverifiable' | 'gone'")]
    pub verdict: String,
    /// Why (`'token-equal'`, `'boot-id-differs'`, `'start-ticks-differ'`,
    /// `'pidfs-inode-differs'`, `'no-recorded-token'`, `'live-token-unreadable'`,
    /// `'foreign-pid-namespace'`, `'foreign-machine'`, `'no-such-process'`, `'zombie'`).
    pub reason: String,
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
    let j = convert::no_panic(|| pidguard::judge(pid, token.as_ref())).map_err(|e| js_error(&env, &e))?;
    Ok(Judgement { verdict: j.verdict.as_str().to_string(), reason: j.reason.to_string() })
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

/// What happened to the target of `terminate`.
#[napi(object)]
pub struct TerminateReport {
    /// The target's pid.
    pub pid: i32,
    /// `'already-gone'`, `'exited'`, `'unkillable'`, `'refused'` or `'error'`.
    pub outcome: String,
    /// For `'exited'`: the last signal sent before it exited (`'TERM'`, `'KILL'`).
    pub after: Option<String>,
    /// For `'refused'`: why (`'mismatch'`, `'own-group'`, …).
    pub refusal: Option<String>,
    /// For `'error'`: the message.
    pub error: Option<String>,
    /// Every signal sent, in order, by name (`['TERM', 'CONT', 'KILL']`).
    pub signals: Vec<String>,
    /// The exit code when the target is this process's child: the code, or 128 + signal.
    pub exit_code: Option<i32>,
    /// Whether the process group was the target.
    pub group: bool,
    /// Whether the process was reached through a pidfd (false: `kill(2)` after a re-check).
    pub pinned: bool,
    /// How group signals were delivered: `'pidfd-group-flag'`, `'pidfd-members'`, `'killpg'`.
    pub group_mode: Option<String>,
    /// Members of the group still alive at the end (for `'unkillable'`).
    pub survivors: Vec<i32>,
    /// Seconds from the start of termination to the outcome.
    pub elapsed: f64,
}

pub(crate) fn terminate_report(r: pidguard::TerminateReport) -> TerminateReport {
    use pidguard::{GroupMode, Outcome, PinMode};
    TerminateReport {
        pid: r.pid,
        outcome: r.outcome.as_str().to_string(),
        after: r.outcome.after().map(|s| s.name()),
        refusal: r.outcome.refusal().map(|x| x.as_str().to_string()),
        error: match &r.outcome {
            Outcome::Error(e) => Some(e.clone()),
            _ => None,
        },
        signals: r.signals.iter().map(|s| s.name()).collect(),
        exit_code: r.exit.code(),
        group: r.group,
        pinned: r.pin_mode == PinMode::Pidfd,
        group_mode: r.group_mode.map(|m| {
            match m {
                GroupMode::PidfdGroupFlag => "pidfd-group-flag",
                GroupMode::PidfdMembers => "pidfd-members",
                GroupMode::Killpg => "killpg",
            }
            .to_string()
        }),
        survivors: r.survivors,
        elapsed: r.elapsed.as_secs_f64(),
    }
}

/// The work of `terminate`, run on libuv's thread pool.
pub struct TerminateTask {
    pid: i32,
    token: Option<pidguard::StartToken>,
    policy: pidguard::Policy,
    opts: pidguard::TerminateOptions,
}

impl Task for TerminateTask {
    type Output = pidguard::Result<pidguard::TerminateReport>;
    type JsValue = TerminateReport;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(convert::no_panic(|| pidguard::terminate_pid(self.pid, self.token.as_ref(), self.policy, &self.opts)))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> Result<Self::JsValue> {
        output.map(terminate_report).map_err(|e| js_error(&env, &e))
    }
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
pub fn terminate(env: Env, pid: Unknown, options: Option<TerminateOptions>) -> Result<AsyncTask<TerminateTask>> {
    let pid = convert::pid(&env, &pid, "pid")?;
    let o = options.unwrap_or(TerminateOptions { token: None, policy: None, schedule: None, group: None, reap: None });
    let token = o.token.as_deref().map(|t| convert::token(&env, t)).transpose()?;
    let mut opts = pidguard::TerminateOptions::default();
    if let Some(s) = &o.schedule {
        opts.schedule = convert::schedule(&env, s)?;
    }
    if let Some(g) = o.group {
        opts.group = g;
    }
    if let Some(r) = o.reap {
        opts.reap = r;
    }
    let policy = match o.policy.as_deref() {
        None => pidguard::Policy::default(),
        Some(p) => convert::policy(&env, p)?,
    };
    Ok(AsyncTask::new(TerminateTask { pid, token, policy, opts }))
}

/// Options of `cleanupBackgroundHooks`; every default is the seed's (core's).
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
    pub tolerance: Option<f64>,
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
    if let Some(t) = o.tolerance {
        opts.tolerance = t;
    }
    if let Some(n) = o.no_finalize {
        opts.no_finalize = n;
    }
    Ok(opts)
}

/// The report for one background hook.
#[napi(object)]
pub struct HookReport {
    /// The hook's basename (`'on_Snapshot__20_x.bg'`).
    pub name: String,
    /// The directory holding its files.
    pub dir: String,
    /// Its pidfile.
    pub pid_file: String,
    /// The recorded pid, when the file parsed.
    pub pid: Option<i32>,
    /// The identity verdict, when the process was judged.
    #[napi(ts_type = "'match' | 'mismatch' | 'unverifiable' | 'gone'")]
    pub verdict: Option<String>,
    /// The pidfile check's reason (`'valid'`, `'gone'`, `'mtime-skew'`, …).
    pub reason: String,
    /// What cleanup did: `'stale'`, `'foreign'`, `'unreadable'`, `'already-gone'`, `'exited'`,
    /// `'unkillable'`, `'refused'` or `'error'`.
    pub outcome: String,
    /// For `'exited'`: the signal after which the group exited.
    pub after: Option<String>,
    /// For `'refused'`: why.
    pub refusal: Option<String>,
    /// Every signal sent, in order, by name.
    pub signals: Vec<String>,
    /// The exit code when known (this process's child): the code, or 128 + signal.
    pub exit_code: Option<i32>,
    /// The error, for failed hooks (`'Process unkillable'`, a refusal, a finalize failure).
    pub error: Option<String>,
    /// Files under `dir`, relative to it, sorted: everything but the four files (`.pid`, `.sh`,
    /// `.stdout.log`, `.stderr.log`) of every hook the cleanup found in it (one list per
    /// directory).
    pub output_files: Vec<String>,
    /// The argv recorded in the `.sh` file.
    pub cmd: Vec<String>,
    /// Live processes still in a group numbered like a stale record's pid: listed, never
    /// signalled.
    pub unverified_leftovers: Vec<i32>,
    /// When the hook started (the pidfile's mtime), seconds since the epoch.
    pub started_at: Option<f64>,
    /// When cleanup finished with it, seconds since the epoch.
    pub ended_at: f64,
    /// Whether the pidfile was removed.
    pub pid_file_removed: bool,
    /// Whether the hook is finalized as succeeded.
    pub succeeded: bool,
}

fn hook_report(r: pidguard::HookReport) -> HookReport {
    let lossy = |p: &std::path::Path| p.to_string_lossy().into_owned();
    HookReport {
        succeeded: r.succeeded(),
        name: r.name,
        dir: lossy(&r.dir),
        pid_file: lossy(&r.pid_file),
        pid: r.pid,
        verdict: r.verdict.map(|v| v.as_str().to_string()),
        reason: r.reason.as_str().to_string(),
        outcome: r.outcome.as_str().to_string(),
        after: r.outcome.after().map(|s| s.name()),
        refusal: r.outcome.refusal().map(|x| x.as_str().to_string()),
        signals: r.signals.iter().map(|s| s.name()).collect(),
        exit_code: r.exit_code,
        error: r.error,
        output_files: r.output_files.to_vec(),
        cmd: r.cmd,
        unverified_leftovers: r.unverified_leftovers,
        started_at: r.started_at.map(epoch_secs),
        ended_at: epoch_secs(r.ended_at),
        pid_file_removed: r.pid_file_removed,
    }
}

fn cleanup_result(env: &Env, r: pidguard::Result<Vec<pidguard::HookReport>>) -> Result<Vec<HookReport>> {
    r.map(|v| v.into_iter().map(hook_report).collect()).map_err(|e| js_error(env, &e))
}

/// The work of `cleanupBackgroundHooks`, run on libuv's thread pool.
pub struct CleanupTask {
    dir: std::path::PathBuf,
    opts: pidguard::CleanupOptions,
}

impl Task for CleanupTask {
    type Output = pidguard::Result<Vec<pidguard::HookReport>>;
    type JsValue = Vec<HookReport>;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(convert::no_panic(|| pidguard::cleanup_background_hooks(&self.dir, &self.opts, None)))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> Result<Self::JsValue> {
        cleanup_result(&env, output)
    }
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
pub fn cleanup_background_hooks(env: Env, output_dir: PathArg, options: Option<CleanupOptions>) -> Result<AsyncTask<CleanupTask>> {
    let opts = cleanup_options(&env, options)?;
    Ok(AsyncTask::new(CleanupTask { dir: path(&output_dir), opts }))
}

/// `cleanupBackgroundHooks` on the calling thread: blocks the event loop for as long as the
/// schedule runs (up to 3 s per round with the default). Same arguments, returns the reports,
/// throws what the Promise would reject with.
#[napi(ts_args_type = "outputDir: string | Buffer, options?: CleanupOptions | null")]
pub fn cleanup_background_hooks_sync(env: Env, output_dir: PathArg, options: Option<CleanupOptions>) -> Result<Vec<HookReport>> {
    let opts = cleanup_options(&env, options)?;
    cleanup_result(&env, convert::no_panic(|| pidguard::cleanup_background_hooks(&path(&output_dir), &opts, None)))
}

/// Options of `stopPidFile`; every default is core's.
#[napi(object)]
pub struct StopOptions {
    /// Escalation schedule, start-stop-daemon `--retry` syntax (`'TERM/5/KILL/2'`, `'5'`,
    /// `'-9'`); default `'TERM/2/KILL/1'`.
    pub schedule: Option<String>,
    /// The same as `schedule`, under start-stop-daemon's name; give one or the other.
    pub retry: Option<String>,
    /// Also act on a token-less pidfile whose mtime is off (`'mtime-skew'`), with a `warning`
    /// in the report. A recorded token that cannot be confirmed is refused either way.
    /// Default false (strict).
    pub lenient: Option<bool>,
    /// The hook's `.sh` command file; the live argv must match its last line.
    #[napi(ts_type = "string | Buffer")]
    pub cmd_file: Option<PathArg>,
    /// Tolerance of the mtime rule for token-less pidfiles, seconds; default 5.0.
    pub tolerance: Option<f64>,
    /// Signal the process group the target leads (default true).
    pub group: Option<bool>,
}

/// What `stopPidFile` did.
#[napi(object)]
pub struct StopReport {
    /// The pidfile.
    pub pid_file: String,
    /// Its format: `'abx-dl'` or `'guard'`.
    #[napi(ts_type = "'abx-dl' | 'guard'")]
    pub format: String,
    /// `'stale'` (nothing sent; file removed if unchanged), `'already-gone'`, `'exited'`,
    /// `'unkillable'` (file kept), `'refused'` (file kept), `'foreign'` (another machine's or
    /// PID namespace's record, left alone) or `'error'`.
    pub outcome: String,
    /// For `'stale'`: why (`'missing'`, `'gone'`, `'mismatch'`, …).
    pub stale_reason: Option<String>,
    /// For `'exited'`: the signal after which it exited (`'TERM'`, `'KILL'`).
    pub after: Option<String>,
    /// For `'refused'`: why (`'unverifiable'`, `'not-the-recorded-process'`, `'own-group'`, …).
    pub refusal: Option<String>,
    /// The particulars of a refusal (`'owned by uid 65534, target uid 0'`).
    pub detail: Option<String>,
    /// For `'error'`: the message.
    pub error: Option<String>,
    /// Every signal sent, in order, by name (empty when nothing was sent).
    pub signals: Vec<String>,
    /// The exit status `pidguard stop` would give: 0 stopped, 1 nothing to do, 2 unkillable or
    /// error, 3 refused or foreign.
    pub status: i32,
    /// Whether the pidfile was removed.
    pub pid_file_removed: bool,
    /// A warning (for example that the lenient policy was used).
    pub warning: Option<String>,
    /// What `checkPidFile` said about the file.
    pub check: PidFileCheck,
    /// The termination report, when the process was pinned and the schedule ran.
    pub terminate: Option<TerminateReport>,
}

fn stop_report(r: pidguard::StopReport) -> StopReport {
    StopReport {
        pid_file: r.pid_file.to_string_lossy().into_owned(),
        format: r.format.as_str().to_string(),
        outcome: r.outcome.as_str().to_string(),
        stale_reason: r.outcome.stale_reason().map(|x| x.as_str().to_string()),
        after: r.outcome.after().map(|s| s.name()),
        refusal: r.outcome.refusal().map(|x| x.as_str().to_string()),
        detail: r.detail.clone(),
        error: r.outcome.error().map(str::to_string),
        signals: r.signals().iter().map(|s| s.name()).collect(),
        status: r.outcome.exit_code(),
        pid_file_removed: r.pid_file_removed,
        warning: r.warning,
        check: pid_file_check(r.check),
        terminate: r.terminate.map(terminate_report),
    }
}

/// The work of `stopPidFile`, run on libuv's thread pool.
pub struct StopTask {
    pid_file: std::path::PathBuf,
    opts: pidguard::StopOptions,
}

impl Task for StopTask {
    type Output = pidguard::Result<pidguard::StopReport>;
    type JsValue = StopReport;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(convert::no_panic(|| pidguard::stop_pid_file(&self.pid_file, &self.opts)))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> Result<Self::JsValue> {
        output.map(stop_report).map_err(|e| js_error(&env, &e))
    }
}

/// Stop the process an abx-dl pidfile names, with its process group and nothing else, off the
/// event loop (core's `stop_pid_file`, what `pidguard stop` does). A stale record (gone,
/// proven reuse, missing) sends nothing and removes the file if unchanged; a record whose
/// identity is not proven is refused; otherwise the process is pinned, re-checked, and the
/// schedule runs.
///
/// Throws at once for option types, `schedule` and `retry` both given, or a malformed
/// schedule (`PIDGUARD_INVALID_ARGUMENT`). Rejects (nothing sent) with `PIDGUARD_MALFORMED`
/// (content is not one pid, or a bad token xattr), `PIDGUARD_UNTRUSTED` (not a regular file),
/// `PIDGUARD_PERMISSION_DENIED` (unreadable).
#[napi(ts_args_type = "pidFile: string | Buffer, options?: StopOptions | null", ts_return_type = "Promise<StopReport>")]
pub fn stop_pid_file(env: Env, pid_file: PathArg, options: Option<StopOptions>) -> Result<AsyncTask<StopTask>> {
    let mut opts = pidguard::StopOptions::default();
    if let Some(o) = options {
        let schedule = match (&o.schedule, &o.retry) {
            (Some(_), Some(_)) => return Err(convert::invalid_value(&env, "give the schedule as \"schedule\" or \"retry\", not both")),
            (Some(s), None) | (None, Some(s)) => Some(s),
            (None, None) => None,
        };
        if let Some(s) = schedule {
            opts.schedule = convert::schedule(&env, s)?;
        }
        if o.lenient == Some(true) {
            opts.policy = pidguard::Policy::Lenient;
        }
        opts.cmd_file = o.cmd_file.as_ref().map(path);
        if let Some(t) = o.tolerance {
            opts.tolerance = t;
        }
        if let Some(g) = o.group {
            opts.group = g;
        }
    }
    Ok(AsyncTask::new(StopTask { pid_file: path(&pid_file), opts }))
}
