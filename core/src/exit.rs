//! The exit statuses of the `pidguard` command, decided here so that every front end (the CLI,
//! a wrapper script generator, a binding that wants to mirror it) gives a script the same
//! number for the same result.
//!
//! | code | [`ExitCode`] | meaning |
//! |---:|---|---|
//! | 0 | `Done` | what was asked was done (stopped, written, valid) |
//! | 1 | `NothingToDo` | nothing to do: the record was stale, missing or already gone; `status`: not valid |
//! | 2 | `Unkillable` | still alive after the whole schedule, or signalling (or a cleanup's finalize) failed |
//! | 3 | `Refused` | a safety rule or policy refused (protected pid, untrusted or foreign record, a live holder) |
//! | 4 | `BadInput` | malformed input: a pidfile that is not one pid, a bad schedule, a missing directory |
//! | 5 | `Undecided` | something was left undecided: a record whose identity could not be read, or another machine's or PID namespace's, was kept |
//! | 64 | `Usage` | the command line itself is wrong (sysexits `EX_USAGE`) |
//! | 77 | `NoPermission` | the operating system refused access (sysexits `EX_NOPERM`), with its own text |
//!
//! Codes are never renumbered. When several hooks of one cleanup end differently, the most
//! urgent code wins, in this order: 2, 3, 5, 0 (see [`ExitCode::for_cleanup`]).

use std::fmt;

use crate::error::{Error, ErrorKind};
use crate::hooks::{HookOutcome, HookReport};
use crate::pidfile::mtime::{CheckReason, PidFileCheck};
use crate::stop::StopOutcome;

/// The exit status of a `pidguard` command (the table in this module's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ExitCode {
    /// 0: done — stopped, written, or (for `status`) valid.
    Done = 0,
    /// 1: nothing to do — the record was stale, missing, or its process already gone; for
    /// `status`, "not valid".
    NothingToDo = 1,
    /// 2: a target was still alive after the whole schedule, or signalling it failed.
    Unkillable = 2,
    /// 3: refused by a safety rule or the policy: a protected pid, an untrusted or foreign
    /// record, an identity that is not proven, a live holder of the pidfile.
    Refused = 3,
    /// 4: malformed input: pidfile content that is not one pid, a bad token, a bad schedule or
    /// tolerance, a missing or non-directory output directory.
    BadInput = 4,
    /// 5: something was left undecided: a hook or record whose identity (or pidfile) could
    /// not be read, or that belongs to another machine or PID namespace, was kept, and nothing
    /// was sent to it: its process may still run. Try again, or look at the cause.
    Undecided = 5,
    /// 64: the command line is wrong — unknown subcommand or option, missing argument
    /// (sysexits `EX_USAGE`).
    Usage = 64,
    /// 77: the operating system refused access (`EACCES`, `EPERM`) to a file or a process
    /// (sysexits `EX_NOPERM`). The message carries the system's own text.
    NoPermission = 77,
}

