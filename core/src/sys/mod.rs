//! The narrow layer of raw system calls and procfs reads: the only place with `unsafe`.
//!
//! Every system call that decides or sends a signal goes through a function here, and each of
//! them first consults the thread-local fault table of [`fault`], so tests can make
//! `pidfd_open` fail with `ENOSYS` or `EPERM`, the process-group flag fail with `EINVAL`, and so
//! exercise every kernel path on one kernel.
//!
//! The calls go through the [`nix`] crate wherever it has a wrapper (signals, `poll`, `flock`,
//! `linkat`, `futimens`, `umask`, ids, `sysconf`, `getrlimit`, `fstat`/`fstatfs`, `open`/`openat`,
//! `fchmod`); raw `libc` remains only where nix has none or where its wrapper loses information,
//! each place saying why. Nothing of nix leaves this module: pids are `i32`, signals plain signal
//! numbers, errors `std::io::Error` with the errno.
#![allow(unsafe_code)]

pub mod chase;
pub mod fault;
// Public (hidden with `sys`) only so the property tests and fuzz targets reach `parse_stat`.
pub mod procfs;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, AT_FDCWD};
use nix::sys::signal::Signal as NixSignal;
use nix::sys::stat::Mode;
use nix::unistd::Pid;

pub(crate) use fault::Call;
/// The `/proc/<pid>/stat` parser, reachable for property tests and tools (not a stable API).
pub use procfs::{parse_stat, Stat};

/// `PIDFD_SIGNAL_PROCESS_GROUP` from `<linux/pidfd.h>` (Linux ≥ 6.9).
pub(crate) const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 4;
/// `PIDFS_MAGIC` from `<linux/magic.h>`: the file-system type of a pidfd on Linux ≥ 6.9.
const PIDFS_MAGIC: i64 = 0x5049_4446;

/// For the raw `libc` calls that remain: a negative return is the errno of `errno`.
fn cvt(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A path or name as nix wants it, refusing an inner NUL byte with our own message (nix would
/// say only `EINVAL`).
fn no_nul(bytes: &[u8], what: &str) -> io::Result<()> {
    if bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{what} contains a NUL byte")));
    }
    Ok(())
}

/// `kill(target, sig)` for a target already checked by the caller (a pid > 1, or `-pgid`).
/// nix's `kill`/`killpg` take its own `Signal` enum, which has no real-time signals
/// (SIGRTMIN..=SIGRTMAX); those, which our `Signal` allows, go through raw `libc::kill`.
fn send(target: i32, sig: i32) -> io::Result<()> {
    match NixSignal::try_from(sig) {
        Ok(s) if target > 0 => Ok(nix::sys::signal::kill(Pid::from_raw(target), s)?),
        // killpg(3) is kill(2) with the group negated; the caller asserted pgid > 1.
        Ok(s) => Ok(nix::sys::signal::killpg(Pid::from_raw(-target), s)?),
        // SAFETY: plain system call; `target` is a checked pid or a negated group > 1.
        Err(_) => cvt(unsafe { libc::kill(target, sig) } as libc::c_long).map(drop),
    }
}

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

/// `kill(pid, 0)`: does a process with this pid exist (`Ok` or `EPERM`: yes; `ESRCH`: no)?
/// Sends nothing.
pub(crate) fn kill_probe(pid: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pid > 0, "pidguard bug: kill({pid}, 0) reached the system-call layer");
    // `None` is signal 0: only existence and permission are checked.
    Ok(nix::sys::signal::kill(Pid::from_raw(pid), None)?)
}

/// `kill(2)`. Callers have already refused pid ≤ 0, pid 1 and their own pid (see `signal::guard`).
pub(crate) fn kill(pid: i32, sig: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pid > 1, "pidguard bug: kill({pid}) reached the system-call layer");
    send(pid, sig)
}

/// `kill(-pgid, sig)`, i.e. `killpg(pgid, sig)`. Callers have refused group ≤ 1 and their own group.
pub(crate) fn killpg(pgid: i32, sig: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pgid > 1, "pidguard bug: killpg({pgid}) reached the system-call layer");
    send(-pgid, sig)
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

/// The soft `RLIMIT_NOFILE`: how many descriptors this process may have open.
pub(crate) fn nofile_soft_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, Resource};
    // `rlim_t` is 32 bits wide on some 32-bit targets.
    #[allow(clippy::useless_conversion)]
    getrlimit(Resource::RLIMIT_NOFILE).ok().map(|(soft, _hard)| u64::from(soft))
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
        libc::EXDEV => "EXDEV",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// Fill `buf` from the kernel's random pool with `getrandom(2)` (flags 0: blocks only before
