//! Resolving a path one component at a time, refusing *unsafe transitions*: the
//! `chase(…, CHASE_SAFE)` rule systemd adopted after CVE-2018-16888, restated here.
//!
//! The kernel's own walk follows every symlink on the way to the last component, so a user who
//! owns a directory on a privileged caller's path (`/srv/u/run`) can make that path lead to
//! another user's files (`/srv/u/run -> /root/run`), and root then stops root's own daemon or
//! truncates root's own log. `O_NOFOLLOW` guards only the last component.
//!
//! `resolve` walks from `/` (absolute paths) or the current directory (relative ones) with
//! `openat(O_PATH|O_NOFOLLOW|O_CLOEXEC)`, reads each symlink itself (`readlinkat` of the link's
//! own descriptor, at most `MAX_HOPS` of them, `ELOOP` beyond), handles `..` as a step to the
//! parent, and refuses a step from a directory owned by a uid `A ≠ 0` to one owned by another
//! uid `B` (`unsafe_transition`):
//! - a plain step (`/srv/u` owned by `u` → `/srv/u/x` owned by root: `u` can rename `x`
//!   away and put anything in its place);
//! - `..` (`/srv/u` → `/srv` owned by root);
//! - a symlink: the link is its owner's claim, so the step is from the link's owner (and, as
//!   systemd checks, from the directory holding it to the link) to the directory the link
//!   leads to once its target is resolved (`/srv/u/run -> /root/run`: uid `u` → uid 0).
//!
//! A root-owned link (`/var/run -> /run`) is safe wherever it leads, and so is a user's link
//! into the user's own tree: only a change of owner away from a non-root owner is refused.
//! The refusal is an [`io::Error`] carrying an [`UnsafeTransition`] (`kind_of_io` maps it to
//! `ErrorKind::Untrusted`), whose text names both ends.

// Outside Linux the walk is not ported (see `resolve`): its helpers and imports stand unused.
#![cfg_attr(not(target_os = "linux"), allow(unused_imports, dead_code))]

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// At most this many symlinks are followed in one resolution (Linux's own limit is 40).
pub(crate) const MAX_HOPS: u32 = 32;

/// The owner of one object (directory or symlink) met on the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    /// `st_uid`.
    pub(crate) uid: u32,
}

/// systemd's rule: a step from `a` to `b` is unsafe when `a` is owned by a uid other than root
/// and `b` by a different uid. (From root's directories anything may be reached: root chose
/// them; from a user's directory only that user's.)
pub(crate) fn unsafe_transition(a: Owner, b: Owner) -> bool {
    a.uid != 0 && a.uid != b.uid
}

/// The refusal of an unsafe transition, carried inside an [`io::Error`] (kind
/// `PermissionDenied`, no errno).
#[derive(Debug)]
pub struct UnsafeTransition {
    /// Where the step started (a directory or a symlink), as reached on the walk.
    pub from: PathBuf,
    /// Its owner.
    pub from_uid: u32,
    /// Where it led.
    pub to: PathBuf,
    /// Its owner.
    pub to_uid: u32,
}

impl fmt::Display for UnsafeTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unsafe path: {} is owned by uid {} and leads to {} owned by uid {} (refusing to follow it)",
            shown(&self.from),
            self.from_uid,
            shown(&self.to),
            self.to_uid
        )
    }
}

impl std::error::Error for UnsafeTransition {}

fn shown(p: &Path) -> String {
    if p.as_os_str().is_empty() {
        ".".to_string()
    } else {
        p.display().to_string()
    }
}

/// Whether `err` is the refusal of an unsafe transition.
pub(crate) fn is_unsafe_transition(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|e| e.is::<UnsafeTransition>())
}

#[cfg(target_os = "linux")]
fn refuse(from: &Path, from_uid: u32, to: &Path, to_uid: u32) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        UnsafeTransition { from: from.to_path_buf(), from_uid, to: to.to_path_buf(), to_uid },
    )
}

/// Where a resolution ended.
#[derive(Debug)]
pub(crate) enum Resolved {
    /// The path names a directory (only when the last component is followed): its `O_PATH`
    /// descriptor.
    Dir(OwnedFd),
    /// The path names `name` in the directory `dir` (`O_PATH`): `name` is not a directory, does
    /// not exist, or was not looked at (last component not followed). Open it with
    /// `openat(dir, name, …|O_NOFOLLOW)`.
    Entry(OwnedFd, OsString),
}

