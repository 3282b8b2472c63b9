//! The exported functions other than the cleanup report's and the status helpers.

use std::ffi::{c_char, c_int};

use pidguard_core::report::TerminateView;
use pidguard_core as pg;

use crate::boundary::{non_null, opt_path, out, path, path as path_arg, schedule as schedule_arg, text_out, token, utf8};
use crate::options::pidguard_stop_options;
use crate::results::*;
use crate::last_error::set_last_error;
use crate::types::*;

/// The version of libpidguard ("0.1.0"): a NUL-terminated string in static storage, never NULL,
/// never to be freed. Thread-safe.
#[no_mangle]
pub extern "C" fn pidguard_version() -> *const c_char {
    static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr() as *const c_char
}

/// Write an abx-dl pidfile (the seed's `write_pid_file_with_mtime`): the decimal pid without a
/// newline, with the file's atime and mtime set to `start_time`.
///
/// - `pid_file`: path of the pidfile (bytes). Required.
/// - `pid`: the process, from 1 to 4194304.
/// - `start_time`: when it started, seconds since the epoch (as time() or clock_gettime
///   (CLOCK_REALTIME) give right after spawning it); must be finite.
///
/// Written atomically (temporary file in the same directory, fsync, rename): no reader ever sees
/// an empty file or a wrong mtime; mode 0644 whatever the umask. When the start token of `pid`
/// can be read and its start is within 5 s of `start_time`, the token is also stored in the
/// `user.pidguard.token` extended attribute (skipped on file systems without user xattrs).
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL or empty path, a non-finite `start_time` or
/// a pid out of range (nothing is written); PIDGUARD_EUNTRUSTED when the target is a symlink,
/// FIFO or directory (nothing it points to is touched); PIDGUARD_ENOT_FOUND when the directory
/// does not exist; PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO from the file system.
#[no_mangle]
pub extern "C" fn pidguard_write_pid_file_with_mtime(pid_file: *const c_char, pid: i32, start_time: f64) -> c_int {
    ffi!("pidguard_write_pid_file_with_mtime", {
        let pid_file = path(pid_file, "pid_file")?;
        pg::write_pid_file_with_mtime(pid_file, pid, start_time)
    })
}

/// The seed's `validate_pid_file`: is the process an abx-dl pidfile names alive and still the
/// one it recorded?
///
/// - `pid_file`: path of the pidfile. Required.
/// - `cmd_file`: the hook's `.sh` command file, or NULL to skip the command check. When given
///   and present, the live argv must match its last line.
/// - `tolerance`: seconds allowed between the file's mtime and the process's create time for a
///   pidfile without a start token (the seed uses 5.0). A value that is not a finite number >= 0
///   admits no skew (core's `CheckOptions`: the same in every surface).
/// - `valid_out`: receives true or false.
///
/// Every problem with the file or the process (missing, malformed, gone, reused, skewed, another
/// command) is `false`, not an error, as in the seed; pidguard_check_pid_file() says why.
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `pid_file` or `valid_out`.
#[no_mangle]
pub extern "C" fn pidguard_validate_pid_file(
    pid_file: *const c_char,
    cmd_file: *const c_char,
    tolerance: f64,
    valid_out: *mut bool,
) -> c_int {
    ffi!("pidguard_validate_pid_file", {
        let pid_file = path(pid_file, "pid_file")?;
        let cmd_file = opt_path(cmd_file, "cmd_file")?;
        let valid_out = out(valid_out, "valid_out")?;
        valid_out.write(pg::validate_pid_file(pid_file, cmd_file, tolerance));
        Ok(())
    })
}

