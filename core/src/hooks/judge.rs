//! One hook judged (its pidfile and `.sh` read from the directory opened once) and, after the
//! batch's signalling, finished: retired by content, its logs read and its index lines written.

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use crate::identity::ProcessRef;
use crate::pidfile::cmd::{read_cmd_opened, Recorded};
use crate::pidfile::mtime::{check_pinned_kept, CheckReason, CmdRule, PidFileCheck};
use crate::ops::Allows;
use crate::pidfile::target::{pin_pidfile, scope_target, PidfileTarget, ScopeTarget};
use crate::signal::{ExitStatus, Outcome};

use super::outcome::{add_finalize_error, no_files, stem_with, CleanupOptions, HookOutcome, HookReport};

pub(super) struct Pending {
    pub(super) report: HookReport,
    pub(super) check: PidFileCheck,
    pub(super) handle_index: Option<usize>,
    /// The directory's shared list, set after the batch's termination.
    pub(super) output_files: Option<Arc<[String]>>,
    /// `(dev, inode)` of the directory the pidfile was judged in (opened once for the pidfile
    /// and its `.sh`); `None` when it could not be opened.
    pub(super) dir_id: Option<(u64, u64)>,
    /// `(dev, inode)` of the directory whose listing gave `output_files`.
    pub(super) listed_id: Option<(u64, u64)>,
    /// Where its scope is in the batch's scopes, when its record's scope is stopped.
    pub(super) scope_index: Option<usize>,
}

/// Check one hook's pidfile (with its `.sh`, read once: for the check and for the report's
/// `cmd`) and start its report. Both are opened from one descriptor of the hook's directory,
/// whose `(dev, inode)` is returned: what is read later (logs, listing) must come from that very
/// directory.
#[allow(clippy::type_complexity)]
pub(super) fn judge_hook(tree: &crate::sys::Tree, pid_file: &Path, opts: &CleanupOptions) -> (HookReport, PidFileCheck, Option<ProcessRef>, Option<(u64, u64)>) {
    let dir = pid_file.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir_fd = tree.dir(&dir);
    let dir_id = dir_fd.as_ref().ok().and_then(|d| d.id().ok());
    let (report, check, pin, _) = judge_in(dir_fd.as_ref(), dir, pid_file, opts, false);
    (report, check, pin, dir_id)
}

