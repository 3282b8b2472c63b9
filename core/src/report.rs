//! Reports as every binding shows them: flat values, described once.
//!
//! The rich result types of the library ([`TerminateReport`](crate::TerminateReport),
//! [`StopReport`](crate::StopReport), [`HookReport`](crate::HookReport), …) carry enums with data,
//! durations and system times. The structs here are the same results flattened to what crosses
//! a language boundary: slugs as strings (`"exited"`, `"token-equal"`), signals by name
//! (`"TERM"`), times as seconds (`f64`), pids as `i32`. Each is defined once, here:
//!
//! - Rust and the `pidguard` command serialize them with serde (`--json`);
//! - Python gets them as classes (`pidguard.TerminateReport`, …) through pyo3 when this crate is
//!   built with the `python` feature (attributes are the field names);
//! - Node gets them as objects through napi-rs when built with the `node` feature (keys are the
//!   field names in camelCase; the `index.d.ts` interfaces are generated from these structs);
//! - C copies them into its `#[repr(C)]` structs field by field, and a test fails when a C
//!   struct lacks a field named here.
//!
//! [`FIELDS`] lists every report's field names in declaration order; the binding tests compare
//! their surfaces with it.
//!
//! Every conversion is `From<&rich type>`: no decision is made here, only spelling.
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Serialize, Serializer};

use crate::identity::{GroupMode, PinMode};
use crate::signal::Outcome;

pub use crate::pathtext::path_text;

/// `text` (a name, a path, a message or a note that came from files) as human output shows it:
/// every control character — C0 (`\0`–`\x1f`), DEL and C1 (U+0080–U+009F) — escaped, so that
/// no escape sequence reaches the terminal and a newline in a name cannot forge a report line.
/// `\n`, `\r` and `\t` are written so; ESC is `\x1b`, and the others `\xNN` (C0, DEL) or
/// `\u{NN}` (C1). Everything else is unchanged (a name already in the [`path_text`] form stays
/// lossless: its backslashes are doubled there).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let is_control = |c: char| c.is_control();
    if !text.chars().any(is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A path in a report. Rust sees a [`Path`] (it derefs to one) and C its bytes; Python gets it
/// as pyo3 converts a `PathBuf` (a `pathlib.Path`, lossless: bytes that are not UTF-8 are
/// surrogate-escaped, `os.fsencode` gives them back); JSON and JavaScript get its
/// [`path_text`] form, lossless too (a path given as a Node `Buffer` may hold any byte but
/// NUL, and napi's own `PathBuf` conversion throws on those bytes, which would lose the whole
/// report).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ReportPath(pub PathBuf);

impl std::ops::Deref for ReportPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ReportPath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl From<PathBuf> for ReportPath {
    fn from(p: PathBuf) -> Self {
        ReportPath(p)
    }
}

impl From<&Path> for ReportPath {
    fn from(p: &Path) -> Self {
        ReportPath(p.to_path_buf())
    }
}

impl From<&str> for ReportPath {
    fn from(p: &str) -> Self {
        ReportPath(p.into())
    }
}

impl Serialize for ReportPath {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&path_text(self.0.as_os_str()))
    }
}

/// Seconds since the epoch of a system time (negative before 1970).
pub(crate) fn epoch_secs(t: SystemTime) -> f64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

fn slug(s: &impl ToString) -> String {
    s.to_string()
}

