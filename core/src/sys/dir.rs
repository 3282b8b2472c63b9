//! Directory descriptors: one directory opened once, the calls on names directly in it (`openat`, `renameat`, `linkat`, `unlinkat`, `fstatat`), and its listing with `getdents64(2)` (Linux; `fdopendir`/`readdir` of a duplicate elsewhere).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;

use super::mode::{S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use super::open::{open_raw, Walk};

/// A directory opened once (`O_PATH`, the way [`open_raw`] opens, or beneath a cleanup's tree
/// by [`Tree::dir`](super::beneath::Tree::dir)), for the calls on the files directly in it.
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
    /// A directory already opened (`O_PATH|O_DIRECTORY`).
    pub(super) fn from_fd(fd: OwnedFd) -> DirFd {
        DirFd { fd }
    }

    /// Open the directory at `path` (`O_PATH|O_DIRECTORY`, see [`open_raw`]).
    pub(crate) fn open(path: &Path, walk: Walk) -> io::Result<DirFd> {
        let dir = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        Ok(DirFd { fd: open_raw(dir, super::O_PATH | libc::O_DIRECTORY, 0, walk)? })
    }

    /// Open the directory at `path` for listing ([`Self::for_each_entry`]) as well as for the
    /// calls on its names (`O_RDONLY|O_DIRECTORY|O_NOFOLLOW`: a symlink at `path` itself is
    /// `ELOOP`; the path walked as [`open_raw`] walks it with `walk`).
    pub(crate) fn open_listed(path: &Path, walk: Walk) -> io::Result<DirFd> {
        let dir = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        Ok(DirFd { fd: open_raw(dir, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0, walk)? })
    }

    /// The directory holding `path` and the last component's name.
    pub(crate) fn parent_of(path: &Path, walk: Walk) -> io::Result<(DirFd, &std::ffi::OsStr)> {
        let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Ok((DirFd::open(dir, walk)?, name))
    }

    /// `openat(2)` of `name` in this directory with raw `flags` (`O_CLOEXEC` added).
    pub(crate) fn open_file(&self, name: &std::ffi::OsStr, flags: i32) -> io::Result<OwnedFd> {
        let name = component(name)?;
        let nofollow = flags & libc::O_NOFOLLOW != 0;
        let flags = OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC;
        nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::empty()).map_err(|e| super::open::symlink_errno(e.into(), nofollow))
    }

    /// `openat(2)` of `name` in this directory with raw `flags` (`O_CLOEXEC` added) and `mode`
    /// for a file `O_CREAT` makes (minus the umask, as open(2) does).
    pub(crate) fn create_file(&self, name: &std::ffi::OsStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        let name = component(name)?;
        let nofollow = flags & libc::O_NOFOLLOW != 0;
        let flags = OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC;
        nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::from_bits_truncate(mode as _)).map_err(|e| super::open::symlink_errno(e.into(), nofollow))
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
        Ok(Lstat {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
            size: st.st_size as u64,
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
        })
    }

    /// The entries of this directory, each handed to `f` as the bytes of its name and whether it
    /// is a directory, without a copy of the name (see [`for_each_entry`]); it must have been
    /// opened for reading (`O_RDONLY|O_DIRECTORY`, as
    /// [`Tree::listed_dir`](super::beneath::Tree::listed_dir) opens it), not `O_PATH` (`EBADF`).
    pub(crate) fn for_each_entry(&self, f: impl FnMut(&[u8], bool)) -> io::Result<()> {
        for_each_entry(self.fd.as_fd(), f)
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
    /// `st_mtime` and `st_mtime_nsec`.
    pub(crate) mtime: (i64, i64),
}

