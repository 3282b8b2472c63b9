//! Signals, the protected-target rules, schedules and parallel termination.

mod schedule;
pub(crate) mod stop;
mod terminate;

pub use crate::protect::Refusal;
pub(crate) use crate::protect::{pidfile_authority, Authority};
pub use crate::signo::Signal;
pub use schedule::{Schedule, Step};
pub use stop::{pin_pid_file, stop_pid_file, PidFilePin, StopOptions, StopOutcome, StopReport};
pub use crate::identity::ExitStatus;
pub use terminate::{terminate, terminate_pid, Outcome, TerminateOptions, TerminateReport};