/// What procfs says about one live (or zombie) process: `lookup`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, name = "ProcessInfo", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "ProcessInfo", object_from_js = false))]
pub struct ProcessInfoView {
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
    /// The state letter of `/proc/<pid>/stat` as the kernel gives it. `Z` alone is not proof of
    /// exit (a leader whose main thread exited while others run shows `Z`): see `is_zombie`.
    pub state: String,
    /// Start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
    pub start_ticks: i64,
    /// The start token (`linux1:…`).
    pub token: String,
    /// psutil-compatible create time, seconds since the epoch.
    pub create_time: f64,
    /// The command name (`comm`).
    pub name: String,
    /// The argv, when readable (empty for kernel threads and zombies).
    pub argv: Option<Vec<String>>,
    /// The executable's path, when readable.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub exe: Option<ReportPath>,
    /// Whether the process is a zombie — exited as a whole, not yet reaped — by core's one rule
    /// (the pidfd's readiness; without a pidfd, state `Z` with a thread count of 1).
    pub is_zombie: bool,
    /// Whether the process leads its process group (pgid = pid).
    pub is_group_leader: bool,
}

impl From<&crate::ProcessInfo> for ProcessInfoView {
    fn from(i: &crate::ProcessInfo) -> Self {
        ProcessInfoView {
            pid: i.pid,
            ppid: i.ppid,
            pgid: i.pgid,
            sid: i.sid,
            uid: i.uid,
            state: i.state.to_string(),
            start_ticks: i64::try_from(i.start_ticks).unwrap_or(i64::MAX),
            token: i.token.to_string(),
            create_time: i.create_time,
            name: i.name.clone(),
            argv: i.argv.clone(),
            exe: i.exe.clone().map(ReportPath),
            is_zombie: i.is_zombie(),
            is_group_leader: i.is_group_leader(),
        }
    }
}

/// A verdict with its reason: `judge`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, name = "Judgement", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "Judgement", object_from_js = false))]
pub struct JudgementView {
    /// `match`, `mismatch`, `unverifiable` or `gone`.
    pub verdict: String,
    /// Why (`token-equal`, `start-ticks-differ`, `pidfs-inode-differs`, `no-recorded-token`,
    /// `live-identity-unreadable: EMFILE`, `no-such-process`, `zombie`, …).
    pub reason: String,
}

impl From<&crate::Judgement> for JudgementView {
    fn from(j: &crate::Judgement) -> Self {
        JudgementView { verdict: j.verdict.as_str().to_string(), reason: slug(&j.reason) }
    }
}

/// Whether an abx-dl pidfile is valid, and why: `check_pid_file`'s
/// answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, name = "PidFileCheck", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "PidFileCheck", object_from_js = false))]
pub struct PidFileCheckView {
    /// What `validate_pid_file` returns.
    pub valid: bool,
    /// Why: `valid`, `missing`, `unreadable`, `not-regular`, `malformed`, `bad-token`, `gone`,
    /// `zombie`, `mismatch`, `foreign`, `unverifiable`, `mtime-skew` or `cmd-mismatch`.
    pub reason: String,
    /// The pid in the file, when it parsed.
    pub pid: Option<i32>,
    /// The identity verdict, when the process was judged: `match`, `mismatch`, `unverifiable`
    /// or `gone`.
    pub verdict: Option<String>,
    /// Why that verdict (`token-equal`, `start-ticks-differ`, `zombie`, …).
    pub verdict_reason: Option<String>,
    /// The start token recorded in the file's `user.pidguard.token` xattr, when present.
    pub token: Option<String>,
    /// The file's mtime, seconds since the epoch.
    pub mtime: Option<f64>,
    /// The live process's psutil-compatible create time, seconds since the epoch, when the
    /// mtime rule needed it (token-less records).
    pub create_time: Option<f64>,
    /// The file's owner uid, when it could be opened.
    pub owner_uid: Option<u32>,
    /// The file's permission bits (`st_mode & 0o7777`, e.g. `0o644`), when it could be opened.
    pub mode: Option<u32>,
    /// Whether the record belongs to another machine or PID namespace (leave it alone).
    pub is_foreign: bool,
}

