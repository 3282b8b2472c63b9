//! From a checked abx-dl pidfile to a pinned process, or the reason there is none.

use super::mtime::{CheckReason, PidFileCheck, DEFAULT_TOLERANCE};
use crate::error::ErrorKind;
use crate::identity::{compare_tokens, create_time, Judgement, ProcessRef, Verdict};
use crate::protect::{pidfile_authority, refuse, Authority, Refusal, Target};

/// What a pidfile authorises.
#[derive(Debug)]
pub(crate) enum PidfileTarget {
    /// The recorded process, pinned and re-checked: it may be signalled.
    Pinned(ProcessRef),
    /// The record is stale (the reason says why): nothing may be signalled.
    Stale(CheckReason),
    /// Another machine's or PID namespace's record: not ours to judge or remove.
    Foreign,
    /// The live identity could not be read (the judgement says why, when there is one):
    /// nothing may be signalled, and nothing removed.
    Unverifiable(Option<Judgement>),
    /// A safety rule refused it, with the particulars when there are any
    /// (`owned by uid 65534, target uid 0`).
    Refused(Refusal, Option<String>),
}

/// Decide what a checked pidfile authorises, acting on the very process the check pinned
/// (`pin`, from `crate::options::check_pinned`): nothing is pinned or read twice.
///
/// The file must be valid ([`PidFileCheck::valid`]): a matching token, or — for a token-less
/// file — abx-dl's evidence (mtime within tolerance of the create time and a matching command
/// file). A zombie leader whose identity matches is acted on too: its process group may still
/// hold live children, and the zombie pins the group number. (A caller applying the lenient
/// policy to a token-less record, as [`crate::stop_pid_file`] does, marks the check valid
/// first.) Anything else is `Stale`, `Foreign`, `Unverifiable` or `Refused`:
///
/// - Who wrote the file bounds what it may aim at, whatever its token says (anyone can compute
///   any process's token): a world-writable file — or, for a privileged caller, a
///   group-writable one — authorises nothing; a file owned by another uid authorises signals
///   only to that uid's processes (the handle is restricted to it, so group members are
///   checked too, right before each signal).
/// - For a privileged caller, a pidfile with more than one link authorises nothing
///   (`UntrustedPidfile`): another name for it may be in another user's tree.
/// - The protected targets are refused (pid 1, our own pid, our parent without a token
///   `Match`; our own group when signalled).
pub(crate) fn pin_pidfile(check: &PidFileCheck, pin: Option<ProcessRef>) -> PidfileTarget {
    // The operations ask the table (`crate::ops`) first; this is the last word on a record that
    // reaches here anyway: only a live (or zombie) recorded process can be pinned.
    match check.reason {
        CheckReason::Valid | CheckReason::Zombie => {}
        CheckReason::Foreign => return PidfileTarget::Foreign,
        CheckReason::Unverifiable => return PidfileTarget::Unverifiable(check.judgement),
        r @ (CheckReason::Missing
        | CheckReason::Unreadable
        | CheckReason::NotRegular
        | CheckReason::Malformed
        | CheckReason::BadToken
        | CheckReason::Gone
        | CheckReason::Mismatch
        | CheckReason::MtimeSkew
        | CheckReason::CmdMismatch) => return PidfileTarget::Stale(r),
    }
    let Some(pid) = check.pid else { return PidfileTarget::Stale(CheckReason::Malformed) };
    let Some(mut h) = pin else { return PidfileTarget::Unverifiable(check.judgement) };
    match h.complete() {
        Ok(()) => {}
        Err(j) if j.verdict == Verdict::Gone => return PidfileTarget::Stale(CheckReason::Gone),
        Err(j) => return PidfileTarget::Unverifiable(Some(j)),
    }
    let matched_token = check.judgement.is_some_and(|j| j.verdict == Verdict::Match);
    if check.reason == CheckReason::Zombie {
        // A zombie leader is acted on (for its group) only if it is the recorded process: its
        // token, or for a token-less file its start time against the pidfile's mtime.
        let same = match (&check.token, h.stat()) {
            (Some(t), Some(_)) => compare_tokens(t, h.token()).verdict == Verdict::Match,
            (None, Some(st)) => {
                let ct = create_time(st.start_ticks).ok();
                matches!((ct, check.mtime), (Some(c), Some(m)) if (c - m).abs() <= DEFAULT_TOLERANCE)
            }
            _ => false,
        };
        if !same {
            return PidfileTarget::Stale(CheckReason::Gone);
        }
    }
    // A privileged caller trusts no pidfile with a second name: with `fs.protected_hardlinks=0`
    // a user can link root's own pidfile into a tree root walks.
    if let Some(why) = &check.linked {
        return PidfileTarget::Refused(Refusal::UntrustedPidfile, Some(format!("the pidfile {why}")));
    }
    let Some((owner, mode)) = check.owner else { return PidfileTarget::Refused(Refusal::UntrustedPidfile, None) };
    match pidfile_authority(owner, mode) {
        Err((r, why)) => return PidfileTarget::Refused(r, Some(why)),
        Ok(Authority::Any) => {}
        Ok(Authority::OwnerOnly(owner)) => {
            if !h.was_zombie() {
                // Refuse up front when the recorded process itself is not the owner's; the
                // handle re-checks it, and each group member, before every signal.
                match h.uids() {
                    Ok((r, saved)) if r == owner || saved == owner => {}
                    Ok((r, _)) => {
                        return PidfileTarget::Refused(
                            Refusal::UntrustedPidfile,
                            Some(format!("owned by uid {owner}, target uid {r}")),
                        )
                    }
                    Err(e) if e.kind() == ErrorKind::NoSuchProcess => return PidfileTarget::Stale(CheckReason::Gone),
                    Err(e) => {
                        return PidfileTarget::Refused(
                            Refusal::UntrustedPidfile,
                            Some(format!("owned by uid {owner}, target uid unreadable ({})", e.message())),
                        )
                    }
                }
            }
            h.restrict_to_uid(owner);
        }
    }
    if let Some(r) = refuse(Target::Process { pid: pid as i64, token_matched: matched_token }) {
        return PidfileTarget::Refused(r, None);
    }
    PidfileTarget::Pinned(h)
}

