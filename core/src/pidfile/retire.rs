//! The one way pidguard opens a record file and the one way it takes one away, for both formats
//! (an abx-dl pidfile retired by cleanup or stop, a guard record removed or replaced).
//!
//! A record sits in a directory that the hook's or holder's user may write, so it is opened
//! strictly: without following a symlink (`O_NOFOLLOW`) and without blocking on a FIFO
//! (`O_NONBLOCK`); the caller then `fstat`s the descriptor and reads only a regular file.
//!
//! It is removed (or claimed, see [`Claim`]) by content: compared, renamed aside to a private
//! name, compared again there —
//! it must be the very inode compared first, still holding the same record — and only then
//! unlinked. A record put at the name in between (a new spawn's, a new holder's) is given back
//! with `link(2)`, which never overwrites a record created at the name meanwhile. Every step
//! names one component from the record's directory, opened once.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::sys::DirFd;

/// The flags of the strict opener: read-only, no symlink followed, no blocking on a FIFO.
const STRICT: i32 = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;

/// Open the record file at `path` strictly (see the module doc): by path, beneath the cleanup's
/// root while one is in force. Errors: the `open(2)` errno (`ELOOP` for a symlink, `ENXIO` for a
/// socket, `ENOENT`, `EACCES`, …).
pub(crate) fn open_strict(path: &Path) -> io::Result<fs::File> {
    crate::sys::open_raw(path, STRICT, 0, crate::protect::walk()).map(fs::File::from)
}

/// [`open_strict`] of `name` in the open directory `dir`.
pub(crate) fn open_strict_in(dir: &DirFd, name: &OsStr) -> io::Result<fs::File> {
    dir.open_file(name, STRICT).map(fs::File::from)
}

/// `.pg-<24 hex digits>.pidguard-retired`: the private name a record is renamed to before it is
/// unlinked (cleanup leaves such names out of a hook's `output_files`). 45 bytes whatever the
/// record's name — a name derived from it would exceed `NAME_MAX` (255) for a record name longer
/// than 210 bytes, and such a record could never be removed (`ENAMETOOLONG`). 96 random bits:
/// no collision with another remover's name in the same directory.
fn aside_name() -> OsString {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut rnd = [0u8; 12];
    super::atomic::random_bytes(&mut rnd);
    let mut name = String::with_capacity(45);
    name.push_str(".pg-");
    for b in rnd {
        name.push(DIGITS[(b >> 4) as usize] as char);
        name.push(DIGITS[(b & 15) as usize] as char);
    }
    name.push_str(".pidguard-retired");
    OsString::from(name)
}

/// Which step of [`remove_by_content`] failed (for the caller's message), and how.
pub(crate) type StepError = (&'static str, io::Error);

/// A record taken from its name by [`claim_by_content`]: it sits under a private name in its
/// directory until [`commit`](Claim::commit) unlinks it or [`restore`](Claim::restore) gives
/// it its name back. Of any number of callers that claim one record (several cleanups of one
/// tree, racing removers of one guard record), exactly one holds the claim: the rename aside is
/// the arbiter (the others' rename finds no file, or a file that is not the record).
/// Dropping a claim without either restores the record.
pub(crate) struct Claim<'a> {
    dir: &'a DirFd,
    name: OsString,
    aside: Option<OsString>,
    path: &'a Path,
}

impl Claim<'_> {
    /// Unlink the claimed record for good. Errors: the `unlink(2)` errno.
    pub(crate) fn commit(mut self) -> io::Result<()> {
        let aside = self.aside.take().expect("a claim holds its private name until committed or restored");
        self.dir.unlink(&aside)
    }

    /// Give the claimed record its name back (`link(2)`, which never overwrites a record created
    /// at the name meanwhile), then drop the private name. `true` when the record has its name
    /// again; `false` when the name was taken meanwhile (the claimed record is then unlinked, as
    /// a commit would: the new record is someone else's and is left alone).
    pub(crate) fn restore(mut self) -> bool {
        self.put_back()
    }

    fn put_back(&mut self) -> bool {
        let Some(aside) = self.aside.take() else { return false };
        let back = match self.dir.link_no_replace(&aside, &self.name) {
            Ok(()) => true,
            Err(e) => {
                log::warn!("{}: could not give a claimed record its name back: {e}", self.path.display());
                false
            }
        };
        let _ = self.dir.unlink(&aside);
        back
    }
}