/// Judge an abx-dl pidfile and say why: the same rules as pidguard_validate_pid_file(), with the
/// reason, the pid and the identity verdict.
///
/// - `pid_file`, `cmd_file`, `tolerance`: as for pidguard_validate_pid_file().
/// - `check_out`: receives the answer (a struct the caller allocates).
///
/// Returns 0 (every problem with the file is a reason, not an error);
/// PIDGUARD_EINVALID_ARGUMENT for a NULL `pid_file` or `check_out`.
#[no_mangle]
pub extern "C" fn pidguard_check_pid_file(
    pid_file: *const c_char,
    cmd_file: *const c_char,
    tolerance: f64,
    check_out: *mut pidguard_pid_file_check,
) -> c_int {
    ffi!("pidguard_check_pid_file", {
        let pid_file = path(pid_file, "pid_file")?;
        let cmd_file = opt_path(cmd_file, "cmd_file")?;
        let check_out = out(check_out, "check_out")?;
        let c = pg::check_pid_file(pid_file, cmd_file, tolerance);
        write_result(check_out, |kept| Ok(pidguard_pid_file_check::of(&c, kept)))
    })
}

/// The options of pidguard_check_pid_file_with(): core's `CheckOptions`, the same names,
/// defaults and errors as in Rust, Python, Node and the CLI. Zero-initialised
/// (`pidguard_check_options o = {0};`) it means no recorded command and the default tolerance.
#[repr(C)]
pub struct pidguard_check_options {
    /// The hook's `.sh` command file (abx-dl up to 1.12), or NULL. A missing file records nothing.
    pub cmd_file: *const c_char,
    /// The hook's argv instead (abx-dl's current release): `argc` NUL-terminated UTF-8 strings,
    /// or NULL. `argc` 0 records nothing. Giving both `cmd_file` and `argv` is
    /// PIDGUARD_EINVALID_ARGUMENT.
    pub argv: *const *const c_char,
    /// The number of strings at `argv`.
    pub argc: usize,
    /// Whether `tolerance` is given; false: the default, 5.0 seconds (abx-dl's).
    pub has_tolerance: bool,
    /// Seconds allowed between a token-less record's mtime and its process's create time. A
    /// value that is not a finite number >= 0 admits no skew (`PIDGUARD_REASON_MTIME_SKEW`),
    /// never an error.
    pub tolerance: f64,
}

/// Judge an abx-dl pidfile and say why, with the recorded command given either way: core's one
/// check (`check_pid_file_with`), the options parsed by core (`CheckOptions::from_parts`).
/// pidguard_check_pid_file() is this call with a `.sh` file or none.
///
/// - `pid_file`: the pidfile's path. Required.
/// - `options`: the recorded command and the tolerance (see pidguard_check_options), or NULL
///   for the defaults.
/// - `check_out`: receives the answer (a struct the caller allocates).
///
/// Returns 0 (every problem with the file or the process is a reason, not an error);
/// PIDGUARD_EINVALID_ARGUMENT for a NULL `pid_file` or `check_out`, both `cmd_file` and `argv`,
/// a NULL or non-UTF-8 string in `argv`.
#[no_mangle]
pub extern "C" fn pidguard_check_pid_file_with(
    pid_file: *const c_char,
    options: *const pidguard_check_options,
    check_out: *mut pidguard_pid_file_check,
) -> c_int {
    ffi!("pidguard_check_pid_file_with", {
        let pid_file = path(pid_file, "pid_file")?;
        let check_out = out(check_out, "check_out")?;
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
        let c = pg::check_pid_file_with(pid_file, &opts);
        write_result(check_out, |kept| Ok(pidguard_pid_file_check::of(&c, kept)))
    })
}

/// Write a hook's command file as the seed's spawner does: `#!/bin/bash`, then `argv` joined as
/// Python's `shlex.join` joins it, then a newline; mode 0755 whatever the umask, atomically
/// (temporary file and rename), refusing a symlink at `path`.
///
/// - `path`: the `.sh` file to write. Required.
/// - `argv`: `argc` NUL-terminated UTF-8 strings; none may be NULL. A line break inside one is
///   quoted as `shlex.join` quotes it (and read back as one argument).
/// - `argc`: number of strings in `argv`; 0 writes the shebang line alone, as abx-dl does.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument or an argument that is not
/// UTF-8; PIDGUARD_EUNTRUSTED when `path` is a symlink, FIFO or directory;
/// PIDGUARD_ENOT_FOUND, PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO from the file system.
#[no_mangle]
pub extern "C" fn pidguard_write_cmd_file(path: *const c_char, argv: *const *const c_char, argc: usize) -> c_int {
    ffi!("pidguard_write_cmd_file", {
        let p = path_arg(path, "path")?;
        let argv = non_null(argv, "argv")?;
        let mut args = Vec::with_capacity(argc);
        for i in 0..argc {
            // SAFETY: the caller gives `argc` readable pointers at `argv`.
            let a = unsafe { *argv.as_ptr().add(i) };
            args.push(utf8(a, &format!("argv[{i}]"))?);
        }
        pg::write_cmd_file(p, &args)
    })
}

