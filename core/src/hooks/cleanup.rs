//! The cleanup driver: the walk, the batches that fit the descriptors, the pool, and the order of
//! the reports.

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::identity::ProcessRef;
use crate::signal::{terminate, terminate_scopes, TerminateOptions};

use super::judge::{judge_hook, Finishing, Pending};
use super::outcome::{add_finalize_error, CleanupOptions, HookOutcome, HookReport};

/// The path to open the index at: spelled under `output_dir` as the caller spelled it, when the
/// index lies beneath it, so that it is opened through the cleanup's tree (no symlink below the
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
/// signalling); the walk and the hooks finished during it (stale records) stay on the calling
/// thread, and when [`PARALLEL_MIN_HOOKS`] hooks or more are left to the batches, those are
/// judged, retired and finalized on a small private thread pool (at most [`MAX_THREADS`], no
/// more than the machine's cores) while the signalling of each batch stays one poll loop on
/// the calling thread. Without a `finalize` callback, the hooks of a directory without subdirectories are
/// judged during the walk, through the descriptor the directory was listed through, and when
/// none of them is to be signalled (stale, foreign, unreadable, unverified or refused
/// records) they are retired and finalized there, through that same descriptor: one
/// descriptor per directory, which is the directory listed, judged in and finalized in. The
/// others go through batches that pin, signal, list again and finish them, opening each hook's
/// directory again (and proving it is the one judged). The index lines of a hook are appended
/// in one `write(2)` (`O_APPEND`) with those of other hooks finished during the walk (batches
/// of at most 64 hooks) or alone (hooks finished after signalling), so lines of different
/// hooks never interleave, whole records or none (a short write on a full disk is cut back to
/// the last whole line). A stale or stopped hook is first *claimed*: its pidfile is renamed
/// aside by content (`pidfile::retire`; a record judged during the walk is retired through the
/// very descriptor it was judged through, not opened and compared again); of several cleanups
/// of one tree at once only the one whose claim holds finalizes it (the others say so in their
/// notes and write nothing for it), and the claimed pidfile is unlinked only after the index
/// lines were appended — on a failed append it (and every hook appended with it) is given its
/// name back and the logs stay, for the next cleanup. The index (and stdout when `is_tty` is
/// false) receives hooks in the order they finish, not sorted. A `finalize` callback is always called
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
    opts.validate()?;
    // The tree is opened once (`ENOTDIR`: not a directory), and every path under
    // `output_dir` that this cleanup opens is resolved beneath that descriptor, passed to each
    // call that opens one, with no symlink on the way: a directory of the tree swapped for a
    // symlink cannot steer this cleanup into another tree.
    let tree = crate::sys::Tree::open(output_dir, crate::protect::walk()).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOTDIR) => Error::at(ErrorKind::InvalidArgument, output_dir, "not a directory"),
        _ => Error::io_at(output_dir, "open", &e),
    })?;
    let tree = &tree;
    // The index is opened (and refused if it is not a regular file) before any hook is
    // touched, so a planted link or FIFO there costs nothing but this error.
    let index = match (&opts.index_path, finalize.is_none() && !opts.no_finalize) {
        (Some(p), true) => Some(super::Index::open(tree, &index_beneath(output_dir, p))?),
        _ => None,
    };
    let default_finalize = finalize.is_none() && !opts.no_finalize;
    let spare = spare_descriptors();
    let cx = Finishing {
        opts,
        index: index.as_ref(),
        default_finalize,
        // The log bytes this cleanup may still copy into the index (all hooks together).
        log_budget: std::sync::atomic::AtomicU64::new(super::MAX_INDEX_LOG_BYTES),
        groups: std::sync::OnceLock::new(),
        groups_after_signals: std::sync::OnceLock::new(),
        keep_open: spare / (2 * MAX_THREADS),
        batch: index.as_ref().filter(|_| default_finalize).map(|i| super::finalize::Batch::new(i, opts.is_tty, spare / 4)),
    };
    // Without a callback, a directory that holds hooks and no subdirectory is judged and, when
    // none of its hooks is to be signalled, finished during the walk, through the descriptor
    // it was listed through (`judge::finish_leaf`): one descriptor per directory, no directory
    // opened again. (A callback is called in pidfile-path order on the calling thread, so every
    // hook then goes through the batches.)
    let visit = |dir: &Path, fd: crate::sys::DirFd, hooks: &[PathBuf], files: std::sync::Arc<[String]>, pool: &super::listing::LazyPool<'_>| {
        super::judge::finish_leaf(dir, fd, hooks, files, pool, &cx)
    };
    let visit: Option<super::listing::Visit<'_>> = if finalize.is_none() { Some(&visit) } else { None };
    // The walk, and the stale records it finishes, stay on the calling thread: a pool there
    // cost 10 % more CPU than the same work on one thread (4 µs per stale record of ~44: the
    // threads' synchronisation, and every descriptor call of a process with several threads
    // taking a reference the kernel skips for one thread), for half the wall time only while a
    // core is idle (issue 36: CPU within 1.15x of a program of the rules' system calls). The
    // pool is made for the batches alone, when many hooks are left to them (their judgement
    // reads live processes, and their signalling waits).
    let no_pool = |_: usize| None;
    let (files, mut listings, mut pool, early) =
        super::listing::Listings::walk(tree, &opts.pattern, super::listing::LazyPool::new(&no_pool, PARALLEL_MIN_HOOKS), visit)
            .map_err(|e| Error::io_at(output_dir, "read_dir", &e))?;
    // The walk's pool, if any, is kept for the sort of the reports; the batches use one only
    // for many hooks.
    let many = files.len() >= PARALLEL_MIN_HOOKS;
    if many && pool.is_none() {
        pool = pool_for(files.len());
    }
    let batch_pool = pool.as_ref().filter(|_| many);
    let threads = batch_pool.map_or(1, |p| p.current_num_threads());

    // Hooks are stopped in batches that fit the descriptors this process can get (a pinned
    // hook holds a pidfd, and its group members get theirs while it is terminated): a cleanup
    // of any number of hooks works whatever RLIMIT_NOFILE is. A hook whose identity could not
    // be read for want of descriptors (EMFILE, ENFILE) is tried again in a later batch, once
    // the batch before it has closed its own.
    let mut queue: std::collections::VecDeque<(PathBuf, u32)> = files.into_iter().map(|f| (f, 0)).collect();
    // The reports, in the vectors they were made in (moved once, when sorted).
    let mut reports = early;
    // The records of the hooks finished during the walk that still wait to be appended.
    if let Some(b) = &cx.batch {
        reports.push(b.flush());
    }
    let topts = TerminateOptions { schedule: opts.schedule.clone(), group: true, reap: false };
    while !queue.is_empty() {
        let budget = hooks_per_batch(threads);
        let mut pending: Vec<Pending> = Vec::new();
        let mut handles: Vec<ProcessRef> = Vec::new();
        let mut scopes: Vec<(i32, crate::identity::Scope)> = Vec::new();
        let mut retry: Vec<(PathBuf, u32)> = Vec::new();
        // Judged in chunks of at most the pins still allowed: each hook judged holds at most
        // one pin, so the pins of the whole pool never exceed the batch's budget.
        while handles.len() < budget && !queue.is_empty() {
            let take = (budget - handles.len()).min(queue.len());
            let chunk: Vec<(PathBuf, u32)> = queue.drain(..take).collect();
            let judged = par_map(batch_pool, chunk, |(pid_file, attempts)| {
                let judged = judge_hook(tree, &pid_file, opts);
                (pid_file, attempts, judged)
            });
            for (pid_file, attempts, (report, check, pin, dir_id)) in judged {
                let out_of_fds = matches!(check.judgement.and_then(|j| j.reason.errno()), Some(libc::EMFILE) | Some(libc::ENFILE));
                if out_of_fds && attempts < 3 && (!handles.is_empty() || !pending.is_empty()) {
                    retry.push((pid_file, attempts + 1));
                    continue;
                }
                let mut p = Pending { report, check, handle_index: None, output_files: None, dir_id, listed_id: None, scope_index: None };
                p.decide(pin, &mut handles, &mut scopes);
                pending.push(p);
            }
        }
        // Groups and scopes are terminated at the same time: the batch takes as long as the
        // schedule, whatever the mix.
        let (results, scope_results) = if scopes.is_empty() {
            (terminate(handles, &topts), Vec::new())
        } else {
            let targets: Vec<(i32, &crate::identity::Scope)> = scopes.iter().map(|(p, s)| (*p, s)).collect();
            // In turn on this thread when no thread can be made (a seccomp filter, a pids limit).
            let (sc, g) = crate::sys::thread::both("pidguard-scopes", || terminate_scopes(&targets, &topts.schedule), || terminate(handles, &topts));
            (g, sc)
        };
        // A stopped leaf is removed (an empty cgroup only: the kernel refuses a populated one).
        for ((_, s), r) in scopes.iter().zip(&scope_results) {
            if r.outcome.is_stopped() {
                s.release();
            }
        }
        // A hook that was signalled may have written its last outputs meanwhile: its directory
        // is listed again (once per cleanup) before anything in it is finalized.
        for p in &pending {
            if p.handle_index.is_some() {
                listings.relist(tree, &p.report.dir);
            }
        }
        listings.prepare(pending.iter().map(|p| p.report.dir.as_path()), |l, dirs| par_map(batch_pool, dirs, |d| l.compute(&d)));
        for p in &mut pending {
            p.output_files = Some(listings.output_files(&p.report.dir));
            p.listed_id = listings.dir_id(&p.report.dir);
        }
        let done = par_map(batch_pool, pending, |p| p.finish(tree, &results, &scope_results, &cx));
        let mut finished = Vec::with_capacity(done.len());
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
            finished.push(report);
        }
        reports.push(finished);
        // Put the retries first: the next batch starts with every descriptor of this one closed.
        for r in retry.into_iter().rev() {
            queue.push_front(r);
        }
    }
    Ok(sorted_by_pid_file(reports, pool.as_ref()))
}

