//! pidguard_probe_pid_file(): "is this record in use?", with no side effect (core's
//! `probe_pid_file`).

use std::ffi::c_int;

use pidguard_core as pg;

use crate::boundary::{opt_path, out, path};
use crate::results::{pidguard_pid_file_check, write_result};
use crate::types::pidguard_scope;

/// What pidguard_probe_pid_file() found: the record's check plus how many processes its scope
/// still holds. Nothing was signalled or removed. `check.token` stays valid until the next call
/// on the same thread that returns a result.
#[repr(C)]
pub struct pidguard_probe_result {
    /// The record's check (as pidguard_check_pid_file_with() answers it).
    pub check: pidguard_pid_file_check,
    /// The kind of scope recorded with the record; PIDGUARD_SCOPE_GROUP when none is.
    pub scope: pidguard_scope,
    /// How many processes the recorded scope still holds, each pinned and proven inside it; -1
    /// when it was not counted (no scope recorded, a record not dated on this machine and PID
    /// namespace, or a scope that could not be read).
    pub scope_members: i64,
    /// Whether the record is in use: anything but proven not running (a record that cannot be
    /// judged may name a live process).
    pub in_use: bool,
    /// Whether the record runs: its process, or — its first process gone — its scope.
    pub running: bool,
}

/// Probe a pidfile of either format (core's `probe_pid_file`): the record's check plus how many
/// processes its recorded scope still holds. Nothing is signalled, nothing removed, nothing
/// waited on: a probe never acts. With no recorded command in `options`, the `.sh` beside an
/// abx-dl pidfile is used when it exists.
///
/// - `pid_file`: the pidfile's path. Required.
/// - `options`: the recorded command and the tolerance (see pidguard_check_options), or NULL
///   for the defaults.
/// - `result_out`: receives the answer (a struct the caller allocates); written only on success.
///
/// Returns 0 (every problem with an abx-dl pidfile is its check's reason);
/// PIDGUARD_EINVALID_ARGUMENT for a NULL `pid_file` or `result_out`, both `cmd_file` and
/// `argv`, a NULL or non-UTF-8 string in `argv`; PIDGUARD_EMALFORMED,
/// PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO for a guard record that cannot be read.
#[no_mangle]
pub extern "C" fn pidguard_probe_pid_file(
    pid_file: *const std::ffi::c_char,
    options: *const crate::api::pidguard_check_options,
    result_out: *mut pidguard_probe_result,
) -> c_int {
    ffi!("pidguard_probe_pid_file", {
        let pid_file = path(pid_file, "pid_file")?;
        let result_out = out(result_out, "result_out")?;
        // SAFETY: a non-NULL `options` points at a pidguard_check_options the caller owns.
        let o = unsafe { options.as_ref() };
        let (cmd_file, args, tolerance) = match o {
            None => (None, None, None),
            Some(o) => (
                opt_path(o.cmd_file, "cmd_file")?,
                crate::process::argv_arg(o.argv, o.argc)?,
                o.has_tolerance.then_some(o.tolerance),
            ),
        };
        let opts = pg::CheckOptions::from_parts(cmd_file, args.as_deref(), tolerance)?;
        let p = pg::probe_pid_file(pid_file, &opts)?;
        write_result(result_out, |kept| {
            Ok(pidguard_probe_result {
                check: pidguard_pid_file_check::of(&p.check, kept),
                scope: (&p.scope).into(),
                scope_members: p.scope_members.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX)),
                in_use: p.in_use(),
                running: p.running(),
            })
        })
    })
}