/// [`judge_hook`] in the hook's directory `dir` (its path), open as `dir_fd` (or why it could not
/// be opened). With `keep`, the pidfile's descriptor is handed back too (when it was a regular
/// file), for the record's retirement right after ([`Pending::finish_in`]).
#[allow(clippy::type_complexity)]
fn judge_in(
    dir_fd: std::result::Result<&crate::sys::DirFd, &std::io::Error>,
    dir: std::path::PathBuf,
    pid_file: &Path,
    opts: &CleanupOptions,
    keep: bool,
) -> (HookReport, PidFileCheck, Option<ProcessRef>, Option<std::fs::File>) {
    let stem = crate::pathtext::path_text(pid_file.file_stem().unwrap_or_default()).into_owned();
    let cmd_file = super::outcome::joined(&dir, &stem_with(pid_file, ".sh"));
    // Unreachable default: `cmd_file` ends with the name just joined.
    let cmd_name = cmd_file.file_name().unwrap_or_default();
    let open_in = |name: &std::ffi::OsStr| match dir_fd {
        Ok(d) => crate::pidfile::retire::open_strict_in(d, name),
        Err(e) => Err(e.raw_os_error().map_or_else(|| std::io::Error::new(e.kind(), e.to_string()), std::io::Error::from_raw_os_error)),
    };
    let (cmd_read, sh_owner) = read_cmd_opened(open_in(cmd_name), &cmd_file);
    let cmd_read = cmd_read.map(|r| r.map(|(text, argv)| Recorded { text, argv }));
    let opened = match pid_file.file_name() {
        Some(name) => open_in(name),
        None => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
    };
    let (check, pin, kept) = check_pinned_kept(opened, CmdRule::Loaded(&cmd_read, sh_owner), opts.tolerance, keep);
    // A `.sh` of another user than the record's (and not root) is not the hook's command: not
    // compared (see `cmd_file_is_foreign`), not reported.
    let foreign_sh = crate::pidfile::mtime::cmd_file_is_foreign(sh_owner, check.owner.map(|o| o.0));
    let mut notes = Vec::new();
    if foreign_sh {
        notes.push(format!(
            "{} is owned by uid {}, not by the pidfile's owner (uid {}) or root: ignored",
            cmd_file.display(),
            sh_owner.unwrap_or_default(),
            check.owner.map_or(0, |o| o.0)
        ));
    }
    let cmd = if foreign_sh { Vec::new() } else { cmd_read.ok().flatten().map(|r| r.argv).unwrap_or_default() };
    let report = HookReport {
        name: stem,
        dir,
        pid_file: pid_file.to_path_buf(),
        pid: check.pid,
        verdict: check.judgement.map(|j| j.verdict),
        verdict_reason: check.judgement.map(|j| j.reason),
        reason: check.reason,
        outcome: HookOutcome::Stale,
        signals: Vec::new(),
        exit_code: None,
        error: None,
        output_files: no_files(),
        cmd,
        unverified_leftovers: Vec::new(),
        started_at: check.mtime.and_then(crate::hooks::records::mtime_instant),
        ended_at: SystemTime::now(),
        pid_file_removed: false,
        elapsed: None,
        notes,
        scope: crate::identity::ScopeKind::Group,
    };
    (report, check, pin, kept)
}

/// What every hook of one cleanup shares while it is finished: the options, the index, whether
/// the default finalize runs, what is left of the cleanup's log budget (see
/// [`MAX_INDEX_LOG_BYTES`](super::MAX_INDEX_LOG_BYTES)), the process groups of the live
/// processes (read once, at the first stale record that needs them), how many pidfiles of one
/// directory may stay open from their judgement to their retirement, and the batch in which the
/// index records of the hooks finished during the walk wait.
pub(super) struct Finishing<'a> {
    pub(super) opts: &'a CleanupOptions,
    pub(super) index: Option<&'a super::Index>,
    pub(super) default_finalize: bool,
    pub(super) log_budget: std::sync::atomic::AtomicU64,
    pub(super) groups: std::sync::OnceLock<std::collections::HashMap<i32, Vec<i32>>>,
    /// The same, read once the batches have signalled (their stale records' leftovers are
    /// looked up after the signals, as before the walk finished any hook).
    pub(super) groups_after_signals: std::sync::OnceLock<std::collections::HashMap<i32, Vec<i32>>>,
    pub(super) keep_open: usize,
    /// Where the hooks finished during the walk wait to be appended to the index together
    /// (with an index and the default finalize).
    pub(super) batch: Option<super::finalize::Batch<'a>>,
}

/// The process groups of the live processes, read once into `cell` (one pass over `/proc`, not
/// one per record: at 10,000 stale records the per-record scans were ~88% of the cleanup).
fn groups(cell: &std::sync::OnceLock<std::collections::HashMap<i32, Vec<i32>>>) -> &std::collections::HashMap<i32, Vec<i32>> {
    cell.get_or_init(|| crate::sys::procfs::group_table().unwrap_or_default())
}

