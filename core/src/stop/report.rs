//! What a stop says ([`StopReport`]); what it is asked, [`StopOptions`], is in `crate::options`.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::pidfile::mtime::{CheckReason, PidFileCheck};
use crate::pidfile::Format;
use crate::signal::{ExitStatus, Outcome, Refusal, Signal, TerminateReport};

pub use crate::options::StopOptions;

/// What [`super::stop_pid_file`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopOutcome {
    /// The record names no process of its own any more (missing file, gone, zombie without a
    /// live group, proven reuse): nothing was signalled; the pidfile was removed if it was
    /// still the file that was judged.
    Stale(CheckReason),
    /// The process (and its group) exited before anything was sent.
    AlreadyGone,
    /// It (and its group) exited after this signal.
    Exited(Signal),
    /// Still alive after the whole schedule; the pidfile is kept.
    Unkillable,
    /// Not signalled: a safety rule, the owner rule of the pidfile or the policy refused it;
    /// the pidfile is kept.
    Refused(Refusal),
    /// Another machine's or PID namespace's record: left alone, pidfile kept.
    Foreign,
    /// Signalling failed (for example `EPERM`); the pidfile is kept.
    Error(String),
}

impl StopOutcome {
    /// The signal after which the target exited, for the exited outcome.
    pub fn after(&self) -> Option<Signal> {
        match self {
            StopOutcome::Exited(s) => Some(*s),
            _ => None,
        }
    }

    /// Why signalling was refused, for the refused outcome.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            StopOutcome::Refused(r) => Some(*r),
            _ => None,
        }
    }

    /// Why the record is stale, for the stale outcome.
    pub fn stale_reason(&self) -> Option<CheckReason> {
        match self {
            StopOutcome::Stale(r) => Some(*r),
            _ => None,
        }
    }

    /// The message, for the error outcome.
    pub fn error(&self) -> Option<&str> {
        match self {
            StopOutcome::Error(e) => Some(e),
            _ => None,
        }
    }

    /// A stable kebab-case slug.
    pub fn as_str(&self) -> &'static str {
        match self {
            StopOutcome::Stale(_) => "stale",
            StopOutcome::AlreadyGone => "already-gone",
            StopOutcome::Exited(_) => "exited",
            StopOutcome::Unkillable => "unkillable",
            StopOutcome::Refused(_) => "refused",
            StopOutcome::Foreign => "foreign",
            StopOutcome::Error(_) => "error",
        }
    }
}

impl fmt::Display for StopOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopOutcome::Stale(r) => write!(f, "stale ({r})"),
            StopOutcome::Exited(s) => write!(f, "exited after {s}"),
            StopOutcome::Refused(r) => write!(f, "refused ({r})"),
            StopOutcome::Error(e) => write!(f, "error: {e}"),
            o => f.write_str(o.as_str()),
        }
    }
}

/// The report of [`super::stop_pid_file`].
#[derive(Clone, Debug)]
pub struct StopReport {
    /// The pidfile.
    pub pid_file: PathBuf,
    /// What [`check_pid_file`](crate::check_pid_file) said about it.
    pub check: PidFileCheck,
    /// What was done.
    pub outcome: StopOutcome,
    /// The termination report, when the process was pinned and the schedule ran.
    pub terminate: Option<TerminateReport>,
    /// Whether the pidfile was removed (only stale or stopped records, and only if the file
    /// was still the one judged).
    pub pid_file_removed: bool,
    /// A warning, e.g. that the identity was taken on the lenient policy.
    pub warning: Option<String>,
    /// The particulars of a refusal, when there are any (`owned by uid 65534, target uid 0`).
    pub detail: Option<String>,
    /// The format of the pidfile ([`Format::of`]).
    pub format: Format,
    /// What was (or would have been) stopped: the recorded scope — a cgroup leaf or a
    /// supervisor's tree — or the process group (`group`: no scope recorded, or the recorded one
    /// is gone).
    pub scope: crate::identity::ScopeKind,
}

impl StopReport {
    /// The report of a record judged and not acted on yet: its check's reason as a stale
    /// outcome (the operation replaces it once it decides), nothing sent, nothing removed.
    pub(super) fn before_acting(pid_file: &Path, check: PidFileCheck, format: Format) -> StopReport {
        StopReport {
            pid_file: pid_file.to_path_buf(),
            outcome: StopOutcome::Stale(check.reason),
            check,
            terminate: None,
            pid_file_removed: false,
            warning: None,
            detail: None,
            format,
            scope: crate::identity::ScopeKind::Group,
        }
    }

    /// The outcome of a termination that ran for this record, and the particulars of a refusal
    /// for survivors skipped for their uid.
    pub(super) fn take_outcome(&mut self, t: &TerminateReport) {
        self.outcome = match &t.outcome {
            Outcome::AlreadyGone => StopOutcome::AlreadyGone,
            Outcome::Exited { after } => StopOutcome::Exited(*after),
            Outcome::Unkillable => StopOutcome::Unkillable,
            Outcome::Refused(r) => StopOutcome::Refused(*r),
            Outcome::Error(e) => StopOutcome::Error(e.clone()),
        };
        if let (Outcome::Refused(Refusal::UntrustedPidfile), false) = (&t.outcome, t.survivors.is_empty()) {
            self.detail = Some(skipped_detail(t));
        }
    }

    /// The explanation a shell shows for this report, said once here: for a refusal, `<pidfile>:
    /// refused to signal (<refusal>)` with its particulars (`: owned by uid 65534, target uid
    /// 0`); for a signalling error, its message; otherwise the warning, if any (the lenient
    /// policy's). `None` when there is nothing to explain.
    pub fn message(&self) -> Option<String> {
        match &self.outcome {
            StopOutcome::Refused(r) => Some(match &self.detail {
                Some(d) => format!("{}: refused to signal ({r}): {d}", self.pid_file.display()),
                None => format!("{}: refused to signal ({r})", self.pid_file.display()),
            }),
            StopOutcome::Error(e) => Some(e.clone()),
            StopOutcome::Stale(_) | StopOutcome::AlreadyGone | StopOutcome::Exited(_) | StopOutcome::Unkillable | StopOutcome::Foreign => {
                self.warning.clone()
            }
        }
    }

    /// Every signal sent, in order.
    pub fn signals(&self) -> &[Signal] {
        self.terminate.as_ref().map(|t| t.signals.as_slice()).unwrap_or(&[])
    }
    /// The exit status (known only for the caller's own child).
    pub fn exit(&self) -> ExitStatus {
        self.terminate.as_ref().map(|t| t.exit).unwrap_or(ExitStatus::Unknown)
    }
}

/// The detail of a group whose only survivors were skipped for their uid: their pids, and that
/// nothing was sent to them.
pub(crate) fn skipped_detail(t: &TerminateReport) -> String {
    let pids: Vec<String> = t.survivors.iter().map(|p| p.to_string()).collect();
    format!(
        "the group's survivor{} {} not signalled: {} uid is not the pidfile owner's (no signal reached {})",
        if pids.len() == 1 { "" } else { "s" },
        if pids.len() == 1 { format!("pid {} was", pids[0]) } else { format!("pids {} were", pids.join(", ")) },
        if pids.len() == 1 { "its" } else { "their" },
        if pids.len() == 1 { "it" } else { "them" },
    )
}
