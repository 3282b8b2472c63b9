//! `probe_pid_file`: "is this record in use?", with no side effect (core's `probe_pid_file`).

use pidguard::probe::ProbeView;
use pyo3::prelude::*;

use crate::convert::{check_args, check_options, core_call, Tolerance};

/// Probe a pidfile of either format (core's ``probe_pid_file``): the record's check plus how
/// many processes its recorded scope still holds. Nothing is signalled, nothing removed — a
/// probe never acts. ``in_use`` is True for anything not proven stale (a record that cannot be
/// judged may name a live process); ``running`` when the recorded process runs or, its first
/// process gone, its scope still holds processes. ``cmd_file``: the hook's argv (list of str)
/// or its ``.sh`` path, or None (then the ``.sh`` beside an abx-dl pidfile, when present).
/// ``tolerance``: seconds.
///
/// Raises MalformedError/PermissionDeniedError for a guard record that cannot be read,
/// TypeError/ValueError for bad arguments.
#[pyfunction]
#[pyo3(text_signature = "(pid_file, cmd_file=None, tolerance=5.0)")]
#[pyo3(signature = (pid_file, cmd_file=None, tolerance=Tolerance(Some(pidguard::DEFAULT_TOLERANCE))))]
pub(crate) fn probe_pid_file(
    py: Python<'_>,
    pid_file: &Bound<'_, PyAny>,
    cmd_file: Option<&Bound<'_, PyAny>>,
    tolerance: Tolerance,
) -> PyResult<ProbeView> {
    let (path, cmd) = check_args(pid_file, cmd_file)?;
    let tol = tolerance.0;
    core_call(py, move || {
        let opts = check_options(cmd.as_ref(), tol)?;
        pidguard::probe_pid_file(&path, &opts).map(|p| (&p).into())
    })
}
