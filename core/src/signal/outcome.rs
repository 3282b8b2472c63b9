//! What a termination did to each target: the outcome and the report, shared by the group
//! runner (`terminate.rs`) and the scope runner (`scoped.rs`).

use std::fmt;
use std::time::Duration;

use super::{Refusal, Signal};
use crate::error::ErrorKind;
use crate::identity::{ExitStatus, GroupMode, PinMode};

/// The outcome for one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It had exited before anything was sent.
    AlreadyGone,
    /// It exited (its whole group, for a group leader) after `after` was sent.
    Exited {
        /// The last signal sent before it exited.
        after: Signal,
    },
    /// Still there after the last step of the schedule.
    Unkillable,
    /// Not signalled: a safety rule or the policy refused it.
    Refused(Refusal),
    /// Signalling failed (for example `EPERM` for another user's process).
    Error(String),
}

impl Outcome {
    /// The signal after which the target exited, for the exited outcome.
    pub fn after(&self) -> Option<Signal> {
        match self {
            Outcome::Exited { after: s } => Some(*s),
            _ => None,
        }
    }

    /// Why signalling was refused, for the refused outcome.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Outcome::Refused(r) => Some(*r),
            _ => None,
        }
    }

    /// `"already-gone"`, `"exited"`, `"unkillable"`, `"refused"` or `"error"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::AlreadyGone => "already-gone",
            Outcome::Exited { .. } => "exited",
            Outcome::Unkillable => "unkillable",
            Outcome::Refused(_) => "refused",
            Outcome::Error(_) => "error",
        }
    }
    /// Whether the target is gone now (`AlreadyGone` or `Exited`).
    pub fn is_stopped(&self) -> bool {
        matches!(self, Outcome::AlreadyGone | Outcome::Exited { .. })
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Exited { after } => write!(f, "exited after {after}"),
            Outcome::Refused(r) => write!(f, "refused ({r})"),
            Outcome::Error(e) => write!(f, "error: {e}"),
            o => f.write_str(o.as_str()),
        }
    }
}

/// What happened to one target.
#[derive(Clone, Debug)]
pub struct TerminateReport {
    /// The target's pid.
    pub pid: i32,
    /// The outcome.
    pub outcome: Outcome,
    /// Every signal sent, in order (`SIGCONT` after `SIGTERM` included).
    pub signals: Vec<Signal>,
    /// The exit status when the target is the caller's child, else `Unknown`.
    pub exit: ExitStatus,
    /// Whether the process group was the target (the target led its group).
    pub group: bool,
    /// How the handle was pinned.
    pub pin_mode: PinMode,
    /// How group signals were delivered, when any was.
    pub group_mode: Option<GroupMode>,
    /// Members of the group still alive at the end: for `Unkillable`, and for
    /// `Refused(UntrustedPidfile)` when every survivor was left unsignalled because its uid is
    /// not the pidfile owner's (a root caller acting on another user's pidfile: nothing reached
    /// them, so the outcome names them instead of calling them unkillable).
    pub survivors: Vec<i32>,
    /// Time from the start of the call to the outcome.
    pub elapsed: Duration,
    /// For the error outcome: the kind of the error (`PermissionDenied` when the kernel refused
    /// the signal with `EPERM`).
    pub error_kind: Option<ErrorKind>,
    /// What was stopped: the process group (or the process alone, see [`Self::group`]), or the
    /// recorded scope — a cgroup leaf or a supervisor's tree ([`crate::signal::terminate_scopes`]).
    pub scope: crate::identity::ScopeKind,
}

/// How long a target may still take to exit after the last signal of a schedule that ends
/// without a wait at least this long (`TERM/-1`, `--retry 0`) before it is called unkillable:
/// signal delivery is asynchronous, and even SIGKILL takes effect only when the target is next
/// scheduled. 250 ms: enough on a loaded machine; added only to such schedules.
pub const FINAL_GRACE: Duration = Duration::from_millis(250);
