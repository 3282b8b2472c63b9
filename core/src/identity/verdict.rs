//! The four verdicts, the order in which a recorded token is compared with a live process, and
//! the two signalling policies.

use std::fmt;

use super::token::{StartToken, TokenOs};
use crate::error::Result;
use crate::sys::{self, procfs};

/// Is the process a record names still that same process? One of four answers, never a guess.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Machine id, boot id, pid namespace and start ticks are equal, and so are the pidfs inodes
    /// where both sides have one.
    Match,
    /// Proven reuse: another boot, other start ticks, or another pidfs inode.
    Mismatch,
    /// Nothing proves it either way: no recorded token, another pid namespace or another
    /// machine, or the live identity could not be read (the reason names the errno). Never
    /// read as "gone": a failure to read is not a fact about the process.
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
    /// The live token was read without the pidfs inode that the record has (no pidfd here), so
    /// a same-tick reuse cannot be ruled out (`Unverifiable`).
    LiveTokenUnreadable,
    /// The live identity could not be read; the errno says why (`EMFILE`, `EACCES`, `ENOENT`
    /// from a `/proc` mounted `hidepid` after `pidfd_open` succeeded, …) (`Unverifiable`).
    LiveIdentityUnreadable(i32),
    /// A fact about this machine that the comparison needs — the boot id or the pid namespace
    /// — could not be read; the errno says why (`ENOENT`: `/proc` is not mounted, a chroot or a
    /// minimal container) (`Unverifiable`). Never "differs": an unknown is not a value.
    MachineIdentityUnreadable(i32),
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
            Reason::LiveIdentityUnreadable(_) => "live-identity-unreadable",
            Reason::MachineIdentityUnreadable(_) => "machine-identity-unreadable",
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

    /// The errno behind [`Reason::LiveIdentityUnreadable`] and
    /// [`Reason::MachineIdentityUnreadable`].
    pub const fn errno(self) -> Option<i32> {
        match self {
            Reason::LiveIdentityUnreadable(e) | Reason::MachineIdentityUnreadable(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for Reason {
    /// The slug, and for an unreadable identity its errno: `live-identity-unreadable: EMFILE`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::LiveIdentityUnreadable(e) | Reason::MachineIdentityUnreadable(e) => {
                write!(f, "{}: {}", self.as_str(), sys::errno_name(*e))
            }
            _ => f.write_str(self.as_str()),
        }
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
    /// Whether the live identity could not be read (an errno, not a fact about the process).
    pub fn is_unreadable(&self) -> bool {
        matches!(
            self.reason,
            Reason::LiveIdentityUnreadable(_) | Reason::LiveTokenUnreadable | Reason::MachineIdentityUnreadable(_)
        )
    }
}

impl fmt::Display for Judgement {
    /// `match (token-equal)`, `unverifiable (live-identity-unreadable: EMFILE)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.verdict, self.reason)
    }
}

/// Judge a recorded token against this machine before looking at any process: a record from
/// an earlier boot of this machine is `Mismatch`, one from another machine or PID namespace is
/// `Unverifiable`, whatever runs at that pid now; a fact of this machine that cannot be read
/// (no `/proc`) is `Unverifiable` (`machine-identity-unreadable`). `None` means the process
/// must be looked at. The order is [`compare_tokens`]'s.
pub fn judge_record(recorded: &StartToken) -> Option<Judgement> {
    let here = match machine_facts() {
        Ok(t) => t,
        Err(j) => return Some(j),
    };
    let j = compare_machine(recorded, &here);
    (j.verdict != Verdict::Match).then_some(j)
}

/// The facts of a machine that rules 0–3 of [`compare_tokens`] compare: the system, the
/// machine id, the boot id and the pid namespace, borrowed (this machine's are read once per
/// process and live as long as it: no allocation per judgement).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Machine<'a> {
    pub(crate) os: TokenOs,
    pub(crate) machine_id: &'a str,
    pub(crate) boot_id: &'a str,
    pub(crate) pidns_ino: u64,
}

impl StartToken {
    /// The machine facts of this token.
    pub(crate) fn machine(&self) -> Machine<'_> {
        Machine { os: self.os, machine_id: &self.machine_id, boot_id: &self.boot_id, pidns_ino: self.pidns_ino }
    }
}

