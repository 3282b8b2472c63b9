//! Terminating scopes (a cgroup leaf, a supervisor's tree) with an escalation schedule, all in
//! parallel: each signal reaches every member of a scope and nothing outside it, and a scope
//! counts as exited only when it is empty.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use super::outcome::{Outcome, TerminateReport};
use super::stepper::Stepper;
use super::{Refusal, Schedule};
use crate::identity::{ExitStatus, PinMode, Scope};
use crate::signo::Signal;
use crate::sys::cgroup;

/// How often an active scope is looked at even without a notification: a supervisor pinned
/// without a pidfd has nothing to poll, and a `cgroup.events` notification can come before the
/// last member's exit is visible in it.
const RECHECK: Duration = Duration::from_millis(100);

struct ScopeRun<'a> {
    pid: i32,
    scope: &'a Scope,
    /// Where the scope stands in the schedule (the runner shared with groups).
    st: Stepper,
}

/// A scope the schedule calls unkillable is looked at once more before it is: a tree that is
/// gone is never reported unkillable. When no member is left (the walk found none), the scope
/// is given [`super::FINAL_GRACE`] to become empty (a supervisor reaps its last children and
/// exits), and counts as exited even if its supervisor is still on its way out.
fn settle(r: &mut ScopeRun<'_>, t0: Instant) {
    if r.st.outcome != Some(super::Outcome::Unkillable) {
        return;
    }
    let none_live = |r: &ScopeRun<'_>| r.scope.live_member_pids().is_ok_and(|m| m.is_empty());
    if r.st.last == Some(Signal::KILL) && !none_live(r) {
        sweep_past_the_end(r);
    }
    // Exited members (zombies a supervisor has yet to reap) are not survivors.
    if !none_live(r) {
        return;
    }
    let until = Instant::now() + super::FINAL_GRACE;
    while !r.scope.is_empty() && Instant::now() < until {
        match r.scope.wait_fd() {
            Some(fd) => {
                let _ = cgroup::poll_any(&[fd], until.saturating_duration_since(Instant::now()).min(Duration::from_millis(20)));
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    r.st.outcome = None;
    r.st.finish_gone(t0);
}

/// How long a scope whose schedule ended in `SIGKILL` is swept after the schedule's end, at
/// most, while members that can still die are left (a loaded machine: a killed process needs
/// the CPU to exit, and a walk of a large tree is slow).
pub(crate) const PAST_THE_END: Duration = Duration::from_secs(20);

/// How many sweeps in a row must find only members in uninterruptible sleep (state `D`, the
/// one state `SIGKILL` cannot end at once) before the scope is called unkillable.
const D_SWEEPS: u32 = 3;

/// A schedule that ended in `SIGKILL` and left members: keep going until the scope is empty
/// or proven unkillable. Each sweep is `SIGSTOP` then `SIGKILL` to every member
/// ([`Scope::signal`]: through `cgroup.kill` for an unrestricted cgroup), then a wait of up to
/// 200 ms for the scope to empty. It ends when no member is left; when [`D_SWEEPS`] sweeps in
/// a row found only members in state `D` or members left unsignalled for their uid (nothing a
/// signal can change); when a sweep's members cannot be read (a failed read decides nothing:
/// the outcome stays `Unkillable`, with the members known); or after [`PAST_THE_END`]. The
/// time it took is in the report's `elapsed` and logged. While it runs, the calling thread's
/// scheduling priority is raised where the caller may (`setpriority`, `CAP_SYS_NICE`) and put
/// back after: the storm it fights runs at the machine's load.
fn sweep_past_the_end(r: &mut ScopeRun<'_>) {
    let t_end = Instant::now();
    let until = t_end + PAST_THE_END;
    let _boost = crate::sys::ThreadBoost::new();
    let mut only_d = 0;
    let mut sweeps = 0u32;
    loop {
        let members = match r.scope.live_member_pids() {
            Ok(m) => m,
            Err(_) => break,
        };
        if members.is_empty() {
            break;
        }
        let skipped = r.scope.skipped_for_uid();
        let can_die = members.iter().any(|(p, state)| !skipped.contains(p) && *state != b'D');
        only_d = if can_die { 0 } else { only_d + 1 };
        if only_d >= D_SWEEPS || Instant::now() >= until {
            break;
        }
        sweeps += 1;
        let _ = r.scope.signal(Signal::KILL);
        let wait_until = Instant::now() + Duration::from_millis(200);
        while !r.scope.is_empty() && Instant::now() < wait_until {
            match r.scope.wait_fd() {
                Some(fd) => {
                    let _ = cgroup::poll_any(&[fd], wait_until.saturating_duration_since(Instant::now()).min(Duration::from_millis(20)));
                }
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        if r.scope.is_empty() {
            break;
        }
    }
    log::info!(
        "scope {}: swept {sweeps} time(s) past the schedule's end, for {:?}",
        r.scope.record(),
        t_end.elapsed()
    );
}

/// Whether the report of a recorded process that had left its scope (stopped with its group,
/// `outside`) decides a stop rather than the scope's report (`scope`): when the scope stopped
/// and the process did not (the worse outcome), or when the scope was found empty and the
/// process was signalled (the stop did something: not "already gone").
pub(crate) fn outside_decides(scope: &Outcome, outside: &Outcome) -> bool {
    (scope.is_stopped() && !outside.is_stopped()) || (*scope == Outcome::AlreadyGone && *outside != Outcome::AlreadyGone)
}

/// Terminate every scope with `schedule`, in parallel on the calling thread; `pid` of each
/// target is the recorded command's pid, for the report. A scope is exited when it is empty
/// ([`Scope::is_empty`]); members are signalled as [`Scope::signal`] says (`SIGKILL` through
/// `cgroup.kill` where it may be). Waits are `poll`s on each scope's descriptor
/// ([`Scope::wait_fd`]), re-checked at least every 100 ms.
///
/// Each report has `group: true` (the whole scope was the target), `scope` set to the scope's
/// kind, the exit status `Unknown` (a scope's members are not the caller's children), and for
/// `Unkillable` the members still alive as `survivors` — `Refused(untrusted-pidfile)` instead
/// when every survivor was left unsignalled for its uid.
pub fn terminate_scopes(targets: &[(i32, &Scope)], schedule: &Schedule) -> Vec<TerminateReport> {
    let t0 = Instant::now();
    let steps = schedule.steps();
    let mut runs: Vec<ScopeRun> = targets
        .iter()
        .map(|&(pid, scope)| ScopeRun { pid, scope, st: Stepper::new(t0) })
        .collect();
    for r in runs.iter_mut() {
        if r.scope.is_empty() {
            r.st.finish(Outcome::AlreadyGone, t0);
        } else {
            let scope = r.scope;
            r.st.advance(steps, t0, &mut |sig| scope.signal(sig));
            settle(r, t0);
        }
    }
    loop {
        let active: Vec<usize> = (0..runs.len()).filter(|&i| !runs[i].st.done()).collect();
        if active.is_empty() {
            break;
        }
        let now = Instant::now();
        let timeout = active.iter().filter_map(|&i| runs[i].st.deadline).min().map_or(RECHECK, |d| d.saturating_duration_since(now).min(RECHECK));
        let fds: Vec<(BorrowedFd<'_>, i16)> = active.iter().filter_map(|&i| runs[i].scope.wait_fd()).collect();
        if fds.is_empty() {
            std::thread::sleep(timeout.min(Duration::from_millis(10)));
        } else {
            let _ = cgroup::poll_any(&fds, timeout);
        }
        let now = Instant::now();
        for &i in &active {
            let r = &mut runs[i];
            if r.scope.is_empty() {
                r.st.finish_gone(t0);
            } else if r.st.due(now) {
                let scope = r.scope;
                r.st.advance(steps, t0, &mut |sig| scope.signal(sig));
                settle(r, t0);
            }
        }
    }
    runs.into_iter()
        .map(|r| {
            let mut outcome = r.st.outcome.clone().unwrap_or(Outcome::Unkillable);
            let survivors: Vec<i32> = if outcome == Outcome::Unkillable {
                r.scope.live_member_pids().map(|m| m.into_iter().map(|(p, _)| p).collect()).unwrap_or_default()
            } else {
                Vec::new()
            };
            let skipped = r.scope.skipped_for_uid();
            if outcome == Outcome::Unkillable && !survivors.is_empty() && survivors.iter().all(|p| skipped.contains(p)) {
                outcome = Outcome::Refused(Refusal::UntrustedPidfile);
            }
            TerminateReport {
                pid: r.pid,
                outcome,
                signals: r.st.signals,
                exit: ExitStatus::Unknown,
                group: true,
                pin_mode: PinMode::Pidfd,
                group_mode: None,
                survivors,
                elapsed: r.st.elapsed,
                error_kind: r.st.error_kind,
                scope: r.scope.kind(),
            }
        })
        .collect()
}
