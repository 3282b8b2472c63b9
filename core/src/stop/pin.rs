//! The first half of a stop, for callers that signal and wait on their own: judge an abx-dl
//! pidfile and pin what it names. Never signals.

use std::path::Path;

use super::judged::{unusable, Judged};
use super::report::{StopOutcome, StopReport};
use crate::error::{Error, Result};
use crate::identity::ProcessRef;
use crate::ops::Allows;
use crate::pidfile::cmd::RecordedCommand;
use crate::pidfile::mtime::PidFileCheck;
use crate::pidfile::target::{pin_pidfile, scope_target, PidfileTarget, ScopeTarget};
use crate::pidfile::Format;
use crate::signal::Refusal;

/// What [`pin_pid_file`] found.
#[derive(Debug)]
pub enum PidFilePin {
    /// The recorded process, pinned by a pidfd and proven to be the recorded one, that the
    /// record authorises signalling: signal it ([`ProcessRef::signal`],
    /// [`ProcessRef::signal_group`]), run a schedule ([`ProcessRef::terminate`]) or await its
    /// exit on [`ProcessRef::pidfd_raw`] from an event loop. A record owned by another uid than
    /// the caller's comes restricted to that uid ([`ProcessRef::restrict_to_uid`]): every
    /// signal, to the process and to each group member, is checked against it right before it
    /// is sent.
    Pinned(ProcessRef),
    /// Nothing may be signalled. The report says why ([`StopReport::outcome`]: `Stale` with the
    /// reason, `Refused`, `Foreign`) and whether the record was retired
    /// ([`StopReport::pid_file_removed`]); it has no termination report.
    Left(StopReport),
}

