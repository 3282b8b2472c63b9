//! From a checked abx-dl pidfile to a pinned process, or the reason there is none.

use super::mtime::{CheckReason, PidFileCheck, DEFAULT_TOLERANCE};
use crate::error::ErrorKind;
use crate::identity::{compare_tokens, create_time, ProcessRef, Verdict};
use crate::signal::{pidfile_authority, Authority, Refusal};
use crate::sys;

/// What a pidfile authorises.
#[derive(Debug)]
pub(crate) enum PidfileTarget {
    /// The recorded process, pinned and re-checked: it may be signalled.
    Pinned(ProcessRef),
    /// The record is stale (the reason says why): nothing may be signalled.
    Stale(CheckReason),
    /// Another machine's or PID namespace's record: not ours to judge or remove.
    Foreign,
    /// A safety rule refused it, with the particulars when there are any
    /// (`owned by uid 65534, target uid 0`).
    Refused(Refusal, Option<String>),
}

/// Pin the process a checked pidfile names and re-check the same rules against the pinned
/// process (SPEC §5 step 3).
///
/// The file must be valid ([`PidFileCheck::valid`]): a matching token, or — for a token-less
/// file — the seed's evidence (mtime within tolerance of the create time and a matching command
/// file). A zombie leader whose identity matches is pinned too: its process group may still
/// hold live children, and the zombie pins the group number. (A caller applying the lenient
/// policy to a token-less record, as [`crate::stop_pid_file`] does, marks the check valid
/// first.) Anything else is `Stale`, `Foreign` or `Refused`:
///
/// - Who wrote the file bounds what it may aim at, whatever its token says (anyone can compute
///   any process's token): a world-writable file — or, for a privileged caller, a
///   group-writable one — authorises nothing; a file owned by another uid authorises signals
///   only to that uid's processes (the handle is restricted to it, so group members are
///   checked too, right before each signal).
/// - The caller's parent is never signalled without a token `Match` (container PID 1 reuse).
pub(crate) fn pin_pidfile(check: &PidFileCheck) -> PidfileTarget {
    match check.reason {
        CheckReason::Valid | CheckReason::Zombie => {}
        CheckReason::Foreign => return PidfileTarget::Foreign,
        r => return PidfileTarget::Stale(r),
    }
    let Some(pid) = check.pid else { return PidfileTarget::Stale(CheckReason::Malformed) };
    let mut h = match ProcessRef::pin(pid, check.token.as_ref()) {
        Ok(h) => h,
        Err(e) if e.kind() == ErrorKind::Refused => return PidfileTarget::Refused(e.refusal().unwrap_or(Refusal::Init), None),
        Err(_) => return PidfileTarget::Stale(CheckReason::Gone),
    };
    // Re-check against the pinned process: the token, or for a token-less file the start time.
    let matched_token = check.token.as_ref().is_some_and(|t| compare_tokens(t, h.token()).verdict == Verdict::Match);
    let same = if check.token.is_some() {
        matched_token
    } else if check.reason == CheckReason::Zombie {
        // A zombie leader's identity: its start time against the pidfile's mtime.
        let ct = create_time(h.token().start_ticks).ok();
        matches!((ct, check.mtime), (Some(c), Some(m)) if (c - m).abs() <= DEFAULT_TOLERANCE)
    } else {
        check.live_start_ticks == Some(h.token().start_ticks)
    };
    if !same {
        return PidfileTarget::Stale(CheckReason::Mismatch);
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
                    Ok((r, e)) if r == owner || e == owner => {}
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
    if check.reason == CheckReason::Zombie && !h.leads_group() {
        // Nothing left to stop: a zombie that led no group.
        return PidfileTarget::Pinned(h);
    }
    if pid == sys::getppid() && !matched_token {
        return PidfileTarget::Refused(Refusal::Parent, None);
    }
    PidfileTarget::Pinned(h)
}