/// the pool is first initialised at boot), looping over short reads and `EINTR`.
///
/// Errors: the `getrandom` errno (`ENOSYS` on kernels before 3.17, `EFAULT`).
pub(crate) fn getrandom(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unwritten tail of `buf`.
        let n = unsafe { libc::getrandom(buf[done..].as_mut_ptr().cast(), buf.len() - done, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
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
        // Raw libc: nix 0.32 does not wrap `pthread_atfork`.
        // SAFETY: registering a handler that only touches an atomic is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
    GEN.load(Ordering::Relaxed)
}

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
    // Raw libc: nix 0.32 has no extended-attribute wrappers.
    // Unreachable: every caller passes the constant `TOKEN_XATTR` (no NUL), never input.
    let cname = CString::new(name).expect("xattr name has no NUL");
    // A token fits the first, stack-held buffer; the heap is used only for what is returned
    // (nothing at all for the common "no such attribute").
    let mut small = [0u8; 256];
    let mut large = Vec::new();
    loop {
        let buf: &mut [u8] = if large.is_empty() { &mut small } else { &mut large };
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let n = unsafe {
            libc::fgetxattr(fd.as_raw_fd(), cname.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        };
        if n >= 0 {
            return Ok(Some(buf[..n as usize].to_vec()));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENODATA) | Some(libc::ENOTSUP) => return Ok(None),
            Some(libc::ERANGE) if large.is_empty() => large = vec![0u8; 4096],
            _ => return Err(e),
        }
    }
}

/// `fsetxattr(2)`; `Ok(false)` when the file system does not support user xattrs.
pub(crate) fn fsetxattr(fd: BorrowedFd<'_>, name: &str, value: &[u8]) -> io::Result<bool> {
    // Raw libc: nix 0.32 has no extended-attribute wrappers.
    let r = fault::check(Call::Setxattr).and_then(|()| {
        // Unreachable: every caller passes the constant `TOKEN_XATTR` (no NUL), never input.
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
    let ts = nix::sys::time::TimeSpec::new(secs as libc::time_t, nsecs as _);
    Ok(nix::sys::stat::futimens(fd, &ts, &ts)?)
}

/// `linkat(2)` of an existing path to a new one, failing with `EEXIST`: the atomic
/// "exactly one creator wins" primitive of the guard format.
pub(crate) fn link_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    // No AT_SYMLINK_FOLLOW: a symlink at `from` is linked as itself, as std::fs::hard_link does.
    let (fdir, fname) = parent_of(from)?;
    let (tdir, tname) = parent_of(to)?;
    Ok(nix::unistd::linkat(fdir.as_fd(), fname.as_os_str(), tdir.as_fd(), tname.as_os_str(), AtFlags::empty())?)
}

/// The directory holding `path`, opened (`O_PATH`) the way [`open_raw`] opens — beneath the
/// scope's root when one is in force — and the last component's name.
fn parent_of(path: &Path) -> io::Result<(OwnedFd, std::ffi::OsString)> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let fd = open_raw(dir, (OFlag::O_PATH | OFlag::O_DIRECTORY).bits(), 0)?;
    Ok((fd, name.to_os_string()))
}

/// A directory opened once (`O_PATH`, the way [`open_raw`] opens: beneath the scope's root
/// when one is in force), for the calls on the files directly in it.
///
/// Each call names a file by its name alone and resolves it from this descriptor: one path
/// component, no walk from the root per call, and the directory is the one opened even if a
/// name on the way to it is swapped for a symlink afterwards. A name that is empty, `.`, `..`
/// or holds `/` is refused with `EINVAL`, so nothing outside the directory is reached through
/// it. Opens take `O_NOFOLLOW` from the caller as with [`open_raw`]; `rename`, `unlink` and
/// `lstat_id` never follow the last component.
pub(crate) struct DirFd {
    fd: OwnedFd,
}

/// `name` as one path component, or `EINVAL`.
fn component(name: &std::ffi::OsStr) -> io::Result<&std::ffi::OsStr> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(name)
}

impl DirFd {
    /// Open the directory at `path` (`O_PATH|O_DIRECTORY`, see [`open_raw`]).
    pub(crate) fn open(path: &Path) -> io::Result<DirFd> {
        let dir = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        Ok(DirFd { fd: open_raw(dir, (OFlag::O_PATH | OFlag::O_DIRECTORY).bits(), 0)? })
    }

