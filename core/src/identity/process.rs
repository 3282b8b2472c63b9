//! What procfs says about a live process, read through its pinned handle.

use std::io;
use std::path::PathBuf;

use super::token::StartToken;
use super::verdict::Judgement;
use crate::error::{Error, ErrorKind, Result};
use crate::sys::procfs;

/// What procfs says about one process.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessInfo {
    /// The pid.
    pub pid: i32,
    /// The parent pid.
    pub ppid: i32,
    /// The process group id.
    pub pgid: i32,
    /// The session id.
    pub sid: i32,
    /// The real uid (`/proc/<pid>/status`), when readable.
    pub uid: Option<u32>,
    /// The state letter of `/proc/<pid>/stat` as the kernel gives it. `'Z'` alone is not proof
    /// of exit: a leader whose main thread exited while others run shows `'Z'`; see
    /// [`is_zombie`](Self::is_zombie).
    pub state: char,
    /// Whether the whole process has exited (a zombie), by the one rule
    /// ([`thread_group_exited`](super::thread_group_exited)): the pidfd's readiness, or without
    /// one state `Z` with a thread count of 1.
    pub exited: bool,
    /// Start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
    pub start_ticks: u64,
    /// The start token (boot, pid namespace, start ticks, pidfs inode).
    pub token: StartToken,
    /// psutil-compatible create time, seconds since the epoch as `f64`:
    /// `btime + start_ticks / CLK_TCK`, with `btime` read afresh. Used only for the abx-dl
    /// mtime format, never for identity.
    pub create_time: f64,
    /// The command name (`comm`), lossily decoded.
    pub name: String,
    /// The argv from `/proc/<pid>/cmdline`, lossily decoded; `None` when unreadable. Empty for
    /// kernel threads and zombies.
    pub argv: Option<Vec<String>>,
    /// The executable (`/proc/<pid>/exe`), when readable.
    pub exe: Option<PathBuf>,
}

impl ProcessInfo {
    /// Whether the process is a zombie: exited as a whole, not yet reaped ([`Self::exited`]).
    pub fn is_zombie(&self) -> bool {
        self.exited
    }
    /// Whether the process leads its own process group.
    pub fn is_group_leader(&self) -> bool {
        self.pgid == self.pid
    }
}

/// Check that `pid` is well-formed — from 1 to the kernel's hard limit
/// [`PID_MAX_LIMIT`](procfs::PID_MAX_LIMIT) — before anything reads or signals it.
/// `kernel.pid_max` bounds nothing: it can be lowered while higher pids live.
pub(crate) fn check_pid_range(pid: i64) -> Result<i32> {
    let max = procfs::PID_MAX_LIMIT as i64;
    if pid <= 0 || pid > max {
        return Err(Error::invalid(format!("pid {pid} is not a pid: a pid is from 1 to {max}")));
    }
    Ok(pid as i32)
}

/// psutil-compatible create time from start ticks: `btime + ticks / CLK_TCK` on Linux (each
/// system's own rule: `procfs::create_time`).
pub(crate) fn create_time(start_ticks: u64) -> io::Result<f64> {
    procfs::create_time(start_ticks)
}

/// The error for a process that could not be looked at: gone, or its identity unreadable.
pub(crate) fn unreadable(pid: i32, j: Judgement) -> Error {
    match j.reason.errno() {
        Some(errno) => {
            let kind = match errno {
                libc::ENOENT | libc::EACCES | libc::EPERM => ErrorKind::PermissionDenied,
                _ => ErrorKind::Io,
            };
            let mut e = Error::new(kind, format!("pid {pid}: the live identity cannot be read ({})", j.reason));
            e = e.with_pid(pid);
            e.set_errno(errno);
            e
        }
        None => Error::new(ErrorKind::NoSuchProcess, format!("pid {pid}: {j}")).with_pid(pid),
    }
}

