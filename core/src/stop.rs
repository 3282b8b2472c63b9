//! Stopping the process a pidfile names (`pidguard stop`, start-stop-daemon's `--stop`).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::signal::{terminate, terminate_scopes, ExitStatus, Outcome, Refusal, Signal, TerminateOptions, TerminateReport};
use crate::error::{Error, ErrorKind, Result};
use crate::pidfile::unchanged::remove_if_unchanged_in;
use crate::identity::{ProcessRef, Scope};
use crate::pidfile::cmd::RecordedCommand;
use crate::pidfile::mtime::{check_pinned_opened, CheckReason, CmdRule, PidFileCheck};
use crate::sys::DirFd;
use crate::pidfile::Format;
use crate::pidfile::target::{pin_pidfile, scope_target, PidfileTarget, ScopeTarget};
use crate::ops::Allows;

mod pin;
pub use pin::{pin_pid_file, PidFilePin};

pub use crate::options::StopOptions;

/// What [`stop_pid_file`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopOutcome {
    /// The record names no process of its own any more (missing file, gone, zombie without a
    /// live group, proven reuse): nothing was signalled; the pidfile was removed if it was
    /// still the file that was judged.
    Stale(CheckReason),
    /// The process (and its group) exited before anything was sent.
    AlreadyGone,
    /// It (and its group) exited after this signal.
    Exited(Signal),
    /// Still alive after the whole schedule; the pidfile is kept.
    Unkillable,
    /// Not signalled: a safety rule, the owner rule of the pidfile or the policy refused it;
    /// the pidfile is kept.
    Refused(Refusal),
    /// Another machine's or PID namespace's record: left alone, pidfile kept.
    Foreign,
    /// Signalling failed (for example `EPERM`); the pidfile is kept.
    Error(String),
}

impl StopOutcome {
    /// The signal after which the target exited, for the exited outcome.
    pub fn after(&self) -> Option<Signal> {
        match self {
            StopOutcome::Exited(s) => Some(*s),
            _ => None,
        }
    }

    /// Why signalling was refused, for the refused outcome.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            StopOutcome::Refused(r) => Some(*r),
            _ => None,
        }
    }

    /// Why the record is stale, for the stale outcome.
    pub fn stale_reason(&self) -> Option<CheckReason> {
        match self {
            StopOutcome::Stale(r) => Some(*r),
            _ => None,
        }
    }

    /// The message, for the error outcome.
    pub fn error(&self) -> Option<&str> {
        match self {
            StopOutcome::Error(e) => Some(e),
            _ => None,
        }
    }

    /// A stable kebab-case slug.
    pub fn as_str(&self) -> &'static str {
        match self {
            StopOutcome::Stale(_) => "stale",
            StopOutcome::AlreadyGone => "already-gone",
            StopOutcome::Exited(_) => "exited",
            StopOutcome::Unkillable => "unkillable",
            StopOutcome::Refused(_) => "refused",
            StopOutcome::Foreign => "foreign",
            StopOutcome::Error(_) => "error",
        }
    }
}

impl fmt::Display for StopOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopOutcome::Stale(r) => write!(f, "stale ({r})"),
            StopOutcome::Exited(s) => write!(f, "exited after {s}"),
            StopOutcome::Refused(r) => write!(f, "refused ({r})"),
            StopOutcome::Error(e) => write!(f, "error: {e}"),
            o => f.write_str(o.as_str()),
        }
    }
}

/// The report of [`stop_pid_file`].
#[derive(Clone, Debug)]
pub struct StopReport {
    /// The pidfile.
    pub pid_file: PathBuf,
    /// What [`check_pid_file`](crate::check_pid_file) said about it.
    pub check: PidFileCheck,
    /// What was done.
    pub outcome: StopOutcome,
    /// The termination report, when the process was pinned and the schedule ran.
    pub terminate: Option<TerminateReport>,
    /// Whether the pidfile was removed (only stale or stopped records, and only if the file
    /// was still the one judged).
    pub pid_file_removed: bool,
    /// A warning, e.g. that the identity was taken on the lenient policy.
    pub warning: Option<String>,
    /// The particulars of a refusal, when there are any (`owned by uid 65534, target uid 0`).
    pub detail: Option<String>,
    /// The format of the pidfile ([`Format::of`]).
    pub format: Format,
    /// What was (or would have been) stopped: the recorded scope — a cgroup leaf or a
    /// supervisor's tree — or the process group (`group`: no scope recorded, or the recorded one
    /// is gone).
    pub scope: crate::identity::ScopeKind,
}

