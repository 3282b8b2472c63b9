//! The stop itself: judge the record, ask the table what it allows, run the schedule.

use std::path::Path;

use super::judged::{unusable, Judged};
use super::report::{StopOptions, StopOutcome, StopReport};
use crate::error::{ErrorKind, Result};
use crate::identity::{ProcessRef, Scope};
use crate::ops::Allows;
use crate::pidfile::cmd::RecordedCommand;
use crate::pidfile::mtime::{CheckReason, PidFileCheck};
use crate::pidfile::target::{pin_pidfile, scope_target, PidfileTarget, ScopeTarget};
use crate::pidfile::Format;
use crate::signal::{terminate, terminate_scopes, Refusal, TerminateOptions, TerminateReport};

/// Stop the process a pidfile names — an abx-dl pidfile or a guard record (the format is told
/// by [`Format::of`], reported in [`StopReport::format`]) — with its process group, and nothing
/// else. For a guard record the record's token decides under `opts.policy`, the owner rule
/// applies, and a stale or stopped record is removed by content; the steps below are the
/// abx-dl format's.
///
/// 1. [`check_pid_file`](crate::check_pid_file) judges the file (with `opts.cmd_file_for(pid_file)`: the `.sh` beside it by default), read from
///    its directory's descriptor, opened once: the owner and mode that decide are the `fstat` of
///    the descriptor read, and every removal below goes through that same directory descriptor
///    (by content), never through a second lookup of the path.
/// 2. A missing file, a gone process, proven reuse (`Mismatch`) → [`StopOutcome::Stale`]:
///    nothing is sent, the file is removed if unchanged (a reused pid, a record from an earlier boot). A foreign record is left
///    alone. A zombie leader with a matching identity has its group (pinned by the zombie)
///    terminated.
/// 3. A record that is not proven → `Refused`, file kept: `cmd-mismatch` under `Strict` as
///    `NotTheRecordedProcess` (the live argv is not the `.sh`'s); a token-less `mtime-skew`
///    under `Strict`, or an unconfirmable token under either policy, as `Unverifiable` (nothing
///    was proven either way), with a `detail` saying why.
/// 4. Otherwise the process the check pinned is acted on: the owner rule (a file owned by
///    another uid aims only at that uid's processes; a world-writable one — or, for a
///    privileged caller, a group-writable one — at none, whatever its token says) and the
///    protected targets (own pid, own group, parent without a matching token, pid 1) apply, and
///    the schedule runs.
///
/// Errors (nothing sent): `InvalidArgument` for a tolerance that is not finite seconds ≥ 0;
/// `Malformed` for content that is not one pid or a bad token xattr;
/// `InvalidArgument` for a directory given as the pidfile (bad input, not a refusal);
/// `Untrusted` for a symlink, FIFO or other non-regular file; `PermissionDenied`/`Io` when the
/// file cannot be read.
pub fn stop_pid_file(pid_file: &Path, opts: &StopOptions) -> Result<StopReport> {
    opts.validate()?;
    if Format::of(pid_file) == Format::Guard {
        return stop_guard_record(pid_file, opts);
    }
    let cmd_file = opts.cmd_file_for(pid_file);
    let mut judged = Judged::new(pid_file, cmd_file.as_deref().map(RecordedCommand::File), opts.tolerance);
    let (check, pin) = (judged.check.clone(), judged.pin.take());
    // Removed if unchanged; a removal that failed says why (a read-only directory).
    let retire = |check: &PidFileCheck, report: &mut StopReport| {
        let (done, why) = judged.retire_why(pid_file, check);
        report.pid_file_removed = done;
        if let Some(w) = why {
            report.warning = Some(match report.warning.take() {
                Some(old) => format!("{old}; {w}"),
                None => w,
            });
        }
    };
    let mut report = StopReport::before_acting(pid_file, check.clone(), Format::AbxDl);
    let mut acting = check.clone();
    let mut lenient_warning = None;
    let pin = match scope_target(&check) {
        ScopeTarget::Keep(r, why, kind) => {
            report.scope = kind;
            report.outcome = StopOutcome::Refused(r);
            report.detail = Some(why);
            return Ok(report);
        }
        ScopeTarget::Open(scope) => {
            // The recorded process too, when the record allows acting on it.
            let main = match crate::ops::stop(check.reason, opts.policy) {
                Allows::Act => match pin_pidfile(&check, pin) {
                    PidfileTarget::Pinned(h) => Some(h),
                    PidfileTarget::Stale(_) | PidfileTarget::Foreign | PidfileTarget::Unverifiable(_) | PidfileTarget::Refused(..) => None,
                },
                Allows::ActLeniently | Allows::Retire | Allows::Keep(_) | Allows::Leave | Allows::Nothing | Allows::Fail => None,
            };
            let t = stop_scope(&scope, main, check.pid.unwrap_or(0), opts, &mut report);
            if t.outcome.is_stopped() {
                retire(&check, &mut report);
                scope.release();
            }
            report.terminate = Some(t);
            return Ok(report);
        }
        ScopeTarget::Absent(note) => {
            report.detail = note;
            pin
        }
    };
    // What the record allows is the table's (`crate::ops::stop`); the particulars are said here.
    match crate::ops::stop(check.reason, opts.policy) {
        Allows::Fail => return Err(unusable(pid_file, &check)),
        Allows::Nothing => return Ok(report),
        Allows::Leave => {
            report.outcome = StopOutcome::Foreign;
            return Ok(report);
        }
        Allows::Retire => {
            if check.reason == CheckReason::Gone {
                report.warning = leftover_warning(check.pid);
            }
            retire(&check, &mut report);
            return Ok(report);
        }
        Allows::Keep(r) => {
            report.outcome = StopOutcome::Refused(r);
            report.detail = match check.reason {
                CheckReason::MtimeSkew => Some(format!(
                    "could not be verified: no start token, and the pidfile's mtime is more than {} s from the process start (--lenient stops it anyway)",
                    opts.tolerance
                )),
                CheckReason::Unverifiable => check.judgement.map(|j| j.to_string()),
                // Wording only: which reasons are kept is the table's.
                _ => None,
            };
            return Ok(report);
        }
        Allows::ActLeniently => {
            lenient_warning = Some(format!(
                "{}: no start token and the mtime is more than {} s from the process start; stopping on the lenient policy",
                pid_file.display(),
                opts.tolerance
            ));
            acting.reason = CheckReason::Valid;
        }
        Allows::Act => {}
    }
    let h = match pin_pidfile(&acting, pin) {
        PidfileTarget::Pinned(h) => {
            // Said only when the policy changed the decision: the process is acted on.
            report.warning = lenient_warning;
            h
        }
        PidfileTarget::Unverifiable(j) => {
            report.outcome = StopOutcome::Refused(Refusal::Unverifiable);
            report.detail = j.map(|j| j.to_string());
            return Ok(report);
        }
        PidfileTarget::Stale(reason) => {
            // Not the recorded process after all (it exited or the number moved on meanwhile).
            report.outcome = StopOutcome::Stale(reason);
            retire(&check, &mut report);
            return Ok(report);
        }
        PidfileTarget::Foreign => {
            report.outcome = StopOutcome::Foreign;
            return Ok(report);
        }
        PidfileTarget::Refused(r, detail) => {
            report.outcome = StopOutcome::Refused(r);
            report.detail = detail;
            return Ok(report);
        }
    };
    let t = run_schedule(h, opts, &mut report);
    if t.outcome.is_stopped() {
        retire(&check, &mut report);
    }
    report.terminate = Some(t);
    Ok(report)
}

