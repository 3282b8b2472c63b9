//! The one schedule runner: how a target (a process, its group, or a scope) walks through an
//! escalation schedule, shared by the group runner (`terminate.rs`) and the scope runner
//! (`scoped.rs`) so that both decide alike on every signal's result.
//!
//! Waits are measured on the schedule's own clock: a wait of `d` after a signal ends `d` after
//! the time the schedule planned for that signal, not after the signal's delivery returned. A
//! delivery that takes long (a scope's members walked, pinned and signalled) is inside the
//! schedule's time, so the total time of a stop is the schedule's plus a small bound.

use std::time::{Duration, Instant};

use super::outcome::{Outcome, FINAL_GRACE};
use super::{Refusal, Signal, Step};
use crate::error::{Error, ErrorKind};
use crate::identity::Delivery;

/// One target's walk through a schedule.
#[derive(Debug)]
pub(super) struct Stepper {
    /// The next item of the schedule.
    step: usize,
    /// When the current wait ends; `None` while no wait runs (or once finished).
    pub(super) deadline: Option<Instant>,
    /// When the schedule planned the current item: the start, then the end of each wait.
    planned: Instant,
    /// Every signal sent, in order.
    pub(super) signals: Vec<Signal>,
    /// The last signal sent.
    pub(super) last: Option<Signal>,
    /// The outcome, once decided.
    pub(super) outcome: Option<Outcome>,
    /// For an error outcome: its kind.
    pub(super) error_kind: Option<ErrorKind>,
    /// Time from the start to the outcome.
    pub(super) elapsed: Duration,
    /// The schedule is over and the final grace (see [`FINAL_GRACE`]) is running.
    final_grace: bool,
}

impl Stepper {
    /// A walk that starts at `t0`.
    pub(super) fn new(t0: Instant) -> Stepper {
        Stepper {
            step: 0,
            deadline: None,
            planned: t0,
            signals: Vec::new(),
            last: None,
            outcome: None,
            error_kind: None,
            elapsed: Duration::ZERO,
            final_grace: false,
        }
    }

    /// Whether the outcome is decided.
    pub(super) fn done(&self) -> bool {
        self.outcome.is_some()
    }

    /// Decide the outcome.
    pub(super) fn finish(&mut self, o: Outcome, t0: Instant) {
        self.outcome = Some(o);
        self.elapsed = t0.elapsed();
        self.deadline = None;
    }

    /// The target was found gone: `Exited` after the last signal, or `AlreadyGone`.
    pub(super) fn finish_gone(&mut self, t0: Instant) {
        let o = match self.last {
            Some(after) => Outcome::Exited { after },
            None => Outcome::AlreadyGone,
        };
        self.finish(o, t0);
    }

    /// Whether the current wait is over at `now` (then the deadline is cleared).
    pub(super) fn due(&mut self, now: Instant) -> bool {
        if !self.done() && self.deadline.is_some_and(|d| d <= now) {
            self.deadline = None;
            return true;
        }
        false
    }

    /// Run schedule items until the next wait, or to the end, sending each signal through
    /// `deliver` (`SIGCONT` after `SIGTERM`, so that a stopped target can act on it).
    ///
    /// `deliver`'s results: `Sent` is recorded; `AlreadyGone` sends nothing; `Refused` ends
    /// the run as `Refused` (the error's refusal); any other error ends it as `Error` with the
    /// error's kind. A schedule that ends without a wait of at least [`FINAL_GRACE`] gives the
    /// target that long to act on the last signal before it is called `Unkillable`.
    pub(super) fn advance(&mut self, schedule: &[Step], t0: Instant, deliver: &mut dyn FnMut(Signal) -> Result<Delivery, Error>) {
        let mut guard = 0;
        loop {
            guard += 1;
            if guard > 4 * schedule.len() + 4 {
                // A schedule of signals only, repeated forever: stop spinning.
                self.finish(Outcome::Unkillable, t0);
                return;
            }
            let Some(step) = schedule.get(self.step).copied() else {
                let waited = matches!(schedule.last(), Some(Step::Wait(d)) if *d >= FINAL_GRACE);
                if waited || self.final_grace {
                    self.finish(Outcome::Unkillable, t0);
                } else {
                    self.final_grace = true;
                    self.deadline = Some(self.planned.max(Instant::now()) + FINAL_GRACE);
                }
                return;
            };
            self.step += 1;
            match step {
                Step::Signal(sig) => match deliver(sig) {
                    Ok(Delivery::Sent(_)) => {
                        self.signals.push(sig);
                        self.last = Some(sig);
                        if sig == Signal::TERM {
                            if let Ok(Delivery::Sent(_)) = deliver(Signal::CONT) {
                                self.signals.push(Signal::CONT);
                            }
                        }
                    }
                    // Nothing was sent: the target (or every provable member) is gone.
                    Ok(Delivery::AlreadyGone) => {}
                    Err(e) if e.kind() == ErrorKind::Refused => {
                        self.finish(Outcome::Refused(e.refusal().unwrap_or(Refusal::OwnGroup)), t0);
                        return;
                    }
                    Err(e) => {
                        // Signals that reached members before the delivery failed (a scope's
                        // walk that failed half way) are reported: never "no signal sent".
                        if let Some(crate::identity::SentBeforeError(sent)) = e.detail() {
                            self.signals.extend(sent.iter().copied());
                            if sent.contains(&sig) {
                                self.last = Some(sig);
                            }
                        }
                        self.error_kind = Some(e.kind());
                        self.finish(Outcome::Error(e.to_string()), t0);
                        return;
                    }
                },
                Step::Wait(d) => {
                    // On the schedule's clock: the time spent delivering is part of the wait.
                    self.planned += d;
                    self.deadline = Some(self.planned);
                    return;
                }
                Step::Forever => self.step = 0,
            }
        }
    }
}
