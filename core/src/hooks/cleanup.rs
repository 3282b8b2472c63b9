use std::fmt;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::error::{Error, ErrorKind, Result};
use crate::identity::{ProcessRef, Reason, Verdict};
use crate::pidfile::cmd::{read_cmd_opened, Recorded};
use crate::pidfile::mtime::{check_pinned_opened, CheckReason, CmdRule, PidFileCheck, DEFAULT_TOLERANCE};
use crate::pidfile::target::{pin_pidfile, PidfileTarget};
use crate::signal::{terminate, ExitStatus, Outcome, Refusal, Schedule, Signal, TerminateOptions};
use crate::sys::procfs;

/// Options of [`cleanup_background_hooks`]; the defaults are the seed's.
#[derive(Clone, Debug)]
pub struct CleanupOptions {
    /// Where the default finalize appends the `Process` and `ArchiveResult` JSON lines.
    pub index_path: Option<PathBuf>,
    /// When false, the default finalize also prints the two lines to stdout.
    pub is_tty: bool,
    /// The escalation schedule, default `TERM/2/KILL/1`.
    pub schedule: Schedule,
    /// Glob (`*`, `?`) matched against file names under the directory, default `on_*.pid`.
    pub pattern: String,
    /// Tolerance of the mtime rule for token-less pidfiles, seconds (default 5.0).
    pub tolerance: f64,
    /// Skip the default finalize (no index lines, logs kept); `finalize` callbacks still run.
    pub no_finalize: bool,
}

impl Default for CleanupOptions {
    fn default() -> Self {
        CleanupOptions {
            index_path: None,
            is_tty: false,
            schedule: Schedule::default(),
            pattern: "on_*.pid".to_string(),
            tolerance: DEFAULT_TOLERANCE,
            no_finalize: false,
        }
    }
}

/// What cleanup did with one hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookOutcome {
    /// The record was stale (gone, reused, skewed, malformed): pidfile removed, nothing signalled.
    Stale,
    /// Another machine's or PID namespace's record: left alone, not finalized.
    Foreign,
    /// The pidfile could not be read (not a regular file, no permission): left alone.
    Unreadable,
    /// The hook (and its group) had already exited when cleanup looked.
    AlreadyGone,
    /// The hook's group exited after this signal.
    Exited(Signal),
    /// Still alive after the whole schedule: pidfile kept, finalized as failed.
    Unkillable,
    /// Not signalled: a safety rule refused it; pidfile kept.
    Refused(Refusal),
    /// Signalling failed; pidfile kept.
    Error,
    /// The live identity could not be read (`EMFILE`, `EACCES`, a `/proc` mounted `hidepid`,
    /// an unreadable command line or `.sh`): nothing was signalled, and the pidfile and the logs
    /// are kept, with no index records — a failed read is not a fact about the hook.
    ///
    /// Also a hook whose directory is no longer the one its pidfile was judged in (renamed or
    /// exchanged meanwhile: `(dev, inode)` differ), could not be opened again, or was listed as
    /// another directory: nothing is read, removed or written there, and its `output_files` are
    /// empty. Such a hook may have been signalled before (see `signals`); `error` says why.
    Unverified,
}

impl HookOutcome {
    /// The signal after which the target exited, for the exited outcome.
    pub fn after(&self) -> Option<Signal> {
        match self {
            HookOutcome::Exited(s) => Some(*s),
            _ => None,
        }
    }

    /// Why signalling was refused, for the refused outcome.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            HookOutcome::Refused(r) => Some(*r),
            _ => None,
        }
    }

    /// A stable kebab-case slug.
    pub fn as_str(&self) -> &'static str {
        match self {
            HookOutcome::Stale => "stale",
            HookOutcome::Foreign => "foreign",
            HookOutcome::Unreadable => "unreadable",
            HookOutcome::AlreadyGone => "already-gone",
            HookOutcome::Exited(_) => "exited",
            HookOutcome::Unkillable => "unkillable",
            HookOutcome::Refused(_) => "refused",
            HookOutcome::Error => "error",
            HookOutcome::Unverified => "unverified",
        }
    }
    /// Whether the hook is finalized as succeeded.
    pub fn succeeded(&self) -> bool {
        matches!(self, HookOutcome::Stale | HookOutcome::AlreadyGone | HookOutcome::Exited(_))
    }
}