impl From<&crate::PidFileCheck> for PidFileCheckView {
    fn from(c: &crate::PidFileCheck) -> Self {
        PidFileCheckView {
            valid: c.valid,
            reason: c.reason.as_str().to_string(),
            pid: c.pid,
            verdict: c.judgement.map(|j| j.verdict.as_str().to_string()),
            verdict_reason: c.judgement.map(|j| slug(&j.reason)),
            token: c.token.as_ref().map(slug),
            mtime: c.mtime,
            create_time: c.create_time,
            owner_uid: c.owner.map(|o| o.0),
            // The permission bits (`0o644`), the same for both formats; the file type is known.
            mode: c.owner.map(|o| o.1 & 0o7777),
            is_foreign: c.is_foreign(),
        }
    }
}

/// What `terminate` did to one process.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, name = "TerminateReport", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "TerminateReport", object_from_js = false))]
pub struct TerminateView {
    /// The target's pid.
    pub pid: i32,
    /// `exited`, `unkillable` or `error`; `already-gone` when a kept handle's process had
    /// already exited; `refused` when a safety rule refused a target of a batch (`terminate`
    /// of one pid raises `NoSuchProcess` or `Refused` instead, before anything is sent).
    pub outcome: String,
    /// Whether the target is gone now (outcome `already-gone` or `exited`).
    pub stopped: bool,
    /// For `exited`: the last signal sent before it exited (`TERM`, `KILL`).
    pub after: Option<String>,
    /// For `refused`: why (`mismatch`, `own-group`, `untrusted-pidfile`, …).
    pub refusal: Option<String>,
    /// For `error`: the message.
    pub error: Option<String>,
    /// Every signal sent, in order, by name (`TERM`, `CONT`, `KILL`).
    pub signals: Vec<String>,
    /// Shell-style exit code (the code, or 128 + signal) when the target is the caller's own
    /// child; absent when unknown.
    pub exit_code: Option<i32>,
    /// The signal number that ended the caller's own child, when known.
    pub exit_signal: Option<i32>,
    /// Whether the process group was the target.
    pub group: bool,
    /// Whether the process was reached through a pidfd (false: `kill(2)` after a re-check).
    pub pinned: bool,
    /// How group signals were delivered: `pidfd-group-flag`, `pidfd-members` or `killpg`.
    pub group_mode: Option<String>,
    /// Members of the group still alive at the end (for `unkillable`).
    pub survivors: Vec<i32>,
    /// Seconds from the start of the call to the outcome.
    pub elapsed: f64,
    /// What was stopped: `group` (the process group, or the process alone when `group` is
    /// false), `cgroup` (the record's cgroup v2 leaf) or `supervisor` (the record's supervisor's
    /// tree).
    pub scope: String,
}

impl From<&crate::TerminateReport> for TerminateView {
    fn from(r: &crate::TerminateReport) -> Self {
        TerminateView {
            pid: r.pid,
            outcome: r.outcome.as_str().to_string(),
            stopped: r.outcome.is_stopped(),
            after: r.outcome.after().map(|s| s.name()),
            refusal: r.outcome.refusal().map(|x| x.as_str().to_string()),
            error: match &r.outcome {
                Outcome::Error(e) => Some(e.clone()),
                _ => None,
            },
            signals: r.signals.iter().map(|s| s.name()).collect(),
            exit_code: r.exit.code(),
            exit_signal: r.exit.signal(),
            group: r.group,
            pinned: r.pin_mode == PinMode::Pidfd,
            group_mode: r.group_mode.map(|m| group_mode_slug(m).to_string()),
            survivors: r.survivors.clone(),
            elapsed: r.elapsed.as_secs_f64(),
            scope: r.scope.as_str().to_string(),
        }
    }
}

fn group_mode_slug(m: GroupMode) -> &'static str {
    match m {
        GroupMode::PidfdGroupFlag => "pidfd-group-flag",
        GroupMode::PidfdMembers => "pidfd-members",
        GroupMode::Killpg => "killpg",
    }
}