    /// The directory holding `path` and the last component's name.
    pub(crate) fn parent_of(path: &Path) -> io::Result<(DirFd, &std::ffi::OsStr)> {
        let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Ok((DirFd::open(dir)?, name))
    }

    /// `openat(2)` of `name` in this directory with raw `flags` (`O_CLOEXEC` added).
    pub(crate) fn open_file(&self, name: &std::ffi::OsStr, flags: i32) -> io::Result<OwnedFd> {
        let name = component(name)?;
        let flags = OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC;
        Ok(nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::empty())?)
    }

    /// `renameat(2)` of `from` to `to`, both in this directory.
    pub(crate) fn rename(&self, from: &std::ffi::OsStr, to: &std::ffi::OsStr) -> io::Result<()> {
        let (from, to) = (component(from)?, component(to)?);
        Ok(nix::fcntl::renameat(self.fd.as_fd(), from, self.fd.as_fd(), to)?)
    }

    /// `linkat(2)` of `from` to `to`, both in this directory, failing with `EEXIST` (see
    /// [`link_no_replace`]).
    pub(crate) fn link_no_replace(&self, from: &std::ffi::OsStr, to: &std::ffi::OsStr) -> io::Result<()> {
        let (from, to) = (component(from)?, component(to)?);
        Ok(nix::unistd::linkat(self.fd.as_fd(), from, self.fd.as_fd(), to, AtFlags::empty())?)
    }

    /// `unlinkat(2)` of the file `name` in this directory.
    pub(crate) fn unlink(&self, name: &std::ffi::OsStr) -> io::Result<()> {
        let name = component(name)?;
        Ok(nix::unistd::unlinkat(self.fd.as_fd(), name, nix::unistd::UnlinkatFlags::NoRemoveDir)?)
    }

    /// `(dev, inode)` of `name` itself (`fstatat`, `AT_SYMLINK_NOFOLLOW`).
    pub(crate) fn lstat_id(&self, name: &std::ffi::OsStr) -> io::Result<(u64, u64)> {
        let st = self.lstat(name)?;
        Ok((st.dev, st.ino))
    }

    /// `(dev, inode)` of the directory itself (`fstat` of this descriptor): which directory it
    /// is, to compare with one opened at another time.
    pub(crate) fn id(&self) -> io::Result<(u64, u64)> {
        fd_id(self.fd.as_fd())
    }

    /// What `fstatat(name, AT_SYMLINK_NOFOLLOW)` says of `name` itself (a symlink is not
    /// followed).
    pub(crate) fn lstat(&self, name: &std::ffi::OsStr) -> io::Result<Lstat> {
        let name = component(name)?;
        let st = nix::sys::stat::fstatat(self.fd.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
        Ok(Lstat { dev: st.st_dev as u64, ino: st.st_ino as u64, mode: st.st_mode as u32, size: st.st_size as u64 })
    }
}

/// `(dev, inode)` of the open file `fd` (`fstat(2)`).
pub(crate) fn fd_id(fd: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    let st = nix::sys::stat::fstat(fd)?;
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// The fields of a `stat` that [`DirFd::lstat`] hands out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lstat {
    /// `st_dev`.
    pub(crate) dev: u64,
    /// `st_ino`.
    pub(crate) ino: u64,
    /// `st_mode`: the type bits (`S_IFMT`) and the permissions.
    pub(crate) mode: u32,
    /// `st_size`, bytes.
    pub(crate) size: u64,
}

impl Lstat {
    /// A regular file (not a symlink, FIFO, device, socket or directory).
    pub(crate) fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }
    /// A symbolic link itself.
    pub(crate) fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }
}

/// One entry of [`read_dir_fd`]: its name and whether it is a directory (not following a
/// symlink: a symlink to a directory is not one).
pub(crate) type DirEntry = (std::ffi::OsString, bool);

/// The entries of the directory open as `fd` (`O_RDONLY|O_DIRECTORY`), `.` and `..` left out,
/// read with `getdents64(2)` through that very descriptor (no second open, as `opendir` of
/// `/proc/self/fd/N` would need, and no `fstat`, as `fdopendir` makes). An entry whose type the
/// file system does not report (`DT_UNKNOWN`) is looked at with `fstatat(AT_SYMLINK_NOFOLLOW)`.
///
/// Errors: the `getdents64` errno (`EINTR` is retried); an entry that vanished before its
/// `fstatat` is left out.
pub(crate) fn read_dir_fd(fd: BorrowedFd<'_>) -> io::Result<Vec<DirEntry>> {
    thread_local! {
        // 32 KiB per thread, made once (not one zeroed allocation per directory listed); 8-byte
        // aligned: the kernel writes `struct linux_dirent64` records into it.
        static BUF: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.is_empty() {
                buf.resize(4096, 0);
            }
            getdents_all(fd, &mut buf)
        }
        // Not reached (nothing here calls back into itself); a fresh buffer would do.
        Err(_) => getdents_all(fd, &mut vec![0u64; 4096]),
    })
}