impl fmt::Display for HookOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HookOutcome::Exited(s) => write!(f, "exited after {s}"),
            HookOutcome::Refused(r) => write!(f, "refused ({r})"),
            o => f.write_str(o.as_str()),
        }
    }
}

/// The report for one hook.
#[derive(Clone, Debug)]
pub struct HookReport {
    /// The hook's basename (`on_Snapshot__20_x.bg`), in the lossless
    /// [`path_text`](crate::report::path_text) form (a name that is not UTF-8 or holds a
    /// backslash is escaped there).
    pub name: String,
    /// The directory holding its files.
    pub dir: PathBuf,
    /// Its pidfile.
    pub pid_file: PathBuf,
    /// The recorded pid, when the file parsed.
    pub pid: Option<i32>,
    /// The identity verdict, when the process was judged.
    pub verdict: Option<Verdict>,
    /// Why that verdict (`start-ticks-differ`, `pidfs-inode-differs`, `zombie`, …).
    pub verdict_reason: Option<Reason>,
    /// The pidfile check's reason (`valid`, `gone`, `mtime-skew`, …).
    pub reason: CheckReason,
    /// What cleanup did.
    pub outcome: HookOutcome,
    /// Every signal sent, in order.
    pub signals: Vec<Signal>,
    /// The exit code when known (the caller's own child): the code, or 128 + signal.
    pub exit_code: Option<i32>,
    /// The error, for failed hooks (`"Process unkillable"`, a refusal, a finalize failure).
    pub error: Option<String>,
    /// Files under `dir`, relative to it, in the lossless
    /// [`path_text`](crate::report::path_text) form, sorted: everything but the four files (`.pid`,
    /// `.sh`, `.stdout.log`, `.stderr.log`) of every hook the cleanup found and pidguard's own
    /// transient files. One list per directory, listed once per cleanup (again after its hooks
    /// were signalled) and shared by the reports of the hooks in it.
    pub output_files: Arc<[String]>,
    /// The argv recorded in the `.sh` file, when readable.
    pub cmd: Vec<String>,
    /// Live processes whose process group is the recorded pid of a stale record: listed,
    /// never signalled (they cannot be proven to be the hook's).
    pub unverified_leftovers: Vec<i32>,
    /// When the hook started (the pidfile's mtime), when known.
    pub started_at: Option<SystemTime>,
    /// When cleanup finished with it.
    pub ended_at: SystemTime,
    /// Whether the pidfile was removed.
    pub pid_file_removed: bool,
    /// What is worth knowing and is not an error: a log cut at
    /// [`MAX_LOG_BYTES`](super::MAX_LOG_BYTES) or at the cleanup's
    /// [`MAX_INDEX_LOG_BYTES`](super::MAX_INDEX_LOG_BYTES), a planted symlink or FIFO where a
    /// log belongs (not read).
    pub notes: Vec<String>,
    /// Time from the start of the cleanup to this hook's outcome, when it was signalled or
    /// waited for.
    pub elapsed: Option<std::time::Duration>,
}

impl HookReport {
    /// Whether the hook is finalized as succeeded.
    pub fn succeeded(&self) -> bool {
        self.outcome.succeeded() && self.error.is_none()
    }
}

struct Pending {
    report: HookReport,
    check: PidFileCheck,
    handle_index: Option<usize>,
    /// The directory's shared list, set after the batch's termination.
    output_files: Option<Arc<[String]>>,
    /// `(dev, inode)` of the directory the pidfile was judged in (opened once for the pidfile
    /// and its `.sh`); `None` when it could not be opened.
    dir_id: Option<(u64, u64)>,
    /// `(dev, inode)` of the directory whose listing gave `output_files`.
    listed_id: Option<(u64, u64)>,
}

