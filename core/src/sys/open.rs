//! Opening by path: the one path opener (`open_raw`: the kernel's walk, or the no-unsafe-transition walk of `chase`), and the path calls built on it (`O_TMPFILE` and `linkat`, `renameat`, `unlinkat`, `mkdirat`).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::fcntl::{AtFlags, OFlag};
#[cfg(target_os = "linux")]
use nix::fcntl::AT_FDCWD;
use nix::sys::stat::Mode;

use super::chase;
use super::fault::{self, Call};

/// A path or name as nix wants it, refusing an inner NUL byte with our own message (nix would
/// say only `EINVAL`).
fn no_nul(bytes: &[u8], what: &str) -> io::Result<()> {
    if bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{what} contains a NUL byte")));
    }
    Ok(())
}

/// `linkat(2)` of an existing path to a new one, failing with `EEXIST`: the atomic
/// "exactly one creator wins" primitive of the guard format.
pub(crate) fn link_no_replace(from: &Path, to: &Path, walk: Walk) -> io::Result<()> {
    // No AT_SYMLINK_FOLLOW: a symlink at `from` is linked as itself, as std::fs::hard_link does.
    let (fdir, fname) = parent_of(from, walk)?;
    let (tdir, tname) = parent_of(to, walk)?;
    Ok(nix::unistd::linkat(fdir.as_fd(), fname.as_os_str(), tdir.as_fd(), tname.as_os_str(), AtFlags::empty())?)
}

/// The directory holding `path`, opened (`O_PATH`) the way [`open_raw`] opens, and the last
/// component's name.
fn parent_of(path: &Path, walk: Walk) -> io::Result<(OwnedFd, std::ffi::OsString)> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let fd = open_raw(dir, super::O_PATH | libc::O_DIRECTORY, 0, walk)?;
    Ok((fd, name.to_os_string()))
}

/// Open an unnamed regular file in directory `dir` (`O_TMPFILE|O_WRONLY`, Linux ≥ 3.11). It has
/// no name, so no reader can see it until [`link_fd`] gives it one. `EOPNOTSUPP` or `EISDIR`
/// when the file system (or an old kernel) cannot do it — always on macOS and FreeBSD, which
/// have no `O_TMPFILE`: the caller's named-temporary path is taken there.
pub(crate) fn open_tmpfile(dir: &Path, mode: u32, walk: Walk) -> io::Result<OwnedFd> {
    fault::check(Call::OpenTmpfile)?;
    #[cfg(target_os = "linux")]
    return open_raw(dir, (OFlag::O_TMPFILE | OFlag::O_WRONLY).bits(), mode, walk);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (dir, mode, walk);
        Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
    }
}

/// Give the unnamed file `fd` (from [`open_tmpfile`]) the name `to`, failing with `EEXIST` when
/// `to` exists (whatever it is, a symlink included: nothing at `to` is followed or touched).
///
/// First `linkat(fd, "", dir, name, AT_EMPTY_PATH)`, which needs no `/proc` but
/// `CAP_DAC_READ_SEARCH` (since Linux 6.10 also allowed to the process that opened the file);
/// where that is refused (`ENOENT`, `EPERM`), `linkat("/proc/self/fd/N", …, AT_SYMLINK_FOLLOW)`,
/// which needs no capability but `/proc`.
///
/// Errors: `EEXIST` when `to` exists; `EOPNOTSUPP` when neither way is open (no capability and
/// no `/proc/self/fd` here: a mount namespace that hides `/proc`) — the caller then names the
/// file another way (a named temporary, linked); the errno of the link otherwise.
#[cfg(target_os = "linux")]
pub(crate) fn link_fd(fd: BorrowedFd<'_>, to: &Path, walk: Walk) -> io::Result<()> {
    no_nul(to.as_os_str().as_bytes(), "path")?;
    // `to`'s directory is opened as `open_raw` opens (with the caller's `walk`), the
    // link made by name in it.
    let (dir, name) = parent_of(to, walk)?;
    let cname = std::ffi::CString::new(name.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: valid descriptors and NUL-terminated strings for the duration of the call.
    let r = unsafe { libc::linkat(fd.as_raw_fd(), c"".as_ptr(), dir.as_raw_fd(), cname.as_ptr(), libc::AT_EMPTY_PATH) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if !matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::EPERM)) {
        return Err(e);
    }
    let from = format!("/proc/self/fd/{}", fd.as_raw_fd());
    match nix::unistd::linkat(AT_FDCWD, from.as_str(), dir.as_fd(), name.as_os_str(), AtFlags::AT_SYMLINK_FOLLOW) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::ENOENT) if nix::sys::stat::stat("/proc/self/fd").is_err() => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
        Err(e) => Err(e.into()),
    }
}

