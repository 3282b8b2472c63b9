//! The enums of the C interface, and the one place each core value gets its C number.
//!
//! Every enum is `int32_t`-sized (`#[repr(i32)]`); functions take enum inputs as `int32_t` and
//! check them, since a C caller may pass any number.
#![allow(non_camel_case_types)]

use pidguard_core::hooks::HookOutcome;
use pidguard_core::identity::ScopeKind;
use pidguard_core::launch::ScopeMode;
use pidguard_core::{CheckReason, Format, GroupMode, Outcome, Policy, Reason, Refusal, StopOutcome, Verdict};

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
    /// A fact of this machine the comparison needs (boot id, PID namespace) could not be read:
    /// /proc is not mounted (a chroot, a minimal container) (UNVERIFIABLE; never "differs").
    PIDGUARD_REASON_MACHINE_IDENTITY_UNREADABLE = 12,
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
    /// The content is not one decimal pid from 1 to 4194304.
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

/// A flag of pidguard_terminate() and pidguard_process_terminate(): signal the target alone,
/// even when it leads its process group (by default the whole group is stopped).
pub const PIDGUARD_TERMINATE_NO_GROUP: u32 = 1;
/// A flag of pidguard_terminate() and pidguard_process_terminate(): reap the target once it
/// exited when it is the caller's own child, so `exit_code`/`exit_signal` are known (by default
/// it is left for the caller's own waitpid()).
pub const PIDGUARD_TERMINATE_REAP: u32 = 2;

/// The options of a terminate call from its schedule argument and its flags (0 or more of
/// PIDGUARD_TERMINATE_*); an unknown flag is an invalid argument.
pub(crate) fn terminate_options(schedule: *const std::ffi::c_char, flags: u32) -> FfiResult<pidguard_core::TerminateOptions> {
    let known = PIDGUARD_TERMINATE_NO_GROUP | PIDGUARD_TERMINATE_REAP;
    if flags & !known != 0 {
        return Err(pidguard_core::Error::invalid(format!("flags {flags:#x} hold bits that are no PIDGUARD_TERMINATE_* flag")));
    }
    Ok(pidguard_core::TerminateOptions {
        schedule: crate::boundary::schedule(schedule)?,
        group: flags & PIDGUARD_TERMINATE_NO_GROUP == 0,
        reap: flags & PIDGUARD_TERMINATE_REAP != 0,
    })
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
    /// The live argv is not the one the pidfile's command file (the `.sh`) records.
    PIDGUARD_REFUSAL_NOT_THE_RECORDED_PROCESS = 10,
}


/// What a terminate call did with its target. pidguard_terminate() answers a target that is gone
/// or refused before anything was sent with PIDGUARD_ENO_SUCH_PROCESS / PIDGUARD_EREFUSED instead
/// of writing a result; ALREADY_GONE and REFUSED come from pidguard_process_terminate() on a kept
/// handle and from the `terminate` member of a stop result.
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


/// How the signals of a group reached it (pidguard_terminate_result.group_mode).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_group_mode {
    /// No group was signalled.
    PIDGUARD_GROUP_MODE_NONE = 0,
    /// One pidfd group signal (PIDFD_SIGNAL_PROCESS_GROUP, Linux >= 6.9).
    PIDGUARD_GROUP_MODE_PIDFD_GROUP_FLAG = 1,
    /// Member by member, each through its own pidfd after checking its group (Linux 5.3-6.8).
    PIDGUARD_GROUP_MODE_PIDFD_MEMBERS = 2,
    /// killpg(2) right after re-reading the leader's start ticks (no pidfd).
    PIDGUARD_GROUP_MODE_KILLPG = 3,
}

/// The format of a pidfile (pidguard_stop_result.format).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_format {
    /// The abx-dl format: the decimal pid, the start time as the mtime, the token in an xattr.
    PIDGUARD_FORMAT_ABX_DL = 0,
    /// A guard record: one JSON object (pidguard_guard_*).
    PIDGUARD_FORMAT_GUARD = 1,
}

