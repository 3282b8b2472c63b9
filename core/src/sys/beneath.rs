//! Resolving paths beneath a directory that an untrusted user may write.
//!
//! A cleanup walks a tree that the hooks' user owns, and then opens, renames and unlinks files
//! in it by path. `O_NOFOLLOW` guards only the last component: a user who swaps a directory of
//! the tree for a symlink between the walk and an open would steer root into another tree (and
//! make it judge, signal and finalize a hook there). While a [`Scope`] is in force, every path
//! of the `sys` layer under its root is resolved with `openat2(2)` from a descriptor of the root,
//! with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (Linux ≥ 5.6): no symlink anywhere below the
//! root, no escape. The root itself is opened once, as the caller named it. Where `openat2` is
//! missing (`ENOSYS` before Linux 5.6, `EPERM` from an old container seccomp profile) paths are
//! opened with `openat` from the root, as before.

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
    let fd = if super::creds::privileged() { super::open::open_chased(root, flags, 0)? } else { super::open::open_direct(root, flags, 0)? };
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
