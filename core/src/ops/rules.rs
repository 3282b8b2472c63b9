//! The decisions: one exhaustive `match` per operation (see [`super`]).

use crate::identity::Policy;
use crate::pidfile::mtime::CheckReason;
use crate::protect::Refusal;

/// The operations on a pidfile, each with one row of decisions in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `check_pid_file`: the record's reason, as read; decides nothing else.
    Check,
    /// `validate_pid_file`: abx-dl's yes/no.
    Validate,
    /// The CLI's `status`: running, not running, undecided or unusable, and its exit status.
    Status,
    /// `probe_pid_file`: "is this record in use?" for sweeps; never acts.
    Probe,
    /// `stop_pid_file`: signals and retires.
    Stop,
    /// `pin_pid_file`: the abx-dl shapes' judge-then-pin; retires on abx-dl's rejections, never
    /// signals.
    Pin,
    /// The cleanup's judge (`cleanup_background_hooks`): signals hooks and retires records.
    Judge,
}

/// Every operation, in the table's column order.
pub const OPERATIONS: [Operation; 7] =
    [Operation::Check, Operation::Validate, Operation::Status, Operation::Probe, Operation::Stop, Operation::Pin, Operation::Judge];

/// Every reason, in the table's row order. [`reason_index`] keeps it complete.
pub const REASONS: [CheckReason; 13] = [
    CheckReason::Valid,
    CheckReason::Zombie,
    CheckReason::Missing,
    CheckReason::Unreadable,
    CheckReason::NotRegular,
    CheckReason::Malformed,
    CheckReason::BadToken,
    CheckReason::Gone,
    CheckReason::Mismatch,
    CheckReason::Foreign,
    CheckReason::Unverifiable,
    CheckReason::MtimeSkew,
    CheckReason::CmdMismatch,
];

/// The row of `r` in [`REASONS`] (a new reason does not compile until it has one).
pub const fn reason_index(r: CheckReason) -> usize {
    match r {
        CheckReason::Valid => 0,
        CheckReason::Zombie => 1,
        CheckReason::Missing => 2,
        CheckReason::Unreadable => 3,
        CheckReason::NotRegular => 4,
        CheckReason::Malformed => 5,
        CheckReason::BadToken => 6,
        CheckReason::Gone => 7,
        CheckReason::Mismatch => 8,
        CheckReason::Foreign => 9,
        CheckReason::Unverifiable => 10,
        CheckReason::MtimeSkew => 11,
        CheckReason::CmdMismatch => 12,
    }
}

/// The answer of an operation that only answers (`check`, `validate`, `status`, `probe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// The recorded process runs (`status` exit 0; `validate` True; `probe`: in use).
    Running,
    /// Nothing of the record runs (`status` exit 1; `validate` False; `probe`: not in use).
    NotRunning,
    /// Nothing proves it either way (`status` exit 5; `probe`: in use — keep it).
    Undecided,
    /// The file itself cannot be judged (`status` exit 3/4/77; `probe`: in use — keep it).
    Unusable,
}

impl Answer {
    /// A stable kebab-case slug (`not-running`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Answer::Running => "running",
            Answer::NotRunning => "not-running",
            Answer::Undecided => "undecided",
            Answer::Unusable => "unusable",
        }
    }
}

/// One cell of the table: an answer (the operations that only answer) or what an acting
/// operation may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Only an answer; nothing is signalled or removed.
    Answer(Answer),
    /// What an acting operation (`stop`, `pin`, the cleanup's judge) may do.
    Allows(Allows),
}

/// What a record allows an acting operation to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Allows {
    /// Pin the recorded process and act on it (the owner rule and the protected targets still
    /// apply; a zombie is acted on for the group it pins, when its identity matches).
    Act,
    /// Act, on the lenient policy, with a warning (a token-less record whose mtime is off).
    ActLeniently,
    /// Stale: nothing is signalled; the record is removed if it still holds what was judged.
    Retire,
    /// Nothing is signalled, the record is kept; reported as refused for this reason.
    Keep(Refusal),
    /// Another machine's or PID namespace's record: left alone, kept.
    Leave,
    /// No file: nothing to do.
    Nothing,
    /// The record cannot be judged at all: an error (or, for the cleanup, reported unreadable
    /// and kept); nothing signalled, nothing removed.
    Fail,
}

