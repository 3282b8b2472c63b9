//! Before a record is written: which format it has ([`RecordFormat`]), where its `.sh` goes
//! ([`cmd_file_for`]), and whether its path is free ([`ensure_vacant`]).

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::guard;
use crate::identity::Verdict;
use crate::options::check_pid_file;
use crate::pidfile::mtime::{CheckReason, DEFAULT_TOLERANCE};

/// Which kind of pidfile [`record`](super::record) writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecordFormat {
    /// The abx-dl format: the pid as content, the start time as mtime, the start token in the
    /// `user.pidguard.token` xattr, and `<name>.sh` beside it (default).
    #[default]
    AbxDl,
    /// One JSON guard record (`{"pid", "start_token", …}`), created by exactly one of any
    /// number of racing spawners.
    Guard,
}

/// The `.sh` command file that goes with an abx-dl pidfile: `<pidfile without .pid>.sh`
/// ([`crate::options::cmd_file_for`], where the name is decided).
pub fn cmd_file_for(pid_file: &Path) -> PathBuf {
    crate::options::cmd_file_for(pid_file)
}

/// Refuse to (re)write `pid_file` while it still belongs to a process.
///
/// `Ok(())` when the path is free: no file, or a record proven stale (gone, reused, an
/// earlier boot, a token-less record whose mtime or command no longer matches), or content
/// that is not a record at all (malformed: it names no process). Such a file is replaced
/// by [`record`](super::record).
///
/// Errors: `Held` when a live process matches the record (abx-dl: [`check_pid_file`] says
/// valid; guard: the holder is `Match`), when the record's scope still holds processes (its
/// recorded process may be gone: a daemon's first process exits at once; an empty scope's leaf
/// is removed here), or when the record or its scope cannot be judged (its live identity
/// is unreadable, or it was written on another machine or in another PID namespace) — a
/// record that may be alive is never overwritten; `Untrusted` (or a refinement) for a symlink,
/// FIFO or directory at the path; `PermissionDenied`/`Io` when the file cannot be read.
pub fn ensure_vacant(pid_file: &Path, format: RecordFormat) -> Result<()> {
    match format {
        RecordFormat::AbxDl => {
            let cmd = cmd_file_for(pid_file);
            let c = check_pid_file(pid_file, cmd.exists().then_some(cmd.as_path()), DEFAULT_TOLERANCE);
            let held = |why: &str| {
                let mut e = Error::at(ErrorKind::Held, pid_file, format_args!("{why}; not overwritten"));
                if let Some(pid) = c.pid {
                    e = e.with_pid(pid);
                }
                Err(e)
            };
            // A record pidguard started: its tree may outlive the recorded process (a daemon's
            // first process exits at once), and then the pidfile still belongs to it. An empty
            // scope's leaf is removed with the stale record it belonged to.
            let scope = if c.reason == CheckReason::Valid { crate::pidfile::target::ScopeTarget::Absent(None) } else { crate::pidfile::target::scope_target(&c) };
            match scope {
                crate::pidfile::target::ScopeTarget::Open(s) if !s.is_empty() => {
                    return held(&format!("its scope ({}) still holds processes", s.kind()))
                }
                crate::pidfile::target::ScopeTarget::Open(s) => {
                    s.release();
                }
                crate::pidfile::target::ScopeTarget::Keep(_, why, _) => return held(&format!("its scope cannot be judged here ({why})")),
                crate::pidfile::target::ScopeTarget::Absent(_) => {}
            }
            match c.reason {
                CheckReason::Valid => held(&format!("held by pid {}, alive and matching", c.pid.unwrap_or(0))),
                CheckReason::Unverifiable | CheckReason::Foreign => {
                    let why = c.judgement.map(|j| j.reason.as_str()).unwrap_or(c.reason.as_str());
                    held(&format!("names pid {} whose identity cannot be judged here ({why})", c.pid.unwrap_or(0)))
                }
                CheckReason::NotRegular => Err(Error::at(ErrorKind::NotRegularFile, pid_file, "not a regular file")),
                CheckReason::Unreadable => {
                    // Ask the system why, so that the caller sees its text (EACCES, EIO, …).
                    let opened = crate::sys::open_raw(pid_file, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0, crate::protect::walk());
                    match opened {
                        Err(e) => Err(Error::io_at(pid_file, "open", &e)),
                        Ok(_) => Err(Error::at(ErrorKind::Io, pid_file, "cannot be read")),
                    }
                }
                _ => Ok(()),
            }
        }
        RecordFormat::Guard => {
            let v = guard::check(pid_file)?;
            match v.identity {
                Some(j) if j.verdict == Verdict::Match || j.verdict == Verdict::Unverifiable => {
                    Err(Error::held(pid_file, v))
                }
                _ => Ok(()),
            }
        }
    }
}
