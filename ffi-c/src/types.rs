//! Enums and plain structs of the C interface, and their conversions from core values.
//!
//! Every enum is `int32_t`-sized (`#[repr(i32)]`); functions take enum inputs as `int32_t` and
//! check them, since a C caller may pass any number.
#![allow(non_camel_case_types)]

use std::ffi::c_char;

use pidguard_core::hooks::HookOutcome;
use pidguard_core::{CheckReason, Outcome, Policy, Reason, Refusal, StopOutcome, Verdict};

use crate::boundary::FfiResult;

/// Is the process a record names still that same process? One of four answers, never a guess.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_verdict {
    /// Not judged (only in results where judging did not happen, such as a missing pidfile).
    PIDGUARD_VERDICT_NONE = 0,
    /// Same machine, boot, PID namespace and start ticks (and pidfs inode where both have one).
    PIDGUARD_VERDICT_MATCH = 1,
    /// Proven reuse: another boot, other start ticks or another pidfs inode.
    PIDGUARD_VERDICT_MISMATCH = 2,
    /// Nothing proves it either way: no recorded token, an unreadable live token, another PID
    /// namespace or another machine.
    PIDGUARD_VERDICT_UNVERIFIABLE = 3,
    /// No such process, or a zombie (exited, not yet reaped).
    PIDGUARD_VERDICT_GONE = 4,
}

impl pidguard_verdict {
    pub(crate) fn of(v: Option<Verdict>) -> Self {
        match v {
            None => Self::PIDGUARD_VERDICT_NONE,
            Some(Verdict::Match) => Self::PIDGUARD_VERDICT_MATCH,
            Some(Verdict::Mismatch) => Self::PIDGUARD_VERDICT_MISMATCH,
            Some(Verdict::Unverifiable) => Self::PIDGUARD_VERDICT_UNVERIFIABLE,
            Some(Verdict::Gone) => Self::PIDGUARD_VERDICT_GONE,
        }
    }
}

/// Why a verdict was reached.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_reason {
    /// Not judged.
    PIDGUARD_REASON_NONE = 0,
    /// Every token field is equal (MATCH).
    PIDGUARD_REASON_TOKEN_EQUAL = 1,
    /// The record was written in another boot of this machine (MISMATCH).
    PIDGUARD_REASON_BOOT_ID_DIFFERS = 2,
    /// Start ticks differ (MISMATCH).
    PIDGUARD_REASON_START_TICKS_DIFFER = 3,
    /// Both pidfs inodes are known and differ: reuse within one clock tick (MISMATCH).
    PIDGUARD_REASON_PIDFS_INODE_DIFFERS = 4,
    /// The record carries no token (UNVERIFIABLE).
    PIDGUARD_REASON_NO_RECORDED_TOKEN = 5,
    /// The live token was read without the pidfs inode the record has (UNVERIFIABLE).
    PIDGUARD_REASON_LIVE_TOKEN_UNREADABLE = 6,
    /// The record was written in another PID namespace (UNVERIFIABLE; leave it alone).
    PIDGUARD_REASON_FOREIGN_PID_NAMESPACE = 7,
    /// The record was written on another machine (UNVERIFIABLE; leave it alone).
    PIDGUARD_REASON_FOREIGN_MACHINE = 8,
    /// No process has the pid (GONE).
    PIDGUARD_REASON_NO_SUCH_PROCESS = 9,
    /// The process is a zombie (GONE).
    PIDGUARD_REASON_ZOMBIE = 10,
    /// The live identity could not be read: EMFILE, EACCES, a /proc mounted hidepid, …
    /// (UNVERIFIABLE; never read as gone).
    PIDGUARD_REASON_LIVE_IDENTITY_UNREADABLE = 11,
}

