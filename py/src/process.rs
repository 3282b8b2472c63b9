//! `pidguard.ProcessRef`: core's pinned process handle, for Python code that spawns a process
//! and wants to reach it (and its process group) later without ever reaching a stranger.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pidguard::{Delivery, Policy, Signal};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat};

use pidguard::report::TerminateView;

use crate::convert::{bool_arg, core_call, pid_arg, policy_arg, seconds_arg, terminate_options, to_py_err, token_arg, type_name};

/// A process pinned by a pidfd: every signal and wait goes to exactly the process that held
/// the pid when the handle was opened, never to a later holder of the number.
///
/// ``ProcessRef(pid, expected_token=None, *, policy='strict')`` pins ``pid`` (``pidfd_open``),
/// then reads its live start token and compares it with ``expected_token`` (a str from
/// :func:`start_token`). Under ``'strict'`` only a matching token authorises the handle; under
/// ``'lenient'`` a process whose identity cannot be verified is accepted too (no token given,
/// e.g. the caller's own child that it just spawned), with a warning in the log. A token that
/// is given must match under either policy.
///
/// Raises RefusedError (``refusal`` says why: pid 1, the caller itself, its parent, its own
/// process group, a mismatching token) and NoSuchProcessError (a ProcessLookupError) when the
/// process is gone or already a zombie; TypeError/ValueError for bad arguments.
///
/// States: *running* — signals and waits reach the process; *exited* (zombie or reaped) —
/// ``signal`` answers False, ``signal_group`` still reaches live members of the group the
/// process led (the pidfd pins the group, Linux ≥ 6.9, member by member before), ``wait``
/// returns at once; *closed* (``close()``, the end of a ``with`` block, or after
/// ``terminate``) — every method raises ValueError. On systems without pidfds the handle is
/// unpinned (``is_pinned`` is False): signals re-check the start time just before ``kill(2)``,
/// ``wait`` checks every 10 ms and ``fileno()`` raises ValueError.
///
/// Thread safety: methods may be called from several threads. No lock is held while a call
/// blocks: ``close`` returns at once, and the pidfd is closed when a ``wait`` in progress on
/// another thread returns; ``terminate`` raises ValueError while another thread uses the handle. ``pidguard.ProcessRef`` (a subclass) adds
/// ``await wait_async(timeout)`` for asyncio.
#[pyclass(frozen, subclass, module = "pidguard._pidguard")]
pub struct ProcessRef {
    // The mutex is held only to clone or take the Arc, never across a blocking call.
    inner: Mutex<Option<Arc<pidguard::ProcessRef>>>,
    pid: i32,
}

impl ProcessRef {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<pidguard::ProcessRef>>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with<T>(&self, f: impl FnOnce(&pidguard::ProcessRef) -> PyResult<T>) -> PyResult<T> {
        let h = self.slot().clone();
        match h {
            Some(h) => f(&h),
            None => Err(PyValueError::new_err(format!("ProcessRef({}) is closed", self.pid))),
        }
    }
}

/// A signal number: an int (signal.Signals is one), not bool; its range is core's business.
fn signal_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Signal> {
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!("sig must be an int, not {}", type_name(obj))));
    }
    let n: i32 = obj.extract().map_err(|_| PyTypeError::new_err(format!("sig must be an int, not {}", type_name(obj))))?;
    Signal::from_number(n).map_err(|e| to_py_err(py, e))
}

fn delivered(d: Delivery) -> bool {
    matches!(d, Delivery::Sent(_))
}

/// A process that core's `pin_pid_file` pinned, not yet taken by a `ProcessRef`: pass it as
/// ``ProcessRef(pin.pid, pin=pin)`` (what ``ProcessRef.for_pid_file`` does) to get the handle,
/// with the uid restriction core put on it. It can be taken once.
#[pyclass(frozen, module = "pidguard._pidguard")]
pub struct PendingPin {
    inner: Mutex<Option<pidguard::ProcessRef>>,
    pid: i32,
}

impl PendingPin {
    pub(crate) fn new(h: pidguard::ProcessRef) -> PendingPin {
        PendingPin { pid: h.pid(), inner: Mutex::new(Some(h)) }
    }
}

#[pymethods]
impl PendingPin {
    /// The pinned pid (int).
    #[getter]
    fn pid(&self) -> i32 {
        self.pid
    }
}

#[pymethods]
impl ProcessRef {
    #[new]
    #[pyo3(signature = (pid, expected_token=None, *, policy=None, child=None, pin=None))]
    #[pyo3(text_signature = "(pid, expected_token=None, *, policy='strict', child=False, pin=None)")]
    fn py_new(
        py: Python<'_>,
        pid: &Bound<'_, PyAny>,
        expected_token: Option<&Bound<'_, PyAny>>,
        policy: Option<&Bound<'_, PyAny>>,
        child: Option<&Bound<'_, PyAny>>,
        pin: Option<&Bound<'_, PendingPin>>,
    ) -> PyResult<ProcessRef> {
        let pid = pid_arg(pid, "pid")?;
        if let Some(pin) = pin {
            // The handle core pinned for a pidfile: taken as it is (identity, uid restriction).
            let pin = pin.get();
            if pin.pid != pid || expected_token.is_some() || policy.is_some() || child.is_some() {
                return Err(PyValueError::new_err("pin= takes the pinned process as it is: give its pid and nothing else"));
            }
            let h = pin.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
            let h = h.ok_or_else(|| PyValueError::new_err(format!("the pin of pid {pid} was already taken")))?;
            return Ok(ProcessRef { inner: Mutex::new(Some(Arc::new(h))), pid });
        }
        let token = token_arg(py, expected_token)?;
        let policy = policy.map(policy_arg).transpose()?.unwrap_or(Policy::Strict);
        let child = child.map(bool_arg).transpose()?.unwrap_or(false);
        if child && token.is_some() {
            return Err(PyValueError::new_err("child=True pins the caller's own child: give no expected_token"));
        }
        let h = core_call(py, move || {
            if child {
                pidguard::ProcessRef::open_child(pid)
            } else {
                pidguard::ProcessRef::open(pid, token.as_ref(), policy)
            }
        })?;
        Ok(ProcessRef { inner: Mutex::new(Some(Arc::new(h))), pid })
    }

