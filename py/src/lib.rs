//! `pidguard._pidguard`: the native half of `import pidguard`.
//!
//! A thin shell over `pidguard-core`: every function checks and converts its arguments (types
//! and plain ranges, before any system call), makes one core call with the GIL released, and
//! converts the result or the error. Every decision lives in core. Errors become the classes of
//! `pidguard/errors.py` through its `_from_native` factory, so the class hierarchy (with its
//! builtin twins such as `ProcessLookupError`) is defined in Python, once.
#![deny(unsafe_code)]

mod convert;
mod guard;
mod hook_report;
mod probe;
mod process;

use std::path::PathBuf;

use pidguard::report::{JudgementView, PidFileCheckView, ProcessInfoView, SpawnView, StopView, TerminateView};
use pidguard::{CleanupOptions, Schedule};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyString};

use crate::convert::*;
use crate::hook_report::HookReport;

// ---------------------------------------------------------------------------------------------
// Result classes: core's `pidguard::report` structs are the Python classes (its `python`
// feature), except `HookReport` (`hook_report.rs`: the same class, built lazily); only the
// finalize exception of a hook is added here, as an instance attribute.

/// Set `finalize_exception` on a HookReport object, only when the callback raised (the class
/// attribute, set at import, is None).
fn with_exception(py: Python<'_>, obj: Py<HookReport>, finalize_exception: Option<Py<PyAny>>) -> PyResult<Py<HookReport>> {
    if let Some(e) = finalize_exception {
        obj.bind(py).setattr("finalize_exception", e)?;
    }
    Ok(obj)
}

// ---------------------------------------------------------------------------------------------
// Functions

/// Write an abx-dl pidfile: the decimal pid (no newline) as content, `start_time` (seconds
/// since the epoch, float) as the file's atime and mtime, atomically (temporary file, fsync,
/// rename), and the start token of `pid` in the `user.pidguard.token` xattr when it can be read
/// and its create time is within 5 s of `start_time`.
///
/// Raises TypeError (pid not an int, start_time not a number, bad path type) or ValueError
/// (pid out of range, NaN/infinite start_time) before anything is written; UntrustedError when
/// the target is a symlink, FIFO or directory; NotFoundError, PermissionDeniedError or IoError
/// from the file system.
#[pyfunction]
#[pyo3(text_signature = "(pid_file, pid, start_time)")]
fn write_pid_file_with_mtime(
    py: Python<'_>,
    pid_file: &Bound<'_, PyAny>,
    pid: &Bound<'_, PyAny>,
    start_time: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let path = path_arg(pid_file, "pid_file")?;
    let pid = pid_arg(pid, "pid")?;
    let t = seconds_arg(start_time, "start_time")?;
    if !t.is_finite() {
        return Err(PyValueError::new_err(format!("start_time must be finite, not {t}")));
    }
    core_call(py, move || pidguard::write_pid_file_with_mtime(&path, pid, t))
}

/// True when the pidfile names a live process that is still the one it recorded (abx-dl's
/// rules, made stricter where the start token can decide). Every file or process problem gives
/// False, never an exception; `check_pid_file` says why. `tolerance` is in seconds.
///
/// The second argument records the hook's command either way abx-dl has recorded it: a path to
/// its `.sh` file (str, bytes or os.PathLike; releases up to 1.12), or the argv itself as a
/// list of str (`expected_argv`, the current release); None or an empty list: no command rules.
///
/// Options as core's ``CheckOptions`` decides them in every surface: ``tolerance=None`` is the
/// default 5.0; a negative or non-finite tolerance admits no skew (a token-less record is
/// False), never an exception. Raises TypeError for bad argument types. (``pidguard.abx_dl``
/// keeps abx-dl's ``tolerance=None`` → False.)
#[pyfunction]
#[pyo3(text_signature = "(pid_file, cmd_file=None, tolerance=5.0)")]
#[pyo3(signature = (pid_file, cmd_file=None, tolerance=Tolerance(Some(pidguard::DEFAULT_TOLERANCE))))]
fn validate_pid_file(
    py: Python<'_>,
    pid_file: &Bound<'_, PyAny>,
    cmd_file: Option<&Bound<'_, PyAny>>,
    tolerance: Tolerance,
) -> PyResult<bool> {
    let (path, cmd) = check_args(pid_file, cmd_file)?;
    let tol = tolerance.0;
    core_call(py, move || Ok(pidguard::validate_pid_file_with(&path, &check_options(cmd.as_ref(), tol)?)))
}