/// What an operation does with a recorded scope (a cgroup leaf or a supervisor's tree) that still
/// holds processes, whatever became of the record's first process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScopeAllows {
    /// Not consulted: the answer is the record's alone.
    Ignore,
    /// Counted, nothing signalled: the record is running, with that many processes.
    Count,
    /// A handle that reaches the scope (the scope-only handle when the first process is gone);
    /// nothing signalled here.
    Handle,
    /// Every process of the scope is stopped; the record is retired once it is empty.
    Stop,
}

// Which reasons consult a recorded scope is decided beside the scope's judge (a pidfile
// mechanism, below the operations), in one exhaustive match too.
pub use crate::pidfile::target::scope_consulted;

/// What each operation does with a live recorded scope.
pub const fn on_live_scope(op: Operation) -> ScopeAllows {
    match op {
        Operation::Check | Operation::Validate => ScopeAllows::Ignore,
        Operation::Status | Operation::Probe => ScopeAllows::Count,
        Operation::Pin => ScopeAllows::Handle,
        Operation::Stop | Operation::Judge => ScopeAllows::Stop,
    }
}

/// What `op` may do with a record checked as `r`, under `policy` (only `stop` reads it: the
/// lenient policy acts on a token-less record whose mtime is off).
pub fn decide(op: Operation, r: CheckReason, policy: Policy) -> Decision {
    match op {
        Operation::Check => Decision::Answer(check(r)),
        Operation::Validate => Decision::Answer(validate(r)),
        Operation::Status => Decision::Answer(status(r)),
        Operation::Probe => Decision::Answer(probe(r)),
        Operation::Stop => Decision::Allows(stop(r, policy)),
        Operation::Pin => Decision::Allows(pin(r)),
        Operation::Judge => Decision::Allows(judge(r)),
    }
}

/// `check_pid_file`'s `valid`: running only for a valid record.
pub const fn check(r: CheckReason) -> Answer {
    match r {
        CheckReason::Valid => Answer::Running,
        CheckReason::Unverifiable => Answer::Undecided,
        CheckReason::Unreadable | CheckReason::NotRegular | CheckReason::Malformed | CheckReason::BadToken => Answer::Unusable,
        CheckReason::Zombie
        | CheckReason::Missing
        | CheckReason::Gone
        | CheckReason::Mismatch
        | CheckReason::Foreign
        | CheckReason::MtimeSkew
        | CheckReason::CmdMismatch => Answer::NotRunning,
    }
}

/// abx-dl's `validate_pid_file`: True only for a valid record; everything else is False.
pub const fn validate(r: CheckReason) -> Answer {
    match r {
        CheckReason::Valid => Answer::Running,
        CheckReason::Zombie
        | CheckReason::Missing
        | CheckReason::Unreadable
        | CheckReason::NotRegular
        | CheckReason::Malformed
        | CheckReason::BadToken
        | CheckReason::Gone
        | CheckReason::Mismatch
        | CheckReason::Foreign
        | CheckReason::Unverifiable
        | CheckReason::MtimeSkew
        | CheckReason::CmdMismatch => Answer::NotRunning,
    }
}

/// The CLI's `status` (before its scope is counted: a live scope makes it running).
pub const fn status(r: CheckReason) -> Answer {
    check(r)
}

