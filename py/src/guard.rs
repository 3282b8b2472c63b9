//! The guard-pidfile API (`pidguard.guard`): `Entry`, `Verdict`, `Guard` and the
//! `guard_*` functions that `pidguard/guard.py` re-exports under their short names.
//!
//! As everywhere in this crate: convert the arguments, make one core call with the GIL
//! released, convert the result or the error. Every decision (what a valid record is, who may
//! be replaced, what removal compares) is core's.

use std::path::PathBuf;
use std::sync::Mutex;

use pidguard::guard::{self, AcquireOptions};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::convert::{bool_arg, core_call, kwargs_fields, path_arg, to_py_err, type_name, Entry, Verdict};

// ---------------------------------------------------------------------------------------------
// Entry

/// A held guard pidfile, returned by `acquire`. Use it as a context manager:
/// `with pidguard.guard.acquire(path, session="s1") as entry:` — entering gives our Entry;
/// leaving removes our record, and only ours (someone who took it over keeps theirs). If the
/// block raised, that exception propagates and an error of the removal is dropped; otherwise a
/// removal error is raised.
///
/// The record is also removed when the Guard is garbage-collected without having been released:
/// keep a reference for as long as the guard must be held.
#[pyclass(module = "pidguard._pidguard")]
pub struct Guard {
    inner: Mutex<Option<guard::Guard>>,
    path: PathBuf,
    entry: Entry,
    replaced: Option<guard::Verdict>,
}

impl Guard {
    fn take(&self) -> Option<guard::Guard> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

#[pymethods]
impl Guard {
    /// The pidfile's path (pathlib.Path).
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Our record.
    #[getter]
    fn entry(&self) -> Entry {
        self.entry.clone()
    }

    /// The verdict on the stale (or, with `takeover`, live) holder whose record was replaced to
    /// take the guard; None when the name was free.
    #[getter]
    fn replaced(&self) -> Option<Verdict> {
        self.replaced.clone().map(Verdict)
    }

    /// Whether this Guard still owns its record (neither released nor kept).
    #[getter]
    fn active(&self) -> bool {
        self.inner.lock().map(|g| g.is_some()).unwrap_or(false)
    }

    /// Whether the file still holds exactly our record (False after a takeover, a removal, or
    /// once released).
    fn is_held(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = &self.inner;
        core_call(py, || Ok(inner.lock().map(|g| g.as_ref().is_some_and(|g| g.is_held())).unwrap_or(false)))
    }

    /// Remove our record now: True when it was removed, False when the file no longer held it
    /// (nothing changed) or the guard was already released or kept.
    ///
    /// Raises PermissionDeniedError, TimedOutError or IoError from the file system.
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        match self.take() {
            Some(g) => core_call(py, move || g.release()),
            None => Ok(false),
        }
    }

    /// Give up the guard without removing the record (for a process that will release it
    /// itself) and return our Entry. Later releases do nothing.
    fn keep(&self) -> Entry {
        if let Some(g) = self.take() {
            g.keep();
        }
        self.entry.clone()
    }

    fn __enter__(&self) -> Entry {
        self.entry.clone()
    }

    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let _ = (exc_value, traceback);
        let released = self.release(py);
        if exc_type.is_none() {
            released?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Guard(path='{}', pid={}, active={})", self.path.display(), self.entry.0.pid, py_bool(self.active()))
    }
}

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

// ---------------------------------------------------------------------------------------------
// Functions

fn entry_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<guard::Entry> {
    obj.cast::<Entry>()
        .map(|e| e.get().0.clone())
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a pidguard.guard.Entry, not {}", type_name(obj))))
}

/// The exact bytes `create` writes for `entry`: one compact JSON object (`pid`,
/// `start_token`, then the fields in order) and a newline.
#[pyfunction]
#[pyo3(text_signature = "(entry)")]
fn guard_encode<'py>(py: Python<'py>, entry: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let e = entry_arg(entry, "entry")?;
    Ok(PyBytes::new(py, &guard::encode(&e)))
}