/// Like `validate_pid_file`, but returns a PidFileCheck saying why (its `reason`), with the
/// pid, verdict, recorded token, mtime and create time. Never raises for file or process
/// problems; TypeError/ValueError for bad arguments.
#[pyfunction]
#[pyo3(text_signature = "(pid_file, cmd_file=None, tolerance=5.0)")]
#[pyo3(signature = (pid_file, cmd_file=None, tolerance=Tolerance(Some(pidguard::DEFAULT_TOLERANCE))))]
fn check_pid_file(
    py: Python<'_>,
    pid_file: &Bound<'_, PyAny>,
    cmd_file: Option<&Bound<'_, PyAny>>,
    tolerance: Tolerance,
) -> PyResult<PidFileCheckView> {
    let (path, cmd) = check_args(pid_file, cmd_file)?;
    let tol = tolerance.0;
    core_call(py, move || Ok((&pidguard::check_pid_file_with(&path, &check_options(cmd.as_ref(), tol)?)).into()))
}

/// Write a hook's command file as abx-dl's `write_cmd_file` writes it: `#!/bin/bash`, then
/// `argv` joined as `shlex.join` joins it (an argument with a line break is quoted, and read
/// back as one argument; an empty argv writes the shebang line alone), mode 0755, atomically
/// (a symlink at the path is refused).
///
/// Raises TypeError when argv is not a sequence of str; InvalidArgumentError (a ValueError) for
/// an argument holding a NUL; UntrustedError for a symlink, FIFO or directory at the path;
/// file system errors otherwise.
/// An argv from Python: a sequence of `str`, not a single string (TypeError otherwise).
fn argv_arg(argv: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if argv.is_instance_of::<PyString>() || argv.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err("argv must be a sequence of str, not a single string"));
    }
    argv.try_iter()
        .map_err(|_| PyTypeError::new_err(format!("argv must be a sequence of str, not {}", type_name(argv))))?
        .map(|a| a.and_then(|a| str_arg(&a, "each argv item")))
        .collect()
}

#[pyfunction]
#[pyo3(text_signature = "(cmd_file, argv)")]
fn write_cmd_file(py: Python<'_>, cmd_file: &Bound<'_, PyAny>, argv: &Bound<'_, PyAny>) -> PyResult<()> {
    let path = path_arg(cmd_file, "cmd_file")?;
    let argv = argv_arg(argv)?;
    core_call(py, move || pidguard::write_cmd_file(&path, &argv))
}

/// Everything procfs says about `pid` now, as a ProcessInfo (`create_time` equals psutil's
/// `Process.create_time()`). A zombie is returned with `state == 'Z'`.
///
/// Raises TypeError/ValueError for a bad pid; InvalidArgumentError above pid_max;
/// NoSuchProcessError (a ProcessLookupError) when there is no such process.
#[pyfunction]
#[pyo3(text_signature = "(pid)")]
fn lookup(py: Python<'_>, pid: &Bound<'_, PyAny>) -> PyResult<ProcessInfoView> {
    let pid = pid_arg(pid, "pid")?;
    core_call(py, move || pidguard::lookup(pid).map(|i| (&i).into()))
}

/// The start token of the live process `pid`, as a str
/// (`linux1:<machine_id>:<boot_id>:<pidns_ino>:<start_ticks>:<pidfs_ino or ->`).
///
/// Raises TypeError/ValueError for a bad pid; InvalidArgumentError above pid_max;
/// NoSuchProcessError when there is no such process or it is a zombie.
#[pyfunction]
#[pyo3(text_signature = "(pid)")]
fn start_token(py: Python<'_>, pid: &Bound<'_, PyAny>) -> PyResult<String> {
    let pid = pid_arg(pid, "pid")?;
    core_call(py, move || pidguard::start_token(pid).map(|t| t.to_string()))
}