    /// The pid (int); kept after close.
    #[getter]
    fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether signals go through a pidfd (False: this system has none, see the class doc).
    #[getter]
    fn is_pinned(&self) -> PyResult<bool> {
        self.with(|h| Ok(h.is_pinned()))
    }

    /// Whether the process led its own process group when the handle was opened.
    #[getter]
    fn leads_group(&self) -> PyResult<bool> {
        self.with(|h| Ok(h.leads_group()))
    }

    /// The live start token read when the handle was opened (str).
    #[getter]
    fn token(&self) -> PyResult<String> {
        self.with(|h| Ok(h.token().to_string()))
    }

    /// Whether the handle is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.slot().is_none()
    }

    /// Send signal ``sig`` (an int) to the process alone. True when sent; False when the process
    /// has already exited (nothing is sent, and nothing can reach a later holder of the pid).
    /// Raises PermissionDeniedError (a PermissionError) for EPERM, InvalidArgumentError for a
    /// number that is not a signal (0 included), ValueError when closed.
    fn signal(&self, py: Python<'_>, sig: &Bound<'_, PyAny>) -> PyResult<bool> {
        let sig = signal_arg(py, sig)?;
        self.with(|h| core_call(py, || h.signal(sig)).map(delivered))
    }

    /// Send ``sig`` to the process group this process leads; it still reaches the group's live
    /// members after the leader has exited. True when sent to anyone; False when nobody is left.
    /// Raises RefusedError when the process does not lead its group (that group is someone
    /// else's) or the group is 1 or the caller's own; PermissionDeniedError for EPERM.
    fn signal_group(&self, py: Python<'_>, sig: &Bound<'_, PyAny>) -> PyResult<bool> {
        let sig = signal_arg(py, sig)?;
        self.with(|h| core_call(py, || h.signal_group(sig)).map(delivered))
    }

    /// Whether the process has exited (it may still be an unreaped zombie). Does not block.
    fn has_exited(&self) -> PyResult<bool> {
        self.with(|h| Ok(h.has_exited()))
    }

    /// Block until the process exits or ``timeout`` seconds pass (None: no limit), with the GIL
    /// released; returns whether it exited. Pinned handles wait on pidfd readiness (no polling).
    /// For asyncio, wait on ``fileno()`` with ``loop.add_reader`` instead.
    #[pyo3(signature = (timeout=None))]
    #[pyo3(text_signature = "($self, timeout=None)")]
    fn wait(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let t = match timeout {
            Some(t) if !t.is_none() => {
                let s = seconds_arg(t, "timeout")?;
                if !(s.is_finite() && s >= 0.0) || s > 1e9 {
                    return Err(PyValueError::new_err(format!("timeout must be finite seconds >= 0, not {s}")));
                }
                Some(Duration::from_secs_f64(s))
            }
            _ => None,
        };
        self.with(|h| core_call(py, || h.wait(t)))
    }

    /// Run an escalation ``schedule`` (start-stop-daemon's ``--retry`` syntax, default
    /// ``'TERM/2/KILL/1'``) against the process and, when it leads one and ``group`` is true,
    /// its process group, which counts as exited only when no live member is left. Blocks with
    /// the GIL released. ``reap`` reaps the caller's own child once it exited. The handle is
    /// kept. Returns a TerminateReport; raises PermissionDeniedError (a PermissionError) when the
    /// kernel refused a signal, RefusedError when a safety rule refused the group.
    #[pyo3(signature = (schedule=None, *, group=None, reap=None))]
    #[pyo3(text_signature = "($self, schedule='TERM/2/KILL/1', *, group=True, reap=False)")]
    fn terminate(
        &self,
        py: Python<'_>,
        schedule: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
        reap: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<TerminateView> {
        let opts = terminate_options(py, schedule, group, reap)?;
        // The handle is kept (it can be waited on or terminated again); a signal the kernel
        // refused raises PermissionDeniedError, as pidguard.terminate does.
        self.with(|h| core_call(py, || Ok(h.terminate(&opts)?.into())))
    }

    /// The pidfd (an int) for ``select``/``poll``/``loop.add_reader``: it becomes readable when
    /// the process exits. The handle owns it: do not close it; remove it from any selector
    /// before ``close()``. Raises ValueError when closed or unpinned.
    fn fileno(&self) -> PyResult<i32> {
        self.with(|h| {
            h.pidfd_raw()
                .ok_or_else(|| PyValueError::new_err(format!("ProcessRef({}) is unpinned: it has no pidfd", self.pid)))
        })
    }

    /// Close the pidfd (at once, or when a wait in progress on another thread returns).
    /// Idempotent.
    fn close(&self) {
        let h = self.slot().take();
        drop(h);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(&self, _exc_type: &Bound<'_, PyAny>, _exc: &Bound<'_, PyAny>, _tb: &Bound<'_, PyAny>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let state = match self.slot().as_deref() {
            None => "closed".to_string(),
            Some(h) => format!("pinned={}, leads_group={}", if h.is_pinned() { "True" } else { "False" }, if h.leads_group() { "True" } else { "False" }),
        };
        format!("ProcessRef(pid={}, {state})", self.pid)
    }
}