impl ExitCode {
    /// Every code, in numeric order.
    pub const ALL: &'static [ExitCode] = &[
        ExitCode::Done,
        ExitCode::NothingToDo,
        ExitCode::Unkillable,
        ExitCode::Refused,
        ExitCode::BadInput,
        ExitCode::Undecided,
        ExitCode::Usage,
        ExitCode::NoPermission,
    ];

    /// The number a process exits with.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// A stable kebab-case slug (`"nothing-to-do"`).
    pub const fn slug(self) -> &'static str {
        match self {
            ExitCode::Done => "done",
            ExitCode::NothingToDo => "nothing-to-do",
            ExitCode::Unkillable => "unkillable",
            ExitCode::Refused => "refused",
            ExitCode::BadInput => "bad-input",
            ExitCode::Undecided => "undecided",
            ExitCode::Usage => "usage",
            ExitCode::NoPermission => "no-permission",
        }
    }

    /// One line for a user: what a script may conclude from the code.
    pub const fn meaning(self) -> &'static str {
        match self {
            ExitCode::Done => "done (stopped, started, written; status: valid)",
            ExitCode::NothingToDo => "nothing to do (stale, missing or already gone; status: not valid)",
            ExitCode::Unkillable => "still alive after the whole schedule, or signalling (or a cleanup's finalize) failed",
            ExitCode::Refused => "refused by a safety rule or policy (protected pid, untrusted or foreign record, live holder)",
            ExitCode::BadInput => "bad input (pidfile content, schedule, tolerance, a missing directory or program)",
            ExitCode::Undecided => "left undecided: a record that could not be judged (unreadable identity, another machine or PID namespace) was kept, nothing sent",
            ExitCode::Usage => "usage error: unknown subcommand or option, missing argument (EX_USAGE)",
            ExitCode::NoPermission => "permission denied by the operating system (EX_NOPERM)",
        }
    }

    /// The table of every code, one `  N  meaning` line each, for `--help` and the man page.
    pub fn table() -> String {
        ExitCode::ALL.iter().map(|c| format!("  {:>2}  {}\n", c.code(), c.meaning())).collect()
    }

    /// The code for an error of a core call: `Untrusted` files, refusals and a `Held` pidfile
    /// are refused (3); `PermissionDenied` is 77; a process that does not exist is "nothing to
    /// do" (1); everything else (malformed content, invalid arguments, a missing file or
    /// directory, other I/O errors) is bad input (4).
    pub fn for_error(e: &Error) -> ExitCode {
        match e.kind().family() {
            ErrorKind::Untrusted | ErrorKind::Refused | ErrorKind::Held => ExitCode::Refused,
            ErrorKind::PermissionDenied => ExitCode::NoPermission,
            ErrorKind::NoSuchProcess => ExitCode::NothingToDo,
            _ => match e.errno() {
                Some(libc::EACCES) | Some(libc::EPERM) => ExitCode::NoPermission,
                _ => ExitCode::BadInput,
            },
        }
    }

    /// The code for an operating-system error met outside a core call (a spawn, an open):
    /// `EACCES`/`EPERM` are 77, a path refused for an unsafe transition (see
    /// [`crate::pidfile::open_error`]) is refused (3), anything else is bad input (4).
    pub fn for_io(e: &std::io::Error) -> ExitCode {
        if crate::sys::chase::is_unsafe_transition(e) {
            // A path refused before anything was opened (an unsafe transition): a refusal.
            return ExitCode::Refused;
        }
        match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => ExitCode::NoPermission,
            _ => ExitCode::BadInput,
        }
    }

    /// The code of `status` for an abx-dl pidfile: valid → 0; a record whose live identity
    /// could not be read → 5; a file that could not be read → 77 when `os_error` says
    /// permission, else 4; a non-regular file → 3; malformed content → 4; anything else (missing,
    /// gone, mismatch, skew, …) → 1, "not valid".
    pub fn for_check(c: &PidFileCheck, os_error: Option<&std::io::Error>) -> ExitCode {
        match c.reason {
            CheckReason::Valid => ExitCode::Done,
            CheckReason::Unverifiable => ExitCode::Undecided,
            CheckReason::Unreadable => os_error.map_or(ExitCode::BadInput, ExitCode::for_io),
            CheckReason::NotRegular => ExitCode::Refused,
            CheckReason::Malformed | CheckReason::BadToken => ExitCode::BadInput,
            _ => ExitCode::NothingToDo,
        }
    }

    /// [`for_check`](Self::for_check) of the pidfile at `path`, except that a directory given
    /// as the pidfile (`lstat`: a symlink to one stays a refusal) is bad input (4): a wrong
    /// argument, not a file someone planted.
    pub fn for_check_at(path: &std::path::Path, c: &PidFileCheck, os_error: Option<&std::io::Error>) -> ExitCode {
        if c.reason == CheckReason::NotRegular && crate::pidfile::is_directory_not_followed(path) {
            return ExitCode::BadInput;
        }
        ExitCode::for_check(c, os_error)
    }

    /// The code of `stop`: exited → 0; stale or already gone → 1; unkillable or a signalling
    /// error → 2 (77 when the kernel said `EPERM`); refused or foreign → 3, except a refusal
    /// because the live identity could not be read, which is 5.
    pub fn for_stop(o: &StopOutcome) -> ExitCode {
        match o {
            StopOutcome::Exited(_) => ExitCode::Done,
            StopOutcome::Stale(_) | StopOutcome::AlreadyGone => ExitCode::NothingToDo,
            StopOutcome::Unkillable => ExitCode::Unkillable,
            StopOutcome::Error(msg) if is_permission_text(msg) => ExitCode::NoPermission,
            StopOutcome::Error(_) => ExitCode::Unkillable,
            StopOutcome::Refused(crate::Refusal::Unverifiable) => ExitCode::Undecided,
            StopOutcome::Refused(_) | StopOutcome::Foreign => ExitCode::Refused,
        }
    }

    /// The code of a whole cleanup: no pidfiles found → 1; otherwise the most urgent of its
    /// hooks, in the order unkillable or error (2: signalling failed, or a hook's finalize
    /// failed — its index records not written, e.g. `ENOSPC`), refused (3), undecided (5: an
    /// unverified, unreadable or foreign record kept: another machine's or PID namespace's),
    /// and done (0) when every hook was stopped, already gone or stale, and finalized.
    pub fn for_cleanup(reports: &[HookReport]) -> ExitCode {
        if reports.is_empty() {
            return ExitCode::NothingToDo;
        }
        let rank = |c: ExitCode| match c {
            ExitCode::Unkillable => 3,
            ExitCode::Refused => 2,
            ExitCode::Undecided => 1,
            _ => 0,
        };
        reports
            .iter()
            .map(|r| if crate::hooks::outcome::finalize_failed(r) { ExitCode::Unkillable } else { ExitCode::for_hook(&r.outcome) })
            .max_by_key(|c| rank(*c))
            .unwrap_or(ExitCode::Done)
    }

    /// The contribution of one hook to [`for_cleanup`](Self::for_cleanup).
    pub fn for_hook(o: &HookOutcome) -> ExitCode {
        match o {
            HookOutcome::Unkillable | HookOutcome::Error => ExitCode::Unkillable,
            // Kept because its identity (or its pidfile) could not be read, or because it is
            // another machine's or PID namespace's (never judged here): undecided — the hook may
            // still run, and the operator learns so: a record kept undecided is exit 5.
            HookOutcome::Unverified | HookOutcome::Unreadable | HookOutcome::Foreign => ExitCode::Undecided,
            HookOutcome::Refused(crate::Refusal::Unverifiable) => ExitCode::Undecided,
            HookOutcome::Refused(_) => ExitCode::Refused,
            _ => ExitCode::Done,
        }
    }
}

