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

/// `pidfd_send_signal(2)` with `flags` (0 or [`PIDFD_SIGNAL_PROCESS_GROUP`]). `fd` is a pidfd
/// or an open `/proc/<pid>` directory (both name one process; the kernel takes either).
///
/// Where a seccomp filter refuses the system call itself (`ENOSYS`; or `EPERM` although
/// `kill(pid, 0)` is allowed — older container profiles), the signal goes by number
/// ([`signal_by_number`]) once the descriptor shows its process not reaped: the same instant
/// between that look and `kill(2)` that an unpinned handle leaves. With
/// [`PIDFD_SIGNAL_PROCESS_GROUP`] the answer is then `EINVAL`, as from a kernel without the flag
/// (callers signal the members one by one). Errors: the system call's errno; `ESRCH` when the
/// process has exited (by number, a zombie counts as exited: nothing reaches it anyway).
pub(crate) fn pidfd_send_signal(fd: BorrowedFd<'_>, sig: i32, flags: u32) -> io::Result<()> {
    fault::check(if flags & PIDFD_SIGNAL_PROCESS_GROUP != 0 { Call::PidfdSignalGroup } else { Call::PidfdSignal })?;
    // Raw libc: nix 0.32 has no `pidfd_send_signal` wrapper (with or without flags).
    // SAFETY: `fd` is a valid descriptor for the duration of the call; `info` is NULL.
    let r = cvt(unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd() as libc::c_long,
            sig as libc::c_long,
            std::ptr::null::<libc::siginfo_t>(),
            flags as libc::c_long,
        )
    })
    .map(drop);
    match r {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) => signal_by_number(fd, sig, flags, e),
        r => r,
    }
}

/// The fallback of [`pidfd_send_signal`] when the system call answered `err` (`ENOSYS` or
/// `EPERM`): the process `fd` names is found (a pidfd's `Pid:` in `/proc/self/fdinfo`, checked
/// not exited with `poll`; a `/proc/<pid>` directory's `stat`, read through it: it fails with
/// `ESRCH` once that process is reaped, whatever holds the number now), and `kill(2)` sends the
/// signal by number. `err` itself is returned when it was a true refusal: `EPERM` that
/// `kill(pid, 0)` confirms, or no process found through `fd`.
fn signal_by_number(fd: BorrowedFd<'_>, sig: i32, flags: u32, err: io::Error) -> io::Result<()> {
    let esrch = || io::Error::from_raw_os_error(libc::ESRCH);
    let pid = match fdinfo_pid(fd) {
        Some(pid) => {
            // A pidfd: readable once its process has exited (`Pid: -1` once reaped).
            if pid <= 0 || super::readable_now(fd)? {
                return Err(esrch());
            }
            pid
        }
        None => {
            // A /proc/<pid> directory: its stat names the pid while the process is not reaped.
            let st = super::open::read_at(fd, "stat").map_err(|e| if e.raw_os_error() == Some(libc::ENOENT) { esrch() } else { e })?;
            // The pid is the field before the parsed ones (`<pid> (<comm>) <state> …`).
            let pid = st.split(|&b| b == b' ').next().and_then(|f| std::str::from_utf8(f).ok()).and_then(|f| f.parse::<i32>().ok());
            match (super::procfs::parse_stat(&st), pid) {
                (Some(s), _) if s.state == b'Z' || s.state == b'X' => return Err(esrch()),
                (Some(_), Some(pid)) => pid,
                _ => return Err(err),
            }
        }
    };
    if pid <= 1 {
        return Err(err);
    }
    // The filter's EPERM, not the kernel's: `kill` is allowed to this process.
    if err.raw_os_error() == Some(libc::EPERM) && super::kill_probe(pid).is_err() {
        return Err(err);
    }
    if flags & PIDFD_SIGNAL_PROCESS_GROUP != 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    log::debug!("pidfd_send_signal refused ({err}): signal {sig} to pid {pid} by number");
    if sig == 0 {
        return Ok(());
    }
    super::kill(pid, sig)
}

/// The pid a pidfd names, from the `Pid:` line of `/proc/self/fdinfo/<fd>` (Linux ≥ 5.3; `-1`
/// once reaped, `0` in a PID namespace that cannot see it). `None` when `fd` is no pidfd (no
/// such line: a `/proc/<pid>` directory) or fdinfo cannot be read.
fn fdinfo_pid(fd: BorrowedFd<'_>) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    text.lines().find_map(|l| l.strip_prefix("Pid:")).and_then(|v| v.trim().parse().ok())
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