impl Machine<'_> {
    /// A token of a process of this machine: its start ticks and pidfs inode with these facts.
    pub(crate) fn token(&self, start_ticks: u64, pidfs_ino: Option<u64>) -> StartToken {
        StartToken {
            os: self.os,
            machine_id: self.machine_id.to_string(),
            boot_id: self.boot_id.to_string(),
            pidns_ino: self.pidns_ino,
            start_ticks,
            pidfs_ino,
        }
    }
}

/// This machine's facts: the machine id ([`procfs::UNKNOWN`] when unknown: it is consulted only
/// when boot ids differ), the boot id and the pid namespace. `Err` with
/// `machine-identity-unreadable` and the errno when the boot id or the pid namespace cannot be
/// read: an unknown is never a value.
pub(crate) fn machine_facts() -> std::result::Result<Machine<'static>, Judgement> {
    let unreadable = |e: i32| Judgement::new(Verdict::Unverifiable, Reason::MachineIdentityUnreadable(e));
    let boot_id = procfs::boot_id().map_err(unreadable)?;
    let pidns_ino = procfs::pidns_ino().map_err(unreadable)?;
    Ok(Machine { os: TokenOs::here(), machine_id: procfs::machine_id().unwrap_or(procfs::UNKNOWN), boot_id, pidns_ino })
}

fn known(field: &str) -> bool {
    !field.is_empty() && field != procfs::UNKNOWN
}

/// Rules 1–3 of [`compare_tokens`]: `Match` here means "the same kernel and namespace: go on".
pub(crate) fn compare_machine(recorded: &StartToken, live: &Machine<'_>) -> Judgement {
    if recorded.os != live.os {
        // Written on another system: its fields mean other things here, so nothing is compared.
        return Judgement::new(Verdict::Unverifiable, Reason::ForeignMachine);
    }
    if !known(live.boot_id) {
        return Judgement::new(Verdict::Unverifiable, Reason::MachineIdentityUnreadable(libc::ENOENT));
    }
    if recorded.boot_id != live.boot_id {
        // Another boot: of this machine (provably stale), or of another machine (foreign). A
        // record whose boot cannot be placed, or a machine id unknown on either side, is
        // never judged here.
        let same_machine = known(&recorded.boot_id)
            && known(&recorded.machine_id)
            && known(live.machine_id)
            && recorded.machine_id == live.machine_id;
        return if same_machine {
            Judgement::new(Verdict::Mismatch, Reason::BootIdDiffers)
        } else {
            Judgement::new(Verdict::Unverifiable, Reason::ForeignMachine)
        };
    }
    if recorded.pidns_ino != live.pidns_ino {
        return Judgement::new(Verdict::Unverifiable, Reason::ForeignPidNamespace);
    }
    Judgement::new(Verdict::Match, Reason::TokenEqual)
}

/// Compare a recorded token with a live one. The first rule that decides, decides:
///
/// 0. tokens of two systems ([`TokenOs`]: a `macos1` record read on Linux) → `Unverifiable`
///    (`foreign-machine`): never compared field by field, never a match;
/// 1. boot ids equal → the same kernel and boot: go on to rule 3 (the machine id is not
///    consulted: 128 random bits per boot already prove the same kernel, even when
///    `/etc/machine-id` was generated or replaced after the record was written);
/// 2. boot ids differ: machine ids equal (both known) → `Mismatch` (an earlier boot: provably
///    stale); machine ids differ, or either is unknown → `Unverifiable` (foreign: never
///    judged, never removed here). A live boot id that is unknown ([`procfs::UNKNOWN`]) is
///    `Unverifiable` (`machine-identity-unreadable: ENOENT`), never "differs";
/// 3. pid namespace differs → `Unverifiable` (the number means another process there);
/// 4. pidfs inodes on both sides: equal → `Match`, different → `Mismatch`. A pidfs inode is
///    never reused within a boot (a 64-bit counter, Linux ≥ 6.9), so it proves identity alone;
///    start ticks are then not consulted — they are shifted by time namespaces (Linux ≥ 5.6),
///    so a process recorded inside `unshare --time` has other ticks from the host;
/// 5. otherwise start ticks: different → `Mismatch`; equal → `Match`, except when the record
///    has an inode and the live side none (read without a pidfd: seccomp), where equal ticks
///    cannot rule out a reuse within the same clock tick → `Unverifiable`
///    (`LiveTokenUnreadable`). Without inodes on both sides, tokens compare only within one
///    time namespace.
pub fn compare_tokens(recorded: &StartToken, live: &StartToken) -> Judgement {
    let m = compare_machine(recorded, &live.machine());
    if m.verdict != Verdict::Match {
        return m;
    }
    compare_process(recorded, live.pidfs_ino, live.start_ticks)
}