/// What holds a record's processes, and so what a stop reached (the `scope` member of
/// pidguard_terminate_result, pidguard_stop_result and pidguard_spawn_result).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_scope {
    /// No scope: the process group the recorded process leads (a record written by abx-dl, or
    /// a command started with PIDGUARD_SCOPE_MODE_GROUP); a descendant that called setsid() is
    /// not reached.
    PIDGUARD_SCOPE_GROUP = 0,
    /// A cgroup v2 leaf of its own: every descendant, setsid() or not.
    PIDGUARD_SCOPE_CGROUP = 1,
    /// A subreaper supervisor's tree: every descendant, setsid() or not.
    PIDGUARD_SCOPE_SUPERVISOR = 2,
}

/// Which scope pidguard_spawn() starts a command in (pidguard_spawn_options.scope).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pidguard_scope_mode {
    /// A cgroup v2 leaf where the caller may make one, else a supervisor (the default); the
    /// result's `note` says why no leaf could be made.
    PIDGUARD_SCOPE_MODE_AUTO = 0,
    /// A cgroup v2 leaf, or PIDGUARD_EIO.
    PIDGUARD_SCOPE_MODE_CGROUP = 1,
    /// A subreaper supervisor, even where a leaf could be made.
    PIDGUARD_SCOPE_MODE_SUPERVISOR = 2,
    /// No scope: the command's process group only.
    PIDGUARD_SCOPE_MODE_GROUP = 3,
}

impl pidguard_scope_mode {
    pub(crate) fn parse(v: i32) -> FfiResult<ScopeMode> {
        match v {
            0 => Ok(ScopeMode::Auto),
            1 => Ok(ScopeMode::Cgroup),
            2 => Ok(ScopeMode::Supervisor),
            3 => Ok(ScopeMode::Group),
            _ => Err(pidguard_core::Error::invalid(format!("scope {v} is no PIDGUARD_SCOPE_MODE_* value (0 to 3)"))),
        }
    }
}

/// `From<core value>` for a C enum: the one place where each core value gets its C number.
/// `Option<core value>` maps `None` to the enum's `none` value, for enums that have one.
/// (The enums themselves are written out above: cbindgen reads source, not macro output.)
macro_rules! c_numbers {
    ($c:ident from $core:ident $(, none $none:ident)? { $($pat:pat => $v:ident),* $(,)? }) => {
        impl From<&$core> for $c {
            fn from(x: &$core) -> Self {
                #[allow(unused_imports)]
                use $core::*;
                match x {
                    $($pat => $c::$v),*
                }
            }
        }
        $(impl From<Option<$core>> for $c {
            fn from(x: Option<$core>) -> Self {
                x.as_ref().map_or($c::$none, Into::into)
            }
        })?
    };
}