/// The path to open the index at: spelled under `output_dir` as the caller spelled it, when the
/// index lies beneath it, so that it is opened through the cleanup's scope (no symlink below the
/// output directory, no escape) however the two were spelled (`./snap` and `snap/sub/i.jsonl`,
/// one absolute and one relative). Beneath means: lexically (both made absolute against the
/// current directory, `.` dropped, no `..` after the directory's part) or, when both exist,
/// their canonical forms (the index's directory canonicalised). Otherwise `index` as given:
/// outside the tree it is opened as every path is (walked with the no-unsafe-transition rule
/// for a privileged caller: see `sys::open_raw`).
fn index_beneath(output_dir: &Path, index: &Path) -> PathBuf {
    use std::path::Component;
    let absolute = |p: &Path| -> Option<PathBuf> {
        let p = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().ok()?.join(p) };
        Some(p.components().filter(|c| !matches!(c, Component::CurDir)).collect())
    };
    let beneath = |dir: &Path, file: &Path| -> Option<PathBuf> {
        let rel = file.strip_prefix(dir).ok()?;
        (!rel.as_os_str().is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)))).then(|| output_dir.join(rel))
    };
    if let (Some(d), Some(i)) = (absolute(output_dir), absolute(index)) {
        if let Some(p) = beneath(&d, &i) {
            return p;
        }
    }
    let (Some(name), Some(parent)) = (index.file_name(), index.parent()) else { return index.to_path_buf() };
    let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
    if let (Ok(d), Ok(p)) = (std::fs::canonicalize(output_dir), std::fs::canonicalize(parent)) {
        if let Some(p) = beneath(&d, &p.join(name)) {
            return p;
        }
    }
    index.to_path_buf()
}

/// Remove the pidfile `name` from the open directory `dir` — the directory it was judged in —
/// only if it still is the file that was judged: same content (the pid), same mtime and same
/// token xattr, so that a record rewritten meanwhile by a new spawn survives (`path` is its
/// path, for messages). Pidfile's one remove-by-content (`pidfile::retire`): the file is
/// compared, renamed aside to a private name, and compared again there — it must be the very
/// inode compared first, still unchanged — before it is unlinked. If the name meanwhile held
/// another file, that file is put back with `link(2)`, which never overwrites a record created
/// at the name in between. (Unlinking by name after the compare would delete a record renamed
/// into place in between; looking the path up again would let a user who swapped a directory
/// for a symlink aim the removal anywhere.) Any failure leaves the record (`false`).
pub(crate) fn remove_if_unchanged_in(dir: &crate::sys::DirFd, name: &std::ffi::OsStr, path: &Path, check: &PidFileCheck) -> bool {
    crate::pidfile::retire::remove_by_content(dir, name, path, |f| unchanged_record(f, check), false).unwrap_or(false)
}

/// `(dev, inode)` of the open record `f` when it is a regular file that still holds what
/// `check` judged: the same pid, mtime and token (`fstat`, one `pread`, `fgetxattr`).
fn unchanged_record(f: &fs::File, check: &PidFileCheck) -> Option<(u64, u64)> {
    use std::os::fd::AsFd;
    let m = f.metadata().ok()?;
    let mtime = m.mtime() as f64 + m.mtime_nsec() as f64 * 1e-9;
    if !m.is_file() || check.mtime != Some(mtime) {
        return None;
    }
    let content = crate::pidfile::read_bounded(f, m.len(), 4097).ok()?;
    if crate::pidfile::mtime::parse_pid_content(&content) != check.pid {
        return None;
    }
    let token = match crate::sys::fgetxattr(f.as_fd(), crate::pidfile::mtime::TOKEN_XATTR) {
        Ok(Some(raw)) => std::str::from_utf8(&raw).ok().and_then(|s| s.parse::<crate::identity::StartToken>().ok()),
        _ => None,
    };
    if token != check.token {
        return None;
    }
    Some((m.dev(), m.ino()))
}