/// Rules 4 and 5 of [`compare_tokens`] (the process's own fields, once [`compare_machine`] said
/// `Match`), against a live process whose pidfs inode and start ticks are given.
pub(crate) fn compare_process(recorded: &StartToken, pidfs_ino: Option<u64>, start_ticks: u64) -> Judgement {
    match (recorded.pidfs_ino, pidfs_ino) {
        (Some(a), Some(b)) if a == b => Judgement::new(Verdict::Match, Reason::TokenEqual),
        (Some(_), Some(_)) => Judgement::new(Verdict::Mismatch, Reason::PidfsInodeDiffers),
        _ if recorded.start_ticks != start_ticks => Judgement::new(Verdict::Mismatch, Reason::StartTicksDiffer),
        (Some(_), None) => Judgement::new(Verdict::Unverifiable, Reason::LiveTokenUnreadable),
        _ => Judgement::new(Verdict::Match, Reason::TokenEqual),
    }
}

/// Who may be signalled on the strength of a verdict (after pitchfork's fix for PID reuse).
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
    /// `"strict"` or `"lenient"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Policy::Strict => "strict",
            Policy::Lenient => "lenient",
        }
    }

    /// Whether `verdict` authorises a signal under this policy.
    pub const fn authorizes(self, verdict: Verdict) -> bool {
        match (self, verdict) {
            (_, Verdict::Match) => true,
            (Policy::Lenient, Verdict::Unverifiable) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Policy {
    type Err = crate::Error;

    /// Parse `"strict"` or `"lenient"` (exactly). Errors: `InvalidArgument` for anything else.
    fn from_str(s: &str) -> Result<Policy> {
        match s {
            "strict" => Ok(Policy::Strict),
            "lenient" => Ok(Policy::Lenient),
            other => Err(crate::Error::invalid(format!("policy must be 'strict' or 'lenient', not {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(ticks: u64, ino: Option<u64>) -> StartToken {
        StartToken { os: TokenOs::Linux, machine_id: "m".into(), boot_id: "b".into(), pidns_ino: 1, start_ticks: ticks, pidfs_ino: ino }
    }

    #[test]
    fn a_token_of_another_system_is_foreign_never_a_match() {
        // Every field equal, only the system differs: foreign, whatever the fields say.
        for os in [TokenOs::MacOs, TokenOs::FreeBsd] {
            let r = StartToken { os, ..tok(5, Some(1)) };
            assert_eq!(compare_tokens(&r, &tok(5, Some(1))), Judgement::new(Verdict::Unverifiable, Reason::ForeignMachine));
            assert_eq!(compare_tokens(&tok(5, Some(1)), &r).reason, Reason::ForeignMachine);
            assert_eq!(compare_tokens(&r, &r.clone()).verdict, Verdict::Match, "same system: compared as usual");
        }
        // A macOS record of another boot of the same host is stale there, foreign here.
        let mac_old = StartToken { os: TokenOs::MacOs, boot_id: "old".into(), ..tok(5, Some(1)) };
        let mac_now = StartToken { os: TokenOs::MacOs, ..tok(5, Some(1)) };
        assert_eq!(compare_tokens(&mac_old, &mac_now).reason, Reason::BootIdDiffers);
        assert_eq!(compare_tokens(&mac_old, &tok(5, Some(1))).reason, Reason::ForeignMachine);
        // macOS: the unique id decides alone (the pidfs rule), as the pidfs inode does on Linux.
        let mac_other = StartToken { pidfs_ino: Some(2), ..mac_now.clone() };
        assert_eq!(compare_tokens(&mac_other, &mac_now).reason, Reason::PidfsInodeDiffers);
        // FreeBSD: no unique id; the start (µs since boot) decides.
        let bsd = StartToken { os: TokenOs::FreeBsd, pidfs_ino: None, ..tok(5, None) };
        assert_eq!(compare_tokens(&bsd, &StartToken { start_ticks: 6, ..bsd.clone() }).reason, Reason::StartTicksDiffer);
        assert_eq!(compare_tokens(&bsd, &bsd.clone()).verdict, Verdict::Match);
        // Another jail is another pid space: foreign, as another pid namespace is on Linux.
        assert_eq!(compare_tokens(&bsd, &StartToken { pidns_ino: 9, ..bsd.clone() }).reason, Reason::ForeignPidNamespace);
    }

    #[test]
    fn same_tick_reuse_is_told_apart_by_pidfs_inode() {
        assert_eq!(compare_tokens(&tok(5, Some(1)), &tok(5, Some(2))).verdict, Verdict::Mismatch);
        assert_eq!(compare_tokens(&tok(5, Some(1)), &tok(5, Some(1))).verdict, Verdict::Match);
        assert_eq!(compare_tokens(&tok(5, None), &tok(5, Some(1))).verdict, Verdict::Match);
        assert_eq!(compare_tokens(&tok(5, None), &tok(5, None)).verdict, Verdict::Match);
        assert_eq!(compare_tokens(&tok(5, Some(1)), &tok(5, None)).reason, Reason::LiveTokenUnreadable);
        assert_eq!(compare_tokens(&tok(5, Some(1)), &tok(6, None)).reason, Reason::StartTicksDiffer);
        assert_eq!(compare_tokens(&tok(5, None), &tok(6, None)).reason, Reason::StartTicksDiffer);
    }

    #[test]
    fn a_pidfs_inode_proves_identity_across_time_namespaces() {
        // Recorded inside `unshare --time --boottime 86400`, read from the host: other ticks,
        // the same process.
        assert_eq!(compare_tokens(&tok(8697804, Some(7)), &tok(57804, Some(7))).verdict, Verdict::Match);
        assert_eq!(compare_tokens(&tok(57804, Some(7)), &tok(57804, Some(8))).verdict, Verdict::Mismatch);
    }

    #[test]
    fn other_boot_is_mismatch_other_machine_or_ns_unverifiable() {
        let mut r = tok(5, None);
        r.boot_id = "x".into();
        assert_eq!(compare_tokens(&r, &tok(5, None)).verdict, Verdict::Mismatch);
        let mut r = tok(5, None);
        r.machine_id = "x".into();
        // The same boot id proves the same kernel: the machine id is not consulted.
        assert_eq!(compare_tokens(&r, &tok(5, None)).verdict, Verdict::Match);
        r.boot_id = "x".into();
        assert_eq!(compare_tokens(&r, &tok(5, None)).reason, Reason::ForeignMachine);
        let mut r = tok(5, None);
        r.pidns_ino = 9;
        assert_eq!(compare_tokens(&r, &tok(5, None)).reason, Reason::ForeignPidNamespace);
    }

    #[test]
    fn an_unknown_field_is_never_a_value() {
        // A live boot id that could not be read never "differs".
        let mut live = tok(5, None);
        live.boot_id = procfs::UNKNOWN.into();
        assert_eq!(compare_tokens(&tok(5, None), &live).reason, Reason::MachineIdentityUnreadable(libc::ENOENT));
        // Boot ids differ and a machine id is unknown on either side: foreign, not stale.
        let mut r = tok(5, None);
        r.boot_id = "old".into();
        r.machine_id = procfs::UNKNOWN.into();
        assert_eq!(compare_tokens(&r, &tok(5, None)).reason, Reason::ForeignMachine);
        let mut live = tok(5, None);
        live.machine_id = procfs::UNKNOWN.into();
        let mut r = tok(5, None);
        r.boot_id = "old".into();
        assert_eq!(compare_tokens(&r, &live).reason, Reason::ForeignMachine);
        // A recorded boot id "unknown" (written by a reader without /proc) is never stale.
        let mut r = tok(5, None);
        r.boot_id = procfs::UNKNOWN.into();
        assert_eq!(compare_tokens(&r, &tok(5, None)).verdict, Verdict::Unverifiable);
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