/// [`read_dir_fd`] with the buffer given.
fn getdents_all(fd: BorrowedFd<'_>, buf: &mut [u64]) -> io::Result<Vec<DirEntry>> {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::new();
    let bytes = buf.len() * 8;
    loop {
        // Raw libc: nix 0.32 reads directories only through `opendir`/`fdopendir`.
        // SAFETY: `buf` is valid for `bytes` bytes; the kernel writes at most that many.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd.as_raw_fd() as libc::c_long, buf.as_mut_ptr(), bytes) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(out);
        }
        // SAFETY: the kernel filled the first `n` bytes with whole records.
        let data = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n as usize) };
        let mut off = 0usize;
        while off + 19 < data.len() {
            // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
            let reclen = u16::from_ne_bytes([data[off + 16], data[off + 17]]) as usize;
            if reclen == 0 || off + reclen > data.len() {
                break;
            }
            let d_type = data[off + 18];
            let name_bytes = &data[off + 19..off + reclen];
            let name = &name_bytes[..name_bytes.iter().position(|&c| c == 0).unwrap_or(name_bytes.len())];
            off += reclen;
            if name == b"." || name == b".." {
                continue;
            }
            let is_dir = match d_type {
                libc::DT_DIR => true,
                libc::DT_UNKNOWN => match nix::sys::stat::fstatat(fd, std::ffi::OsStr::from_bytes(name), AtFlags::AT_SYMLINK_NOFOLLOW) {
                    Ok(st) => st.st_mode & libc::S_IFMT == libc::S_IFDIR,
                    Err(Errno::ENOENT) => continue,
                    Err(e) => return Err(e.into()),
                },
                _ => false,
            };
            out.push((std::ffi::OsString::from_vec(name.to_vec()), is_dir));
        }
    }
}

/// Resolving paths beneath a directory that an untrusted user may write.
///
/// A cleanup walks a tree that the hooks' user owns, and then opens, renames and unlinks files
/// in it by path. `O_NOFOLLOW` guards only the last component: a user who swaps a directory of
/// the tree for a symlink between the walk and an open would steer root into another tree (and
/// make it judge, signal and finalize a hook there). While a [`Scope`] is in force, every path
/// of the `sys` layer under its root is resolved with `openat2(2)` from a descriptor of the root,
/// with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (Linux ≥ 5.6): no symlink anywhere below the
/// root, no escape. The root itself is opened once, as the caller named it. Where `openat2` is
/// missing (`ENOSYS` before Linux 5.6, `EPERM` from an old container seccomp profile) paths are
/// opened with `openat` from the root, as before.
pub(crate) mod beneath {
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    use std::io;

    struct Root {
        id: u64,
        path: PathBuf,
        fd: Arc<OwnedFd>,
    }

    static ROOTS: Mutex<Vec<Root>> = Mutex::new(Vec::new());

    /// While alive, paths under its root are resolved beneath it (see the module doc).
    pub(crate) struct Scope {
        id: u64,
    }

    impl Drop for Scope {
        fn drop(&mut self) {
            let mut roots = ROOTS.lock().unwrap_or_else(|p| p.into_inner());
            roots.retain(|r| r.id != self.id);
        }
    }

