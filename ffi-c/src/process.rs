//! The pinned process handle (core's `ProcessRef`) as the opaque `pidguard_process` and its
//! `pidguard_process_*` calls.

use std::ffi::{c_char, c_int};
use std::time::Duration;

use pidguard_core::{Delivery, ProcessRef, Signal};

use crate::boundary::{boxed, free, get, obj, opt_out, out, text_out, token, FfiResult};
use crate::results::{pidguard_terminate_result, write_result};
use crate::types::{pidguard_policy, terminate_options};

/// A process pinned by pid and identity (a pidfd): every signal and wait goes through it, so
/// none can reach a process that later reuses the number. Keep it from spawn to cleanup: after
/// the process has exited (even once it was reaped), pidguard_process_signal_group() and
/// pidguard_process_terminate() still reach the rest of the group it led, and nothing else.
///
/// Opaque. Made by pidguard_process_open(); the caller owns it and frees it with
/// pidguard_process_free(), which closes the pidfd. States:
/// - running: signals reach this process (and the group it leads); a wait returns when it exits.
/// - exited (zombie or reaped): pidguard_process_signal() sends nothing (`sent_out` false);
///   pidguard_process_signal_group() still reaches live members of the group it led while that
///   group is provably its own; a wait returns at once.
/// - unpinned (pidguard_process_pidfd() gives -1: no pidfd on this system): each signal
///   re-reads the start time right before kill(2); a wait checks every 10 ms.
///
/// Every function may be called on the same handle from several threads at once (a wait on one
/// thread and a signal on another), but not while it is being freed.
#[allow(non_camel_case_types)]
pub struct pidguard_process {
    h: ProcessRef,
}

fn process_arg<'a>(p: *const pidguard_process) -> FfiResult<&'a ProcessRef> {
    obj(p, "process").map(|p| &p.h)
}

/// Pin the process `pid` and check it against `expected_token` under `policy`.
///
/// - `pid`: the process, from 1 to 4194304.
/// - `expected_token`: its token from pidguard_start_token(), or NULL for a record without one
///   (a live process is then UNVERIFIABLE, which only PIDGUARD_POLICY_LENIENT accepts).
/// - `policy`: a pidguard_policy value. With a token, only a MATCH is accepted under either
///   policy.
/// - `process_out`: receives a new handle, which the caller owns and frees with
///   pidguard_process_free().
///
/// Returns 0; PIDGUARD_EREFUSED for a target that may not be signalled (pid <= 0, 1, above
/// pid_max, the caller itself, its parent without a MATCH, a MISMATCH, or an identity the policy
/// does not accept): pidguard_last_error_refusal() says which rule;
/// PIDGUARD_ENO_SUCH_PROCESS when no process has the pid or it is a zombie;
/// PIDGUARD_EINVALID_ARGUMENT for a malformed token, an unknown policy or a NULL `process_out`;
/// PIDGUARD_EIO for unexpected procfs errors.
#[no_mangle]
pub extern "C" fn pidguard_process_open(
    pid: i32,
    expected_token: *const c_char,
    policy: i32,
    process_out: *mut *mut pidguard_process,
) -> c_int {
    ffi!("pidguard_process_open", {
        let token = token(expected_token, "expected_token")?;
        let policy = pidguard_policy::parse(policy)?;
        let process_out = out(process_out, "process_out")?;
        let h = ProcessRef::open(pid, token.as_ref(), policy)?;
        process_out.write(boxed(pidguard_process { h }));
        Ok(())
    })
}

/// Pin the caller's own child `pid` (a process it forked or spawned and has not reaped) without
/// a token: until the caller reaps it nobody else can, so its pid and the process group it
/// leads are still its own. A child that has exited but is not reaped yet (a zombie) is pinned
/// too, so pidguard_process_signal_group() still reaches the live members of its group.
///
/// - `pid`: the child.
/// - `process_out`: receives a new handle, which the caller owns and frees with
///   pidguard_process_free().
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT when `pid` is not a child of the caller or
/// `process_out` is NULL; PIDGUARD_ENO_SUCH_PROCESS once it was reaped; PIDGUARD_EREFUSED for
/// pid <= 0, 1 or the caller itself (pidguard_last_error_refusal() says which);
/// PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO when it cannot be read.
#[no_mangle]
pub extern "C" fn pidguard_process_open_child(pid: i32, process_out: *mut *mut pidguard_process) -> c_int {
    ffi!("pidguard_process_open_child", {
        let process_out = out(process_out, "process_out")?;
        process_out.write(boxed(pidguard_process { h: ProcessRef::open_child(pid)? }));
        Ok(())
    })
}

