//! macOS and FreeBSD (compile-checked only: nothing here has run on either system): the
//! questions `procfs.rs` answers on Linux, answered from each system's process record
//! (`macos.rs`: `proc_pidinfo`; `freebsd.rs`: `sysctl(KERN_PROC_PID)`), behind the same names.
//!
//! Neither system has a pidfd, so every handle is unpinned: a [`ProcDir`] holds the pid with
//! the identity read when it was opened (macOS: the start time and `p_uniqueid`; FreeBSD: the
//! start in µs since boot) and compares it on every read, so a read of a successor of the
//! number fails with `ESRCH` as a read through Linux's open `/proc/<pid>` does. The handle
//! re-reads it right before each `kill(2)`/`killpg(2)`: the window left is that of one read.
//! A kqueue registered with `EVFILT_PROC`/`NOTE_EXIT` before the identity is read (so it
//! watches the process that was then confirmed) makes exit waits block instead of poll.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use super::bsd_parse::{state_letter, Facts};
use super::common::Stat;

#[cfg(target_os = "freebsd")]
pub use super::freebsd::{boot_id, create_time, list_pids, machine_id, pidns_ino, read_cmdline, read_exe};
#[cfg(target_os = "freebsd")]
use super::freebsd::read_proc;
#[cfg(target_os = "macos")]
pub use super::macos::{boot_id, create_time, list_pids, machine_id, pidns_ino, read_cmdline, read_exe};
#[cfg(target_os = "macos")]
use super::macos::read_proc;

/// `Stat` of a read, in Linux's terms: the state as a letter; the session from the record
/// (FreeBSD) or `getsid(2)` (macOS; 0 when it cannot be read — informational only); the
/// thread count from the record (FreeBSD) or, where there is none, 1 for a zombie and 0
/// (unknown) otherwise — a BSD zombie is the whole process, so the exit rule holds as it is.
fn to_stat(pid: i32, f: &Facts) -> Stat {
    let p = &f.proc;
    let session = p.sid.unwrap_or_else(|| nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(pid))).map_or(0, |s| s.as_raw()));
    Stat {
        comm: p.comm.clone(),
        state: state_letter(p.stat),
        ppid: p.ppid,
        pgrp: p.pgid,
        session,
        num_threads: p.num_threads.unwrap_or(if p.is_zombie() { 1 } else { 0 }),
        start_ticks: f.start,
    }
}

/// The process record of `pid` as a [`Stat`]. `ESRCH`: no such process; `EPERM`: not
/// readable by this caller; `EAGAIN`: the number changed hands at every try.
pub fn read_stat(pid: i32) -> io::Result<Stat> {
    super::fault::check(super::fault::Call::ProcRead)?;
    read_proc(pid).map(|f| to_stat(pid, &f))
}

/// The real uid of `pid`.
pub fn read_uid(pid: i32) -> io::Result<u32> {
    read_proc(pid).map(|f| f.proc.ruid)
}

/// The real and saved uids of `pid` (kill(2)'s rule, as on Linux).
pub fn read_uids(pid: i32) -> io::Result<(u32, u32)> {
    super::fault::check(super::fault::Call::ProcRead)?;
    read_proc(pid).map(|f| (f.proc.ruid, f.proc.svuid))
}

/// An unpinned handle's hold on its process (see the module doc): the pid, the identity read
/// when it was opened, and a kqueue watching its exit (`None` when one could not be registered:
/// a zombie, `EPERM`).
#[derive(Debug)]
pub struct ProcDir {
    pid: i32,
    start: u64,
    unique: Option<u64>,
    exit: Option<OwnedFd>,
}

impl ProcDir {
    /// macOS: the `p_uniqueid` read when the handle was opened (the pidfs inode's twin);
    /// FreeBSD: `None`.
    pub fn unique_id(&self) -> Option<u64> {
        self.unique
    }

    /// The kqueue that becomes readable once the process exits, if one was registered.
    pub fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        self.exit.as_ref().map(|f| f.as_fd())
    }
}

/// A kqueue watching `pid` for `NOTE_EXIT`. `ESRCH` when no live process has the number (a
/// zombie included, on these kernels).
fn watch_exit(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: kqueue(2) takes nothing and returns a new descriptor or -1.
    let raw = unsafe { libc::kqueue() };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nobody else.
    let kq = unsafe { OwnedFd::from_raw_fd(raw) };
    // A kqueue is not inherited across fork; close-on-exec keeps it from leaking into an exec.
    // SAFETY: plain fcntl on a descriptor we own.
    if unsafe { libc::fcntl(kq.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: an all-zero kevent is a valid value; the fields that matter are set below.
    let mut ev: libc::kevent = unsafe { std::mem::zeroed() };
    ev.ident = pid as libc::uintptr_t;
    ev.filter = libc::EVFILT_PROC;
    ev.flags = libc::EV_ADD;
    ev.fflags = libc::NOTE_EXIT;
    // SAFETY: one change, no event list, no timeout: registers and returns at once.
    let r = unsafe { libc::kevent(kq.as_raw_fd(), &ev, 1, std::ptr::null_mut(), 0, std::ptr::null()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(kq)
}

/// Whether the watched process has exited (its `NOTE_EXIT` is pending).
fn fired(kq: &OwnedFd) -> bool {
    matches!(super::wait::poll_readable(&[kq.as_fd()], Some(Duration::ZERO)).as_deref(), Ok([true]))
}

/// Hold the process `pid` (see [`ProcDir`]): the exit watch is registered first, then the
/// identity read; a watch that fired while the number already names a live process means the
/// watched one is gone and the number reused, and everything is read again (three tries,
/// then `EAGAIN`). Errors: `ESRCH` when there is no such process; the read's errno
/// (`EPERM`, …) otherwise — never a guess.
pub fn open_proc_dir(pid: i32) -> io::Result<ProcDir> {
    super::fault::check(super::fault::Call::ProcRead)?;
    for _ in 0..3 {
        let watch = watch_exit(pid);
        let f = read_proc(pid)?;
        let exit = match watch {
            Ok(kq) if fired(&kq) && !f.proc.is_zombie() => continue,
            Ok(kq) => Some(kq),
            // Nothing to watch at registration, yet a live process read after it: the number
            // changed hands in between.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) && !f.proc.is_zombie() => continue,
            // A zombie, or a watch this caller may not register (EPERM): read, not watched.
            Err(_) => None,
        };
        return Ok(ProcDir { pid, start: f.start, unique: f.unique, exit });
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// The process `dir` holds, read now: `ESRCH` when the number names another process (its start
/// or unique id differs: ours was reaped) or none.
fn read_same(dir: &ProcDir) -> io::Result<Facts> {
    let f = read_proc(dir.pid)?;
    let other = f.start != dir.start || matches!((dir.unique, f.unique), (Some(a), Some(b)) if a != b);
    if other {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(f)
}

/// The [`Stat`] of the process `dir` holds, read now. `ESRCH`: that process is reaped.
pub fn read_stat_at(dir: &ProcDir) -> io::Result<Stat> {
    super::fault::check(super::fault::Call::ProcRead)?;
    read_same(dir).map(|f| to_stat(dir.pid, &f))
}

/// The real and saved uids of the process `dir` holds, read now. `ESRCH`: that process is
/// reaped.
pub fn read_uids_at(dir: &ProcDir) -> io::Result<(u32, u32)> {
    read_same(dir).map(|f| (f.proc.ruid, f.proc.svuid))
}
