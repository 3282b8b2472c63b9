//! The options of stop and of cleanup as C structs, one per operation, with the fields of core's
//! `StopOptions` and `CleanupOptions` under the same names (`tests/operations/options.json`).
//! A caller fills one with its `_init` function (core's defaults), changes the fields it wants,
//! and passes it by pointer; NULL is the defaults. Converting to core's type makes no decision.

use std::ffi::{c_char, c_int};

use pidguard_core as pg;

use crate::boundary::{opt_path, opt_utf8, out, schedule as schedule_arg, FfiResult};
use crate::types::pidguard_policy;

/// The options of pidguard_stop_pid_file_with(), the same as every other surface's (Rust's
/// `StopOptions`, Python's keyword arguments, Node's `StopOptions`, `pidguard stop`'s flags).
/// Fill it with pidguard_stop_options_init() first: fields added in later versions then keep
/// their defaults. Strings are borrowed for the duration of the call only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_stop_options {
    /// The escalation schedule in start-stop-daemon's --retry syntax ("TERM/5/KILL/2", "5",
    /// "-9"), or NULL for "TERM/2/KILL/1".
    pub schedule: *const c_char,
    /// PIDGUARD_POLICY_STRICT (the default) acts only on a proven identity;
    /// PIDGUARD_POLICY_LENIENT also on a token-less file whose mtime is off, with a warning.
    pub policy: i32,
    /// The hook's `.sh` command file to check the live argv against, or NULL for the `.sh`
    /// beside the pidfile when it exists (as `pidguard stop` does).
    pub cmd_file: *const c_char,
    /// Seconds allowed between mtime and process start for a token-less file (default 5.0);
    /// must be finite and >= 0.
    pub tolerance: f64,
    /// Signal the process group the target leads (default true).
    pub group: bool,
}

/// The options of pidguard_cleanup_with(), the same as every other surface's (Rust's
/// `CleanupOptions`, Python's keyword arguments, Node's `CleanupOptions`, `pidguard cleanup`'s
/// flags). Fill it with pidguard_cleanup_options_init() first. Strings are borrowed for the
/// duration of the call only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_cleanup_options {
    /// The JSONL file the `Process` and `ArchiveResult` lines are appended to, or NULL (none).
    pub index_path: *const c_char,
    /// When false (the default) the JSON lines are also printed to stdout, as abx-dl does.
    pub is_tty: bool,
    /// The escalation schedule in start-stop-daemon's --retry syntax, or NULL for "TERM/2/KILL/1".
    pub schedule: *const c_char,
    /// A glob (`*`, `?`) on file names, or NULL for "on_*.pid"; must not be empty or hold '/'.
    pub pattern: *const c_char,
    /// Seconds allowed between mtime and process start for a token-less file (default 5.0);
    /// must be finite and >= 0.
    pub tolerance: f64,
    /// Skip the default finalize: no index lines, logs kept (default false).
    pub no_finalize: bool,
}

/// Fill `options_out` with core's defaults: schedule NULL ("TERM/2/KILL/1"), policy
/// PIDGUARD_POLICY_STRICT, cmd_file NULL (the `.sh` beside the pidfile), tolerance 5.0, group
/// true. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `options_out`. Thread-safe.
#[no_mangle]
pub extern "C" fn pidguard_stop_options_init(options_out: *mut pidguard_stop_options) -> c_int {
    ffi!("pidguard_stop_options_init", {
        let o = out(options_out, "options_out")?;
        let d = pg::StopOptions::default();
        o.write(pidguard_stop_options {
            schedule: std::ptr::null(),
            policy: pidguard_policy::PIDGUARD_POLICY_STRICT as i32,
            cmd_file: std::ptr::null(),
            tolerance: d.tolerance,
            group: d.group,
        });
        Ok(())
    })
}

/// Fill `options_out` with core's defaults: index_path NULL, is_tty false, schedule NULL
/// ("TERM/2/KILL/1"), pattern NULL ("on_*.pid"), tolerance 5.0, no_finalize false. Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL `options_out`. Thread-safe.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_options_init(options_out: *mut pidguard_cleanup_options) -> c_int {
    ffi!("pidguard_cleanup_options_init", {
        let o = out(options_out, "options_out")?;
        let d = pg::CleanupOptions::default();
        o.write(pidguard_cleanup_options {
            index_path: std::ptr::null(),
            is_tty: d.is_tty,
            schedule: std::ptr::null(),
            pattern: std::ptr::null(),
            tolerance: d.tolerance,
            no_finalize: d.no_finalize,
        });
        Ok(())
    })
}

/// Core's stop options from a C struct (NULL: the defaults). Errors: InvalidArgument for an
/// unknown policy, a malformed schedule or a tolerance core refuses.
pub(crate) fn stop_options(o: *const pidguard_stop_options) -> FfiResult<pg::StopOptions> {
    if o.is_null() {
        return Ok(pg::StopOptions::default());
    }
    // SAFETY: the C caller passes a valid struct (documented); it is only read.
    let o = unsafe { &*o };
    let opts = pg::StopOptions {
        schedule: schedule_arg(o.schedule)?,
        policy: pidguard_policy::parse(o.policy)?,
        cmd_file: opt_path(o.cmd_file, "cmd_file")?.map(|p| p.to_path_buf()),
        tolerance: o.tolerance,
        group: o.group,
    };
    opts.validate()?;
    Ok(opts)
}

/// Core's cleanup options from a C struct (NULL: the defaults). Errors: InvalidArgument for a
/// malformed schedule, a pattern or tolerance core refuses, or a string that is not UTF-8.
pub(crate) fn cleanup_options(o: *const pidguard_cleanup_options) -> FfiResult<pg::CleanupOptions> {
    if o.is_null() {
        return Ok(pg::CleanupOptions::default());
    }
    // SAFETY: the C caller passes a valid struct (documented); it is only read.
    let o = unsafe { &*o };
    let d = pg::CleanupOptions::default();
    let opts = pg::CleanupOptions {
        index_path: opt_path(o.index_path, "index_path")?.map(|p| p.to_path_buf()),
        is_tty: o.is_tty,
        schedule: schedule_arg(o.schedule)?,
        pattern: opt_utf8(o.pattern, "pattern")?.map_or(d.pattern, str::to_string),
        tolerance: o.tolerance,
        no_finalize: o.no_finalize,
    };
    opts.validate()?;
    Ok(opts)
}