/// What `stop_pid_file` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, name = "StopReport", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "StopReport", object_from_js = false))]
pub struct StopView {
    /// The pidfile.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub pid_file: ReportPath,
    /// Its format: `abx-dl` or `guard`.
    pub format: String,
    /// `stale` (nothing sent; file removed if unchanged), `already-gone`, `exited`,
    /// `unkillable` (file kept), `refused` (file kept), `foreign` (another machine's or PID
    /// namespace's record, left alone) or `error`.
    pub outcome: String,
    /// For `stale`: why (`missing`, `gone`, `mismatch`, …).
    pub stale_reason: Option<String>,
    /// For `exited`: the signal after which it exited (`TERM`, `KILL`).
    pub after: Option<String>,
    /// For `refused`: the rule (`unverifiable`, `untrusted-pidfile`, `own-group`, …).
    pub refusal: Option<String>,
    /// The particulars of a refusal (`owned by uid 65534, target uid 0`).
    pub detail: Option<String>,
    /// For `error`: the message.
    pub error: Option<String>,
    /// Every signal sent, in order, by name (empty when nothing was sent).
    pub signals: Vec<String>,
    /// The exit status `pidguard stop` gives for this outcome (`ExitCode`):
    /// 0 stopped, 1 nothing to do, 2 unkillable or error, 3 refused or foreign, 5 undecided (the
    /// identity could not be read), 77 the kernel refused the signal (EPERM).
    pub status: i32,
    /// Whether the pidfile was removed.
    pub pid_file_removed: bool,
    /// A warning (for example that the lenient policy was used).
    pub warning: Option<String>,
    /// What `check_pid_file` said about the file.
    pub check: PidFileCheckView,
    /// The termination report, when the process was pinned and the schedule ran.
    pub terminate: Option<TerminateView>,
    /// What the record aims at: `cgroup` or `supervisor` (the scope recorded with a command
    /// pidguard started: its whole tree), or `group` (no scope, or the recorded one is gone).
    pub scope: String,
}

impl From<&crate::StopReport> for StopView {
    fn from(r: &crate::StopReport) -> Self {
        StopView {
            pid_file: r.pid_file.clone().into(),
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
            warning: r.warning.clone(),
            check: (&r.check).into(),
            terminate: r.terminate.as_ref().map(Into::into),
            scope: r.scope.as_str().to_string(),
        }
    }
}

/// What `cleanup_background_hooks` did with one hook.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, dict, name = "HookReport", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "HookReport", object_from_js = false))]
pub struct HookView {
    /// The hook's basename (`on_Snapshot__20_x.bg`), in the lossless
    /// [`path_text`] form (a name that is not UTF-8 or holds a
    /// backslash is escaped there).
    pub name: String,
    /// The directory holding its files.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub dir: ReportPath,
    /// Its pidfile.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub pid_file: ReportPath,
    /// The recorded pid, when the file parsed.
    pub pid: Option<i32>,
    /// The identity verdict, when judged: `match`, `mismatch`, `unverifiable` or `gone`.
    pub verdict: Option<String>,
    /// Why that verdict (`token-equal`, `no-such-process`, …), when judged.
    pub verdict_reason: Option<String>,
    /// The pidfile check's reason (`valid`, `gone`, `mtime-skew`, …).
    pub reason: String,
    /// What cleanup did: `stale`, `foreign`, `unreadable`, `unverified`, `already-gone`,
    /// `exited`, `unkillable`, `refused` or `error`.
    pub outcome: String,
    /// For `exited`: the signal after which the group exited.
    pub after: Option<String>,
    /// For `refused`: why.
    pub refusal: Option<String>,
    /// Every signal sent, in order, by name.
    pub signals: Vec<String>,
    /// The exit code when known (the caller's own child): the code, or 128 + signal.
    pub exit_code: Option<i32>,
    /// The error, for failed hooks (`Process unkillable`, a refusal, a finalize failure).
    pub error: Option<String>,
    /// What the cleanup could not read beside the hook (a log that is a symlink or a FIFO, a
    /// log cut at 16 MiB), one sentence each.
    pub notes: Vec<String>,
    /// Files under `dir`, relative to it, in the lossless
    /// [`path_text`] form, sorted: everything but the four files (`.pid`, `.sh`,
    /// `.stdout.log`, `.stderr.log`) of every hook the cleanup found in it.
    pub output_files: Vec<String>,
    /// The argv recorded in the `.sh` file.
    pub cmd: Vec<String>,
    /// Live processes whose group is the recorded pid of a stale record: listed, never
    /// signalled.
    pub unverified_leftovers: Vec<i32>,
    /// When the hook started (the pidfile's mtime), seconds since the epoch.
    pub started_at: Option<f64>,
    /// When cleanup finished with it, seconds since the epoch.
    pub ended_at: f64,
    /// Seconds the schedule ran for this hook, when it ran.
    pub elapsed: Option<f64>,
    /// Whether the pidfile was removed.
    pub pid_file_removed: bool,
    /// Whether the hook counts as succeeded.
    pub succeeded: bool,
    /// What the record aims at: `cgroup`, `supervisor` (its scope: the hook's whole tree) or
    /// `group` (no scope: the hook's process group).
    pub scope: String,
}

