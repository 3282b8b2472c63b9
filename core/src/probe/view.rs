//! [`super::Probe`] as the bindings show it (described once, here, as the other reports are in
//! [`crate::report`]).

use serde::Serialize;

use super::record::Probe;

/// What `probe_pid_file` found: the record's check plus how many processes its scope still
/// holds. A probe never acts: nothing was signalled or removed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, name = "Probe", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "Probe", object_from_js = false))]
pub struct ProbeView {
    /// The record's format: `abx-dl` or `guard`.
    pub format: String,
    /// The record's check reason (`valid`, `gone`, `unverifiable`, …; as `check_pid_file`).
    pub reason: String,
    /// The pid in the record, when it parsed.
    pub pid: Option<i32>,
    /// The kind of scope recorded with it: `group` (none recorded), `cgroup` or `supervisor`.
    pub scope: String,
    /// How many processes the recorded scope still holds (each pinned and proven inside it),
    /// when it was counted: a scope is counted only for a record dated on this machine and in
    /// this PID namespace, and not when it could not be read.
    pub scope_members: Option<u32>,
    /// `running`, `not-running` (only on proof), `undecided` or `unusable`.
    pub answer: String,
    /// Whether the record is in use: anything but proven not running (a sweep keeps a record
    /// it cannot judge).
    pub in_use: bool,
    /// Whether the record runs: its process, or — its first process gone — its scope.
    pub running: bool,
}

impl From<&Probe> for ProbeView {
    fn from(p: &Probe) -> Self {
        ProbeView {
            format: p.format.as_str().to_string(),
            reason: p.check.reason.as_str().to_string(),
            pid: p.check.pid,
            scope: p.scope.as_str().to_string(),
            scope_members: p.scope_members.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            answer: p.answer.as_str().to_string(),
            in_use: p.in_use(),
            running: p.running(),
        }
    }
}