/// Unreachable outside Linux ([`open_tmpfile`] never gives an unnamed file there): `ENOSYS`.
#[cfg(not(target_os = "linux"))]
pub(crate) fn link_fd(_fd: BorrowedFd<'_>, _to: &Path, _walk: Walk) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// `renameat(2)` of the path `from` to the path `to`, each name in its directory opened as
/// [`open_raw`] opens with `walk` (so a privileged caller's rename crosses no unsafe transition).
pub(crate) fn rename_path(from: &Path, to: &Path, walk: Walk) -> io::Result<()> {
    let (fdir, fname) = parent_of(from, walk)?;
    let (tdir, tname) = parent_of(to, walk)?;
    Ok(nix::fcntl::renameat(fdir.as_fd(), fname.as_os_str(), tdir.as_fd(), tname.as_os_str())?)
}

/// `unlinkat(2)` of the file at `path`, its directory opened as [`open_raw`] opens.
pub(crate) fn unlink_path(path: &Path, walk: Walk) -> io::Result<()> {
    let (dir, name) = parent_of(path, walk)?;
    Ok(nix::unistd::unlinkat(dir.as_fd(), name.as_os_str(), nix::unistd::UnlinkatFlags::NoRemoveDir)?)
}

/// `mkdirat(2)` of the directory `path` with `mode`, then `fchmodat` to exactly `mode` (the
/// umask does not apply); its parent opened as [`open_raw`] opens. `EEXIST` when something is
/// at the path (nothing is chmod-ed then).
pub(crate) fn mkdir_path(path: &Path, mode: u32, walk: Walk) -> io::Result<()> {
    let (dir, name) = parent_of(path, walk)?;
    let m = Mode::from_bits_retain(mode as libc::mode_t);
    nix::sys::stat::mkdirat(dir.as_fd(), name.as_os_str(), m)?;
    Ok(nix::sys::stat::fchmodat(dir.as_fd(), name.as_os_str(), m, nix::sys::stat::FchmodatFlags::FollowSymlink)?)
}

/// How a path is walked to what it names: the caller's choice (`protect::walk` decides it from
/// the caller's privilege), never this layer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Walk {
    /// As the kernel walks it (`open(2)`).
    Kernel,
    /// By [`chase::resolve`], which refuses an unsafe transition.
    NoUnsafeTransition,
}

/// Open a path with raw flags (used for `O_NOFOLLOW|O_NONBLOCK` openers).
///
/// (A path under a cleanup's tree is opened through its [`Tree`](super::beneath::Tree) instead.)
/// With [`Walk::NoUnsafeTransition`] (what `protect::walk` gives a privileged caller), the path is
/// walked by [`chase::resolve`], which refuses an unsafe transition (a user's directory or
/// symlink leading to another uid's directory) with an [`chase::UnsafeTransition`] error; the
/// last component is then opened from its directory with the caller's flags plus
/// `O_NOFOLLOW` (a symlink there is followed by the walk only when the caller's flags lack
/// `O_NOFOLLOW`). Otherwise a plain `open(2)`.
pub(crate) fn open_raw(path: &Path, flags: i32, mode: u32, walk: Walk) -> io::Result<OwnedFd> {
    no_nul(path.as_os_str().as_bytes(), "path")?;
    if walk == Walk::NoUnsafeTransition {
        return open_chased(path, flags, mode);
    }
    open_direct(path, flags, mode)
}

/// `open(2)` of `path` as the kernel walks it (for `/proc/<pid>` and the non-privileged case).
pub(crate) fn open_direct(path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    no_nul(path.as_os_str().as_bytes(), "path")?;
    // `from_bits_retain`: the caller's flags reach open(2) bit for bit, as with libc.
    let nofollow = flags & libc::O_NOFOLLOW != 0;
    let flags = OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC;
    nix::fcntl::open(path, flags, Mode::from_bits_retain(mode as libc::mode_t)).map_err(|e| symlink_errno(e.into(), nofollow))
}

/// The errno of an `O_NOFOLLOW` open that met a symlink, as Linux and macOS say it (`ELOOP`):
/// FreeBSD says `EMLINK`, which callers would otherwise take for an unknown I/O error.
pub(crate) fn symlink_errno(e: io::Error, nofollow: bool) -> io::Error {
    if cfg!(target_os = "freebsd") && nofollow && e.raw_os_error() == Some(libc::EMLINK) {
        return io::Error::from_raw_os_error(libc::ELOOP);
    }
    e
}

/// Open `path` with `flags` after walking it with [`chase::resolve`] (see [`open_raw`]).
pub(crate) fn open_chased(path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let ends_in_name = path.file_name().is_some() && !path.as_os_str().as_bytes().ends_with(b"/.");
    let follow_last = flags & libc::O_NOFOLLOW == 0 || !ends_in_name;
    let m = Mode::from_bits_retain(mode as libc::mode_t);
    match chase::resolve(path, follow_last)? {
        chase::Resolved::Dir(fd) => {
            if flags & !(super::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) == 0 && flags & super::O_PATH != 0 {
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
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn read_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<Vec<u8>> {
    use std::io::Read;
    no_nul(name.as_bytes(), "name")?;
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut f = std::fs::File::from(nix::fcntl::openat(dir, name, flags, Mode::empty())?);
    let mut buf = Vec::with_capacity(512);
    f.read_to_end(&mut buf)?;
    Ok(buf)
}