/// [`stop_pid_file`] for a guard record: the record's token decides under `opts.policy`; the
/// owner rule applies ([`crate::guard::Verdict::open`]); a stale or stopped record is removed by
/// content, so a record a new holder wrote meanwhile survives. `opts.cmd_file` and
/// `opts.tolerance` do not apply (a guard record always carries a token).
fn stop_guard_record(path: &Path, opts: &StopOptions) -> Result<StopReport> {
    let v = crate::guard::check(path)?;
    let check = v.to_check();
    let mut report = StopReport::before_acting(path, check, Format::Guard);
    let (Some(entry), Some(j)) = (v.entry.clone(), v.identity) else { return Ok(report) };
    let remove = |report: &mut StopReport| {
        report.pid_file_removed = crate::guard::remove(path, &entry).unwrap_or(false);
    };
    // A record with a scope: its whole tree, even when the holder itself is gone.
    match scope_target(&report.check) {
        ScopeTarget::Keep(r, why, kind) => {
            report.scope = kind;
            report.outcome = StopOutcome::Refused(r);
            report.detail = Some(why);
            return Ok(report);
        }
        ScopeTarget::Open(scope) => {
            let main = if j.verdict == crate::identity::Verdict::Match { v.open(opts.policy).ok() } else { None };
            let t = stop_scope(&scope, main, entry.pid, opts, &mut report);
            if t.outcome.is_stopped() {
                remove(&mut report);
                scope.release();
            }
            report.terminate = Some(t);
            return Ok(report);
        }
        ScopeTarget::Absent(note) => report.detail = note,
    }
    if v.is_stale() {
        report.outcome = StopOutcome::Stale(report.check.reason);
        remove(&mut report);
        return Ok(report);
    }
    if j.reason.is_foreign() {
        report.outcome = StopOutcome::Foreign;
        return Ok(report);
    }
    let h = match v.open(opts.policy) {
        Ok(h) => h,
        Err(e) if e.kind() == ErrorKind::NoSuchProcess => {
            report.outcome = StopOutcome::AlreadyGone;
            remove(&mut report);
            return Ok(report);
        }
        Err(e) => {
            // Refused by a rule, or the identity could not be read: nothing sent, record kept.
            report.outcome = StopOutcome::Refused(e.refusal().unwrap_or(Refusal::Unverifiable));
            report.detail = Some(e.message().to_string());
            return Ok(report);
        }
    };
    let t = run_schedule(h, opts, &mut report);
    if t.outcome.is_stopped() {
        remove(&mut report);
    }
    report.terminate = Some(t);
    Ok(report)
}

