//! Walking a scope's members with a bounded number of descriptors, and signalling them so that a
//! fork storm cannot outrun the walk.
//!
//! - **Bounded pins.** A cgroup's members are pinned [`CHUNK`] at a time: the chunk is pinned,
//!   `cgroup.procs` is read again (a pid still listed after pinning names the pinned process),
//!   the chunk is signalled and its pidfds dropped before the next one is pinned. A supervisor's
//!   tree is walked depth first holding one pidfd per level of the path from the supervisor to
//!   the current process (the parent each child's `ppid` is checked against). A scope larger
//!   than the free descriptors is still stopped; only a pidfd that cannot be had even alone is
//!   an error (`EMFILE`/`ENFILE`).
//! - **Each member once per signal.** A member is remembered across the rescans of one signal by
//!   its pid and start time (ticks since boot, `/proc/<pid>/stat` read after pinning): a rescan
//!   signals only processes it has not signalled yet, and a pid reused by a new member counts as
//!   new. A rescan that finds nothing new ends the signal.
//! - **Signal before descending.** In a supervisor's tree a process is signalled before its
//!   children are read: once it has a `SIGSTOP` or `SIGKILL` pending it cannot fork (the kernel
//!   aborts a fork when a group-wide signal arrives during it), so every child it will ever have
//!   is in the list read after the signal.
//! - **Hold first.** A signal other than `SIGKILL`, `SIGSTOP` and `SIGCONT` is sent to a held
//!   scope: a cgroup is frozen (`cgroup.freeze`; its `frozen 1` awaited up to [`FREEZE_WAIT`])
//!   and thawed after; where there is no freezer (a supervisor, a cgroup whose freeze failed, a
//!   uid-restricted stop, which must not freeze another uid's processes) every member is sent
//!   `SIGSTOP` first, then the signal, then `SIGCONT` — only the members this stop stopped (one
//!   already stopped stays stopped). A held process cannot fork, so the signal's walk is
//!   complete in one pass. `SIGKILL` needs no hold to stop forks (a process with it pending
//!   cannot fork), but members that exit during the walk hand their children up to the
//!   supervisor behind it: a supervisor's tree (and a uid-restricted cgroup) is sent `SIGSTOP`
//!   first, then `SIGKILL` to a tree that no longer moves (stop-then-kill).

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use super::delivery::{member_has_uid, send_as_owner};
use super::handle::Delivery;
use super::scope::{Inner, Scope};
use crate::error::{Error, ErrorKind, Result};
use crate::protect::{refuse, Target};
use crate::signo::Signal;
use crate::sys::procfs::Stat;
use crate::sys::{self, cgroup, procfs};

/// At most this many members of a cgroup are pinned at once.
pub(crate) const CHUNK: usize = 32;

/// Rescans of one signal, at most: a held scope needs two (the signal, and one that finds
/// nothing new); the bound only ends a walk the kernel keeps feeding.
const ROUNDS: usize = 8;

/// How long a freeze is awaited (`frozen 1` in `cgroup.events`) before the signal is sent
/// anyway: the freeze is a hold, not a condition of the signal.
const FREEZE_WAIT: Duration = Duration::from_millis(200);

/// Pin a cgroup member: its pidfd, or where a seccomp filter or an old kernel refuses
/// `pidfd_open` (`ENOSYS`, `EPERM`), its open `/proc/<pid>` directory, which names the same
/// process (a read through it fails once that process is reaped, even if the number was
/// reused) and which `pidfd_send_signal` takes as a pidfd. Proven a member as a pidfd is: listed
/// again after pinning, and its stat read through the pin after that.
fn pin(pid: i32) -> std::io::Result<OwnedFd> {
    match sys::pidfd_open(pid) {
        #[cfg(target_os = "linux")]
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) => procfs::open_proc_dir(pid).map(|d| d.into_fd()),
        r => r,
    }
}

fn too_many_files(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

/// Whether a failed read of a pinned process's `/proc` entry proves it gone (`ESRCH`,
/// `ENOENT`: reaped or exiting): any other error (`EMFILE`, `EACCES`, …) is "could not tell",
/// and the walk fails with it rather than count the process out.
fn read_says_gone(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ESRCH) | Some(libc::ENOENT))
}

/// One level of a supervisor walk: a process proven in the tree, pinned, and its children not
/// yet walked.
struct Level {
    pid: i32,
    fd: Option<OwnedFd>,
    kids: Vec<i32>,
}