impl pidguard_reason {
    pub(crate) fn of(r: Option<Reason>) -> Self {
        match r {
            None => Self::PIDGUARD_REASON_NONE,
            Some(Reason::TokenEqual) => Self::PIDGUARD_REASON_TOKEN_EQUAL,
            Some(Reason::BootIdDiffers) => Self::PIDGUARD_REASON_BOOT_ID_DIFFERS,
            Some(Reason::StartTicksDiffer) => Self::PIDGUARD_REASON_START_TICKS_DIFFER,
            Some(Reason::PidfsInodeDiffers) => Self::PIDGUARD_REASON_PIDFS_INODE_DIFFERS,
            Some(Reason::NoRecordedToken) => Self::PIDGUARD_REASON_NO_RECORDED_TOKEN,
            Some(Reason::LiveTokenUnreadable) => Self::PIDGUARD_REASON_LIVE_TOKEN_UNREADABLE,
            Some(Reason::ForeignPidNamespace) => Self::PIDGUARD_REASON_FOREIGN_PID_NAMESPACE,
            Some(Reason::ForeignMachine) => Self::PIDGUARD_REASON_FOREIGN_MACHINE,
            Some(Reason::NoSuchProcess) => Self::PIDGUARD_REASON_NO_SUCH_PROCESS,
            Some(Reason::Zombie) => Self::PIDGUARD_REASON_ZOMBIE,
            Some(Reason::LiveIdentityUnreadable(_)) => Self::PIDGUARD_REASON_LIVE_IDENTITY_UNREADABLE,
        }
    }
}

/// Why an abx-dl pidfile is or is not valid (pidguard_check_pid_file()).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_check_reason {
    /// Valid: the recorded process is alive and matches.
    PIDGUARD_CHECK_VALID = 0,
    /// No file at the path.
    PIDGUARD_CHECK_MISSING = 1,
    /// The file could not be opened or read.
    PIDGUARD_CHECK_UNREADABLE = 2,
    /// A symlink, FIFO, directory or other non-regular file.
    PIDGUARD_CHECK_NOT_REGULAR = 3,
    /// The content is not one decimal pid in 1..pid_max.
    PIDGUARD_CHECK_MALFORMED = 4,
    /// The token attribute is present but is not a pidguard start token.
    PIDGUARD_CHECK_BAD_TOKEN = 5,
    /// No such process.
    PIDGUARD_CHECK_GONE = 6,
    /// The process is a zombie.
    PIDGUARD_CHECK_ZOMBIE = 7,
    /// The token proves another process holds the pid (or another boot wrote the file).
    PIDGUARD_CHECK_MISMATCH = 8,
    /// Written on another machine or in another PID namespace: leave it alone.
    PIDGUARD_CHECK_FOREIGN = 9,
    /// The file has a token but the live token cannot be read.
    PIDGUARD_CHECK_UNVERIFIABLE = 10,
    /// No token, and the mtime is more than `tolerance` seconds from the process's start.
    PIDGUARD_CHECK_MTIME_SKEW = 11,
    /// The live command does not match the `.sh` command file (or its argv is unreadable).
    PIDGUARD_CHECK_CMD_MISMATCH = 12,
}

impl pidguard_check_reason {
    pub(crate) fn of(r: CheckReason) -> Self {
        match r {
            CheckReason::Valid => Self::PIDGUARD_CHECK_VALID,
            CheckReason::Missing => Self::PIDGUARD_CHECK_MISSING,
            CheckReason::Unreadable => Self::PIDGUARD_CHECK_UNREADABLE,
            CheckReason::NotRegular => Self::PIDGUARD_CHECK_NOT_REGULAR,
            CheckReason::Malformed => Self::PIDGUARD_CHECK_MALFORMED,
            CheckReason::BadToken => Self::PIDGUARD_CHECK_BAD_TOKEN,
            CheckReason::Gone => Self::PIDGUARD_CHECK_GONE,
            CheckReason::Zombie => Self::PIDGUARD_CHECK_ZOMBIE,
            CheckReason::Mismatch => Self::PIDGUARD_CHECK_MISMATCH,
            CheckReason::Foreign => Self::PIDGUARD_CHECK_FOREIGN,
            CheckReason::Unverifiable => Self::PIDGUARD_CHECK_UNVERIFIABLE,
            CheckReason::MtimeSkew => Self::PIDGUARD_CHECK_MTIME_SKEW,
            CheckReason::CmdMismatch => Self::PIDGUARD_CHECK_CMD_MISMATCH,
        }
    }
}