/// The reports, in the vectors they were made in, as one vector in `Path` order of their
/// pidfiles (one report per pidfile: no ties), sorted on `pool` when there is one.
///
/// Every pidfile path of one cleanup is the output directory's path as given, then `/`-joined
/// names as listed (none empty, `.` or `..`): the same bytes up to the names, so `Path`'s
/// order of components is the order of the bytes with `/` below every other byte. Compared so,
/// after the bytes all of them share, and indices sorted rather than the large reports moved
/// (10,000 reports sorted with `Path::cmp` were a tenth of a cleanup of stale records; with the
/// byte order from the first byte, 3 %).
fn sorted_by_pid_file(chunks: Vec<Vec<HookReport>>, pool: Option<&rayon::ThreadPool>) -> Vec<HookReport> {
    use std::os::unix::ffi::OsStrExt;
    let at: Vec<(usize, usize)> = chunks.iter().enumerate().flat_map(|(c, v)| (0..v.len()).map(move |i| (c, i))).collect();
    let order = path_order(at.iter().map(|&(c, i)| chunks[c][i].pid_file.as_os_str().as_bytes()).collect(), pool);
    // In place (an `Option` of a report is a report's size).
    let mut slots: Vec<Vec<Option<HookReport>>> = chunks.into_iter().map(|v| v.into_iter().map(Some).collect()).collect();
    // Unreachable: `order` is a permutation of the indices of `at`, each taken once.
    order.into_iter().map(|k| slots[at[k].0][at[k].1].take().expect("each report once")).collect()
}

