//! cgroup v2: the mount, the caller's own cgroup, and the files of one cgroup directory read and
//! written through its descriptor (`cgroup.procs`, `cgroup.events`, `cgroup.kill`,
//! `cgroup.freeze`). Facts from the kernel's `Documentation/admin-guide/cgroup-v2.rst`.
//!
//! A cgroup directory's inode number is its cgroup id (64-bit, never reused within a boot);
//! once a cgroup is removed, its directory descriptor answers `ENODEV` (or `ENOENT`) and can
//! never name another cgroup, so every operation here goes through a descriptor opened once.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::errno::cvt;

/// Where the cgroup2 file system is mounted in our mount namespace: the first `cgroup2` line
/// of `/proc/self/mountinfo` whose root is `/` (a bind mount of a subtree would make our own
/// cgroup path, read from `/proc/self/cgroup`, point elsewhere). Never assumed: a hybrid host
/// mounts it at `/sys/fs/cgroup/unified`, a pure v2 host at `/sys/fs/cgroup`.
///
/// Errors: `ENOENT` when no cgroup2 mount is visible (cgroup v1 only, or hidden by a mount
/// namespace); the errno of reading `/proc/self/mountinfo`.
pub(crate) fn cgroup2_mount() -> io::Result<PathBuf> {
    let text = std::fs::read(Path::new("/proc/self/mountinfo"))?;
    parse_cgroup2_mount(&text).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

/// The cgroup2 mount point in a `mountinfo` text (see [`cgroup2_mount`]). Fields: id, parent,
/// major:minor, root, mount point, options, optional fields…, `-`, fs type, source, super
/// options; the mount point has `\040`-style octal escapes.
pub(crate) fn parse_cgroup2_mount(text: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    for line in text.split(|&b| b == b'\n') {
        let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == b"-") else { continue };
        if fields.get(dash + 1) != Some(&&b"cgroup2"[..]) || fields.len() < 5 || fields[3] != b"/" {
            continue;
        }
        return Some(PathBuf::from(std::ffi::OsString::from_vec(unescape_octal(fields[4]))));
    }
    None
}

fn unescape_octal(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' && i + 4 <= s.len() && s[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((s[i + 1] - b'0') * 64 + (s[i + 2] - b'0') * 8 + (s[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// Our own cgroup v2 path (relative to the cgroup2 mount, starting with `/`), from the `0::`
/// line of `/proc/self/cgroup`. Errors: `ENOENT` when there is no such line (no cgroup2).
pub(crate) fn own_cgroup() -> io::Result<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim_end().to_string())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

fn cstr(name: &str) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Open the cgroup directory at `path` (absolute) with `O_DIRECTORY | O_NOFOLLOW`.
pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    let fd = cvt(unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) } as i64)?;
    // SAFETY: a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether the directory `fd` is on a cgroup2 file system (`fstatfs`'s `f_type` is
/// `CGROUP2_SUPER_MAGIC`). A cgroup2 mount point listed in `/proc/self/mountinfo` can be covered
/// by a later mount (a container's tmpfs, a mount namespace hiding it): a path below it then
/// names another file system, where a missing directory proves nothing about a cgroup.
#[cfg(target_os = "linux")]
pub(crate) fn is_cgroup2(fd: BorrowedFd<'_>) -> io::Result<bool> {
    const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
    Ok(nix::sys::statfs::fstatfs(fd)?.filesystem_type().0 as i64 == CGROUP2_SUPER_MAGIC)
}

/// No cgroup2 outside Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn is_cgroup2(_fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(false)
}

/// `mkdirat(dir, name, 0755)`: a new child cgroup.
pub(crate) fn mkdir_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and NUL-terminated name.
    cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) } as i64).map(drop)
}

/// `unlinkat(dir, name, AT_REMOVEDIR)`: remove a child cgroup (the kernel refuses a populated
/// one with `EBUSY`).
pub(crate) fn rmdir_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and NUL-terminated name.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) } as i64).map(drop)
}

/// Open `name` in the cgroup directory `dir` (no symlink followed) with `flags | O_CLOEXEC`.
pub(crate) fn open_at(dir: BorrowedFd<'_>, name: &str, flags: i32) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and NUL-terminated name.
    let fd = cvt(unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOFOLLOW) } as i64)?;
    // SAFETY: a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `fstat` of a descriptor: (inode, owner uid). For a cgroup2 directory the inode is the