/// Stop every background hook under `output_dir` that is provably still itself, and drop
/// stale records:
///
/// 1. find files matching `opts.pattern` (`on_*.pid`) recursively;
/// 2. [`check_pid_file`](crate::check_pid_file) each with its `<name>.sh`: a foreign record is left alone; an invalid
///    one is stale: removed (only if unchanged), nothing signalled, finalized as succeeded, and
///    live processes still in a group with its pid are listed as unverified leftovers; a hook
///    leader that is a zombie with a matching identity has its group (which the zombie pins)
///    terminated;
/// 3. valid hooks are pinned, re-checked against the pinned process, and terminated with
///    their process groups, all in parallel. A pidfile owned by another uid aims only at that
///    uid's processes (others are `Refused`, `untrusted-pidfile`, record kept); a
///    world-writable one — or a group-writable one when the caller is privileged — at none;
/// 4. each hook is finalized: by `finalize` when given (its error goes into the report), else
///    by abx-dl's finalize (the `Process` and `ArchiveResult` lines; unless `opts.no_finalize`).
///
/// The logs are read without following symlinks or blocking on FIFOs, at most
/// [`MAX_LOG_BYTES`](super::MAX_LOG_BYTES) each and
/// [`MAX_INDEX_LOG_BYTES`](super::MAX_INDEX_LOG_BYTES) for the whole cleanup (see
/// [`HookReport::notes`]), before the record
/// is retired, from the directory the pidfile was judged in. A log that could not be read
/// (`EMFILE`, `ENFILE`, `EACCES`, `EIO`), or a hook directory that is no longer the one judged
/// (renamed or exchanged meanwhile), leaves the hook [`HookOutcome::Unverified`]: record and
/// logs kept, no index records, the reason in its `error`. A symlink, FIFO or socket where a log
/// belongs is the hook's user's doing, not a failed read: noted, not read, and the hook is
/// finalized.
///
/// Cost and order: each directory is listed once (the walk's listing also gives the hooks'
/// `output_files`; a directory whose hook was signalled is listed once more, after the
/// signalling), and a cleanup of [`PARALLEL_MIN_HOOKS`] hooks or more judges, retires and
/// finalizes them on a small private thread pool (at most [`MAX_THREADS`], no more than the
/// machine's cores) while the signalling of each batch stays one poll loop on the calling
/// thread. Each hook's two index lines are appended in one `write(2)` (`O_APPEND`), so lines of
/// different hooks never interleave, whole or not at all (a short write on a full disk is cut
/// back to the last whole line). A stale or stopped hook is first *claimed*: its pidfile is
/// renamed aside by content (`pidfile::retire`); of several cleanups of one tree at once only
/// the one whose claim holds finalizes it (the others say so in their notes and write nothing
/// for it), and the claimed pidfile is unlinked only after the index lines were appended — on
/// a failed append it is given its name back and the logs stay, for the next cleanup; on a pool the index (and stdout when `is_tty` is false)
/// receives hooks in the order they finish, not sorted. A `finalize` callback is always called
/// on the calling thread, in pidfile-path order. The returned reports are sorted by pidfile
/// path. The library never changes process limits: it works within the soft `RLIMIT_NOFILE`
/// it finds (the `pidguard` command raises it to the hard limit at start).
///
/// Errors (before any hook is touched): `InvalidArgument` for a tolerance that is not finite
/// seconds ≥ 0 or a pattern that is empty or holds `/`, and when `output_dir` is not a
/// directory; `Untrusted` when `index_path` names a symlink or anything but a regular file; `NotFound`, `PermissionDenied`,
/// `Io` when it cannot be read. Every per-hook problem is in its report.
pub fn cleanup_background_hooks(
    output_dir: &Path,
    opts: &CleanupOptions,
    mut finalize: Option<&mut dyn FnMut(&HookReport) -> std::result::Result<(), String>>,
) -> Result<Vec<HookReport>> {
    // Bad options are refused before anything is read, removed or signalled.
    if !(opts.tolerance.is_finite() && opts.tolerance >= 0.0) {
        return Err(Error::invalid(format!("tolerance must be finite seconds >= 0, not {}", opts.tolerance)));
    }
    if opts.pattern.is_empty() || opts.pattern.contains(['/', '\0']) {
        return Err(Error::invalid(format!("pattern {:?} must be a non-empty file-name glob without '/'", opts.pattern)));
    }
    let meta = fs::metadata(output_dir).map_err(|e| Error::io_at(output_dir, "stat", &e))?;
    if !meta.is_dir() {
        return Err(Error::at(ErrorKind::InvalidArgument, output_dir, "not a directory"));
    }
    // From here on every path under `output_dir` is resolved beneath it, with no symlink on
    // the way: a directory of the tree swapped for a symlink cannot steer this cleanup into
    // another tree.
    let _beneath = crate::sys::beneath::enter(output_dir).map_err(|e| Error::io_at(output_dir, "open", &e))?;
    // The index is opened (and refused if it is not a regular file) before any hook is
    // touched, so a planted link or FIFO there costs nothing but this error.
    let index = match (&opts.index_path, finalize.is_none() && !opts.no_finalize) {
        (Some(p), true) => Some(super::Index::open(&index_beneath(output_dir, p))?),
        _ => None,
    };
    // The pool is made once the top directory is read, when it has many subdirectories (the
    // walk is a fifth of a cleanup of stale records); the per-hook work uses it only for a
    // large cleanup.
    let (files, mut listings, mut pool) =
        super::listing::Listings::walk(output_dir, &opts.pattern, pool_for).map_err(|e| Error::io_at(output_dir, "read_dir", &e))?;
    if files.len() < PARALLEL_MIN_HOOKS {
        pool = None;
    } else if pool.is_none() {
        pool = pool_for(files.len());
    }
    let threads = pool.as_ref().map_or(1, |p| p.current_num_threads());

    // Hooks are stopped in batches that fit the descriptors this process can get (a pinned
    // hook holds a pidfd, and its group members get theirs while it is terminated): a cleanup
    // of any number of hooks works whatever RLIMIT_NOFILE is. A hook whose identity could not
    // be read for want of descriptors (EMFILE, ENFILE) is tried again in a later batch, once
    // the batch before it has closed its own.
    let mut queue: std::collections::VecDeque<(PathBuf, u32)> = files.into_iter().map(|f| (f, 0)).collect();
    let mut reports = Vec::with_capacity(queue.len());
    // Process groups of the live processes, read once, at the first stale record that needs them.
    let mut leftover_groups: Option<std::collections::HashMap<i32, Vec<i32>>> = None;
    let topts = TerminateOptions { schedule: opts.schedule.clone(), group: true, reap: false };
    let default_finalize = finalize.is_none() && !opts.no_finalize;
    // The log bytes this cleanup may still copy into the index (all hooks together).
    let log_budget = std::sync::atomic::AtomicU64::new(super::MAX_INDEX_LOG_BYTES);
    while !queue.is_empty() {
        let budget = hooks_per_batch(threads);
        let mut pending: Vec<Pending> = Vec::new();
        let mut handles: Vec<ProcessRef> = Vec::new();
        let mut retry: Vec<(PathBuf, u32)> = Vec::new();
        // Judged in chunks of at most the pins still allowed: each hook judged holds at most
        // one pin, so the pins of the whole pool never exceed the batch's budget.
        while handles.len() < budget && !queue.is_empty() {
            let take = (budget - handles.len()).min(queue.len());
            let chunk: Vec<(PathBuf, u32)> = queue.drain(..take).collect();
            let judged = par_map(pool.as_ref(), chunk, |(pid_file, attempts)| {
                let judged = judge_hook(&pid_file, opts);
                (pid_file, attempts, judged)
            });
            for (pid_file, attempts, (report, check, pin, dir_id)) in judged {
                let out_of_fds = matches!(check.judgement.and_then(|j| j.reason.errno()), Some(libc::EMFILE) | Some(libc::ENFILE));
                if out_of_fds && attempts < 3 && (!handles.is_empty() || !pending.is_empty()) {
                    retry.push((pid_file, attempts + 1));
                    continue;
                }
                let mut p = Pending { report, check, handle_index: None, output_files: None, dir_id, listed_id: None };
                p.decide(pin, &mut handles);
                pending.push(p);
            }
        }
        let results = terminate(handles, &topts);
        // A hook that was signalled may have written its last outputs meanwhile: its directory
        // is listed again (once per cleanup) before anything in it is finalized.
        for p in &pending {
            if p.handle_index.is_some() {
                listings.relist(&p.report.dir);
            }
        }
        listings.prepare(pending.iter().map(|p| p.report.dir.as_path()), |l, dirs| par_map(pool.as_ref(), dirs, |d| l.compute(&d)));
        for p in &mut pending {
            p.output_files = Some(listings.output_files(&p.report.dir));
            p.listed_id = listings.dir_id(&p.report.dir);
        }
        if leftover_groups.is_none() && pending.iter().any(|p| p.report.outcome == HookOutcome::Stale && p.report.pid.is_some_and(|pid| pid > 1)) {
            // One pass over /proc for all stale records, not one per record: at 10,000 stale
            // records the per-record scans were ~88% of the cleanup (BENCHMARKS.md).
            leftover_groups = Some(procfs::group_table().unwrap_or_default());
        }
        let groups = leftover_groups.as_ref();
        let done = par_map(pool.as_ref(), pending, |p| p.finish(&results, groups, opts, index.as_ref(), default_finalize, &log_budget));
        for mut report in done {
            if let Some(f) = finalize.as_mut() {
                // A hook this cleanup did not retire (another cleanup did, see NOT_CLAIMED) is
                // not finalized here.
                let claimed_elsewhere = report.outcome.succeeded() && !report.pid_file_removed;
                if !claimed_elsewhere && !matches!(report.outcome, HookOutcome::Foreign | HookOutcome::Unreadable | HookOutcome::Unverified) {
                    if let Err(e) = f(&report) {
                        add_finalize_error(&mut report, e);
                    }
                }
            }
            reports.push(report);
        }
        // Put the retries first: the next batch starts with every descriptor of this one closed.
        for r in retry.into_iter().rev() {
            queue.push_front(r);
        }
    }
    // One report per pidfile: an unstable sort gives the same order.
    reports.sort_unstable_by(|a, b| a.pid_file.cmp(&b.pid_file));
    Ok(reports)
}

