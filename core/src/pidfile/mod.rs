//! Pidfile formats: the abx-dl mtime format and its `.sh` command file, the guard record format,
//! and what both share (the strict opener and the remove-by-content of `retire`).

pub(crate) mod atomic;
pub mod cmd;
pub(crate) mod record;
pub mod mtime;
pub(crate) mod retire;
pub(crate) mod target;
pub(crate) mod unchanged;

use std::path::Path;

/// Why the pidfile at `path` cannot be opened the way pidguard opens it (read-only, no symlink
/// at its name followed, no blocking on a FIFO; for a privileged caller, no unsafe transition on
/// the path — see `docs/security.md`, "Security: running as root"); `None` when it can be. For tools
/// that turn [`CheckReason::Unreadable`](crate::CheckReason::Unreadable) into a message and an
/// exit status ([`crate::ExitCode::for_io`]): the `io::Error` has the system's errno, or — for
/// an unsafe transition — no errno and a text naming both ends of the step.
pub fn open_error(path: &Path) -> Option<std::io::Error> {
    retire::open_strict(path).err()
}

/// The two pidfile formats pidguard reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// The abx-dl format: the decimal pid, the start time as the mtime, the token in an xattr.
    AbxDl,
    /// A guard record: one JSON object ([`crate::guard`]).
    Guard,
}

impl Format {
    /// `"abx-dl"` or `"guard"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Format::AbxDl => "abx-dl",
            Format::Guard => "guard",
        }
    }

    /// The format of the pidfile at `path`: `Guard` when it is a regular file whose first
    /// non-blank byte is `{`, else `AbxDl` (also for a missing or unreadable file, whose check
    /// then says why). Opened without following a symlink or blocking on a FIFO; reads at most
    /// 64 bytes.
    pub fn of(path: &Path) -> Format {
        let Ok(f) = retire::open_strict(path) else {
            return Format::AbxDl;
        };
        let is_guard = f.metadata().is_ok_and(|m| m.is_file())
            && read_bounded(&f, 64, 64).is_ok_and(|b| b.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{'));
        if is_guard { Format::Guard } else { Format::AbxDl }
    }
}

/// Read an open regular file whose `fstat` gave `size` bytes, at most `max` bytes, from offset 0
/// (`pread`, so the file position does not matter and the same descriptor can be read again).
///
/// Reads what fstat said is there and stops: a file of `size` bytes costs one `read` instead of
/// two (the second only seeing end-of-file), an empty one none — the content as of the `fstat`
/// (a writer that appends afterwards is not waited for). Only for the regular files of hook
/// directories (pidfiles, `.sh`, logs), whose size is their content's. A `size` of 0 is not
/// trusted — procfs and sysfs files report 0 whatever they hold — so such a file is read until
/// end of file, at most `max` bytes (an empty regular file costs one `read` that sees the end).
/// Errors: the `pread` error (`EINTR` is retried).
pub(crate) fn read_bounded(f: &std::fs::File, size: u64, max: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    if size == 0 {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 4096.min(max.max(1) as usize)];
        while (buf.len() as u64) < max {
            let room = (max - buf.len() as u64).min(chunk.len() as u64) as usize;
            match f.read_at(&mut chunk[..room], buf.len() as u64) {
                Ok(0) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        return Ok(buf);
    }
    let want = size.min(max) as usize;
    let mut buf = vec![0u8; want];
    let mut len = 0usize;
    while len < want {
        match f.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(buf)
}

/// [`read_bounded`], the bytes handed to `with` from a buffer on the stack when what fstat says
/// is there (`size`, at most `max`) is small, as a pidfile is (one read per validate, two per
/// stale record: no allocation); larger or unsized (`size` 0) files are read by
/// [`read_bounded`]. Errors: the `pread` error (`EINTR` is retried).
pub(crate) fn with_bounded<R>(f: &std::fs::File, size: u64, max: u64, with: impl FnOnce(&[u8]) -> R) -> std::io::Result<R> {
    use std::os::unix::fs::FileExt;
    const SMALL: u64 = 128;
    let want = size.min(max);
    if size == 0 || want > SMALL {
        return read_bounded(f, size, max).map(|b| with(&b));
    }
    let mut buf = [0u8; SMALL as usize];
    let want = want as usize;
    let mut len = 0usize;
    while len < want {
        match f.read_at(&mut buf[len..want], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(with(&buf[..len]))
}

/// For a privileged caller (a real or effective uid of 0, or `CAP_KILL`), why a file it is about to trust (an abx-dl
/// pidfile, a `.sh`, a log, the index) is refused for its links: `Some("has 2 links; …")` when
/// `st_nlink > 1`. A user who may write a directory root walks can link a file of root's there
/// when `fs.protected_hardlinks=0`, and root would read, judge or append to root's own file
/// under the user's name. `None` for one link, and always for an unprivileged caller (it gets
/// nothing through a link that it could not open itself).
pub(crate) fn refused_links(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    (meta.nlink() > 1 && crate::protect::privileged())
        .then(|| format!("has {} links; another name for it may be another user's file", meta.nlink()))
}

/// Whether `path` itself (not followed) is a directory: a directory given where a pidfile
/// belongs is bad input, a symlink or FIFO there a refusal.
pub(crate) fn is_directory_not_followed(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).map(|m| m.is_dir()).unwrap_or(false)
}
