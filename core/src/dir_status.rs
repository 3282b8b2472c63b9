//! What a directory holds: every pidfile directly in it, each with the pid it names, the
//! identity verdict and whether the process it recorded is still running — `pidguard list DIR`
//! (as `systemctl list-units` or `start-stop-daemon --status` answer for services). A probe: it
//! reads, never signals, never removes.

use std::path::{Path, PathBuf};

use crate::identity::Verdict;
use crate::ops::Answer;
use crate::options::CheckOptions;
use crate::pidfile::mtime::{CheckReason, PidFileCheck};
use crate::pidfile::Format;
use crate::probe::{status_pid_file, Probe};
use crate::{Error, Result};

/// What a listed pidfile says about its process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryState {
    /// The record runs, as `status` says: the process it recorded is running, or that process
    /// is gone while its scope still holds processes.
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

    /// The state `status`'s answer says ([`status_pid_file`]): running (its process, or its
    /// scope); not running → stale; undecided → undecided; a file that cannot be judged → as
    /// its check says ([`EntryState::of`]).
    pub fn of_probe(probe: &Probe) -> EntryState {
        match probe.answer {
            Answer::Running => EntryState::Running,
            Answer::NotRunning => EntryState::Stale,
            Answer::Undecided => EntryState::Undecided,
            Answer::Unusable => EntryState::of(&probe.check),
        }
    }

    /// The state a check alone says: valid → running; unreadable or unverifiable → undecided (a
    /// failed read is never a fact); anything else → stale. (A record's scope is not consulted
    /// here: [`EntryState::of_probe`] does.)
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
    /// What `status` says, in one word ([`EntryState::of_probe`]); `Undecided` when the check
    /// failed.
    pub state: EntryState,
    /// For a record that runs only through its scope, what `status` prints for it
    /// ([`Probe::scope_text`]: `pid N gone; its scope (cgroup) still holds M processes`), or for
    /// one whose scope could not be read, why it is undecided ([`Probe::undecided_text`]).
    pub scope_text: Option<String>,
}

/// Every entry directly in `dir` (not recursive) whose name matches the file-name glob
/// `pattern` (`*` and `?`; for example `*.pid`), sorted by name, each judged as `pidguard
/// status` judges one pidfile ([`status_pid_file`]: default tolerance, the `.sh` beside it, and
/// a record whose process is gone while its scope still holds processes is running). Symlinks and other
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
            match status_pid_file(&path, &CheckOptions::default()) {
                Ok(p) => {
                    let (state, scope_text) = (EntryState::of_probe(&p), p.scope_text().or_else(|| p.undecided_text()));
                    DirEntryStatus { path, format: p.format, check: Ok(p.check), state, scope_text }
                }
                Err(e) => DirEntryStatus { format: Format::of(&path), path, check: Err(e), state: EntryState::Undecided, scope_text: None },
            }
        })
        .collect())
}
