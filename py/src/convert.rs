//! The values that cross the Python boundary, below every other module of the crate: arguments
//! in (types and plain ranges, before any system call), core errors out (the `pidguard.errors`
//! classes), the one way to make a core call with the GIL released, and the guard records
//! (`Entry`, `Verdict`) that an error can carry (`HeldError.verdict`). `lib.rs`, `guard.rs` and
//! `process.rs` stand on it; it imports none of them.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use pidguard::guard;
use pidguard::{ErrorKind, Policy, Schedule, StartToken, TerminateOptions};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyMapping, PyString, PyTuple};

// ---------------------------------------------------------------------------------------------
// Errors

/// Convert a core error into the `pidguard.errors` class for its kind.
pub(crate) fn to_py_err(py: Python<'_>, e: pidguard::Error) -> PyErr {
    static FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let make = || -> PyResult<PyErr> {
        let f = FACTORY.import(py, "pidguard.errors", "_from_native")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("holder", holder_object(py, &e)?)?;
        let exc = f.call(
            (
                e.kind().code(),
                e.kind().slug(),
                e.errno(),
                e.message(),
                e.path().map(Path::to_path_buf),
                e.pid(),
                e.refusal().map(|r| r.as_str()),
            ),
            Some(&kwargs),
        )?;
        Ok(PyErr::from_value(exc))
    };
    make().unwrap_or_else(|err| err)
}

/// Run one core call with the GIL released. A panic in core (a bug) becomes a `PanicError`
/// instead of pyo3's `PanicException`, so no `BaseException` with panic text escapes.
pub(crate) fn core_call<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    F: FnOnce() -> pidguard::Result<T> + Send,
    T: Send,
{
    py.detach(|| catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(p))))
        .map_err(|e| to_py_err(py, e))
}

pub(crate) fn panic_error(p: Box<dyn std::any::Any + Send>) -> pidguard::Error {
    let what = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    pidguard::Error::new(ErrorKind::Panic, format!("internal error in pidguard (please report it): {what}"))
}

/// `(code, slug, default_errno)` for every error kind of core, in code order: `errors.py`
/// checks its classes against this list at import, and the tests check parity.
pub(crate) fn error_kinds() -> Vec<(i32, &'static str, Option<i32>)> {
    ErrorKind::ALL.iter().map(|k| (k.code(), k.slug(), k.default_errno())).collect()
}

// ---------------------------------------------------------------------------------------------
// Argument conversion: types and plain ranges, before any system call.

pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".to_string())
}

/// A pid: an `int` (or an object with `__index__`), not `bool`, not `float`, that fits a
/// `pid_t`. Its range (1 to 4194304, the protected pids) is core's to decide, before any
/// system call.
pub(crate) fn pid_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i32> {
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!("{what} must be an int, not {}", type_name(obj))));
    }
    let v: i64 = match obj.extract::<i64>() {
        Ok(v) => v,
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
            return Err(PyValueError::new_err(format!("{what} {obj} is out of range")));
        }
        Err(_) => return Err(PyTypeError::new_err(format!("{what} must be an int, not {}", type_name(obj)))),
    };
    // Which pids may be read or signalled is core's decision (1 to 4194304; pid <= 0 and pid 1
    // are refused before any system call); here only what a pid_t can hold.
    i32::try_from(v).map_err(|_| PyValueError::new_err(format!("{what} {v} is out of range (a pid is 1 to 4194304)")))
}

/// Seconds as `f64`: an `int` or `float` (or anything with `__float__`), not `bool` or `str`.
pub(crate) fn seconds_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!("{what} must be a number of seconds, not {}", type_name(obj))));
    }
    obj.extract::<f64>()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a number of seconds, not {}", type_name(obj))))
}

/// A tolerance in seconds. Its range is core's business: `check_pid_file` answers `mtime-skew`
/// for a negative or non-finite one (every failure is False, as in the original), cleanup refuses it.
pub(crate) fn tolerance_arg(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    seconds_arg(obj, "tolerance")
}