impl Claim<'_> {
    /// The claim without its borrow of the directory, for a caller that commits or restores it
    /// later, with many others ([`Aside`]).
    pub(crate) fn detach(mut self) -> Aside {
        // Unreachable: a claim holds its private name until committed, restored or detached.
        let aside = self.aside.take().expect("a claim holds its private name");
        Aside { name: std::mem::take(&mut self.name), aside }
    }
}

/// A [`Claim`] detached from its directory: the record's name and the private name it sits
/// under. Committed ([`Aside::commit`]) or given back ([`Aside::restore`]) with the directory
/// it was claimed in; its owner must do one of the two (dropped, the record stays under the
/// private name).
#[derive(Debug)]
pub(crate) struct Aside {
    name: OsString,
    aside: OsString,
}

impl Aside {
    /// [`Claim::commit`] in `dir`, the directory it was claimed in.
    pub(crate) fn commit(self, dir: &DirFd) -> io::Result<()> {
        dir.unlink(&self.aside)
    }

    /// [`Claim::restore`] in `dir`, the directory it was claimed in (`path`: the record's path,
    /// for messages).
    pub(crate) fn restore(self, dir: &DirFd, path: &Path) -> bool {
        let mut c = Claim { dir, name: self.name, aside: Some(self.aside), path };
        c.put_back()
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.put_back();
    }
}

/// Remove the record `name` from `dir` only if it still holds what `holds` recognises (see the
/// module doc): [`claim_by_content`], then [`Claim::commit`].
///
/// `Ok(true)` when the record was removed; `Ok(false)`, with nothing changed, when it could not
/// be opened, does not hold the record, vanished before the rename, or was replaced in between
/// (then the replacement is put back). Errors: as [`claim_by_content`], or the final unlink
/// failed, with the step's name.
pub(crate) fn remove_by_content(
    dir: &DirFd,
    name: &OsStr,
    path: &Path,
    holds: impl Fn(&fs::File) -> Option<(u64, u64)>,
    lock: bool,
) -> Result<bool, StepError> {
    match claim_by_content(dir, name, path, holds, lock)? {
        Some(c) => c.commit().map(|()| true).map_err(|e| ("unlink", e)),
        None => Ok(false),
    }
}

/// Take the record `name` away from its name in `dir` if it still holds what `holds`
/// recognises, keeping it under a private name (see [`Claim`]). `holds` looks at the open file
/// (`fstat`, `pread`, xattrs: never the file position) and returns its `(dev, inode)` when it
/// is a regular file holding the expected record, `None` otherwise; it is asked twice, before
/// the rename and after it. `path` is the record's path, for messages.
///
/// With `lock`, the claimers of one record take turns through `flock(2)` on **the record file
/// itself**, opened read-only and without following a link (see [`lock_file`]): under the
/// lock the name is checked to still hold the inode compared, then renamed aside. Only a
/// process that can open the record can take that lock — its owner and root, for a guard
/// record (mode `0600`) — so no other user can block its owner's removals (a lock on the
/// directory could be taken by anyone who can list it). Without the lock (abx-dl pidfiles,
/// which a hook's user may make readable to all), the rename aside and the re-check are the
/// protection.
///
/// `Ok(Some(claim))` when this caller holds the record; `Ok(None)`, with nothing changed, when
/// it could not be opened, does not hold the record, vanished before the rename, or was replaced
/// in between (then the replacement is put back). Errors: `("lock", ETIMEDOUT)` when the
/// record's lock stayed taken for [`LOCK_WAIT`]; the rename (other than `ENOENT`) failed.
pub(crate) fn claim_by_content<'a>(
    dir: &'a DirFd,
    name: &OsStr,
    path: &'a Path,
    holds: impl Fn(&fs::File) -> Option<(u64, u64)>,
    lock: bool,
) -> Result<Option<Claim<'a>>, StepError> {
    let Ok(f) = open_strict_in(dir, name) else { return Ok(None) };
    let Some(id) = holds(&f) else { return Ok(None) };
    if lock && lock_file(&f, path).map_err(|e| ("lock", e))? {
        // Another claimer may have held the lock meanwhile and taken this very file away.
        if dir.lstat_id(name).ok() != Some(id) {
            return Ok(None);
        }
    }
    crate::sys::fault::point(crate::sys::fault::Point::BeforePidfileRemove);
    let aside = aside_name();
    match dir.rename(name, &aside) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(("rename aside", e)),
    }
    let mut claim = Claim { dir, name: name.to_os_string(), aside: Some(aside), path };
    // The private name must hold the very inode compared first, and that inode must still hold
    // the record: read again through the descriptor opened for the first compare (one open
    // fewer than opening the private name; the inode is the same, checked by lstat).
    let same_inode = claim.aside.as_deref().is_some_and(|a| dir.lstat_id(a).is_ok_and(|x| x == id));
    if same_inode && holds(&f) == Some(id) {
        // The lock (if any) goes with `f` on return: the record no longer has its name, so
        // the next claimer's check above finds it gone.
        return Ok(Some(claim));
    }
    // Someone replaced the record between the compare and the rename: give theirs back.
    claim.put_back();
    Ok(None)
}

