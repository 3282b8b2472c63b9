//! Why pidguard refused to signal: plain data, carried by the error type and decided by
//! `protect` (the protected targets) and `signal` (the owner rules).

use std::fmt;

/// Why pidguard refused to signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// pid ≤ 0: `kill(0)` is the caller's group and `kill(-1)` every process.
    NonPositivePid,
    /// pid above the kernel's hard limit `PID_MAX_LIMIT` (4194304): no process can have it
    /// (`kernel.pid_max` is no bound: it can be lowered while higher pids live). The slug keeps
    /// its name.
    AbovePidMax,
    /// pid 1 or group 1: init, and `killpg(1, sig)` *is* `kill(-1, sig)`.
    Init,
    /// The caller's own pid.
    OwnPid,
    /// The caller's own process group.
    OwnGroup,
    /// The caller's parent, whose token did not match exactly (a container's PID 1 reuse names the parent's number in stale records).
    Parent,
    /// The live process is provably not the recorded one.
    Mismatch,
    /// Identity not proven and the policy is strict.
    Unverifiable,
    /// The pidfile could have been written by someone who may not signal the target: it is
    /// group- or world-writable, or the caller could reach more processes than its owner and
    /// the target's real and saved uids are not the owner's. A token in such a file is that writer's claim, not proof: anyone can
    /// compute any process's token.
    UntrustedPidfile,
    /// The live argv is not the one the pidfile's command file (the `.sh`) records.
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
