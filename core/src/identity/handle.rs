//! The pinned process handle (systemd's `PidRef` pattern, SPEC §4.1).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use super::process::{info_from, snapshot, ProcessInfo, Snapshot};
use super::token::StartToken;
use super::verdict::{judge_record, judge_snapshot, Judgement, Policy, Verdict};
use crate::error::{Error, ErrorKind, Result};
use crate::signal::{refuse_group, refuse_pid, Refusal, Signal};
use crate::sys::{self, procfs, PIDFD_SIGNAL_PROCESS_GROUP};

/// How a handle reaches its process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinMode {
    /// Through a pidfd: a signal can never reach a process that reused the number.
    Pidfd,
    /// No pidfd could be opened (`ENOSYS` on Linux < 5.3, `EPERM` under old container seccomp
    /// profiles, BUGS H1): signals go through `kill(2)` with the start ticks re-read right
    /// before each one. A small window remains between that read and the signal.
    Unpinned,
}

/// How a group signal was delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMode {
    /// `pidfd_send_signal(…, PIDFD_SIGNAL_PROCESS_GROUP)` (Linux ≥ 6.9).
    PidfdGroupFlag,
    /// Member by member, each through its own pidfd after checking its pgid (Linux 5.3–6.8).
    PidfdMembers,
    /// `killpg(2)` right after re-reading the leader's start ticks (no pidfd).
    Killpg,
}

/// What a signal call achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Sent, by this route.
    Sent(Option<GroupMode>),
    /// The process (or every member of the group) had already exited: nothing was sent.
    AlreadyGone,
}

/// A process pinned by pid and identity: the only way pidguard signals, waits for or reaps a
/// process. There is no public "kill this number".
///
/// States and what each operation does in them:
/// - **running** (pinned by pidfd): `signal` and `signal_group` reach exactly this process and
///   the group it leads; `wait` blocks on pidfd readiness.
/// - **zombie** (exited, unreaped): `signal` is a no-op (`AlreadyGone`); `signal_group` still
///   reaches live members of the group it led, because the zombie pins the group number;
///   `wait` returns at once; `exit_status` is known only to its parent.
/// - **reaped**: every signal returns `AlreadyGone`; nothing reaches a successor of the number.
/// - **unpinned** (no pidfd on this system): the handle holds `/proc/<pid>` open instead; each
///   signal re-reads the start ticks through that directory right before `kill(2)` and sends
///   nothing once the process is reaped (the directory then answers `ESRCH`, even if the number
///   was reused within the same clock tick). Only the instant between that read and the
///   `kill(2)` remains open. `wait` polls every 10 ms; the exit status is `Unknown`.
#[derive(Debug)]
pub struct ProcessRef {
    pid: i32,
    pidfd: Option<OwnedFd>,
    token: StartToken,
    pgid: i32,
    ppid: i32,
    zombie_at_open: bool,
    judgement: Judgement,
    unpinned_because: Option<i32>,
    /// Unpinned only: the open `/proc/<pid>` directory, which stops answering once this process
    /// is reaped, so a successor of the number is never mistaken for it.
    procfd: Option<OwnedFd>,
    info: Option<ProcessInfo>,
}