/// Pin `pid` with a pidfd, check it against `expected_token` under `policy` ('strict': only a
/// matching token authorises; 'lenient': also a process whose identity cannot be verified,
/// e.g. no token given), then run `schedule` (start-stop-daemon's --retry syntax; waits in
/// seconds) against it and, when it leads one and `group` is true, its process group. Blocks
/// until the outcome, with the GIL released. `reap` reaps the caller's own child once it exits
/// (default: leave it to the code that spawned it, e.g. Popen.wait()).
///
/// Returns a TerminateReport. Raises TypeError/ValueError for bad arguments (an
/// InvalidArgumentError for a malformed schedule or token) before anything is sent;
/// RefusedError (its `refusal` says why) for a protected target (pid 1, our own pid, our
/// parent) or an identity the policy does not accept; NoSuchProcessError (a
/// ProcessLookupError) when the process is gone or a zombie.
#[pyfunction]
#[pyo3(text_signature = "(pid, expected_token=None, *, policy='strict', schedule='TERM/2/KILL/1', group=True, reap=False)")]
#[pyo3(signature = (pid, expected_token=None, *, policy=None, schedule=None, group=None, reap=None))]
fn terminate(
    py: Python<'_>,
    pid: &Bound<'_, PyAny>,
    expected_token: Option<&Bound<'_, PyAny>>,
    policy: Option<&Bound<'_, PyAny>>,
    schedule: Option<&Bound<'_, PyAny>>,
    group: Option<&Bound<'_, PyAny>>,
    reap: Option<&Bound<'_, PyAny>>,
) -> PyResult<TerminateView> {
    let pid = pid_arg(pid, "pid")?;
    let token = token_arg(py, expected_token)?;
    let policy = policy.map(policy_arg).transpose()?.unwrap_or_default();
    let opts = terminate_options(py, schedule, group, reap)?;
    core_call(py, move || Ok((&pidguard::terminate_pid(pid, token.as_ref(), policy, &opts)?).into()))
}

/// Is the process at ``pid`` the one ``expected_token`` names? One of four verdicts, never a
/// guess: returns a Judgement ('match', 'mismatch', 'unverifiable', 'gone' with its reason).
/// Without a token a live process is 'unverifiable' ('no-recorded-token'); a failure to read the
/// live identity is 'unverifiable' with its errno, never 'gone'.
///
/// Raises ValueError for a pid outside 1 to 4194304, InvalidArgumentError for a malformed token.
#[pyfunction]
#[pyo3(signature = (pid, expected_token=None))]
fn judge(py: Python<'_>, pid: &Bound<'_, PyAny>, expected_token: Option<&Bound<'_, PyAny>>) -> PyResult<JudgementView> {
    let pid = pid_arg(pid, "pid")?;
    let token = token_arg(py, expected_token)?;
    core_call(py, move || Ok((&pidguard::judge(pid, token.as_ref())?).into()))
}

/// Stop the process an abx-dl pidfile names, with its process group, and nothing else (what
/// ``pidguard stop`` does): a stale record (missing, gone, proven reuse) is removed if unchanged
/// with nothing sent; an unproven one is refused and kept; a proven one is stopped with
/// ``schedule`` and its pidfile removed. ``policy='lenient'`` also acts on a token-less record
/// whose mtime is off, with a warning. ``cmd_file`` None checks the ``.sh`` beside the pidfile
/// when it exists; ``group=False`` signals the process alone. The keyword arguments are core's
/// StopOptions, the same on every surface. Blocks with the GIL released. Returns a StopReport.
///
/// Raises MalformedError for content that is not one pid, UntrustedError for a symlink/FIFO,
/// PermissionDeniedError when the file cannot be read, ValueError/TypeError for bad arguments.
#[pyfunction]
#[pyo3(signature = (pid_file, *, schedule=None, policy=None, cmd_file=None, tolerance=None, group=None))]
fn stop_pid_file(
    py: Python<'_>,
    pid_file: &Bound<'_, PyAny>,
    schedule: Option<&Bound<'_, PyAny>>,
    policy: Option<&Bound<'_, PyAny>>,
    cmd_file: Option<&Bound<'_, PyAny>>,
    tolerance: Option<&Bound<'_, PyAny>>,
    group: Option<&Bound<'_, PyAny>>,
) -> PyResult<StopView> {
    let path = path_arg(pid_file, "pid_file")?;
    let mut opts = pidguard::StopOptions::default();
    if let Some(s) = schedule.filter(|s| !s.is_none()) {
        opts.schedule = schedule_arg(py, s)?;
    }
    if let Some(p) = policy.filter(|p| !p.is_none()) {
        opts.policy = policy_arg(p)?;
    }
    opts.cmd_file = opt_path_arg(cmd_file, "cmd_file")?;
    if let Some(t) = tolerance.filter(|t| !t.is_none()) {
        opts.tolerance = tolerance_arg(t)?;
    }
    if let Some(g) = group {
        opts.group = bool_arg(g)?;
    }
    core_call(py, move || pidguard::stop_pid_file(&path, &opts).map(|r| (&r).into()))
}

