//! The one way pidguard opens a record file and the one way it takes one away, for both formats
//! (an abx-dl pidfile retired by cleanup or stop, a guard record removed or replaced).
//!
//! A record sits in a directory that the hook's or holder's user may write, so it is opened
//! strictly: without following a symlink (`O_NOFOLLOW`) and without blocking on a FIFO
//! (`O_NONBLOCK`); the caller then `fstat`s the descriptor and reads only a regular file.
//!
//! It is removed by content: compared, renamed aside to a private name, compared again there —
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
    crate::sys::open_raw(path, STRICT, 0).map(fs::File::from)
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
    let mut rnd = [0u8; 12];
    super::atomic::random_bytes(&mut rnd);
    OsString::from(format!(".pg-{}.pidguard-retired", super::atomic::hex(&rnd)))
}

/// Which step of [`remove_by_content`] failed (for the caller's message), and how.
pub(crate) type StepError = (&'static str, io::Error);

/// Remove the record `name` from `dir` only if it still holds what `holds` recognises (see the
/// module doc). `holds` looks at the open file (`fstat`, `pread`, xattrs: never the file
/// position) and returns its `(dev, inode)` when it is a regular file holding the expected
/// record, `None` otherwise; it is asked twice, before the rename and after it. `path` is the
/// record's path, for messages.
///
/// `Ok(true)` when the record was removed; `Ok(false)`, with nothing changed, when it could not
/// be opened, does not hold the record, vanished before the rename, or was replaced in between
/// (then the replacement is put back). Errors: the rename (other than `ENOENT`) or the final
/// unlink failed, with the step's name.
pub(crate) fn remove_by_content(
    dir: &DirFd,
    name: &OsStr,
    path: &Path,
    holds: impl Fn(&fs::File) -> Option<(u64, u64)>,
) -> Result<bool, StepError> {
    let Ok(f) = open_strict_in(dir, name) else { return Ok(false) };
    let Some(id) = holds(&f) else { return Ok(false) };
    crate::sys::fault::point(crate::sys::fault::Point::BeforePidfileRemove);
    let aside = aside_name();
    match dir.rename(name, &aside) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(false),
        Err(e) => return Err(("rename aside", e)),
    }
    // The private name must hold the very inode compared first, and that inode must still hold
    // the record: read again through the descriptor opened for the first compare (one open
    // fewer than opening the private name; the inode is the same, checked by lstat).
    let same_inode = dir.lstat_id(&aside).is_ok_and(|x| x == id);
    if same_inode && holds(&f) == Some(id) {
        return dir.unlink(&aside).map(|()| true).map_err(|e| ("unlink", e));
    }
    // Someone replaced the record between the compare and the rename: give theirs back.
    if let Err(e) = dir.link_no_replace(&aside, name) {
        log::warn!("{}: could not put back a record caught by a concurrent remove: {e}", path.display());
    }
    let _ = dir.unlink(&aside);
    Ok(false)
}

/// How long [`lock_dir`] waits before giving up: the lock is held for one compare and one
/// rename, so only a stopped or hung process holds it this long.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Take `flock(LOCK_EX)` on the open directory `dir` (opened readable: [`DirFd::open_readable`]),
/// waiting at most [`LOCK_WAIT`]; released when `dir` is closed (or its holder exits). The guard
/// format serialises its removers with it: under the lock nothing can change which file a name
/// holds between the compare and the rename, since only removers take a record away and
/// creators never replace an existing name.
///
/// `Ok(true)` when taken; `Ok(false)` when the file system has no `flock` (the rename-aside
/// re-check and put-back are then the only protection); `Err(TimedOut)` after [`LOCK_WAIT`].
pub(crate) fn lock_dir(dir: &DirFd, path: &Path) -> io::Result<bool> {
    let t0 = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        match dir.try_lock_exclusive() {
            Ok(true) => return Ok(true),
            Ok(false) if t0.elapsed() < LOCK_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Ok(false) => return Err(io::Error::from_raw_os_error(libc::ETIMEDOUT)),
            Err(e) => {
                log::debug!("{}: no flock on the directory ({e}); removing without it", path.display());
                return Ok(false);
            }
        }
    }
}