/// Free a handle and close its pidfd. NULL is allowed and does nothing. Freeing twice, or using
/// the handle afterwards, is undefined behaviour. The process itself is left as it is.
#[no_mangle]
pub extern "C" fn pidguard_process_free(process: *mut pidguard_process) {
    free(process)
}

/// The body of pidguard_process_signal() and pidguard_process_signal_group(): `send` the signal
/// through the handle; `sent_out` (may be NULL) says whether it reached anyone.
fn signal_with(process: *const pidguard_process, sig: c_int, sent_out: *mut bool, send: fn(&ProcessRef, Signal) -> pidguard_core::Result<Delivery>) -> FfiResult {
    let h = process_arg(process)?;
    let sig = Signal::from_number(sig)?;
    let sent_out = opt_out(sent_out, "sent_out")?;
    let sent = send(h, sig)? != Delivery::AlreadyGone;
    if let Some(o) = sent_out {
        o.write(sent);
    }
    Ok(())
}

/// Send signal `sig` (SIGTERM, SIGKILL, ...) to the process alone.
///
/// - `sent_out`: may be NULL; else receives true when the signal was sent, false when the
///   process had already exited (nothing was sent: nothing can reach a successor).
///
/// Returns 0; PIDGUARD_EPERMISSION_DENIED when the kernel refused (EPERM: another user's
/// process); PIDGUARD_EINVALID_ARGUMENT for a NULL `process` or a signal outside 1..SIGRTMAX;
/// PIDGUARD_EIO for other failures.
#[no_mangle]
pub extern "C" fn pidguard_process_signal(process: *const pidguard_process, sig: c_int, sent_out: *mut bool) -> c_int {
    ffi!("pidguard_process_signal", { signal_with(process, sig, sent_out, ProcessRef::signal) })
}

/// Send signal `sig` to the process group the process leads, also after the process itself has
/// exited, as long as the group is provably still the one it led (a pidfd group signal,
/// Linux >= 6.9; before, only while the leader is not reaped).
///
/// - `sent_out`: may be NULL; else receives true when the signal reached at least one member,
///   false when none was left.
///
/// Returns 0; PIDGUARD_EREFUSED when the process does not lead its group (the group is someone
/// else's) or the group is 1 or the caller's own; PIDGUARD_EPERMISSION_DENIED when the kernel
/// refused; PIDGUARD_EINVALID_ARGUMENT for a NULL `process` or a signal outside 1..SIGRTMAX;
/// PIDGUARD_EIO for other failures.
#[no_mangle]
pub extern "C" fn pidguard_process_signal_group(process: *const pidguard_process, sig: c_int, sent_out: *mut bool) -> c_int {
    ffi!("pidguard_process_signal_group", { signal_with(process, sig, sent_out, ProcessRef::signal_group) })
}

/// Stop the process, and the process group it leads, with an escalation schedule; the handle
/// stays usable afterwards. A process that does not lead its group is stopped alone. The
/// process counts as exited when no live member of its group is left. Blocks until the outcome
/// is known: at most the schedule's total wait. The caller's child is reaped only with
/// PIDGUARD_TERMINATE_REAP.
///
/// - `schedule`: start-stop-daemon's --retry syntax ("TERM/2/KILL/1"), or NULL for
///   "TERM/2/KILL/1".
/// - `flags`: 0, or PIDGUARD_TERMINATE_NO_GROUP (signal the process alone) and/or
///   PIDGUARD_TERMINATE_REAP (reap the caller's own child once it exited; a handle without a
///   pidfd reads the status but never reaps: a reap by number could take a successor's).
/// - `result_out`: receives the report: PIDGUARD_OUTCOME_ALREADY_GONE (nothing to do),
///   PIDGUARD_OUTCOME_EXITED or PIDGUARD_OUTCOME_UNKILLABLE.
///
/// Returns 0; PIDGUARD_EPERMISSION_DENIED when the kernel refused a signal (EPERM; nothing more
/// was sent); PIDGUARD_EREFUSED when a safety rule refused the group
/// (pidguard_last_error_refusal()); PIDGUARD_EINVALID_ARGUMENT for a NULL `process` or
/// `result_out`, a malformed schedule or an unknown flag (nothing sent); PIDGUARD_EIO for other
/// failures.
#[no_mangle]
pub extern "C" fn pidguard_process_terminate(
    process: *const pidguard_process,
    schedule: *const c_char,
    flags: u32,
    result_out: *mut pidguard_terminate_result,
) -> c_int {
    ffi!("pidguard_process_terminate", {
        let h = process_arg(process)?;
        let opts = terminate_options(schedule, flags)?;
        let result_out = out(result_out, "result_out")?;
        let r = h.terminate(&opts)?;
        write_result(result_out, |kept| pidguard_terminate_result::of(&r, kept))
    })
}

