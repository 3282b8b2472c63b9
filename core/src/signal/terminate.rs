//! Terminating many targets in parallel with an escalation schedule.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use super::stepper::Stepper;
use super::{Refusal, Schedule, Step};
pub use super::outcome::{Outcome, TerminateReport, FINAL_GRACE};
use crate::error::{Error, ErrorKind};
use crate::identity::{Delivery, ExitStatus, GroupMode, ProcessRef};
use crate::sys::{self, procfs};

/// Options of [`terminate`].
#[derive(Clone, Debug)]
pub struct TerminateOptions {
    /// The escalation schedule (default `TERM/2/KILL/1`).
    pub schedule: Schedule,
    /// Signal the process group of a target that leads one (default true). A target that does
    /// not lead its group is always signalled alone: its group is someone else's.
    pub group: bool,
    /// Reap targets that are the caller's children once they exit (default false: they are
    /// left for the code that spawned them, and their status is read with `WNOWAIT`). Only
    /// through a pidfd: an unpinned handle reads the status but never reaps (see
    /// [`ProcessRef::exit_status`]).
    pub reap: bool,
}

impl Default for TerminateOptions {
    fn default() -> Self {
        TerminateOptions { schedule: Schedule::default(), group: true, reap: false }
    }
}

struct Member {
    pid: i32,
    fd: Option<OwnedFd>,
    exited: bool,
}

struct Run<'a> {
    h: &'a ProcessRef,
    group: bool,
    leader_exited: bool,
    members: Vec<Member>,
    group_mode: Option<GroupMode>,
    /// Where the target stands in the schedule (the runner shared with scopes).
    st: Stepper,
}


/// Live members of the given groups, in one pass over `/proc` (a zombie is left out; a leader in
/// `Z` whose other threads run is live: [`crate::identity::thread_group_exited`]).
fn scan_groups(pgids: &HashSet<i32>) -> HashMap<i32, Vec<i32>> {
    let mut out: HashMap<i32, Vec<i32>> = HashMap::new();
    if pgids.is_empty() {
        return out;
    }
    for pid in procfs::list_pids().unwrap_or_default() {
        if let Ok(st) = procfs::read_stat(pid) {
            if pgids.contains(&st.pgrp) && !crate::identity::thread_group_exited(&st, None) {
                out.entry(st.pgrp).or_default().push(pid);
            }
        }
    }
    out
}

impl Run<'_> {
    fn done(&self) -> bool {
        self.st.done()
    }

    /// Bring the member list up to date with a scan; pin new members. A process seen with our
    /// pgid counts as a member only if the group number is proven still ours *after* it was
    /// read ([`ProcessRef::group_still_ours`]): once the leader is reaped, the number may name
    /// a stranger's new group, whose members are never ours to wait for (or to signal).
    fn refresh(&mut self, scan: &HashMap<i32, Vec<i32>>) {
        let pid = self.h.pid();
        let live: Vec<i32> = scan.get(&pid).map(|v| v.iter().copied().filter(|&m| m != pid).collect()).unwrap_or_default();
        self.members.retain(|m| live.contains(&m.pid) && !m.exited);
        let mut new = Vec::new();
        for m in live {
            if self.members.iter().any(|x| x.pid == m) {
                continue;
            }
            let fd = if self.h.is_pinned() { sys::pidfd_open(m).ok() } else { None };
            // Pinned, then re-read: it must still be a live member of our group.
            let still = matches!(procfs::read_stat(m), Ok(st) if st.pgrp == pid && !crate::identity::thread_group_exited(&st, None));
            if still {
                new.push(Member { pid: m, fd, exited: false });
            }
        }
        if self.h.group_still_ours() {
            self.members.extend(new);
        } else {
            // Members pinned earlier, while the group was proven ours, are still ours; numbers
            // read without a pidfd can no longer be told apart from a stranger's.
            self.members.retain(|m| m.fd.is_some());
        }
    }

    fn gone_now(&mut self) -> bool {
        if !self.leader_exited && self.h.has_exited() {
            self.leader_exited = true;
        }
        if !self.group {
            return self.leader_exited;
        }
        self.leader_exited && self.members.is_empty()
    }

    /// Run schedule items until the next wait, or to the end ([`Stepper::advance`]).
    fn advance(&mut self, schedule: &[Step], t0: Instant) {
        let Run { h, group, group_mode, st, .. } = self;
        let (h, group) = (*h, *group);
        st.advance(schedule, t0, &mut |sig| {
            let r = if group { h.signal_group(sig) } else { h.signal(sig) };
            if let Ok(Delivery::Sent(Some(mode))) = r {
                *group_mode = Some(mode);
            }
            r
        });
    }
}