impl From<&crate::HookReport> for HookView {
    fn from(r: &crate::HookReport) -> Self {
        HookView {
            name: r.name.clone(),
            dir: r.dir.clone().into(),
            pid_file: r.pid_file.clone().into(),
            error: r.error.clone(),
            notes: r.notes.clone(),
            cmd: r.cmd.clone(),
            unverified_leftovers: r.unverified_leftovers.clone(),
            ..HookView::scalars(r)
        }
    }
}

/// From an owned report the strings and lists are moved, not copied (a cleanup of thousands of
/// hooks converts every report).
impl From<crate::HookReport> for HookView {
    fn from(r: crate::HookReport) -> Self {
        let v = HookView::scalars(&r);
        HookView {
            name: r.name,
            dir: r.dir.into(),
            pid_file: r.pid_file.into(),
            error: r.error,
            notes: r.notes,
            cmd: r.cmd,
            unverified_leftovers: r.unverified_leftovers,
            ..v
        }
    }
}

impl HookView {
    /// Everything but the owned strings and lists, which the two conversions take differently.
    fn scalars(r: &crate::HookReport) -> HookView {
        HookView {
            name: String::new(),
            dir: ReportPath::default(),
            pid_file: ReportPath::default(),
            pid: r.pid,
            verdict: r.verdict.map(|v| v.as_str().to_string()),
            verdict_reason: r.verdict_reason.map(|x| slug(&x)),
            reason: r.reason.as_str().to_string(),
            outcome: r.outcome.as_str().to_string(),
            after: r.outcome.after().map(|s| s.name()),
            refusal: r.outcome.refusal().map(|x| x.as_str().to_string()),
            signals: r.signals.iter().map(|s| s.name()).collect(),
            exit_code: r.exit_code,
            error: None,
            notes: Vec::new(),
            output_files: r.output_files.to_vec(),
            cmd: Vec::new(),
            unverified_leftovers: Vec::new(),
            started_at: r.started_at.map(epoch_secs),
            ended_at: epoch_secs(r.ended_at),
            elapsed: r.elapsed.map(|d| d.as_secs_f64()),
            pid_file_removed: r.pid_file_removed,
            succeeded: r.succeeded(),
            scope: r.scope.as_str().to_string(),
        }
    }
}