/// cgroup id.
pub(crate) fn ino_uid(fd: BorrowedFd<'_>) -> io::Result<(u64, u32)> {
    let st = nix::sys::stat::fstat(fd)?;
    Ok((st.st_ino, st.st_uid))
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`'s inode: the id of a child cgroup by name.
pub(crate) fn child_ino(dir: BorrowedFd<'_>, name: &str) -> io::Result<u64> {
    let st = nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
    Ok(st.st_ino)
}

/// The names of the child cgroups of the cgroup directory `dir` (its subdirectories), read
/// through a fresh descriptor of `dir` itself (`openat(dir, ".")`, `getdents64`).
///
/// Errors: the errno of the open or of `getdents64`.
pub(crate) fn child_cgroups(dir: BorrowedFd<'_>) -> io::Result<Vec<String>> {
    let d = open_at(dir, ".", libc::O_RDONLY | libc::O_DIRECTORY)?;
    Ok(super::dir::read_dir_fd(d.as_fd())?.into_iter().filter(|(_, is_dir)| *is_dir).map(|(n, _)| n.to_string_lossy().into_owned()).collect())
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: (owner uid, permission bits) of a file in a
/// cgroup directory (`cgroup.procs`, whose owner and mode say who may move processes in).
pub(crate) fn owner_mode_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<(u32, u32)> {
    let st = nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
    Ok((st.st_uid, u32::from(st.st_mode) & 0o7777))
}

/// `fstat` of a descriptor: (owner uid, permission bits).
pub(crate) fn owner_mode(fd: BorrowedFd<'_>) -> io::Result<(u32, u32)> {
    let st = nix::sys::stat::fstat(fd)?;
    Ok((st.st_uid, u32::from(st.st_mode) & 0o7777))
}

/// Read a whole small cgroup file from offset 0 (`pread`, so a kept descriptor can be read
/// again: `cgroup.events` is re-read after each notification).
pub(crate) fn read_file(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: `buf` is writable for its length; `fd` is valid for the call.
        let n = cvt(unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), out.len() as libc::off_t) } as i64)? as usize;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Write `text` to a cgroup control file in one `write(2)` (each write is one command).
pub(crate) fn write_file(fd: BorrowedFd<'_>, text: &[u8]) -> io::Result<()> {
    // SAFETY: `text` is readable for its length; `fd` is valid for the call.
    let n = cvt(unsafe { libc::write(fd.as_raw_fd(), text.as_ptr().cast(), text.len()) } as i64)?;
    if n as usize != text.len() {
        return Err(io::Error::from_raw_os_error(libc::EIO));
    }
    Ok(())
}

/// The pids in `cgroup.procs` text (one decimal per line).
pub(crate) fn parse_procs(text: &[u8]) -> Vec<i32> {
    text.split(|&b| b == b'\n').filter_map(|l| std::str::from_utf8(l).ok()?.trim().parse().ok()).filter(|&p: &i32| p > 0).collect()
}

/// The `populated` field of `cgroup.events` text; `None` when it is not there.
pub(crate) fn parse_populated(text: &[u8]) -> Option<bool> {
    let s = std::str::from_utf8(text).ok()?;
    s.lines().find_map(|l| l.strip_prefix("populated ")).map(|v| v.trim() == "1")
}

/// `poll(2)` for the given (descriptor, events) pairs — `POLLPRI` for a cgroup's
/// `cgroup.events` (the kernel signals a change of a cgroup's events file with `POLLPRI`, not
/// `POLLIN`), `POLLIN` for a pidfd — until one is ready or `timeout` passes. Which are ready
/// (`POLLERR`/`POLLHUP` count as ready).
pub(crate) fn poll_any(fds: &[(BorrowedFd<'_>, i16)], timeout: std::time::Duration) -> io::Result<Vec<bool>> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut p: Vec<PollFd<'_>> = fds.iter().map(|(f, e)| PollFd::new(f.as_fd(), PollFlags::from_bits_truncate(*e))).collect();
    let t = PollTimeout::try_from(timeout.as_micros().div_ceil(1000).min(i32::MAX as u128)).unwrap_or(PollTimeout::MAX);
    loop {
        match poll(&mut p, t) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => {
                let ready = PollFlags::POLLIN | PollFlags::POLLPRI | PollFlags::POLLHUP | PollFlags::POLLERR;
                return Ok(p.iter().map(|x| x.revents().is_some_and(|r| r.intersects(ready))).collect());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_finds_the_cgroup2_mount_and_unescapes_it() {
        let text = b"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(parse_cgroup2_mount(text), Some(PathBuf::from("/sys/fs/cgroup/unified")));
        let spaced = b"41 31 0:38 / /mnt/a\\040b rw shared:5 - cgroup2 none rw\n";
        assert_eq!(parse_cgroup2_mount(spaced), Some(PathBuf::from("/mnt/a b")));
        // A bind mount of a subtree is not the mount our own cgroup path is relative to.
        assert_eq!(parse_cgroup2_mount(b"41 31 0:38 /sub /x rw - cgroup2 none rw\n"), None);
        assert_eq!(parse_cgroup2_mount(b"32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"), None);
    }

    #[test]
    fn procs_and_events_parse() {
        assert_eq!(parse_procs(b"12\n345\n\n"), vec![12, 345]);
        assert_eq!(parse_populated(b"populated 1\nfrozen 0\n"), Some(true));
        assert_eq!(parse_populated(b"populated 0\nfrozen 0\n"), Some(false));
        assert_eq!(parse_populated(b"frozen 0\n"), None);
    }
}

/// How deep below a scope's leaf child cgroups are followed, and how many are read at most:
/// beyond either, reading the scope fails (`E2BIG`) rather than leave members out.
const SUBTREE_DEPTH: usize = 16;
const SUBTREE_CGROUPS: usize = 1024;

/// The pids in `cgroup.procs` of the cgroup directory `dir` and of every cgroup below it (child
/// cgroups a process inside made), each cgroup read through a descriptor of its own opened
/// below `dir` (no path is resolved twice). A child cgroup removed while it is read
/// (`ENOENT`/`ENODEV`) holds no process.
///
/// Errors: the errno of any read; `E2BIG` beyond [`SUBTREE_DEPTH`] levels or
/// [`SUBTREE_CGROUPS`] cgroups (a read that would leave members out is no answer).
pub(crate) fn subtree_procs(dir: BorrowedFd<'_>) -> io::Result<Vec<i32>> {
    fn go(dir: BorrowedFd<'_>, depth: usize, out: &mut Vec<i32>, budget: &mut usize) -> io::Result<()> {
        let f = open_at(dir, "cgroup.procs", libc::O_RDONLY)?;
        out.extend(parse_procs(&read_file(f.as_fd())?));
        drop(f);
        let kids = child_cgroups(dir)?;
        if kids.is_empty() {
            return Ok(());
        }
        if depth >= SUBTREE_DEPTH {
            return Err(io::Error::from_raw_os_error(libc::E2BIG));
        }
        for name in kids {
            if *budget == 0 {
                return Err(io::Error::from_raw_os_error(libc::E2BIG));
            }
            *budget -= 1;
            let gone = |e: &io::Error| matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENODEV));
            match open_at(dir, &name, libc::O_RDONLY | libc::O_DIRECTORY) {
                Ok(d) => match go(d.as_fd(), depth + 1, out, budget) {
                    Err(e) if gone(&e) => {}
                    r => r?,
                },
                Err(e) if gone(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    let mut budget = SUBTREE_CGROUPS;
    go(dir, 0, &mut out, &mut budget)?;
    Ok(out)
}

/// Remove every empty cgroup below the cgroup directory `dir`, deepest first (the kernel
/// refuses a populated one with `EBUSY`, and one with children with `ENOTEMPTY`; those stay).
/// Whether none is left. Bounded as [`subtree_procs`] is.
pub(crate) fn remove_empty_below(dir: BorrowedFd<'_>) -> bool {
    fn go(dir: BorrowedFd<'_>, depth: usize) -> bool {
        let Ok(kids) = child_cgroups(dir) else { return false };
        let mut all = true;
        for name in kids {
            let Ok(d) = open_at(dir, &name, libc::O_RDONLY | libc::O_DIRECTORY) else {
                all = false;
                continue;
            };
            if depth + 1 < SUBTREE_DEPTH && go(d.as_fd(), depth + 1) {
                drop(d);
                match rmdir_at(dir, &name) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                    Err(_) => all = false,
                }
            } else {
                all = false;
            }
        }
        all
    }
    go(dir, 0)
}
