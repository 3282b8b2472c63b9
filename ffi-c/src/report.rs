//! The cleanup report: an opaque object the caller owns, read through accessors, freed with
//! `pidguard_cleanup_report_free`.

use std::ffi::{c_char, c_int, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::time::{SystemTime, UNIX_EPOCH};

use pidguard_core::hooks::{CleanupOptions, HookReport};
use pidguard_core::{self as pg, Schedule};

use crate::boundary::{obj, opt_path, opt_utf8, out, path, FfiResult};
use crate::types::*;

/// A list of strings kept alive together with the array of pointers C reads.
struct CStrings {
    _owned: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

impl CStrings {
    fn new<S: AsRef<[u8]>>(items: impl IntoIterator<Item = S>) -> CStrings {
        let owned: Vec<CString> = items.into_iter().map(|s| c_string(s.as_ref())).collect();
        let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
        CStrings { _owned: owned, ptrs }
    }
}

fn c_string(b: &[u8]) -> CString {
    // Paths and messages hold no NUL; should one ever appear, C still gets one whole string.
    CString::new(b.iter().map(|&c| if c == 0 { b'?' } else { c }).collect::<Vec<u8>>()).unwrap_or_default()
}

fn c_path(p: &Path) -> CString {
    c_string(p.as_os_str().as_bytes())
}

struct Hook {
    core: HookReport,
    name: CString,
    dir: CString,
    pid_file: CString,
    error: Option<CString>,
    signals: Vec<i32>,
    leftovers: Vec<i32>,
    output_files: CStrings,
    cmd: CStrings,
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

fn hook<'a>(report: *const pidguard_cleanup_report, index: usize) -> FfiResult<&'a Hook> {
    let r = obj(report, "report")?;
    r.hooks.get(index).ok_or_else(|| {
        pg::Error::invalid(format!("index {index} is out of range: the report has {} hooks", r.hooks.len()))
    })
}

fn secs(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

fn slice_ptr<T>(v: &[T]) -> *const T {
    if v.is_empty() {
        ptr::null()
    } else {
        v.as_ptr()
    }
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
        let schedule: Schedule = match opt_utf8(schedule, "schedule")? {
            Some(s) => s.parse()?,
            None => Schedule::default(),
        };
        let pattern = opt_utf8(pattern, "pattern")?;
        let report_out = out(report_out, "report_out")?;
        let mut opts = CleanupOptions { index_path: index_path.map(Path::to_path_buf), is_tty, schedule, ..Default::default() };
        if let Some(p) = pattern {
            opts.pattern = p.to_string();
        }
        let reports = pg::cleanup_background_hooks(output_dir, &opts, None)?;
        let hooks = reports
            .into_iter()
            .map(|r| Hook {
                name: c_string(r.name.as_bytes()),
                dir: c_path(&r.dir),
                pid_file: c_path(&r.pid_file),
                error: r.error.as_deref().map(|e| c_string(e.as_bytes())),
                signals: r.signals.iter().map(|s| s.number()).collect(),
                leftovers: r.unverified_leftovers.clone(),
                output_files: CStrings::new(r.output_files.iter().map(|s| s.as_bytes())),
                cmd: CStrings::new(r.cmd.iter().map(|s| s.as_bytes())),
                core: r,
            })
            .collect();
        report_out.write(Box::into_raw(Box::new(pidguard_cleanup_report { hooks })));
        Ok(())
    })
}

/// Free a report from pidguard_cleanup_background_hooks(), and every string and array its
/// accessors gave out. NULL is allowed and does nothing. Freeing a report twice, or using it
/// afterwards, is undefined behaviour.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_free(report: *mut pidguard_cleanup_report) {
    crate::boundary::run_value((), || {
        if !report.is_null() {
            // SAFETY: `report` came from Box::into_raw in pidguard_cleanup_background_hooks and
            // the caller frees it once.
            drop(unsafe { Box::from_raw(report) });
        }
    })
}

/// The number of hooks (pidfiles found) in `report`, into `len_out`. Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_len(report: *const pidguard_cleanup_report, len_out: *mut usize) -> c_int {
    ffi!("pidguard_cleanup_report_len", {
        let r = obj(report, "report")?;
        out(len_out, "len_out")?.write(r.hooks.len());
        Ok(())
    })
}

