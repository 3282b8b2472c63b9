//! The four verdicts of SPEC §2.2 and the two signalling policies of §2.3.

use std::fmt;

use super::process::{snapshot, Snapshot};
use super::token::StartToken;
use crate::error::{ErrorKind, Result};
use crate::sys::procfs;

/// Is the process a record names still that same process? One of four answers, never a guess.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Machine id, boot id, pid namespace and start ticks are equal, and so are the pidfs inodes
    /// where both sides have one.
    Match,
    /// Proven reuse: another boot, other start ticks, or another pidfs inode.
    Mismatch,
    /// Nothing proves it either way: no recorded token, an unreadable live token, another pid
    /// namespace or another machine.
    Unverifiable,
    /// No such process, or a zombie (exited, not yet reaped).
    Gone,
}

impl Verdict {
    /// `"match"`, `"mismatch"`, `"unverifiable"` or `"gone"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Match => "match",
            Verdict::Mismatch => "mismatch",
            Verdict::Unverifiable => "unverifiable",
            Verdict::Gone => "gone",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a verdict was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Every token field is equal (`Match`).
    TokenEqual,
    /// The record was written in another boot of this machine (`Mismatch`).
    BootIdDiffers,
    /// Start ticks differ (`Mismatch`).
    StartTicksDiffer,
    /// Both pidfs inodes are known and differ: reuse within the same clock tick (`Mismatch`).
    PidfsInodeDiffers,
    /// The record carries no token (`Unverifiable`).
    NoRecordedToken,
    /// The live process's token could not be read, or was read without the pidfs inode that
    /// the record has (no pidfd here), so a same-tick reuse cannot be ruled out (`Unverifiable`).
    LiveTokenUnreadable,
    /// The record was written in another PID namespace (`Unverifiable`, foreign).
    ForeignPidNamespace,
    /// The record was written on another machine (`Unverifiable`, foreign: never removed here).
    ForeignMachine,
    /// No process has the pid (`Gone`).
    NoSuchProcess,
    /// The process is a zombie (`Gone`).
    Zombie,
}

impl Reason {
    /// A stable kebab-case slug (`"start-ticks-differ"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::TokenEqual => "token-equal",
            Reason::BootIdDiffers => "boot-id-differs",
            Reason::StartTicksDiffer => "start-ticks-differ",
            Reason::PidfsInodeDiffers => "pidfs-inode-differs",
            Reason::NoRecordedToken => "no-recorded-token",
            Reason::LiveTokenUnreadable => "live-token-unreadable",
            Reason::ForeignPidNamespace => "foreign-pid-namespace",
            Reason::ForeignMachine => "foreign-machine",
            Reason::NoSuchProcess => "no-such-process",
            Reason::Zombie => "zombie",
        }
    }

    /// Whether the record belongs to another machine or PID namespace: it is that system's
    /// business, never judged stale nor removed here.
    pub const fn is_foreign(self) -> bool {
        matches!(self, Reason::ForeignMachine | Reason::ForeignPidNamespace)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A verdict with its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// Why.
    pub reason: Reason,
}

impl Judgement {
    pub(crate) const fn new(verdict: Verdict, reason: Reason) -> Judgement {
        Judgement { verdict, reason }
    }
    /// Whether the process is gone but still a zombie (its pid, and so its group number, is
    /// still pinned by the kernel).
    pub fn is_zombie(&self) -> bool {
        self.reason == Reason::Zombie
    }
}

/// Judge a recorded token against this machine before looking at any process: a record from
/// another boot is `Mismatch` and one from another machine or PID namespace is `Unverifiable`,
/// whatever runs at that pid now (BUGS A3). `None` means the process must be looked at.
pub fn judge_record(recorded: &StartToken) -> Option<Judgement> {
    if recorded.machine_id != procfs::machine_id() {
        return Some(Judgement::new(Verdict::Unverifiable, Reason::ForeignMachine));
    }
    if recorded.boot_id != procfs::boot_id() {
        return Some(Judgement::new(Verdict::Mismatch, Reason::BootIdDiffers));
    }
    if recorded.pidns_ino != procfs::pidns_ino() {
        return Some(Judgement::new(Verdict::Unverifiable, Reason::ForeignPidNamespace));
    }
    None
}

/// Compare a recorded token with a live one read in the same machine, boot and namespace.
///
/// `Match` needs equal start ticks and, where the record has a pidfs inode, the same live
/// pidfs inode: a recorded inode that the live token lacks (read without a pidfd) gives
/// `Unverifiable` (`LiveTokenUnreadable`), since only the inode tells a same-tick reuse apart.
/// A record without an inode (older kernels) matches on start ticks.
pub fn compare_tokens(recorded: &StartToken, live: &StartToken) -> Judgement {
    if recorded.machine_id != live.machine_id {
        return Judgement::new(Verdict::Unverifiable, Reason::ForeignMachine);
    }
    if recorded.boot_id != live.boot_id {
        return Judgement::new(Verdict::Mismatch, Reason::BootIdDiffers);
    }
    if recorded.pidns_ino != live.pidns_ino {
        return Judgement::new(Verdict::Unverifiable, Reason::ForeignPidNamespace);
    }
    if recorded.start_ticks != live.start_ticks {
        return Judgement::new(Verdict::Mismatch, Reason::StartTicksDiffer);
    }
    match (recorded.pidfs_ino, live.pidfs_ino) {
        (Some(a), Some(b)) if a != b => Judgement::new(Verdict::Mismatch, Reason::PidfsInodeDiffers),
        // The record was made on this boot with a pidfs inode, so this kernel has pidfs: a live
        // token without one was read without a pidfd (seccomp, EPERM). Equal start ticks alone
        // cannot rule out a reuse within the same clock tick, so this is not a Match.
        (Some(_), None) => Judgement::new(Verdict::Unverifiable, Reason::LiveTokenUnreadable),
        _ => Judgement::new(Verdict::Match, Reason::TokenEqual),
    }
}