/// A path: `str`, `bytes` or `os.PathLike` (through `os.fspath`), without NUL bytes.
pub(crate) fn path_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<PathBuf> {
    static FSPATH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = obj.py();
    // A str or bytes is its own os.fspath(): the call is made only for other types.
    let p = if obj.is_exact_instance_of::<PyString>() || obj.is_exact_instance_of::<PyBytes>() {
        obj.clone()
    } else {
        let fspath = FSPATH.import(py, "os", "fspath")?;
        fspath.call1((obj,)).map_err(|e| {
            if e.is_instance_of::<PyTypeError>(py) {
                PyTypeError::new_err(format!("{what} must be str, bytes or os.PathLike, not {}", type_name(obj)))
            } else {
                e
            }
        })?
    };
    let os: OsString = if let Ok(b) = p.cast::<PyBytes>() {
        OsString::from_vec(b.as_bytes().to_vec())
    } else {
        p.extract::<OsString>()?
    };
    if os.as_encoded_bytes().contains(&0) {
        return Err(PyValueError::new_err(format!("{what}: embedded null byte")));
    }
    if os.is_empty() {
        return Err(PyValueError::new_err(format!("{what} must not be empty")));
    }
    Ok(PathBuf::from(os))
}

pub(crate) fn opt_path_arg(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<PathBuf>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => path_arg(o, what).map(Some),
    }
}

pub(crate) fn str_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    obj.cast::<PyString>()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a str, not {}", type_name(obj))))?
        .to_cow()
        .map(|c| c.into_owned())
}

/// A flag: any object, by its truth value (Python's convention for flags).
pub(crate) fn bool_arg(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    obj.is_truthy()
}

pub(crate) fn schedule_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Schedule> {
    str_arg(obj, "schedule")?.parse::<Schedule>().map_err(|e| to_py_err(py, e))
}

pub(crate) fn policy_arg(obj: &Bound<'_, PyAny>) -> PyResult<Policy> {
    // Core's refusal, as its class (InvalidArgumentError, a ValueError), as on every surface.
    str_arg(obj, "policy")?.parse::<Policy>().map_err(|e| to_py_err(obj.py(), e))
}

/// The options of `terminate` and `ProcessRef.terminate`; `None` (or absent) keeps core's
/// default for each.
pub(crate) fn terminate_options(
    py: Python<'_>,
    schedule: Option<&Bound<'_, PyAny>>,
    group: Option<&Bound<'_, PyAny>>,
    reap: Option<&Bound<'_, PyAny>>,
) -> PyResult<TerminateOptions> {
    let mut opts = TerminateOptions::default();
    if let Some(s) = schedule.filter(|s| !s.is_none()) {
        opts.schedule = schedule_arg(py, s)?;
    }
    if let Some(g) = group.filter(|g| !g.is_none()) {
        opts.group = bool_arg(g)?;
    }
    if let Some(r) = reap.filter(|r| !r.is_none()) {
        opts.reap = bool_arg(r)?;
    }
    Ok(opts)
}

pub(crate) fn token_arg(py: Python<'_>, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<StartToken>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => str_arg(o, "expected_token")?.parse::<StartToken>().map(Some).map_err(|e| to_py_err(py, e)),
    }
}

// ---------------------------------------------------------------------------------------------
// Guard records

/// One guard pidfile record: the holder's `pid` (int), its `start_token` (str) and the
/// caller's own string `fields`, in order.
///
/// `Entry(pid, start_token, fields=None)`: `fields` is a mapping of str to str, or an iterable
/// of `(name, value)` pairs; its order is the order in the file. Raises TypeError for a pid
/// that is not an int (a bool, float or str) or a name or value that is not a str; ValueError
/// for a pid out of range; InvalidArgumentError (a ValueError) for an empty token, a field name
/// that is empty, `pid`, `start_token` or given twice, or a record that encodes to more than
/// 4096 bytes. An Entry is immutable, hashable and compares by value.
#[pyclass(frozen, eq, hash, module = "pidguard._pidguard")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Entry(pub(crate) guard::Entry);

