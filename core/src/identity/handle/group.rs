//! Signalling the process group a handle's process leads (or its scope): the group flag of
//! `pidfd_send_signal`, member by member through pidfds on older kernels, `killpg` unpinned.

use std::os::fd::{AsFd, OwnedFd};

use super::{refusal_error, untrusted, ProcessRef};
use crate::error::{Error, ErrorKind, Result};
use crate::identity::delivery::{member_has_uid, send_as_owner, Delivery, GroupMode};
use crate::protect::{refuse, Target};
use crate::signo::Signal;
use crate::sys::{self, procfs, PIDFD_SIGNAL_PROCESS_GROUP};

impl ProcessRef {
    /// Send `sig` to the process group this process leads — or, with a scope attached
    /// ([`Self::scope_kind`]), to every process of the scope.
    ///
    /// Tries `PIDFD_SIGNAL_PROCESS_GROUP` (Linux ≥ 6.9); on `EINVAL` signals member by member
    /// through pidfds; unpinned, uses `killpg` right after re-checking the leader's start ticks.
    /// Errors: `Refused` when the process does not lead its group, or the group is 1 or our own;
    /// `PermissionDenied` for `EPERM`; `Io` otherwise.
    pub fn signal_group(&self, sig: Signal) -> Result<Delivery> {
        if let Some(scope) = &self.scope {
            // The whole tree: every member pinned and proven inside the scope (each checked
            // against a uid restriction, which the scope carries), nothing outside it.
            return scope.signal(sig);
        }
        if !self.leads_group() {
            return Err(Error::new(
                ErrorKind::Refused,
                format!("pid {} does not lead its process group: its group is someone else's", self.pid),
            )
            .with_pid(self.pid));
        }
        if let Some(r) = refuse(Target::Group { pgid: self.pid as i64 }) {
            return Err(refusal_error(self.pid, r));
        }
        self.check_own_uid()?;
        if let Some(owner) = self.only_uid {
            // Under a uid restriction every member is checked before it is signalled, so the
            // group flag (which reaches every member at once) is not used.
            if self.pidfd.is_none() {
                return Err(untrusted(self.pid, owner, "the group members cannot be pinned to check their uids (no pidfd)"));
            }
            return self.signal_members(sig);
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
    ///
    /// Under a uid restriction ([`Self::restrict_to_uid`]) each member, the leader included, is
    /// checked through its own pidfd immediately before its own signal ([`member_has_uid`],
    /// which documents the setuid window that remains), never all members first and all
    /// signals after.
    fn signal_members(&self, sig: Signal) -> Result<Delivery> {
        // Unreachable: both callers return first when the handle has no pidfd.
        let leader = self.pidfd.as_ref().expect("members mode needs a pinned leader");
        let mut done: Vec<i32> = Vec::new();
        let mut sent_any = false;
        let mut denied: Option<std::io::Error> = None;
        for _round in 0..16 {
            let members = procfs::group_members(self.pid).map_err(|e| Error::io_pid(self.pid, "scan /proc", &e))?;
            let mut batch: Vec<(i32, OwnedFd)> = Vec::new();
            let mut leader_in_batch = false;
            for (m, _) in members {
                if done.contains(&m) || refuse(Target::Process { pid: m as i64, token_matched: true }).is_some() {
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
                    Ok(()) => batch.push((m, fd)),
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => batch.push((m, fd)),
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
            let targets = leader_in_batch.then_some((self.pid, leader)).into_iter().chain(batch.iter().map(|(m, fd)| (*m, fd)));
            for (m, fd) in targets {
                if let Some(owner) = self.only_uid {
                    // Each member is checked immediately before its own signal, not all of
                    // them first and all signals after: a member that changed uid while the
                    // others were being signalled is skipped.
                    if !member_has_uid(m, fd.as_fd(), owner) {
                        log::warn!("pid {m} in group {}: not signalled, its uid is not the pidfile owner's ({owner})", self.pid);
                        let mut skipped = self.skipped_for_uid.lock().unwrap_or_else(|p| p.into_inner());
                        if !skipped.contains(&m) {
                            skipped.push(m);
                        }
                        continue;
                    }
                    crate::sys::fault::point(crate::sys::fault::Point::BeforeMemberSignal);
                }
                let (r, as_owner) = match self.only_uid {
                    // Sent with the owner's credentials: a member that became another uid's
                    // since its check is refused by the kernel itself.
                    Some(owner) => send_as_owner(fd.as_fd(), sig.number(), owner),
                    None => (sys::pidfd_send_signal(fd.as_fd(), sig.number(), 0), false),
                };
                match r {
                    Ok(()) => sent_any = true,
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) && as_owner => {
                        log::warn!("pid {m} in group {}: not signalled, it is no longer the pidfile owner's (the kernel refused the owner's signal)", self.pid);
                        let mut skipped = self.skipped_for_uid.lock().unwrap_or_else(|p| p.into_inner());
                        if !skipped.contains(&m) {
                            skipped.push(m);
                        }
                    }
                    // The kernel refused: remembered, so that a group nobody could signal is
                    // reported as refused, never as gone.
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => denied = Some(e),
                    Err(_) => {}
                }
            }
        }
        match (sent_any, denied) {
            (true, _) => Ok(Delivery::Sent(Some(GroupMode::PidfdMembers))),
            (false, Some(e)) => Err(Error::io_pid(self.pid, &format!("send {sig} to the group"), &e)),
            (false, None) => Ok(Delivery::AlreadyGone),
        }
    }
}