/// What `spawn` started: `launch::spawn`'s answer (`pidguard run --json` prints the same).
///
/// The caller's own child is `supervisor_pid` when there is one, else `pid`: the spawn does not
/// reap it. Until it is reaped it keeps its pid (and, for `pid`, its process group) its own, so
/// that a later stop can still prove them; reap it once it is stopped (or has ended) to get the
/// command's status (a supervisor exits with the command's status).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, name = "Spawned", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "Spawned", object_from_js = false))]
pub struct SpawnView {
    /// The command's pid (the one in the pidfile).
    pub pid: i32,
    /// The pidfile written.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub pid_file: ReportPath,
    /// The `.sh` command file beside an abx-dl pidfile (absent for a guard record).
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub cmd_file: Option<ReportPath>,
    /// Where the command's stdout goes.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub stdout: ReportPath,
    /// Where the command's stderr goes.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub stderr: ReportPath,
    /// The scope the command runs in: `cgroup` (a cgroup v2 leaf of its own), `supervisor` (under
    /// a subreaper supervisor) or `group` (its process group only).
    pub scope: String,
    /// The scope as recorded beside the pidfile (`cgroup:<boot id>:<cgroup id>:<path>` or
    /// `supervisor:<pid>:<token>`); absent for `group`, or when it could not be recorded (see
    /// `note`).
    pub scope_record: Option<String>,
    /// The supervisor's pid (`supervisor` scope): the caller's child, which exits with the
    /// command's status once the command's whole tree has exited.
    pub supervisor_pid: Option<i32>,
    /// Why the scope is weaker than asked for (no cgroup leaf could be made, the file system
    /// has no user xattrs to record it in), when it is.
    pub note: Option<String>,
}

impl From<&crate::launch::Spawned> for SpawnView {
    fn from(s: &crate::launch::Spawned) -> Self {
        SpawnView {
            pid: s.pid,
            pid_file: s.pid_file.clone().into(),
            cmd_file: s.cmd_file.clone().map(ReportPath),
            stdout: s.stdout.clone().into(),
            stderr: s.stderr.clone().into(),
            scope: s.scope.as_str().to_string(),
            scope_record: s.scope_record.as_ref().map(|r| r.to_string()),
            supervisor_pid: s.supervisor_pid,
            note: s.note.clone(),
        }
    }
}

/// The same conversions from an owned report (`report.into()`).
macro_rules! from_owned {
    ($($rich:ty => $view:ty),*) => {$(
        impl From<$rich> for $view {
            fn from(r: $rich) -> Self {
                (&r).into()
            }
        }
    )*};
}

from_owned!(
    crate::ProcessInfo => ProcessInfoView,
    crate::Judgement => JudgementView,
    crate::PidFileCheck => PidFileCheckView,
    crate::TerminateReport => TerminateView,
    crate::StopReport => StopView,
    crate::launch::Spawned => SpawnView
);

/// Every report's name (as the bindings show it) and its field names in declaration order.
/// The binding tests compare their classes, objects and C structs with this table, so a field
/// added here and not there (or the other way round) fails a test.
pub const FIELDS: &[(&str, &[&str])] = &[
    (
        "ProcessInfo",
        &[
            "pid", "ppid", "pgid", "sid", "uid", "state", "start_ticks", "token", "create_time", "name", "argv", "exe", "is_zombie",
            "is_group_leader",
        ],
    ),
    ("Judgement", &["verdict", "reason"]),
    (
        "PidFileCheck",
        &["valid", "reason", "pid", "verdict", "verdict_reason", "token", "mtime", "create_time", "owner_uid", "mode", "is_foreign"],
    ),
    (
        "TerminateReport",
        &[
            "pid", "outcome", "stopped", "after", "refusal", "error", "signals", "exit_code", "exit_signal", "group", "pinned", "group_mode",
            "survivors", "elapsed", "scope",
        ],
    ),
    (
        "StopReport",
        &[
            "pid_file", "format", "outcome", "stale_reason", "after", "refusal", "detail", "error", "signals", "status", "pid_file_removed",
            "warning", "check", "terminate", "scope",
        ],
    ),
    (
        "HookReport",
        &[
            "name", "dir", "pid_file", "pid", "verdict", "verdict_reason", "reason", "outcome", "after", "refusal", "signals", "exit_code",
            "error", "notes", "output_files", "cmd", "unverified_leftovers", "started_at", "ended_at", "elapsed", "pid_file_removed",
            "succeeded", "scope",
        ],
    ),
    ("Spawned", &["pid", "pid_file", "cmd_file", "stdout", "stderr", "scope", "scope_record", "supervisor_pid", "note"]),
];