pub(crate) fn fields_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(Vec::new()) };
    let pair = |name: Bound<'_, PyAny>, value: Bound<'_, PyAny>| -> PyResult<(String, String)> {
        let n = str_arg(&name, "a field name")?;
        let v = str_arg(&value, &format!("field {n:?}"))?;
        Ok((n, v))
    };
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err("fields must be a mapping or an iterable of (name, value) pairs, not a string"));
    }
    if let Ok(m) = obj.cast::<PyMapping>() {
        return m.items()?.iter().map(|kv| {
            let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = kv.extract()?;
            pair(k, v)
        }).collect();
    }
    let it = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!("fields must be a mapping or an iterable of pairs, not {}", type_name(obj)))
    })?;
    it.map(|item| {
        let item = item?;
        let t = item
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .ok_or_else(|| PyTypeError::new_err(format!("each field must be a (name, value) pair, not {}", type_name(&item))))?;
        pair(t.get_item(0)?, t.get_item(1)?)
    })
    .collect()
}

/// `**fields` of a call, in the caller's order.
pub(crate) fn kwargs_fields(kw: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, String)>> {
    fields_arg(kw.map(|d| d.as_any()))
}

pub(crate) fn validated(py: Python<'_>, e: guard::Entry) -> PyResult<Entry> {
    e.validate().map_err(|err| to_py_err(py, err))?;
    Ok(Entry(e))
}