/// Copy the start token of the live process `pid` into `buf`, like snprintf.
///
/// The token names one process incarnation for the whole boot:
/// `linux1:<machine_id>:<boot_id>:<pidns_ino>:<start_ticks>:<pidfs_ino or ->`, printable ASCII.
/// Store it with the pid; later give it to pidguard_judge() or pidguard_terminate(). Compare
/// tokens only within one time namespace.
///
/// - `pid`: the process, from 1 to 4194304.
/// - `buf`: where to write the token, NUL-terminated; may be NULL when `buf_len` is 0.
/// - `buf_len`: size of `buf` in bytes, including the NUL. A token fits in 256 bytes.
/// - `token_len_out`: receives the token's full length, not counting the NUL. When it is >=
///   `buf_len`, `buf` holds a truncated copy (call again with a buffer of that length + 1);
///   `buf = NULL, buf_len = 0` only asks for the length.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a pid out of range, a NULL `token_len_out`, or a
/// NULL `buf` with `buf_len` > 0; PIDGUARD_ENO_SUCH_PROCESS when no process has the pid or it is
/// a zombie (it has exited: no longer the process to record).
#[no_mangle]
pub extern "C" fn pidguard_start_token(pid: i32, buf: *mut c_char, buf_len: usize, token_len_out: *mut usize) -> c_int {
    ffi!("pidguard_start_token", {
        let buf = text_out(buf, buf_len, "buf")?;
        let token_len_out = out(token_len_out, "token_len_out")?;
        token_len_out.write(buf.write(&pg::start_token(pid)?.to_string()));
        Ok(())
    })
}

/// Is the process at `pid` the one `recorded_token` names?
///
/// - `pid`: from 1 to 4194304.
/// - `recorded_token`: a token from pidguard_start_token(), or NULL for a record without one
///   (a live process is then UNVERIFIABLE). A token from another boot is MISMATCH and one from
///   another machine or PID namespace UNVERIFIABLE, whatever runs at `pid` now.
/// - `verdict_out`, `reason_out`: receive the verdict and why.
///
/// Permission problems are never read as "dead": another user's process is judged like any
/// other. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a pid out of range, a malformed token or a
/// NULL output; PIDGUARD_EIO when procfs fails unexpectedly.
#[no_mangle]
pub extern "C" fn pidguard_judge(
    pid: i32,
    recorded_token: *const c_char,
    verdict_out: *mut pidguard_verdict,
    reason_out: *mut pidguard_reason,
) -> c_int {
    ffi!("pidguard_judge", {
        let token = token(recorded_token, "recorded_token")?;
        let verdict_out = out(verdict_out, "verdict_out")?;
        let reason_out = out(reason_out, "reason_out")?;
        let j = pg::judge(pid, token.as_ref())?;
        verdict_out.write((&j.verdict).into());
        reason_out.write((&j.reason).into());
        Ok(())
    })
}

/// Read what procfs says about `pid` now.
///
/// - `pid`: from 1 to 4194304.
/// - `info_out`: receives the facts (a struct the caller allocates). A zombie is described too
///   (`zombie` true).
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a pid out of range or a NULL `info_out`;
/// PIDGUARD_ENO_SUCH_PROCESS when no process has the pid; PIDGUARD_EIO for unexpected procfs
/// errors.
#[no_mangle]
pub extern "C" fn pidguard_lookup(pid: i32, info_out: *mut pidguard_process_info) -> c_int {
    ffi!("pidguard_lookup", {
        let info_out = out(info_out, "info_out")?;
        let i = pg::lookup(pid)?;
        write_result(info_out, |kept| Ok(pidguard_process_info::of(&i, kept)))
    })
}