/// The hooks of a directory without subdirectories, judged and finished while the walk holds
/// the descriptor it listed the directory through (`fd`, at `dir`; `hooks` sorted; `files` its
/// shared `output_files`): the one descriptor is the directory listed, judged in, and retired and
/// finalized in, so no directory is opened again or compared. Every hook is judged first; when
/// none of them is to be signalled (no pin, no scope to stop: stale, foreign, unreadable,
/// unverified or refused records), they are finished here, each record retired through the
/// descriptor it was judged through (see `retire::claim_judged`); their reports (or those of
/// the batch of index records their own filled, see [`Batch`](super::finalize::Batch)).
/// Otherwise (or when the identity of one could not be read for want of descriptors) `Err(fd)`,
/// the descriptor handed back: the directory is left to the cleanup's batches, which signal,
/// list it again and finish its hooks.
pub(super) fn finish_leaf(
    dir: &Path,
    fd: crate::sys::DirFd,
    hooks: &[std::path::PathBuf],
    files: Arc<[String]>,
    pool: &super::listing::LazyPool<'_>,
    cx: &Finishing<'_>,
) -> std::result::Result<Vec<HookReport>, crate::sys::DirFd> {
    let keep = hooks.len() <= cx.keep_open;
    // In parallel only where the walk is not already: many hooks in the root directory, or in a
    // subtree walked on the calling thread.
    let pool = if rayon::current_thread_index().is_some() { None } else { pool.get(hooks.len()) };
    let judge = |pid_file: &std::path::PathBuf| -> Option<(Pending, Option<std::fs::File>)> {
        let (report, check, pin, kept) = judge_in(Ok(&fd), dir.to_path_buf(), pid_file, cx.opts, keep);
        if matches!(check.judgement.and_then(|j| j.reason.errno()), Some(libc::EMFILE) | Some(libc::ENFILE)) {
            return None;
        }
        let mut p = Pending { report, check, handle_index: None, output_files: Some(files.clone()), dir_id: None, listed_id: None, scope_index: None };
        let (mut handles, mut scopes) = (Vec::new(), Vec::new());
        p.decide(pin, &mut handles, &mut scopes);
        (handles.is_empty() && scopes.is_empty()).then_some((p, kept))
    };
    let finish_with = |fd: &Arc<crate::sys::DirFd>, (p, kept): (Pending, Option<std::fs::File>)| {
        crate::sys::fault::point(crate::sys::fault::Point::BeforeHookFinish);
        p.finish_in(Some(fd), kept, Some(fd), &cx.groups, cx)
    };
    // Most hooks wait in the cleanup's batch and give no report here: nothing is allocated
    // for them. One hook (abx-dl's usual directory) is judged and finished without a vector.
    let mut out = Vec::new();
    if let [only] = hooks {
        let Some(j) = judge(only) else { return Err(fd) };
        finish_with(&Arc::new(fd), j).add_to(&mut out);
        return Ok(out);
    }
    // The first hook to be signalled (or unreadable for want of descriptors) ends the
    // judging: the directory goes to the batches, and what was judged is dropped.
    let judged: Option<Vec<(Pending, Option<std::fs::File>)>> = match pool {
        Some(p) if hooks.len() > 1 => {
            use rayon::prelude::*;
            p.install(|| hooks.par_iter().with_max_len(1).map(judge).collect())
        }
        // Sized once (a collect into an `Option` starts at 4 records of ~700 bytes).
        _ => {
            let mut all = Vec::with_capacity(hooks.len());
            hooks.iter().map(judge).try_for_each(|j| j.map(|j| all.push(j))).map(|()| all)
        }
    };
    let Some(judged) = judged else { return Err(fd) };
    let fd = Arc::new(fd);
    let finish = |j| finish_with(&fd, j);
    match pool {
        Some(p) if judged.len() > 1 => {
            use rayon::prelude::*;
            let done: Vec<Finished> = p.install(|| judged.into_par_iter().with_max_len(1).map(finish).collect());
            done.into_iter().for_each(|d| d.add_to(&mut out));
        }
        _ => judged.into_iter().for_each(|j| finish(j).add_to(&mut out)),
    }
    Ok(out)
}

/// What finishing one hook gives ([`Pending::finish_in`]): its report, or those of the batch
/// its records completed (none while they wait). Not boxed: a box would be the allocation per
/// hook this avoids.
#[allow(clippy::large_enum_variant)]
pub(super) enum Finished {
    One(HookReport),
    Many(Vec<HookReport>),
}

