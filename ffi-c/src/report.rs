//! The cleanup report: an opaque object the caller owns, read through accessors, freed with
//! `pidguard_cleanup_report_free`.

use std::ffi::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use pidguard_core::hooks::{CleanupOptions, HookReport};
use pidguard_core::report::HookView;
use pidguard_core::{self as pg};

use crate::boundary::{boxed, free, obj, opt_path, opt_utf8, out, path, run, schedule as schedule_arg, FfiResult};
use crate::options::pidguard_cleanup_options;
use crate::results::{signal_numbers, signo, Kept};
use crate::types::*;

/// One hook: core's view of it, its C enum values, and the strings and arrays C reads.
struct Hook {
    view: HookView,
    verdict: pidguard_verdict,
    verdict_reason: pidguard_reason,
    reason: pidguard_check_reason,
    outcome: pidguard_hook_outcome,
    refusal: pidguard_refusal,
    scope: pidguard_scope,
    after: i32,
    name: *const c_char,
    dir: *const c_char,
    pid_file: *const c_char,
    error: *const c_char,
    signals: (*const i32, usize),
    leftovers: (*const i32, usize),
    output_files: (*const *const c_char, usize),
    cmd: (*const *const c_char, usize),
    notes: (*const *const c_char, usize),
    _kept: Kept,
}

impl Hook {
    fn of(r: &HookReport) -> FfiResult<Hook> {
        let view = HookView::from(r);
        let mut k = Kept::default();
        let signals = signal_numbers(&view.signals)?;
        let list = |k: &mut Kept, v: &[String]| (if v.is_empty() { std::ptr::null() } else { k.strs(v) }, v.len());
        Ok(Hook {
            verdict: r.verdict.into(),
            verdict_reason: r.verdict_reason.into(),
            reason: (&r.reason).into(),
            outcome: (&r.outcome).into(),
            refusal: r.outcome.refusal().into(),
            scope: (&r.scope).into(),
            after: signo(view.after.as_deref())?,
            name: k.str(Some(&view.name)),
            dir: k.str(Some(view.dir.as_os_str().as_bytes())),
            pid_file: k.str(Some(view.pid_file.as_os_str().as_bytes())),
            error: k.str(view.error.as_ref()),
            signals: (k.ints(signals.clone()), signals.len()),
            leftovers: (k.ints(view.unverified_leftovers.clone()), view.unverified_leftovers.len()),
            output_files: list(&mut k, &view.output_files),
            cmd: list(&mut k, &view.cmd),
            notes: list(&mut k, &view.notes),
            view,
            _kept: k,
        })
    }
}

/// What pidguard_cleanup_background_hooks() did, one entry per pidfile found, in path order.
/// Opaque: read it with the pidguard_cleanup_report_* accessors (`index` from 0 to len - 1).
/// The caller owns it and frees it with pidguard_cleanup_report_free(); every pointer an
/// accessor gives out points into the report and stays valid until then. It may be read from
/// several threads at once.
#[allow(non_camel_case_types)]
pub struct pidguard_cleanup_report {
    hooks: Vec<Hook>,
}

impl pidguard_cleanup_report {
    fn hook(&self, index: usize) -> FfiResult<&Hook> {
        let n = self.hooks.len();
        self.hooks.get(index).ok_or_else(|| pg::Error::invalid(format!("index {index} is out of range: the report has {n} hooks")))
    }
}

/// The body of accessor `name`: `f` of hook `index` into the output `value_out`, named `what`.
fn get<T>(name: &'static str, report: *const pidguard_cleanup_report, index: usize, value_out: (*mut T, &str), f: impl FnOnce(&Hook) -> T) -> c_int {
    crate::boundary::get(name, (report, "report"), value_out, |r| r.hook(index).map(f))
}

/// The body of array accessor `name`: the array `f` gives for hook `index` into the output
/// `items_out`, named `what`, and its length into `len_out`.
fn get_array<T>(
    name: &'static str,
    report: *const pidguard_cleanup_report,
    index: usize,
    (items_out, what): (*mut *const T, &str),
    len_out: *mut usize,
    f: impl FnOnce(&Hook) -> (*const T, usize),
) -> c_int {
    run(name, || {
        let items_out = out(items_out, what)?;
        let len_out = out(len_out, "len_out")?;
        let (items, len) = f(obj(report, "report")?.hook(index)?);
        items_out.write(items);
        len_out.write(len);
        Ok(())
    })
}