/// The Python side of the reports: `repr()`, `to_dict()`, and the truth value of a check. Only
/// with the `python` feature (the Python binding).
#[cfg(feature = "python")]
mod python {
    use pyo3::prelude::*;
    use pyo3::types::PyDict;

    use super::*;

    /// `Name(a=<repr>, b=<repr>)` from the object's own attributes.
    fn repr(obj: &Bound<'_, PyAny>, name: &str, fields: &[&str]) -> PyResult<String> {
        let parts = fields.iter().map(|f| Ok(format!("{f}={}", obj.getattr(*f)?.repr()?))).collect::<PyResult<Vec<_>>>()?;
        Ok(format!("{name}({})", parts.join(", ")))
    }

    /// The report as a plain dict (paths as `str`, nested reports as dicts): `json.loads` of its
    /// serde JSON, so it holds exactly the fields of [`FIELDS`].
    fn to_dict<'py, T: Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyDict>> {
        let text = serde_json::to_string(v).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        Ok(py.import("json")?.call_method1("loads", (text,))?.cast_into::<PyDict>()?)
    }

    macro_rules! py_report {
        ($t:ty, $name:literal, [$($f:literal),*]) => {
            #[pymethods]
            impl $t {
                fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
                    repr(slf.as_any(), $name, &[$($f),*])
                }
                /// The report as a plain dict (paths as str), e.g. for `json.dumps`.
                fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                    to_dict(py, self)
                }
            }
        };
    }

    impl<'py> IntoPyObject<'py> for &ReportPath {
        type Target = PyAny;
        type Output = Bound<'py, PyAny>;
        type Error = PyErr;
        fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            (&self.0).into_pyobject(py)
        }
    }

    impl<'py> IntoPyObject<'py> for ReportPath {
        type Target = PyAny;
        type Output = Bound<'py, PyAny>;
        type Error = PyErr;
        fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            (&self.0).into_pyobject(py)
        }
    }

    py_report!(ProcessInfoView, "ProcessInfo", ["pid", "name", "state", "token"]);
    py_report!(JudgementView, "Judgement", ["verdict", "reason"]);
    py_report!(TerminateView, "TerminateReport", ["pid", "outcome", "signals"]);
    py_report!(StopView, "StopReport", ["outcome", "signals", "pid_file_removed"]);
    py_report!(HookView, "HookReport", ["name", "pid", "outcome", "reason"]);
    py_report!(SpawnView, "Spawned", ["pid", "scope", "supervisor_pid", "note"]);

    #[pymethods]
    impl PidFileCheckView {
        fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
            repr(slf.as_any(), "PidFileCheck", &["valid", "reason", "pid"])
        }
        /// The report as a plain dict, e.g. for `json.dumps`.
        fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
            to_dict(py, self)
        }
        /// Truthy when the pidfile is valid (what `validate_pid_file` returns).
        fn __bool__(&self) -> bool {
            self.valid
        }
    }
}

/// The JavaScript side of [`ReportPath`]: a string, lossy. Only with the `node` feature.
#[cfg(feature = "node")]
#[allow(unsafe_code)] // napi's conversion trait is an `unsafe fn`; this one only forwards `env`.
mod node {
    use napi::bindgen_prelude::{ToNapiValue, TypeName};
    use napi::{sys, ValueType};

    use super::ReportPath;