/// Judge an abx-dl pidfile as abx-dl's ``graceful_kill_by_pid_file`` does and pin what it
/// names (core's ``pin_pid_file``): the directory is opened once and the record read from it
/// (owner and mode from that descriptor); a record proven stale (gone, zombie, mismatch,
/// mtime-skew, cmd-mismatch, malformed) is retired by content through that directory's
/// descriptor; the owner rule and the protected targets apply. ``cmd_file``: the hook's argv
/// (list of str) or its ``.sh`` path, or None. ``tolerance``: seconds.
///
/// Returns ``(pin, report)``: ``pin`` a PendingPin (take it with ``ProcessRef(pin.pid,
/// pin=pin)``, or use ``pidguard.ProcessRef.for_pid_file``) and ``report`` None when the
/// process may be signalled; else ``pin`` None and ``report`` a StopReport saying why not
/// (``outcome`` 'stale', 'refused' or 'foreign', ``refusal``, ``pid_file_removed``).
///
/// Raises UntrustedError for a symlink/FIFO, MalformedError for a bad token xattr,
/// PermissionDeniedError when the file cannot be read, TypeError/ValueError for bad arguments.
#[pyfunction]
#[pyo3(text_signature = "(pid_file, cmd_file=None, tolerance=5.0)")]
#[pyo3(signature = (pid_file, cmd_file=None, tolerance=Tolerance(Some(pidguard::DEFAULT_TOLERANCE))))]
fn pin_pid_file(
    py: Python<'_>,
    pid_file: &Bound<'_, PyAny>,
    cmd_file: Option<&Bound<'_, PyAny>>,
    tolerance: Tolerance,
) -> PyResult<(Option<process::PendingPin>, Option<StopView>)> {
    let (path, cmd) = check_args(pid_file, cmd_file)?;
    let tol = tolerance.0;
    let pin = core_call(py, move || {
        let opts = check_options(cmd.as_ref(), tol)?;
        pidguard::pin_pid_file(&path, opts.recorded, opts.tolerance)
    })?;
    Ok(match pin {
        pidguard::PidFilePin::Pinned(h) => (Some(process::PendingPin::new(h)), None),
        pidguard::PidFilePin::Left(r) => (None, Some((&r).into())),
    })
}

/// Whether a process with this pid exists and has not exited (core's ``is_process_alive``): a
/// zombie is not alive; a process whose identity cannot be read (EPERM, a ``hidepid`` /proc)
/// is; pid <= 0 and a pid above pid_max are not. Raises TypeError when ``pid`` is not an int
/// (bool included).
#[pyfunction]
#[pyo3(text_signature = "(pid)")]
fn is_process_alive(py: Python<'_>, pid: &Bound<'_, PyAny>) -> PyResult<bool> {
    if pid.is_instance_of::<PyBool>() || !pid.is_instance_of::<pyo3::types::PyInt>() {
        return Err(PyTypeError::new_err(format!("pid must be an int, not {}", type_name(pid))));
    }
    // An int beyond i64 is beyond pid_max too: core says not alive.
    let n: i64 = pid.extract().unwrap_or(if pid.lt(0)? { i64::MIN } else { i64::MAX });
    core_call(py, move || Ok(pidguard::is_process_alive(n)))
}

