//! Termination schedules in start-stop-daemon's `--retry` syntax (start-stop-daemon(8)).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::Signal;
use crate::error::{Error, Result};

/// One item of a schedule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Send this signal (to the process group when the target leads one).
    Signal(Signal),
    /// Wait up to this long for the target to exit.
    Wait(Duration),
    /// Repeat the schedule from its first item, forever (only as the last item).
    Forever,
}

/// A list of signals and waits, as start-stop-daemon's `--retry` takes it:
///
/// - items separated by `/`; an item is a signal (`TERM`, `SIGTERM`, `-TERM`, or `-15` — a
///   number needs the `-`, as in start-stop-daemon), a wait in seconds (`2`, or `0.5`: fractions
///   are a pidguard extension), or `forever` as the last item;
/// - a lone number `T` means `TERM/T/KILL/T`;
/// - at least two items otherwise, at least one signal, no `forever` elsewhere than last.
///
/// The default is `TERM/2/KILL/1` (the schedule of abx-dl's own cleanup).
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    steps: Vec<Step>,
}

/// Longest wait one item may ask for: a day. Longer is almost surely a typo.
const MAX_WAIT_SECS: f64 = 86_400.0;

fn parse_wait(s: &str) -> Option<Duration> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit() || b == b'.') || s.starts_with('.') {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && (0.0..=MAX_WAIT_SECS).contains(&v)).then(|| Duration::from_secs_f64(v))
}

impl Schedule {
    /// Build a schedule from steps. Errors: `InvalidArgument` if it has no signal, or `Forever`
    /// anywhere but last.
    pub fn new(steps: Vec<Step>) -> Result<Schedule> {
        if !steps.iter().any(|s| matches!(s, Step::Signal(_))) {
            return Err(Error::invalid("a schedule needs at least one signal"));
        }
        if let Some(i) = steps.iter().position(|s| *s == Step::Forever) {
            if i + 1 != steps.len() {
                return Err(Error::invalid("`forever` may only be the last item of a schedule"));
            }
        }
        Ok(Schedule { steps })
    }

    /// `TERM/secs/KILL/secs`.
    pub fn term_then_kill(secs: f64) -> Result<Schedule> {
        let d = parse_wait(&secs.to_string()).ok_or_else(|| Error::invalid(format!("bad wait {secs}")))?;
        Schedule::new(vec![Step::Signal(Signal::TERM), Step::Wait(d), Step::Signal(Signal::KILL), Step::Wait(d)])
    }

    /// The steps.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The longest the schedule can take (`None` with `forever`).
    pub fn max_duration(&self) -> Option<Duration> {
        let mut total = Duration::ZERO;
        for s in &self.steps {
            match s {
                Step::Wait(d) => total += *d,
                Step::Forever => return None,
                Step::Signal(_) => {}
            }
        }
        Some(total)
    }
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule {
            steps: vec![
                Step::Signal(Signal::TERM),
                Step::Wait(Duration::from_secs(2)),
                Step::Signal(Signal::KILL),
                Step::Wait(Duration::from_secs(1)),
            ],
        }
    }
}

impl FromStr for Schedule {
    type Err = Error;

    /// Parse the `--retry` syntax above. Errors: `InvalidArgument`, naming the bad item, before
    /// anything is sent.
    fn from_str(s: &str) -> Result<Schedule> {
        let bad = |item: &str, why: &str| Error::invalid(format!("bad schedule {s:?}: item {item:?} {why}"));
        if s.len() > 1024 {
            return Err(Error::invalid("schedule longer than 1024 bytes"));
        }
        let items: Vec<&str> = s.split('/').collect();
        if items.len() == 1 {
            let d = parse_wait(items[0]).ok_or_else(|| bad(items[0], "is not a number of seconds or a schedule"))?;
            return Schedule::new(vec![Step::Signal(Signal::TERM), Step::Wait(d), Step::Signal(Signal::KILL), Step::Wait(d)]);
        }
        let mut steps = Vec::with_capacity(items.len());
        for item in &items {
            if *item == "forever" {
                steps.push(Step::Forever);
            } else if let Some(d) = parse_wait(item) {
                steps.push(Step::Wait(d));
            } else {
                let name = item.strip_prefix('-').unwrap_or(item);
                if name.is_empty() {
                    return Err(bad(item, "is empty"));
                }
                let sig = Signal::parse(name).map_err(|_| bad(item, "is not a signal, a wait or `forever`"))?;
                steps.push(Step::Signal(sig));
            }
        }
        Schedule::new(steps).map_err(|e| Error::invalid(format!("bad schedule {s:?}: {}", e.message())))
    }
}

/// The `--retry` text of the schedule (`TERM/2/KILL/1`, `-34/1` for a real-time signal), which
/// parses back to the same schedule when it is at most 1024 bytes long.
impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            match s {
                // A signal without a name (real-time) is written `-N`: a bare number is a wait.
                Step::Signal(sig) => match sig.name() {
                    n if n.bytes().all(|b| b.is_ascii_digit()) => write!(f, "-{n}")?,
                    n => f.write_str(&n)?,
                },
                Step::Wait(d) => write!(f, "{}", d.as_secs_f64())?,
                Step::Forever => f.write_str("forever")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_retry_syntax() {
        let s: Schedule = "TERM/2/KILL/1".parse().unwrap();
        assert_eq!(s, Schedule::default());
        assert_eq!(s.to_string(), "TERM/2/KILL/1");
        let s: Schedule = "5".parse().unwrap();
        assert_eq!(s.to_string(), "TERM/5/KILL/5");
        let s: Schedule = "-15/0.5/-9/1/forever".parse().unwrap();
        assert_eq!(s.steps()[0], Step::Signal(Signal::TERM));
        assert_eq!(s.steps()[1], Step::Wait(Duration::from_millis(500)));
        assert_eq!(s.max_duration(), None);
        // A real-time signal is shown with its `-`, or it would read back as a wait.
        let s: Schedule = "HUP/-40/1".parse().unwrap();
        assert_eq!(s.to_string(), "HUP/-40/1");
        assert_eq!(s.to_string().parse::<Schedule>().unwrap(), s);
    }

    #[test]
    fn real_time_signals_print_as_signals() {
        // Found by the `schedule` fuzz target: `-42` printed as `42`, which reads back as a wait.
        let s: Schedule = "-2/-42/1".parse().unwrap();
        assert_eq!(s.to_string(), "INT/-42/1");
        assert_eq!(s.to_string().parse::<Schedule>().unwrap(), s);
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", "TERM", "2/3", "TERM/x", "forever/TERM/1", "TERM//1", "TERM/-0", "TERM/nan", "TERM/1e9", "-/1", "TERM/.5"] {
            assert!(bad.parse::<Schedule>().is_err(), "{bad:?} should be rejected");
        }
    }
}