/// Whether a record with this reason is dated on this machine and in this PID namespace, so
/// that its recorded scope is judged (its own identity decides: cgroup id and boot, supervisor
/// token). The recorded process may be gone while its tree runs on.
pub const fn scope_consulted(r: CheckReason) -> bool {
    match r {
        CheckReason::Valid | CheckReason::Zombie | CheckReason::Gone | CheckReason::Mismatch => true,
        CheckReason::Missing
        | CheckReason::Unreadable
        | CheckReason::NotRegular
        | CheckReason::Malformed
        | CheckReason::BadToken
        | CheckReason::Foreign
        | CheckReason::Unverifiable
        | CheckReason::MtimeSkew
        | CheckReason::CmdMismatch => false,
    }
}

/// What a record's scope allows, judged with the record (see [`scope_target`]).
#[derive(Debug)]
pub(crate) enum ScopeTarget {
    /// The recorded scope, pinned and proven: stop it (every process in it, nothing else).
    Open(crate::identity::Scope),
    /// Nothing may be signalled and the record is kept: the scope could not be judged, or it
    /// is not the pidfile owner's to stop.
    Keep(Refusal, String, crate::identity::ScopeKind),
    /// No scope to act on (none recorded, or the recorded one is gone or now names something
    /// else: never touched); the record is handled as one without a scope. The note says why,
    /// when a scope was recorded.
    Absent(Option<String>),
}

/// Judge the scope recorded with a checked abx-dl pidfile. Consulted only for a record whose
/// token dated it on this machine and in this PID namespace — valid, zombie, gone or
/// mismatch: the recorded process may be gone while its tree runs on (a daemon that
/// double-forked), and the scope's own identity (cgroup id and boot, supervisor token) decides.
/// The owner rule applies as for processes: a pidfile owned by another uid than a privileged
/// caller's aims only at a scope of that uid, each member checked before its signal.
pub(crate) fn scope_target(check: &PidFileCheck) -> ScopeTarget {
    use crate::identity::{Scope, ScopeState};
    let Some(rec) = &check.scope else { return ScopeTarget::Absent(None) };
    if !scope_consulted(check.reason) {
        return ScopeTarget::Absent(None);
    }
    let kind = rec.kind();
    if let Some(why) = &check.linked {
        return ScopeTarget::Keep(Refusal::UntrustedPidfile, format!("the pidfile {why}"), kind);
    }
    let Some((owner, mode)) = check.owner else { return ScopeTarget::Keep(Refusal::UntrustedPidfile, "the pidfile's owner is unknown".into(), kind) };
    let only_uid = match pidfile_authority(owner, mode) {
        Err((r, why)) => return ScopeTarget::Keep(r, why, kind),
        Ok(Authority::Any) => None,
        Ok(Authority::OwnerOnly(u)) => Some(u),
    };
    // The record's own process, when the check matched its token, is the evidence that child
    // cgroups of the leaf were made inside the scope (see `Scope::open_anchored`).
    let anchor = match (check.reason, check.pid, &check.token, check.judgement) {
        (CheckReason::Valid, Some(pid), Some(t), Some(j)) if j.verdict == Verdict::Match => Some((pid, t)),
        _ => None,
    };
    match Scope::open_anchored(rec, only_uid, anchor) {
        ScopeState::Open(s) => ScopeTarget::Open(s),
        ScopeState::Gone(why) => ScopeTarget::Absent(Some(format!("scope {kind}: {why}"))),
        ScopeState::Mismatch(why) => ScopeTarget::Absent(Some(format!("scope {kind}: {why}: not touched"))),
        ScopeState::Unverifiable(why) => ScopeTarget::Keep(Refusal::Unverifiable, format!("scope {kind} could not be verified: {why}"), kind),
        ScopeState::Refused(why) => ScopeTarget::Keep(Refusal::UntrustedPidfile, why, kind),
    }
}
