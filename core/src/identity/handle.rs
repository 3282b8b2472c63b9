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
/// - **unpinned** (no pidfd on this system): as above, but each signal re-reads the start ticks
///   of `/proc/<pid>/stat` first and sends nothing if they changed; `wait` polls every 10 ms.
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
    info: Option<ProcessInfo>,
}

impl ProcessRef {
    /// Pin `pid` and check it against `expected` under `policy`.
    ///
    /// Errors: `Refused` (see [`Error::refusal`]) for a protected target (pid ≤ 0, above
    /// `pid_max`, 1, our own pid, our parent unless `Match`) or a verdict the policy does not
    /// accept (`Mismatch`; `Unverifiable` under `Strict`); `NoSuchProcess` when the process is
    /// gone or a zombie; `Io` for unexpected system errors.
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
            v if !policy.authorizes(v) => Err(refusal_error(pid, Refusal::Unverifiable)),
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
    pub(crate) fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(|f| f.as_fd())
    }

    /// For an unpinned handle: is the number still held by our process (alive or zombie)?
    fn unpinned_still_ours(&self) -> bool {
        matches!(procfs::read_stat(self.pid), Ok(st) if st.start_ticks == self.token.start_ticks)
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

    /// Linux 5.3–6.8: signal each member through its own pidfd. The leader's pidfd proves the
    /// group number is still ours (a pid number stays allocated while it names a live group or
    /// an unreaped leader), then each member is pinned and its pgid re-read before it is sent
    /// anything. Rescans until no new member appears.
    fn signal_members(&self, sig: Signal) -> Result<Delivery> {
        let leader = self.pidfd.as_ref().expect("members mode needs a pinned leader");
        let mut done: Vec<i32> = Vec::new();
        let mut sent_any = false;
        for _round in 0..16 {
            match sys::pidfd_send_signal(leader.as_fd(), 0, 0) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
                // Leader reaped: no proof the number still names our group.
                Err(_) => break,
            }
            let members = procfs::group_members(self.pid).map_err(|e| Error::io_pid(self.pid, "scan /proc", &e))?;
            let mut new = false;
            for (m, _) in members {
                if done.contains(&m) || refuse_pid(m as i64).is_some() {
                    continue;
                }
                new = true;
                done.push(m);
                let fd = if m == self.pid {
                    None
                } else {
                    match sys::pidfd_open(m) {
                        Ok(fd) => Some(fd),
                        Err(_) => continue,
                    }
                };
                let fd_ref = fd.as_ref().map(|f| f.as_fd()).unwrap_or(leader.as_fd());
                // Re-read after pinning: the member must still be in our group.
                if m != self.pid && !matches!(procfs::read_stat(m), Ok(st) if st.pgrp == self.pid) {
                    continue;
                }
                if m != self.pid && sys::pidfd_send_signal(fd_ref, 0, 0).is_err() {
                    continue;
                }
                if sys::pidfd_send_signal(fd_ref, sig.number(), 0).is_ok() {
                    sent_any = true;
                }
            }
            if !new {
                break;
            }
        }
        Ok(if sent_any { Delivery::Sent(Some(GroupMode::PidfdMembers)) } else { Delivery::AlreadyGone })
    }

    /// Whether the process has exited (it may still be an unreaped zombie).
    pub fn has_exited(&self) -> bool {
        match &self.pidfd {
            Some(fd) => matches!(sys::poll_readable(&[fd.as_fd()], Some(Duration::ZERO)).as_deref(), Ok([true])),
            None => match procfs::read_stat(self.pid) {
                Ok(st) => st.start_ticks != self.token.start_ticks || matches!(st.state, b'Z' | b'X'),
                Err(_) => true,
            },
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
