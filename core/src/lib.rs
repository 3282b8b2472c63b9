//! # pidguard: track and stop processes by pid, safe against pid reuse
//!
//! A pid is a number the kernel hands out again. A pidfile with only a number in it proves
//! nothing once the process has died: the number goes to a stranger, and `kill` hits the
//! stranger. pidguard answers two questions:
//!
//! 1. **Is the process this record names still that same process?** [`judge`] compares a
//!    recorded [`StartToken`] (machine id, boot id, pid namespace, start ticks, pidfs inode)
//!    with the live process and answers one of four [`Verdict`]s — `Match`, `Mismatch`,
//!    `Unverifiable`, `Gone` — never a guess.
//! 2. **Stop it, and its process group, and nothing else.** A [`ProcessRef`] pins the process
//!    with a pidfd *before* its identity is re-checked, so a signal can never reach a process
//!    that reused the number; [`terminate`] runs a start-stop-daemon-style [`Schedule`]
//!    (`TERM/2/KILL/1`) over many targets in parallel.
//!
//! ## Formats
//! - The abx-dl pidfile ([`write_pid_file_with_mtime`], [`validate_pid_file`],
//!   [`check_pid_file`], [`write_cmd_file`]): the pid as content, the start time as mtime, and
//!   the start token in the `user.pidguard.token` xattr.
//! - The guard format ([`guard`]): one JSON record per pidfile for single-instance guards,
//!   created by exactly one of any number of racing creators, removed only by content, with
//!   [`guard::acquire`] returning a guard that releases its own record on drop.
//! - [`cleanup_background_hooks`] stops every background hook of an output directory.
//! - [`launch`] records a process the caller has just spawned (start-stop-daemon's
//!   `--make-pidfile`), refusing a pidfile that still belongs to a live process.
//! - [`ExitCode`] is the exit status of the `pidguard` command for every result.
//!
//! ## Policies
//! Under [`Policy::Strict`] only `Match` authorises a signal; [`Policy::Lenient`] also accepts
//! `Unverifiable` (a record written before tokens existed, named by the user). Pid ≤ 0, pid 1,
//! a pid above 4194304 (`PID_MAX_LIMIT`), the caller's own pid and its own process group are never signalled.
//!
//! ## Example
//! ```no_run
//! use pidguard::{ProcessRef, Policy, terminate, TerminateOptions};
//! use std::os::unix::process::CommandExt;
//! # fn main() -> pidguard::Result<()> {
//! let child = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
//! let token = pidguard::start_token(child.id() as i32)?;
//! // … later, maybe in another process that read the token from a file:
//! let h = ProcessRef::open(child.id() as i32, Some(&token), Policy::Strict)?;
//! let report = terminate(vec![h], &TerminateOptions::default());
//! assert!(report[0].outcome.is_stopped());
//! # Ok(()) }
//! ```
//!
//! Start ticks are shifted by the reader's time namespace (Linux ≥ 5.6): compare tokens only
//! within one time namespace.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod error;
mod json;
mod dir_status;
pub mod exit;
pub mod guard;
mod pathtext;
mod protect;
mod refusal;
mod signo;
pub mod hooks;
pub mod identity;
pub mod launch;
pub mod ops;
pub mod options;
pub mod probe;
pub mod pidfile;
pub mod report;
pub mod signal;
pub mod stop;
#[doc(hidden)]
pub mod sys;

pub use error::{Error, ErrorKind, Result};
pub use dir_status::{dir_status, DirEntryStatus, EntryState};
pub use exit::ExitCode;
pub use hooks::{cleanup_background_hooks, CleanupOptions, HookOutcome, HookReport, MAX_THREADS, PARALLEL_MIN_HOOKS};
pub use identity::{
    compare_tokens, is_process_alive, judge, lookup, probe_alive, start_token, thread_group_exited, Delivery, GroupMode, Judgement, PinMode, Policy, ProcessInfo, ProcessRef,
    Reason, Scope, ScopeKind, ScopeRecord, ScopeState, StartToken, TokenOs, Verdict, SCOPE_XATTR,
};
pub use pidfile::cmd::{write_cmd_file, RecordedCommand};
pub use pidfile::Format;
pub use options::{check_pid_file, check_pid_file_with, validate_pid_file, validate_pid_file_with, CheckOptions};
pub use pidfile::mtime::{write_pid_file_with_mtime, CheckReason, PidFileCheck, DEFAULT_TOLERANCE, TOKEN_XATTR};
pub use signal::{terminate, terminate_pid, terminate_scopes, ExitStatus, Outcome, Refusal, Schedule, Signal, Step, TerminateOptions, TerminateReport};
pub use probe::{probe_pid_file, Probe};
pub use stop::{pin_pid_file, stop_pid_file, PidFilePin, StopOptions, StopOutcome, StopReport};

/// The pidguard version (the crate version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