impl StopReport {
    /// The report of a record judged and not acted on yet: its check's reason as a stale
    /// outcome (the operation replaces it once it decides), nothing sent, nothing removed.
    fn before_acting(pid_file: &Path, check: PidFileCheck, format: Format) -> StopReport {
        StopReport {
            pid_file: pid_file.to_path_buf(),
            outcome: StopOutcome::Stale(check.reason),
            check,
            terminate: None,
            pid_file_removed: false,
            warning: None,
            detail: None,
            format,
            scope: crate::identity::ScopeKind::Group,
        }
    }

    /// The outcome of a termination that ran for this record, and the particulars of a refusal
    /// for survivors skipped for their uid.
    fn take_outcome(&mut self, t: &TerminateReport) {
        self.outcome = match &t.outcome {
            Outcome::AlreadyGone => StopOutcome::AlreadyGone,
            Outcome::Exited { after } => StopOutcome::Exited(*after),
            Outcome::Unkillable => StopOutcome::Unkillable,
            Outcome::Refused(r) => StopOutcome::Refused(*r),
            Outcome::Error(e) => StopOutcome::Error(e.clone()),
        };
        if let (Outcome::Refused(Refusal::UntrustedPidfile), false) = (&t.outcome, t.survivors.is_empty()) {
            self.detail = Some(skipped_detail(t));
        }
    }

    /// Every signal sent, in order.
    pub fn signals(&self) -> &[Signal] {
        self.terminate.as_ref().map(|t| t.signals.as_slice()).unwrap_or(&[])
    }
    /// The exit status (known only for the caller's own child).
    pub fn exit(&self) -> ExitStatus {
        self.terminate.as_ref().map(|t| t.exit).unwrap_or(ExitStatus::Unknown)
    }
}

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
    let retire = |check: &PidFileCheck| judged.retire(pid_file, check);
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
                report.pid_file_removed = retire(&check);
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
        Allows::Fail => return Err(unusable(pid_file, check.reason)),
        Allows::Nothing => return Ok(report),
        Allows::Leave => {
            report.outcome = StopOutcome::Foreign;
            return Ok(report);
        }
        Allows::Retire => {
            report.pid_file_removed = retire(&check);
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
            report.pid_file_removed = retire(&check);
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
        report.pid_file_removed = retire(&check);
    }
    report.terminate = Some(t);
    Ok(report)
}

/// The error [`stop_pid_file`] and [`pin_pid_file`] give for a record that cannot be judged at
/// all (`Malformed`: only `stop_pid_file`).
fn unusable(pid_file: &Path, reason: CheckReason) -> Error {
    match reason {
        CheckReason::Malformed => Error::at(ErrorKind::Malformed, pid_file, "content is not one pid from 1 to 4194304"),
        CheckReason::BadToken => Error::at(ErrorKind::Malformed, pid_file, "the token xattr is not a pidguard start token"),
        // A directory named as the pidfile is a mistake of the caller (bad input), not a planted
        // file; a symlink or FIFO there stays a refusal.
        CheckReason::NotRegular | CheckReason::Unreadable if crate::pidfile::is_directory_not_followed(pid_file) => {
            Error::at(ErrorKind::InvalidArgument, pid_file, "is a directory, not a pidfile")
        }
        CheckReason::NotRegular => Error::at(ErrorKind::Untrusted, pid_file, "not a regular file"),
        // A path refused by the unsafe-transition rule says which step; any other failure keeps
        // the kind's own text (the CLI asks the system for its errno).
        _ => match crate::pidfile::open_error(pid_file) {
            Some(e) if crate::sys::chase::is_unsafe_transition(&e) => Error::io_at(pid_file, "cannot be read", &e),
            _ => Error::at(ErrorKind::PermissionDenied, pid_file, "cannot be read"),
        },
    }
}