/// Stop the process `pid` (and the process group it leads), only if it is the recorded one.
///
/// The process is pinned with a pidfd first, then its identity is checked against
/// `expected_token` under `policy`, then the schedule runs; every signal goes through the pidfd,
/// so none can reach a process that reused the number. A target that leads its process group is
/// stopped with its whole group and counts as exited when no live member is left; one that does
/// not lead its group is stopped alone (the group belongs to someone else). Descendants that
/// left the group with setsid() are not reached. Blocks until the outcome is known: at most the
/// schedule's total wait.
///
/// - `pid`: the process.
/// - `expected_token`: its token from pidguard_start_token(), or NULL for a record without one.
/// - `policy`: a pidguard_policy value. PIDGUARD_POLICY_STRICT signals only a MATCH;
///   PIDGUARD_POLICY_LENIENT also an UNVERIFIABLE process (not MISMATCH).
/// - `schedule`: start-stop-daemon's --retry syntax ("TERM/2/KILL/1": SIGTERM, wait up to 2 s,
///   SIGKILL, wait up to 1 s; "5" is TERM/5/KILL/5), or NULL for "TERM/2/KILL/1".
/// - `flags`: 0, or PIDGUARD_TERMINATE_NO_GROUP (signal the target alone) and/or
///   PIDGUARD_TERMINATE_REAP (reap the caller's own child once it exited; a handle without a
///   pidfd reads the status but never reaps: a reap by number could take a successor's).
/// - `result_out`: receives the outcome.
///
/// Returns 0 once the schedule ran (outcome EXITED, UNKILLABLE, or ERROR with the message
/// stored as the thread's last error); PIDGUARD_ENO_SUCH_PROCESS (errno ESRCH) when the process
/// is gone or a zombie before anything was sent; PIDGUARD_EREFUSED when the target may not be
/// signalled — a protected target (pid <= 0, 1, above pid_max, the caller itself or its group,
/// its parent without a MATCH) or a verdict the policy does not accept —
/// pidguard_last_error_refusal() says which rule, and nothing is sent;
/// PIDGUARD_EPERMISSION_DENIED (errno EPERM) when the kernel refused the signal (another user's
/// process); PIDGUARD_EINVALID_ARGUMENT for a malformed token or schedule, an unknown policy or
/// flag, or a NULL `result_out` (checked before anything is sent); PIDGUARD_EIO for unexpected
/// procfs errors and signalling failures. `result_out` is written only when 0 is returned.
/// These are the errors Python's and Node's `terminate` raise: the decision is core's.
#[no_mangle]
pub extern "C" fn pidguard_terminate(
    pid: i32,
    expected_token: *const c_char,
    policy: i32,
    schedule: *const c_char,
    flags: u32,
    result_out: *mut pidguard_terminate_result,
) -> c_int {
    ffi!("pidguard_terminate", {
        let token = token(expected_token, "expected_token")?;
        let policy = pidguard_policy::parse(policy)?;
        let opts = terminate_options(schedule, flags)?;
        let result_out = out(result_out, "result_out")?;
        let r = pg::terminate_pid(pid, token.as_ref(), policy, &opts)?;
        if let Some(msg) = TerminateView::from(&r).error {
            set_last_error(&msg, None);
        }
        write_result(result_out, |kept| pidguard_terminate_result::of(&r, kept))
    })
}

