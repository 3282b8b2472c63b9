//! The narrow layer of raw system calls and procfs reads: the only place with `unsafe`.
//!
//! Every system call that decides or sends a signal goes through a function here, and each of
//! them first consults the thread-local fault table of [`fault`], so tests can make
//! `pidfd_open` fail with `ENOSYS` or `EPERM`, the process-group flag fail with `EINVAL`, and so
//! exercise every kernel path on one kernel.
#![allow(unsafe_code)]

pub mod fault;
// Public (hidden with `sys`) only so the property tests and fuzz targets reach `parse_stat`.
pub mod procfs;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

pub(crate) use fault::Call;
/// The `/proc/<pid>/stat` parser, reachable for property tests and tools (not a stable API).
pub use procfs::{parse_stat, Stat};

/// `PIDFD_SIGNAL_PROCESS_GROUP` from `<linux/pidfd.h>` (Linux ≥ 6.9).
pub(crate) const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 4;
/// `PIDFS_MAGIC` from `<linux/magic.h>`: the file-system type of a pidfd on Linux ≥ 6.9.
const PIDFS_MAGIC: i64 = 0x5049_4446;

fn cvt(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `pidfd_open(2)` (Linux ≥ 5.3) with `O_CLOEXEC` implied by the kernel.
pub(crate) fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    fault::check(Call::PidfdOpen)?;
    debug_assert!(pid > 0);
    // SAFETY: plain system call with integer arguments; the kernel returns a new fd we own.
    let fd = cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, 0 as libc::c_long) })?;
    // SAFETY: `fd` is a freshly opened descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `pidfd_send_signal(2)` with `flags` (0 or [`PIDFD_SIGNAL_PROCESS_GROUP`]).
pub(crate) fn pidfd_send_signal(fd: BorrowedFd<'_>, sig: i32, flags: u32) -> io::Result<()> {
    fault::check(if flags & PIDFD_SIGNAL_PROCESS_GROUP != 0 { Call::PidfdSignalGroup } else { Call::PidfdSignal })?;
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

/// `kill(pid, 0)`: does a process with this pid exist (`Ok` or `EPERM`: yes; `ESRCH`: no)?
/// Sends nothing.
pub(crate) fn kill_probe(pid: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pid > 0, "pidguard bug: kill({pid}, 0) reached the system-call layer");
    // SAFETY: plain system call; signal 0 only checks for existence and permission.
    cvt(unsafe { libc::kill(pid, 0) } as libc::c_long).map(drop)
}

/// `kill(2)`. Callers have already refused pid ≤ 0, pid 1 and their own pid (see `signal::guard`).
pub(crate) fn kill(pid: i32, sig: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pid > 1, "pidguard bug: kill({pid}) reached the system-call layer");
    // SAFETY: plain system call.
    cvt(unsafe { libc::kill(pid, sig) } as libc::c_long).map(drop)
}

/// `kill(-pgid, sig)`, i.e. `killpg(pgid, sig)`. Callers have refused group ≤ 1 and their own group.
pub(crate) fn killpg(pgid: i32, sig: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pgid > 1, "pidguard bug: killpg({pgid}) reached the system-call layer");
    // SAFETY: plain system call.
    cvt(unsafe { libc::kill(-pgid, sig) } as libc::c_long).map(drop)
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
        // SAFETY: a zeroed statfs is a valid out-parameter.
        let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is valid for the call.
        cvt(unsafe { libc::fstatfs(fd.as_raw_fd(), &mut sfs) } as libc::c_long)?;
        ON_PIDFS.store(if sfs.f_type as i64 == PIDFS_MAGIC { 1 } else { 2 }, Ordering::Relaxed);
    }
    if ON_PIDFS.load(Ordering::Relaxed) != 1 {
        return Ok(None);
    }
    // SAFETY: a zeroed stat is a valid out-parameter; `fd` is valid for the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } as libc::c_long)?;
    Ok(Some(st.st_ino as u64))
}

/// The soft `RLIMIT_NOFILE`: how many descriptors this process may have open.
pub(crate) fn nofile_soft_limit() -> Option<u64> {
    // SAFETY: a zeroed rlimit is a valid out-parameter.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: plain system call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return None;
    }
    Some(r.rlim_cur as u64)
}

