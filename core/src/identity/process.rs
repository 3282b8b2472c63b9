//! Reading a live process's facts from procfs, consistently with a pidfd.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use super::token::StartToken;
use crate::error::{Error, ErrorKind, Result};
use crate::sys::{self, procfs};

/// What procfs says about one process (SPEC §2).
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
    /// The state letter of `/proc/<pid>/stat` (`'Z'` is a zombie).
    pub state: char,
    /// Start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
    pub start_ticks: u64,
    /// The start token of §2.1.
    pub token: StartToken,
    /// psutil-compatible create time, seconds since the epoch as `f64` (SPEC §2.4):
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
    /// Whether the process is a zombie (exited, not yet reaped).
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
    /// Whether the process leads its own process group.
    pub fn is_group_leader(&self) -> bool {
        self.pgid == self.pid
    }
}

/// A consistent read of one process: its stat and, when the kernel gives one, a pidfd to the
/// very process the stat describes.
pub(crate) struct Snapshot {
    pub pid: i32,
    pub stat: procfs::Stat,
    pub pidfd: Option<OwnedFd>,
    pub pidfs_ino: Option<u64>,
    /// The errno that kept us from having a pidfd (`ENOSYS`, `EPERM`), if any.
    pub unpinned_because: Option<i32>,
    /// Without a pidfd: the open `/proc/<pid>` directory the stat was read through. Reads through
    /// it fail once this process is reaped, whoever has the number then.
    pub procfd: Option<OwnedFd>,
}

impl Snapshot {
    pub fn is_zombie(&self) -> bool {
        matches!(self.stat.state, b'Z' | b'X')
    }

    pub fn token(&self) -> StartToken {
        StartToken {
            machine_id: procfs::machine_id().to_string(),
            boot_id: procfs::boot_id().to_string(),
            pidns_ino: procfs::pidns_ino(),
            start_ticks: self.stat.start_ticks,
            pidfs_ino: self.pidfs_ino,
        }
    }
}

fn gone(pid: i32) -> Error {
    Error::new(ErrorKind::NoSuchProcess, format!("pid {pid}: no such process")).with_pid(pid)
}

/// Pin `pid` and read its stat so that both describe the same process.
///
/// Order matters: `pidfd_open` first, then the stat, then a null signal through the pidfd. If
/// the pinned process still exists after the stat was read (alive or zombie), the pid number was
/// held by it the whole time, so the stat is its own. Errors: `NoSuchProcess` when there is no
/// such process; `Io` for unexpected procfs failures.
pub(crate) fn snapshot(pid: i32) -> Result<Snapshot> {
    for _ in 0..3 {
        let (pidfd, unpinned_because) = match sys::pidfd_open(pid) {
            Ok(fd) => (Some(fd), None),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Err(gone(pid)),
            // No pidfd here (old kernel, seccomp): the caller reports the handle as unpinned.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) => (None, e.raw_os_error()),
            Err(e) => return Err(Error::io_pid(pid, "pidfd_open", &e)),
        };
        let Some(fd) = pidfd else {
            // No pidfd: pin by an open /proc/<pid> instead, and read the stat through it, so the
            // stat and every later check describe this process and never a successor.
            let dir = match procfs::open_proc_dir(pid) {
                Ok(d) => d,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => return Err(gone(pid)),
                Err(e) => return Err(Error::io_pid(pid, "open /proc/<pid>", &e)),
            };
            let stat = match procfs::read_stat_at(dir.as_fd()) {
                Ok(s) => s,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => return Err(gone(pid)),
                Err(e) => return Err(Error::io_pid(pid, "read /proc/<pid>/stat", &e)),
            };
            return Ok(Snapshot { pid, stat, pidfd: None, pidfs_ino: None, unpinned_because, procfd: Some(dir) });
        };
        let stat = match procfs::read_stat(pid) {
            Ok(s) => s,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => return Err(gone(pid)),
            Err(e) => return Err(Error::io_pid(pid, "read /proc/<pid>/stat", &e)),
        };
        match sys::pidfd_send_signal(fd.as_fd(), 0, 0) {
            // EPERM: it exists and is someone else's; still ours to describe.
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
            // Reaped between pidfd_open and now: the stat may describe a successor. Try again.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
            Err(e) => return Err(Error::io_pid(pid, "pidfd_send_signal(0)", &e)),
        }
        let pidfs_ino = sys::pidfs_ino(fd.as_fd());
        return Ok(Snapshot { pid, stat, pidfd: Some(fd), pidfs_ino, unpinned_because: None, procfd: None });
    }
    Err(gone(pid))
}

/// Check that `pid` is in `1..=pid_max` before anything reads or signals it.
pub(crate) fn check_pid_range(pid: i64) -> Result<i32> {
    let max = procfs::pid_max() as i64;
    if pid <= 0 || pid > max {
        return Err(Error::invalid(format!("pid {pid} is outside 1..={max} (/proc/sys/kernel/pid_max)")));
    }
    Ok(pid as i32)
}

/// psutil-compatible create time from start ticks (SPEC §2.4): `btime + ticks / CLK_TCK`.
pub(crate) fn create_time(start_ticks: u64) -> io::Result<f64> {
    let bt = procfs::btime()?;
    Ok(start_ticks as f64 / sys::clk_tck() as f64 + bt as f64)
}

/// Everything procfs says about `pid` now.
///
/// Errors: `InvalidArgument` for a pid outside `1..=pid_max`; `NoSuchProcess` when there is no
/// such process (a zombie is returned, with `state == 'Z'`); `Io` for unexpected procfs errors.
pub fn lookup(pid: i32) -> Result<ProcessInfo> {
    let pid = check_pid_range(pid as i64)?;
    let snap = snapshot(pid)?;
    Ok(info_from(&snap))
}

pub(crate) fn info_from(snap: &Snapshot) -> ProcessInfo {
    let pid = snap.pid;
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    ProcessInfo {
        pid,
        ppid: snap.stat.ppid,
        pgid: snap.stat.pgrp,
        sid: snap.stat.session,
        uid: procfs::read_uid(pid).ok(),
        state: snap.stat.state as char,
        start_ticks: snap.stat.start_ticks,
        token: snap.token(),
        create_time: create_time(snap.stat.start_ticks).unwrap_or(f64::NAN),
        name: lossy(&snap.stat.comm),
        argv: procfs::read_cmdline(pid).ok().map(|v| v.iter().map(|a| lossy(a)).collect()),
        exe: procfs::read_exe(pid),
    }
}

/// The start token of the live process `pid` (SPEC §2.1).
///
/// Errors: `InvalidArgument` for a pid outside `1..=pid_max`; `NoSuchProcess` when there is no
/// such process or it is a zombie (a zombie has exited: it is no longer the process to record).
pub fn start_token(pid: i32) -> Result<StartToken> {
    let pid = check_pid_range(pid as i64)?;
    let snap = snapshot(pid)?;
    if snap.is_zombie() {
        return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} is a zombie: it has exited")).with_pid(pid));
    }
    Ok(snap.token())
}