/// Stop every background hook under a directory that is provably still itself, and drop stale
/// records (the seed's `cleanup_background_hooks`).
///
/// 1. Every file matching `pattern` under `output_dir`, recursively, is a hook's pidfile; its
///    command file is `<name>.sh` beside it.
/// 2. A record from another machine or PID namespace is left alone. A stale record (process
///    gone, pid reused, mtime skewed, another command) is removed if unchanged and nothing is
///    signalled; live processes still in a group with its pid are listed as unverified
///    leftovers, never signalled.
/// 3. Valid hooks are pinned, re-checked (as root, a pidfile another user could have written is
///    refused unless MATCH) and stopped with their process groups, all in parallel, with the
///    schedule.
/// 4. Each hook is finalized as abx-dl does: `Process` and `ArchiveResult` JSON lines appended to
///    `index_path` (and printed to stdout when `is_tty` is false), logs removed on success, the
///    `.sh` kept.
///
/// Blocks until every hook has an outcome: at most the schedule's total wait (all hooks run in
/// parallel), plus the time to read the files.
///
/// - `output_dir`: the directory to search. Required.
/// - `index_path`: the index file to append JSON lines to, or NULL for none.
/// - `is_tty`: when false (the seed's default) the JSON lines are also printed to stdout.
/// - `schedule`: start-stop-daemon's --retry syntax, or NULL for "TERM/2/KILL/1".
/// - `pattern`: a glob (`*`, `?`) on file names, or NULL for "on_*.pid".
/// - `report_out`: receives a new report, which the caller owns and frees with
///   pidguard_cleanup_report_free() (also when it lists no hook).
///
/// Every per-hook problem is in the report, not a status. Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL `output_dir` or `report_out`, a malformed schedule, or
/// an `output_dir` that is not a directory; PIDGUARD_ENOT_FOUND when it does not exist;
/// PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO when it cannot be read.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_background_hooks(
    output_dir: *const c_char,
    index_path: *const c_char,
    is_tty: bool,
    schedule: *const c_char,
    pattern: *const c_char,
    report_out: *mut *mut pidguard_cleanup_report,
) -> c_int {
    ffi!("pidguard_cleanup_background_hooks", {
        let output_dir = path(output_dir, "output_dir")?;
        let index_path = opt_path(index_path, "index_path")?;
        let schedule = schedule_arg(schedule)?;
        let pattern = opt_utf8(pattern, "pattern")?;
        let report_out = out(report_out, "report_out")?;
        let mut opts = CleanupOptions { index_path: index_path.map(Path::to_path_buf), is_tty, schedule, ..Default::default() };
        if let Some(p) = pattern {
            opts.pattern = p.to_string();
        }
        cleanup_into(output_dir, &opts, report_out)
    })
}

/// pidguard_cleanup_background_hooks() with its options in one struct, the same as every other
/// surface's (`tolerance` and `no_finalize` included): `options` filled by
/// pidguard_cleanup_options_init() and changed where wanted, or NULL for the defaults. The
/// report, its ownership and the statuses are pidguard_cleanup_background_hooks()'s;
/// PIDGUARD_EINVALID_ARGUMENT also for a tolerance that is not finite seconds >= 0 or a pattern
/// that is empty or holds '/'.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_with(
    output_dir: *const c_char,
    options: *const pidguard_cleanup_options,
    report_out: *mut *mut pidguard_cleanup_report,
) -> c_int {
    ffi!("pidguard_cleanup_with", {
        let output_dir = path(output_dir, "output_dir")?;
        let opts = crate::options::cleanup_options(options)?;
        let report_out = out(report_out, "report_out")?;
        cleanup_into(output_dir, &opts, report_out)
    })
}

/// One cleanup, its new report into `report_out`: the body both cleanup functions share.
fn cleanup_into(output_dir: &Path, opts: &CleanupOptions, report_out: crate::boundary::Out<*mut pidguard_cleanup_report>) -> FfiResult {
    let reports = pg::cleanup_background_hooks(output_dir, opts, None)?;
    let hooks = reports.iter().map(Hook::of).collect::<FfiResult<Vec<Hook>>>()?;
    report_out.write(boxed(pidguard_cleanup_report { hooks }));
    Ok(())
}

/// Free a report from pidguard_cleanup_background_hooks(), and every string and array its
/// accessors gave out. NULL is allowed and does nothing. Freeing a report twice, or using it
/// afterwards, is undefined behaviour.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_free(report: *mut pidguard_cleanup_report) {
    free(report)
}

/// The number of hooks (pidfiles found) in `report`, into `len_out`. Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_len(report: *const pidguard_cleanup_report, len_out: *mut usize) -> c_int {
    crate::boundary::get("pidguard_cleanup_report_len", (report, "report"), (len_out, "len_out"), |r| Ok(r.hooks.len()))
}

