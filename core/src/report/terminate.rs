//! The views of signalling: `terminate`'s [`TerminateView`] and `stop_pid_file`'s [`StopView`].

use serde::Serialize;

use crate::identity::{GroupMode, PinMode};
use crate::signal::Outcome;

use super::base::ReportPath;
use super::process::PidFileCheckView;

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
