//! Calls on an open file: times, mode, the descriptor-bound `flock`, and the process umask.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;
use nix::sys::stat::Mode;

/// `futimens(2)`: set atime and mtime of an open file to `secs`+`nsecs` since the epoch.
pub(crate) fn futimens(fd: BorrowedFd<'_>, secs: i64, nsecs: i64) -> io::Result<()> {
    let ts = nix::sys::time::TimeSpec::new(secs as libc::time_t, nsecs as _);
    Ok(nix::sys::stat::futimens(fd, &ts, &ts)?)
}

/// `umask(2)`: set the file-mode creation mask and return the previous one. Process-wide: only
/// for a test's own child process.
pub fn umask(mask: u32) -> u32 {
    nix::sys::stat::umask(Mode::from_bits_retain(mask as libc::mode_t)).bits() as u32
}

/// `fchmod(2)`.
pub(crate) fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    Ok(nix::sys::stat::fchmod(fd, Mode::from_bits_retain(mode as libc::mode_t))?)
}

/// `flock(fd, LOCK_EX | LOCK_NB)`: `Ok(true)` when the exclusive lock was taken, `Ok(false)`
/// when another open file description holds it (`EWOULDBLOCK`). The lock goes with the
/// descriptor: closing it, or the holder's exit, releases it.
pub(crate) fn try_flock_exclusive(fd: BorrowedFd<'_>) -> io::Result<bool> {
    // nix's free `flock` (deprecated since 0.28 in favour of `Flock<T>`): `Flock` takes the
    // descriptor's ownership and unlocks on drop — and panics if that unlock fails — while here
    // the lock must live exactly as long as the caller's descriptor and be released by its close.
    #[allow(deprecated)]
    match nix::fcntl::flock(fd.as_raw_fd(), nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(()) => Ok(true),
        Err(Errno::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
