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
/// A token without a pidfs inode (Linux < 6.9, or no pidfd: a seccomp filter) names its
/// process by start ticks alone, which a reuse of the pid within the same clock tick (10 ms)
/// would share. Such a token is returned only once its process has been seen alive after its
/// start tick ended (waiting up to one tick for a process that young): any process that reuses
/// the pid later starts in a later tick, so a record of this token can never match it (issue
/// 47: the reuse torture's same-tick rounds, on 6.1 and under seccomp).
///
/// Errors: those of [`lookup`]; `NoSuchProcess` also for a zombie (a zombie has exited: it is
/// no longer the process to record), and for a process without a pidfs inode that exited
/// within its first clock tick.
pub fn start_token(pid: i32) -> Result<StartToken> {
    let pid = check_pid_range(pid as i64)?;
    let h = ProcessRef::probe(pid, None, true).map_err(|j| unreadable(pid, j))?;
    if h.judgement().verdict == Verdict::Gone {
        return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} is a zombie: it has exited")).with_pid(pid));
    }
    let token = h.token().clone();
    #[cfg(target_os = "linux")]
    if token.pidfs_ino.is_none() && !alive_after_start_tick(&h, token.start_ticks) {
        return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} exited within its first clock tick")).with_pid(pid));
    }
    Ok(token)
}

/// Whether the process of `h` (started in tick `start_ticks` of `CLOCK_BOOTTIME`) is still
/// alive once that tick has ended: sleeps until then (at most one tick and a little; a clock
/// that does not reach it within 50 ms — a time namespace's offsets — is not waited for),
/// then asks the handle's pin (its pidfd, or its open `/proc/<pid>`).
#[cfg(target_os = "linux")]
fn alive_after_start_tick(h: &ProcessRef, start_ticks: u64) -> bool {
    use crate::sys;
    let tick_ns = 1_000_000_000u128 / sys::clk_tck().max(1) as u128;
    let end = (start_ticks as u128 + 1) * tick_ns;
    let until = std::time::Instant::now() + std::time::Duration::from_millis(50);
    while let Ok(now) = sys::boottime_ns() {
        if now >= end || std::time::Instant::now() >= until {
            break;
        }
        std::thread::sleep(std::time::Duration::from_nanos((end - now).min(tick_ns) as u64));
    }
    !h.has_exited()
}
