//! `probePidFile`: "is this record in use?", with no side effect (core's `probe_pid_file`).

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;
use pidguard::probe::ProbeView as Probe;

use crate::convert::{self, call, path, PathArg};
use crate::PinOptions;

/// Probe a pidfile of either format (core's `probe_pid_file`), synchronously (it reads the
/// record and procfs, it never waits): the record's check plus how many processes its recorded
/// scope still holds. Nothing is signalled, nothing removed — a probe never acts. `inUse` is
/// true for anything not proven stale (a record that cannot be judged may name a live process);
/// `running` when the recorded process runs or, its first process gone, its scope still holds
/// processes. With no `argv`/`cmdFile`, the `.sh` beside an abx-dl pidfile is used when present.
///
/// Throws a `RangeError` `PIDGUARD_INVALID_ARGUMENT` for `argv` and `cmdFile` both given;
/// `PIDGUARD_MALFORMED`/`PIDGUARD_PERMISSION_DENIED` for a guard record that cannot be read.
#[napi(ts_args_type = "pidFile: string | Buffer, options?: PinOptions | null")]
pub fn probe_pid_file(env: Env, pid_file: PathArg, options: Option<PinOptions>) -> Result<Probe> {
    let (argv, cmd_file, tolerance) = match options {
        Some(o) => (o.argv, o.cmd_file.as_ref().map(path), convert::given(o.tolerance)),
        None => (None, None, None),
    };
    call(&env, || {
        let opts = pidguard::CheckOptions::from_parts(cmd_file.as_deref(), argv.as_deref(), tolerance)?;
        pidguard::probe_pid_file(&path(&pid_file), &opts).map(|p| (&p).into())
    })
}

/// The live processes (not exited, not this one) whose command line contains one of `needles`
/// (core's `processes_running`): `{ pid, cwd }`, `cwd` undefined when it cannot be read. Never
/// signals; synchronous (it reads the process list, never waits). The pids are an answer, not a
/// target: pin one (`lookup`, `ProcessRef`) before acting on it.
///
/// Throws `PIDGUARD_PERMISSION_DENIED`/`PIDGUARD_IO` when the process list cannot be read.
#[napi]
pub fn processes_running(env: Env, needles: Vec<String>) -> Result<Vec<pidguard::probe::RunningProcess>> {
    call(&env, || {
        let n: Vec<&str> = needles.iter().map(String::as_str).collect();
        pidguard::probe::processes_running(&n)
    })
}
