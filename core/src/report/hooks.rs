//! The view of one hook of a cleanup: [`HookView`].

use serde::Serialize;

#[cfg(doc)]
use crate::pathtext::path_text;

use super::base::{epoch_secs, slug, ReportPath};

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