/// An abx-dl pidfile judged through its directory's descriptor: the directory is opened once,
/// the record is opened from it (`pidfile::retire::open_strict_in`), and a stale record is
/// retired by content through that same descriptor — never by a second lookup of the path,
/// which a user who swaps a directory for a symlink between the two calls could aim anywhere.
/// The owner and mode in [`PidFileCheck::owner`] are the `fstat` of the descriptor read.
struct Judged<'a> {
    dir: Option<(DirFd, &'a std::ffi::OsStr)>,
    check: PidFileCheck,
    pin: Option<ProcessRef>,
}

impl<'a> Judged<'a> {
    fn new(pid_file: &'a Path, recorded: Option<RecordedCommand<'_>>, tolerance: f64) -> Judged<'a> {
        let cmd = recorded.map_or(CmdRule::None, CmdRule::Command);
        match DirFd::parent_of(pid_file, crate::protect::walk()) {
            Ok((dir, name)) => {
                let (check, pin) = check_pinned_opened(crate::pidfile::retire::open_strict_in(&dir, name), cmd, tolerance);
                Judged { dir: Some((dir, name)), check, pin }
            }
            Err(e) => {
                let (check, pin) = check_pinned_opened(Err(e), cmd, tolerance);
                Judged { dir: None, check, pin }
            }
        }
    }

    /// Remove the record if it still holds what `check` judged (pid, mtime, token), from the
    /// directory it was judged in. Whether it was removed.
    fn retire(&self, pid_file: &Path, check: &PidFileCheck) -> bool {
        self.dir.as_ref().is_some_and(|(dir, name)| remove_if_unchanged_in(dir, name, pid_file, check))
    }
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

/// Stop a record's scope with `opts.schedule` ([`terminate_scopes`]) and set the report's
/// outcome. `main`: the recorded process, pinned, when it is alive; if it is no longer inside its
/// scope (root may move a process out of its cgroup) it is stopped with its group at the same
/// time, as a record without a scope is, and the report says so.
fn stop_scope(scope: &Scope, main: Option<ProcessRef>, pid: i32, opts: &StopOptions, report: &mut StopReport) -> TerminateReport {
    report.scope = scope.kind();
    let outside = main.filter(|h| !h.has_exited() && scope.lacks(h.pid()));
    let (mut t, other) = match outside {
        None => (terminate_scopes(&[(pid, scope)], &opts.schedule).pop(), None),
        Some(h) => {
            report.warning = Some(format!("pid {} had left its scope ({}): stopped with its process group as well", h.pid(), scope.kind()));
            let topts = TerminateOptions { schedule: opts.schedule.clone(), group: opts.group, reap: false };
            std::thread::scope(|s| {
                let sc = s.spawn(|| terminate_scopes(&[(pid, scope)], &opts.schedule).pop());
                let g = terminate(vec![h], &topts).pop();
                (sc.join().ok().flatten(), g)
            })
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

/// The detail of a group whose only survivors were skipped for their uid: their pids, and that
/// nothing was sent to them.
pub(crate) fn skipped_detail(t: &TerminateReport) -> String {
    let pids: Vec<String> = t.survivors.iter().map(|p| p.to_string()).collect();
    format!(
        "the group's survivor{} {} not signalled: {} uid is not the pidfile owner's (no signal reached {})",
        if pids.len() == 1 { "" } else { "s" },
        if pids.len() == 1 { format!("pid {} was", pids[0]) } else { format!("pids {} were", pids.join(", ")) },
        if pids.len() == 1 { "its" } else { "their" },
        if pids.len() == 1 { "it" } else { "them" },
    )
}