/// [`claim_by_content`] of the record `name` in `dir` judged a moment ago through `f`, still
/// open: the judgement's read is the compare, so the record is not opened and read again before
/// the rename. The name must still hold the inode judged, unchanged as far as its `lstat` tells
/// (`unchanged(lstat)`: same inode, type, size and mtime), or nothing is touched; it is then
/// renamed aside, the private name must hold that very inode (`lstat`), and the inode must still
/// hold the record (`recheck`, through `f`, given that `lstat`: no `fstat`). For a caller that
/// retires what it has just judged (a cleanup finishing a directory during its walk); one that
/// waited in between (a batch that signalled first) compares again with [`claim_by_content`].
///
/// `Ok(Some(claim))` when this caller holds the record; `Ok(None)`, with nothing changed, when
/// the name no longer exists (another claimer took it) or holds another file or another record
/// (then, if it changed between the two looks, that file is put back). Errors: the rename
/// (other than `ENOENT`) failed.
pub(crate) fn claim_judged<'a>(
    dir: &'a DirFd,
    name: &OsStr,
    path: &'a Path,
    f: &fs::File,
    unchanged: impl Fn(&crate::sys::Lstat) -> bool,
    recheck: impl Fn(&fs::File, &crate::sys::Lstat) -> bool,
) -> Result<Option<Claim<'a>>, StepError> {
    if !dir.lstat(name).is_ok_and(|st| unchanged(&st)) {
        return Ok(None);
    }
    crate::sys::fault::point(crate::sys::fault::Point::BeforePidfileRemove);
    let aside = aside_name();
    match dir.rename(name, &aside) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(("rename aside", e)),
    }
    let mut claim = Claim { dir, name: name.to_os_string(), aside: Some(aside), path };
    let st = claim.aside.as_deref().and_then(|a| dir.lstat(a).ok());
    if st.is_some_and(|st| unchanged(&st) && recheck(f, &st)) {
        return Ok(Some(claim));
    }
    // Someone replaced the record between the look and the rename: give theirs back.
    claim.put_back();
    Ok(None)
}

/// How long [`lock_file`] waits before giving up: the lock is held for one compare and one
/// rename, so only a stopped or hung process holds it this long.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Take `flock(LOCK_EX)` on the open record `f`, waiting at most [`LOCK_WAIT`]; released when
/// `f` is closed (or its holder exits).
///
/// `Ok(true)` when taken; `Ok(false)` when the file system has no `flock` (the rename-aside
/// re-check and put-back are then the only protection); `Err(ETIMEDOUT)` after [`LOCK_WAIT`].
pub(crate) fn lock_file(f: &fs::File, path: &Path) -> io::Result<bool> {
    use std::os::fd::AsFd;
    let t0 = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        match crate::sys::try_flock_exclusive(f.as_fd()) {
            Ok(true) => return Ok(true),
            Ok(false) if t0.elapsed() < LOCK_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Ok(false) => return Err(io::Error::from_raw_os_error(libc::ETIMEDOUT)),
            Err(e) => {
                log::debug!("{}: no flock on the record ({e}); removing without it", path.display());
                return Ok(false);
            }
        }
    }
}