impl Lstat {
    /// A regular file (not a symlink, FIFO, device, socket or directory).
    pub(crate) fn is_file(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }
    /// A symbolic link itself.
    pub(crate) fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
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
/// `fstatat` is left out. (macOS and FreeBSD, without `getdents64`: `readdir` of a duplicate
/// of `fd`, see the other [`for_each_entry`].)
pub(crate) fn read_dir_fd(fd: BorrowedFd<'_>) -> io::Result<Vec<DirEntry>> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for_each_entry(fd, |name, is_dir| out.push((std::ffi::OsStr::from_bytes(name).to_os_string(), is_dir)))?;
    Ok(out)
}

/// [`read_dir_fd`], each entry handed to `f` (the bytes of its name, whether it is a directory)
/// as it is read, without a copy of the name. Errors: [`read_dir_fd`]'s (`f` may have been
/// called for some entries before one).
#[cfg(target_os = "linux")]
pub(crate) fn for_each_entry(fd: BorrowedFd<'_>, mut f: impl FnMut(&[u8], bool)) -> io::Result<()> {
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
            getdents_all(fd, &mut buf, &mut f)
        }
        // Not reached (nothing here calls back into itself); a fresh buffer would do.
        Err(_) => getdents_all(fd, &mut vec![0u64; 4096], &mut f),
    })
}

/// [`for_each_entry`] with the buffer given.
#[cfg(target_os = "linux")]
fn getdents_all(fd: BorrowedFd<'_>, buf: &mut [u64], f: &mut dyn FnMut(&[u8], bool)) -> io::Result<()> {
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
            return Ok(());
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
                    Ok(st) => st.st_mode as u32 & S_IFMT == S_IFDIR,
                    Err(Errno::ENOENT) => continue,
                    Err(e) => return Err(e.into()),
                },
                _ => false,
            };
            f(name, is_dir);
        }
    }
}

/// The entries of the directory open as `fd` (`O_RDONLY|O_DIRECTORY`), `.` and `..` left out,
/// read through a duplicate of that very descriptor (`fdopendir` takes the duplicate; nothing
/// is opened by name). An entry whose type the file system does not report (`DT_UNKNOWN`) is
/// looked at with `fstatat(AT_SYMLINK_NOFOLLOW)`. macOS and FreeBSD (no `getdents64`).
///
/// Errors: the errno of `dup`, `fdopendir` or `readdir`; an entry that vanished before its
/// `fstatat` is left out.
#[cfg(not(target_os = "linux"))]
pub(crate) fn for_each_entry(fd: BorrowedFd<'_>, mut f: impl FnMut(&[u8], bool)) -> io::Result<()> {
    let dup = fd.try_clone_to_owned()?;
    // SAFETY: `dup` is a descriptor we own; fdopendir takes it over (closedir closes it).
    let dir = unsafe { libc::fdopendir(std::os::fd::IntoRawFd::into_raw_fd(dup)) };
    if dir.is_null() {
        return Err(io::Error::last_os_error());
    }
    /// Closes the stream (and the duplicate) on every way out.
    struct Stream(*mut libc::DIR);
    impl Drop for Stream {
        fn drop(&mut self) {
            // SAFETY: a stream from fdopendir, closed once.
            unsafe { libc::closedir(self.0) };
        }
    }
    let stream = Stream(dir);
    // The duplicate shares the offset with `fd`: start from the beginning, as getdents64 on a
    // freshly opened descriptor does.
    // SAFETY: a valid stream.
    unsafe { libc::rewinddir(stream.0) };
    loop {
        // readdir returns NULL at the end and on error; errno tells them apart.
        nix::errno::Errno::clear();
        // SAFETY: a valid stream; the entry is read before the next readdir.
        let ent = unsafe { libc::readdir(stream.0) };
        if ent.is_null() {
            return match nix::errno::Errno::last_raw() {
                0 => Ok(()),
                e => Err(io::Error::from_raw_os_error(e)),
            };
        }
        // SAFETY: `ent` points at an entry whose `d_name` is NUL-terminated.
        let (name, d_type) = unsafe { (std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()).to_bytes().to_vec(), (*ent).d_type) };
        if name == b"." || name == b".." {
            continue;
        }
        let is_dir = match d_type {
            libc::DT_DIR => true,
            libc::DT_UNKNOWN => match nix::sys::stat::fstatat(fd, std::ffi::OsStr::from_bytes(&name), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(st) => st.st_mode as u32 & S_IFMT == S_IFDIR,
                Err(Errno::ENOENT) => continue,
                Err(e) => return Err(e.into()),
            },
            _ => false,
        };
        f(&name, is_dir);
    }
}