    impl TypeName for ReportPath {
        fn type_name() -> &'static str {
            "String"
        }
        fn value_type() -> ValueType {
            ValueType::String
        }
    }

    impl ToNapiValue for ReportPath {
        unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
            // SAFETY: the caller's guarantee for `env` is passed on unchanged.
            unsafe { String::to_napi_value(env, super::path_text(val.0.as_os_str()).into_owned()) }
        }
    }

    impl ToNapiValue for &ReportPath {
        unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
            // SAFETY: as above.
            unsafe { String::to_napi_value(env, super::path_text(val.0.as_os_str()).into_owned()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys<T: Serialize>(v: &T) -> Vec<String> {
        match serde_json::to_value(v).unwrap() {
            serde_json::Value::Object(m) => m.keys().cloned().collect(),
            other => panic!("not an object: {other}"),
        }
    }

    fn fields(name: &str) -> Vec<String> {
        FIELDS.iter().find(|(n, _)| *n == name).unwrap().1.iter().map(|s| s.to_string()).collect()
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    /// `FIELDS` is the table the bindings are checked against: it must name exactly the fields
    /// each struct serializes.
    #[test]
    fn fields_table_names_every_serialized_field() {
        let check = PidFileCheckView {
            valid: false,
            reason: "gone".into(),
            pid: None,
            verdict: None,
            verdict_reason: None,
            token: None,
            mtime: None,
            create_time: None,
            owner_uid: None,
            mode: None,
            is_foreign: false,
        };
        let term = TerminateView {
            pid: 2,
            outcome: "exited".into(),
            stopped: true,
            after: None,
            refusal: None,
            error: None,
            signals: vec![],
            exit_code: None,
            exit_signal: None,
            group: false,
            pinned: true,
            group_mode: None,
            survivors: vec![],
            elapsed: 0.0,
            scope: "group".into(),
        };
        let stop = StopView {
            pid_file: "p".into(),
            format: "abx-dl".into(),
            outcome: "stale".into(),
            stale_reason: None,
            after: None,
            refusal: None,
            detail: None,
            error: None,
            signals: vec![],
            status: 1,
            pid_file_removed: false,
            warning: None,
            check: check.clone(),
            terminate: Some(term.clone()),
            scope: "group".into(),
        };
        let info = ProcessInfoView::from(&crate::lookup(std::process::id() as i32).unwrap());
        let judgement = JudgementView { verdict: "gone".into(), reason: "no-such-process".into() };
        let hook = HookView {
            name: "h".into(),
            dir: "d".into(),
            pid_file: "d/h.pid".into(),
            pid: None,
            verdict: None,
            verdict_reason: None,
            reason: "gone".into(),
            outcome: "stale".into(),
            after: None,
            refusal: None,
            signals: vec![],
            exit_code: None,
            error: None,
            notes: vec![],
            output_files: vec![],
            cmd: vec![],
            unverified_leftovers: vec![],
            started_at: None,
            ended_at: 0.0,
            elapsed: None,
            pid_file_removed: true,
            succeeded: true,
            scope: "group".into(),
        };
        assert_eq!(sorted(keys(&info)), sorted(fields("ProcessInfo")));
        assert_eq!(sorted(keys(&judgement)), sorted(fields("Judgement")));
        assert_eq!(sorted(keys(&check)), sorted(fields("PidFileCheck")));
        assert_eq!(sorted(keys(&term)), sorted(fields("TerminateReport")));
        assert_eq!(sorted(keys(&stop)), sorted(fields("StopReport")));
        let spawned = SpawnView {
            pid: 2,
            pid_file: "p.pid".into(),
            cmd_file: Some("p.sh".into()),
            stdout: "p.stdout.log".into(),
            stderr: "p.stderr.log".into(),
            scope: "supervisor".into(),
            scope_record: None,
            supervisor_pid: Some(3),
            note: None,
        };
        assert_eq!(sorted(keys(&hook)), sorted(fields("HookReport")));
        assert_eq!(sorted(keys(&spawned)), sorted(fields("Spawned")));
        assert_eq!(FIELDS.len(), 7);
    }
}