c_numbers!(pidguard_verdict from Verdict, none PIDGUARD_VERDICT_NONE {
    Match => PIDGUARD_VERDICT_MATCH,
    Mismatch => PIDGUARD_VERDICT_MISMATCH,
    Unverifiable => PIDGUARD_VERDICT_UNVERIFIABLE,
    Gone => PIDGUARD_VERDICT_GONE,
});
c_numbers!(pidguard_reason from Reason, none PIDGUARD_REASON_NONE {
    TokenEqual => PIDGUARD_REASON_TOKEN_EQUAL,
    BootIdDiffers => PIDGUARD_REASON_BOOT_ID_DIFFERS,
    StartTicksDiffer => PIDGUARD_REASON_START_TICKS_DIFFER,
    PidfsInodeDiffers => PIDGUARD_REASON_PIDFS_INODE_DIFFERS,
    NoRecordedToken => PIDGUARD_REASON_NO_RECORDED_TOKEN,
    LiveTokenUnreadable => PIDGUARD_REASON_LIVE_TOKEN_UNREADABLE,
    ForeignPidNamespace => PIDGUARD_REASON_FOREIGN_PID_NAMESPACE,
    ForeignMachine => PIDGUARD_REASON_FOREIGN_MACHINE,
    NoSuchProcess => PIDGUARD_REASON_NO_SUCH_PROCESS,
    Zombie => PIDGUARD_REASON_ZOMBIE,
    LiveIdentityUnreadable(_) => PIDGUARD_REASON_LIVE_IDENTITY_UNREADABLE,
    MachineIdentityUnreadable(_) => PIDGUARD_REASON_MACHINE_IDENTITY_UNREADABLE,
});
c_numbers!(pidguard_check_reason from CheckReason {
    Valid => PIDGUARD_CHECK_VALID,
    Missing => PIDGUARD_CHECK_MISSING,
    Unreadable => PIDGUARD_CHECK_UNREADABLE,
    NotRegular => PIDGUARD_CHECK_NOT_REGULAR,
    Malformed => PIDGUARD_CHECK_MALFORMED,
    BadToken => PIDGUARD_CHECK_BAD_TOKEN,
    Gone => PIDGUARD_CHECK_GONE,
    Zombie => PIDGUARD_CHECK_ZOMBIE,
    Mismatch => PIDGUARD_CHECK_MISMATCH,
    Foreign => PIDGUARD_CHECK_FOREIGN,
    Unverifiable => PIDGUARD_CHECK_UNVERIFIABLE,
    MtimeSkew => PIDGUARD_CHECK_MTIME_SKEW,
    CmdMismatch => PIDGUARD_CHECK_CMD_MISMATCH,
});
c_numbers!(pidguard_refusal from Refusal, none PIDGUARD_REFUSAL_NONE {
    NonPositivePid => PIDGUARD_REFUSAL_NON_POSITIVE_PID,
    AbovePidMax => PIDGUARD_REFUSAL_ABOVE_PID_MAX,
    Init => PIDGUARD_REFUSAL_INIT,
    OwnPid => PIDGUARD_REFUSAL_OWN_PID,
    OwnGroup => PIDGUARD_REFUSAL_OWN_GROUP,
    Parent => PIDGUARD_REFUSAL_PARENT,
    Mismatch => PIDGUARD_REFUSAL_MISMATCH,
    Unverifiable => PIDGUARD_REFUSAL_UNVERIFIABLE,
    UntrustedPidfile => PIDGUARD_REFUSAL_UNTRUSTED_PIDFILE,
    NotTheRecordedProcess => PIDGUARD_REFUSAL_NOT_THE_RECORDED_PROCESS,
});
c_numbers!(pidguard_outcome from Outcome {
    AlreadyGone => PIDGUARD_OUTCOME_ALREADY_GONE,
    Exited { .. } => PIDGUARD_OUTCOME_EXITED,
    Unkillable => PIDGUARD_OUTCOME_UNKILLABLE,
    Refused(_) => PIDGUARD_OUTCOME_REFUSED,
    Error(_) => PIDGUARD_OUTCOME_ERROR,
});
c_numbers!(pidguard_stop_outcome from StopOutcome {
    Stale(_) => PIDGUARD_STOP_STALE,
    AlreadyGone => PIDGUARD_STOP_ALREADY_GONE,
    Exited(_) => PIDGUARD_STOP_EXITED,
    Unkillable => PIDGUARD_STOP_UNKILLABLE,
    Refused(_) => PIDGUARD_STOP_REFUSED,
    Foreign => PIDGUARD_STOP_FOREIGN,
    Error(_) => PIDGUARD_STOP_ERROR,
});
c_numbers!(pidguard_hook_outcome from HookOutcome {
    Stale => PIDGUARD_HOOK_STALE,
    Foreign => PIDGUARD_HOOK_FOREIGN,
    Unreadable => PIDGUARD_HOOK_UNREADABLE,
    AlreadyGone => PIDGUARD_HOOK_ALREADY_GONE,
    Exited(_) => PIDGUARD_HOOK_EXITED,
    Unkillable => PIDGUARD_HOOK_UNKILLABLE,
    Refused(_) => PIDGUARD_HOOK_REFUSED,
    Error => PIDGUARD_HOOK_ERROR,
    Unverified => PIDGUARD_HOOK_UNVERIFIED,
});
c_numbers!(pidguard_group_mode from GroupMode, none PIDGUARD_GROUP_MODE_NONE {
    PidfdGroupFlag => PIDGUARD_GROUP_MODE_PIDFD_GROUP_FLAG,
    PidfdMembers => PIDGUARD_GROUP_MODE_PIDFD_MEMBERS,
    Killpg => PIDGUARD_GROUP_MODE_KILLPG,
});
c_numbers!(pidguard_format from Format {
    AbxDl => PIDGUARD_FORMAT_ABX_DL,
    Guard => PIDGUARD_FORMAT_GUARD,
});
c_numbers!(pidguard_scope from ScopeKind {
    Group => PIDGUARD_SCOPE_GROUP,
    Cgroup => PIDGUARD_SCOPE_CGROUP,
    Supervisor => PIDGUARD_SCOPE_SUPERVISOR,
});
