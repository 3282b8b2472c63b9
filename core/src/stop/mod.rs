//! Stopping the process a pidfile names (`pidguard stop`, start-stop-daemon's `--stop`), and
//! the first half of a stop for callers that signal on their own (`pin_pid_file`). What a
//! record allows is the table's ([`crate::ops`]).

mod judged;
mod pin;
mod report;
mod run;

pub(crate) use report::skipped_detail;
pub use pin::{pin_pid_file, PidFilePin};
pub use report::{StopOptions, StopOutcome, StopReport};
pub use run::stop_pid_file;