/// Wait until the process exits, or `timeout_ms` milliseconds pass. Pinned, this blocks on the
/// pidfd (no polling); unpinned, it checks every 10 ms.
///
/// - `timeout_ms`: milliseconds; a negative value waits without limit, 0 only looks.
/// - `exited_out`: receives whether it exited.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument; PIDGUARD_EIO when poll fails.
#[no_mangle]
pub extern "C" fn pidguard_process_wait(process: *const pidguard_process, timeout_ms: i64, exited_out: *mut bool) -> c_int {
    ffi!("pidguard_process_wait", {
        let h = process_arg(process)?;
        let exited_out = out(exited_out, "exited_out")?;
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        exited_out.write(h.wait(timeout)?);
        Ok(())
    })
}

/// Whether the process has exited (it may still be an unreaped zombie), into `exited_out`.
/// Never waits. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_process_has_exited(process: *const pidguard_process, exited_out: *mut bool) -> c_int {
    get("pidguard_process_has_exited", (process, "process"), (exited_out, "exited_out"), |p| Ok(p.h.has_exited()))
}

/// The pidfd of the handle, into `fd_out`, or -1 when the handle is unpinned. It becomes
/// readable when the process exits, for the caller's own poll()/epoll loop. It stays the
/// handle's: never close it; it is closed by pidguard_process_free(). Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_process_pidfd(process: *const pidguard_process, fd_out: *mut c_int) -> c_int {
    get("pidguard_process_pidfd", (process, "process"), (fd_out, "fd_out"), |p| Ok(p.h.pidfd_raw().unwrap_or(-1)))
}

/// The pid of the handle, into `pid_out`. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL
/// argument.
#[no_mangle]
pub extern "C" fn pidguard_process_pid(process: *const pidguard_process, pid_out: *mut i32) -> c_int {
    get("pidguard_process_pid", (process, "process"), (pid_out, "pid_out"), |p| Ok(p.h.pid()))
}

/// Copy the start token read when the handle was opened into `buf`, like snprintf (as
/// pidguard_start_token() does).
///
/// - `buf`: may be NULL when `buf_len` is 0. A token fits in 256 bytes.
/// - `token_len_out`: receives the token's full length, not counting the NUL; when it is >=
///   `buf_len`, `buf` holds a truncated copy.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `process` or `token_len_out`, or a NULL
/// `buf` with `buf_len` > 0.
#[no_mangle]
pub extern "C" fn pidguard_process_token(
    process: *const pidguard_process,
    buf: *mut c_char,
    buf_len: usize,
    token_len_out: *mut usize,
) -> c_int {
    ffi!("pidguard_process_token", {
        let h = process_arg(process)?;
        let text = text_out(buf, buf_len, "buf")?;
        let token_len_out = out(token_len_out, "token_len_out")?;
        token_len_out.write(text.write(&h.token().to_string()));
        Ok(())
    })
}

