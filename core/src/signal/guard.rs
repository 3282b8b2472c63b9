//! The protected targets of SPEC §2.3, refused in one place before any system call.

use std::fmt;

use crate::sys::{self, procfs};

/// Why pidguard refused to signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// pid ≤ 0: `kill(0)` is the caller's group and `kill(-1)` every process.
    NonPositivePid,
    /// pid above `/proc/sys/kernel/pid_max`: no process can have it.
    AbovePidMax,
    /// pid 1 or group 1: init, and `killpg(1, sig)` *is* `kill(-1, sig)`.
    Init,
    /// The caller's own pid.
    OwnPid,
    /// The caller's own process group.
    OwnGroup,
    /// The caller's parent, whose token did not match exactly (container PID 1 reuse, BUGS H2).
    Parent,
    /// The live process is provably not the recorded one.
    Mismatch,
    /// Identity not proven and the policy is strict.
    Unverifiable,
    /// Running as root, the pidfile could have been written by another user, and identity is
    /// not `Match` (SPEC §3.3).
    UntrustedPidfile,
    /// The process is not the one the pidfile's mtime or command file describes.
    NotTheRecordedProcess,
}

impl Refusal {
    /// A stable kebab-case slug.
    pub const fn as_str(self) -> &'static str {
        match self {
            Refusal::NonPositivePid => "non-positive-pid",
            Refusal::AbovePidMax => "above-pid-max",
            Refusal::Init => "init",
            Refusal::OwnPid => "own-pid",
            Refusal::OwnGroup => "own-group",
            Refusal::Parent => "parent",
            Refusal::Mismatch => "mismatch",
            Refusal::Unverifiable => "unverifiable",
            Refusal::UntrustedPidfile => "untrusted-pidfile",
            Refusal::NotTheRecordedProcess => "not-the-recorded-process",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The refusal for signalling process `pid`, if any. `Parent` is left to the caller, who knows
/// whether the token matched.
pub(crate) fn refuse_pid(pid: i64) -> Option<Refusal> {
    if pid <= 0 {
        return Some(Refusal::NonPositivePid);
    }
    if pid > procfs::pid_max() as i64 {
        return Some(Refusal::AbovePidMax);
    }
    if pid == 1 {
        return Some(Refusal::Init);
    }
    if pid == sys::getpid() as i64 {
        return Some(Refusal::OwnPid);
    }
    None
}

/// The refusal for signalling process group `pgid`, if any.
pub(crate) fn refuse_group(pgid: i32) -> Option<Refusal> {
    if let Some(r) = refuse_pid(pgid as i64) {
        return Some(r);
    }
    if pgid == sys::getpgrp() {
        return Some(Refusal::OwnGroup);
    }
    None
}