/// Stop every background hook under `output_dir` that is provably still itself (with its
/// process group, all hooks in parallel, by `schedule`), remove stale pidfiles without
/// signalling anything, and finalize each hook: by default abx-dl's way (append one `Process`
/// and one `ArchiveResult` JSON line per hook to `index_path` when given, printed to stdout
/// too unless `is_tty`; delete the logs of succeeded hooks). When `finalize` is given it is
/// called instead, with the GIL held, once per hook with that hook's HookReport; an
/// exception it raises is recorded in that hook's report (`error` and `finalize_exception`),
/// not raised; a BaseException that is not an Exception (KeyboardInterrupt, SystemExit) is
/// raised once cleanup is done. `no_finalize=True` skips the default finalize (no index lines,
/// logs kept; a `finalize` callback still runs). The keyword arguments are core's
/// CleanupOptions, the same on every surface. The waits run with the GIL released.
///
/// Returns a list of HookReport, one per pidfile found. Raises TypeError/ValueError for bad
/// arguments (InvalidArgumentError for a malformed schedule) before anything is sent;
/// NotFoundError/PermissionDeniedError/IoError when `output_dir` cannot be read;
/// InvalidArgumentError when it is not a directory. Every per-hook problem is in its report.
#[pyfunction]
#[pyo3(text_signature = "(output_dir, index_path=None, is_tty=False, *, schedule='TERM/2/KILL/1', pattern='on_*.pid', tolerance=5.0, no_finalize=False, finalize=None)")]
#[pyo3(signature = (output_dir, index_path=None, is_tty=None, *, schedule=None, pattern=None, tolerance=None, no_finalize=None, finalize=None))]
#[allow(clippy::too_many_arguments)]
fn cleanup_background_hooks(
    py: Python<'_>,
    output_dir: &Bound<'_, PyAny>,
    index_path: Option<&Bound<'_, PyAny>>,
    is_tty: Option<&Bound<'_, PyAny>>,
    schedule: Option<&Bound<'_, PyAny>>,
    pattern: Option<&Bound<'_, PyAny>>,
    tolerance: Option<&Bound<'_, PyAny>>,
    no_finalize: Option<&Bound<'_, PyAny>>,
    finalize: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Py<HookReport>>> {
    let dir = path_arg(output_dir, "output_dir")?;
    let mut opts = CleanupOptions { index_path: opt_path_arg(index_path, "index_path")?, ..CleanupOptions::default() };
    if let Some(t) = is_tty.filter(|t| !t.is_none()) {
        opts.is_tty = bool_arg(t)?;
    }
    if let Some(s) = schedule {
        opts.schedule = schedule_arg(py, s)?;
    }
    if let Some(p) = pattern {
        opts.pattern = str_arg(p, "pattern")?;
    }
    if let Some(t) = tolerance.filter(|t| !t.is_none()) {
        opts.tolerance = tolerance_arg(t)?;
    }
    if let Some(n) = no_finalize.filter(|n| !n.is_none()) {
        opts.no_finalize = bool_arg(n)?;
    }
    let callback: Option<Py<PyAny>> = match finalize {
        Some(f) if f.is_none() => None,
        Some(f) if !f.is_callable() => {
            return Err(PyTypeError::new_err(format!("finalize must be callable, not {}", type_name(f))))
        }
        Some(f) => Some(f.clone().unbind()),
        None => None,
    };

    // Exceptions raised by the callback, by pidfile, to attach to the returned reports.
    let mut raised: Vec<(PathBuf, PyErr)> = Vec::new();
    let reports = core_call(py, || {
        let Some(cb) = &callback else {
            return pidguard::cleanup_background_hooks(&dir, &opts, None);
        };
        let mut call = |r: &pidguard::HookReport| -> Result<(), String> {
            // The callback runs with the GIL held; the waits around it do not.
            Python::attach(|py| {
                let res = HookReport::one(py, r).and_then(|obj| cb.call1(py, (obj,)));
                match res {
                    Ok(_) => Ok(()),
                    Err(e) => {
                        let msg = e.value(py).repr().map(|s| s.to_string()).unwrap_or_else(|_| "exception".into());
                        raised.push((r.pid_file.clone(), e));
                        Err(msg)
                    }
                }
            })
        };
        pidguard::cleanup_background_hooks(&dir, &opts, Some(&mut call))
    })?;
    // A KeyboardInterrupt or SystemExit is not a hook's failure: raise it now that every hook
    // has been dealt with.
    if let Some(i) = raised.iter().position(|(_, e)| !e.is_instance_of::<pyo3::exceptions::PyException>(py)) {
        return Err(raised.swap_remove(i).1);
    }
    // The reports are moved into their Python objects as they are, spelled on first read.
    HookReport::all(py, reports)
        .map(|obj| {
            let obj = obj?;
            let exc = if raised.is_empty() {
                None
            } else {
                let path = &obj.get().report().pid_file;
                raised.iter().find(|(p, _)| p == path).map(|(_, e)| e.value(py).clone().into_any().unbind())
            };
            with_exception(py, obj, exc)
        })
        .collect()
}

/// `spawn`'s ``env``: a mapping (anything with ``items()``) of str/bytes names to str/bytes
/// values, each as ``os.fsencode`` gives it; the checks of the names and values are core's.
fn env_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(std::ffi::OsString, std::ffi::OsString)>> {
    use std::os::unix::ffi::OsStringExt;
    let word = |o: &Bound<'_, PyAny>| -> PyResult<std::ffi::OsString> {
        if let Ok(b) = o.cast::<pyo3::types::PyBytes>() {
            return Ok(std::ffi::OsString::from_vec(b.as_bytes().to_vec()));
        }
        if o.is_instance_of::<pyo3::types::PyString>() {
            return o.extract::<std::ffi::OsString>();
        }
        Err(pyo3::exceptions::PyTypeError::new_err(format!("env: names and values must be str or bytes, not {}", o.get_type().name()?)))
    };
    let items = obj
        .call_method0("items")
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("env must be a mapping, not {}", obj.get_type().name().map(|n| n.to_string()).unwrap_or_default())))?;
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        out.push((word(&k)?, word(&v)?));
    }
    Ok(out)
}

