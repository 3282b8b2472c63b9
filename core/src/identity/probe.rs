//! The questions asked of a live pid, each answered through one pinned handle
//! ([`ProcessRef::probe`]): is it the recorded process ([`judge`]), what procfs says of it
//! ([`lookup`]), and its start token ([`start_token`]).

use super::handle::ProcessRef;
use super::process::{check_pid_range, unreadable, ProcessInfo};
use super::token::StartToken;
use super::verdict::{Judgement, Verdict};
use crate::error::{Error, ErrorKind, Result};

/// Is the process at `pid` the one `recorded` names? One of four answers, never a guess.
///
/// `recorded = None` (a record without a token) gives `Unverifiable` for a live process.
/// Only proof gives `Gone` (`ESRCH`, an exited pidfd, a zombie, a pid that is now a thread of
/// another process) or `Mismatch` (another boot, pidfs inode or start ticks); any failure to
/// read the live identity is `Unverifiable` with its errno
/// ([`Reason::LiveIdentityUnreadable`](super::Reason::LiveIdentityUnreadable)). With pidfs inodes on both sides the answer needs no
/// `/proc` read at all (`pidfd_open`, `fstat`, `poll`, `close`), so a reader under a `/proc`
/// mounted `hidepid` still gets `Match`.
///
/// Errors: `InvalidArgument` for a pid outside 1 to 4194304 (nothing else: every other
/// problem is a verdict).
pub fn judge(pid: i32, recorded: Option<&StartToken>) -> Result<Judgement> {
    let pid = check_pid_range(pid as i64)?;
    Ok(match ProcessRef::probe(pid, recorded, false) {
        Ok(h) => h.judgement(),
        Err(j) => j,
    })
}

/// Everything procfs says about `pid` now.
///
/// Errors: `InvalidArgument` for a pid outside 1 to 4194304; `NoSuchProcess` when there is no
/// such process, or the number is now a thread of another process (a zombie is returned, with
/// `state == 'Z'`); `PermissionDenied` (errno `ENOENT`/`EACCES`/`EPERM`) when `/proc` hides
/// the process (`hidepid`); `Io` with its errno for anything else (`EMFILE` is not "not
/// found").
pub fn lookup(pid: i32) -> Result<ProcessInfo> {
    let pid = check_pid_range(pid as i64)?;
    ProcessRef::probe(pid, None, true).map_err(|j| unreadable(pid, j))?.info()
}

/// The start token of the live process `pid`.
///
/// Errors: those of [`lookup`]; `NoSuchProcess` also for a zombie (a zombie has exited: it is
/// no longer the process to record).
pub fn start_token(pid: i32) -> Result<StartToken> {
    let pid = check_pid_range(pid as i64)?;
    let h = ProcessRef::probe(pid, None, true).map_err(|j| unreadable(pid, j))?;
    if h.judgement().verdict == Verdict::Gone {
        return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} is a zombie: it has exited")).with_pid(pid));
    }
    Ok(h.token().clone())
}

/// The start token of `pid`, a process the caller has just spawned and that cannot have been
/// reaped yet — the caller's own child, or a command whose supervisor does not reap before the
/// record is written ([`crate::launch::spawn`]). A zombie there is still the process that was
/// spawned, and its token dates the record: a command that exits at once (a daemon's first
/// process) leaves its scope running, and the scope is only ever read with the token.
///
/// Errors: those of [`lookup`]; `NoSuchProcess` when the process has been reaped, or its start
/// time could not be read.
pub(crate) fn spawned_token(pid: i32) -> Result<StartToken> {
    let pid = check_pid_range(pid as i64)?;
    let h = ProcessRef::probe(pid, None, true).map_err(|j| unreadable(pid, j))?;
    if h.stat().is_none() {
        return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} has exited and its start time is unreadable")).with_pid(pid));
    }
    Ok(h.token().clone())
}