/// Stop the process an abx-dl pidfile names, with its process group, and nothing else
/// (`pidguard stop`).
///
/// 1. The file is judged as by pidguard_check_pid_file() (with `cmd_file`).
/// 2. A missing file, a gone process or proven reuse → PIDGUARD_STOP_STALE: nothing is sent,
///    the file is removed if unchanged. A record from another machine or PID namespace is left
///    alone (PIDGUARD_STOP_FOREIGN).
/// 3. A record whose identity is not proven (mtime skew or another command under the strict
///    policy, a token that cannot be confirmed under either) → PIDGUARD_STOP_REFUSED, file kept.
/// 4. Otherwise the process is pinned with a pidfd, re-checked (as root, a pidfile another user
///    could have written needs a token MATCH; a world-writable one is always refused; pid 1,
///    the caller, its group and its parent are never signalled), and the schedule runs. Once it
///    has exited, the file is removed if unchanged.
///
/// Blocks until the outcome is known: at most the schedule's total wait.
///
/// - `pid_file`: the abx-dl pidfile. Required.
/// - `cmd_file`: the hook's `.sh` command file to check the live argv against, or NULL.
/// - `policy`: PIDGUARD_POLICY_STRICT acts only on a proven identity (a matching token, or for a
///   token-less file the mtime and command rules); PIDGUARD_POLICY_LENIENT also on a token-less
///   file whose mtime is off, with a warning (`warning`, and the thread's last error message).
/// - `schedule`: start-stop-daemon's --retry syntax, or NULL for "TERM/2/KILL/1".
/// - `tolerance`: seconds allowed between mtime and process start for a token-less file (the
///   seed uses 5.0).
/// - `result_out`: receives the outcome.
///
/// Outcomes are results, not errors. For REFUSED and ERROR the explanation is also stored as
/// the thread's last error message. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `pid_file`
/// or `result_out`, an unknown policy or a malformed schedule (nothing sent);
/// PIDGUARD_EMALFORMED for content that is not one pid or a bad token attribute;
/// PIDGUARD_EUNTRUSTED for a symlink, FIFO or other non-regular file;
/// PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO when the file cannot be read.
#[no_mangle]
pub extern "C" fn pidguard_stop_pid_file(
    pid_file: *const c_char,
    cmd_file: *const c_char,
    policy: i32,
    schedule: *const c_char,
    tolerance: f64,
    result_out: *mut pidguard_stop_result,
) -> c_int {
    ffi!("pidguard_stop_pid_file", {
        let pid_file = path(pid_file, "pid_file")?;
        let cmd_file = opt_path(cmd_file, "cmd_file")?;
        let policy = pidguard_policy::parse(policy)?;
        let schedule = schedule_arg(schedule)?;
        let result_out = out(result_out, "result_out")?;
        let opts = pg::StopOptions { schedule, policy, cmd_file: cmd_file.map(|p| p.to_path_buf()), tolerance, ..Default::default() };
        stop_into(pid_file, &opts, result_out)
    })
}

/// pidguard_stop_pid_file() with its options in one struct, the same as every other surface's
/// (`group` included): `options` filled by pidguard_stop_options_init() and changed where
/// wanted, or NULL for the defaults. With `cmd_file` NULL the `.sh` beside the pidfile is
/// checked when it exists. Outcomes, last error and statuses as pidguard_stop_pid_file();
/// PIDGUARD_EINVALID_ARGUMENT also for a tolerance that is not finite seconds >= 0.
#[no_mangle]
pub extern "C" fn pidguard_stop_pid_file_with(
    pid_file: *const c_char,
    options: *const pidguard_stop_options,
    result_out: *mut pidguard_stop_result,
) -> c_int {
    ffi!("pidguard_stop_pid_file_with", {
        let pid_file = path(pid_file, "pid_file")?;
        let opts = crate::options::stop_options(options)?;
        let result_out = out(result_out, "result_out")?;
        stop_into(pid_file, &opts, result_out)
    })
}

/// One stop, its report into `result_out`: the body both stop functions share.
fn stop_into(pid_file: &std::path::Path, opts: &pg::StopOptions, result_out: crate::boundary::Out<pidguard_stop_result>) -> crate::boundary::FfiResult {
    let r = pg::stop_pid_file(pid_file, opts)?;
    // Core's explanation of a refusal or an error, or the warning, as the thread's last error.
    if let Some(text) = r.message() {
        set_last_error(&text, None);
    }
    write_result(result_out, |kept| pidguard_stop_result::of(&r, kept))
}

/// For the C test suite only: panics inside the boundary, so that the tests can see
/// PIDGUARD_EPANIC come back instead of an unwind. Not part of the API.
/// cbindgen:ignore
#[doc(hidden)]
#[no_mangle]
pub extern "C" fn pidguard_internal_test_panic() -> c_int {
    ffi!("pidguard_internal_test_panic", {
        let v: Vec<i32> = Vec::new();
        let i = v.len() + 3;
        Err(pg::Error::invalid(format!("unreachable {}", v[i])))
    })
}
