//! What a signal call achieved, and the uid check made right before each member's own signal:
//! shared by the process handle and scopes.

use std::os::fd::BorrowedFd;

use crate::sys::{self, procfs};

/// How a group signal was delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMode {
    /// `pidfd_send_signal(…, PIDFD_SIGNAL_PROCESS_GROUP)` (Linux ≥ 6.9).
    PidfdGroupFlag,
    /// Member by member, each through its own pidfd after checking its pgid (Linux 5.3–6.8).
    PidfdMembers,
    /// `killpg(2)` right after re-reading the leader's start ticks (no pidfd).
    Killpg,
}

/// What a signal call achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Sent, by this route.
    Sent(Option<GroupMode>),
    /// The process (or every member of the group) had already exited: nothing was sent.
    AlreadyGone,
}

/// Whether the process pinned by `fd` (number `pid`) has `owner` as its real or saved uid
/// (kill(2)'s rule for an unprivileged sender), read now: the uids are read by number, then the
/// pidfd is asked (a null signal) whether its process still holds the number, so the read was
/// its own and not a successor's. False when it cannot be told (reaped, unreadable).
///
/// The residual window: nothing in the kernel signals "only if still this uid", so a process
/// that execs a setuid program (or switches uid with `setresuid`) between this read and the
/// signal sent right after it still gets that signal. The window is one `read` of
/// `/proc/<pid>/status` plus one `pidfd_send_signal`, per member; it is not closed.
pub(crate) fn member_has_uid(pid: i32, fd: BorrowedFd<'_>, owner: u32) -> bool {
    let read = procfs::read_uids(pid);
    if matches!(sys::pidfd_send_signal(fd, 0, 0), Err(e) if e.raw_os_error() == Some(libc::ESRCH)) {
        return false;
    }
    matches!(read, Ok((r, saved)) if r == owner || saved == owner)
}
