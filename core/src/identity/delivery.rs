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
/// The window between this read and the signal is closed by [`send_as_owner`] where the
/// caller can take the owner's uid (root, `CAP_SETUID`): the signal is then sent with the
/// owner's credentials and the kernel itself refuses a target that is no longer the owner's.
pub(crate) fn member_has_uid(pid: i32, fd: BorrowedFd<'_>, owner: u32) -> bool {
    let read = procfs::read_uids(pid);
    if matches!(sys::pidfd_send_signal(fd, 0, 0), Err(e) if e.raw_os_error() == Some(libc::ESRCH)) {
        return false;
    }
    matches!(read, Ok((r, saved)) if r == owner || saved == owner)
}

/// Send `sig` through `fd` to a member that passed [`member_has_uid`] for `owner`, with the
/// owner's credentials ([`sys::pidfd_send_signal_as`]): kill(2)'s own rule, applied by the
/// kernel at delivery, refuses (`EPERM`) a member that became another uid's since its check.
/// Where the caller cannot take `owner`'s uid (`ENOTSUP`: no `CAP_SETUID`, no thread), the
/// signal is sent with the caller's own credentials: the window of one `/proc` read and one
/// send stays open there (docs/security.md).
///
/// Returns the send's result and whether it was judged with the owner's credentials: an `EPERM`
/// then means the member is no longer the owner's; from the caller's own credentials it means
/// the kernel refused the caller (kill(2)'s rule for the caller), which is an error to report,
/// not a member to skip.
pub(crate) fn send_as_owner(fd: BorrowedFd<'_>, sig: i32, owner: u32) -> (std::io::Result<()>, bool) {
    match sys::pidfd_send_signal_as(fd, sig, owner) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => (sys::pidfd_send_signal(fd, sig, 0), false),
        r => (r, true),
    }
}