/// The indices of `paths` (pidfile paths of one cleanup: see [`sorted_by_pid_file`]) in their
/// `Path` order, compared after the bytes all of them share.
fn path_order(paths: Vec<&[u8]>, pool: Option<&rayon::ThreadPool>) -> Vec<usize> {
    let shared = paths.first().map_or(0, |first| paths.iter().fold(first.len(), |n, k| n.min(mismatch(first, k))));
    let keys: Vec<&[u8]> = paths.into_iter().map(|k| &k[shared..]).collect();
    let mut order: Vec<usize> = (0..keys.len()).collect();
    let by_path = |a: &usize, b: &usize| path_bytes_cmp(keys[*a], keys[*b]);
    match pool {
        Some(p) if order.len() >= PARALLEL_MIN_HOOKS => {
            use rayon::slice::ParallelSliceMut;
            p.install(|| order.par_sort_unstable_by(by_path));
        }
        _ => order.sort_unstable_by(by_path),
    }
    order
}

/// How many leading bytes `a` and `b` share (eight at a time where they can).
fn mismatch(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n && a[i..i + 8] == b[i..i + 8] {
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Byte order with `/` below every other byte: `Path`'s component order for paths that share
/// their prefix and are `/`-joined names after it (see [`sorted_by_pid_file`]).
fn path_bytes_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let key = |c: u8| if c == b'/' { 0u16 } else { u16::from(c) + 1 };
    let i = mismatch(a, b);
    match (a.get(i), b.get(i)) {
        (Some(&x), Some(&y)) => key(x).cmp(&key(y)),
        _ => a.len().cmp(&b.len()),
    }
}

/// Fewer hooks left to a cleanup's batches (hooks to be signalled) run on the calling thread
/// alone: a pool costs more than it saves there. (The walk and the stale records it finishes
/// always run on the calling thread.)
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

/// `items.map(f)`, in order, on `pool` when there is one, split down to single items: rayon's
/// default split leaves a thread with a run of a quarter of the items that no other thread can
/// take a part of, and at the end of a cleanup one thread then worked alone for tens of
/// milliseconds (BENCHMARKS.md, issue 28). The same holds for every parallel loop of a cleanup.
fn par_map<T: Send, R: Send>(pool: Option<&rayon::ThreadPool>, items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    match pool {
        Some(p) if items.len() > 1 => p.install(|| items.into_par_iter().with_max_len(1).map(f).collect()),
        _ => items.into_iter().map(f).collect(),
    }
}

/// The descriptors the work of the walk may hold beyond what each thread opens and closes at
/// once (see `judge::Finishing`): what the soft `RLIMIT_NOFILE` leaves after the descriptors
/// already open and a reserve. A directory finished during the walk keeps its pidfiles open
/// from their judgement to their retirement when it has at most a share of them for each of
/// [`MAX_THREADS`] threads, half of it left for everything else (a directory with more hooks
/// opens each record again to retire it); the index records of at most a quarter of them
/// wait together, each with its directory open. Never 0 (a share of 1 at least).
fn spare_descriptors() -> usize {
    const RESERVE: u64 = 64;
    let soft = crate::sys::nofile_soft_limit().unwrap_or(1024);
    let open = crate::sys::open_fd_count().unwrap_or(64) as u64;
    (soft.saturating_sub(open).saturating_sub(RESERVE) as usize).max(2 * MAX_THREADS)
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

#[cfg(test)]
mod tests {
    use super::{path_bytes_cmp, path_order};
    use std::path::Path;

    /// The order of a cleanup's reports is `Path`'s, with and without a pool, whatever prefix
    /// the paths share (it is skipped) and however long the names (compared 8 bytes at a time).
    #[test]
    fn reports_sort_in_path_order() {
        use std::os::unix::ffi::OsStrExt;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for root in ["/tmp/some/long/output-dir-0001", "o", "./o/plugin0"] {
            let mut paths = Vec::new();
            for i in 0..300u32 {
                let dir = match i % 4 {
                    0 => format!("plugin{:05}", i * 7919 % 1000),
                    1 => format!("plugin{:05}/sub", i * 7919 % 1000),
                    2 => format!("plugin{:05}-x", i * 7919 % 1000),
                    _ => format!("plugin{:04}", i % 37),
                };
                paths.push(Path::new(root).join(dir).join(format!("on_Snapshot__{:02}_hook.bg.pid", i % 13)));
            }
            paths.sort_by_key(|p| p.as_os_str().as_bytes().iter().rev().map(|&b| b as u32).sum::<u32>());
            paths.dedup();
            let mut want: Vec<usize> = (0..paths.len()).collect();
            want.sort_by(|&a, &b| paths[a].cmp(&paths[b]));
            for pool in [None, Some(&pool)] {
                let got = path_order(paths.iter().map(|p| p.as_os_str().as_bytes()).collect(), pool);
                assert_eq!(got, want, "root {root}, pool {}", pool.is_some());
            }
        }
    }

    /// The byte order with `/` lowest is `Path`'s order for one root and names joined to it.
    #[test]
    fn path_byte_order_is_path_order_below_one_root() {
        use std::os::unix::ffi::OsStrExt;
        let names: [&[u8]; 15] = [b"a", b"a-b", b"a.b", b"ab", b"a\x01", b"b", b"\x00x", b"\xff", b"a b", b"A", b"a0", b"\x2e\x2e\x2e", b"plugin00001", b"plugin00001x", b"plugin0000"];
        let mut paths = Vec::new();
        for root in ["out", "/tmp/o/", "./o"] {
            for n in names {
                for m in names {
                    let mut p = Path::new(root).join(std::ffi::OsStr::from_bytes(n));
                    paths.push(p.join(std::ffi::OsStr::from_bytes(m)));
                    p.push("x.pid");
                    paths.push(p);
                }
            }
            for a in &paths {
                for b in &paths {
                    assert_eq!(path_bytes_cmp(a.as_os_str().as_bytes(), b.as_os_str().as_bytes()), a.cmp(b), "{a:?} {b:?}");
                }
            }
            paths.clear();
        }
    }
}