impl ProcessRef {
    /// Pin `pid` and check it against `expected` under `policy`.
    ///
    /// Errors: `Refused` (see [`Error::refusal`]) for a protected target (pid ≤ 0, above
    /// `pid_max`, 1, our own pid, our parent unless `Match`) or a verdict the policy does not
    /// accept (`Mismatch`; `Unverifiable` under `Strict`); `NoSuchProcess` when the process is
    /// gone or a zombie; `Io` for unexpected system errors.
    ///
    /// `Lenient` relaxes only the absence of a recorded token: when `expected` is given, only
    /// `Match` is accepted under either policy (an unpinned handle cannot read the pidfs inode,
    /// so a same-tick reuse would otherwise pass as `Unverifiable`).
    pub fn open(pid: i32, expected: Option<&StartToken>, policy: Policy) -> Result<ProcessRef> {
        if let Some(r) = expected {
            if let Some(j) = judge_record(r) {
                return Err(refusal_error(pid, if j.verdict == Verdict::Mismatch { Refusal::Mismatch } else { Refusal::Unverifiable }));
            }
        }
        let h = ProcessRef::pin(pid, expected)?;
        match h.judgement.verdict {
            Verdict::Gone => Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid}: gone ({})", h.judgement.reason)).with_pid(pid)),
            Verdict::Mismatch => Err(refusal_error(pid, Refusal::Mismatch)),
            v if !policy.authorizes(v) || (expected.is_some() && v != Verdict::Match) => {
                Err(refusal_error(pid, Refusal::Unverifiable))
            }
            v => {
                if h.pid == sys::getppid() && v != Verdict::Match {
                    return Err(refusal_error(pid, Refusal::Parent));
                }
                if v == Verdict::Unverifiable {
                    log::warn!("pid {pid}: identity unverifiable ({}); signalling under the lenient policy", h.judgement.reason);
                }
                Ok(h)
            }
        }
    }

    /// Pin `pid` without a policy decision: refuses only protected targets. The handle's
    /// [`judgement`](Self::judgement) says how it compares with `expected`; zombies are pinned
    /// too (their group number is still held by the kernel).
    pub(crate) fn pin(pid: i32, expected: Option<&StartToken>) -> Result<ProcessRef> {
        if let Some(r) = refuse_pid(pid as i64) {
            return Err(refusal_error(pid, r));
        }
        let snap = snapshot(pid)?;
        let judgement = judge_snapshot(expected, &snap);
        Ok(ProcessRef::from_snapshot(snap, judgement))
    }

    fn from_snapshot(snap: Snapshot, judgement: Judgement) -> ProcessRef {
        let info = info_from(&snap);
        ProcessRef {
            pid: snap.pid,
            token: snap.token(),
            pgid: snap.stat.pgrp,
            ppid: snap.stat.ppid,
            zombie_at_open: snap.is_zombie(),
            judgement,
            unpinned_because: snap.unpinned_because,
            pidfd: snap.pidfd,
            procfd: snap.procfd,
            info: Some(info),
        }
    }

    /// The pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }
    /// Whether signals go through a pidfd (see [`PinMode`]).
    pub fn is_pinned(&self) -> bool {
        self.pidfd.is_some()
    }
    /// How this handle reaches its process.
    pub fn pin_mode(&self) -> PinMode {
        if self.pidfd.is_some() { PinMode::Pidfd } else { PinMode::Unpinned }
    }
    /// The errno that kept the handle from being pinned (`ENOSYS`, `EPERM`), if any.
    pub fn unpinned_because(&self) -> Option<i32> {
        self.unpinned_because
    }
    /// The live start token read when the handle was opened.
    pub fn token(&self) -> &StartToken {
        &self.token
    }
    /// The verdict against the expected token when the handle was opened.
    pub fn judgement(&self) -> Judgement {
        self.judgement
    }
    /// Facts read when the handle was opened.
    pub fn info(&self) -> Option<&ProcessInfo> {
        self.info.as_ref()
    }
    /// Whether the process led its own process group when opened.
    pub fn leads_group(&self) -> bool {
        self.pgid == self.pid
    }
    /// Whether the process was already a zombie when opened.
    pub fn was_zombie(&self) -> bool {
        self.zombie_at_open
    }
    /// Whether the process is the caller's own child (so its exit status can be read).
    pub fn is_child(&self) -> bool {
        self.ppid == sys::getpid()
    }
    /// The pidfd, for a caller's own event loop (it becomes readable when the process exits:
    /// `poll`, `epoll`, Python's `loop.add_reader`). `None` for an unpinned handle. The handle
    /// keeps ownership: the descriptor is closed when the handle is dropped.
    pub fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(|f| f.as_fd())
    }

    /// For an unpinned handle: is our process still there (alive or zombie, so the number and
    /// the group it leads are still its own)? Read through the open `/proc/<pid>`, which fails
    /// once our process is reaped, whatever holds the number then.
    fn unpinned_still_ours(&self) -> bool {
        let Some(dir) = &self.procfd else { return false };
        matches!(procfs::read_stat_at(dir.as_fd()), Ok(st) if st.start_ticks == self.token.start_ticks)
    }

    /// Whether the process group this handle's process led is provably still that group *now*,
    /// so that any process seen with that pgid before this call belongs to it.
    ///
    /// True while the leader is not reaped (alive or zombie: the kernel keeps its number
    /// allocated, so no other group can have it). After the leader is reaped, only a pinned
    /// handle on Linux ≥ 6.9 can tell: a null signal with `PIDFD_SIGNAL_PROCESS_GROUP` reaches
    /// the remaining members of this very group and fails with `ESRCH` when none is left
    /// (members keep the number allocated, so it cannot have passed to a new group meanwhile).
    pub(crate) fn group_still_ours(&self) -> bool {
        let alive = |r: std::io::Result<()>| match r {
            Ok(()) => true,
            Err(e) => e.raw_os_error() == Some(libc::EPERM),
        };
        match &self.pidfd {
            Some(fd) => {
                alive(sys::pidfd_send_signal(fd.as_fd(), 0, 0))
                    || (self.leads_group() && alive(sys::pidfd_send_signal(fd.as_fd(), 0, PIDFD_SIGNAL_PROCESS_GROUP)))
            }
            None => self.unpinned_still_ours(),
        }
    }

    /// Send `sig` to the process alone.
    ///
    /// Returns `AlreadyGone` when it has exited (or, unpinned, when the number now names another
    /// process). Errors: `PermissionDenied` for `EPERM`; `Io` otherwise.
    pub fn signal(&self, sig: Signal) -> Result<Delivery> {
        let r = match &self.pidfd {
            Some(fd) => sys::pidfd_send_signal(fd.as_fd(), sig.number(), 0),
            None => {
                if !self.unpinned_still_ours() {
                    return Ok(Delivery::AlreadyGone);
                }
                sys::kill(self.pid, sig.number())
            }
        };
        match r {
            Ok(()) => Ok(Delivery::Sent(None)),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(Delivery::AlreadyGone),
            Err(e) => Err(Error::io_pid(self.pid, &format!("send {sig}"), &e)),
        }
    }

    /// Send `sig` to the process group this process leads (SPEC §4.1).
    ///
    /// Tries `PIDFD_SIGNAL_PROCESS_GROUP` (Linux ≥ 6.9); on `EINVAL` signals member by member
    /// through pidfds; unpinned, uses `killpg` right after re-checking the leader's start ticks.
    /// Errors: `Refused` when the process does not lead its group, or the group is 1 or our own;
    /// `PermissionDenied` for `EPERM`; `Io` otherwise.
    pub fn signal_group(&self, sig: Signal) -> Result<Delivery> {
        if !self.leads_group() {
            return Err(Error::new(
                ErrorKind::Refused,
                format!("pid {} does not lead its process group ({}): its group is someone else's", self.pid, self.pgid),
            )
            .with_pid(self.pid));
        }
        if let Some(r) = refuse_group(self.pid) {
            return Err(refusal_error(self.pid, r));
        }
        let Some(fd) = &self.pidfd else {
            if !self.unpinned_still_ours() {
                // The leader is reaped: live members can no longer be proven to be its group.
                return Ok(Delivery::AlreadyGone);
            }
            return match sys::killpg(self.pid, sig.number()) {
                Ok(()) => Ok(Delivery::Sent(Some(GroupMode::Killpg))),
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(Delivery::AlreadyGone),
                Err(e) => Err(Error::io_pid(self.pid, &format!("killpg {sig}"), &e)),
            };
        };
        match sys::pidfd_send_signal(fd.as_fd(), sig.number(), PIDFD_SIGNAL_PROCESS_GROUP) {
            Ok(()) => Ok(Delivery::Sent(Some(GroupMode::PidfdGroupFlag))),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(Delivery::AlreadyGone),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.signal_members(sig),
            Err(e) => Err(Error::io_pid(self.pid, &format!("send {sig} to the group"), &e)),
        }
    }

    /// Linux 5.3–6.8: signal each member through its own pidfd. Each member is pinned, its pgid
    /// re-read, and the pinned process checked to be the one read; only then is the group
    /// number proven still ours ([`Self::group_still_ours`]: the leader is not reaped), so every
    /// member read before that proof is in our group. Rescans until no new member appears. Once
    /// the leader is reaped nothing more is sent: its members can no longer be proven ours.
    fn signal_members(&self, sig: Signal) -> Result<Delivery> {
        let leader = self.pidfd.as_ref().expect("members mode needs a pinned leader");
        let mut done: Vec<i32> = Vec::new();
        let mut sent_any = false;
        for _round in 0..16 {
            let members = procfs::group_members(self.pid).map_err(|e| Error::io_pid(self.pid, "scan /proc", &e))?;
            let mut batch: Vec<OwnedFd> = Vec::new();
            let mut leader_in_batch = false;
            for (m, _) in members {
                if done.contains(&m) || refuse_pid(m as i64).is_some() {
                    continue;
                }
                done.push(m);
                if m == self.pid {
                    leader_in_batch = true;
                    continue;
                }
                let Ok(fd) = sys::pidfd_open(m) else { continue };
                // Re-read after pinning: the member must still be in our group, and the pinned
                // process must still exist, so the stat read was its own.
                if !matches!(procfs::read_stat(m), Ok(st) if st.pgrp == self.pid) {
                    continue;
                }
                match sys::pidfd_send_signal(fd.as_fd(), 0, 0) {
                    Ok(()) => batch.push(fd),
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => batch.push(fd),
                    Err(_) => {}
                }
            }
            if batch.is_empty() && !leader_in_batch {
                break;
            }
            // The proof comes after every read above.
            if !self.group_still_ours() {
                break;
            }
            if leader_in_batch && sys::pidfd_send_signal(leader.as_fd(), sig.number(), 0).is_ok() {
                sent_any = true;
            }
            for fd in &batch {
                if sys::pidfd_send_signal(fd.as_fd(), sig.number(), 0).is_ok() {
                    sent_any = true;
                }
            }
        }
        Ok(if sent_any { Delivery::Sent(Some(GroupMode::PidfdMembers)) } else { Delivery::AlreadyGone })
    }

    /// Whether the process has exited (it may still be an unreaped zombie).
    pub fn has_exited(&self) -> bool {
        match &self.pidfd {
            Some(fd) => matches!(sys::poll_readable(&[fd.as_fd()], Some(Duration::ZERO)).as_deref(), Ok([true])),
            None => {
                let Some(dir) = &self.procfd else { return true };
                match procfs::read_stat_at(dir.as_fd()) {
                    Ok(st) => st.start_ticks != self.token.start_ticks || matches!(st.state, b'Z' | b'X'),
                    // Reaped. Any other error (EACCES, …) is not proof of death: EPERM-like
                    // answers never mean "dead".
                    Err(e) => matches!(e.raw_os_error(), Some(libc::ESRCH) | Some(libc::ENOENT)),
                }
            }
        }
    }

    /// Wait until the process exits or `timeout` passes (`None`: forever). Returns whether it
    /// exited. Pinned: blocks on pidfd readiness, no polling loop. Unpinned: checks every 10 ms.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        match &self.pidfd {
            Some(fd) => sys::poll_readable(&[fd.as_fd()], timeout)
                .map(|r| r[0])
                .map_err(|e| Error::io_pid(self.pid, "poll pidfd", &e)),
            None => {
                let start = std::time::Instant::now();
                loop {
                    if self.has_exited() {
                        return Ok(true);
                    }
                    if timeout.is_some_and(|t| start.elapsed() >= t) {
                        return Ok(false);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    /// The exit status, when the process is the caller's own child and has exited. With
    /// `reap`, the child is reaped (`waitid(P_PIDFD)`, Linux ≥ 5.4); without, it is left
    /// waitable (`WNOWAIT`) for the code that spawned it (Python's `Popen`, Node's
    /// `ChildProcess`). `Unknown` for anybody else's process: never an invented 0.
    pub fn exit_status(&self, reap: bool) -> crate::signal::ExitStatus {
        use crate::signal::ExitStatus;
        let Some(fd) = &self.pidfd else { return ExitStatus::Unknown };
        match sys::waitid_pidfd(fd.as_fd(), !reap) {
            Ok(Some(sys::ChildExit::Code(c))) => ExitStatus::Code(c),
            Ok(Some(sys::ChildExit::Signal(s))) => ExitStatus::Signaled(s),
            Ok(None) => ExitStatus::Running,
            Err(_) => ExitStatus::Unknown,
        }
    }
}

pub(crate) fn refusal_error(pid: i32, r: Refusal) -> Error {
    Error::refused(pid, r)
}
