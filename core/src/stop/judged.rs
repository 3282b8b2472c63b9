//! An abx-dl pidfile judged once, through its directory's descriptor, for a stop or a pin.

use std::path::Path;

use crate::error::{Error, ErrorKind};
use crate::identity::ProcessRef;
use crate::pidfile::cmd::RecordedCommand;
use crate::pidfile::mtime::{check_pinned_opened, CheckReason, CmdRule, PidFileCheck};
use crate::pidfile::unchanged::remove_if_unchanged_in;
use crate::sys::DirFd;

/// The error [`super::stop_pid_file`] and [`super::pin_pid_file`] give for a record that cannot be judged at
/// all (`Malformed`: only `stop_pid_file`).
pub(super) fn unusable(pid_file: &Path, check: &PidFileCheck) -> Error {
    match check.reason {
        CheckReason::Malformed => Error::at(ErrorKind::Malformed, pid_file, "content is not one pid from 1 to 4194304"),
        CheckReason::BadToken => Error::at(ErrorKind::Malformed, pid_file, "the token xattr is not a pidguard start token"),
        // A directory named as the pidfile is a mistake of the caller (bad input), not a planted
        // file; a symlink or FIFO there stays a refusal.
        CheckReason::NotRegular | CheckReason::Unreadable if crate::pidfile::is_directory_not_followed(pid_file) => {
            Error::at(ErrorKind::InvalidArgument, pid_file, "is a directory, not a pidfile")
        }
        CheckReason::NotRegular => Error::at(ErrorKind::Untrusted, pid_file, "not a regular file"),
        // The system's own error of the read that was judged (its errno decides the kind; a
        // path refused by the unsafe-transition rule says which step): no second open to word it.
        _ => match check.os_error() {
            Some(e) => Error::io_at(pid_file, "cannot be read", e),
            None => Error::at(ErrorKind::PermissionDenied, pid_file, "cannot be read"),
        },
    }
}

/// An abx-dl pidfile judged through its directory's descriptor: the directory is opened once,
/// the record is opened from it (`pidfile::retire::open_strict_in`), and a stale record is
/// retired by content through that same descriptor — never by a second lookup of the path,
/// which a user who swaps a directory for a symlink between the two calls could aim anywhere.
/// The owner and mode in [`PidFileCheck::owner`] are the `fstat` of the descriptor read.
pub(super) struct Judged<'a> {
    dir: Option<(DirFd, &'a std::ffi::OsStr)>,
    pub(super) check: PidFileCheck,
    pub(super) pin: Option<ProcessRef>,
}

impl<'a> Judged<'a> {
    pub(super) fn new(pid_file: &'a Path, recorded: Option<RecordedCommand<'_>>, tolerance: f64) -> Judged<'a> {
        let cmd = recorded.map_or(CmdRule::None, CmdRule::Command);
        match DirFd::parent_of(pid_file, crate::protect::walk()) {
            Ok((dir, name)) => {
                let (check, pin) = check_pinned_opened(crate::pidfile::retire::open_strict_in(&dir, name), cmd, tolerance);
                Judged { dir: Some((dir, name)), check, pin }
            }
            Err(e) => {
                let (check, pin) = check_pinned_opened(Err(e), cmd, tolerance);
                Judged { dir: None, check, pin }
            }
        }
    }

    /// Remove the record if it still holds what `check` judged (pid, mtime, token), from the
    /// directory it was judged in. Whether it was removed.
    pub(super) fn retire(&self, pid_file: &Path, check: &PidFileCheck) -> bool {
        self.dir.as_ref().is_some_and(|(dir, name)| remove_if_unchanged_in(dir, name, pid_file, check))
    }

    /// [`Self::retire`], with the removal's own error when it failed (`rename: EACCES …`, a
    /// read-only directory): whether it was removed, and why not when a step failed. `None`
    /// with `false` when the record changed or vanished meanwhile (nothing to report).
    pub(super) fn retire_why(&self, pid_file: &Path, check: &PidFileCheck) -> (bool, Option<String>) {
        let Some((dir, name)) = self.dir.as_ref() else { return (false, None) };
        match crate::pidfile::retire::remove_by_content(dir, name, pid_file, |f| crate::pidfile::unchanged::unchanged_record(f, check), false) {
            Ok(done) => (done, None),
            Err((step, e)) => (
                false,
                Some(format!("the pidfile was not removed: {step} failed: {e}")),
            ),
        }
    }
}