/// The hook's name, its pidfile's basename without `.pid` ("on_Snapshot__20_chrome.bg"), into
/// `name_out`: a NUL-terminated string owned by the report. Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL argument or an index >= the report's length (the same
/// holds for every pidguard_cleanup_report_* accessor taking an index).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_name(report: *const pidguard_cleanup_report, index: usize, name_out: *mut *const c_char) -> c_int {
    get("pidguard_cleanup_report_name", report, index, (name_out, "name_out"), |h| h.name)
}

/// The directory holding the hook's files, into `dir_out` (a string owned by the report).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_dir(report: *const pidguard_cleanup_report, index: usize, dir_out: *mut *const c_char) -> c_int {
    get("pidguard_cleanup_report_dir", report, index, (dir_out, "dir_out"), |h| h.dir)
}

/// The hook's pidfile path, into `pid_file_out` (a string owned by the report).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_pid_file(report: *const pidguard_cleanup_report, index: usize, pid_file_out: *mut *const c_char) -> c_int {
    get("pidguard_cleanup_report_pid_file", report, index, (pid_file_out, "pid_file_out"), |h| h.pid_file)
}

/// The pid recorded in the hook's pidfile, into `pid_out`; 0 when the file did not parse.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_pid(report: *const pidguard_cleanup_report, index: usize, pid_out: *mut i32) -> c_int {
    get("pidguard_cleanup_report_pid", report, index, (pid_out, "pid_out"), |h| h.view.pid.unwrap_or(0))
}

/// The identity verdict, into `verdict_out`; PIDGUARD_VERDICT_NONE when the process was not
/// judged (missing or malformed pidfile).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_verdict(report: *const pidguard_cleanup_report, index: usize, verdict_out: *mut pidguard_verdict) -> c_int {
    get("pidguard_cleanup_report_verdict", report, index, (verdict_out, "verdict_out"), |h| h.verdict)
}

/// Why that verdict, into `reason_out`; PIDGUARD_REASON_NONE when the process was not
/// judged.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_verdict_reason(report: *const pidguard_cleanup_report, index: usize, reason_out: *mut pidguard_reason) -> c_int {
    get("pidguard_cleanup_report_verdict_reason", report, index, (reason_out, "reason_out"), |h| h.verdict_reason)
}

/// The pidfile check's reason (valid, gone, mtime skew, ...), into `reason_out`.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_reason(report: *const pidguard_cleanup_report, index: usize, reason_out: *mut pidguard_check_reason) -> c_int {
    get("pidguard_cleanup_report_reason", report, index, (reason_out, "reason_out"), |h| h.reason)
}

/// What cleanup did with the hook, into `outcome_out`.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_outcome(report: *const pidguard_cleanup_report, index: usize, outcome_out: *mut pidguard_hook_outcome) -> c_int {
    get("pidguard_cleanup_report_outcome", report, index, (outcome_out, "outcome_out"), |h| h.outcome)
}

/// For PIDGUARD_HOOK_EXITED, the number of the signal after which the hook's group exited
/// (SIGTERM, SIGKILL, ...), into `after_out`; 0 otherwise.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_after(report: *const pidguard_cleanup_report, index: usize, after_out: *mut i32) -> c_int {
    get("pidguard_cleanup_report_after", report, index, (after_out, "after_out"), |h| h.after)
}

/// Why signalling was refused, for PIDGUARD_HOOK_REFUSED, into `refusal_out`;
/// PIDGUARD_REFUSAL_NONE otherwise.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_refusal(report: *const pidguard_cleanup_report, index: usize, refusal_out: *mut pidguard_refusal) -> c_int {
    get("pidguard_cleanup_report_refusal", report, index, (refusal_out, "refusal_out"), |h| h.refusal)
}

/// Every signal sent to the hook, in order (SIGCONT after SIGTERM included): `signals_out`
/// receives an array of `len_out` signal numbers owned by the report (NULL when none was sent).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_signals(
    report: *const pidguard_cleanup_report,
    index: usize,
    signals_out: *mut *const i32,
    len_out: *mut usize,
) -> c_int {
    get_array("pidguard_cleanup_report_signals", report, index, (signals_out, "signals_out"), len_out, |h| h.signals)
}

/// The hook's exit code when known (the caller's own child: the code, or 128 + signal), into
/// `exit_code_out`; -1 when unknown (it is not the caller's child: never invented as 0).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_exit_code(report: *const pidguard_cleanup_report, index: usize, exit_code_out: *mut i32) -> c_int {
    get("pidguard_cleanup_report_exit_code", report, index, (exit_code_out, "exit_code_out"), |h| h.view.exit_code.unwrap_or(-1))
}

/// The error of a failed hook ("Process unkillable", a refusal, a finalize failure), into
/// `error_out`: a string owned by the report, or NULL when the hook did not fail.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_error(report: *const pidguard_cleanup_report, index: usize, error_out: *mut *const c_char) -> c_int {
    get("pidguard_cleanup_report_error", report, index, (error_out, "error_out"), |h| h.error)
}