/// Who may be signalled on the strength of a verdict.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_policy {
    /// Only MATCH authorises a signal. For cleanup and anything the user did not name.
    PIDGUARD_POLICY_STRICT = 0,
    /// MATCH and UNVERIFIABLE authorise (never MISMATCH or GONE). For a record the user names
    /// explicitly that was written before tokens existed.
    PIDGUARD_POLICY_LENIENT = 1,
}

impl pidguard_policy {
    pub(crate) fn parse(v: i32) -> FfiResult<Policy> {
        match v {
            0 => Ok(Policy::Strict),
            1 => Ok(Policy::Lenient),
            _ => Err(pidguard_core::Error::invalid(format!(
                "policy {v} is neither PIDGUARD_POLICY_STRICT (0) nor PIDGUARD_POLICY_LENIENT (1)"
            ))),
        }
    }
}

/// Why pidguard refused to signal.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_refusal {
    /// Not refused.
    PIDGUARD_REFUSAL_NONE = 0,
    /// pid <= 0: kill(0) is the caller's group and kill(-1) every process.
    PIDGUARD_REFUSAL_NON_POSITIVE_PID = 1,
    /// pid above /proc/sys/kernel/pid_max.
    PIDGUARD_REFUSAL_ABOVE_PID_MAX = 2,
    /// pid 1 or group 1: killpg(1, sig) is kill(-1, sig).
    PIDGUARD_REFUSAL_INIT = 3,
    /// The caller's own pid.
    PIDGUARD_REFUSAL_OWN_PID = 4,
    /// The caller's own process group.
    PIDGUARD_REFUSAL_OWN_GROUP = 5,
    /// The caller's parent, whose token did not match exactly.
    PIDGUARD_REFUSAL_PARENT = 6,
    /// The live process is provably not the recorded one.
    PIDGUARD_REFUSAL_MISMATCH = 7,
    /// Identity not proven and the policy is strict.
    PIDGUARD_REFUSAL_UNVERIFIABLE = 8,
    /// Running as root, the pidfile could have been written by another user, and identity is
    /// not MATCH.
    PIDGUARD_REFUSAL_UNTRUSTED_PIDFILE = 9,
    /// The process is not the one the pidfile's mtime or command file describes.
    PIDGUARD_REFUSAL_NOT_THE_RECORDED_PROCESS = 10,
}

impl pidguard_refusal {
    pub(crate) fn of(r: Option<Refusal>) -> Self {
        match r {
            None => Self::PIDGUARD_REFUSAL_NONE,
            Some(Refusal::NonPositivePid) => Self::PIDGUARD_REFUSAL_NON_POSITIVE_PID,
            Some(Refusal::AbovePidMax) => Self::PIDGUARD_REFUSAL_ABOVE_PID_MAX,
            Some(Refusal::Init) => Self::PIDGUARD_REFUSAL_INIT,
            Some(Refusal::OwnPid) => Self::PIDGUARD_REFUSAL_OWN_PID,
            Some(Refusal::OwnGroup) => Self::PIDGUARD_REFUSAL_OWN_GROUP,
            Some(Refusal::Parent) => Self::PIDGUARD_REFUSAL_PARENT,
            Some(Refusal::Mismatch) => Self::PIDGUARD_REFUSAL_MISMATCH,
            Some(Refusal::Unverifiable) => Self::PIDGUARD_REFUSAL_UNVERIFIABLE,
            Some(Refusal::UntrustedPidfile) => Self::PIDGUARD_REFUSAL_UNTRUSTED_PIDFILE,
            Some(Refusal::NotTheRecordedProcess) => Self::PIDGUARD_REFUSAL_NOT_THE_RECORDED_PROCESS,
        }
    }
}

