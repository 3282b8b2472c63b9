//! `ProcessRef`: core's pinned process handle (`pidguard::ProcessRef`) as a JavaScript class.
//!
//! The class holds the core handle behind an `Arc`, so that a pending `wait()` or `terminate()`
//! on libuv's thread pool keeps the pidfd open while JavaScript may call `close()`. Every method
//! takes `&self` (`close()` empties a `Mutex`): napi keeps a method's borrow of the object until
//! the Promise it returned settles, so a `&mut self` method would throw while a wait is pending.

use std::sync::{Arc, Mutex, MutexGuard};

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::convert::{self, call, js_error, task, CoreTask};
use pidguard::report::TerminateView as TerminateReport;

/// Options of `ProcessRef#terminate`; every default is core's.
#[napi(object)]
pub struct ProcessTerminateOptions {
    /// start-stop-daemon `--retry` syntax, e.g. `'TERM/2/KILL/1'` (the default), `'5'`, `'-9'`.
    pub schedule: Option<String>,
    /// Signal the process group the process leads (default true). A process that does not lead
    /// its group is always signalled alone.
    pub group: Option<bool>,
    /// Reap the process if it is this process's own child (default false: Node's
    /// `child_process` reaps its children itself).
    pub reap: Option<bool>,
}

/// A process pinned by pid and identity (core's `ProcessRef`, systemd's PidRef): every signal
/// and wait goes through its pidfd, so none can reach a process that later reuses the number.
/// Keep it from spawn to cleanup: after the leader has exited (even once Node has reaped it),
/// `signalGroup` and `terminate` still reach the rest of the group it led, and nothing else.
///
/// Made by `ProcessRef.open(pid, token, policy)`; there is no constructor. States:
/// - **running**: `signal`/`signalGroup` reach this process and its group; `wait` resolves when
///   it exits.
/// - **exited** (zombie or reaped): `signal` returns `false` (nothing sent); `signalGroup`
///   still reaches live members of the group it led while that group is provably its own;
///   `wait` resolves `true` at once; `hasExited()` is `true`.
/// - **unpinned** (`pinned === false`, `fd === null`: no pidfd on this system): each signal
///   re-reads the start time right before `kill(2)`; `wait` checks every 10 ms.
/// - **closed** (`close()`): the pidfd is released once pending waits finish; every method then
///   throws `PIDGUARD_INVALID_ARGUMENT`; `pid` and `token` still say what the handle was.
#[napi]
pub struct ProcessRef {
    inner: Mutex<Option<Arc<pidguard::ProcessRef>>>,
    pid: i32,
    token: String,
    pinned: bool,
    scope: String,
}

impl ProcessRef {
    pub(crate) fn new(h: pidguard::ProcessRef) -> ProcessRef {
        ProcessRef { pid: h.pid(), token: h.token().to_string(), pinned: h.is_pinned(), scope: h.scope_kind().to_string(), inner: Mutex::new(Some(Arc::new(h))) }
    }

    fn slot(&self) -> MutexGuard<'_, Option<Arc<pidguard::ProcessRef>>> {
        // Nothing panics while holding it; a poisoned lock still holds a valid Option.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn handle(&self, env: &Env) -> Result<Arc<pidguard::ProcessRef>> {
        self.slot().clone().ok_or_else(|| {
            js_error(env, &pidguard::Error::invalid(format!("ProcessRef of pid {} is closed", self.pid)).with_pid(self.pid))
        })
    }
}