/// A cleanup of fewer hooks runs on the calling thread alone: a pool costs more than it saves
/// there.
pub const PARALLEL_MIN_HOOKS: usize = 64;

/// The most threads a cleanup uses (never more than the machine's cores): the per-hook work is
/// a few dozen system calls on files of one directory tree, and a few threads already keep the
/// file system busy.
pub const MAX_THREADS: usize = 4;

/// A private pool for a cleanup of `hooks` hooks, or `None` to stay on the calling thread. The
/// pool's threads inherit the calling thread's injected faults (`sys::fault`), so a test's
/// faults follow the work.
fn pool_for(hooks: usize) -> Option<rayon::ThreadPool> {
    if hooks < PARALLEL_MIN_HOOKS {
        return None;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
    if threads < 2 {
        return None;
    }
    // A thread that cannot be started (EAGAIN under a pids limit) is no error: rayon's `build`
    // answers it with an `Err`, and the cleanup works on the calling thread.
    if let Err(e) = crate::sys::fault::check(crate::sys::fault::Call::ThreadSpawn) {
        log::debug!("no thread pool for the cleanup ({e}): working on the calling thread");
        return None;
    }
    let faults = crate::sys::fault::snapshot();
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("pidguard-cleanup-{i}"))
        .start_handler(move |_| crate::sys::fault::install(&faults))
        .build()
        .map_err(|e| log::debug!("no thread pool for the cleanup ({e}): working on the calling thread"))
        .ok()
}

