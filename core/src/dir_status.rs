//! What a directory holds: every pidfile directly in it, each with the pid it names, the
//! identity verdict and whether the process it recorded is still running — `pidguard list DIR`
//! (as `systemctl list-units` or `start-stop-daemon --status` answer for services). A probe: it
//! reads, never signals, never removes.

use std::path::{Path, PathBuf};

use crate::identity::Verdict;
use crate::options::{status, CheckOptions};
use crate::pidfile::mtime::{CheckReason, PidFileCheck};
use crate::pidfile::Format;
use crate::{Error, Result};

/// What a listed pidfile says about its process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryState {
    /// The record is valid: the process it recorded is running (the same check as `status`).
    Running,
    /// The record is proven stale: the process exited, is a zombie, or its pid now belongs to
    /// another process; or the file is missing, malformed or not a regular file.
    Stale,
    /// Could not tell: the file or the live process could not be read (EPERM, EACCES, hidden
    /// /proc). Never a fact about the process.
    Undecided,
}

impl EntryState {
    /// `"running"`, `"stale"` or `"undecided"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EntryState::Running => "running",
            EntryState::Stale => "stale",
            EntryState::Undecided => "undecided",
        }
    }

    /// The state a check says: valid → running; unreadable or unverifiable → undecided (a
    /// failed read is never a fact); anything else → stale.
    pub fn of(check: &PidFileCheck) -> EntryState {
        match check.reason {
            _ if check.valid => EntryState::Running,
            CheckReason::Unreadable | CheckReason::Unverifiable => EntryState::Undecided,
            _ if check.judgement.is_some_and(|j| j.verdict == Verdict::Unverifiable) => EntryState::Undecided,
            _ => EntryState::Stale,
        }
    }
}

/// One pidfile of the directory.
#[derive(Debug)]
pub struct DirEntryStatus {
    /// The pidfile's path (the directory joined with its name).
    pub path: PathBuf,
    /// Its format ([`Format::of`]: by content).
    pub format: Format,
    /// The check `status` makes of it (with the `.sh` beside it, when there is one), or the
    /// error of a guard record that could not be checked (unreadable or malformed JSON).
    pub check: std::result::Result<PidFileCheck, Error>,
    /// What the check says, in one word; `Undecided` when the check failed.
    pub state: EntryState,
}

/// Every entry directly in `dir` (not recursive) whose name matches the file-name glob
/// `pattern` (`*` and `?`; for example `*.pid`), sorted by name, each checked as `pidguard
/// status` checks one pidfile (default tolerance, the `.sh` beside it). Symlinks and other
/// non-regular entries are listed with the check's `NotRegular` (never followed).
///
/// Errors: `InvalidArgument` for an empty pattern or one with `/`; the error of opening or
/// reading `dir` (`NotFound`, `PermissionDenied`, … with the system's errno).
pub fn dir_status(dir: &Path, pattern: &str) -> Result<Vec<DirEntryStatus>> {
    if pattern.is_empty() || pattern.contains('/') {
        return Err(Error::invalid(format!("pattern {pattern:?} must be a non-empty file-name glob without '/'")));
    }
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io_at(dir, "read the directory", &e))?;
    let mut names = Vec::new();
    for e in rd {
        let e = e.map_err(|e| Error::io_at(dir, "read the directory", &e))?;
        let name = e.file_name();
        if crate::hooks::glob_match(pattern.as_bytes(), name.as_encoded_bytes()) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names
        .into_iter()
        .map(|name| {
            let path = dir.join(name);
            let check = status(&path, &CheckOptions::default());
            let (format, check) = match check {
                Ok((f, c)) => (f, Ok(c)),
                Err(e) => (Format::of(&path), Err(e)),
            };
            let state = check.as_ref().map(EntryState::of).unwrap_or(EntryState::Undecided);
            DirEntryStatus { path, format, check, state }
        })
        .collect())
}