#[napi]
impl ProcessRef {
    /// Pin the process `pid` and check it against `token` under `policy`, synchronously (it
    /// reads procfs, it never waits).
    ///
    /// - `pid`: an integer in `1..=2^31-1` (`TypeError`/`RangeError` otherwise, before anything).
    /// - `token`: its recorded start token (from `startToken`), or `null` for a record without
    ///   one (then only `'lenient'` accepts it).
    /// - `policy`: `'strict'` (core's default: only a token `'match'`) or `'lenient'`.
    ///
    /// Throws `PIDGUARD_REFUSED` (`.refusal`: `'init'`, `'own-pid'`, `'parent'`, `'mismatch'`,
    /// `'unverifiable'`, `'above-pid-max'`, …) for a target that may not be signalled;
    /// `PIDGUARD_NO_SUCH_PROCESS` (errno `ESRCH`) when it is gone or a zombie;
    /// `PIDGUARD_INVALID_ARGUMENT` for a malformed token.
    #[napi(factory, ts_args_type = "pid: number, token?: string | null, policy?: 'strict' | 'lenient' | null")]
    pub fn open(env: Env, pid: Unknown, token: Option<String>, policy: Option<String>) -> Result<ProcessRef> {
        let pid = convert::pid(&env, &pid, "pid")?;
        let token = token.as_deref().map(|t| convert::token(&env, t)).transpose()?;
        let policy = convert::policy(&env, policy.as_deref())?;
        call(&env, || pidguard::ProcessRef::open(pid, token.as_ref(), policy)).map(ProcessRef::new)
    }

    /// Pin the caller's own child `pid` (a `ChildProcess` it spawned, not yet reaped) without
    /// a token: until it is reaped nobody else can reap it, so its pid and the process group it
    /// leads are still its own. A child that has exited but is not reaped yet is pinned too, so
    /// the live members of its group are still reached.
    ///
    /// Throws `PIDGUARD_INVALID_ARGUMENT` when `pid` is not a child of this process,
    /// `PIDGUARD_NO_SUCH_PROCESS` once it was reaped, `PIDGUARD_REFUSED` for pid 1 or our own.
    #[napi(factory, ts_args_type = "pid: number")]
    pub fn open_child(env: Env, pid: Unknown) -> Result<ProcessRef> {
        let pid = convert::pid(&env, &pid, "pid")?;
        call(&env, || pidguard::ProcessRef::open_child(pid)).map(ProcessRef::new)
    }

