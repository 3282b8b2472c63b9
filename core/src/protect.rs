//! Protected targets and trusted records: every refusal to signal, decided in one place before
//! any system call.

use crate::sys::{self, procfs};

pub use crate::refusal::Refusal;

/// What is about to be signalled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// One process. `token_matched`: its recorded start token was proven equal (`Match`), the
    /// only thing that makes the caller's parent a legitimate target (a container's PID 1
    /// reuse names the parent's number in stale records).
    Process { pid: i64, token_matched: bool },
    /// The process group `pgid`.
    Group { pgid: i64 },
}

/// The refusal for signalling `target`, if any: the one list of protected targets.
///
/// - pid ≤ 0: `kill(0)` is the caller's group and `kill(-1)` every process;
/// - above `PID_MAX_LIMIT` (4194304): no process can have it;
/// - pid or group 1: init, and `killpg(1, sig)` *is* `kill(-1, sig)` (every process);
/// - the caller's own pid, or its own process group;
/// - the caller's parent, unless its token matched exactly.
pub(crate) fn refuse(target: Target) -> Option<Refusal> {
    let n = match target {
        Target::Process { pid, .. } => pid,
        Target::Group { pgid } => pgid,
    };
    if n <= 0 {
        return Some(Refusal::NonPositivePid);
    }
    if n > procfs::pid_max() as i64 {
        return Some(Refusal::AbovePidMax);
    }
    if n == 1 {
        return Some(Refusal::Init);
    }
    match target {
        Target::Process { pid, token_matched } => {
            if pid == sys::getpid() as i64 {
                return Some(Refusal::OwnPid);
            }
            if pid == sys::getppid() as i64 && !token_matched {
                return Some(Refusal::Parent);
            }
        }
        Target::Group { pgid } => {
            if pgid == sys::getpgrp() as i64 {
                return Some(Refusal::OwnGroup);
            }
        }
    }
    None
}

/// Which processes a pidfile may aim signals at, given who could have written it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Authority {
    /// The file is the caller's own: any process the identity rules accept.
    Any,
    /// The file belongs to another uid: only processes whose real or saved uid is that
    /// uid, i.e. processes its owner could have signalled itself.
    OwnerOnly(u32),
}

/// What a pidfile owned by `owner_uid` with permission bits `mode` (from `fstat` of the very
/// descriptor its content was read from) authorises.
///
/// A pidfile is a claim by whoever could write it, and a start token in it proves nothing
/// about who makes the claim: every part of a token is readable without privilege. So:
/// - world-writable: nothing (`UntrustedPidfile`), whoever the caller is;
/// - group-writable, when the caller is privileged (euid 0 or `CAP_KILL`): nothing — any member
///   of the group could have aimed it. (An unprivileged caller keeps the original's behaviour
///   under `umask 002`, where files are group-writable by default.)
/// - owned by another uid than the caller's effective uid: only that uid's own processes. For
///   a privileged caller this keeps a user from steering it at root's processes
///   (CVE-2018-16888; systemd's answer was to require the pid to be in the service's cgroup —
///   without a cgroup to ask, the owner's uid is the bound). For an unprivileged caller it
///   stops another user's file from aiming the caller's own rights at the caller's processes;
/// - the caller's own file: whatever the identity rules accept.
pub(crate) fn pidfile_authority(owner_uid: u32, mode: u32) -> Result<Authority, (Refusal, String)> {
    if mode & 0o002 != 0 || (mode & 0o020 != 0 && privileged()) {
        let who = if mode & 0o002 != 0 { "world" } else { "group" };
        return Err((Refusal::UntrustedPidfile, format!("the pidfile is {who}-writable (mode {:04o})", mode & 0o7777)));
    }
    if owner_uid == sys::geteuid() {
        return Ok(Authority::Any);
    }
    Ok(Authority::OwnerOnly(owner_uid))
}

/// Whether the caller is privileged: effective uid 0 or `CAP_KILL` in its effective set. The
/// one test behind every "when the caller is privileged" rule.
pub(crate) fn privileged() -> bool {
    sys::privileged()
}

/// How this caller's paths are walked (outside a cleanup's tree, which is opened beneath its
/// root): with the no-unsafe-transition rule (`sys::chase`) for a privileged caller, which acts
/// on files other users can reach (the rule systemd applies where it acts for others, after
/// CVE-2018-16888). An unprivileged caller gets nothing through a path that it could not get by
/// itself, and is left the kernel's walk: shared trees of several users keep working for it.
pub(crate) fn walk() -> sys::Walk {
    if privileged() {
        sys::Walk::NoUnsafeTransition
    } else {
        sys::Walk::Kernel
    }
}