/// The hook's name, its pidfile's basename without `.pid` ("on_Snapshot__20_chrome.bg"), into
/// `name_out`: a NUL-terminated string owned by the report. Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL argument or an index >= the report's length (the same
/// holds for every pidguard_cleanup_report_* accessor taking an index).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_name(
    report: *const pidguard_cleanup_report,
    index: usize,
    name_out: *mut *const c_char,
) -> c_int {
    ffi!("pidguard_cleanup_report_name", {
        let name_out = out(name_out, "name_out")?;
        name_out.write(hook(report, index)?.name.as_ptr());
        Ok(())
    })
}

/// The directory holding the hook's files, into `dir_out` (a string owned by the report).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_dir(
    report: *const pidguard_cleanup_report,
    index: usize,
    dir_out: *mut *const c_char,
) -> c_int {
    ffi!("pidguard_cleanup_report_dir", {
        let dir_out = out(dir_out, "dir_out")?;
        dir_out.write(hook(report, index)?.dir.as_ptr());
        Ok(())
    })
}

/// The hook's pidfile path, into `pid_file_out` (a string owned by the report).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_pid_file(
    report: *const pidguard_cleanup_report,
    index: usize,
    pid_file_out: *mut *const c_char,
) -> c_int {
    ffi!("pidguard_cleanup_report_pid_file", {
        let pid_file_out = out(pid_file_out, "pid_file_out")?;
        pid_file_out.write(hook(report, index)?.pid_file.as_ptr());
        Ok(())
    })
}

/// The pid recorded in the hook's pidfile, into `pid_out`; 0 when the file did not parse.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_pid(report: *const pidguard_cleanup_report, index: usize, pid_out: *mut i32) -> c_int {
    ffi!("pidguard_cleanup_report_pid", {
        let pid_out = out(pid_out, "pid_out")?;
        pid_out.write(hook(report, index)?.core.pid.unwrap_or(0));
        Ok(())
    })
}

/// The identity verdict, into `verdict_out`; PIDGUARD_VERDICT_NONE when the process was not
/// judged (missing or malformed pidfile).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_verdict(
    report: *const pidguard_cleanup_report,
    index: usize,
    verdict_out: *mut pidguard_verdict,
) -> c_int {
    ffi!("pidguard_cleanup_report_verdict", {
        let verdict_out = out(verdict_out, "verdict_out")?;
        verdict_out.write(pidguard_verdict::of(hook(report, index)?.core.verdict));
        Ok(())
    })
}

/// The pidfile check's reason (valid, gone, mtime skew, ...), into `reason_out`.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_reason(
    report: *const pidguard_cleanup_report,
    index: usize,
    reason_out: *mut pidguard_check_reason,
) -> c_int {
    ffi!("pidguard_cleanup_report_reason", {
        let reason_out = out(reason_out, "reason_out")?;
        reason_out.write(pidguard_check_reason::of(hook(report, index)?.core.reason));
        Ok(())
    })
}

/// What cleanup did with the hook, into `outcome_out`.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_outcome(
    report: *const pidguard_cleanup_report,
    index: usize,
    outcome_out: *mut pidguard_hook_outcome,
) -> c_int {
    ffi!("pidguard_cleanup_report_outcome", {
        let outcome_out = out(outcome_out, "outcome_out")?;
        outcome_out.write(pidguard_hook_outcome::of(&hook(report, index)?.core.outcome));
        Ok(())
    })
}

/// Why signalling was refused, for PIDGUARD_HOOK_REFUSED, into `refusal_out`;
/// PIDGUARD_REFUSAL_NONE otherwise.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_refusal(
    report: *const pidguard_cleanup_report,
    index: usize,
    refusal_out: *mut pidguard_refusal,
) -> c_int {
    ffi!("pidguard_cleanup_report_refusal", {
        let refusal_out = out(refusal_out, "refusal_out")?;
        let r = hook(report, index)?.core.outcome.refusal();
        refusal_out.write(pidguard_refusal::of(r));
        Ok(())
    })
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
    ffi!("pidguard_cleanup_report_signals", {
        let signals_out = out(signals_out, "signals_out")?;
        let len_out = out(len_out, "len_out")?;
        let h = hook(report, index)?;
        signals_out.write(slice_ptr(&h.signals));
        len_out.write(h.signals.len());
        Ok(())
    })
}

