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
//!
//! macOS and FreeBSD have no `openat2`: there the path is walked one component at a time from
//! the root's descriptor, each with `O_NOFOLLOW`, after refusing `..` (`EXDEV`) — the same
//! guarantee (no symlink anywhere below the root, no escape) by another route
//! ([`open_beneath_walk`], compiled and tested on Linux too).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, FromRawFd};
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
        let fd = open_raw(root, super::O_PATH | libc::O_DIRECTORY, 0, walk)?;
        Ok(Tree { path: root.to_path_buf(), fd, walk })
    }

    /// The path the root was named by.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `path` relative to the root (`.` for the root itself: the directory opened, even if
    /// its name was swapped since), when `path` is spelled under the root's name.
    fn relative<'p>(&self, path: &'p Path) -> Option<std::borrow::Cow<'p, Path>> {
        use std::os::unix::ffi::OsStrExt;
        // The usual spelling, `<root>/<rest>`, by its bytes (`strip_prefix` parses both paths
        // into components: ~0.4 µs per directory of a cleanup). `<rest>` then names what the
        // components after the root's name: the kernel resolves `a//b` and `a/./b` as `a/b`.
        let (p, r) = (path.as_os_str().as_bytes(), self.path.as_os_str().as_bytes());
        if !r.is_empty() && p.len() > r.len() + 1 && p.starts_with(r) && p[r.len()] == b'/' {
            let rest = &p[r.len()..];
            let rest = &rest[rest.iter().position(|&c| c != b'/').unwrap_or(rest.len())..];
            // A trailing `/` or `/.` (the kernel then wants a directory, `strip_prefix` drops
            // them) takes the components' way, as before.
            if !rest.is_empty() && !rest.ends_with(b"/") && !rest.ends_with(b"/.") && rest != b"." {
                return Some(std::borrow::Cow::Borrowed(Path::new(std::ffi::OsStr::from_bytes(rest))));
            }
        }
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
        Ok(DirFd::from_fd(self.open_path(path, super::O_PATH | libc::O_DIRECTORY, 0)?))
    }

    /// [`Self::dir`] opened for reading (`O_RDONLY|O_DIRECTORY`): the one descriptor that both
    /// lists the directory ([`DirFd::entries`]) and names the files in it.
    pub(crate) fn listed_dir(&self, path: &Path) -> io::Result<DirFd> {
        let path = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        Ok(DirFd::from_fd(self.open_path(path, libc::O_RDONLY | libc::O_DIRECTORY, 0)?))
    }
}

/// `struct open_how` of `<linux/openat2.h>`.
#[cfg(target_os = "linux")]
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}
#[cfg(target_os = "linux")]
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
#[cfg(target_os = "linux")]
const RESOLVE_BENEATH: u64 = 0x08;
/// `__NR_openat2` of the generic syscall table (x86_64, aarch64, riscv64, …; Linux ≥ 5.6). The
/// number compiles everywhere and means another call on other systems: Linux only.
#[cfg(target_os = "linux")]
const SYS_OPENAT2: libc::c_long = 437;

/// `openat2(root, rel, flags | O_CLOEXEC, mode, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`;
/// without `openat2` (`ENOSYS`), a plain `openat` of `rel` from the root.
#[cfg(target_os = "linux")]
fn openat2(root: BorrowedFd<'_>, rel: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = rel.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"));
    }
    // The C string on the stack when it fits (no allocation per directory opened).
    let mut stack = [0u8; 512];
    let heap;
    let c: &std::ffi::CStr = if bytes.len() < stack.len() {
        stack[..bytes.len()].copy_from_slice(bytes);
        // Unreachable error: no NUL inside (checked above), one at the end.
        std::ffi::CStr::from_bytes_with_nul(&stack[..=bytes.len()]).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?
    } else {
        // Unreachable error: no NUL inside (checked above).
        heap = std::ffi::CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        &heap
    };
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

/// macOS and FreeBSD: no `openat2`; [`open_beneath_walk`] gives its guarantee.
#[cfg(not(target_os = "linux"))]
fn openat2(root: BorrowedFd<'_>, rel: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    open_beneath_walk(root, rel, flags, mode)
}