/// A user or group as ``subprocess`` takes it: an int (the id itself) or a str (a name, looked up
/// by core; all digits and no such name: that number). A bool, a negative int or one above
/// 4294967294 is refused here (TypeError / ValueError).
fn id_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<pidguard::launch::IdSpec> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!("{what}: expected int or str, not bool")));
    }
    if obj.is_instance_of::<pyo3::types::PyInt>() {
        let n: i128 = obj.extract()?;
        return match u32::try_from(n) {
            Ok(n) if n != u32::MAX => Ok(pidguard::launch::IdSpec::Id(n)),
            _ => Err(pyo3::exceptions::PyValueError::new_err(format!("{what}: {n} is not a user or group id (0 to 4294967294)"))),
        };
    }
    if obj.is_instance_of::<pyo3::types::PyString>() {
        let s: String = obj.extract()?;
        return s.parse().map_err(|e: pidguard::Error| pyo3::exceptions::PyValueError::new_err(format!("{what}: {e}")));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!("{what}: expected int or str, not {}", obj.get_type().name()?)))
}

/// Start ``argv`` (a non-empty sequence of str) in a new session inside a scope, with its
/// output in files, and record it in ``pid_file`` (core's ``launch::spawn``, what ``pidguard
/// run`` does). Returns a Spawned once the command has exec'd and is recorded; it does not wait
/// for the command, and the GIL is released while it starts it.
///
/// - ``scope``: ``'auto'`` (a cgroup v2 leaf of its own where one can be made, else a subreaper
///   supervisor; ``note`` says why no leaf), ``'cgroup'`` (a leaf or an error), ``'supervisor'``
///   or ``'group'`` (its process group only: a descendant that calls ``setsid`` escapes a stop).
/// - ``cwd``: the command's working directory (default: ours). ``stdout``/``stderr``: log
///   files, truncated (default ``<pid_file without .pid>.stdout.log`` / ``.stderr.log``); stdin
///   is ``/dev/null``.
/// - ``env``: the command's environment, exactly this mapping of names to values (str or
///   bytes; str as ``os.fsencode`` encodes it), as ``subprocess.Popen(env=...)``; its ``PATH``
///   is where a bare program name is looked up. Default None: this process's environment.
///   ``os.environ`` is never touched (no swap: safe while other threads run).
/// - ``guard``: write a guard record (one JSON object, exactly one of racing starters wins)
///   instead of an abx-dl pidfile and its ``.sh``.
/// - ``user``, ``group``, ``extra_groups``: start the command as another identity, with
///   ``subprocess.Popen``'s names: ``user`` and ``group`` an int (the id) or a str (a name; all
///   digits and no such name: that number), ``extra_groups`` an iterable of them. The command's
///   real, effective and saved uid and gid, and its supplementary groups, are exactly those
///   (set in its own process before it execs, in that order: setgroups, setresgid, setresuid,
///   then read back). Unlike ``subprocess``, ``user`` alone also sets the user's primary group
///   and its groups as ``initgroups(3)`` gives them (login's, start-stop-daemon's and systemd's
///   rule): the caller's groups (root's) never pass to the command. ``extra_groups=[]``: none.
///   The scope, its leaf or supervisor and the pidfile stay the caller's, so the command
///   cannot leave or widen its scope, and a stop by the caller reaches its whole tree; the
///   record says who it runs as (``run_as``: ``uid=U gid=G groups=A,B``). Root may ask for any
///   identity; so may root that lowered only its effective uid (``os.getresuid() == (0, U,
///   0)``: the child regains root's rights from the saved uid before it drops them all);
///   anyone else only for ids it already holds (an unprivileged ``user=`` keeps its groups).
///
/// ``stop_pid_file`` and ``cleanup_background_hooks`` then stop every process of the scope.
///
/// The caller's own child is ``supervisor_pid`` when there is one, else ``pid``. It is not
/// reaped, by pidguard or by anything else in Python (``subprocess`` does not know it): until it
/// is reaped its pid, and the process group ``pid`` leads, stay provably the command's, so a
/// later stop still reaches them. Reap it once it is stopped or has ended —
/// ``os.waitpid(child, 0)`` gives the command's status (a supervisor exits with it), or
/// ``ProcessRef.for_child(child)`` then ``wait()`` and ``terminate(reap=True).exit_code``. A
/// long-running program that never reaps keeps one zombie per spawn until it exits.
///
/// Raises TypeError for an argv that is not a sequence of str (a single str included), an
/// ``env`` that is not a mapping of str/bytes to str/bytes, or other bad argument types;
/// ValueError for an empty argv, a NUL in a word, an unknown scope, or an ``env`` name that
/// is empty or holds ``=`` or NUL, or a value holding NUL (InvalidArgumentError), or for a
/// user or group id out of range; PermissionDeniedError (a PermissionError) when this process
/// may not start a command as the identity asked for; NotFoundError for a user or group name
/// with no entry; NotFoundError/PermissionDeniedError when the program or
/// ``cwd`` cannot be used and HeldError when ``pid_file`` still names a live process — all
/// before anything is created; IoError when ``scope='cgroup'`` and no leaf can be made, or
/// when the fork, the cgroup join or the exec fails (with the step). On any error nothing is
/// left running and no leaf is left.
#[pyfunction]
#[pyo3(text_signature = "(argv, pid_file, *, scope='auto', cwd=None, stdout=None, stderr=None, guard=False, env=None, user=None, group=None, extra_groups=None)")]
#[pyo3(signature = (argv, pid_file, *, scope=None, cwd=None, stdout=None, stderr=None, guard=None, env=None, user=None, group=None, extra_groups=None))]
#[allow(clippy::too_many_arguments)]
fn spawn(
    py: Python<'_>,
    argv: &Bound<'_, PyAny>,
    pid_file: &Bound<'_, PyAny>,
    scope: Option<&Bound<'_, PyAny>>,
    cwd: Option<&Bound<'_, PyAny>>,
    stdout: Option<&Bound<'_, PyAny>>,
    stderr: Option<&Bound<'_, PyAny>>,
    guard: Option<&Bound<'_, PyAny>>,
    env: Option<&Bound<'_, PyAny>>,
    user: Option<&Bound<'_, PyAny>>,
    group: Option<&Bound<'_, PyAny>>,
    extra_groups: Option<&Bound<'_, PyAny>>,
) -> PyResult<SpawnView> {
    let argv = argv_arg(argv)?;
    let user = user.filter(|u| !u.is_none()).map(|u| id_arg(u, "user")).transpose()?;
    let group = group.filter(|g| !g.is_none()).map(|g| id_arg(g, "group")).transpose()?;
    let extra_groups = match extra_groups.filter(|g| !g.is_none()) {
        Some(list) => {
            if list.is_instance_of::<pyo3::types::PyString>() || list.is_instance_of::<pyo3::types::PyBytes>() {
                return Err(pyo3::exceptions::PyTypeError::new_err("extra_groups must be an iterable of int or str, not a single str"));
            }
            let mut out = Vec::new();
            for g in list.try_iter()? {
                out.push(id_arg(&g?, "extra_groups")?);
            }
            Some(out)
        }
        None => None,
    };
    let env = env.filter(|e| !e.is_none()).map(env_arg).transpose()?;
    let path = path_arg(pid_file, "pid_file")?;
    let mut opts = pidguard::launch::SpawnOptions {
        cwd: opt_path_arg(cwd, "cwd")?,
        stdout: opt_path_arg(stdout, "stdout")?,
        stderr: opt_path_arg(stderr, "stderr")?,
        env,
        user,
        group,
        extra_groups,
        ..Default::default()
    };
    if let Some(s) = scope.filter(|s| !s.is_none()) {
        opts.scope = str_arg(s, "scope")?.parse().map_err(|e| to_py_err(py, e))?;
    }
    if let Some(g) = guard.filter(|g| !g.is_none()) {
        if bool_arg(g)? {
            opts.format = pidguard::launch::RecordFormat::Guard;
        }
    }
    core_call(py, move || pidguard::launch::spawn(&path, &argv, &opts).map(|s| (&s).into()))
}