impl Finished {
    /// Add the reports to `out` (a batch's vector is taken over when `out` is empty).
    pub(super) fn add_to(self, out: &mut Vec<HookReport>) {
        match self {
            Finished::One(r) => out.push(r),
            Finished::Many(v) if out.is_empty() => *out = v,
            Finished::Many(v) => out.extend(v),
        }
    }
}


/// Keep everything of a hook that cannot be finalized from what was read in the directory it
/// was judged in (the directory was replaced, a log could not be read): `Unverified`, no
/// `output_files`, `why` in its error (after any error already there).
pub(super) fn keep_all(report: &mut HookReport, why: &str) {
    report.outcome = HookOutcome::Unverified;
    report.output_files = no_files();
    let why = format!("{why}: pidfile and logs kept, no index records");
    report.error = Some(match report.error.take() {
        Some(prev) => format!("{prev}; {why}"),
        None => why,
    });
}

/// The hook's directory opened again by its name, if it is still the directory the pidfile was
/// judged in (`judged`, its `(dev, inode)` then); else why not.
pub(super) fn reopen_judged(tree: &crate::sys::Tree, dir: &Path, judged: Option<(u64, u64)>) -> std::result::Result<crate::sys::DirFd, String> {
    let judged = judged.ok_or_else(|| "the hook's directory could not be opened when its pidfile was judged".to_string())?;
    let d = tree.dir(dir).map_err(|e| format!("the hook's directory cannot be opened again: {e}"))?;
    match d.id() {
        Ok(id) if id == judged => Ok(d),
        Ok(_) => Err("the hook's directory was replaced (renamed or exchanged) since its pidfile was judged".to_string()),
        Err(e) => Err(format!("the hook's directory cannot be examined again: {e}")),
    }
}

pub(super) fn unverified(report: &mut HookReport, j: Option<crate::identity::Judgement>) {
    report.outcome = HookOutcome::Unverified;
    report.error = Some(match j {
        Some(j) => format!("identity not established: {j}; pidfile and logs kept, nothing signalled"),
        None => "identity not established; pidfile and logs kept, nothing signalled".to_string(),
    });
}

