//! Terminating scopes (a cgroup leaf, a supervisor's tree) with an escalation schedule, all in
//! parallel: each signal reaches every member of a scope and nothing outside it, and a scope
//! counts as exited only when it is empty.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use super::outcome::{Outcome, TerminateReport, FINAL_GRACE};
use super::{Refusal, Schedule, Signal, Step};
use crate::error::ErrorKind;
use crate::identity::{Delivery, ExitStatus, PinMode, Scope};
use crate::sys::cgroup;

/// How often an active scope is looked at even without a notification: a supervisor pinned
/// without a pidfd has nothing to poll, and a `cgroup.events` notification can come before the
/// last member's exit is visible in it.
const RECHECK: Duration = Duration::from_millis(100);

struct ScopeRun<'a> {
    pid: i32,
    scope: &'a Scope,
    step: usize,
    deadline: Option<Instant>,
    signals: Vec<Signal>,
    last: Option<Signal>,
    outcome: Option<Outcome>,
    error_kind: Option<ErrorKind>,
    elapsed: Duration,
    final_grace: bool,
}

impl ScopeRun<'_> {
    fn finish(&mut self, o: Outcome, t0: Instant) {
        self.outcome = Some(o);
        self.elapsed = t0.elapsed();
        self.deadline = None;
    }

    /// Run schedule items until the next wait, or to the end (as the group runner does).
    fn advance(&mut self, schedule: &[Step], t0: Instant) {
        let mut guard = 0;
        loop {
            guard += 1;
            if guard > 4 * schedule.len() + 4 {
                self.finish(Outcome::Unkillable, t0);
                return;
            }
            let Some(step) = schedule.get(self.step).copied() else {
                let waited = matches!(schedule.last(), Some(Step::Wait(d)) if *d >= FINAL_GRACE);
                if waited || self.final_grace {
                    self.finish(Outcome::Unkillable, t0);
                } else {
                    self.final_grace = true;
                    self.deadline = Some(Instant::now() + FINAL_GRACE);
                }
                return;
            };
            self.step += 1;
            match step {
                Step::Signal(sig) => match self.scope.signal(sig) {
                    Ok(Delivery::Sent(_)) => {
                        self.signals.push(sig);
                        self.last = Some(sig);
                        if sig == Signal::TERM {
                            // A stopped member cannot act on SIGTERM until continued.
                            if let Ok(Delivery::Sent(_)) = self.scope.signal(Signal::CONT) {
                                self.signals.push(Signal::CONT);
                            }
                        }
                    }
                    Ok(Delivery::AlreadyGone) => {}
                    Err(e) => {
                        self.error_kind = Some(e.kind());
                        self.finish(Outcome::Error(e.to_string()), t0);
                        return;
                    }
                },
                Step::Wait(d) => {
                    self.deadline = Some(Instant::now() + d);
                    return;
                }
                Step::Forever => self.step = 0,
            }
        }
    }
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
        .map(|&(pid, scope)| ScopeRun {
            pid,
            scope,
            step: 0,
            deadline: None,
            signals: Vec::new(),
            last: None,
            outcome: None,
            error_kind: None,
            elapsed: Duration::ZERO,
            final_grace: false,
        })
        .collect();
    for r in runs.iter_mut() {
        if r.scope.is_empty() {
            r.finish(Outcome::AlreadyGone, t0);
        } else {
            r.advance(steps, t0);
        }
    }
    loop {
        let active: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].outcome.is_none()).collect();
        if active.is_empty() {
            break;
        }
        let now = Instant::now();
        let timeout = active.iter().filter_map(|&i| runs[i].deadline).min().map_or(RECHECK, |d| d.saturating_duration_since(now).min(RECHECK));
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
                let o = match r.last {
                    Some(after) => Outcome::Exited { after },
                    None => Outcome::AlreadyGone,
                };
                r.finish(o, t0);
            } else if r.deadline.is_some_and(|d| d <= now) {
                r.deadline = None;
                r.advance(steps, t0);
            }
        }
    }
    runs.into_iter()
        .map(|r| {
            let mut outcome = r.outcome.clone().unwrap_or(Outcome::Unkillable);
            let survivors: Vec<i32> = if outcome == Outcome::Unkillable {
                r.scope.members().map(|m| m.into_iter().map(|(p, _)| p).collect()).unwrap_or_default()
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
                signals: r.signals,
                exit: ExitStatus::Unknown,
                group: true,
                pin_mode: PinMode::Pidfd,
                group_mode: None,
                survivors,
                elapsed: r.elapsed,
                error_kind: r.error_kind,
                scope: r.scope.kind(),
            }
        })
        .collect()
}