/// Judge an abx-dl pidfile as abx-dl's `graceful_kill_by_pid_file` and `safe_kill_process` do,
/// and pin what it names: the first half of a stop, for callers that signal and wait on their
/// own (an event loop awaiting the pidfd). `recorded`: the hook's argv list or its `.sh` file
/// (see [`check_pid_file_with`](crate::check_pid_file_with)); `tolerance`: seconds, for
/// the mtime rule of token-less records.
///
/// 1. The directory is opened once, the record read from it; owner and mode are the `fstat` of
///    the descriptor read (never a second lookup of the path).
/// 2. A record that abx-dl's `validate_pid_file` rejects for a proven reason (`gone`, `zombie`,
///    `mismatch`, `mtime-skew`, `cmd-mismatch`, `malformed`) is stale: it is retired by content
///    through that directory's descriptor (only if it still holds what was judged) and nothing
///    is signalled → [`PidFilePin::Left`] with `Stale(reason)`. A missing file is `Stale(missing)`
///    with nothing removed.
/// 3. A record nothing proves either way (`unverifiable`: the live identity could not be read)
///    → `Left` with `Refused(unverifiable)`; another machine's or PID namespace's → `Left` with
///    `Foreign`; both kept.
/// 4. A valid record: the owner rule (privilege is never lent: a file owned by another uid aims only at that
///    uid's processes; a world-writable one — or, for a privileged caller, a group-writable one
///    — at none) and the protected targets (pid 1, our own pid, our parent without a matching
///    token) apply → `Left` with `Refused(reason)` and the particulars in
///    [`StopReport::detail`], record kept; else [`PidFilePin::Pinned`].
/// 5. A record with a scope (a command pidguard started, see [`crate::identity::Scope`]): the
///    pinned handle carries it ([`ProcessRef::scope_kind`]), so its group signals and its
///    termination reach the whole tree; when the recorded process is gone but its scope still
///    holds processes,
///    nothing is signalled here: [`PidFilePin::Pinned`] carries a scope-only handle (its pid
///    gone, no pidfd; its group signals and a termination reach every process of the scope,
///    [`ProcessRef::has_exited`] is true) and the record is kept; once the scope is empty the
///    record is retired as stale. A scope that cannot be judged keeps the record (`Refused`).
///
/// Errors (nothing sent, nothing removed): `InvalidArgument` for a tolerance that is not finite
/// seconds ≥ 0; `Malformed` for a token xattr that is not a pidguard start token; `Untrusted`
/// for a symlink, FIFO or other non-regular file; `PermissionDenied`/`Io` when the file cannot
/// be read (including a path refused by the unsafe-transition rule for a privileged caller).
pub fn pin_pid_file(pid_file: &Path, recorded: Option<RecordedCommand<'_>>, tolerance: f64) -> Result<PidFilePin> {
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(Error::invalid(format!("tolerance must be finite seconds >= 0, not {tolerance}")));
    }
    let judged = Judged::new(pid_file, recorded, tolerance);
    let check = judged.check.clone();
    let mut report = StopReport::before_acting(pid_file, check.clone(), Format::AbxDl);
    // What the record allows is the table's (`crate::ops::pin`).
    let allows = crate::ops::pin(check.reason);
    match allows {
        Allows::Fail => return Err(unusable(pid_file, &check)),
        Allows::Nothing => return Ok(PidFilePin::Left(report)),
        Allows::Leave => {
            report.outcome = StopOutcome::Foreign;
            return Ok(PidFilePin::Left(report));
        }
        Allows::Keep(r) => {
            report.outcome = StopOutcome::Refused(r);
            report.detail = check.judgement.map(|j| j.to_string());
            return Ok(PidFilePin::Left(report));
        }
        Allows::Act | Allows::ActLeniently | Allows::Retire => {}
    }
    // A record pidguard started has a scope: the handle reaches the whole tree through it.
    let scope = match scope_target(&check) {
        ScopeTarget::Keep(r, why, kind) => {
            report.scope = kind;
            report.outcome = StopOutcome::Refused(r);
            report.detail = Some(why);
            return Ok(PidFilePin::Left(report));
        }
        ScopeTarget::Open(s) => Some(s),
        ScopeTarget::Absent(note) => {
            report.detail = note;
            None
        }
    };
    match allows {
        Allows::Retire => {
            if let Some(s) = scope {
                if !s.is_empty() {
                    // The recorded process is gone, its tree is not (a launcher that exits once
                    // the browser is up): a handle that reaches the tree, and nothing signalled
                    // here — the caller decides whether to stop it.
                    let pid = check.pid.unwrap_or(0);
                    report.scope = s.kind();
                    return Ok(match ProcessRef::scope_only(pid, s) {
                        Some(h) => PidFilePin::Pinned(h),
                        None => {
                            report.outcome = StopOutcome::Refused(Refusal::Unverifiable);
                            report.detail = Some("this machine's boot id and PID namespace cannot be read".into());
                            PidFilePin::Left(report)
                        }
                    });
                }
            }
            report.pid_file_removed = judged.retire(pid_file, &check);
            return Ok(PidFilePin::Left(report));
        }
        Allows::Act | Allows::ActLeniently => {}
        // Returned above.
        Allows::Fail | Allows::Nothing | Allows::Leave | Allows::Keep(_) => return Ok(PidFilePin::Left(report)),
    }
    let pin = judged_pin(judged, pid_file, &check, &mut report);
    Ok(match pin {
        Some(mut h) => {
            if let Some(s) = scope {
                if s.contains(h.pid()) {
                    report.scope = s.kind();
                    h.attach_scope(s);
                } else {
                    // Root moved it out of its scope: it is handled as a record without one.
                    log::warn!("{}: pid {} had left its scope ({}): stopped with its process group only", pid_file.display(), h.pid(), s.kind());
                }
            }
            PidFilePin::Pinned(h)
        }
        None => PidFilePin::Left(report),
    })
}

/// The pin step of [`pin_pid_file`]: the handle, or `None` with the report's outcome set (a
/// record that turned out stale meanwhile is retired).
fn judged_pin(mut judged: Judged<'_>, pid_file: &Path, check: &PidFileCheck, report: &mut StopReport) -> Option<ProcessRef> {
    match pin_pidfile(check, judged.pin.take()) {
        PidfileTarget::Pinned(h) => Some(h),
        PidfileTarget::Stale(reason) => {
            report.outcome = StopOutcome::Stale(reason);
            report.pid_file_removed = judged.retire(pid_file, check);
            None
        }
        PidfileTarget::Unverifiable(j) => {
            report.outcome = StopOutcome::Refused(Refusal::Unverifiable);
            report.detail = j.map(|j| j.to_string());
            None
        }
        PidfileTarget::Foreign => {
            report.outcome = StopOutcome::Foreign;
            None
        }
        PidfileTarget::Refused(r, detail) => {
            report.outcome = StopOutcome::Refused(r);
            report.detail = detail;
            None
        }
    }
}