/// What pidguard_terminate() did with its target.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_outcome {
    /// It had exited (or was a zombie) before anything was sent.
    PIDGUARD_OUTCOME_ALREADY_GONE = 0,
    /// It exited (with its whole process group, for a group leader) after a signal.
    PIDGUARD_OUTCOME_EXITED = 1,
    /// Still there after the last step of the schedule.
    PIDGUARD_OUTCOME_UNKILLABLE = 2,
    /// Not signalled: a safety rule or the policy refused it (see the refusal).
    PIDGUARD_OUTCOME_REFUSED = 3,
    /// Signalling failed (see pidguard_last_error_message()).
    PIDGUARD_OUTCOME_ERROR = 4,
}

impl pidguard_outcome {
    pub(crate) fn of(o: &Outcome) -> Self {
        match o {
            Outcome::AlreadyGone => Self::PIDGUARD_OUTCOME_ALREADY_GONE,
            Outcome::Exited { .. } => Self::PIDGUARD_OUTCOME_EXITED,
            Outcome::Unkillable => Self::PIDGUARD_OUTCOME_UNKILLABLE,
            Outcome::Refused(_) => Self::PIDGUARD_OUTCOME_REFUSED,
            Outcome::Error(_) => Self::PIDGUARD_OUTCOME_ERROR,
        }
    }
}

/// What pidguard_stop_pid_file() did.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_stop_outcome {
    /// The record names no process of its own any more (missing file, gone, proven reuse):
    /// nothing was signalled; the pidfile was removed if it was still the file judged (see
    /// `reason`).
    PIDGUARD_STOP_STALE = 0,
    /// The process (and its group) exited before anything was sent.
    PIDGUARD_STOP_ALREADY_GONE = 1,
    /// It (and its group) exited after a signal (see `exited_after`).
    PIDGUARD_STOP_EXITED = 2,
    /// Still alive after the whole schedule; the pidfile is kept.
    PIDGUARD_STOP_UNKILLABLE = 3,
    /// Not signalled: a safety rule, the root trust rule or the policy refused it (see
    /// `refusal`); the pidfile is kept.
    PIDGUARD_STOP_REFUSED = 4,
    /// Another machine's or PID namespace's record: left alone, pidfile kept.
    PIDGUARD_STOP_FOREIGN = 5,
    /// Signalling failed (see pidguard_last_error_message()); the pidfile is kept.
    PIDGUARD_STOP_ERROR = 6,
}

impl pidguard_stop_outcome {
    pub(crate) fn of(o: &StopOutcome) -> Self {
        match o {
            StopOutcome::Stale(_) => Self::PIDGUARD_STOP_STALE,
            StopOutcome::AlreadyGone => Self::PIDGUARD_STOP_ALREADY_GONE,
            StopOutcome::Exited(_) => Self::PIDGUARD_STOP_EXITED,
            StopOutcome::Unkillable => Self::PIDGUARD_STOP_UNKILLABLE,
            StopOutcome::Refused(_) => Self::PIDGUARD_STOP_REFUSED,
            StopOutcome::Foreign => Self::PIDGUARD_STOP_FOREIGN,
            StopOutcome::Error(_) => Self::PIDGUARD_STOP_ERROR,
        }
    }
}

/// What pidguard_cleanup_background_hooks() did with one hook.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_hook_outcome {
    /// The record was stale (gone, reused, skewed, malformed): pidfile removed, nothing
    /// signalled.
    PIDGUARD_HOOK_STALE = 0,
    /// Another machine's or PID namespace's record: left alone, not finalized.
    PIDGUARD_HOOK_FOREIGN = 1,
    /// The pidfile could not be read (not a regular file, no permission): left alone.
    PIDGUARD_HOOK_UNREADABLE = 2,
    /// The hook and its group had already exited.
    PIDGUARD_HOOK_ALREADY_GONE = 3,
    /// The hook's group exited after a signal (see pidguard_cleanup_report_signals()).
    PIDGUARD_HOOK_EXITED = 4,
    /// Still alive after the whole schedule: pidfile kept, finalized as failed.
    PIDGUARD_HOOK_UNKILLABLE = 5,
    /// Not signalled: a safety rule refused it (see pidguard_cleanup_report_refusal()).
    PIDGUARD_HOOK_REFUSED = 6,
    /// Signalling failed (see pidguard_cleanup_report_error()); pidfile kept.
    PIDGUARD_HOOK_ERROR = 7,
    /// The live identity could not be read: nothing signalled, pidfile and logs kept, no index
    /// records (see pidguard_cleanup_report_error() for the cause).
    PIDGUARD_HOOK_UNVERIFIED = 8,
}

