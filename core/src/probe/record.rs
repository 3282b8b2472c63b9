//! The probe's record: "is this record in use?", answered without any side effect.

use std::path::Path;

use crate::ops::{on_live_scope, probe as probe_rule, scope_consulted, Answer, Operation, ScopeAllows};
use crate::error::Result;
use crate::identity::ScopeKind;
use crate::options::CheckOptions;
use crate::pidfile::mtime::PidFileCheck;
use crate::pidfile::target::{scope_target, ScopeTarget};
use crate::pidfile::Format;
use crate::protect::Refusal;

/// What [`probe_pid_file`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// The pidfile's format ([`Format::of`]).
    pub format: Format,
    /// The record's check (a guard record's is its verdict's [`crate::guard::Verdict::to_check`]).
    pub check: PidFileCheck,
    /// The kind of scope recorded with the record (`Group` when none is recorded).
    pub scope: ScopeKind,
    /// How many processes the recorded scope still holds, each pinned and proven inside it
    /// when counted; `None` when no scope is recorded, the record's reason does not consult it
    /// ([`crate::ops::scope_consulted`]) or it could not be read.
    pub scope_members: Option<usize>,
    /// Why the recorded scope could not be judged, when a read failed (its members unreadable:
    /// `EMFILE`, `EACCES`; the scope itself unverifiable). A failed read is never "empty": the
    /// answer is then `Undecided` unless the record's own process runs.
    pub scope_unreadable: Option<String>,
    /// The answer: `Running` when the recorded process runs or its scope still holds processes;
    /// `NotRunning` only on proof; `Undecided`/`Unusable` when nothing proves it either way.
    pub answer: Answer,
}

impl Probe {
    /// Whether the record is in use — anything but proven not running: a sweep keeps a record
    /// it cannot judge.
    pub fn in_use(&self) -> bool {
        self.answer != Answer::NotRunning
    }

    /// Whether the record runs: its process or, when that is gone, its scope.
    pub fn running(&self) -> bool {
        self.answer == Answer::Running
    }

    /// For a record that runs only through its scope (its first process is gone, its scope
    /// still holds processes): `pid N exited; its scope (supervisor) still holds M
    /// process(es)`. `None` otherwise (the record's own check says it all).
    pub fn scope_text(&self) -> Option<String> {
        let n = self.scope_members.filter(|&n| n > 0 && self.running() && crate::ops::check(self.check.reason) != Answer::Running)?;
        let pid = self.check.pid.map(|p| format!("pid {p} {}; ", self.check.reason)).unwrap_or_default();
        Some(format!("{pid}its scope ({}) still holds {n} process{}", self.scope, if n == 1 { "" } else { "es" }))
    }

    /// For a record whose own check says not running but whose scope could not be read (so
    /// nothing proves it is not running): `pid N gone; its scope (cgroup) could not be read
    /// (…): undecided`. `None` otherwise.
    pub fn undecided_text(&self) -> Option<String> {
        let why = self.scope_unreadable.as_ref().filter(|_| self.answer == Answer::Undecided)?;
        let pid = self.check.pid.map(|p| format!("pid {p} {}; ", self.check.reason)).unwrap_or_default();
        Some(format!("{pid}its scope ({}) could not be judged: {why}", self.scope))
    }

    /// The exit status of the CLI's `status` for this answer: a record that runs only through
    /// its scope is running (0); otherwise [`crate::ExitCode::for_check_at`] of the record.
    pub fn exit_code(&self, path: &Path, os_error: Option<&std::io::Error>) -> crate::ExitCode {
        if self.scope_text().is_some() {
            return crate::ExitCode::Done;
        }
        if self.undecided_text().is_some() {
            return crate::ExitCode::Undecided;
        }
        crate::ExitCode::for_check_at(path, &self.check, os_error)
    }
}

/// Probe a pidfile of either format (as the CLI's `status` reads it: for an abx-dl pidfile with
/// no recorded command in `opts`, the `.sh` beside it when it exists): the record's check plus
/// "its scope still holds N processes". Nothing is signalled, nothing removed, nothing waited
/// on: a probe never acts. The scope is counted with its own identity (cgroup id and boot,
/// supervisor token) and only for a record dated on this machine and in this PID namespace,
/// under the owner rule a stop applies (a pidfile owned by another uid than a privileged
/// caller's counts only a scope of that uid); a scope that could not be read, or that the
/// record may not claim, leaves the count `None` and the answer the record's own.
///
/// Errors: those of reading a guard record (`Malformed`, `PermissionDenied`, `Io`); an abx-dl
/// pidfile's problems are its check's reason, never an error.
pub fn probe_pid_file(pid_file: &Path, opts: &CheckOptions<'_>) -> Result<Probe> {
    let (format, check) = crate::options::status(pid_file, opts)?;
    Ok(probe_checked(format, check, Operation::Probe))
}

/// The answer of `op` (`Probe` or `Status`) for a checked record, its scope counted.
pub(crate) fn probe_checked(format: Format, check: PidFileCheck, op: Operation) -> Probe {
    let own = match op {
        Operation::Status => crate::ops::status(check.reason),
        _ => probe_rule(check.reason),
    };
    let scope = check.scope.as_ref().map_or(ScopeKind::Group, |r| r.kind());
    let counts = on_live_scope(op) == ScopeAllows::Count && scope_consulted(check.reason);
    // The scope is judged as a stop would judge it (`scope_target`: the pidfile's owner rule
    // included), so a scope the record may not claim — another user's leaf or supervisor named
    // in a user's pidfile — is never counted as the record's: status and stop agree.
    // A scope whose members could not be read (EMFILE, EACCES) or that could not be verified
    // is undecided, never "empty": a failed read is never a fact about a process.
    let (scope_members, scope_unreadable) = match (&check.scope, counts) {
        (Some(_), true) => match scope_target(&check) {
            // Counted a bounded number of pidfds at a time (`Scope::member_count`).
            ScopeTarget::Open(s) => match s.member_count() {
                Ok(n) => (Some(n), None),
                Err(e) => (None, Some(format!("its members could not be read ({})", crate::sys::errno_name(e.raw_os_error().unwrap_or(libc::EIO))))),
            },
            ScopeTarget::Absent(_) => (Some(0), None),
            ScopeTarget::Keep(Refusal::Unverifiable, why, _) => (None, Some(why)),
            ScopeTarget::Keep(..) => (None, None),
        },
        _ => (None, None),
    };
    let answer = match (own, scope_members, &scope_unreadable) {
        (Answer::NotRunning, Some(n), _) if n > 0 => Answer::Running,
        (Answer::NotRunning, None, Some(_)) => Answer::Undecided,
        (a, _, _) => a,
    };
    Probe { format, check, scope, scope_members, scope_unreadable, answer }
}

/// The CLI's `status` of a pidfile: [`probe_pid_file`]'s answer under the status rules (a valid
/// record runs; a record whose first process exited while its scope still holds processes runs
/// too, with the count).
///
/// Errors: as [`probe_pid_file`].
pub fn status_pid_file(pid_file: &Path, opts: &CheckOptions<'_>) -> Result<Probe> {
    let (format, check) = crate::options::status(pid_file, opts)?;
    Ok(probe_checked(format, check, Operation::Status))
}