/// `items.map(f)`, in order, on `pool` when there is one.
fn par_map<T: Send, R: Send>(pool: Option<&rayon::ThreadPool>, items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    match pool {
        Some(p) if items.len() > 1 => p.install(|| items.into_par_iter().map(f).collect()),
        _ => items.into_iter().map(f).collect(),
    }
}

/// What a hook's `error` says of a failed finalize (the default's, or the caller's callback):
/// `finalize failed: <why>`, after any error already there (see [`finalize_failed`]).
pub(crate) const FINALIZE_FAILED: &str = "finalize failed: ";

fn add_finalize_error(report: &mut HookReport, e: String) {
    report.error = Some(match report.error.take() {
        Some(prev) => format!("{prev}; {FINALIZE_FAILED}{e}"),
        None => format!("{FINALIZE_FAILED}{e}"),
    });
}

/// Whether the hook's finalize (the default's, or the caller's callback) failed.
pub(crate) fn finalize_failed(report: &HookReport) -> bool {
    report.error.as_deref().is_some_and(|e| e.starts_with(FINALIZE_FAILED) || e.contains(&format!("; {FINALIZE_FAILED}")))
}

/// How many hooks the next batch may pin: what the soft `RLIMIT_NOFILE` leaves after the
/// descriptors already open, a reserve for reading pidfiles, logs and `/proc` (a few per
/// thread: every thread of the pool opens its own at the same time), and about four
/// descriptors per hook (its pidfd, its group members' during termination). At least one.
fn hooks_per_batch(threads: usize) -> usize {
    const RESERVE: u64 = 16;
    const PER_THREAD: u64 = 4;
    const PER_HOOK: u64 = 4;
    let soft = crate::sys::nofile_soft_limit().unwrap_or(1024);
    let open = crate::sys::open_fd_count().unwrap_or(64) as u64;
    let reserve = RESERVE + PER_THREAD * threads as u64;
    (soft.saturating_sub(open).saturating_sub(reserve) / PER_HOOK).clamp(1, 4096) as usize
}