/// The native half of `pidguard`; import `pidguard`, not this module.
#[pymodule]
fn _pidguard(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", pidguard::VERSION)?;
    m.add("ERROR_KINDS", error_kinds())?;
    m.add("DEFAULT_TOLERANCE", pidguard::DEFAULT_TOLERANCE)?;
    m.add("DEFAULT_SCHEDULE", Schedule::default().to_string())?;
    m.add("TOKEN_XATTR", pidguard::TOKEN_XATTR)?;
    m.add_class::<ProcessInfoView>()?;
    m.add_class::<PidFileCheckView>()?;
    m.add_class::<TerminateView>()?;
    m.add_class::<HookReport>()?;
    m.getattr("HookReport")?.setattr("finalize_exception", m.py().None())?;
    m.add_class::<JudgementView>()?;
    m.add_class::<StopView>()?;
    m.add_class::<SpawnView>()?;
    m.add_class::<process::ProcessRef>()?;
    m.add_function(wrap_pyfunction!(write_pid_file_with_mtime, m)?)?;
    m.add_function(wrap_pyfunction!(validate_pid_file, m)?)?;
    m.add_function(wrap_pyfunction!(check_pid_file, m)?)?;
    m.add_function(wrap_pyfunction!(write_cmd_file, m)?)?;
    m.add_function(wrap_pyfunction!(lookup, m)?)?;
    m.add_function(wrap_pyfunction!(start_token, m)?)?;
    m.add_function(wrap_pyfunction!(terminate, m)?)?;
    m.add_function(wrap_pyfunction!(judge, m)?)?;
    m.add_function(wrap_pyfunction!(stop_pid_file, m)?)?;
    m.add_function(wrap_pyfunction!(pin_pid_file, m)?)?;
    m.add_function(wrap_pyfunction!(probe::probe_pid_file, m)?)?;
    m.add_class::<pidguard::probe::ProbeView>()?;
    m.add_function(wrap_pyfunction!(is_process_alive, m)?)?;
    m.add_class::<process::PendingPin>()?;
    m.add_function(wrap_pyfunction!(cleanup_background_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(spawn, m)?)?;
    guard::register(m)?;
    Ok(())
}