/// Judge an abx-dl pidfile as abx-dl's graceful_kill_by_pid_file() does and pin what it names
/// (core's `pin_pid_file`): the directory is opened once and the record read from it (owner and
/// mode from that descriptor, never a second lookup of the path); a record proven stale (gone,
/// zombie, mismatch, mtime-skew, cmd-mismatch, malformed) is retired by content through that
/// directory's descriptor; the owner rule (a file owned by another uid aims only at that uid's
/// processes; a world-writable one, or for a privileged caller a group-writable one, at none)
/// and the protected targets apply. Never waits.
///
/// - `pid_file`: the pidfile's path.
/// - `cmd_file`: the hook's `.sh` file, or NULL.
/// - `argv`, `argc`: the hook's argv (abx-dl's current release), `argc` NUL-terminated UTF-8
///   strings, or NULL and 0 for none; give `cmd_file` or `argv`, not both.
/// - `tolerance`: seconds, for the mtime rule of token-less records (5.0 is abx-dl's).
/// - `process_out`: receives a new handle when the process may be signalled (the caller owns it
///   and frees it with pidguard_process_free(); signal it, terminate it, or wait on
///   pidguard_process_pidfd() in its own event loop; a record another user owns comes restricted
///   to that user's processes, checked before every signal), else NULL.
/// - `result_out`: when nothing may be signalled, receives the report saying why (STALE with
///   the reason, REFUSED with the refusal, FOREIGN; `pid_file_removed`); left as it is when a
///   handle is returned.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `pid_file`, `process_out` or `result_out`,
/// both `cmd_file` and `argv`, a NULL string in `argv`, or a tolerance that is not finite
/// seconds >= 0; PIDGUARD_EMALFORMED for a bad token attribute; PIDGUARD_EUNTRUSTED for a
/// symlink, FIFO or other non-regular file; PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO when the
/// file cannot be read. Nothing is signalled in any case.
#[no_mangle]
pub extern "C" fn pidguard_pin_pid_file(
    pid_file: *const c_char,
    cmd_file: *const c_char,
    argv: *const *const c_char,
    argc: usize,
    tolerance: f64,
    process_out: *mut *mut pidguard_process,
    result_out: *mut crate::results::pidguard_stop_result,
) -> c_int {
    ffi!("pidguard_pin_pid_file", {
        let pid_file = crate::boundary::path(pid_file, "pid_file")?;
        let cmd_file = crate::boundary::opt_path(cmd_file, "cmd_file")?;
        let process_out = out(process_out, "process_out")?;
        let result_out = out(result_out, "result_out")?;
        let args = argv_arg(argv, argc)?;
        let opts = pidguard_core::CheckOptions::from_parts(cmd_file, args.as_deref(), Some(tolerance))?;
        let (recorded, tolerance) = (opts.recorded, opts.tolerance);
        match pidguard_core::pin_pid_file(pid_file, recorded, tolerance)? {
            pidguard_core::PidFilePin::Pinned(h) => {
                process_out.write(boxed(pidguard_process { h }));
                Ok(())
            }
            pidguard_core::PidFilePin::Left(r) => {
                process_out.write(std::ptr::null_mut());
                write_result(result_out, |kept| crate::results::pidguard_stop_result::of(&r, kept))
            }
        }
    })
}

/// `argc` UTF-8 strings at `argv`, or `None` for a NULL `argv`.
pub(crate) fn argv_arg(argv: *const *const c_char, argc: usize) -> pidguard_core::Result<Option<Vec<String>>> {
    if argv.is_null() {
        return Ok(None);
    }
    let argv = crate::boundary::non_null(argv, "argv")?;
    let mut args = Vec::with_capacity(argc);
    for i in 0..argc {
        // SAFETY: the caller gives `argc` readable pointers at `argv`.
        let a = unsafe { *argv.as_ptr().add(i) };
        args.push(crate::boundary::utf8(a, &format!("argv[{i}]"))?.to_string());
    }
    Ok(Some(args))
}

/// Whether a process with this pid exists and has not exited (core's `is_process_alive`,
/// abx-dl's is_process_alive()): a zombie is not alive; a process whose identity cannot be read
/// (EPERM, a `hidepid` /proc) is — a failed read is never proof of death; `pid` <= 0 (a group,
/// or every process) and a pid above pid_max are not. Never signals.
///
/// - `alive_out`: receives the answer.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `alive_out`.
#[no_mangle]
pub extern "C" fn pidguard_is_process_alive(pid: i64, alive_out: *mut bool) -> c_int {
    ffi!("pidguard_is_process_alive", {
        let alive_out = out(alive_out, "alive_out")?;
        alive_out.write(pidguard_core::is_process_alive(pid));
        Ok(())
    })
}