/// Terminate every target with `opts.schedule`, all in parallel on the calling thread: the
/// total time is bounded by the schedule, not by the number of targets.
///
/// Each target that leads its process group is terminated with its group (unless
/// `opts.group` is false) and counts as exited only when no live (non-zombie) process is left in
/// the group; a target that does not lead its group is terminated alone. Exit is noticed through
/// pidfd readiness (`poll`), not a sleep loop; unpinned handles are checked every 10 ms.
///
/// Descendants that left the group with `setsid(2)` are not reached: a record with a scope is
/// stopped through [`crate::signal::terminate_scopes`] instead; the report does not claim them.
pub fn terminate(targets: Vec<ProcessRef>, opts: &TerminateOptions) -> Vec<TerminateReport> {
    let refs: Vec<&ProcessRef> = targets.iter().collect();
    run_all(&refs, opts)
}

/// The schedule for every target, all in parallel (the body of [`terminate`], on borrowed
/// handles): targets with a scope attached ([`ProcessRef::scope_kind`]) through
/// [`super::terminate_scopes`], on a second thread at the same time as the others (after them,
/// on the calling thread, when no thread can be made: [`crate::sys::thread::both`]).
fn run_all(targets: &[&ProcessRef], opts: &TerminateOptions) -> Vec<TerminateReport> {
    let scoped: Vec<usize> = if opts.group { (0..targets.len()).filter(|&i| targets[i].scope().is_some()).collect() } else { Vec::new() };
    if scoped.is_empty() {
        return run_groups(targets, opts);
    }
    let plain: Vec<&ProcessRef> = (0..targets.len()).filter(|i| !scoped.contains(i)).map(|i| targets[i]).collect();
    // Unreachable `None`s: `scoped` holds exactly the targets with a scope.
    let scopes: Vec<(i32, &crate::identity::Scope)> = scoped.iter().filter_map(|&i| targets[i].scope().map(|s| (targets[i].pid(), s))).collect();
    // Where no thread can be made (a seccomp filter, a pids limit) the scopes are stopped
    // after the groups, on this thread.
    let (mut from_scopes, from_groups) =
        crate::sys::thread::both("pidguard-scopes", || super::terminate_scopes(&scopes, &opts.schedule), || run_groups(&plain, opts));
    for (r, &i) in from_scopes.iter_mut().zip(&scoped) {
        if targets[i].is_child() {
            r.exit = targets[i].exit_status(opts.reap);
        }
    }
    let mut sc = from_scopes.into_iter();
    let mut gr = from_groups.into_iter();
    // Back in the targets' order. Unreachable `None`s: one report per target from each runner.
    (0..targets.len()).map(|i| if scoped.contains(&i) { sc.next().expect("scope report") } else { gr.next().expect("group report") }).collect()
}