/// Check one hook's pidfile (with its `.sh`, read once: for the check and for the report's
/// `cmd`) and start its report. Both are opened from one descriptor of the hook's directory,
/// whose `(dev, inode)` is returned: what is read later (logs, listing) must come from that very
/// directory.
#[allow(clippy::type_complexity)]
fn judge_hook(pid_file: &Path, opts: &CleanupOptions) -> (HookReport, PidFileCheck, Option<ProcessRef>, Option<(u64, u64)>) {
    let dir = pid_file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut cmd_name = stem_of(pid_file);
    let stem = crate::report::path_text(&cmd_name).into_owned();
    cmd_name.push(".sh");
    let cmd_file = dir.join(&cmd_name);
    let dir_fd = crate::sys::DirFd::open(&dir);
    let dir_id = dir_fd.as_ref().ok().and_then(|d| d.id().ok());
    let open_in = |name: &std::ffi::OsStr| match &dir_fd {
        Ok(d) => crate::pidfile::retire::open_strict_in(d, name),
        Err(e) => Err(e.raw_os_error().map_or_else(|| std::io::Error::new(e.kind(), e.to_string()), std::io::Error::from_raw_os_error)),
    };
    let (cmd_read, sh_owner) = read_cmd_opened(open_in(&cmd_name), &cmd_file);
    let cmd_read = cmd_read.map(|r| r.map(|(text, argv)| Recorded { text, argv }));
    let opened = match pid_file.file_name() {
        Some(name) => open_in(name),
        None => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
    };
    drop(dir_fd);
    let (check, pin) = check_pinned_opened(opened, CmdRule::Loaded(&cmd_read, sh_owner), opts.tolerance);
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
        output_files: Arc::from(Vec::new()),
        cmd,
        unverified_leftovers: Vec::new(),
        started_at: check.mtime.and_then(crate::hooks::finalize::mtime_instant),
        ended_at: SystemTime::now(),
        pid_file_removed: false,
        elapsed: None,
        notes,
    };
    (report, check, pin, dir_id)
}

/// Keep everything of a hook that cannot be finalized from what was read in the directory it
/// was judged in (the directory was replaced, a log could not be read): `Unverified`, no
/// `output_files`, `why` in its error (after any error already there).
fn keep_all(report: &mut HookReport, why: &str) {
    report.outcome = HookOutcome::Unverified;
    report.output_files = Arc::from(Vec::new());
    let why = format!("{why}: pidfile and logs kept, no index records");
    report.error = Some(match report.error.take() {
        Some(prev) => format!("{prev}; {why}"),
        None => why,
    });
}

/// The hook's directory opened again by its name, if it is still the directory the pidfile was
/// judged in (`judged`, its `(dev, inode)` then); else why not.
fn reopen_judged(dir: &Path, judged: Option<(u64, u64)>) -> std::result::Result<crate::sys::DirFd, String> {
    let judged = judged.ok_or_else(|| "the hook's directory could not be opened when its pidfile was judged".to_string())?;
    let d = crate::sys::DirFd::open(dir).map_err(|e| format!("the hook's directory cannot be opened again: {e}"))?;
    match d.id() {
        Ok(id) if id == judged => Ok(d),
        Ok(_) => Err("the hook's directory was replaced (renamed or exchanged) since its pidfile was judged".to_string()),
        Err(e) => Err(format!("the hook's directory cannot be examined again: {e}")),
    }
}

fn unverified(report: &mut HookReport, j: Option<crate::identity::Judgement>) {
    report.outcome = HookOutcome::Unverified;
    report.error = Some(match j {
        Some(j) => format!("identity not established: {j}; pidfile and logs kept, nothing signalled"),
        None => "identity not established; pidfile and logs kept, nothing signalled".to_string(),
    });
}