impl pidguard_hook_outcome {
    pub(crate) fn of(o: &HookOutcome) -> Self {
        match o {
            HookOutcome::Stale => Self::PIDGUARD_HOOK_STALE,
            HookOutcome::Foreign => Self::PIDGUARD_HOOK_FOREIGN,
            HookOutcome::Unreadable => Self::PIDGUARD_HOOK_UNREADABLE,
            HookOutcome::AlreadyGone => Self::PIDGUARD_HOOK_ALREADY_GONE,
            HookOutcome::Exited(_) => Self::PIDGUARD_HOOK_EXITED,
            HookOutcome::Unkillable => Self::PIDGUARD_HOOK_UNKILLABLE,
            HookOutcome::Refused(_) => Self::PIDGUARD_HOOK_REFUSED,
            HookOutcome::Error => Self::PIDGUARD_HOOK_ERROR,
            HookOutcome::Unverified => Self::PIDGUARD_HOOK_UNVERIFIED,
        }
    }
}

/// Size of pidguard_process_info.name, including the NUL.
pub const PIDGUARD_NAME_MAX: usize = 64;

/// The answer of pidguard_check_pid_file() about one abx-dl pidfile. A plain struct the caller
/// allocates (on the stack is fine); nothing in it needs freeing.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_pid_file_check {
    /// What pidguard_validate_pid_file() answers.
    pub valid: bool,
    /// Why.
    pub reason: pidguard_check_reason,
    /// The pid in the file; 0 when the content did not parse.
    pub pid: i32,
    /// The identity verdict; PIDGUARD_VERDICT_NONE when the process was not judged. A token-less
    /// file that passed the mtime rule is UNVERIFIABLE, not MATCH.
    pub verdict: pidguard_verdict,
    /// Why that verdict; PIDGUARD_REASON_NONE when not judged.
    pub verdict_reason: pidguard_reason,
    /// Whether the file carries a start token (the `user.pidguard.token` extended attribute).
    pub has_token: bool,
    /// Whether the record belongs to another machine or PID namespace (leave it alone).
    pub foreign: bool,
    /// The file's mtime, seconds since the epoch; NaN when unknown.
    pub mtime: f64,
    /// The live process's psutil-compatible create time, seconds since the epoch; NaN when not
    /// read.
    pub create_time: f64,
}

/// What procfs says about one process (pidguard_lookup()). A plain struct the caller
/// allocates; nothing in it needs freeing.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_process_info {
    /// The pid.
    pub pid: i32,
    /// The parent pid.
    pub ppid: i32,
    /// The process group id.
    pub pgid: i32,
    /// The session id.
    pub sid: i32,
    /// The real uid; -1 when unreadable.
    pub uid: i64,
    /// The state letter of /proc/<pid>/stat ('R', 'S', 'Z' for a zombie, ...).
    pub state: c_char,
    /// Whether the process is a zombie (exited, not yet reaped).
    pub zombie: bool,
    /// Whether the process leads its own process group.
    pub group_leader: bool,
    /// Start time in clock ticks since boot (field 22 of /proc/<pid>/stat).
    pub start_ticks: u64,
    /// psutil-compatible create time, seconds since the epoch (only for the abx-dl mtime
    /// format; never used to decide identity); NaN when /proc/stat is unreadable.
    pub create_time: f64,
    /// The command name (comm), NUL-terminated, truncated to fit.
    pub name: [c_char; PIDGUARD_NAME_MAX],
}