/// One item of the walk's queue: a name to step to, or the check owed to a symlink once its
/// target has been walked.
#[cfg(target_os = "linux")]
enum Item {
    Name(Vec<u8>),
    LinkEnd { link: PathBuf, uid: u32 },
}

#[cfg(target_os = "linux")]
fn open_path(dir: BorrowedFd<'_>, name: &[u8]) -> io::Result<OwnedFd> {
    Ok(nix::fcntl::openat(dir, OsStr::from_bytes(name), OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())?)
}

#[cfg(target_os = "linux")]
fn stat(fd: BorrowedFd<'_>) -> io::Result<(Owner, u32)> {
    let st = nix::sys::stat::fstat(fd)?;
    Ok((Owner { uid: st.st_uid }, st.st_mode & libc::S_IFMT))
}

/// `readlinkat(fd, "")`: the target of the symlink open as `fd` (`O_PATH|O_NOFOLLOW`), the very
/// link that was looked at (no second lookup by name).
#[cfg(target_os = "linux")]
fn readlink_fd(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // Raw libc: nix's `readlinkat` wants a path and adds `AT_EMPTY_PATH` semantics nowhere.
    // SAFETY: `buf` is valid for its length; the empty path is a NUL-terminated C string.
    let n = unsafe { libc::readlinkat(fd.as_raw_fd(), c"".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

#[cfg(target_os = "linux")]
fn components(bytes: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    bytes.split(|&b| b == b'/').filter(|c| !c.is_empty() && *c != b".").map(|c| c.to_vec())
}

/// Resolve `path` from `/` or the current directory, following symlinks itself and refusing
/// unsafe transitions (see the module doc). `follow_last`: whether a symlink in the last
/// component is followed too (and a directory there returned as [`Resolved::Dir`]); without
/// it the last component is returned by name, unexamined.
///
/// Errors: [`UnsafeTransition`] (in an `io::Error` of kind `PermissionDenied`); `ELOOP` after
/// [`MAX_HOPS`] symlinks; `ENOTDIR` when a non-directory is met before the end; `ENOENT`,
/// `EACCES` from the walk; `EINVAL` for a path with a NUL byte or, without `follow_last`, one
/// that ends in no name (`/`, `..`).
#[cfg(target_os = "linux")]
pub(crate) fn resolve(path: &Path, follow_last: bool) -> io::Result<Resolved> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"));
    }
    if bytes.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if let Some(r) = resolve_stable(bytes, follow_last) {
        return Ok(r);
    }
    let absolute = bytes[0] == b'/';
    let mut fd = nix::fcntl::open(if absolute { "/" } else { "." }, OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())?;
    let (mut owner, _) = stat(fd.as_fd())?;
    let mut here = if absolute { PathBuf::from("/") } else { PathBuf::new() };
    let mut queue: VecDeque<Item> = components(bytes).map(Item::Name).collect();
    let mut hops = 0u32;
    loop {
        let Some(item) = queue.pop_front() else {
            // Everything walked and the last step was a directory.
            return if follow_last { Ok(Resolved::Dir(fd)) } else { Err(io::Error::from_raw_os_error(libc::EINVAL)) };
        };
        let name = match item {
            Item::LinkEnd { link, uid } => {
                // The link's target has been walked: the link's owner must also own where it led.
                if unsafe_transition(Owner { uid }, owner) {
                    return Err(refuse(&link, uid, &here, owner.uid));
                }
                continue;
            }
            Item::Name(n) => n,
        };
        let last = !queue.iter().any(|i| matches!(i, Item::Name(_)));
        if name == b".." {
            let parent = open_path(fd.as_fd(), b"..")?;
            let (powner, _) = stat(parent.as_fd())?;
            let mut there = here.clone();
            if !there.pop() && !absolute {
                there.push("..");
            }
            if unsafe_transition(owner, powner) {
                return Err(refuse(&here, owner.uid, &there, powner.uid));
            }
            fd = parent;
            owner = powner;
            here = there;
            continue;
        }
        if last && !follow_last {
            return finish(fd, name, &mut queue, owner, &here);
        }
        let child = match open_path(fd.as_fd(), &name) {
            Ok(c) => c,
            Err(e) if last && e.raw_os_error() == Some(libc::ENOENT) => return finish(fd, name, &mut queue, owner, &here),
            Err(e) => return Err(e),
        };
        let (cowner, ctype) = stat(child.as_fd())?;
        let child_path = here.join(OsStr::from_bytes(&name));
        match ctype {
            libc::S_IFLNK => {
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                // systemd's check: a link owned by someone else in a user's directory.
                if unsafe_transition(owner, cowner) {
                    return Err(refuse(&here, owner.uid, &child_path, cowner.uid));
                }
                let target = readlink_fd(child.as_fd())?;
                if target.is_empty() {
                    return Err(io::Error::from_raw_os_error(libc::ENOENT));
                }
                queue.push_front(Item::LinkEnd { link: child_path, uid: cowner.uid });
                for c in components(&target).collect::<Vec<_>>().into_iter().rev() {
                    queue.push_front(Item::Name(c));
                }
                if target[0] == b'/' {
                    fd = nix::fcntl::open("/", OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())?;
                    owner = stat(fd.as_fd())?.0;
                    here = PathBuf::from("/");
                }
            }
            libc::S_IFDIR => {
                if unsafe_transition(owner, cowner) {
                    return Err(refuse(&here, owner.uid, &child_path, cowner.uid));
                }
                fd = child;
                owner = cowner;
                here = child_path;
            }
            _ if last => return finish(fd, name, &mut queue, owner, &here),
            _ => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        }
    }
}

/// [`resolve`] without a descriptor per directory, where no one but root can change what the
/// path leads to: `None` when that is not shown (the caller walks).
///
/// For an absolute path without `..` or symlinks whose directories are, from `/` down to the
/// grandparent of the last directory, owned by root and writable by no one else (no group or
/// other write bit; or sticky, when the entry followed in it is root's own: in a sticky
/// directory no one else may rename or replace it). Each directory is looked at by its path (`lstat`: a
/// directory, and every step safe by [`unsafe_transition`], or the walk decides and says why);
/// the last one is then opened in one `openat2(RESOLVE_NO_SYMLINKS)` and must be the very
/// directory looked at (`fstat`: same device and inode). The entries on the way can change only
/// by root, so the open passes through the directories looked at, in order; the last
/// directory's own entry may be a user's (a user's directory in `/tmp`), and is proven by its
/// identity instead. The same answer as the walk, in one `lstat` per directory and three calls,
/// instead of three calls per directory.
#[cfg(target_os = "linux")]
fn resolve_stable(bytes: &[u8], follow_last: bool) -> Option<Resolved> {
    if bytes.first() != Some(&b'/') {
        return None;
    }
    let mut names: Vec<&[u8]> = bytes.split(|&b| b == b'/').filter(|c| !c.is_empty() && *c != b".").collect();
    if names.contains(&&b".."[..]) {
        return None;
    }
    let last = if follow_last { None } else { Some(names.pop()?) };
    let mut prefix: Vec<u8> = Vec::with_capacity(bytes.len() + 1);
    prefix.push(b'/');
    let mut looked: Option<nix::sys::stat::FileStat> = None;
    for i in 0..=names.len() {
        if i > 0 {
            if i > 1 {
                prefix.push(b'/');
            }
            prefix.extend_from_slice(names[i - 1]);
        }
        let st = nix::sys::stat::lstat(OsStr::from_bytes(&prefix)).ok()?;
        if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            return None;
        }
        if let Some(parent) = looked {
            if unsafe_transition(Owner { uid: parent.st_uid }, Owner { uid: st.st_uid }) {
                return None;
            }
            // The entry that led here is followed again by the open: only root may change it.
            // The last directory's own entry is proven by its identity instead.
            if i < names.len() && !root_only_entry(parent.st_uid, parent.st_mode, st.st_uid) {
                return None;
            }
        }
        looked = Some(st);
    }
    let looked = looked?;
    #[cfg(test)]
    tests::BEFORE_STABLE_OPEN.with(|h| h.borrow_mut().as_mut().map(|h| h()));
    let fd = open_dir_no_symlinks(&prefix)?;
    let st = nix::sys::stat::fstat(fd.as_fd()).ok()?;
    if (st.st_dev, st.st_ino) != (looked.st_dev, looked.st_ino) {
        return None;
    }
    Some(match last {
        Some(name) => Resolved::Entry(fd, OsString::from_vec(name.to_vec())),
        None => Resolved::Dir(fd),
    })
}