    /// Open `root` (following symlinks: the caller named it) and resolve every path under it
    /// beneath it until the returned scope is dropped.
    pub(crate) fn enter(root: &Path) -> io::Result<Scope> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        // Opened as a path outside any scope is: chased for a privileged caller (see `open_raw`).
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        let fd = if crate::protect::resolve_paths_safely() { super::open_chased(root, flags, 0)? } else { super::open_direct(root, flags, 0)? };
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        ROOTS.lock().unwrap_or_else(|p| p.into_inner()).push(Root { id, path: root.to_path_buf(), fd: Arc::new(fd) });
        Ok(Scope { id })
    }

    /// The root whose scope covers `path` (the longest) and `path` relative to it (`.` for the
    /// root itself: the root is the directory opened when the scope was entered, even if its
    /// name was swapped since); `None` when no scope covers it.
    pub(crate) fn find(path: &Path) -> Option<(Arc<OwnedFd>, PathBuf)> {
        let roots = ROOTS.lock().unwrap_or_else(|p| p.into_inner());
        if roots.is_empty() {
            return None;
        }
        roots
            .iter()
            .filter_map(|r| path.strip_prefix(&r.path).ok().map(|rel| (r, rel)))
            .max_by_key(|(r, _)| r.path.as_os_str().len())
            .map(|(r, rel)| (r.fd.clone(), if rel.as_os_str().is_empty() { PathBuf::from(".") } else { rel.to_path_buf() }))
    }

    /// `struct open_how` of `<linux/openat2.h>`.
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    const RESOLVE_BENEATH: u64 = 0x08;
    /// `__NR_openat2` of the generic syscall table (x86_64, aarch64, riscv64, …; Linux ≥ 5.6).
    const SYS_OPENAT2: libc::c_long = 437;

    /// `openat2(root, rel, flags | O_CLOEXEC, mode, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`;
    /// without `openat2` (`ENOSYS`), a plain `openat` of `rel` from the root.
    pub(crate) fn openat2(root: BorrowedFd<'_>, rel: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(rel.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
        let flags = flags | libc::O_CLOEXEC;
        let how = OpenHow {
            flags: flags as u32 as u64,
            mode: if flags & (libc::O_CREAT | libc::O_TMPFILE) != 0 { mode as u64 } else { 0 },
            resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
        };
        // SAFETY: a valid directory descriptor, a NUL-terminated path and a properly sized
        // open_how; the kernel returns a new descriptor we own.
        let r = unsafe {
            libc::syscall(SYS_OPENAT2, root.as_raw_fd() as libc::c_long, c.as_ptr(), &how as *const OpenHow, std::mem::size_of::<OpenHow>())
        };
        if r >= 0 {
            // SAFETY: freshly opened descriptor.
            return Ok(unsafe { OwnedFd::from_raw_fd(r as i32) });
        }
        let e = io::Error::last_os_error();
        // ENOSYS: Linux < 5.6. EPERM: a container's seccomp profile that predates openat2
        // (Docker < 20.10 answers EPERM for syscalls it does not know). Either way: openat.
        if !matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) {
            return Err(e);
        }
        // SAFETY: as above, with openat(2).
        let r = unsafe { libc::openat(root.as_raw_fd(), c.as_ptr(), flags, mode as libc::c_uint) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: freshly opened descriptor.
        Ok(unsafe { OwnedFd::from_raw_fd(r) })
    }
}

/// Open an unnamed regular file in directory `dir` (`O_TMPFILE|O_WRONLY`, Linux ≥ 3.11). It has
/// no name, so no reader can see it until [`link_fd`] gives it one. `EOPNOTSUPP` or `EISDIR`
/// when the file system (or an old kernel) cannot do it.
pub(crate) fn open_tmpfile(dir: &Path, mode: u32) -> io::Result<OwnedFd> {
    fault::check(Call::OpenTmpfile)?;
    open_raw(dir, (OFlag::O_TMPFILE | OFlag::O_WRONLY).bits(), mode)
}

/// Give the unnamed file `fd` (from [`open_tmpfile`]) the name `to`, failing with `EEXIST` when
/// `to` exists (whatever it is, a symlink included: nothing at `to` is followed or touched).
/// Done as `linkat("/proc/self/fd/N", to, AT_SYMLINK_FOLLOW)`, which needs no capability, unlike
/// `AT_EMPTY_PATH`.
pub(crate) fn link_fd(fd: BorrowedFd<'_>, to: &Path) -> io::Result<()> {
    let from = format!("/proc/self/fd/{}", fd.as_raw_fd());
    no_nul(to.as_os_str().as_bytes(), "path")?;
    // `to`'s directory is opened as `open_raw` opens (chased for a privileged caller), the
    // link made by name in it.
    let (dir, name) = parent_of(to)?;
    Ok(nix::unistd::linkat(AT_FDCWD, from.as_str(), dir.as_fd(), name.as_os_str(), AtFlags::AT_SYMLINK_FOLLOW)?)
}

/// `renameat(2)` of the path `from` to the path `to`, each name in its directory opened as
/// [`open_raw`] opens (so a privileged caller's rename crosses no unsafe transition).
pub(crate) fn rename_path(from: &Path, to: &Path) -> io::Result<()> {
    let (fdir, fname) = parent_of(from)?;
    let (tdir, tname) = parent_of(to)?;
    Ok(nix::fcntl::renameat(fdir.as_fd(), fname.as_os_str(), tdir.as_fd(), tname.as_os_str())?)
}