impl Pending {
    /// Decide what the checked record allows; a pinned hook joins this batch's `handles`.
    pub(super) fn decide(&mut self, pin: Option<ProcessRef>, handles: &mut Vec<ProcessRef>, scopes: &mut Vec<(i32, crate::identity::Scope)>) {
        let (report, check) = (&mut self.report, &self.check);
        // A record with a scope (a hook pidguard started): its whole tree is the target, even
        // when the recorded process itself is gone (a daemon that double-forked).
        let pin = match scope_target(check) {
            ScopeTarget::Keep(r, why, kind) => {
                report.scope = kind;
                if r == crate::Refusal::Unverifiable {
                    report.outcome = HookOutcome::Unverified;
                    report.error = Some(format!("{why}; pidfile and logs kept, nothing signalled"));
                } else {
                    report.outcome = HookOutcome::Refused(r);
                    report.error = Some(format!("refused to signal: {r}: {why}"));
                }
                return;
            }
            ScopeTarget::Open(scope) => {
                report.scope = scope.kind();
                report.notes.extend(scope.nested_note());
                // The recorded process, alive but no longer in its scope (root may move a
                // process out of its cgroup): stopped with its group at the same time, as a
                // record without a scope is, and said.
                if crate::ops::judge(check.reason) == Allows::Act {
                    if let PidfileTarget::Pinned(h) = pin_pidfile(check, pin) {
                        if !h.has_exited() && scope.lacks(h.pid()) {
                            report.notes.push(format!("pid {} had left its scope ({}): stopped with its process group as well", h.pid(), scope.kind()));
                            self.handle_index = Some(handles.len());
                            handles.push(h);
                        }
                    }
                }
                self.scope_index = Some(scopes.len());
                scopes.push((check.pid.unwrap_or(0), scope));
                return;
            }
            ScopeTarget::Absent(note) => {
                report.notes.extend(note);
                pin
            }
        };
        // What the record allows is the table's (`crate::ops::judge`); the wording is said here.
        match crate::ops::judge(check.reason) {
            Allows::Leave => report.outcome = HookOutcome::Foreign,
            Allows::Fail => report.outcome = HookOutcome::Unreadable,
            // A guard record matched by the pattern is not this format's to judge: left alone and
            // reported — removing it could end a live holder's single-instance guard. Other
            // content that is not one pid from 1 to 4194304 names no process: stale, as abx-dl treats it.
            Allows::Retire if check.reason == CheckReason::Malformed && crate::pidfile::Format::of(&report.pid_file) == crate::pidfile::Format::Guard => {
                report.outcome = HookOutcome::Unreadable;
                report.error = Some("a guard record, not an abx-dl pidfile: left alone".to_string());
            }
            // Stale only on proof: gone, reused, or a token-less record whose mtime or command
            // was compared against a process whose identity was read (or no file any more).
            Allows::Retire | Allows::Nothing => report.outcome = HookOutcome::Stale,
            // A token xattr that is not a token, an identity that could not be read: keep.
            Allows::Keep(_) => unverified(report, check.judgement),
            Allows::Act | Allows::ActLeniently => match pin_pidfile(check, pin) {
                PidfileTarget::Pinned(h) => {
                    self.handle_index = Some(handles.len());
                    handles.push(h);
                }
                PidfileTarget::Refused(r, detail) => {
                    report.outcome = HookOutcome::Refused(r);
                    report.error = Some(match detail {
                        Some(d) => format!("refused to signal: {r}: {d}"),
                        None => format!("refused to signal: {r}"),
                    });
                }
                PidfileTarget::Foreign => report.outcome = HookOutcome::Foreign,
                PidfileTarget::Unverifiable(j) => unverified(report, j.or(check.judgement)),
                PidfileTarget::Stale(reason) => {
                    report.reason = reason;
                    report.outcome = HookOutcome::Stale;
                }
            },
        }
    }