/// Parse guard pidfile content (bytes) into an Entry, keeping the fields in file order.
///
/// Raises TypeError when `content` is not bytes; InvalidJsonError, BadPidError or BadTokenError
/// (each a MalformedError, a ValueError) when it breaks the format.
#[pyfunction]
#[pyo3(text_signature = "(content)")]
fn guard_decode(py: Python<'_>, content: &Bound<'_, PyAny>) -> PyResult<Entry> {
    let b = content
        .cast::<PyBytes>()
        .map_err(|_| PyTypeError::new_err(format!("content must be bytes, not {}", type_name(content))))?;
    guard::decode(b.as_bytes()).map(Entry).map_err(|e| to_py_err(py, e))
}

/// Create the guard pidfile `path` holding `encode(entry)`; of any number of racing creators
/// exactly one succeeds, and the file appears fully written (mode 0600; a missing parent is made
/// 0700) or not at all. Nothing existing is ever changed.
///
/// Raises AlreadyExistsError (a FileExistsError) when anything is at `path`; TypeError for bad
/// argument types; NotFoundError, PermissionDeniedError or IoError from the file system.
#[pyfunction]
#[pyo3(text_signature = "(path, entry)")]
fn guard_create(py: Python<'_>, path: &Bound<'_, PyAny>, entry: &Bound<'_, PyAny>) -> PyResult<()> {
    let path = path_arg(path, "path")?;
    let e = entry_arg(entry, "entry")?;
    core_call(py, move || guard::create(&path, &e))
}