/// The hook's exit code when known (the caller's own child: the code, or 128 + signal), into
/// `exit_code_out`; -1 when unknown (it is not the caller's child: never invented as 0).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_exit_code(
    report: *const pidguard_cleanup_report,
    index: usize,
    exit_code_out: *mut i32,
) -> c_int {
    ffi!("pidguard_cleanup_report_exit_code", {
        let exit_code_out = out(exit_code_out, "exit_code_out")?;
        exit_code_out.write(hook(report, index)?.core.exit_code.unwrap_or(-1));
        Ok(())
    })
}

/// The error of a failed hook ("Process unkillable", a refusal, a finalize failure), into
/// `error_out`: a string owned by the report, or NULL when the hook did not fail.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_error(
    report: *const pidguard_cleanup_report,
    index: usize,
    error_out: *mut *const c_char,
) -> c_int {
    ffi!("pidguard_cleanup_report_error", {
        let error_out = out(error_out, "error_out")?;
        error_out.write(hook(report, index)?.error.as_ref().map_or(ptr::null(), |e| e.as_ptr()));
        Ok(())
    })
}

/// The files the hook's directory holds (relative to it; sorted), other than the .stdout.log,
/// .stderr.log, .pid and .sh of every hook the cleanup found there: `files_out` receives an array of `len_out`
/// strings owned by the report (NULL when there is none).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_output_files(
    report: *const pidguard_cleanup_report,
    index: usize,
    files_out: *mut *const *const c_char,
    len_out: *mut usize,
) -> c_int {
    ffi!("pidguard_cleanup_report_output_files", {
        let files_out = out(files_out, "files_out")?;
        let len_out = out(len_out, "len_out")?;
        let h = hook(report, index)?;
        files_out.write(slice_ptr(&h.output_files.ptrs));
        len_out.write(h.output_files.ptrs.len());
        Ok(())
    })
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
    ffi!("pidguard_cleanup_report_cmd", {
        let argv_out = out(argv_out, "argv_out")?;
        let len_out = out(len_out, "len_out")?;
        let h = hook(report, index)?;
        argv_out.write(slice_ptr(&h.cmd.ptrs));
        len_out.write(h.cmd.ptrs.len());
        Ok(())
    })
}

/// Live processes whose process group is the recorded pid of a stale record: listed, never
/// signalled (they cannot be proven to be the hook's). `pids_out` receives an array of `len_out`
/// pids owned by the report (NULL when there is none).
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_leftovers(
    report: *const pidguard_cleanup_report,
    index: usize,
    pids_out: *mut *const i32,
    len_out: *mut usize,
) -> c_int {
    ffi!("pidguard_cleanup_report_leftovers", {
        let pids_out = out(pids_out, "pids_out")?;
        let len_out = out(len_out, "len_out")?;
        let h = hook(report, index)?;
        pids_out.write(slice_ptr(&h.leftovers));
        len_out.write(h.leftovers.len());
        Ok(())
    })
}

/// When the hook started (its pidfile's mtime; NaN when unknown) and when cleanup finished with
/// it, seconds since the epoch, into `started_at_out` and `ended_at_out`.
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
        let h = hook(report, index)?;
        started_at_out.write(h.core.started_at.map_or(f64::NAN, secs));
        ended_at_out.write(secs(h.core.ended_at));
        Ok(())
    })
}

/// Whether cleanup removed the hook's pidfile, into `removed_out`.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_pid_file_removed(
    report: *const pidguard_cleanup_report,
    index: usize,
    removed_out: *mut bool,
) -> c_int {
    ffi!("pidguard_cleanup_report_pid_file_removed", {
        let removed_out = out(removed_out, "removed_out")?;
        removed_out.write(hook(report, index)?.core.pid_file_removed);
        Ok(())
    })
}

/// Whether the hook is finalized as succeeded (stale, already gone or exited, and no error),
/// into `succeeded_out`.
#[no_mangle]
pub extern "C" fn pidguard_cleanup_report_succeeded(
    report: *const pidguard_cleanup_report,
    index: usize,
    succeeded_out: *mut bool,
) -> c_int {
    ffi!("pidguard_cleanup_report_succeeded", {
        let succeeded_out = out(succeeded_out, "succeeded_out")?;
        succeeded_out.write(hook(report, index)?.core.succeeded());
        Ok(())
    })
}