/// Whether only root can change the entry of a directory owned by `uid` with `mode` that leads
/// to something owned by `child_uid`: the directory is root's, and no one else may write it —
/// or it is sticky and the entry is root's too.
fn root_only_entry(uid: u32, mode: u32, child_uid: u32) -> bool {
    uid == 0 && (mode & 0o022 == 0 || (mode & (libc::S_ISVTX as u32) != 0 && child_uid == 0))
}

/// `openat2(AT_FDCWD, path, O_PATH|O_DIRECTORY|O_CLOEXEC, RESOLVE_NO_SYMLINKS)` (Linux ≥ 5.6);
/// `None` when it fails for any reason (no `openat2`: `ENOSYS`, or `EPERM` from an old seccomp
/// profile; a symlink met: `ELOOP`): the caller walks. (The layout of `struct open_how` is
/// `beneath`'s, which opens with `RESOLVE_BENEATH` from a tree's root instead.)
#[cfg(target_os = "linux")]
fn open_dir_no_symlinks(path: &[u8]) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    const SYS_OPENAT2: libc::c_long = 437;
    let c = std::ffi::CString::new(path).ok()?;
    let how = OpenHow { flags: (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u32 as u64, mode: 0, resolve: RESOLVE_NO_SYMLINKS };
    // SAFETY: a NUL-terminated path and a properly sized open_how; the kernel returns a new
    // descriptor we own.
    let r = unsafe { libc::syscall(SYS_OPENAT2, libc::AT_FDCWD as libc::c_long, c.as_ptr(), &how as *const OpenHow, std::mem::size_of::<OpenHow>()) };
    // SAFETY: freshly opened descriptor.
    (r >= 0).then(|| unsafe { OwnedFd::from_raw_fd(r as i32) })
}