/// `unlinkat(2)` of the file at `path`, its directory opened as [`open_raw`] opens.
pub(crate) fn unlink_path(path: &Path) -> io::Result<()> {
    let (dir, name) = parent_of(path)?;
    Ok(nix::unistd::unlinkat(dir.as_fd(), name.as_os_str(), nix::unistd::UnlinkatFlags::NoRemoveDir)?)
}

/// `mkdirat(2)` of the directory `path` with `mode`, then `fchmodat` to exactly `mode` (the
/// umask does not apply); its parent opened as [`open_raw`] opens. `EEXIST` when something is
/// at the path (nothing is chmod-ed then).
pub(crate) fn mkdir_path(path: &Path, mode: u32) -> io::Result<()> {
    let (dir, name) = parent_of(path)?;
    let m = Mode::from_bits_retain(mode as libc::mode_t);
    nix::sys::stat::mkdirat(dir.as_fd(), name.as_os_str(), m)?;
    Ok(nix::sys::stat::fchmodat(dir.as_fd(), name.as_os_str(), m, nix::sys::stat::FchmodatFlags::FollowSymlink)?)
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

/// `umask(2)`: set the file-mode creation mask and return the previous one. Process-wide: only
/// for a test's own child process.
pub fn umask(mask: u32) -> u32 {
    nix::sys::stat::umask(Mode::from_bits_retain(mask as libc::mode_t)).bits() as u32
}

/// This process's pid.
pub(crate) fn getpid() -> i32 {
    nix::unistd::getpid().as_raw()
}
/// This process's parent pid.
pub(crate) fn getppid() -> i32 {
    nix::unistd::getppid().as_raw()
}
/// This process's process group.
pub(crate) fn getpgrp() -> i32 {
    nix::unistd::getpgrp().as_raw()
}
/// This process's effective uid.
pub(crate) fn geteuid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Whether this process holds `CAP_KILL` in its effective set (capabilities(7)): it may then
/// signal any process, like root. One `capget(2)` (no file is opened: it is asked before every
/// path a privileged caller opens). An error answers "no".
pub(crate) fn has_cap_kill() -> bool {
    /// `CAP_KILL` and `_LINUX_CAPABILITY_VERSION_3` from `<linux/capability.h>`.
    const CAP_KILL: u32 = 5;
    const VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header { version: VERSION_3, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: capget(2) with a version-3 header writes two `Data` records, which `data` holds.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut Header, data.as_mut_ptr()) };
    r == 0 && data[0].effective & (1 << CAP_KILL) != 0
}
/// `sysconf(_SC_CLK_TCK)`: clock ticks per second of `/proc/<pid>/stat` times (100 on Linux).
pub(crate) fn clk_tck() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(v)) if v > 0 => v as u64,
        _ => 100,
    }
}

/// Open a path with raw flags (used for `O_NOFOLLOW|O_NONBLOCK` openers).
///
/// Beneath a [`beneath::Scope`]'s root, resolved beneath it. Elsewhere, when the caller is
/// privileged (`crate::protect::resolve_paths_safely`: euid 0 or `CAP_KILL`), the path is
/// walked by [`chase::resolve`], which refuses an unsafe transition (a user's directory or
/// symlink leading to another uid's directory) with an [`chase::UnsafeTransition`] error; the
/// last component is then opened from its directory with the caller's flags plus
/// `O_NOFOLLOW` (a symlink there is followed by the walk only when the caller's flags lack
/// `O_NOFOLLOW`). Otherwise a plain `open(2)`.
pub(crate) fn open_raw(path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    no_nul(path.as_os_str().as_bytes(), "path")?;
    if let Some((root, rel)) = beneath::find(path) {
        return beneath::openat2(root.as_fd(), &rel, flags, mode);
    }
    if crate::protect::resolve_paths_safely() {
        return open_chased(path, flags, mode);
    }
    open_direct(path, flags, mode)
}

/// `open(2)` of `path` as the kernel walks it (for `/proc/<pid>` and the non-privileged case).
pub(crate) fn open_direct(path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    no_nul(path.as_os_str().as_bytes(), "path")?;
    // `from_bits_retain`: the caller's flags reach open(2) bit for bit, as with libc.
    let flags = OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC;
    Ok(nix::fcntl::open(path, flags, Mode::from_bits_retain(mode as libc::mode_t))?)
}