    /// Take the termination result, retire the record when that is proven right, and run the
    /// default finalize when `cx.default_finalize` (a caller's callback runs afterwards, on the
    /// calling thread).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish(
        self,
        tree: &crate::sys::Tree,
        results: &[crate::signal::TerminateReport],
        scope_results: &[crate::signal::TerminateReport],
        cx: &Finishing<'_>,
    ) -> HookReport {
        let Pending { mut report, check, handle_index, output_files, dir_id, listed_id, scope_index } = self;
        crate::sys::fault::point(crate::sys::fault::Point::BeforeHookFinish);
        // The scope's report decides, unless the scope stopped and the recorded process that
        // had left it did not, or the scope was found empty and that process was signalled.
        let chosen = match (scope_index.map(|i| &scope_results[i]), handle_index.map(|i| &results[i])) {
            (Some(sc), Some(g)) if crate::signal::outside_decides(&sc.outcome, &g.outcome) => Some(g),
            (Some(sc), _) => Some(sc),
            (None, g) => g,
        };
        if let Some(r) = chosen {
            report.signals = r.signals.clone();
            report.elapsed = Some(r.elapsed);
            report.exit_code = match r.exit {
                ExitStatus::Code(c) => Some(c),
                ExitStatus::Signaled(s) => Some(128 + s),
                _ => None,
            };
            report.outcome = match &r.outcome {
                Outcome::AlreadyGone => HookOutcome::AlreadyGone,
                Outcome::Exited { after } => HookOutcome::Exited(*after),
                Outcome::Unkillable => HookOutcome::Unkillable,
                Outcome::Refused(x) => HookOutcome::Refused(*x),
                Outcome::Error(e) => {
                    report.error = Some(e.clone());
                    HookOutcome::Error
                }
            };
            if report.outcome == HookOutcome::Unkillable {
                report.error = Some("Process unkillable".to_string());
            }
            if let (Outcome::Refused(crate::Refusal::UntrustedPidfile), false) = (&r.outcome, r.survivors.is_empty()) {
                report.error = Some(format!("refused to signal: {}", crate::stop::skipped_detail(r)));
            }
        }
        let judged = !matches!(report.outcome, HookOutcome::Foreign | HookOutcome::Unreadable | HookOutcome::Unverified);
        // A record that vanished with its directory before it was judged: nothing to remove or
        // read (a directory that cannot be opened otherwise made the pidfile unreadable).
        if judged && dir_id.is_none() && check.reason == CheckReason::Missing {
            report.notes.push("the hook's directory is gone: nothing removed or finalized".to_string());
            report.ended_at = SystemTime::now();
            return report;
        }
        // The listing that gives `output_files` must be of the directory the pidfile was judged in.
        if judged && (listed_id.is_none() || listed_id != dir_id) {
            keep_all(&mut report, "the hook's directory was replaced between its listing and the judgement of its pidfile");
            report.ended_at = SystemTime::now();
            return report;
        }
        // The hook's directory, opened once for everything below (the record's removal, the
        // logs' reads and unlinks): each of those then resolves one name from it. It must be the
        // very directory the pidfile was judged in: a user who may write its parent can rename
        // or exchange it with another (RENAME_EXCHANGE needs no right on the directory itself).
        let finalizes = cx.default_finalize && judged;
        let removes = matches!(report.outcome, HookOutcome::Stale | HookOutcome::AlreadyGone | HookOutcome::Exited(_));
        let dir = match (removes || finalizes).then(|| reopen_judged(tree, &report.dir, dir_id)) {
            Some(Err(why)) => {
                keep_all(&mut report, &why);
                report.ended_at = SystemTime::now();
                return report;
            }
            Some(Ok(d)) => Some(d),
            None => None,
        };
        match (Pending { report, check, handle_index, output_files, dir_id, listed_id, scope_index }).finish_in(dir.as_ref(), None, None, &cx.groups_after_signals, cx) {
            Finished::One(r) => r,
            // Unreachable: a hook finished without a held directory is never batched.
            Finished::Many(mut v) => v.pop().expect("one report"),
        }
    }

    /// The rest of [`Self::finish`], in the hook's directory `dir` (the one its pidfile was
    /// judged in; needed only when the record is retired or finalized): read the logs, retire
    /// the record, finalize. `kept` is the pidfile's descriptor from the judgement when it was
    /// kept open (a directory finished during the walk, [`finish_leaf`]): the record is then
    /// retired through it without being opened and compared again (`retire::claim_judged`), and
    /// with `held` (that directory, shared) and an index, its records wait in the cleanup's
    /// [`Batch`](super::finalize::Batch) to be appended with others'. A stale record's
    /// leftovers are looked up in `leftover_groups` (read at the first need). The reports: this
    /// hook's, or those of the batch it filled (none while it waits).
    fn finish_in(
        self,
        dir: Option<&crate::sys::DirFd>,
        kept: Option<std::fs::File>,
        held: Option<&Arc<crate::sys::DirFd>>,
        leftover_groups: &std::sync::OnceLock<std::collections::HashMap<i32, Vec<i32>>>,
        cx: &Finishing<'_>,
    ) -> Finished {
        let Pending { mut report, check, output_files, .. } = self;
        let judged = !matches!(report.outcome, HookOutcome::Foreign | HookOutcome::Unreadable | HookOutcome::Unverified);
        let finalizes = cx.default_finalize && judged;
        let removes = matches!(report.outcome, HookOutcome::Stale | HookOutcome::AlreadyGone | HookOutcome::Exited(_));
        let dir = dir.filter(|_| removes || finalizes);
        // The logs are read before the record is retired: a log that could not be read (out of
        // descriptors, EACCES, EIO) is not an empty log, and then the record stays with them.
        let logs = match (dir, finalizes) {
            (Some(d), true) => match super::finalize::read_logs(&report, d, &cx.log_budget) {
                Ok(l) => Some(l),
                Err(why) => {
                    keep_all(&mut report, &why);
                    report.ended_at = SystemTime::now();
                    return Finished::One(report);
                }
            },
            _ => None,
        };
        // The record is retired by claiming it (renamed aside by content, `pidfile::retire`):
        // of any number of cleanups of this tree, the one whose claim holds retires and
        // finalizes the hook; the others skip it (each hook is indexed once). The claim is
        // committed (the pidfile unlinked) only after the index records are appended, and given
        // back when they could not be: a failed finalize leaves the pidfile and the logs.
        let pid_file = report.pid_file.clone();
        let mut claim = None;
        match &report.outcome {
            HookOutcome::Stale | HookOutcome::AlreadyGone | HookOutcome::Exited(_) => {
                let got = match (dir, pid_file.file_name(), &kept) {
                    (Some(d), Some(name), Some(f)) => {
                        use crate::pidfile::unchanged::{same_inode_and_mtime, unchanged_content};
                        crate::pidfile::retire::claim_judged(d, name, &pid_file, f, |st| same_inode_and_mtime(st, &check), |f, st| unchanged_content(f, st, &check))
                    }
                    (Some(d), Some(name), _) => crate::pidfile::retire::claim_by_content(
                        d,
                        name,
                        &pid_file,
                        |f| crate::pidfile::unchanged::unchanged_record(f, &check),
                        false,
                    ),
                    _ => Ok(None),
                };
                // A failed step (a read-only directory: EROFS, EACCES) is said as it failed.
                let failed = match got {
                    Ok(c) => {
                        claim = c;
                        None
                    }
                    Err((step, e)) => Some(format!("the pidfile was not retired: {step} failed: {e}; not finalized here")),
                };
                if claim.is_none() {
                    report.notes.push(failed.unwrap_or_else(|| NOT_CLAIMED.to_string()));
                }
            }
            HookOutcome::Refused(r) if report.error.is_none() => report.error = Some(format!("refused to signal: {r}")),
            _ => {}
        }
        drop(kept);
        if report.outcome == HookOutcome::Stale {
            if let Some(pid) = report.pid {
                if pid > 1 {
                    report.unverified_leftovers = groups(leftover_groups).get(&pid).cloned().unwrap_or_default();
                }
            }
        }
        if let Some(list) = output_files {
            report.output_files = list;
        }
        report.ended_at = SystemTime::now();
        if removes && claim.is_none() {
            // Another cleanup retired it (and finalizes it), or a new record took its name.
            return Finished::One(report);
        }
        match (dir, logs) {
            (Some(_), Some(logs)) if held.is_some() && cx.batch.is_some() => {
                // Unreachable: both checked just above.
                let (held, batch) = (held.expect("held"), cx.batch.as_ref().expect("batch"));
                return Finished::Many(batch.add(report, logs, held.clone(), claim.map(crate::pidfile::retire::Claim::detach)));
            }
            (Some(d), Some(logs)) => match super::finalize::default_finalize(&report, logs, d, cx.index, cx.opts.is_tty, claim) {
                Ok(done) => {
                    report.notes.extend(done.notes);
                    report.pid_file_removed = done.removed;
                }
                Err(e) => add_finalize_error(&mut report, e.to_string()),
            },
            _ => {
                report.pid_file_removed = match claim {
                    Some(c) => c.commit().is_ok(),
                    None => false,
                }
            }
        }
        Finished::One(report)
    }
}

/// The note of a hook whose record this cleanup judged stale or stopped, but could not retire:
/// it was no longer the file judged (another cleanup retired it first and finalizes it, or a new
/// record took its name). (A removal step that failed is said with its own error instead.)
/// Nothing is finalized or removed for it here.
pub(crate) const NOT_CLAIMED: &str =
    "the pidfile was not retired by this cleanup (another cleanup retired it first, or it was rewritten): not finalized here";
