//! A directory tree that an untrusted user may write, opened once and passed as a value.
//!
//! A cleanup walks a tree that the hooks' user owns, and then opens, renames and unlinks files
//! in it by path. `O_NOFOLLOW` guards only the last component: a user who swaps a directory of
//! the tree for a symlink between the walk and an open would steer root into another tree (and
//! make it judge, signal and finalize a hook there). So the cleanup opens its root once as a
//! [`Tree`] and hands that value to every call that opens a path under it (nix's
//! `openat(dirfd, …)` habit): each such path is resolved with `openat2(2)` from the root's
//! descriptor, with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (Linux ≥ 5.6): no symlink anywhere
//! below the root, no escape. The root itself is opened once, as the caller named it. Where
//! `openat2` is missing (`ENOSYS` before Linux 5.6, `EPERM` from an old container seccomp
//! profile) paths are opened with `openat` from the root. Nothing is registered: a `Tree`
//! changes only the opens it is passed to, on any thread, and nothing else in the process.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use std::io;

use super::dir::DirFd;
use super::open::{open_raw, Walk};

/// The root of a tree opened once (`O_PATH|O_DIRECTORY`), and the path it was named by: the
/// paths under that name are opened beneath this descriptor (see the module doc).
#[derive(Debug)]
pub(crate) struct Tree {
    path: PathBuf,
    fd: OwnedFd,
    /// How a path outside the tree is walked (the caller's choice, as for [`open_raw`]).
    walk: Walk,
}

impl Tree {
    /// Open `root` (following symlinks: the caller named it) as [`open_raw`] opens it with
    /// `walk`, which also walks any path outside the tree given to [`Self::open_path`]. Errors: the open's errno
    /// (`ENOTDIR` when `root` is not a directory, `ENOENT`, `EACCES`, …).
    pub(crate) fn open(root: &Path, walk: Walk) -> io::Result<Tree> {
        let fd = open_raw(root, libc::O_PATH | libc::O_DIRECTORY, 0, walk)?;
        Ok(Tree { path: root.to_path_buf(), fd, walk })
    }

    /// The path the root was named by.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `path` relative to the root (`.` for the root itself: the directory opened, even if
    /// its name was swapped since), when `path` is spelled under the root's name.
    fn relative<'p>(&self, path: &'p Path) -> Option<std::borrow::Cow<'p, Path>> {
        let rel = path.strip_prefix(&self.path).ok()?;
        Some(if rel.as_os_str().is_empty() { std::borrow::Cow::Owned(PathBuf::from(".")) } else { std::borrow::Cow::Borrowed(rel) })
    }

    /// Open `path` with raw `flags` (`O_CLOEXEC` added): beneath the root when it is spelled
    /// under the root's name (no symlink on the way, no escape: `ELOOP`/`EXDEV`); any other path
    /// as [`open_raw`] opens it.
    pub(crate) fn open_path(&self, path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        match self.relative(path) {
            Some(rel) => openat2(self.fd.as_fd(), &rel, flags, mode),
            None => open_raw(path, flags, mode, self.walk),
        }
    }

    /// The directory at `path` as a [`DirFd`] (`O_PATH|O_DIRECTORY`), opened as
    /// [`Self::open_path`] opens.
    pub(crate) fn dir(&self, path: &Path) -> io::Result<DirFd> {
        let path = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        Ok(DirFd::from_fd(self.open_path(path, libc::O_PATH | libc::O_DIRECTORY, 0)?))
    }

    /// [`Self::dir`] opened for reading (`O_RDONLY|O_DIRECTORY`): the one descriptor that both
    /// lists the directory ([`DirFd::entries`]) and names the files in it.
    pub(crate) fn listed_dir(&self, path: &Path) -> io::Result<DirFd> {
        let path = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        Ok(DirFd::from_fd(self.open_path(path, libc::O_RDONLY | libc::O_DIRECTORY, 0)?))
    }
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
fn openat2(root: BorrowedFd<'_>, rel: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
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
