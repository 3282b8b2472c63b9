//! The views of what is known about a process: `lookup`'s [`ProcessInfoView`], `judge`'s
//! [`JudgementView`], the pidfile check's [`PidFileCheckView`].

use serde::Serialize;

use super::base::{slug, ReportPath};

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
