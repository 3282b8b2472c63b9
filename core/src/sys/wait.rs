//! Waiting: `poll(2)` for readability (a pidfd becomes readable when its process exits) and `waitid(2)` for a child's exit.

use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::errno::Errno;

use super::fault::{self, Call};

/// Poll `fds` for readability (a pidfd is readable once its process has exited). Returns which
/// are readable; an empty result set after `timeout` means none. `None` waits forever.
pub(crate) fn poll_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    fault::check(Call::Poll)?;
    let mut pfds: Vec<PollFd<'_>> = fds.iter().map(|&f| PollFd::new(f, PollFlags::POLLIN)).collect();
    let timeout = match timeout {
        None => PollTimeout::NONE,
        // Round up so a wait never returns before its deadline (nix's own conversion truncates).
        Some(d) => PollTimeout::try_from(d.as_micros().div_ceil(1000).min(i32::MAX as u128)).unwrap_or(PollTimeout::MAX),
    };
    loop {
        match poll(&mut pfds, timeout) {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => {
                // `revents()` is `None` only for bits nix does not know; the kernel reports just
                // the requested events plus POLLERR, POLLHUP and POLLNVAL, all of which it knows.
                let ready = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
                return Ok(pfds.iter().map(|p| p.revents().is_some_and(|r| r.intersects(ready))).collect());
            }
        }
    }
}

/// [`poll_readable`] of one descriptor, without a timeout: whether it is readable now (a pidfd:
/// its process has exited). No allocation (a probe asks this of every process it judges).
pub(crate) fn readable_now(fd: BorrowedFd<'_>) -> io::Result<bool> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    fault::check(Call::Poll)?;
    let mut pfd = [PollFd::new(fd, PollFlags::POLLIN)];
    loop {
        match poll(&mut pfd, PollTimeout::ZERO) {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => return Ok(pfd[0].revents().is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR))),
        }
    }
}

/// How a child ended, from `waitid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChildExit {
    /// Exited with this status.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// `waitid(P_PIDFD, fd, WEXITED | WNOHANG [| WNOWAIT])` (Linux ≥ 5.4): the exit of the caller's
/// own child. `Ok(None)` while it is still running; `ECHILD` when it is not the caller's child
/// (or was reaped already). With `peek`, the child stays waitable for its real parent code.
#[cfg(target_os = "linux")]
pub(crate) fn waitid_pidfd(fd: BorrowedFd<'_>, peek: bool) -> io::Result<Option<ChildExit>> {
    fault::check(Call::Waitid)?;
    let mut flags = libc::WEXITED | libc::WNOHANG;
    if peek {
        flags |= libc::WNOWAIT;
    }
    // Raw libc, although nix 0.32 has `waitid(Id::PIDFd(fd), …)`: its `WaitStatus` maps the
    // signal that killed the child through nix's `Signal` enum, which has no real-time signals,
    // so a child killed by SIGRTMIN+n would be reaped and then reported as `EINVAL`, its exit
    // lost. Here every signal number comes back as it is.
    // SAFETY: zeroed siginfo is a valid out-parameter.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        const P_PIDFD: libc::idtype_t = 3;
        if libc::waitid(P_PIDFD, fd.as_raw_fd() as libc::id_t, &mut info, flags) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(child_exit(&info))
    }
}

/// No `P_PIDFD` (and no pidfd) outside Linux: `ENOSYS`.
#[cfg(not(target_os = "linux"))]
pub(crate) fn waitid_pidfd(_fd: BorrowedFd<'_>, _peek: bool) -> io::Result<Option<ChildExit>> {
    fault::check(Call::Waitid)?;
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`: the exit of the caller's child `pid`,
/// left waitable (never reaped: see `ProcessRef::exit_status`). `Ok(None)` while it runs.
pub(crate) fn waitid_pid_peek(pid: i32) -> io::Result<Option<ChildExit>> {
    fault::check(Call::Waitid)?;
    // SAFETY: zeroed siginfo is a valid out-parameter.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        if libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(child_exit(&info))
    }
}

/// The exit a `waitid` filled in: `None` when no child had changed state (`WNOHANG`, `si_pid` 0).
///
/// # Safety
/// `info` must be what a successful `waitid(…, WEXITED …)` wrote.
unsafe fn child_exit(info: &libc::siginfo_t) -> Option<ChildExit> {
    if info.si_pid() == 0 {
        return None;
    }
    let status = info.si_status();
    Some(match info.si_code {
        libc::CLD_EXITED => ChildExit::Code(status),
        _ => ChildExit::Signal(status),
    })
}