/// [`run_all`] for targets stopped with their process group (or alone).
fn run_groups(targets: &[&ProcessRef], opts: &TerminateOptions) -> Vec<TerminateReport> {
    let t0 = Instant::now();
    let schedule = opts.schedule.steps();
    let mut runs: Vec<Run> = targets
        .iter()
        .map(|&h| Run {
            group: opts.group && h.leads_group(),
            h,
            leader_exited: false,
            members: Vec::new(),
            group_mode: None,
            st: Stepper::new(t0),
        })
        .collect();

    // Who is there before anything is sent.
    let pgids: HashSet<i32> = runs.iter().filter(|r| r.group).map(|r| r.h.pid()).collect();
    let scan = scan_groups(&pgids);
    for r in runs.iter_mut() {
        if r.group {
            r.refresh(&scan);
        }
        if r.gone_now() {
            r.st.finish(Outcome::AlreadyGone, t0);
        } else {
            r.advance(schedule, t0);
        }
    }

    loop {
        let active: Vec<usize> = (0..runs.len()).filter(|&i| !runs[i].done()).collect();
        if active.is_empty() {
            break;
        }
        // Everything to wait on: leaders' and members' pidfds not yet readable.
        let mut fds: Vec<BorrowedFd<'_>> = Vec::new();
        let mut owners: Vec<(usize, Option<usize>)> = Vec::new();
        let mut unpinned = false;
        for &i in &active {
            let r = &runs[i];
            if !r.h.is_pinned() {
                unpinned = true;
                continue;
            }
            if !r.leader_exited {
                if let Some(fd) = r.h.pidfd() {
                    fds.push(fd);
                    owners.push((i, None));
                }
            }
            for (k, m) in r.members.iter().enumerate() {
                if let (false, Some(fd)) = (m.exited, &m.fd) {
                    fds.push(fd.as_fd());
                    owners.push((i, Some(k)));
                } else if m.fd.is_none() && !m.exited {
                    unpinned = true;
                }
            }
        }
        let now = Instant::now();
        let mut timeout = active.iter().filter_map(|&i| runs[i].st.deadline).min().map(|d| d.saturating_duration_since(now));
        if unpinned {
            timeout = Some(timeout.map_or(Duration::from_millis(10), |t| t.min(Duration::from_millis(10))));
        } else if fds.is_empty() {
            // Nothing to wait on but a deadline: never block forever on an empty set.
            timeout = Some(timeout.map_or(Duration::from_millis(50), |t| t.min(Duration::from_millis(50))));
        }
        let ready = sys::poll_readable(&fds, timeout).unwrap_or_else(|_| vec![false; fds.len()]);
        drop(fds);
        for (j, &(i, k)) in owners.iter().enumerate() {
            if ready[j] {
                match k {
                    None => runs[i].leader_exited = true,
                    Some(k) => runs[i].members[k].exited = true,
                }
            }
        }
        // Rescan the groups whose every known process has exited: new members may have been
        // forked meanwhile, and the group is empty only when the scan finds nobody.
        let need: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&i| {
                let r = &runs[i];
                (r.leader_exited || !r.h.is_pinned()) && r.members.iter().all(|m| m.exited || m.fd.is_none())
            })
            .collect();
        let pgids: HashSet<i32> = need.iter().filter(|&&i| runs[i].group).map(|&i| runs[i].h.pid()).collect();
        let scan = scan_groups(&pgids);
        for &i in &need {
            let r = &mut runs[i];
            if r.group {
                r.refresh(&scan);
            }
            if r.gone_now() {
                r.st.finish_gone(t0);
            }
        }
        let now = Instant::now();
        for &i in &active {
            let r = &mut runs[i];
            if r.st.due(now) {
                r.advance(schedule, t0);
            }
        }
    }

    runs.into_iter()
        .map(|r| {
            let exit = if r.h.is_child() { r.h.exit_status(opts.reap) } else { ExitStatus::Unknown };
            let survivors = if r.st.outcome == Some(Outcome::Unkillable) {
                // (Kept for `Refused(UntrustedPidfile)` below too.)
                let mut s: Vec<i32> = r.members.iter().filter(|m| !m.exited).map(|m| m.pid).collect();
                if !r.leader_exited {
                    s.insert(0, r.h.pid());
                }
                s
            } else {
                Vec::new()
            };
            let mut outcome = r.st.outcome.clone().unwrap_or(Outcome::Unkillable);
            // Survivors that were all skipped for their uid (a root caller acting on another
            // user's pidfile aims only at that user's processes) were never signalled: refused,
            // not unkillable.
            let skipped = r.h.skipped_for_uid();
            if outcome == Outcome::Unkillable && !survivors.is_empty() && survivors.iter().all(|p| skipped.contains(p)) {
                outcome = Outcome::Refused(Refusal::UntrustedPidfile);
            }
            TerminateReport {
                pid: r.h.pid(),
                outcome,
                signals: r.st.signals,
                exit,
                group: r.group,
                pin_mode: r.h.pin_mode(),
                group_mode: r.group_mode,
                survivors,
                elapsed: r.st.elapsed,
                error_kind: r.st.error_kind,
                scope: crate::identity::ScopeKind::Group,
            }
        })
        .collect()
}