/// For a record whose process is gone (reaped): the live processes that still carry its pid as
/// their process group, named with the command that would stop them once a person has checked
/// they are the record's — they are unverified (the leader's identity is gone with it) and
/// never signalled. `None` when there are none (or `/proc` could not be read: nothing is said).
fn leftover_warning(pid: Option<i32>) -> Option<String> {
    let pgid = pid.filter(|&p| p > 1)?;
    let members = crate::sys::procfs::group_members(pgid).ok()?;
    if members.is_empty() {
        return None;
    }
    let pids: Vec<String> = members.iter().map(|(p, _)| p.to_string()).collect();
    Some(format!(
        "live processes {} still carry process group {pgid} — unverified (the leader is gone), NOT signalled; \
         to stop them once you have checked they are the record's (`ps -o pid,lstart,args -g {pgid}`): `kill -TERM -- -{pgid}`",
        pids.join(", ")
    ))
}

/// Stop a record's scope with `opts.schedule` ([`terminate_scopes`]) and set the report's
/// outcome. `main`: the recorded process, pinned, when it is alive; if it is no longer inside its
/// scope (root may move a process out of its cgroup) it is stopped with its group at the same
/// time, as a record without a scope is, and the report says so.
pub(super) fn stop_scope(scope: &Scope, main: Option<ProcessRef>, pid: i32, opts: &StopOptions, report: &mut StopReport) -> TerminateReport {
    report.scope = scope.kind();
    if let Some(n) = scope.nested_note() {
        report.warning = Some(n);
    }
    let outside = main.filter(|h| !h.has_exited() && scope.lacks(h.pid()));
    let (mut t, other) = match outside {
        None => (terminate_scopes(&[(pid, scope)], &opts.schedule).pop(), None),
        Some(h) => {
            let left = format!("pid {} had left its scope ({}): stopped with its process group as well", h.pid(), scope.kind());
            report.warning = Some(match report.warning.take() {
                Some(n) => format!("{n}; {left}"),
                None => left,
            });
            let topts = TerminateOptions { schedule: opts.schedule.clone(), group: opts.group, reap: false };
            // Both at once; in turn on this thread when no thread can be made.
            crate::sys::thread::both("pidguard-scope", || terminate_scopes(&[(pid, scope)], &opts.schedule).pop(), || terminate(vec![h], &topts).pop())
        }
    };
    // Unreachable: terminate_scopes returns exactly one report per target.
    let mut t = t.take().expect("one scope, one report");
    if let Some(g) = other {
        // Both must be stopped for the stop to be done; the worse outcome is reported, and a
        // scope found empty (its members already gone, or killed by the group stop) does not
        // hide that the process that had left it was signalled.
        if crate::signal::outside_decides(&t.outcome, &g.outcome) {
            t.outcome = g.outcome.clone();
            t.survivors.extend(g.survivors.iter().copied());
            t.error_kind = g.error_kind;
        }
        t.signals.extend(g.signals.iter().copied());
    }
    report.take_outcome(&t);
    t
}

/// Run `opts.schedule` on the pinned target (its group too unless `opts.group` is false) and
/// set the report's outcome from it; the caller keeps or removes the record.
fn run_schedule(h: crate::identity::ProcessRef, opts: &StopOptions, report: &mut StopReport) -> TerminateReport {
    let topts = TerminateOptions { schedule: opts.schedule.clone(), group: opts.group, reap: false };
    // Unreachable: terminate returns exactly one report per target.
    let t = terminate(vec![h], &topts).pop().expect("one target, one report");
    report.take_outcome(&t);
    t
}
