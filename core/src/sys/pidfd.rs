//! Process descriptors: `pidfd_open(2)`, `pidfd_send_signal(2)` and the pidfs inode that names a process for the whole boot.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::errno::cvt;
use super::fault::{self, Call};

/// `PIDFD_SIGNAL_PROCESS_GROUP` from `<linux/pidfd.h>` (Linux ≥ 6.9).
pub(crate) const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 4;

/// `PIDFS_MAGIC` from `<linux/magic.h>`: the file-system type of a pidfd on Linux ≥ 6.9.
const PIDFS_MAGIC: i64 = 0x5049_4446;

/// `pidfd_open(2)` (Linux ≥ 5.3) with `O_CLOEXEC` implied by the kernel.
pub(crate) fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    fault::check(Call::PidfdOpen)?;
    debug_assert!(pid > 0);
    // Raw libc: nix 0.32 has no `pidfd_open` wrapper.
    // SAFETY: plain system call with integer arguments; the kernel returns a new fd we own.
    let fd = cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, 0 as libc::c_long) })?;
    // SAFETY: `fd` is a freshly opened descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `pidfd_send_signal(2)` with `flags` (0 or [`PIDFD_SIGNAL_PROCESS_GROUP`]).
pub(crate) fn pidfd_send_signal(fd: BorrowedFd<'_>, sig: i32, flags: u32) -> io::Result<()> {
    fault::check(if flags & PIDFD_SIGNAL_PROCESS_GROUP != 0 { Call::PidfdSignalGroup } else { Call::PidfdSignal })?;
    // Raw libc: nix 0.32 has no `pidfd_send_signal` wrapper (with or without flags).
    // SAFETY: `fd` is a valid descriptor for the duration of the call; `info` is NULL.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd() as libc::c_long,
            sig as libc::c_long,
            std::ptr::null::<libc::siginfo_t>(),
            flags as libc::c_long,
        )
    })
    .map(drop)
}

/// The inode of a pidfd in pidfs (Linux ≥ 6.9), unique per process for the whole boot;
/// `Ok(None)` when pidfds are anonymous inodes here (older kernels), which identify nothing.
///
/// Whether pidfds live on pidfs is a property of the running kernel: it is found out with
/// `fstatfs` on the first pidfd and cached, so each later call is one `fstat`. Errors: the
/// errno of `fstat`/`fstatfs` (a failure to read is not "no inode").
pub(crate) fn pidfs_ino(fd: BorrowedFd<'_>) -> io::Result<Option<u64>> {
    use std::sync::atomic::{AtomicU8, Ordering};
    // 0 unknown, 1 pidfs, 2 anonymous inodes.
    static ON_PIDFS: AtomicU8 = AtomicU8::new(0);
    fault::check(Call::PidfdStat)?;
    if ON_PIDFS.load(Ordering::Relaxed) == 0 {
        let f_type = nix::sys::statfs::fstatfs(fd)?.filesystem_type().0;
        ON_PIDFS.store(if f_type as i64 == PIDFS_MAGIC { 1 } else { 2 }, Ordering::Relaxed);
    }
    if ON_PIDFS.load(Ordering::Relaxed) != 1 {
        return Ok(None);
    }
    Ok(Some(nix::sys::stat::fstat(fd)?.st_ino as u64))
}

/// `pidfd_send_signal(fd, sig)` sent with `owner`'s credentials: from a short-lived thread whose
/// real and effective uid are set to `owner` (the raw `setresuid` system call changes the
/// calling thread only; the saved uid is kept, and the thread ends with its credentials). The
/// kernel then applies kill(2)'s own rule for `owner` at the moment of delivery: a target whose
/// real and saved uid are no longer `owner`'s (it exec'd a setuid program, or switched to root,
/// after the caller's check) is refused with `EPERM`. This closes the window between a
/// member's uid check and its signal for callers that may take `owner`'s uid (root, or
/// `CAP_SETUID`).
///
/// Errors: `EPERM` from the kernel as above; `ENOTSUP` when the thread could not be made or
/// could not take `owner`'s uid (the caller then has no atomic check and decides what to do).
pub(crate) fn pidfd_send_signal_as(fd: BorrowedFd<'_>, sig: i32, owner: u32) -> io::Result<()> {
    // Injected faults and the call record are this (the caller's) thread's.
    fault::check(Call::PidfdSignal)?;
    std::thread::scope(|s| {
        let t = std::thread::Builder::new().name("pidguard-as-owner".into()).spawn_scoped(s, || {
            // SAFETY: plain system call with integer arguments; it changes this thread's
            // credentials only (glibc's wrapper would change every thread's), and this thread
            // does nothing else but the one send below before it ends.
            let r = unsafe { libc::syscall(libc::SYS_setresuid, owner as libc::c_long, owner as libc::c_long, -1 as libc::c_long) };
            if r != 0 {
                return Err(io::Error::from_raw_os_error(libc::ENOTSUP));
            }
            pidfd_send_signal(fd, sig, 0)
        });
        match t {
            Ok(t) => t.join().unwrap_or_else(|_| Err(io::Error::from_raw_os_error(libc::ENOTSUP))),
            Err(_) => Err(io::Error::from_raw_os_error(libc::ENOTSUP)),
        }
    })
}