/// The end of a walk at `name` in the directory `fd`: the checks still owed to the links whose
/// targets ended here are made against that directory.
#[cfg(target_os = "linux")]
fn finish(fd: OwnedFd, name: Vec<u8>, queue: &mut VecDeque<Item>, owner: Owner, here: &Path) -> io::Result<Resolved> {
    for item in queue.drain(..) {
        if let Item::LinkEnd { link, uid } = item {
            if unsafe_transition(Owner { uid }, owner) {
                return Err(refuse(&link, uid, here, owner.uid));
            }
        }
    }
    Ok(Resolved::Entry(fd, OsString::from_vec(name)))
}

/// macOS and FreeBSD: the walk is not ported (it needs Linux's `O_PATH|O_NOFOLLOW` handle on
/// a symlink and `readlinkat(fd, "")` on it), so a privileged caller's path is refused with
/// [`Unported`](super::Unported) (`ErrorKind::Unsupported`) rather than walked by the kernel,
/// which follows every symlink (CVE-2018-16888's hole). An unprivileged caller never gets here.
#[cfg(not(target_os = "linux"))]
pub(crate) fn resolve(_path: &Path, _follow_last: bool) -> io::Result<Resolved> {
    Err(super::unported("the safe path walk of a privileged (root) caller"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, MetadataExt};

    thread_local! {
        /// Run between the looks and the open of `resolve_stable` (a racing user's moment).
        pub(super) static BEFORE_STABLE_OPEN: std::cell::RefCell<Option<Box<dyn FnMut()>>> = std::cell::RefCell::new(None);
    }

    fn base(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pidguard-chase-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn chown(p: &Path, uid: u32) {
        std::os::unix::fs::lchown(p, Some(uid), Some(uid)).unwrap();
    }

    fn dev_ino(fd: &OwnedFd) -> (u64, u64) {
        let st = nix::sys::stat::fstat(fd.as_fd()).unwrap();
        (st.st_dev as u64, st.st_ino as u64)
    }

    fn meta_id(p: &Path) -> (u64, u64) {
        let m = std::fs::metadata(p).unwrap();
        (m.dev(), m.ino())
    }

    fn entry(r: Resolved) -> (OwnedFd, OsString) {
        match r {
            Resolved::Entry(d, n) => (d, n),
            Resolved::Dir(_) => panic!("expected an entry"),
        }
    }

    fn is_root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    #[test]
    fn rule() {
        let o = |uid| Owner { uid };
        assert!(!unsafe_transition(o(0), o(1000)));
        assert!(!unsafe_transition(o(1000), o(1000)));
        assert!(unsafe_transition(o(1000), o(0)));
        assert!(unsafe_transition(o(1000), o(1001)));
    }

    #[test]
    fn plain_paths_resolve_to_their_parent_and_name() {
        let b = base("plain");
        std::fs::create_dir_all(b.join("a/b")).unwrap();
        let (d, n) = entry(resolve(&b.join("a/./b//f.pid"), false).unwrap());
        assert_eq!(n, "f.pid");
        assert_eq!(dev_ino(&d), meta_id(&b.join("a/b")));
        // `..` steps up.
        let (d, n) = entry(resolve(&b.join("a/b/../f.pid"), false).unwrap());
        assert_eq!((dev_ino(&d), n.as_os_str()), (meta_id(&b.join("a")), OsStr::new("f.pid")));
        // The last component is a directory and followed: Dir.
        match resolve(&b.join("a/b"), true).unwrap() {
            Resolved::Dir(d) => assert_eq!(dev_ino(&d), meta_id(&b.join("a/b"))),
            Resolved::Entry(..) => panic!("expected a directory"),
        }
        assert_eq!(resolve(Path::new("/"), false).unwrap_err().raw_os_error(), Some(libc::EINVAL));
        std::fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn relative_paths_start_at_the_current_directory() {
        // The test process's cwd is the crate directory: `src/lib.rs` exists there.
        let (d, n) = entry(resolve(Path::new("src/lib.rs"), false).unwrap());
        assert_eq!(n, "lib.rs");
        assert_eq!(dev_ino(&d), meta_id(Path::new("src")));
    }

    #[test]
    fn symlinks_absolute_and_relative_are_followed() {
        let b = base("links");
        std::fs::create_dir_all(b.join("real/sub")).unwrap();
        symlink(b.join("real"), b.join("abs")).unwrap();
        symlink("real/sub", b.join("rel")).unwrap();
        symlink("../../real", b.join("real/sub/up")).unwrap();
        for (p, want) in [("abs/f", "real"), ("rel/f", "real/sub"), ("rel/up/sub/f", "real/sub")] {
            let (d, n) = entry(resolve(&b.join(p), false).unwrap());
            assert_eq!((dev_ino(&d), n.as_os_str()), (meta_id(&b.join(want)), OsStr::new("f")), "{p}");
        }
        // The last component: not followed without follow_last (returned by name) …
        let (d, n) = entry(resolve(&b.join("abs"), false).unwrap());
        assert_eq!((dev_ino(&d), n.as_os_str()), (meta_id(&b), OsStr::new("abs")));
        // … followed with it.
        match resolve(&b.join("abs"), true).unwrap() {
            Resolved::Dir(d) => assert_eq!(dev_ino(&d), meta_id(&b.join("real"))),
            Resolved::Entry(..) => panic!("expected a directory"),
        }
        std::fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn symlink_loops_end_in_eloop() {
        let b = base("loop");
        symlink("b", b.join("a")).unwrap();
        symlink("a", b.join("b")).unwrap();
        symlink("self/x", b.join("self")).unwrap();
        assert_eq!(resolve(&b.join("a/f"), false).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        assert_eq!(resolve(&b.join("self/f"), false).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        assert_eq!(resolve(&b.join("a"), true).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        std::fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn a_file_on_the_way_is_enotdir_and_a_missing_last_name_is_an_entry() {
        let b = base("notdir");
        std::fs::write(b.join("file"), "").unwrap();
        assert_eq!(resolve(&b.join("file/x"), false).unwrap_err().raw_os_error(), Some(libc::ENOTDIR));
        assert_eq!(resolve(&b.join("missing/x"), false).unwrap_err().raw_os_error(), Some(libc::ENOENT));
        let (_, n) = entry(resolve(&b.join("missing"), true).unwrap());
        assert_eq!(n, "missing");
        std::fs::remove_dir_all(&b).unwrap();
    }

    /// The layout of the linked-path attack: a user's directory holding a symlink to root's directory (absolute or
    /// relative), and a user's directory holding root's directory.
    #[test]
    fn a_users_link_to_roots_directory_is_refused() {
        if !is_root() {
            eprintln!("skipped: needs root to chown");
            return;
        }
        let b = base("unsafe");
        std::fs::create_dir_all(b.join("rootrun")).unwrap();
        std::fs::create_dir_all(b.join("home/own")).unwrap();
        std::fs::create_dir_all(b.join("home/rootsub")).unwrap();
        symlink(b.join("rootrun"), b.join("home/run")).unwrap();
        symlink("../rootrun", b.join("home/relrun")).unwrap();
        symlink(b.join("home/own"), b.join("home/mine")).unwrap();
        for p in ["home", "home/own", "home/run", "home/relrun", "home/mine"] {
            chown(&b.join(p), 65534);
        }
        // Absolute link: uid 65534's link leads to a root directory.
        let e = resolve(&b.join("home/run/app.pid"), false).unwrap_err();
        assert!(is_unsafe_transition(&e), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("home/run is owned by uid 65534") && msg.contains("rootrun owned by uid 0"), "{msg}");
        // Followed as the last component too.
        assert!(is_unsafe_transition(&resolve(&b.join("home/run"), true).unwrap_err()));
        // Relative link: its `..` leaves the user's directory for root's.
        assert!(is_unsafe_transition(&resolve(&b.join("home/relrun/app.pid"), false).unwrap_err()));
        // A root directory inside a user's directory: the user can swap it.
        let e = resolve(&b.join("home/rootsub/app.pid"), false).unwrap_err();
        assert!(is_unsafe_transition(&e) && e.to_string().contains("rootsub owned by uid 0"), "{e}");
        // `..` out of a user's directory into root's.
        assert!(is_unsafe_transition(&resolve(&b.join("home/own/../../rootrun/app.pid"), false).unwrap_err()));
        // The user's own tree, through the user's own absolute link: fine.
        let (d, _) = entry(resolve(&b.join("home/mine/app.pid"), false).unwrap());
        assert_eq!(dev_ino(&d), meta_id(&b.join("home/own")));
        // Root's link into root's tree (a /var/run -> /run layout): fine.
        symlink(b.join("rootrun"), b.join("varrun")).unwrap();
        let (d, _) = entry(resolve(&b.join("varrun/app.pid"), false).unwrap());
        assert_eq!(dev_ino(&d), meta_id(&b.join("rootrun")));
        // Root's link into a user's directory: root chose it, fine.
        symlink(b.join("home/own"), b.join("touser")).unwrap();
        assert!(resolve(&b.join("touser/app.pid"), false).is_ok());
        // A user's link planted in root's world-writable sticky directory, to root's directory:
        // the link is its owner's claim (what fs.protected_symlinks guards for the kernel's walk).
        std::fs::create_dir_all(b.join("tmp")).unwrap();
        std::fs::set_permissions(b.join("tmp"), std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
        symlink(b.join("rootrun"), b.join("tmp/x")).unwrap();
        chown(&b.join("tmp/x"), 65534);
        assert!(is_unsafe_transition(&resolve(&b.join("tmp/x/app.pid"), false).unwrap_err()));
        // A root link in a user's directory (the user could have made it be anything).
        symlink(b.join("rootrun"), b.join("home/rootlink")).unwrap();
        assert!(is_unsafe_transition(&resolve(&b.join("home/rootlink/app.pid"), false).unwrap_err()));
        std::fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn the_systems_own_links_resolve() {
        // /proc/self is a root-owned link on every Linux; /var/run is one on most.
        let (d, n) = entry(resolve(Path::new("/proc/self/stat"), false).unwrap());
        assert_eq!(n, "stat");
        drop(d);
        if std::fs::symlink_metadata("/var/run").is_ok_and(|m| m.file_type().is_symlink()) {
            assert!(resolve(Path::new("/var/run/x.pid"), false).is_ok());
        }
    }

    #[test]
    fn the_rule_of_root_only_entries() {
        // Root's directory that only root may write: any entry.
        assert!(root_only_entry(0, 0o40755, 1000));
        assert!(root_only_entry(0, 0o40700, 0));
        // Sticky (`/tmp`): root's own entries only.
        assert!(root_only_entry(0, 0o41777, 0));
        assert!(!root_only_entry(0, 0o41777, 1000));
        // Writable by its group or by anyone, without the sticky bit; or a user's directory.
        assert!(!root_only_entry(0, 0o40775, 0));
        assert!(!root_only_entry(0, 0o40777, 0));
        assert!(!root_only_entry(1000, 0o40755, 1000));
    }

    /// The short way is taken where nothing on the way can change but by root, and gives what
    /// the walk gives; anywhere else (a directory others may write, a user's directory above the
    /// last one, a symlink, `..`) the walk decides.
    #[test]
    fn the_stable_short_way_is_taken_only_where_no_one_but_root_can_change_the_way() {
        if !is_root() {
            eprintln!("skipped: needs root to chown");
            return;
        }
        let b = base("stable");
        std::fs::create_dir_all(b.join("r/d")).unwrap();
        let stable = |p: &Path, follow: bool| resolve_stable(p.as_os_str().as_bytes(), follow);
        let (d, n) = entry(stable(&b.join("r/d/f.pid"), false).expect("a root-only way"));
        assert_eq!((dev_ino(&d), n.as_os_str()), (meta_id(&b.join("r/d")), OsStr::new("f.pid")));
        match stable(&b.join("r/d"), true).expect("a root-only way") {
            Resolved::Dir(d) => assert_eq!(dev_ino(&d), meta_id(&b.join("r/d"))),
            Resolved::Entry(..) => panic!("expected a directory"),
        }
        // The last directory may be a user's (its entry proven by its identity).
        chown(&b.join("r/d"), 65534);
        assert!(stable(&b.join("r/d/f.pid"), false).is_some());
        // ... and so may its parent (reached through root's entry; the user's entry to the last
        // directory is proven by its identity).
        std::fs::create_dir_all(b.join("r/d/e/h")).unwrap();
        chown(&b.join("r/d/e"), 65534);
        chown(&b.join("r/d/e/h"), 65534);
        assert!(stable(&b.join("r/d/e/f.pid"), false).is_some());
        // A user's entry followed above the last directory: the walk.
        assert!(stable(&b.join("r/d/e/h/f.pid"), false).is_none());
        assert!(resolve(&b.join("r/d/e/h/f.pid"), false).is_ok(), "a user's own tree is safe to walk");
        // Root's directory that its group or anyone may write, with the entry to the last
        // directory's parent in it: the walk.
        chown(&b.join("r/d"), 0);
        let set = |p: &str, m: u32| std::fs::set_permissions(b.join(p), std::os::unix::fs::PermissionsExt::from_mode(m)).unwrap();
        assert!(stable(&b.join("r/d/e/f.pid"), false).is_some());
        set("r", 0o777);
        assert!(stable(&b.join("r/d/e/f.pid"), false).is_none());
        set("r", 0o775);
        assert!(stable(&b.join("r/d/e/f.pid"), false).is_none());
        // Sticky, with root's entry in it: the short way; with a user's entry: the walk.
        set("r", 0o1777);
        assert!(stable(&b.join("r/d/e/f.pid"), false).is_some());
        chown(&b.join("r/d"), 65534);
        assert!(stable(&b.join("r/d/e/f.pid"), false).is_none());
        set("r", 0o755);
        // Symlinks, `..` and relative paths: the walk.
        symlink(b.join("r"), b.join("link")).unwrap();
        assert!(stable(&b.join("link/d/f.pid"), false).is_none());
        assert!(stable(&b.join("r/d/../d/f.pid"), false).is_none());
        assert!(stable(Path::new("src/lib.rs"), false).is_none());
        std::fs::remove_dir_all(&b).unwrap();
    }

    /// The last directory exchanged for another between the looks and the open: the short way
    /// finds a directory that is not the one looked at and gives up; the walk decides.
    #[test]
    fn a_last_directory_exchanged_after_the_looks_is_not_taken() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let b = base("stable-race");
        std::fs::create_dir_all(b.join("r/d")).unwrap();
        std::fs::create_dir_all(b.join("r/other")).unwrap();
        let (x, y) = (b.join("r/d"), b.join("r/other"));
        BEFORE_STABLE_OPEN.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                std::fs::rename(&x, x.with_extension("old")).unwrap();
                std::fs::rename(&y, &x).unwrap();
            }))
        });
        let r = resolve_stable(b.join("r/d/f.pid").as_os_str().as_bytes(), false);
        BEFORE_STABLE_OPEN.with(|h| *h.borrow_mut() = None);
        assert!(r.is_none(), "a directory other than the one looked at was taken");
        // The walk, now: the directory at the name (the former `other`).
        let (d, _) = entry(resolve(&b.join("r/d/f.pid"), false).unwrap());
        assert_eq!(dev_ino(&d), meta_id(&b.join("r/d")));
        std::fs::remove_dir_all(&b).unwrap();
    }
}