    /// The pid.
    #[napi(getter)]
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether signals and waits go through a pidfd (`false`: `kill(2)` right after re-reading
    /// the start time, on kernels or sandboxes without pidfds). Fixed when the handle is opened.
    #[napi(getter)]
    pub fn pinned(&self) -> bool {
        self.pinned
    }

    /// What `signalGroup` and `terminate` reach: `'group'` (the process group it leads), or the
    /// scope recorded with its pidfile (`pinPidFile` of a record `spawn` wrote, whose
    /// `user.pidguard.scope` xattr was read and proven the process's): `'cgroup'` or
    /// `'supervisor'`, every process of its tree. Fixed when the handle is opened.
    #[napi(getter)]
    pub fn scope(&self) -> String {
        self.scope.clone()
    }

    /// The live start token read when the handle was opened (`linux1:…`).
    #[napi(getter)]
    pub fn token(&self) -> String {
        self.token.clone()
    }

    /// The pidfd's number, readable once the process exits (for a poller of your own); `null`
    /// when unpinned or closed. It stays the handle's: never close it yourself.
    #[napi(getter)]
    pub fn fd(&self) -> Option<i32> {
        self.slot().as_ref().and_then(|h| h.pidfd_raw())
    }

    /// Send `sig` (`'TERM'`, `'SIGKILL'`, `15`) to the process alone. `true` when sent; `false`
    /// when it has already exited (nothing is sent, nothing can reach a successor).
    ///
    /// Throws `PIDGUARD_PERMISSION_DENIED` (errno `EPERM`) when the kernel refuses (another
    /// user's process); `PIDGUARD_INVALID_ARGUMENT` for an unknown signal or a closed handle.
    #[napi(ts_args_type = "sig: string | number")]
    pub fn signal(&self, env: Env, sig: Unknown) -> Result<bool> {
        let sig = convert::signal(&env, &sig, "sig")?;
        let h = self.handle(&env)?;
        call(&env, || h.signal(sig)).map(|d| d != pidguard::Delivery::AlreadyGone)
    }

    /// Send `sig` to the process group this process leads, also after the leader has exited
    /// (as long as the group is provably still the one it led). `true` when sent to at least
    /// one member; `false` when no member is left.
    ///
    /// Throws `PIDGUARD_REFUSED` when the process does not lead its group (its group is someone
    /// else's) or the group is 1 or ours; `PIDGUARD_PERMISSION_DENIED` when the kernel refuses;
    /// `PIDGUARD_INVALID_ARGUMENT` for an unknown signal or a closed handle.
    #[napi(ts_args_type = "sig: string | number")]
    pub fn signal_group(&self, env: Env, sig: Unknown) -> Result<bool> {
        let sig = convert::signal(&env, &sig, "sig")?;
        let h = self.handle(&env)?;
        call(&env, || h.signal_group(sig)).map(|d| d != pidguard::Delivery::AlreadyGone)
    }

    /// Whether the process has exited (it may still be an unreaped zombie). Never waits.
    /// Throws `PIDGUARD_INVALID_ARGUMENT` for a closed handle.
    #[napi]
    pub fn has_exited(&self, env: Env) -> Result<bool> {
        let h = self.handle(&env)?;
        call(&env, || Ok(h.has_exited()))
    }

    /// Wait, off the event loop, until the process exits or `timeoutSeconds` pass (`null` or
    /// omitted: no limit). Resolves to whether it exited. Pinned: the pidfd's readiness, no
    /// polling.
    ///
    /// Throws at once `TypeError`/`RangeError` for a timeout that is not a finite number ≥ 0,
    /// `PIDGUARD_INVALID_ARGUMENT` for a closed handle.
    #[napi(ts_args_type = "timeoutSeconds?: number | null", ts_return_type = "Promise<boolean>")]
    pub fn wait(&self, env: Env, timeout_seconds: Option<Unknown>) -> Result<AsyncTask<CoreTask<bool>>> {
        let timeout = match timeout_seconds {
            Some(t) if !matches!(t.get_type()?, napi::ValueType::Undefined | napi::ValueType::Null) => {
                Some(convert::duration(&env, convert::number(&env, &t, "timeoutSeconds")?, "timeoutSeconds")?)
            }
            _ => None,
        };
        let h = self.handle(&env)?;
        Ok(task(move || h.wait(timeout)))
    }

    /// Stop the process, and the group it leads, with an escalation schedule, off the event
    /// loop; the handle stays usable (`hasExited()`, `wait()`, `terminate()` again). Give the
    /// schedule (`'TERM/5/KILL/2'`) or `{ schedule, group, reap }`.
    ///
    /// Resolves to a `TerminateReport` (`outcome` `'already-gone'`, `'exited'` or
    /// `'unkillable'`). Throws at once `PIDGUARD_INVALID_ARGUMENT` for a malformed schedule or a
    /// closed handle. Rejects with `PIDGUARD_PERMISSION_DENIED` (errno `EPERM`) when the kernel
    /// refused a signal, `PIDGUARD_REFUSED` when a safety rule refused the group.
    #[napi(ts_args_type = "options?: string | ProcessTerminateOptions | null", ts_return_type = "Promise<TerminateReport>")]
    pub fn terminate(&self, env: Env, options: Option<Either<String, ProcessTerminateOptions>>) -> Result<AsyncTask<CoreTask<TerminateReport>>> {
        let opts = match &options {
            None => convert::terminate_options(&env, None, None, None)?,
            Some(Either::A(s)) => convert::terminate_options(&env, Some(s), None, None)?,
            Some(Either::B(o)) => convert::terminate_options(&env, o.schedule.as_deref(), o.group, o.reap)?,
        };
        let h = self.handle(&env)?;
        Ok(task(move || h.terminate(&opts).map(|r| (&r).into())))
    }

    /// Release the pidfd (once pending `wait()`/`terminate()` calls finish). Calling it again
    /// does nothing. The garbage collector also releases it, at a time of its choosing.
    #[napi]
    pub fn close(&self) {
        self.slot().take();
    }
}
