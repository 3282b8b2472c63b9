//! A record removed only while it is still the one judged: same pid, mtime and token (the
//! remove-if-unchanged rule of `stop` and `cleanup`, on `retire`'s remove-by-content).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::mtime::PidFileCheck;

/// Remove the pidfile `name` from the open directory `dir` — the directory it was judged in —
/// only if it still is the file that was judged: same content (the pid), same mtime and same
/// token xattr, so that a record rewritten meanwhile by a new spawn survives (`path` is its
/// path, for messages). Pidfile's one remove-by-content (`pidfile::retire`): the file is
/// compared, renamed aside to a private name, and compared again there — it must be the very
/// inode compared first, still unchanged — before it is unlinked. If the name meanwhile held
/// another file, that file is put back with `link(2)`, which never overwrites a record created
/// at the name in between. (Unlinking by name after the compare would delete a record renamed
/// into place in between; looking the path up again would let a user who swapped a directory
/// for a symlink aim the removal anywhere.) Any failure leaves the record (`false`).
pub(crate) fn remove_if_unchanged_in(dir: &crate::sys::DirFd, name: &std::ffi::OsStr, path: &Path, check: &PidFileCheck) -> bool {
    super::retire::remove_by_content(dir, name, path, |f| unchanged_record(f, check), false).unwrap_or(false)
}

/// `(dev, inode)` of the open record `f` when it is a regular file that still holds what
/// `check` judged: the same pid, mtime and token (`fstat`, one `pread`, `fgetxattr`).
pub(crate) fn unchanged_record(f: &fs::File, check: &PidFileCheck) -> Option<(u64, u64)> {
    let m = f.metadata().ok()?;
    let mtime = m.mtime() as f64 + m.mtime_nsec() as f64 * 1e-9;
    if !m.is_file() || check.mtime != Some(mtime) {
        return None;
    }
    same_content(f, m.len(), check).then_some((m.dev(), m.ino()))
}

/// Whether `st` (an `lstat` of a name) shows the record judged in `check` as it was judged: the
/// same inode (`file_id`), a regular file, the same mtime. What `lstat` can tell without opening
/// the file; [`unchanged_content`] reads the rest.
pub(crate) fn same_inode_and_mtime(st: &crate::sys::Lstat, check: &PidFileCheck) -> bool {
    let mtime = st.mtime.0 as f64 + st.mtime.1 as f64 * 1e-9;
    check.file_id == Some((st.dev, st.ino)) && st.is_file() && check.mtime == Some(mtime)
}

/// Whether the open record `f`, of `st.size` bytes (`st` an `lstat` of the name that holds its
/// inode), still holds the pid and the token that `check` judged (one `pread`, `fgetxattr`).
pub(crate) fn unchanged_content(f: &fs::File, st: &crate::sys::Lstat, check: &PidFileCheck) -> bool {
    same_content(f, st.size, check)
}

/// Whether `f` (of `size` bytes) holds the pid and the token that `check` judged.
fn same_content(f: &fs::File, size: u64, check: &PidFileCheck) -> bool {
    use std::os::fd::AsFd;
    // Content longer than a record's bound is malformed (as when judged), whatever it starts with.
    let Ok(pid) = super::with_bounded(f, size, 4097, |b| if b.len() > 4096 { None } else { super::mtime::parse_pid_content(b) }) else { return false };
    if pid != check.pid {
        return false;
    }
    let token = match crate::sys::fgetxattr(f.as_fd(), super::mtime::TOKEN_XATTR) {
        Ok(Some(raw)) => std::str::from_utf8(&raw).ok().and_then(|s| s.parse::<crate::identity::StartToken>().ok()),
        _ => None,
    };
    token == check.token
}

#[cfg(test)]
mod tests {
    use super::same_content;
    use crate::pidfile::mtime::{CheckReason, PidFileCheck};

    /// The re-check before a record is removed applies the judgement's bound: content longer
    /// than a record may be is not "the same pid", whatever it starts with.
    #[test]
    fn a_record_grown_past_the_bound_is_not_unchanged() {
        let dir = std::env::temp_dir().join(format!("pidguard-unchanged-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.pid");
        let mut check = PidFileCheck::new(CheckReason::Gone);
        check.pid = Some(4242);
        for (content, same) in [("4242".to_string(), true), (format!("4242{}", " ".repeat(4092)), true), (format!("4242{}", " ".repeat(4093)), false), ("4243".to_string(), false)] {
            std::fs::write(&p, &content).unwrap();
            let f = std::fs::File::open(&p).unwrap();
            assert_eq!(same_content(&f, content.len() as u64, &check), same, "{} bytes", content.len());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