/// Open `rel` beneath `root` with no symlink anywhere on the way and no escape, one component
/// at a time: `.` is skipped, `..` (or an absolute path) refused with `EXDEV`, each directory
/// on the way opened with `O_NOFOLLOW|O_DIRECTORY` from the one before, and the last component
/// with the caller's `flags | O_NOFOLLOW | O_CLOEXEC`. A symlink met anywhere is refused with
/// `ELOOP` (FreeBSD's `EMLINK` is reported as `ELOOP`), as `RESOLVE_NO_SYMLINKS` refuses it.
/// An empty path, or one of only `.`, opens the root itself again (`.`).
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub(crate) fn open_beneath_walk(root: BorrowedFd<'_>, rel: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    use std::path::Component;
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => names.push(n),
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return Err(io::Error::from_raw_os_error(libc::EXDEV)),
        }
    }
    let last = names.pop().unwrap_or(std::ffi::OsStr::new("."));
    let at = |dir: BorrowedFd<'_>, name: &std::ffi::OsStr, flags: i32, mode: u32| -> io::Result<OwnedFd> {
        let f = nix::fcntl::OFlag::from_bits_retain(flags | libc::O_NOFOLLOW | libc::O_CLOEXEC);
        nix::fcntl::openat(dir, name, f, nix::sys::stat::Mode::from_bits_retain(mode as libc::mode_t))
            .map_err(|e| super::open::symlink_errno(e.into(), true))
    };
    let mut held: Option<OwnedFd> = None;
    for n in names {
        let dir = held.as_ref().map_or(root, |d| d.as_fd());
        let next = match at(dir, n, super::O_PATH | libc::O_DIRECTORY, 0) {
            // With O_DIRECTORY a symlink may be refused as "not a directory" first: say what it is.
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                let link = nix::sys::stat::fstatat(dir, n, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| st.st_mode as u32 & super::mode::S_IFMT == super::mode::S_IFLNK);
                return Err(if link { io::Error::from_raw_os_error(libc::ELOOP) } else { e });
            }
            r => r?,
        };
        held = Some(next);
    }
    at(held.as_ref().map_or(root, |d| d.as_fd()), last, flags, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_portable_walk_refuses_symlinks_and_escapes() {
        let base = std::env::temp_dir().join(format!("pidguard-beneath-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/a/b")).unwrap();
        std::fs::write(base.join("root/a/b/f"), "in").unwrap();
        std::fs::write(base.join("outside"), "out").unwrap();
        std::os::unix::fs::symlink(base.join("root/a"), base.join("root/link-dir")).unwrap();
        std::os::unix::fs::symlink("b/f", base.join("root/a/link-file")).unwrap();
        let root = open_raw(&base.join("root"), super::super::O_PATH | libc::O_DIRECTORY, 0, Walk::Kernel).unwrap();
        let read = |rel: &str| -> io::Result<String> {
            let fd = open_beneath_walk(root.as_fd(), Path::new(rel), libc::O_RDONLY, 0)?;
            Ok(std::io::read_to_string(std::fs::File::from(fd)).unwrap())
        };
        assert_eq!(read("a/b/f").unwrap(), "in");
        assert_eq!(read("./a/./b/f").unwrap(), "in");
        for (rel, errno) in [("link-dir/b/f", libc::ELOOP), ("a/link-file", libc::ELOOP), ("../outside", libc::EXDEV), ("a/../../outside", libc::EXDEV), ("/etc/hostname", libc::EXDEV)] {
            assert_eq!(read(rel).unwrap_err().raw_os_error(), Some(errno), "{rel}");
        }
        // The root itself, and a directory beneath it, as a directory handle.
        for rel in ["", ".", "a/b"] {
            let d = open_beneath_walk(root.as_fd(), Path::new(rel), super::super::O_PATH | libc::O_DIRECTORY, 0).unwrap();
            assert!(super::super::fd_id(d.as_fd()).is_ok(), "{rel}");
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// The by-bytes way of `relative` names the same file as `strip_prefix` for every spelling
    /// (the kernel resolves `a//b` and `a/./b` as `a/b`), and outside paths stay outside.
    #[test]
    fn a_path_under_the_root_is_the_same_relative_path_by_its_bytes() {
        let base = std::env::temp_dir().join(format!("pidguard-beneath-rel-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/a/b")).unwrap();
        std::fs::write(base.join("root/a/b/f"), "in").unwrap();
        let root_name = base.join("root");
        let tree = Tree::open(&root_name, Walk::Kernel).unwrap();
        let r = root_name.to_str().unwrap();
        for spelled in [format!("{r}/a/b/f"), format!("{r}//a/b/f"), format!("{r}/./a//b/f"), format!("{r}/a/./b/f"), format!("{r}/a/b/f/"), format!("{r}/a/b/f/.")] {
            let rel = tree.relative(Path::new(&spelled)).unwrap();
            let slow = Path::new(&spelled).strip_prefix(&root_name).unwrap().to_path_buf();
            fn named(p: &Path) -> Vec<std::path::Component<'_>> {
                p.components().filter(|c| *c != std::path::Component::CurDir).collect()
            }
            assert_eq!(named(&rel), named(&slow), "{spelled}");
            let fd = tree.open_path(Path::new(&spelled), libc::O_RDONLY, 0).unwrap();
            assert_eq!(std::io::read_to_string(std::fs::File::from(fd)).unwrap(), "in", "{spelled}");
        }
        for same in [r.to_string(), format!("{r}/"), format!("{r}//")] {
            assert_eq!(tree.relative(Path::new(&same)).unwrap().as_os_str(), ".", "{same}");
        }
        for outside in [format!("{r}x/a"), base.display().to_string(), "/etc".to_string()] {
            assert!(tree.relative(Path::new(&outside)).is_none(), "{outside}");
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
}