/// What the cleanup could not read beside the hook (a log that is a symlink or a FIFO, a log
/// cut at 16 MiB), one sentence each: `notes_out` receives an array of `len_out` strings owned by
/// the report (NULL when there is none).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_notes(
    report: *const pidguard_cleanup_report,
    index: usize,
    notes_out: *mut *const *const c_char,
    len_out: *mut usize,
) -> c_int {
    get_array("pidguard_cleanup_report_notes", report, index, (notes_out, "notes_out"), len_out, |h| h.notes)
}

/// The files the hook's directory holds (relative to it; sorted), other than the .stdout.log,
/// .stderr.log, .pid and .sh of every hook the cleanup found there: `files_out` receives an
/// array of `len_out` strings owned by the report (NULL when there is none).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_output_files(
    report: *const pidguard_cleanup_report,
    index: usize,
    files_out: *mut *const *const c_char,
    len_out: *mut usize,
) -> c_int {
    get_array("pidguard_cleanup_report_output_files", report, index, (files_out, "files_out"), len_out, |h| h.output_files)
}

/// The argv recorded in the hook's .sh file: `argv_out` receives an array of `len_out` strings
/// owned by the report (NULL when the file was missing or unreadable).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_cmd(
    report: *const pidguard_cleanup_report,
    index: usize,
    argv_out: *mut *const *const c_char,
    len_out: *mut usize,
) -> c_int {
    get_array("pidguard_cleanup_report_cmd", report, index, (argv_out, "argv_out"), len_out, |h| h.cmd)
}

/// Live processes whose process group is the recorded pid of a stale record: listed, never
/// signalled (they cannot be proven to be the hook's). `pids_out` receives an array of `len_out`
/// pids owned by the report (NULL when there is none). (`unverified_leftovers` in the other
/// bindings.)
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_leftovers(
    report: *const pidguard_cleanup_report,
    index: usize,
    pids_out: *mut *const i32,
    len_out: *mut usize,
) -> c_int {
    get_array("pidguard_cleanup_report_leftovers", report, index, (pids_out, "pids_out"), len_out, |h| h.leftovers)
}

/// When the hook started (its pidfile's mtime; NaN when unknown) and when cleanup finished with
/// it, seconds since the epoch, into `started_at_out` and `ended_at_out` (`started_at` and
/// `ended_at` in the other bindings).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_times(
    report: *const pidguard_cleanup_report,
    index: usize,
    started_at_out: *mut f64,
    ended_at_out: *mut f64,
) -> c_int {
    ffi!("pidguard_cleanup_report_times", {
        let started_at_out = out(started_at_out, "started_at_out")?;
        let ended_at_out = out(ended_at_out, "ended_at_out")?;
        let h = obj(report, "report")?.hook(index)?;
        started_at_out.write(h.view.started_at.unwrap_or(f64::NAN));
        ended_at_out.write(h.view.ended_at);
        Ok(())
    })
}

/// Seconds the schedule ran for the hook, into `elapsed_out`; NaN when it did not run.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_elapsed(report: *const pidguard_cleanup_report, index: usize, elapsed_out: *mut f64) -> c_int {
    get("pidguard_cleanup_report_elapsed", report, index, (elapsed_out, "elapsed_out"), |h| h.view.elapsed.unwrap_or(f64::NAN))
}

/// Whether cleanup removed the hook's pidfile, into `removed_out`.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_pid_file_removed(report: *const pidguard_cleanup_report, index: usize, removed_out: *mut bool) -> c_int {
    get("pidguard_cleanup_report_pid_file_removed", report, index, (removed_out, "removed_out"), |h| h.view.pid_file_removed)
}

/// Whether the hook is finalized as succeeded (stale, already gone or exited, and no error),
/// into `succeeded_out`.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_succeeded(report: *const pidguard_cleanup_report, index: usize, succeeded_out: *mut bool) -> c_int {
    get("pidguard_cleanup_report_succeeded", report, index, (succeeded_out, "succeeded_out"), |h| h.view.succeeded)
}

/// What the hook's record aims at, into `scope_out`: PIDGUARD_SCOPE_CGROUP or
/// PIDGUARD_SCOPE_SUPERVISOR (its scope: the hook's whole tree) or PIDGUARD_SCOPE_GROUP (no
/// scope: the hook's process group).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_scope(report: *const pidguard_cleanup_report, index: usize, scope_out: *mut pidguard_scope) -> c_int {
    get("pidguard_cleanup_report_scope", report, index, (scope_out, "scope_out"), |h| h.scope)
}