/// Open `path` with `flags` after walking it with [`chase::resolve`] (see [`open_raw`]).
pub(crate) fn open_chased(path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let ends_in_name = path.file_name().is_some() && !path.as_os_str().as_bytes().ends_with(b"/.");
    let follow_last = flags & libc::O_NOFOLLOW == 0 || !ends_in_name;
    let m = Mode::from_bits_retain(mode as libc::mode_t);
    match chase::resolve(path, follow_last)? {
        chase::Resolved::Dir(fd) => {
            if flags & !(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) == 0 && flags & libc::O_PATH != 0 {
                return Ok(fd);
            }
            let f = OFlag::from_bits_retain(flags & !libc::O_NOFOLLOW) | OFlag::O_CLOEXEC;
            Ok(nix::fcntl::openat(fd.as_fd(), ".", f, m)?)
        }
        chase::Resolved::Entry(dir, name) => {
            let f = OFlag::from_bits_retain(flags) | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            Ok(nix::fcntl::openat(dir.as_fd(), name.as_os_str(), f, m)?)
        }
    }
}

/// Read a small file relative to an open directory (`openat(2)`, `O_NOFOLLOW`), e.g. `stat`
/// under an open `/proc/<pid>`: once that process is reaped this fails with `ESRCH`, even if the
/// number now belongs to another process.
pub(crate) fn read_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<Vec<u8>> {
    use std::io::Read;
    no_nul(name.as_bytes(), "name")?;
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut f = std::fs::File::from(nix::fcntl::openat(dir, name, flags, Mode::empty())?);
    let mut buf = Vec::with_capacity(512);
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

/// `fchmod(2)`.
pub(crate) fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    Ok(nix::sys::stat::fchmod(fd, Mode::from_bits_retain(mode as libc::mode_t))?)
}

#[cfg(test)]
mod tests {
    //! The places where this layer does more than call nix: real-time signals (nix's `Signal`
    //! has none), `waitid` kept on raw libc for them, and the descriptor-bound `flock`.
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// A `sleep` child leading its own process group (so a group signal reaches only it).
    fn child() -> (i32, OwnedFd) {
        let c = Command::new("sleep").arg("300").process_group(0).stdin(Stdio::null()).spawn().expect("spawn sleep");
        let pid = c.id() as i32;
        // Reaped below through its pidfd, never through `Child`.
        std::mem::forget(c);
        (pid, pidfd_open(pid).expect("pidfd_open"))
    }

    /// Wait (at most 10 s) for the child to exit and reap it.
    fn reap(fd: &OwnedFd) -> Option<ChildExit> {
        poll_readable(&[fd.as_fd()], Some(Duration::from_secs(10))).expect("poll");
        waitid_pidfd(fd.as_fd(), false).expect("waitid")
    }

    #[test]
    fn kill_and_killpg_deliver_every_signal_number_and_waitid_reports_it() {
        let rt = libc::SIGRTMIN() + 1;
        for (sig, group) in [(libc::SIGTERM, false), (libc::SIGTERM, true), (rt, false), (rt, true)] {
            let (pid, fd) = child();
            let sent = if group { killpg(pid, sig) } else { kill(pid, sig) };
            if let Err(e) = sent {
                // Our own unreaped child: its pid cannot have been reused. Do not leak it.
                let _ = kill(pid, libc::SIGKILL);
                let _ = reap(&fd);
                panic!("signal {sig}, group {group}: {e}");
            }
            assert_eq!(reap(&fd), Some(ChildExit::Signal(sig)), "signal {sig}, group {group}");
        }
    }

    #[test]
    fn kill_probe_sees_a_live_child_and_not_a_reaped_one() {
        let (pid, fd) = child();
        kill_probe(pid).expect("live child");
        assert_eq!(waitid_pidfd(fd.as_fd(), false).expect("waitid"), None, "still running");
        kill(pid, libc::SIGKILL).expect("kill");
        assert_eq!(reap(&fd), Some(ChildExit::Signal(libc::SIGKILL)));
        assert_eq!(kill_probe(pid).unwrap_err().raw_os_error(), Some(libc::ESRCH));
    }

