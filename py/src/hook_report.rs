//! `HookReport`: one hook of a cleanup, built lazily.
//!
//! A cleanup returns one report per pidfile, thousands at a time. Converting each to core's
//! flat [`HookView`] (five strings spelled, lists copied) and storing it in a large Python
//! object cost about a microsecond per record inside the call, most of it memory touched for the
//! first time. Here the Python object holds only a share of the reports core returned (moved, not
//! copied) and its index; the view is spelled by core's `From<&HookReport> for HookView` on the
//! first attribute read and kept. The class is the same to Python as core's `HookView` class:
//! its name, attributes and their docs and types, `repr`, `to_dict` (both delegated to core's
//! `HookView` class, so they are spelled once), equality by value, an instance `__dict__` (for
//! `finalize_exception`), not hashable, not picklable, not subclassable.

use std::sync::{Arc, OnceLock};

#[cfg(doc)]
use pidguard::report::path_text;
use pidguard::report::{HookView, ReportPath};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What `cleanup_background_hooks` did with one hook.
#[pyclass(frozen, eq, dict, name = "HookReport", module = "pidguard._pidguard")]
pub struct HookReport {
    /// The reports of one cleanup, shared by their objects: the whole list stays in memory
    /// while any of its reports is alive.
    all: Arc<Vec<pidguard::HookReport>>,
    index: usize,
    /// Core's flat view of `all[index]`, made on the first read.
    view: OnceLock<Box<HookView>>,
}

impl HookReport {
    /// One Python report per core report, in order (the list is moved, not copied).
    pub(crate) fn all(py: Python<'_>, reports: Vec<pidguard::HookReport>) -> impl Iterator<Item = PyResult<Py<HookReport>>> + '_ {
        let all = Arc::new(reports);
        (0..all.len()).map(move |index| Py::new(py, HookReport { all: Arc::clone(&all), index, view: OnceLock::new() }))
    }

    /// A report of its own (a copy), for the `finalize` callback.
    pub(crate) fn one(py: Python<'_>, report: &pidguard::HookReport) -> PyResult<Py<HookReport>> {
        Py::new(py, HookReport { all: Arc::new(vec![report.clone()]), index: 0, view: OnceLock::new() })
    }

    /// The core report this object shows.
    pub(crate) fn report(&self) -> &pidguard::HookReport {
        &self.all[self.index]
    }

    fn view(&self) -> &HookView {
        self.view.get_or_init(|| Box::new(HookView::from(self.report())))
    }

    /// Core's `HookView` class holding a copy of the view: its `repr` and `to_dict` are the
    /// spelling of this report.
    fn as_core<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, HookView>> {
        Bound::new(py, self.view().clone())
    }
}

/// By value, as core's view compares (every field).
impl PartialEq for HookReport {
    fn eq(&self, other: &Self) -> bool {
        self.view() == other.view()
    }
}

// The attributes are core's `HookView` fields, with their docs.
#[pymethods]
impl HookReport {
    /// The hook's basename (`on_Snapshot__20_x.bg`), in the lossless
    /// [`path_text`] form (a name that is not UTF-8 or holds a
    /// backslash is escaped there).
    #[getter]
    fn name(&self) -> &str {
        &self.view().name
    }
    /// The directory holding its files.
    #[getter]
    fn dir(&self) -> &ReportPath {
        &self.view().dir
    }
    /// Its pidfile.
    #[getter]
    fn pid_file(&self) -> &ReportPath {
        &self.view().pid_file
    }
    /// The recorded pid, when the file parsed.
    #[getter]
    fn pid(&self) -> Option<i32> {
        self.view().pid
    }
    /// The identity verdict, when judged: `match`, `mismatch`, `unverifiable` or `gone`.
    #[getter]
    fn verdict(&self) -> Option<&str> {
        self.view().verdict.as_deref()
    }
    /// Why that verdict (`token-equal`, `no-such-process`, …), when judged.
    #[getter]
    fn verdict_reason(&self) -> Option<&str> {
        self.view().verdict_reason.as_deref()
    }
    /// The pidfile check's reason (`valid`, `gone`, `mtime-skew`, …).
    #[getter]
    fn reason(&self) -> &str {
        &self.view().reason
    }
    /// What cleanup did: `stale`, `foreign`, `unreadable`, `unverified`, `already-gone`,
    /// `exited`, `unkillable`, `refused` or `error`.
    #[getter]
    fn outcome(&self) -> &str {
        &self.view().outcome
    }
    /// For `exited`: the signal after which the group exited.
    #[getter]
    fn after(&self) -> Option<&str> {
        self.view().after.as_deref()
    }
    /// For `refused`: why.
    #[getter]
    fn refusal(&self) -> Option<&str> {
        self.view().refusal.as_deref()
    }
    /// Every signal sent, in order, by name.
    #[getter]
    fn signals(&self) -> Vec<String> {
        self.view().signals.clone()
    }
    /// The exit code when known (the caller's own child): the code, or 128 + signal.
    #[getter]
    fn exit_code(&self) -> Option<i32> {
        self.view().exit_code
    }
    /// The error, for failed hooks (`Process unkillable`, a refusal, a finalize failure).
    #[getter]
    fn error(&self) -> Option<&str> {
        self.view().error.as_deref()
    }
    /// What the cleanup could not read beside the hook (a log that is a symlink or a FIFO, a
    /// log cut at 16 MiB), one sentence each.
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.view().notes.clone()
    }
    /// Files under `dir`, relative to it, in the lossless
    /// [`path_text`] form, sorted: everything but the four files (`.pid`, `.sh`,
    /// `.stdout.log`, `.stderr.log`) of every hook the cleanup found in it.
    #[getter]
    fn output_files(&self) -> Vec<String> {
        self.view().output_files.clone()
    }
    /// The argv recorded in the `.sh` file.
    #[getter]
    fn cmd(&self) -> Vec<String> {
        self.view().cmd.clone()
    }
    /// Live processes whose group is the recorded pid of a stale record: listed, never
    /// signalled.
    #[getter]
    fn unverified_leftovers(&self) -> Vec<i32> {
        self.view().unverified_leftovers.clone()
    }
    /// When the hook started (the pidfile's mtime), seconds since the epoch.
    #[getter]
    fn started_at(&self) -> Option<f64> {
        self.view().started_at
    }
    /// When cleanup finished with it, seconds since the epoch.
    #[getter]
    fn ended_at(&self) -> f64 {
        self.view().ended_at
    }
    /// Seconds the schedule ran for this hook, when it ran.
    #[getter]
    fn elapsed(&self) -> Option<f64> {
        self.view().elapsed
    }
    /// Whether the pidfile was removed.
    #[getter]
    fn pid_file_removed(&self) -> bool {
        self.view().pid_file_removed
    }
    /// Whether the hook counts as succeeded.
    #[getter]
    fn succeeded(&self) -> bool {
        self.view().succeeded
    }
    /// What the record aims at: `cgroup`, `supervisor` (its scope: the hook's whole tree) or
    /// `group` (no scope: the hook's process group).
    #[getter]
    fn scope(&self) -> &str {
        &self.view().scope
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.as_core(py)?.repr().map(|s| s.to_string())
    }

    /// The report as a plain dict (paths as str), e.g. for `json.dumps`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(self.as_core(py)?.call_method0("to_dict")?.cast_into::<PyDict>()?)
    }
}