/// What pidguard_terminate() did. A plain struct the caller allocates; nothing in it needs
/// freeing.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_terminate_result {
    /// The outcome.
    pub outcome: pidguard_outcome,
    /// Why it was refused, for PIDGUARD_OUTCOME_REFUSED; else PIDGUARD_REFUSAL_NONE.
    pub refusal: pidguard_refusal,
    /// For PIDGUARD_OUTCOME_EXITED, the number of the last signal sent before it exited
    /// (SIGTERM, SIGKILL, ...); else 0.
    pub exited_after: i32,
    /// The exit code when the target is the caller's child: the code, or 128 + signal number
    /// when a signal killed it; -1 when unknown (not the caller's child, never invented as 0).
    /// The child is not reaped: the caller still waits for it with waitpid().
    pub exit_code: i32,
    /// How many signals were sent (SIGCONT after SIGTERM included).
    pub signals_sent: u32,
    /// Whether the target's process group was signalled (the target led its group).
    pub group: bool,
    /// Whether signals went through a pidfd (false: kill(2) right after re-reading the start
    /// ticks, on kernels or sandboxes without pidfds).
    pub pinned: bool,
    /// Seconds from the start of the call to the outcome.
    pub elapsed: f64,
}

impl pidguard_terminate_result {
    /// The C form of core's report.
    pub(crate) fn of(r: &pidguard_core::TerminateReport) -> Self {
        pidguard_terminate_result {
            outcome: pidguard_outcome::of(&r.outcome),
            refusal: pidguard_refusal::of(r.outcome.refusal()),
            exited_after: r.outcome.after().map_or(0, |s| s.number()),
            exit_code: r.exit.code().unwrap_or(-1),
            signals_sent: r.signals.len() as u32,
            group: r.group,
            pinned: r.pin_mode == pidguard_core::PinMode::Pidfd,
            elapsed: r.elapsed.as_secs_f64(),
        }
    }
}

/// Copy `s` into a fixed C buffer, NUL-terminated, truncated at a UTF-8 boundary.
pub(crate) fn fill_name(s: &str) -> [c_char; PIDGUARD_NAME_MAX] {
    let mut out = [0 as c_char; PIDGUARD_NAME_MAX];
    let b = s.as_bytes();
    let mut n = b.len().min(PIDGUARD_NAME_MAX - 1);
    while n > 0 && n < b.len() && !s.is_char_boundary(n) {
        n -= 1;
    }
    for (o, &c) in out.iter_mut().zip(&b[..n]) {
        *o = if c == 0 { b'?' as c_char } else { c as c_char };
    }
    out
}

/// What pidguard_stop_pid_file() did. A plain struct the caller allocates; nothing in it needs
/// freeing.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_stop_result {
    /// The outcome.
    pub outcome: pidguard_stop_outcome,
    /// The exit status `pidguard stop` gives for this outcome: 0 stopped, 1 nothing to do
    /// (stale or already gone), 2 unkillable or a signalling error, 3 refused or foreign. (A
    /// negative status from pidguard_stop_pid_file() is the command's 4, bad input.)
    pub exit_status: i32,
    /// What pidguard_check_pid_file() said about the file (why it was stale, for
    /// PIDGUARD_STOP_STALE).
    pub reason: pidguard_check_reason,
    /// The identity verdict of the recorded process; PIDGUARD_VERDICT_NONE when not judged.
    pub verdict: pidguard_verdict,
    /// The pid in the file; 0 when there was none.
    pub pid: i32,
    /// Why it was refused, for PIDGUARD_STOP_REFUSED; else PIDGUARD_REFUSAL_NONE.
    pub refusal: pidguard_refusal,
    /// For PIDGUARD_STOP_EXITED, the number of the last signal sent before it exited; else 0.
    pub exited_after: i32,
    /// The exit code when the target is the caller's child (the code, or 128 + signal); -1 when
    /// unknown. The child is not reaped.
    pub exit_code: i32,
    /// How many signals were sent.
    pub signals_sent: u32,
    /// Whether the process group was signalled (the target led its group).
    pub group: bool,
    /// Whether signals went through a pidfd.
    pub pinned: bool,
    /// Whether the pidfile was removed (only stale or stopped records, and only if the file was
    /// still the one judged).
    pub pid_file_removed: bool,
    /// Whether the identity was taken on the lenient policy; the warning is then the thread's
    /// last error message.
    pub warning: bool,
    /// Seconds the schedule ran (0 when nothing was sent).
    pub elapsed: f64,
}