    #[test]
    fn capget_agrees_with_the_status_file() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap().trim();
        let eff = u64::from_str_radix(eff, 16).unwrap();
        assert_eq!(has_cap_kill(), eff & (1 << 5) != 0, "CapEff {eff:#x}");
    }

    #[test]
    fn flock_lives_with_the_descriptor() {
        let dir = std::env::temp_dir().join(format!("pidguard-sys-flock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let open = || open_raw(&dir, libc::O_RDONLY | libc::O_DIRECTORY, 0).expect("open dir");
        let (a, b) = (open(), open());
        assert!(try_flock_exclusive(a.as_fd()).unwrap(), "first taker wins");
        assert!(!try_flock_exclusive(b.as_fd()).unwrap(), "held by another open file description");
        // Still held after the call returned: nothing unlocked it behind the caller's back.
        assert!(!try_flock_exclusive(b.as_fd()).unwrap());
        drop(a);
        // Another test of this process may fork at any moment: until that child execs
        // (O_CLOEXEC), its copy of `a` still holds the lock. It lets go within moments.
        let released = (0..200).any(|_| {
            try_flock_exclusive(b.as_fd()).unwrap() || {
                std::thread::sleep(std::time::Duration::from_millis(10));
                false
            }
        });
        assert!(released, "closing the holder releases it");
        drop(b);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn dirfd_reaches_only_names_directly_in_its_directory() {
        let base = std::env::temp_dir().join(format!("pidguard-sys-dirfd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(base.join("outside"), "x").unwrap();
        std::fs::write(dir.join("a"), "a").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), dir.join("link")).unwrap();
        let d = DirFd::open(&dir).unwrap();
        for bad in ["", ".", "..", "../outside", "sub/a", "a\0"] {
            let bad = std::ffi::OsStr::new(bad);
            assert_eq!(d.open_file(bad, libc::O_RDONLY).unwrap_err().raw_os_error(), Some(libc::EINVAL), "{bad:?}");
            assert_eq!(d.unlink(bad).unwrap_err().raw_os_error(), Some(libc::EINVAL), "{bad:?}");
            assert_eq!(d.rename(std::ffi::OsStr::new("a"), bad).unwrap_err().raw_os_error(), Some(libc::EINVAL), "{bad:?}");
            assert_eq!(d.lstat_id(bad).unwrap_err().raw_os_error(), Some(libc::EINVAL), "{bad:?}");
        }
        assert!(base.join("outside").exists() && dir.join("a").exists(), "nothing outside or inside was touched");
        // O_NOFOLLOW reaches openat: the link is refused, not followed out of the directory.
        let link = std::ffi::OsStr::new("link");
        assert_eq!(d.open_file(link, libc::O_RDONLY | libc::O_NOFOLLOW).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        // rename, lstat_id and unlink act on the names themselves.
        d.rename(std::ffi::OsStr::new("a"), std::ffi::OsStr::new("b")).unwrap();
        let (dev, ino) = d.lstat_id(std::ffi::OsStr::new("b")).unwrap();
        let m = std::fs::metadata(dir.join("b")).unwrap();
        assert_eq!((dev, ino), (std::os::unix::fs::MetadataExt::dev(&m), std::os::unix::fs::MetadataExt::ino(&m)));
        assert_ne!(d.lstat_id(link).unwrap(), (dev, ino));
        d.link_no_replace(std::ffi::OsStr::new("b"), std::ffi::OsStr::new("c")).unwrap();
        assert_eq!(d.link_no_replace(std::ffi::OsStr::new("b"), std::ffi::OsStr::new("c")).unwrap_err().raw_os_error(), Some(libc::EEXIST));
        d.unlink(link).unwrap();
        assert!(base.join("outside").exists(), "unlink removed the link, not its target");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn read_dir_fd_lists_every_entry_once_with_its_kind() {
        let dir = std::env::temp_dir().join(format!("pidguard-sys-readdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink("sub", dir.join("link-to-sub")).unwrap();
        // More names than one getdents64 buffer holds (32 KiB), so the loop goes round.
        let mut want: Vec<(String, bool)> = (0..1500).map(|i| (format!("file-{i:04}-{}", "x".repeat(20)), false)).collect();
        for (n, _) in &want {
            std::fs::write(dir.join(n), "").unwrap();
        }
        want.push(("sub".into(), true));
        want.push(("link-to-sub".into(), false));
        want.sort();
        let fd = open_raw(&dir, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
        let mut got: Vec<(String, bool)> = read_dir_fd(fd.as_fd()).unwrap().into_iter().map(|(n, d)| (n.into_string().unwrap(), d)).collect();
        got.sort();
        assert_eq!(got, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn open_raw_refuses_an_inner_nul_and_passes_flags_through() {
        let e = open_raw(Path::new("/tmp/a\0b"), libc::O_RDONLY, 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        // O_NOFOLLOW reaches open(2): a symlink is refused with ELOOP.
        let dir = std::env::temp_dir().join(format!("pidguard-sys-open-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        let e = open_raw(&link, libc::O_RDONLY | libc::O_NOFOLLOW, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