/// `probe_pid_file`'s "in use" (before its scope is counted: a live scope makes it in use).
/// Anything that is not proven stale is in use: a sweep keeps what it cannot judge.
pub const fn probe(r: CheckReason) -> Answer {
    match r {
        CheckReason::Valid | CheckReason::Zombie => Answer::Running,
        CheckReason::Unverifiable | CheckReason::Foreign => Answer::Undecided,
        CheckReason::Unreadable | CheckReason::NotRegular | CheckReason::BadToken => Answer::Unusable,
        CheckReason::Missing
        | CheckReason::Malformed
        | CheckReason::Gone
        | CheckReason::Mismatch
        | CheckReason::MtimeSkew
        | CheckReason::CmdMismatch => Answer::NotRunning,
    }
}

/// `stop_pid_file` (the CLI's `stop`): acts only on a proven identity; a record nothing proves
/// is refused and kept; proven staleness retires it.
pub const fn stop(r: CheckReason, policy: Policy) -> Allows {
    match r {
        CheckReason::Valid | CheckReason::Zombie => Allows::Act,
        CheckReason::Missing => Allows::Nothing,
        CheckReason::Malformed | CheckReason::BadToken | CheckReason::NotRegular | CheckReason::Unreadable => Allows::Fail,
        CheckReason::Foreign => Allows::Leave,
        CheckReason::Gone | CheckReason::Mismatch => Allows::Retire,
        CheckReason::Unverifiable => Allows::Keep(Refusal::Unverifiable),
        // The live argv is not the `.sh`'s: some other process holds the number, but nothing
        // proves the record stale (the `.sh` may be newer): kept.
        CheckReason::CmdMismatch => Allows::Keep(Refusal::NotTheRecordedProcess),
        // Without a token only the mtime rule speaks, and a hand-written pidfile fails it while
        // naming the right process: could not be verified, unless the caller chose lenient.
        CheckReason::MtimeSkew => match policy {
            Policy::Lenient => Allows::ActLeniently,
            Policy::Strict => Allows::Keep(Refusal::Unverifiable),
        },
    }
}

/// `pin_pid_file` (the abx-dl shapes' `graceful_kill_by_pid_file`, `safe_kill_process`): what
/// abx-dl's `validate_pid_file` rejects for a proven reason is stale and retired, as abx-dl
/// does (a zombie too: abx-dl's record names a hook, not a group); nothing is ever signalled.
pub const fn pin(r: CheckReason) -> Allows {
    match r {
        CheckReason::Valid => Allows::Act,
        CheckReason::Missing => Allows::Nothing,
        CheckReason::BadToken | CheckReason::NotRegular | CheckReason::Unreadable => Allows::Fail,
        CheckReason::Foreign => Allows::Leave,
        CheckReason::Unverifiable => Allows::Keep(Refusal::Unverifiable),
        CheckReason::Gone
        | CheckReason::Zombie
        | CheckReason::Mismatch
        | CheckReason::MtimeSkew
        | CheckReason::CmdMismatch
        | CheckReason::Malformed => Allows::Retire,
    }
}

/// The cleanup's judge (`cleanup_background_hooks`): as abx-dl's cleanup, a token-less record
/// compared against a process whose identity was read and found different (mtime, command) is
/// stale; a zombie is acted on for its group; what cannot be read is reported and kept. (A
/// guard record matched by the cleanup's pattern is not judged here: it is left alone.)
pub const fn judge(r: CheckReason) -> Allows {
    match r {
        CheckReason::Valid | CheckReason::Zombie => Allows::Act,
        CheckReason::Foreign => Allows::Leave,
        CheckReason::Unreadable | CheckReason::NotRegular => Allows::Fail,
        CheckReason::Malformed
        | CheckReason::Gone
        | CheckReason::Mismatch
        | CheckReason::MtimeSkew
        | CheckReason::CmdMismatch
        | CheckReason::Missing => Allows::Retire,
        CheckReason::BadToken | CheckReason::Unverifiable => Allows::Keep(Refusal::Unverifiable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_row() {
        for (i, r) in REASONS.iter().enumerate() {
            assert_eq!(reason_index(*r), i, "{r}");
        }
    }
}