/// How many descriptors this process has open now (entries of `/proc/self/fd`).
pub(crate) fn open_fd_count() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count())
}

/// The symbolic name of an errno (`"EMFILE"`), for reasons and messages; `"errno N"` for the
/// rare ones.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTSUP => "ENOTSUP",
        libc::ELOOP => "ELOOP",
        libc::EDQUOT => "EDQUOT",
        libc::E2BIG => "E2BIG",
        libc::ENODATA => "ENODATA",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// A counter that a `fork(2)` child sees incremented (`pthread_atfork`): per-process caches
/// (the pid namespace) compare it instead of asking the kernel for the pid on every call.
pub(crate) fn fork_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Once;
    static GEN: AtomicU64 = AtomicU64::new(0);
    static REGISTER: Once = Once::new();
    extern "C" fn in_child() {
        GEN.fetch_add(1, Ordering::Relaxed);
    }
    REGISTER.call_once(|| {
        // SAFETY: registering a handler that only touches an atomic is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
    GEN.load(Ordering::Relaxed)
}

/// Poll `fds` for readability (a pidfd is readable once its process has exited). Returns which
/// are readable; an empty result set after `timeout` means none. `None` waits forever.
pub(crate) fn poll_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    fault::check(Call::Poll)?;
    let mut pfds: Vec<libc::pollfd> =
        fds.iter().map(|f| libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let ms: libc::c_int = match timeout {
        None => -1,
        // Round up so a wait never returns before its deadline.
        Some(d) => d.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int,
    };
    loop {
        // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structs.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(pfds.iter().map(|p| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0).collect());
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
pub(crate) fn waitid_pidfd(fd: BorrowedFd<'_>, peek: bool) -> io::Result<Option<ChildExit>> {
    fault::check(Call::Waitid)?;
    let mut flags = libc::WEXITED | libc::WNOHANG;
    if peek {
        flags |= libc::WNOWAIT;
    }
    // SAFETY: zeroed siginfo is a valid out-parameter.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        const P_PIDFD: libc::idtype_t = 3;
        if libc::waitid(P_PIDFD, fd.as_raw_fd() as libc::id_t, &mut info, flags) != 0 {
            return Err(io::Error::last_os_error());
        }
        if info.si_pid() == 0 {
            return Ok(None);
        }
        let status = info.si_status();
        Ok(Some(match info.si_code {
            libc::CLD_EXITED => ChildExit::Code(status),
            _ => ChildExit::Signal(status),
        }))
    }
}

/// `fgetxattr(2)` of `name` on an open file. `Ok(None)` when the attribute is absent or the
/// file system has no user xattrs.
pub(crate) fn fgetxattr(fd: BorrowedFd<'_>, name: &str) -> io::Result<Option<Vec<u8>>> {
    fault::check(Call::Getxattr)?;
    let cname = CString::new(name).expect("xattr name has no NUL");
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let n = unsafe {
            libc::fgetxattr(fd.as_raw_fd(), cname.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        };
        if n >= 0 {
            buf.truncate(n as usize);
            return Ok(Some(buf));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENODATA) | Some(libc::ENOTSUP) => return Ok(None),
            Some(libc::ERANGE) if buf.len() < 4096 => buf.resize(4096, 0),
            _ => return Err(e),
        }
    }
}

/// `fsetxattr(2)`; `Ok(false)` when the file system does not support user xattrs.
pub(crate) fn fsetxattr(fd: BorrowedFd<'_>, name: &str, value: &[u8]) -> io::Result<bool> {
    let r = fault::check(Call::Setxattr).and_then(|()| {
        let cname = CString::new(name).expect("xattr name has no NUL");
        // SAFETY: `value` is valid for its length.
        cvt(unsafe { libc::fsetxattr(fd.as_raw_fd(), cname.as_ptr(), value.as_ptr().cast(), value.len(), 0) } as libc::c_long)
    });
    // Only "this file system has no user xattrs" means "store no token"; ENOSPC, EDQUOT, E2BIG
    // or EIO fail the write (ENOTSUP and EOPNOTSUPP are one value on Linux).
    match r {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `futimens(2)`: set atime and mtime of an open file to `secs`+`nsecs` since the epoch.
pub(crate) fn futimens(fd: BorrowedFd<'_>, secs: i64, nsecs: i64) -> io::Result<()> {
    let ts = libc::timespec { tv_sec: secs as libc::time_t, tv_nsec: nsecs as _ };
    let times = [ts, ts];
    // SAFETY: `times` is a valid array of two timespecs.
    cvt(unsafe { libc::futimens(fd.as_raw_fd(), times.as_ptr()) } as libc::c_long).map(drop)
}

/// `linkat(2)` of an existing path to a new one, failing with `EEXIST`: the atomic
/// "exactly one creator wins" primitive of the guard format.
pub(crate) fn link_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::hard_link(from, to)
}

/// Open an unnamed regular file in directory `dir` (`O_TMPFILE|O_WRONLY`, Linux ≥ 3.11). It has
/// no name, so no reader can see it until [`link_fd`] gives it one. `EOPNOTSUPP` or `EISDIR`
/// when the file system (or an old kernel) cannot do it.
pub(crate) fn open_tmpfile(dir: &Path, mode: u32) -> io::Result<OwnedFd> {
    fault::check(Call::OpenTmpfile)?;
    open_raw(dir, libc::O_TMPFILE | libc::O_WRONLY, mode)
}

/// Give the unnamed file `fd` (from [`open_tmpfile`]) the name `to`, failing with `EEXIST` when
/// `to` exists (whatever it is, a symlink included: nothing at `to` is followed or touched).
/// Done as `linkat("/proc/self/fd/N", to, AT_SYMLINK_FOLLOW)`, which needs no capability, unlike
/// `AT_EMPTY_PATH`.
pub(crate) fn link_fd(fd: BorrowedFd<'_>, to: &Path) -> io::Result<()> {
    let from = CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL");
    let to = CString::new(to.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: both are valid NUL-terminated paths.
    cvt(unsafe { libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_SYMLINK_FOLLOW) }
        as libc::c_long)
    .map(drop)
}

/// `flock(fd, LOCK_EX | LOCK_NB)`: `Ok(true)` when the exclusive lock was taken, `Ok(false)`
/// when another open file description holds it (`EWOULDBLOCK`). The lock goes with the
/// descriptor: closing it, or the holder's exit, releases it.
pub(crate) fn try_flock_exclusive(fd: BorrowedFd<'_>) -> io::Result<bool> {
    // SAFETY: plain system call on a valid descriptor.
    match cvt(unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } as libc::c_long) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `umask(2)`: set the file-mode creation mask and return the previous one. Process-wide: only
/// for a test's own child process.
pub fn umask(mask: u32) -> u32 {
    // SAFETY: plain system call.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// This process's pid.
pub(crate) fn getpid() -> i32 {
    // SAFETY: always succeeds.
    unsafe { libc::getpid() }
}
/// This process's parent pid.
pub(crate) fn getppid() -> i32 {
    // SAFETY: always succeeds.
    unsafe { libc::getppid() }
}
/// This process's process group.
pub(crate) fn getpgrp() -> i32 {
    // SAFETY: always succeeds.
    unsafe { libc::getpgrp() }
}
/// This process's effective uid.
pub(crate) fn geteuid() -> u32 {
    // SAFETY: always succeeds.
    unsafe { libc::geteuid() }
}
/// `sysconf(_SC_CLK_TCK)`: clock ticks per second of `/proc/<pid>/stat` times (100 on Linux).
pub(crate) fn clk_tck() -> u64 {
    // SAFETY: always succeeds.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as u64 } else { 100 }
}

/// Open a path with raw flags (used for `O_NOFOLLOW|O_NONBLOCK` openers).
pub(crate) fn open_raw(path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: freshly opened descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Read a small file relative to an open directory (`openat(2)`, `O_NOFOLLOW`), e.g. `stat`
/// under an open `/proc/<pid>`: once that process is reaped this fails with `ESRCH`, even if the
/// number now belongs to another process.
pub(crate) fn read_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let c = CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name contains a NUL byte"))?;
    // SAFETY: `dir` is a valid descriptor and `c` a valid NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: freshly opened descriptor.
    let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let mut buf = Vec::with_capacity(512);
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

/// `fchmod(2)`.
pub(crate) fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    // SAFETY: plain system call.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) } as libc::c_long).map(drop)
}