/// Judge a pinned snapshot against an optional recorded token.
pub(crate) fn judge_snapshot(recorded: Option<&StartToken>, snap: &Snapshot) -> Judgement {
    if snap.is_zombie() {
        return Judgement::new(Verdict::Gone, Reason::Zombie);
    }
    match recorded {
        None => Judgement::new(Verdict::Unverifiable, Reason::NoRecordedToken),
        Some(r) => compare_tokens(r, &snap.token()),
    }
}

/// Is the process at `pid` the one `recorded` names? (SPEC §2.2.)
///
/// `recorded = None` (a record without a token) gives `Unverifiable` for a live process. EPERM
/// is never read as dead: another user's process is judged by its procfs token like any other.
/// Errors: `InvalidArgument` for a pid outside `1..=pid_max`; `Io` when procfs fails oddly.
pub fn judge(pid: i32, recorded: Option<&StartToken>) -> Result<Judgement> {
    let pid = super::process::check_pid_range(pid as i64)?;
    if let Some(r) = recorded {
        if let Some(j) = judge_record(r) {
            return Ok(j);
        }
    }
    match snapshot(pid) {
        Ok(snap) => Ok(judge_snapshot(recorded, &snap)),
        Err(e) if e.kind() == ErrorKind::NoSuchProcess => Ok(Judgement::new(Verdict::Gone, Reason::NoSuchProcess)),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            Ok(Judgement::new(Verdict::Unverifiable, Reason::LiveTokenUnreadable))
        }
        Err(e) => Err(e),
    }
}

/// Who may be signalled on the strength of a verdict (SPEC §2.3, after pitchfork's fix, seed 003).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Only `Match` authorises a signal. For cleanup, orphan adoption and anything the user did
    /// not name explicitly.
    #[default]
    Strict,
    /// Everything but `Mismatch` and `Gone` authorises; `Unverifiable` is allowed with a warning.
    /// For a record the user names explicitly that was written before tokens existed.
    Lenient,
}

impl Policy {
    /// Whether `verdict` authorises a signal under this policy.
    pub const fn authorizes(self, verdict: Verdict) -> bool {
        match (self, verdict) {
            (_, Verdict::Match) => true,
            (Policy::Lenient, Verdict::Unverifiable) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(ticks: u64, ino: Option<u64>) -> StartToken {
        StartToken { machine_id: "m".into(), boot_id: "b".into(), pidns_ino: 1, start_ticks: ticks, pidfs_ino: ino }
    }

    #[test]
    fn same_tick_reuse_is_told_apart_by_pidfs_inode() {
        assert_eq!(compare_tokens(&tok(5, Some(1)), &tok(5, Some(2))).verdict, Verdict::Mismatch);
        assert_eq!(compare_tokens(&tok(5, Some(1)), &tok(5, Some(1))).verdict, Verdict::Match);
        assert_eq!(compare_tokens(&tok(5, None), &tok(5, Some(1))).verdict, Verdict::Match);
        assert_eq!(compare_tokens(&tok(5, None), &tok(5, None)).verdict, Verdict::Match);
        assert_eq!(compare_tokens(&tok(5, Some(1)), &tok(5, None)).reason, Reason::LiveTokenUnreadable);
        assert_eq!(compare_tokens(&tok(5, None), &tok(6, None)).reason, Reason::StartTicksDiffer);
    }

    #[test]
    fn other_boot_is_mismatch_other_machine_or_ns_unverifiable() {
        let mut r = tok(5, None);
        r.boot_id = "x".into();
        assert_eq!(compare_tokens(&r, &tok(5, None)).verdict, Verdict::Mismatch);
        let mut r = tok(5, None);
        r.machine_id = "x".into();
        assert_eq!(compare_tokens(&r, &tok(5, None)).reason, Reason::ForeignMachine);
        let mut r = tok(5, None);
        r.pidns_ino = 9;
        assert_eq!(compare_tokens(&r, &tok(5, None)).reason, Reason::ForeignPidNamespace);
    }

    #[test]
    fn policies() {
        assert!(Policy::Strict.authorizes(Verdict::Match));
        assert!(!Policy::Strict.authorizes(Verdict::Unverifiable));
        assert!(Policy::Lenient.authorizes(Verdict::Unverifiable));
        assert!(!Policy::Lenient.authorizes(Verdict::Mismatch));
        assert!(!Policy::Lenient.authorizes(Verdict::Gone));
    }
}
