//! The view of what `spawn` started: [`SpawnView`].

use serde::Serialize;

use super::base::ReportPath;

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
    /// The identity the command was started as, `uid=U gid=G groups=A,B` (the parts asked
    /// for; the record keeps the same text); absent when it runs as the caller.
    pub run_as: Option<String>,
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
            run_as: s.run_as.as_ref().map(|r| r.to_string()),
        }
    }
}