impl Pending {
    /// Decide what the checked record allows; a pinned hook joins this batch's `handles`.
    fn decide(&mut self, pin: Option<ProcessRef>, handles: &mut Vec<ProcessRef>) {
        let (report, check) = (&mut self.report, &self.check);
        match check.reason {
            CheckReason::Foreign => report.outcome = HookOutcome::Foreign,
            CheckReason::Unreadable | CheckReason::NotRegular => report.outcome = HookOutcome::Unreadable,
            // A guard record matched by the pattern is not this format's to judge: left alone and
            // reported — removing it could end a live holder's single-instance guard. Other
            // content that is not one pid from 1 to 4194304 names no process: stale, as in the seed.
            CheckReason::Malformed if crate::pidfile::Format::of(&report.pid_file) == crate::pidfile::Format::Guard => {
                report.outcome = HookOutcome::Unreadable;
                report.error = Some("a guard record, not an abx-dl pidfile: left alone".to_string());
            }
            CheckReason::Malformed => report.outcome = HookOutcome::Stale,
            // Stale only on proof: gone, reused, or a token-less record whose mtime or command
            // was compared against a process whose identity was read (or no file any more).
            CheckReason::Gone | CheckReason::Mismatch | CheckReason::MtimeSkew | CheckReason::CmdMismatch | CheckReason::Missing => {
                report.outcome = HookOutcome::Stale
            }
            // A token xattr that is not a token, an identity that could not be read: keep.
            CheckReason::BadToken | CheckReason::Unverifiable => unverified(report, check.judgement),
            CheckReason::Valid | CheckReason::Zombie => match pin_pidfile(check, pin) {
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
    /// default finalize when `default_finalize` (a caller's callback runs afterwards, on the
    /// calling thread).
    fn finish(
        self,
        results: &[crate::signal::TerminateReport],
        leftover_groups: Option<&std::collections::HashMap<i32, Vec<i32>>>,
        opts: &CleanupOptions,
        index: Option<&super::Index>,
        default_finalize: bool,
        log_budget: &std::sync::atomic::AtomicU64,
    ) -> HookReport {
        let Pending { mut report, check, handle_index, output_files, dir_id, listed_id } = self;
        crate::sys::fault::point(crate::sys::fault::Point::BeforeHookFinish);
        if let Some(i) = handle_index {
            let r = &results[i];
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
                report.error = Some(format!("refused to signal: {}", crate::signal::stop::skipped_detail(r)));
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
        let finalizes = default_finalize && judged;
        let removes = matches!(report.outcome, HookOutcome::Stale | HookOutcome::AlreadyGone | HookOutcome::Exited(_));
        let dir = match (removes || finalizes).then(|| reopen_judged(&report.dir, dir_id)) {
            Some(Err(why)) => {
                keep_all(&mut report, &why);
                report.ended_at = SystemTime::now();
                return report;
            }
            Some(Ok(d)) => Some(d),
            None => None,
        };
        // The logs are read before the record is retired: a log that could not be read (out of
        // descriptors, EACCES, EIO) is not an empty log, and then the record stays with them.
        let logs = match (&dir, finalizes) {
            (Some(d), true) => match super::finalize::read_logs(&report, d, log_budget) {
                Ok(l) => Some(l),
                Err(why) => {
                    keep_all(&mut report, &why);
                    report.ended_at = SystemTime::now();
                    return report;
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
                claim = match (&dir, pid_file.file_name()) {
                    (Some(d), Some(name)) => {
                        crate::pidfile::retire::claim_by_content(d, name, &pid_file, |f| unchanged_record(f, &check), false)
                            .ok()
                            .flatten()
                    }
                    _ => None,
                };
                if claim.is_none() {
                    report.notes.push(NOT_CLAIMED.to_string());
                }
            }
            HookOutcome::Refused(r) if report.error.is_none() => report.error = Some(format!("refused to signal: {r}")),
            _ => {}
        }
        if report.outcome == HookOutcome::Stale {
            if let (Some(pid), Some(groups)) = (report.pid, leftover_groups) {
                if pid > 1 {
                    report.unverified_leftovers = groups.get(&pid).cloned().unwrap_or_default();
                }
            }
        }
        if let Some(list) = output_files {
            report.output_files = list;
        }
        report.ended_at = SystemTime::now();
        if removes && claim.is_none() {
            // Another cleanup retired it (and finalizes it), or a new record took its name.
            return report;
        }
        match (dir.as_ref(), logs) {
            (Some(d), Some(logs)) => match super::finalize::default_finalize(&report, logs, d, index, opts.is_tty, claim) {
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
        report
    }
}

/// The note of a hook whose record this cleanup judged stale or stopped, but could not retire:
/// it was no longer the file judged (another cleanup retired it first and finalizes it, or a new
/// record took its name), or could not be renamed. Nothing is finalized or removed for it here.
pub(crate) const NOT_CLAIMED: &str =
    "the pidfile was not retired by this cleanup (another cleanup retired it first, or it was rewritten or could not be renamed): not finalized here";

/// The stem of a hook's pidfile (`on_x.bg` of `on_x.bg.pid`) as the bytes of its name: the
/// names of its `.sh` and logs are made from it, whatever bytes it holds.
pub(crate) fn stem_of(pid_file: &Path) -> std::ffi::OsString {
    pid_file.file_stem().map(|s| s.to_os_string()).unwrap_or_default()
}
