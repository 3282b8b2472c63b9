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
mod base;
mod hooks;
mod process;
mod spawn;
mod terminate;

pub use base::{printable, printable_path, ReportPath};
pub use hooks::{write_hook_json, HookView};
pub use process::{JudgementView, PidFileCheckView, ProcessInfoView};
pub use spawn::SpawnView;
pub use terminate::{StopView, TerminateView};

pub use crate::pathtext::path_text;


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
    ("Spawned", &["pid", "pid_file", "cmd_file", "stdout", "stderr", "scope", "scope_record", "supervisor_pid", "note", "run_as"]),
];

/// The Python side of the reports: `repr()`, `to_dict()`, and the truth value of a check. Only
/// with the `python` feature (the Python binding).
#[cfg(feature = "python")]
mod python {
    use pyo3::prelude::*;
    use pyo3::types::PyDict;
    use serde::Serialize;

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
    use serde::Serialize;

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
            run_as: None,
            note: None,
        };
        assert_eq!(sorted(keys(&hook)), sorted(fields("HookReport")));
        assert_eq!(sorted(keys(&spawned)), sorted(fields("Spawned")));
        assert_eq!(FIELDS.len(), 7);
    }
}