impl Scope {
    /// Visit every member once, each pinned and proven inside the scope after pinning (see
    /// [`Scope::members`]), with its `/proc/<pid>/stat` read after pinning. At most [`CHUNK`]
    /// pidfds of a cgroup's members, or one per tree level of a supervisor's, are held at once.
    /// Protected targets are left out. Returns how many were visited.
    ///
    /// Errors: the errno of reading `cgroup.procs` or `/proc`; `EMFILE`/`ENFILE` when not even
    /// one more pidfd can be had.
    pub(crate) fn walk(&self, visit: &mut dyn FnMut(i32, &Stat, BorrowedFd<'_>)) -> std::io::Result<usize> {
        match &self.inner {
            Inner::Cgroup { dir, .. } => {
                // The leaf's own members and those of any cgroup a member made below it.
                let read = || cgroup::subtree_procs(dir.as_fd());
                let listed = read()?;
                let mut n = 0;
                let mut i = 0;
                while i < listed.len() {
                    let mut pinned: Vec<(i32, OwnedFd)> = Vec::new();
                    while i < listed.len() && pinned.len() < CHUNK {
                        let p = listed[i];
                        if refuse(Target::Process { pid: p as i64, token_matched: false }).is_some() {
                            i += 1;
                            continue;
                        }
                        sys::fault::point(sys::fault::Point::BeforeScopePin);
                        match pin(p) {
                            Ok(fd) => pinned.push((p, fd)),
                            Err(e) if too_many_files(&e) && !pinned.is_empty() => break,
                            Err(e) if too_many_files(&e) => return Err(e),
                            // Refused (no pidfd, no /proc/<pid>): the member is there but
                            // cannot be pinned; a walk that skipped it would say "not a member".
                            Err(e) if !matches!(e.raw_os_error(), Some(libc::ESRCH) | Some(libc::ENOENT) | Some(libc::EINVAL)) => return Err(e),
                            Err(_) => {}
                        }
                        i += 1;
                    }
                    // A pid listed again after pinning names the pinned process (a pinned pid
                    // cannot be reused), and a process is in exactly one cgroup.
                    let again: HashSet<i32> = read()?.into_iter().collect();
                    for (p, fd) in &pinned {
                        if again.contains(p) {
                            match procfs::read_stat(*p) {
                                Ok(st) => {
                                    visit(*p, &st, fd.as_fd());
                                    n += 1;
                                }
                                Err(e) if read_says_gone(&e) => {}
                                Err(e) => return Err(e),
                            }
                        }
                    }
                }
                Ok(n)
            }
            Inner::Supervisor { pid, pidfd } => {
                let mut seen: HashSet<(i32, u64)> = HashSet::new();
                let mut kids = procfs::children(*pid)?;
                kids.reverse();
                let mut path = vec![Level { pid: *pid, fd: None, kids }];
                let mut n = 0;
                while let Some(top) = path.last_mut() {
                    let Some(c) = top.kids.pop() else {
                        path.pop();
                        continue;
                    };
                    let parent = top.pid;
                    if refuse(Target::Process { pid: c as i64, token_matched: false }).is_some() {
                        continue;
                    }
                    sys::fault::point(sys::fault::Point::BeforeScopePin);
                    let fd = match sys::pidfd_open(c) {
                        Ok(fd) => fd,
                        Err(e) if too_many_files(&e) => return Err(e),
                        Err(_) => continue,
                    };
                    // After pinning: its parent must still be the pinned process it was found
                    // under, and that parent must still be alive (its pid still its own).
                    let st = match procfs::read_stat(c) {
                        Ok(st) => st,
                        Err(e) if read_says_gone(&e) => continue,
                        Err(e) => return Err(e),
                    };
                    let pfd = top.fd.as_ref().map_or(pidfd.as_fd(), |f| f.as_fd());
                    let parent_alive = sys::poll_readable(&[pfd], Some(Duration::ZERO))? == [false];
                    if st.ppid != parent || !parent_alive || !seen.insert((c, st.start_ticks)) {
                        continue;
                    }
                    visit(c, &st, fd.as_fd());
                    n += 1;
                    // Read after the visit: a process signalled to stop (or die) forks no more.
                    let mut kids = procfs::children(c)?;
                    kids.reverse();
                    path.push(Level { pid: c, fd: Some(fd), kids });
                }
                Ok(n)
            }
        }
    }

    /// Send `sig` to every member not yet sent it by this call for which `pick` says yes,
    /// rescanning until a scan finds no member it has not seen ([`ROUNDS`] at most). A member
    /// whose uid is not the restriction's is skipped and remembered ([`Scope::skipped_for_uid`]).
    /// Returns the members signalled, by pid and start time — also when the walk then failed:
    /// the second value is that failure (`Io` when the members could not be read), or
    /// `PermissionDenied` when the kernel refused every signal.
    fn send_rounds(&self, sig: Signal, pick: &mut dyn FnMut(i32, &Stat) -> bool) -> (HashMap<i32, u64>, Result<()>) {
        let mut done: HashMap<i32, u64> = HashMap::new();
        let mut sent: HashMap<i32, u64> = HashMap::new();
        let mut denied = None;
        for _ in 0..ROUNDS {
            let mut fresh = 0;
            let walked = self.walk(&mut |p, st, fd| {
                if done.get(&p) == Some(&st.start_ticks) {
                    return;
                }
                done.insert(p, st.start_ticks);
                fresh += 1;
                if !pick(p, st) {
                    return;
                }
                if let Some(owner) = self.only_uid {
                    // Checked immediately before its own signal (see ProcessRef::signal_group).
                    if !member_has_uid(p, fd, owner) {
                        log::warn!("pid {p} in scope {}: not signalled, its uid is not the pidfile owner's ({owner})", self.record());
                        let mut s = self.skipped_for_uid.lock().unwrap_or_else(|x| x.into_inner());
                        if !s.contains(&p) {
                            s.push(p);
                        }
                        return;
                    }
                }
                let (r, as_owner) = match self.only_uid {
                    // With the owner's credentials: the kernel refuses a member that became
                    // another uid's since its check.
                    Some(owner) => send_as_owner(fd, sig.number(), owner),
                    None => (sys::pidfd_send_signal(fd, sig.number(), 0), false),
                };
                match r {
                    Ok(()) => {
                        sent.insert(p, st.start_ticks);
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) && as_owner => {
                        let mut s = self.skipped_for_uid.lock().unwrap_or_else(|x| x.into_inner());
                        if !s.contains(&p) {
                            s.push(p);
                        }
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => denied = Some(e),
                    Err(_) => {}
                }
            });
            if let Err(e) = walked {
                return (sent, Err(Error::new(ErrorKind::Io, format!("read the scope's members: {e}"))));
            }
            if fresh == 0 {
                break;
            }
        }
        match (sent.is_empty(), denied) {
            (true, Some(e)) => (sent, Err(Error::new(ErrorKind::PermissionDenied, format!("send {sig} to the scope {}: {e}", self.record())))),
            _ => (sent, Ok(())),
        }
    }

    /// Continue (`SIGCONT`) each process this stop stopped, by pid and start time: each pinned by
    /// a fresh pidfd, its start time read after pinning and compared, then signalled through the
    /// pin — one descriptor at a time, without a walk of the scope (a walk that could not be
    /// made, `EMFILE`, must not leave a process stopped). How many were continued.
    fn continue_each(&self, stopped: &[(i32, u64)]) -> usize {
        let mut n = 0;
        for &(p, ticks) in stopped {
            let Ok(fd) = sys::pidfd_open(p) else { continue };
            let same = procfs::read_stat(p).is_ok_and(|st| st.start_ticks == ticks);
            if same && sys::pidfd_send_signal(fd.as_fd(), Signal::CONT.number(), 0).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Send `sig` to every member (the walk of [`Self::walk`], rescanned), the scope held first
    /// for any signal but `SIGKILL`, `SIGSTOP` and `SIGCONT` (see the module's docs).
    ///
    /// Whatever this call froze is thawed and every member it stopped is continued, on every
    /// path (also when a walk failed). An error that comes after signals were sent carries them
    /// ([`SentBeforeError`]: a report names every signal that reached a member).
    pub(super) fn signal_members(&self, sig: Signal) -> Result<Delivery> {
        let mut reached: Vec<Signal> = Vec::new();
        let (sent, r) = if sig == Signal::KILL {
            // Stop, then kill: every member reached is stopped first, so no member exits (its
            // children moving up to the supervisor behind the walk) or forks while the kill's
            // walk runs: that walk meets a still tree. (A cgroup without a restriction is
            // killed through `cgroup.kill` before it gets here.) A member stopped but not killed
            // (its uid changed between the two checks) is continued.
            let (stopped, rs) = self.send_rounds(Signal::STOP, &mut |_, _| true);
            if !stopped.is_empty() {
                reached.push(Signal::STOP);
            }
            let (sent, r) = self.send_rounds(sig, &mut |_, _| true);
            let mut to_cont: Vec<(i32, u64)> = stopped.into_iter().filter(|(p, t)| sent.get(p) != Some(t)).collect();
            to_cont.sort_unstable();
            if self.continue_each(&to_cont) > 0 {
                reached.push(Signal::CONT);
            }
            (sent, rs.and(r))
        } else if [Signal::STOP, Signal::CONT].contains(&sig) {
            self.send_rounds(sig, &mut |_, _| true)
        } else if let Some(thaw) = self.freeze() {
            let x = self.send_rounds(sig, &mut |_, _| true);
            thaw.release();
            x
        } else {
            // Stopped here: only those not stopped already (state `T`) are continued after.
            let mut was_stopped: HashSet<(i32, u64)> = HashSet::new();
            let (stopped, rs) = self.send_rounds(Signal::STOP, &mut |p, st| {
                if st.state == b'T' {
                    was_stopped.insert((p, st.start_ticks));
                }
                true
            });
            if !stopped.is_empty() {
                reached.push(Signal::STOP);
            }
            // Sent even when the hold is incomplete (its walk failed): every member reached is
            // proven inside the scope, and the error is reported below.
            let (sent, r) = self.send_rounds(sig, &mut |_, _| true);
            if !sent.is_empty() {
                reached.push(sig);
            }
            let mut to_cont: Vec<(i32, u64)> = stopped.into_iter().filter(|m| !was_stopped.contains(m)).collect();
            to_cont.sort_unstable();
            if self.continue_each(&to_cont) > 0 {
                reached.push(Signal::CONT);
            }
            (sent, rs.and(r))
        };
        match r {
            Ok(()) => Ok(if sent.is_empty() { Delivery::AlreadyGone } else { Delivery::Sent(None) }),
            Err(mut e) => {
                if !sent.is_empty() && !reached.contains(&sig) {
                    reached.push(sig);
                }
                if !reached.is_empty() {
                    e.set_detail(SentBeforeError(reached));
                }
                Err(e)
            }
        }
    }

    /// Freeze a cgroup scope (unrestricted only: a uid-restricted stop must not hold another
    /// uid's processes) and await `frozen 1` up to [`FREEZE_WAIT`]. `None` for a supervisor, a
    /// restricted stop, or a freeze the kernel refused (no `cgroup.freeze` before Linux 5.2).
    pub(super) fn freeze(&self) -> Option<Thaw> {
        let (Inner::Cgroup { dir, events, .. }, None) = (&self.inner, self.only_uid) else { return None };
        let f = cgroup::open_at(dir.as_fd(), "cgroup.freeze", libc::O_RDWR).ok()?;
        if cgroup::read_file(f.as_fd()).ok()?.starts_with(b"1") {
            // Frozen by someone else: held already, and left frozen.
            return Some(Thaw(None));
        }
        cgroup::write_file(f.as_fd(), b"1").ok()?;
        let until = Instant::now() + FREEZE_WAIT;
        loop {
            let frozen = cgroup::read_file(events.as_fd()).is_ok_and(|t| t.split(|&b| b == b'\n').any(|l| l == b"frozen 1"));
            let left = until.saturating_duration_since(Instant::now());
            if frozen || left.is_zero() {
                break;
            }
            let _ = cgroup::poll_any(&[(events.as_fd(), libc::POLLPRI)], left.min(Duration::from_millis(20)));
        }
        Some(Thaw(Some(f)))
    }
}

/// The signals a failed scope signal had sent before it failed (each reached at least one
/// member), attached to its error: the schedule runner reports them.
#[derive(Debug, Clone)]
pub(crate) struct SentBeforeError(pub(crate) Vec<Signal>);

/// A freeze to undo: `cgroup.freeze`, or nothing when the cgroup was frozen before.
pub(super) struct Thaw(Option<OwnedFd>);

impl Thaw {
    /// Thaw the cgroup (write `0` to `cgroup.freeze`) when this call froze it.
    pub(super) fn release(self) {
        if let Some(f) = &self.0 {
            let _ = cgroup::write_file(f.as_fd(), b"0");
        }
    }
}
