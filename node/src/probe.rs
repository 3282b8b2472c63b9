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

/// Whether anything recorded in `dir` is in use (core's `probe::records_in_use`): every record
/// `names` selects there (`{ prefix, contains, suffix, except }`, matched on the names; default
/// every entry), whatever kind of file stands at its name, asked of the probe. `inUse` is true
/// while any record runs or cannot be judged (a FIFO, directory or symlink at a record's name,
/// an unreadable file, an identity that cannot be read) and when `dir` cannot be listed; false
/// only when every record was proven not in use. `evidence` says which records keep it in use,
/// `error` why `dir` could not be listed. Never signals, removes or waits; never throws for the
/// directory's state.
#[napi(ts_args_type = "dir: string | Buffer, names?: RecordNames | null")]
pub fn records_in_use(dir: PathArg, names: Option<pidguard::probe::RecordNames>) -> pidguard::probe::RecordsInUse {
    pidguard::probe::records_in_use(&path(&dir), &names.unwrap_or_default())
}
