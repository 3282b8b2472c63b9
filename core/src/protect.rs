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
    /// The caller can signal no process its owner could not: any process the identity rules
    /// accept.
    Any,
    /// The caller could reach processes the file's owner could not: only processes whose real or
    /// saved uid is the owner's uid, i.e. processes its owner could have signalled itself.
    OwnerOnly(u32),
}

/// The facts about the caller that decide which processes kill(2) lets it signal (kill(2),
/// "Permissions"): `CAP_KILL` in its effective set reaches every process; otherwise a process
/// whose real or saved uid equals the caller's real or effective uid. Read once per decision,
/// never cached: a process may change its uids between calls (ArchiveBox lowers its effective
/// uid after start-up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caller {
    /// Real uid.
    pub(crate) ruid: u32,
    /// Effective uid.
    pub(crate) euid: u32,
    /// `CAP_KILL` in the effective set (capabilities(7)); never on macOS and FreeBSD.
    pub(crate) cap_kill: bool,
}

impl Caller {
    /// This process's credentials, now: one `getresuid(2)` and, for a caller with neither uid 0,
    /// one `capget(2)`.
    pub(crate) fn current() -> Caller {
        let (ruid, euid) = sys::uids();
        // A uid of 0 already reaches root's processes; CAP_KILL adds no case the rules tell apart.
        let cap_kill = ruid != 0 && euid != 0 && sys::has_cap_kill();
        Caller { ruid, euid, cap_kill }
    }

    /// Whether kill(2) lets this caller signal root's processes (a real or effective uid of 0) or
    /// every process (`CAP_KILL`): the test behind every "when the caller is privileged" rule.
    pub(crate) fn privileged(self) -> bool {
        self.ruid == 0 || self.euid == 0 || self.cap_kill
    }

    /// What a pidfile owned by `owner_uid` with permission bits `mode` (from `fstat` of the
    /// very descriptor its content was read from) authorises this caller to signal.
    ///
    /// **A pidfile carries its owner's authority, never more.** A pidfile is a claim by whoever
    /// could write it, and a start token in it proves nothing about who makes the claim: every
    /// part of a token is readable without privilege. So:
    /// - world-writable: nothing (`UntrustedPidfile`), whoever the caller is;
    /// - group-writable, when the caller is privileged (see [`Caller::privileged`]): nothing —
    ///   any member of the group could have aimed it. (An unprivileged caller keeps the
    ///   original's behaviour under `umask 002`, where files are group-writable by default.)
    /// - owned by root: root could signal every process itself, so the claim may aim anywhere
    ///   the identity rules accept;
    /// - otherwise the caller's reach is compared with the owner's. The owner, a plain user,
    ///   reaches the processes whose real or saved uid is its uid. The caller reaches no more
    ///   only when it holds no `CAP_KILL` and its real *and* effective uids are the owner's;
    ///   then [`Authority::Any`]. In every other case — a real or effective uid of 0 (ArchiveBox
    ///   started as root runs with uids (0, 999, 0): its real uid still reaches every root
    ///   process), `CAP_KILL`, a real or effective uid other than the owner's — the file aims
    ///   only at the owner's processes ([`Authority::OwnerOnly`]). This keeps a user from
    ///   steering a more privileged caller at root's processes (CVE-2018-16888; systemd's answer
    ///   was to require the pid to be in the service's cgroup — without a cgroup to ask, the
    ///   owner's uid is the bound), and another user's file from aiming an unprivileged caller's
    ///   own rights at the caller's processes.
    pub(crate) fn authority(self, owner_uid: u32, mode: u32) -> Result<Authority, (Refusal, String)> {
        if mode & 0o002 != 0 || (mode & 0o020 != 0 && self.privileged()) {
            let who = if mode & 0o002 != 0 { "world" } else { "group" };
            return Err((Refusal::UntrustedPidfile, format!("the pidfile is {who}-writable (mode {:04o})", mode & 0o7777)));
        }
        if owner_uid == 0 || (!self.cap_kill && self.ruid == owner_uid && self.euid == owner_uid) {
            return Ok(Authority::Any);
        }
        Ok(Authority::OwnerOnly(owner_uid))
    }
}

/// [`Caller::authority`] for this process's credentials, read now.
pub(crate) fn pidfile_authority(owner_uid: u32, mode: u32) -> Result<Authority, (Refusal, String)> {
    Caller::current().authority(owner_uid, mode)
}

/// Whether the caller is privileged: a real or effective uid of 0, or `CAP_KILL` in its
/// effective set (see [`Caller::privileged`]).
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

#[cfg(test)]
mod tests {
    use super::{Authority, Caller};

    const U: u32 = 999;
    const V: u32 = 1000;

    fn caller(ruid: u32, euid: u32, cap_kill: bool) -> Caller {
        Caller { ruid, euid, cap_kill }
    }

    /// A pidfile carries its owner's authority, never more: every caller whose kill(2) reach is
    /// larger than the owner's gets the owner rule.
    #[test]
    fn a_pidfile_carries_its_owners_authority_never_more() {
        let cases = [
            // (caller, owner, expected)
            (caller(U, U, false), U, Authority::Any),          // a plain user's own file
            (caller(0, 0, false), 0, Authority::Any),          // root's own file
            (caller(V, V, false), 0, Authority::Any),          // root's claim reaches no further than root
            (caller(0, U, false), 0, Authority::Any),          // ArchiveBox reading root's file
            (caller(0, U, false), U, Authority::OwnerOnly(U)), // ArchiveBox as root: real uid 0
            (caller(U, 0, false), U, Authority::OwnerOnly(U)), // a setuid-root program
            (caller(0, 0, false), U, Authority::OwnerOnly(U)), // root, a user's file
            (caller(U, U, true), U, Authority::OwnerOnly(U)),  // CAP_KILL reaches every process
            (caller(V, U, false), U, Authority::OwnerOnly(U)), // a real uid other than the owner's
            (caller(U, V, false), U, Authority::OwnerOnly(U)), // an effective uid other than the owner's
            (caller(V, V, false), U, Authority::OwnerOnly(U)), // another user's file
        ];
        for (c, owner, want) in cases {
            assert_eq!(c.authority(owner, 0o644), Ok(want), "{c:?}, owner {owner}");
        }
    }

    #[test]
    fn group_writable_files_are_refused_to_every_caller_that_reaches_root() {
        for c in [caller(0, 0, false), caller(0, U, false), caller(U, 0, false), caller(U, U, true)] {
            assert!(c.privileged());
            assert!(c.authority(U, 0o664).is_err(), "{c:?}");
        }
        let plain = caller(U, U, false);
        assert!(!plain.privileged());
        assert_eq!(plain.authority(U, 0o664), Ok(Authority::Any));
        assert!(plain.authority(U, 0o666).is_err());
    }
}