fn is_permission_text(msg: &str) -> bool {
    msg.contains("EPERM") || msg.contains("Operation not permitted") || msg.contains("permission")
}

impl fmt::Display for ExitCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.code(), self.slug())
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(c: ExitCode) -> std::process::ExitCode {
        std::process::ExitCode::from(c.code())
    }
}


impl StopOutcome {
    /// The exit status of `pidguard stop` for this outcome, [`ExitCode::for_stop`](crate::ExitCode::for_stop):
    /// 0 stopped, 1 nothing to do (stale or already gone), 2 unkillable or a signalling error
    /// (77 when the kernel refused permission), 3 refused (including foreign), 5 refused
    /// because the live identity could not be read. (4, bad input, is for the errors of
    /// [`stop_pid_file`](crate::stop_pid_file).)
    pub fn exit_code(&self) -> i32 {
        i32::from(ExitCode::for_stop(self).code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_numbers() {
        let nums: Vec<u8> = ExitCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(nums, [0, 1, 2, 3, 4, 5, 64, 77]);
    }

    #[test]
    fn permission_is_not_malformed_input() {
        let perm = Error::new(ErrorKind::PermissionDenied, "cannot be read");
        let bad = Error::new(ErrorKind::Malformed, "not one pid");
        assert_eq!(ExitCode::for_error(&perm), ExitCode::NoPermission);
        assert_eq!(ExitCode::for_error(&bad), ExitCode::BadInput);
        assert_eq!(ExitCode::for_error(&Error::new(ErrorKind::Held, "held")), ExitCode::Refused);
        assert_eq!(ExitCode::for_error(&Error::new(ErrorKind::Symlink, "link")), ExitCode::Refused);
    }

    #[test]
    fn cleanup_takes_the_most_urgent_hook() {
        assert_eq!(ExitCode::for_cleanup(&[]), ExitCode::NothingToDo);
        assert_eq!(ExitCode::for_hook(&HookOutcome::Unreadable), ExitCode::Undecided);
        assert_eq!(ExitCode::for_hook(&HookOutcome::Unverified), ExitCode::Undecided);
        assert_eq!(ExitCode::for_hook(&HookOutcome::Stale), ExitCode::Done);
    }

    #[test]
    fn table_lists_every_code() {
        let t = ExitCode::table();
        for c in ExitCode::ALL {
            assert!(t.contains(&format!("{:>2}  ", c.code())), "{c} missing from the table");
        }
    }
}
