//! Creating, reading and removing one guard pidfile.

use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::entry::{decode, encode, Entry, MAX_BYTES};
use crate::error::{Error, ErrorKind, Result};
use crate::pidfile::{atomic, retire};
use crate::sys::{self, procfs, DirFd};

/// Mode of a guard pidfile: the owner alone may read or write it.
pub const FILE_MODE: u32 = 0o600;
/// Mode of a parent directory that [`create`] makes.
pub const DIR_MODE: u32 = 0o700;

/// A record as it was read: the entry, the exact bytes, and the file's identity.
#[derive(Clone, Debug)]
pub(crate) struct Raw {
    pub entry: Entry,
    pub bytes: Vec<u8>,
    pub owner_uid: u32,
}

/// Create the guard pidfile `path` holding `encode(entry)`, failing if anything is there.
///
/// The file appears fully written or not at all, and of any number of racing creators exactly
/// one succeeds: the content is written to an unnamed file (`O_TMPFILE`, mode `0600` whatever
/// the umask), `fsync`ed, then given its name with `link(2)` (`AT_EMPTY_PATH`, else through
/// `/proc/self/fd`; with neither, as without `O_TMPFILE` below), which fails with `EEXIST` when the
/// name is taken — by a file, a directory or a symlink alike (nothing at `path` is followed or
/// touched). On file systems without `O_TMPFILE` a named temporary beside the target is linked
/// and unlinked instead (then the file has two links for a moment, and a concurrent
/// [`read`] may refuse it with `HardLinked`). A missing parent directory is created with mode
/// `0700` (exactly, whatever the umask; existing directories are left as they are).
/// `create` never deletes or changes an existing file.
///
/// Errors: `InvalidArgument` when `entry` fails [`Entry::validate`]; `AlreadyExists` when
/// `path` exists; `NotFound`, `PermissionDenied` or `Io` from the file system. Nothing is left
/// behind on failure (a parent directory made for it may stay).
pub fn create(path: &Path, entry: &Entry) -> Result<()> {
    entry.validate()?;
    create_bytes(path, &encode(entry))
}

pub(crate) fn create_bytes(path: &Path, content: &[u8]) -> Result<()> {
    let dir = parent_of(path);
    make_parent(path, &dir)?;
    let via_temp = || {
        atomic::write_via_temp(path, content, FILE_MODE, |_| Ok(()), |tmp, target| {
            let r = sys::link_no_replace(tmp, target, crate::protect::walk());
            let _ = sys::unlink_path(tmp, crate::protect::walk());
            r
        })
    };
    match sys::open_tmpfile(&dir, FILE_MODE, crate::protect::walk()) {
        Ok(fd) => {
            fill(path, &fd, content)?;
            match sys::link_fd(fd.as_fd(), path, crate::protect::walk()) {
                Ok(()) => Ok(()),
                // Neither `AT_EMPTY_PATH` nor `/proc/self/fd` (a mount namespace without
                // /proc): the unnamed file is dropped, and a named temporary is linked.
                Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => via_temp(),
                Err(e) => Err(Error::io_at(path, "link", &e)),
            }
        }
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)) => via_temp(),
        Err(e) => Err(Error::io_at(path, "create", &e)),
    }
}

fn fill(path: &Path, fd: &OwnedFd, content: &[u8]) -> Result<()> {
    // The mode given to open() passes through the umask; set it exactly.
    sys::fchmod(fd.as_fd(), FILE_MODE).map_err(|e| Error::io_at(path, "fchmod", &e))?;
    let mut f = fs::File::from(fd.try_clone().map_err(|e| Error::io_at(path, "dup", &e))?);
    f.write_all(content).map_err(|e| Error::io_at(path, "write", &e))?;
    f.sync_all().map_err(|e| Error::io_at(path, "fsync", &e))
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Create the missing directories above `path`, each with mode exactly 0700. A directory that
/// a racing creator made first is fine (and is that creator's to chmod).
pub(crate) fn make_parent(path: &Path, dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut cur = dir;
    while !cur.exists() {
        missing.push(cur.to_path_buf());
        match cur.parent() {
            Some(p) if !p.as_os_str().is_empty() => cur = p,
            _ => break,
        }
    }
    for d in missing.iter().rev() {
        // Made from its parent's descriptor (walked as every open is: see `sys::open_raw`).
        match sys::mkdir_path(d, DIR_MODE, crate::protect::walk()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io_at(path, &format!("mkdir {}", d.display()), &e)),
        }
    }
    Ok(())
}

