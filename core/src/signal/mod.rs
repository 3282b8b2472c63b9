//! Signals, the protected-target rules, schedules and parallel termination.

mod outcome;
mod schedule;
mod scoped;
mod stepper;
mod terminate;

pub use crate::protect::Refusal;
pub(crate) use crate::protect::{pidfile_authority, Authority};
pub use crate::signo::Signal;
pub use schedule::{Schedule, Step};
pub use crate::identity::ExitStatus;
pub use scoped::terminate_scopes;
pub(crate) use scoped::outside_decides;
pub use terminate::{terminate, terminate_pid, Outcome, TerminateOptions, TerminateReport, FINAL_GRACE};