/// Terminate the process `pid` — the one `token` names — and its process group, with
/// `opts.schedule`: [`ProcessRef::open`] then [`terminate`], deciding once, for every binding,
/// which results are errors and which are outcomes.
///
/// A call that could not do what was asked is an error: the process is not there
/// (`NoSuchProcess`, also for a zombie), a rule refused it (`Refused`, with the
/// [refusal](crate::Error::refusal)), the kernel refused the signal (`PermissionDenied`, errno
/// `EPERM`: another user's process), or its identity could not be read (`PermissionDenied` or
/// `Io` with the errno); a pid ≤ 0 or above 4194304 (`PID_MAX_LIMIT`) is `Refused` like the other protected
/// targets. A call that did its
/// work returns the report: exited (after which signal), already gone by the first signal, or
/// unkillable.
///
/// `token = None` is accepted only under [`Policy::Lenient`](crate::Policy::Lenient) (a record written before tokens
/// existed); under `Strict` it is `Refused` (`unverifiable`).
pub fn terminate_pid(
    pid: i32,
    token: Option<&crate::identity::StartToken>,
    policy: crate::identity::Policy,
    opts: &TerminateOptions,
) -> Result<TerminateReport, Error> {
    ProcessRef::open(pid, token, policy)?.terminate(opts)
}

impl ProcessRef {
    /// Terminate this process (with the group it leads, unless `opts.group` is false) with
    /// `opts.schedule`, as [`terminate`] does for one target, keeping the handle: it can still
    /// be waited on, asked [`has_exited`](Self::has_exited), or terminated again. Blocks for at
    /// most the schedule's total wait. This is where a single target's result is decided to be
    /// an error or an outcome, for [`terminate_pid`] and every binding's process handle.
    ///
    /// Returns the report when the schedule did its work, whatever it found: `AlreadyGone`
    /// (nothing to do), `Exited`, `Unkillable`. Errors, when it could not do what was asked
    /// (nothing more is sent after the failing signal): `PermissionDenied` (errno `EPERM`) when
    /// the kernel refused a signal (another user's process), `Refused` when a safety rule
    /// refused the group (see [`Error::refusal`]), `Io` for other signalling failures.
    pub fn terminate(&self, opts: &TerminateOptions) -> Result<TerminateReport, Error> {
        // Unreachable: run_all returns exactly one report per target.
        let r = run_all(&[self], opts).pop().expect("one target, one report");
        let pid = self.pid();
        match (&r.outcome, r.error_kind) {
            (Outcome::Error(msg), Some(kind)) => {
                let mut e = Error::new(kind, msg.clone()).with_pid(pid);
                if kind == ErrorKind::PermissionDenied {
                    // Only a signal the kernel refused ends here as PermissionDenied.
                    e.set_errno(libc::EPERM);
                }
                Err(e)
            }
            (Outcome::Refused(refusal), _) => Err(Error::refused(pid, *refusal)),
            _ => Ok(r),
        }
    }
}