/// Read and check the guard pidfile at `path`.
///
/// The file is opened with `O_NOFOLLOW|O_NONBLOCK` (a symlink is refused, a FIFO cannot block
/// the reader) and must be a regular file with exactly one link, no permission bits for group
/// or others, and at most 4096 bytes; its content must [`decode`] with a pid no
/// larger than 4194304 (`PID_MAX_LIMIT`). The start token is not judged here (see [`check`](crate::guard::check)).
///
/// Errors, each its own kind (families in brackets): `NotFound` when there is no file;
/// `Symlink`, `IsDirectory`, `NotRegularFile` (FIFO, socket, device), `HardLinked`,
/// `InsecureMode`, `TooLarge` [`Untrusted`]; `InvalidJson`, `BadPid`, `BadToken` [`Malformed`];
/// `PermissionDenied` or `Io` from the file system. A refusal never reads as "the holder is
/// dead".
///
/// [`Untrusted`]: crate::ErrorKind::Untrusted
/// [`Malformed`]: crate::ErrorKind::Malformed
pub fn read(path: &Path) -> Result<Entry> {
    read_raw(path).map(|r| r.entry)
}

pub(crate) fn read_raw(path: &Path) -> Result<Raw> {
    let mut f = retire::open_strict(path).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => Error::at(ErrorKind::Symlink, path, "is a symlink; not followed"),
        Some(libc::ENXIO) => Error::at(ErrorKind::NotRegularFile, path, "is a socket or device, not a regular file"),
        _ => Error::io_at(path, "open", &e),
    })?;
    let meta = f.metadata().map_err(|e| Error::io_at(path, "fstat", &e))?;
    check_meta(path, &meta)?;
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_BYTES as u64) as usize);
    Read::by_ref(&mut f).take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|e| Error::io_at(path, "read", &e))?;
    if bytes.len() > MAX_BYTES {
        return Err(Error::at(ErrorKind::TooLarge, path, format_args!("is larger than {MAX_BYTES} bytes")));
    }
    let entry = decode(&bytes).map_err(|e| Error::at(e.kind(), path, e.message()))?;
    if entry.pid > procfs::pid_max() {
        return Err(Error::at(ErrorKind::BadPid, path, format_args!("pid {} is above 4194304, the kernel's limit: no process can have it", entry.pid)));
    }
    Ok(Raw { entry, bytes, owner_uid: meta.uid() })
}