/// Read and check the guard pidfile at `path` and return its Entry (the holder is not judged;
/// see `check`). Never follows a symlink or blocks on a FIFO.
///
/// Raises NotFoundError (a FileNotFoundError) when there is no file; an UntrustedError
/// subclass when the file itself is refused — SymlinkError, IsDirectoryError,
/// NotRegularFileError (FIFO, socket, device), HardLinkedError, InsecureModeError (group or
/// world bits), TooLargeError (> 4096 bytes); a MalformedError subclass (a ValueError) when its
/// content is — InvalidJsonError, BadPidError, BadTokenError; PermissionDeniedError or IoError.
#[pyfunction]
#[pyo3(text_signature = "(path)")]
fn guard_read(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<Entry> {
    let path = path_arg(path, "path")?;
    core_call(py, move || guard::read(&path)).map(Entry)
}

/// Remove the guard pidfile `path` only if its bytes are exactly `encode(entry)`, safely
/// against a concurrent `replace`. True when removed; False, with nothing changed, when the file
/// is missing, holds anything else, or is not a regular file.
///
/// Raises TypeError for bad argument types; TimedOutError when the directory's lock stays taken
/// for 10 s; PermissionDeniedError or IoError.
#[pyfunction]
#[pyo3(text_signature = "(path, entry)")]
fn guard_remove(py: Python<'_>, path: &Bound<'_, PyAny>, entry: &Bound<'_, PyAny>) -> PyResult<bool> {
    let path = path_arg(path, "path")?;
    let e = entry_arg(entry, "entry")?;
    core_call(py, move || guard::remove(&path, &e))
}

/// Retire `old` by content, then create `new` in its place. A file that vanished meanwhile is
/// not an error (`new` is created).
///
/// Raises SupersededError when the file no longer holds `old` (nothing is written);
/// AlreadyExistsError when another creator took the freed name first; TypeError for bad
/// argument types; the file-system errors of `create` and `remove`.
#[pyfunction]
#[pyo3(text_signature = "(path, old, new)")]
fn guard_replace(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    old: &Bound<'_, PyAny>,
    new: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let path = path_arg(path, "path")?;
    let old = entry_arg(old, "old")?;
    let new = entry_arg(new, "new")?;
    core_call(py, move || guard::replace(&path, &old, &new))
}

/// Read the guard pidfile at `path` and judge its holder; returns a Verdict. A missing file is
/// `Verdict(found=False)`, not an error.
///
/// Raises every refusal of `read` (an untrusted or malformed file is an error, never a dead
/// holder); BadTokenError when the token is not a pidguard start token; IoError when procfs
/// fails.
#[pyfunction]
#[pyo3(text_signature = "(path)")]
fn guard_check(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<Verdict> {
    let path = path_arg(path, "path")?;
    core_call(py, move || guard::check(&path)).map(Verdict)
}

/// Take the single-instance guard at `path` and return a Guard (a context manager whose
/// `__enter__` gives our Entry and whose exit removes our record, and only ours).
///
/// The record is `entry` when given, else `Entry.current(**fields)`. The name is taken when it
/// is free, or when its holder is proven stale ('gone' or 'mismatch'); with `takeover=True`
/// also from a holder that is 'match' or 'unverifiable' (never from another machine).
///
/// Raises HeldError (a FileExistsError) when the holder is 'match' or 'unverifiable' — its
/// `entry` and `verdict` say who and why; TypeError when both `entry` and fields are given or
/// for bad argument types; InvalidArgumentError for an invalid record; every refusal of `read`
/// for a file that is not a trustworthy record (never taken over); SupersededError when the file
/// kept changing; the file-system errors of `create`.
#[pyfunction]
#[pyo3(signature = (path, entry=None, /, *, takeover=None, **fields))]
#[pyo3(text_signature = "(path, entry=None, /, *, takeover=False, **fields)")]
fn guard_acquire(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    entry: Option<&Bound<'_, PyAny>>,
    takeover: Option<&Bound<'_, PyAny>>,
    fields: Option<&Bound<'_, PyDict>>,
) -> PyResult<Guard> {
    let path = path_arg(path, "path")?;
    let entry = entry.filter(|e| !e.is_none()).map(|e| entry_arg(e, "entry")).transpose()?;
    let fields = kwargs_fields(fields)?;
    if entry.is_some() && !fields.is_empty() {
        return Err(PyTypeError::new_err("acquire() takes an entry or fields, not both"));
    }
    let options = AcquireOptions { takeover: takeover.map(bool_arg).transpose()?.unwrap_or(false) };
    let p = path.clone();
    let g = core_call(py, move || {
        let e = match entry {
            Some(e) => e,
            None => {
                let mut e = guard::Entry::current()?;
                e.fields = fields;
                e
            }
        };
        guard::acquire(&p, &e, &options)
    })?;
    Ok(Guard {
        entry: Entry(g.entry().clone()),
        replaced: g.replaced().cloned(),
        path,
        inner: Mutex::new(Some(g)),
    })
}

/// The lowercase hex SHA-256 of `secret` (str as UTF-8, or bytes): how a record names a secret
/// without storing it. Raises TypeError for any other type.
#[pyfunction]
#[pyo3(text_signature = "(secret)")]
fn token_sha256(secret: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = secret.cast::<PyBytes>() {
        return Ok(guard::token_sha256(b.as_bytes()));
    }
    if let Ok(s) = secret.cast::<PyString>() {
        return Ok(guard::token_sha256(s.to_cow()?.as_bytes()));
    }
    Err(PyTypeError::new_err(format!("secret must be str or bytes, not {}", type_name(secret))))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Entry>()?;
    m.add_class::<Verdict>()?;
    m.add_class::<Guard>()?;
    m.add("GUARD_MAX_BYTES", guard::MAX_BYTES)?;
    m.add_function(wrap_pyfunction!(guard_encode, m)?)?;
    m.add_function(wrap_pyfunction!(guard_decode, m)?)?;
    m.add_function(wrap_pyfunction!(guard_create, m)?)?;
    m.add_function(wrap_pyfunction!(guard_read, m)?)?;
    m.add_function(wrap_pyfunction!(guard_remove, m)?)?;
    m.add_function(wrap_pyfunction!(guard_replace, m)?)?;
    m.add_function(wrap_pyfunction!(guard_check, m)?)?;
    m.add_function(wrap_pyfunction!(guard_acquire, m)?)?;
    m.add_function(wrap_pyfunction!(token_sha256, m)?)?;
    Ok(())
}
