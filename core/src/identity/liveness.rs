//! The one rule for "has this process exited?": every consumer of "zombie" —
//! [`lookup`](super::lookup), [`start_token`](super::start_token), [`ProcessRef`](super::ProcessRef),
//! `pidguard write`, `is_process_alive`, the group rules of cleanup and stop — takes it from here.
//!
//! A leader in state `Z` is not proof of exit: when the main thread calls `pthread_exit` while
//! other threads run, `/proc/<pid>/stat` says `Z` for the leader and the process lives on
//! (openclaw/openclaw PR #137726). The proof is the pidfd's readiness (it becomes readable only
//! when the whole thread group has exited); without a pidfd, `Z` counts only with a thread
//! count of 1.

use std::os::fd::AsFd;
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::sys;

pub use crate::sys::procfs::thread_group_exited;

/// Whether the process `pid` is alive now, when that can be told: `Ok(true)` while any of its threads runs (a leader in
/// `Z` with live threads is alive), `Ok(false)` only on proof that it is not — `pidfd_open` or
/// `kill(pid, 0)` answers `ESRCH` (or the number names a thread of another process), or the
/// process has exited as a whole by [`thread_group_exited`] (a zombie).
///
/// Errors, never read as "dead": `InvalidArgument` for a pid outside 1 to
/// [`PID_MAX_LIMIT`](crate::sys::procfs::PID_MAX_LIMIT) (it names no process);
/// `PermissionDenied`/`Io` with the errno when neither a pidfd's readiness nor `/proc` can tell
/// (`hidepid`, no `/proc`, `EMFILE`). A process of another user is alive (`EPERM` from
/// `kill(pid, 0)` means it exists).
pub fn probe_alive(pid: i32) -> Result<bool> {
    let pid = super::process::check_pid_range(pid as i64)?;
    match sys::pidfd_open(pid) {
        Ok(fd) => {
            let exited = sys::poll_readable(&[fd.as_fd()], Some(Duration::ZERO)).map_err(|e| Error::io_pid(pid, "poll pidfd", &e))?;
            Ok(!exited[0])
        }
        Err(e) => match e.raw_os_error() {
            Some(libc::ESRCH) | Some(libc::EINVAL) | Some(libc::ENOENT) => Ok(false),
            Some(libc::ENOSYS) | Some(libc::EPERM) => {
                // No pidfd here: the kernel says whether the number exists, the stat whether it
                // has exited as a whole.
                match sys::kill_probe(pid) {
                    Err(k) if k.raw_os_error() == Some(libc::ESRCH) => return Ok(false),
                    _ => {}
                }
                match sys::procfs::read_stat(pid) {
                    Ok(st) => Ok(!thread_group_exited(&st, None)),
                    Err(e) => {
                        let mut err = Error::new(
                            ErrorKind::PermissionDenied,
                            format!("pid {pid}: whether it has exited cannot be read ({})", sys::errno_name(e.raw_os_error().unwrap_or(libc::EIO))),
                        )
                        .with_pid(pid);
                        err.set_errno(e.raw_os_error().unwrap_or(libc::EIO));
                        Err(err)
                    }
                }
            }
            _ => Err(Error::io_pid(pid, "pidfd_open", &e)),
        },
    }
}

/// Whether a process with this pid is alive (abx-dl's `is_process_alive`, the same in every
/// binding): [`probe_alive`] where it can tell; `true` where it cannot (`EPERM`, `EACCES`,
/// `EMFILE`, a `hidepid` or missing /proc), since a failed read is never proof of death; `false`
/// for a pid ≤ 0 (it names a group or every process, never one process) and for a pid above
/// [`PID_MAX_LIMIT`](crate::sys::procfs::PID_MAX_LIMIT) (no process can have it). Never fails;
/// nothing is signalled.
pub fn is_process_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    match probe_alive(pid) {
        Ok(alive) => alive,
        Err(e) => e.kind() != ErrorKind::InvalidArgument,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Stat;

    fn st(state: u8, threads: i64) -> Stat {
        Stat { comm: b"x".to_vec(), state, ppid: 1, pgrp: 1, session: 1, num_threads: threads, start_ticks: 1 }
    }

    #[test]
    fn a_leader_in_z_with_live_threads_has_not_exited() {
        assert!(!thread_group_exited(&st(b'Z', 2), None));
        assert!(thread_group_exited(&st(b'Z', 1), None));
        assert!(!thread_group_exited(&st(b'Z', 0), None));
        assert!(!thread_group_exited(&st(b'S', 1), None));
        // The pidfd decides alone.
        assert!(!thread_group_exited(&st(b'Z', 1), Some(false)));
        assert!(thread_group_exited(&st(b'S', 3), Some(true)));
    }
}