fn check_meta(path: &Path, meta: &fs::Metadata) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let ft = meta.file_type();
    if ft.is_dir() {
        return Err(Error::at(ErrorKind::IsDirectory, path, "is a directory, not a regular file"));
    }
    if !ft.is_file() {
        let what = if ft.is_fifo() { "a FIFO" } else if ft.is_socket() { "a socket" } else { "a device" };
        return Err(Error::at(ErrorKind::NotRegularFile, path, format_args!("is {what}, not a regular file")));
    }
    if meta.nlink() == 0 {
        // Opened, then removed (a concurrent remove or replace): as if it had not been there.
        return Err(Error::at(ErrorKind::NotFound, path, "was removed while it was being read"));
    }
    if meta.nlink() != 1 {
        return Err(Error::at(
            ErrorKind::HardLinked,
            path,
            format_args!("has {} links; another name for it may be someone else's", meta.nlink()),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(Error::at(
            ErrorKind::InsecureMode,
            path,
            format_args!("mode {:04o} lets group or others at it (want 0600)", meta.mode() & 0o7777),
        ));
    }
    if meta.len() > MAX_BYTES as u64 {
        return Err(Error::at(ErrorKind::TooLarge, path, format_args!("is {} bytes, more than {MAX_BYTES}", meta.len())));
    }
    Ok(())
}

/// Remove the guard pidfile `path` only if it holds exactly `encode(entry)`; `Ok(true)` when it
/// was removed.
///
/// Safe against a concurrent [`replace`]: removers of one record take turns through `flock(2)`
/// on the record file itself (held for one check and one rename; the file is mode `0600`, so
/// only its owner and root can open it to take that lock — no other user can block its
/// removal), and the file is compared, renamed aside to a private name, re-checked (it must
/// still be the very file that was compared), and only then unlinked; if it changed in between
/// — possible only where the file system has no flock — it is put back under `path` with
/// `link(2)`, which never overwrites.
///
/// `Ok(false)`, with nothing changed, when the file is missing, holds other bytes, or is not a
/// regular file. Errors: `TimedOut` when the record's lock stays taken for 10 s (a stopped
/// process holds it); `PermissionDenied` or `Io` from the rename or unlink.
pub fn remove(path: &Path, entry: &Entry) -> Result<bool> {
    remove_bytes(path, &encode(entry))
}

/// `(dev, inode)` of the open file `f` when it is a regular file holding exactly `expected`
/// (`fstat`, one `pread` of at most `MAX_BYTES + 1` bytes).
fn holds_bytes(f: &fs::File, expected: &[u8]) -> Option<(u64, u64)> {
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = crate::pidfile::read_bounded(f, meta.len(), MAX_BYTES as u64 + 1).ok()?;
    (bytes == expected).then(|| (meta.dev(), meta.ino()))
}

pub(crate) fn remove_bytes(path: &Path, expected: &[u8]) -> Result<bool> {
    // The directory is opened once: the compare, the lock, the rename aside, the re-check and
    // the unlink all go through it.
    let Some(name) = path.file_name() else { return Ok(false) };
    let dir = match DirFd::open(&parent_of(path), crate::protect::walk()) {
        Ok(d) => d,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(false),
        Err(e) => return Err(Error::io_at(path, "open the directory", &e)),
    };
    // Removers of one record take turns through a lock on the record file itself (mode 0600:
    // only its owner and root can open it, so no other user can hold it). Under it nothing can
    // change which file `path` names between the check and the rename: only removers take a
    // file away, and they hold the lock of the file they take; creators cannot replace an
    // existing name. Without it, a second remover that compared the same record could rename
    // aside the record a first one had just created in its place. Files are never written in
    // place once they have a name, so the inode compared keeps these bytes.
    retire::remove_by_content(&dir, name, path, |f| holds_bytes(f, expected), true).map_err(|(step, e)| {
        if e.raw_os_error() == Some(libc::ETIMEDOUT) {
            Error::at(
                ErrorKind::TimedOut,
                path,
                format_args!("the record's lock was held for {:?} (only its owner or root can take it)", retire::LOCK_WAIT),
            )
        } else {
            Error::io_at(path, step, &e)
        }
    })
}

/// Retire `old` by content, then [`create`] `new` in its place.
///
/// If the file no longer holds exactly `encode(old)` (someone else replaced it first), nothing
/// is written and the error is `Superseded`: re-check the new holder. A file that vanished in
/// between is not an error: `new` is created. Of racing replacers exactly one succeeds; the
/// others get `Superseded` or `AlreadyExists`.
///
/// Errors: `InvalidArgument` when `new` fails [`Entry::validate`] (checked first, nothing
/// touched); `Superseded`; `AlreadyExists` when another creator won the freed name; file-system
/// errors as in [`create`] and [`remove`].
pub fn replace(path: &Path, old: &Entry, new: &Entry) -> Result<()> {
    new.validate()?;
    replace_bytes(path, &encode(old), &encode(new))
}

pub(crate) fn replace_bytes(path: &Path, old: &[u8], new: &[u8]) -> Result<()> {
    if !remove_bytes(path, old)? && fs::symlink_metadata(path).is_ok() {
        // Another record (or something that is not a record) is there now: not ours to retire.
        return Err(Error::at(ErrorKind::Superseded, path, "no longer holds the record to replace"));
    }
    // Retired, or vanished (the holder cleaned up): create. link(2) arbitrates racing creators.
    create_bytes(path, new)
}