#[pymethods]
impl Entry {
    #[new]
    #[pyo3(signature = (pid, start_token, fields=None))]
    #[pyo3(text_signature = "(pid, start_token, fields=None)")]
    fn py_new(
        py: Python<'_>,
        pid: &Bound<'_, PyAny>,
        start_token: &Bound<'_, PyAny>,
        fields: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Entry> {
        let pid = pid_arg(pid, "pid")?;
        let token = str_arg(start_token, "start_token")?;
        let mut e = guard::Entry::new(pid, token);
        e.fields = fields_arg(fields)?;
        validated(py, e)
    }

    /// A record naming the calling process (its pid and live start token) with `fields` as
    /// keyword arguments, in order: `Entry.current(session="s1")`.
    ///
    /// Raises TypeError for a value that is not a str; InvalidArgumentError as the constructor;
    /// NoSuchProcessError/IoError when procfs cannot be read.
    #[staticmethod]
    #[pyo3(signature = (**fields))]
    #[pyo3(text_signature = "(**fields)")]
    fn current(py: Python<'_>, fields: Option<&Bound<'_, PyDict>>) -> PyResult<Entry> {
        let fields = kwargs_fields(fields)?;
        let mut e = core_call(py, guard::Entry::current)?;
        e.fields = fields;
        validated(py, e)
    }

    /// The holder's pid.
    #[getter]
    fn pid(&self) -> i32 {
        self.0.pid
    }

    /// The holder's start token (str).
    #[getter]
    fn start_token(&self) -> &str {
        &self.0.start_token
    }

    /// The caller's fields as a new dict (str to str), in file order.
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.0.fields {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let fields = self.fields(py)?.repr()?.to_string();
        let token = PyString::new(py, &self.0.start_token).repr()?.to_string();
        Ok(format!("Entry(pid={}, start_token={token}, fields={fields})", self.0.pid))
    }

    /// The record as it is written (`encode(entry)` without the newline).
    fn __str__(&self) -> String {
        self.0.to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Verdict

/// The answer of `check` (and, on a HeldError, `verdict`): is there a record, and is its
/// holder still that process?
#[pyclass(frozen, module = "pidguard._pidguard")]
pub struct Verdict(pub(crate) guard::Verdict);

#[pymethods]
impl Verdict {
    /// Whether a file was found; False means there is no record at all.
    #[getter]
    fn found(&self) -> bool {
        self.0.found
    }

    /// The record (an Entry), when found.
    #[getter]
    fn entry(&self) -> Option<Entry> {
        self.0.entry.clone().map(Entry)
    }

    /// The holder's identity when found: 'match', 'mismatch', 'unverifiable' or 'gone'.
    #[getter]
    fn identity(&self) -> Option<&'static str> {
        self.0.identity.map(|j| j.verdict.as_str())
    }

    /// Why that identity ('token-equal', 'boot-id-differs', 'start-ticks-differ',
    /// 'foreign-pid-namespace', 'foreign-machine', 'no-such-process', 'zombie',
    /// 'live-identity-unreadable: EMFILE', ...).
    #[getter]
    fn reason(&self) -> Option<String> {
        self.0.identity.map(|j| j.reason.to_string())
    }

    /// The uid owning the file, when found.
    #[getter]
    fn owner_uid(&self) -> Option<u32> {
        self.0.owner_uid
    }

    /// Whether the record is proven stale (its holder is 'gone' or 'mismatch'), so that
    /// `acquire` may replace it. False when nothing was found.
    #[getter]
    fn stale(&self) -> bool {
        self.0.is_stale()
    }

    /// Whether a signal to the holder would be authorised under `policy` ('strict': only
    /// 'match'; 'lenient': also 'unverifiable'), with the root rule: a root caller acts on a
    /// file owned by another user only on 'match'. False when nothing was found.
    #[pyo3(signature = (policy=None))]
    #[pyo3(text_signature = "($self, policy='strict')")]
    fn authorizes(&self, policy: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let policy = policy.map(policy_arg).transpose()?.unwrap_or_default();
        Ok(self.0.authorizes(policy))
    }

    fn __repr__(&self) -> String {
        match (&self.0.entry, self.0.identity) {
            (Some(e), Some(j)) => format!(
                "Verdict(found=True, pid={}, identity='{}', reason='{}')",
                e.pid,
                j.verdict.as_str(),
                j.reason
            ),
            _ => "Verdict(found=False)".to_string(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Guard

/// The holder of a `Held` error as a Python Verdict, for `HeldError.verdict`.
pub(crate) fn holder_object(py: Python<'_>, e: &pidguard::Error) -> PyResult<Option<Py<Verdict>>> {
    e.holder().map(|v| Py::new(py, Verdict(v.clone()))).transpose()
}

/// A tolerance argument: seconds, or None (what None means is core's: `CheckOptions::from_parts`).
pub(crate) struct Tolerance(pub(crate) Option<f64>);

impl<'a, 'py> FromPyObject<'a, 'py> for Tolerance {
    type Error = PyErr;
    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_none() {
            return Ok(Tolerance(None));
        }
        tolerance_arg(&obj.to_owned()).map(|t| Tolerance(Some(t)))
    }
}

/// Core's check options from the converted arguments (`CheckOptions::from_parts`).
pub(crate) fn check_options(cmd: Option<&Recorded>, tolerance: Option<f64>) -> pidguard::Result<pidguard::CheckOptions<'_>> {
    let (file, argv) = match cmd {
        Some(Recorded::File(p)) => (Some(p.as_path()), None),
        Some(Recorded::Argv(a)) => (None, Some(a.as_slice())),
        None => (None, None),
    };
    pidguard::CheckOptions::from_parts(file, argv, tolerance)
}

/// The recorded command, converted: a `.sh` path or an argv list.
pub(crate) enum Recorded {
    File(PathBuf),
    Argv(Vec<String>),
}


/// A list (or tuple) is an argv, each item a str; anything else is a path.
pub(crate) fn recorded_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Recorded>> {
    match obj {
        Some(o) if o.is_instance_of::<pyo3::types::PyList>() || o.is_instance_of::<pyo3::types::PyTuple>() => {
            let argv = o
                .try_iter()?
                .map(|a| a.and_then(|a| str_arg(&a, "each expected_argv item")))
                .collect::<PyResult<Vec<String>>>()?;
            Ok(Some(Recorded::Argv(argv)))
        }
        _ => Ok(opt_path_arg(obj, "cmd_file")?.map(Recorded::File)),
    }
}

/// The pidfile and recorded-command arguments of the check functions, converted.
pub(crate) fn check_args(pid_file: &Bound<'_, PyAny>, cmd_file: Option<&Bound<'_, PyAny>>) -> PyResult<(PathBuf, Option<Recorded>)> {
    Ok((path_arg(pid_file, "pid_file")?, recorded_arg(cmd_file)?))
}
