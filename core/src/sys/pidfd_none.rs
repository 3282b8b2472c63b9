//! Process descriptors where the system has none of Linux's (macOS, FreeBSD): the same calls as
//! `pidfd.rs`, each failing with `ENOSYS`, so every handle goes the unpinned way (`bsd.rs`: the
//! identity is re-read right before each signal). FreeBSD's `pdfork` descriptors exist only for
//! children made with `pdfork`, which pidguard does not spawn: not used.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use super::fault::{self, Call};

/// Linux's `PIDFD_SIGNAL_PROCESS_GROUP`; meaningless here (no pidfd is ever opened).
pub(crate) const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 4;

/// No pidfd on this system: `ENOSYS` (after the fault seam, as on Linux).
pub(crate) fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    fault::check(Call::PidfdOpen)?;
    debug_assert!(pid > 0);
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Unreachable without a pidfd: `ENOSYS`.
pub(crate) fn pidfd_send_signal(_fd: BorrowedFd<'_>, _sig: i32, _flags: u32) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Unreachable without a pidfd: no pidfs inode (`Ok(None)`, what Linux says without pidfs).
pub(crate) fn pidfs_ino(_fd: BorrowedFd<'_>) -> io::Result<Option<u64>> {
    Ok(None)
}

/// No pidfds here: nothing is sent (see the Linux version's docs). Errors: `ENOTSUP`.
pub(crate) fn pidfd_send_signal_as(_fd: BorrowedFd<'_>, _sig: i32, _owner: u32) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOTSUP))
}
