//! The plain result structs the caller allocates, filled from core's report views
//! (`pidguard_core::report`): every field comes from the view, except the C enum numbers, which
//! come from the core value through the one `From` of each enum (`types.rs`). Strings and
//! arrays a result points to are copies kept per thread ([`Kept`]).
#![allow(non_camel_case_types)]

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::os::unix::ffi::OsStrExt;
use std::ptr;

use pidguard_core::report::{PidFileCheckView, ProcessInfoView, StopView, TerminateView};
use pidguard_core::{PidFileCheck, ProcessInfo, Signal, StopReport, TerminateReport};

use crate::boundary::{FfiResult, Out};
use crate::types::*;

/// A C string of `b`; NUL bytes (impossible in a C string) become `?`, so C sees one whole
/// string.
pub(crate) fn c_string(b: impl AsRef<[u8]>) -> CString {
    CString::new(b.as_ref().iter().map(|&c| if c == 0 { b'?' } else { c }).collect::<Vec<u8>>()).unwrap_or_default()
}

/// The copies of the strings and arrays one result points to. Moving a `Kept` moves no string
/// or array: the pointers it gave out stay valid until it is dropped.
#[derive(Default)]
pub(crate) struct Kept {
    strings: Vec<CString>,
    lists: Vec<Vec<*const c_char>>,
    ints: Vec<Vec<i32>>,
}

impl Kept {
    /// A kept copy of `s`; NULL for `None`.
    pub(crate) fn str(&mut self, s: Option<impl AsRef<[u8]>>) -> *const c_char {
        s.map_or(ptr::null(), |s| {
            self.strings.push(c_string(s));
            self.strings.last().map_or(ptr::null(), |c| c.as_ptr())
        })
    }

    /// A kept NULL-terminated array of copies of `items` (never NULL, also when empty).
    pub(crate) fn strs<S: AsRef<[u8]>>(&mut self, items: &[S]) -> *const *const c_char {
        let mut ptrs: Vec<*const c_char> = items.iter().map(|s| self.str(Some(s))).collect();
        ptrs.push(ptr::null());
        self.lists.push(ptrs);
        self.lists.last().map_or(ptr::null(), |l| l.as_ptr())
    }

    /// A kept copy of `v`; NULL when it is empty.
    pub(crate) fn ints(&mut self, v: Vec<i32>) -> *const i32 {
        if v.is_empty() {
            return ptr::null();
        }
        self.ints.push(v);
        self.ints.last().map_or(ptr::null(), |v| v.as_ptr())
    }

    /// Keep these copies for the calling thread as the storage of `slot` (one per result struct
    /// type), freeing what that slot held: pointers given out in the previous result of the
    /// same type become invalid, as the header says.
    fn keep(self, slot: &'static str) {
        thread_local! {
            static SLOTS: RefCell<Vec<(&'static str, Kept)>> = const { RefCell::new(Vec::new()) };
        }
        let _ = SLOTS.try_with(|s| {
            let mut s = s.borrow_mut();
            match s.iter_mut().find(|(n, _)| *n == slot) {
                Some((_, k)) => *k = self,
                None => s.push((slot, self)),
            }
        });
    }
}

/// Fill a result struct with `fill`, keep the copies it points to for the calling thread (until
/// the thread's next result of the same type) and write it to `out`; nothing on failure.
pub(crate) fn write_result<T>(out: Out<T>, fill: impl FnOnce(&mut Kept) -> FfiResult<T>) -> FfiResult {
    let mut kept = Kept::default();
    let v = fill(&mut kept)?;
    kept.keep(std::any::type_name::<T>());
    out.write(v);
    Ok(())
}

/// The signal numbers of signal names from a view (`"TERM"` → 15).
pub(crate) fn signal_numbers(names: &[String]) -> FfiResult<Vec<i32>> {
    names.iter().map(|n| Signal::parse(n).map(Signal::number)).collect()
}

/// The number of an optional signal name; 0 for none.
pub(crate) fn signo(name: Option<&str>) -> FfiResult<i32> {
    name.map_or(Ok(0), |n| Signal::parse(n).map(Signal::number))
}

/// Size of pidguard_process_info.name, including the NUL.
pub const PIDGUARD_NAME_MAX: usize = 64;

/// Copy `s` into a fixed C buffer, NUL-terminated, truncated at a UTF-8 boundary.
fn fill_name(s: &str) -> [c_char; PIDGUARD_NAME_MAX] {
    let mut out = [0 as c_char; PIDGUARD_NAME_MAX];
    let b = s.as_bytes();
    let mut n = b.len().min(PIDGUARD_NAME_MAX - 1);
    while n > 0 && n < b.len() && !s.is_char_boundary(n) {
        n -= 1;
    }
    for (o, &c) in out.iter_mut().zip(&b[..n]) {
        *o = if c == 0 { b'?' as c_char } else { c as c_char };
    }
    out
}

/// The answer of pidguard_check_pid_file() about one abx-dl pidfile. A plain struct the caller
/// allocates (on the stack is fine); nothing in it needs freeing. `token` points to a copy the
/// library keeps for the calling thread until its next pidguard_check_pid_file().
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_pid_file_check {
    /// What pidguard_validate_pid_file() answers.
    pub valid: bool,
    /// Why.
    pub reason: pidguard_check_reason,
    /// The pid in the file; 0 when the content did not parse.
    pub pid: i32,
    /// The identity verdict; PIDGUARD_VERDICT_NONE when the process was not judged. A token-less
    /// file that passed the mtime rule is UNVERIFIABLE, not MATCH.
    pub verdict: pidguard_verdict,
    /// Why that verdict; PIDGUARD_REASON_NONE when not judged.
    pub verdict_reason: pidguard_reason,
    /// Whether the file carries a start token (the `user.pidguard.token` extended attribute).
    pub has_token: bool,
    /// Whether the record belongs to another machine or PID namespace (leave it alone)
    /// (`is_foreign` in the other bindings).
    pub foreign: bool,
    /// The file's mtime, seconds since the epoch; NaN when unknown.
    pub mtime: f64,
    /// The live process's psutil-compatible create time, seconds since the epoch; NaN when not
    /// read.
    pub create_time: f64,
    /// The start token of the file's `user.pidguard.token` attribute, NUL-terminated; NULL when
    /// it has none.
    pub token: *const c_char,
    /// The file's owner uid; -1 when the file could not be opened.
    pub owner_uid: i64,
    /// The file's mode bits (st_mode); -1 when the file could not be opened.
    pub mode: i64,
}

impl pidguard_pid_file_check {
    /// The C form of core's check, its token kept in `kept`.
    pub(crate) fn of(c: &PidFileCheck, kept: &mut Kept) -> Self {
        let v = PidFileCheckView::from(c);
        pidguard_pid_file_check {
            valid: v.valid,
            reason: (&c.reason).into(),
            pid: v.pid.unwrap_or(0),
            verdict: c.judgement.map(|j| j.verdict).into(),
            verdict_reason: c.judgement.map(|j| j.reason).into(),
            has_token: v.token.is_some(),
            foreign: v.is_foreign,
            mtime: v.mtime.unwrap_or(f64::NAN),
            create_time: v.create_time.unwrap_or(f64::NAN),
            token: kept.str(v.token),
            owner_uid: v.owner_uid.map_or(-1, i64::from),
            mode: v.mode.map_or(-1, i64::from),
        }
    }
}

/// What procfs says about one process (pidguard_lookup()). A plain struct the caller
/// allocates; nothing in it needs freeing. `token`, `argv` and `exe` point to copies the library
/// keeps for the calling thread until its next pidguard_lookup().
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_process_info {
    /// The pid.
    pub pid: i32,
    /// The parent pid.
    pub ppid: i32,
    /// The process group id.
    pub pgid: i32,
    /// The session id.
    pub sid: i32,
    /// The real uid; -1 when unreadable.
    pub uid: i64,
    /// The state letter of /proc/<pid>/stat ('R', 'S', 'Z' for a zombie, ...).
    pub state: c_char,
    /// Whether the process is a zombie (exited, not yet reaped) (`is_zombie` in the other
    /// bindings).
    pub zombie: bool,
    /// Whether the process leads its own process group (`is_group_leader` in the other
    /// bindings).
    pub group_leader: bool,
    /// Start time in clock ticks since boot (field 22 of /proc/<pid>/stat).
    pub start_ticks: u64,
    /// psutil-compatible create time, seconds since the epoch (only for the abx-dl mtime
    /// format; never used to decide identity); NaN when /proc/stat is unreadable.
    pub create_time: f64,
    /// The command name (comm), NUL-terminated, truncated to fit.
    pub name: [c_char; PIDGUARD_NAME_MAX],
    /// The start token (`linux1:...`), NUL-terminated.
    pub token: *const c_char,
    /// The argv: a NULL-terminated array of `n_argv` strings (empty for kernel threads and
    /// zombies); NULL when unreadable.
    pub argv: *const *const c_char,
    /// How many strings `argv` holds.
    pub n_argv: usize,
    /// The executable's path, NUL-terminated; NULL when unreadable.
    pub exe: *const c_char,
}

impl pidguard_process_info {
    /// The C form of core's process facts, its strings kept in `kept`.
    pub(crate) fn of(i: &ProcessInfo, kept: &mut Kept) -> Self {
        let v = ProcessInfoView::from(i);
        pidguard_process_info {
            pid: v.pid,
            ppid: v.ppid,
            pgid: v.pgid,
            sid: v.sid,
            uid: v.uid.map_or(-1, i64::from),
            state: v.state.bytes().next().unwrap_or(b'?') as c_char,
            zombie: v.is_zombie,
            group_leader: v.is_group_leader,
            start_ticks: u64::try_from(v.start_ticks).unwrap_or(0),
            create_time: v.create_time,
            name: fill_name(&v.name),
            token: kept.str(Some(&v.token)),
            argv: v.argv.as_deref().map_or(ptr::null(), |a| kept.strs(a)),
            n_argv: v.argv.as_ref().map_or(0, Vec::len),
            exe: kept.str(v.exe.as_deref().map(|p| p.as_os_str().as_bytes())),
        }
    }
}

/// What pidguard_terminate() did. A plain struct the caller allocates; nothing in it needs
/// freeing. `error`, `signals` and `survivors` point to copies the library keeps for the calling
/// thread until it next receives a pidguard_terminate_result (from pidguard_terminate() or
/// pidguard_process_terminate()).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_terminate_result {
    /// The outcome.
    pub outcome: pidguard_outcome,
    /// Why it was refused, for PIDGUARD_OUTCOME_REFUSED; else PIDGUARD_REFUSAL_NONE.
    pub refusal: pidguard_refusal,
    /// For PIDGUARD_OUTCOME_EXITED, the number of the last signal sent before it exited
    /// (SIGTERM, SIGKILL, ...); else 0 (`after` in the other bindings).
    pub exited_after: i32,
    /// The exit code when the target is the caller's child: the code, or 128 + signal number
    /// when a signal killed it; -1 when unknown (not the caller's child, never invented as 0).
    /// The child is not reaped: the caller still waits for it with waitpid().
    pub exit_code: i32,
    /// How many signals were sent (SIGCONT after SIGTERM included): the length of `signals`.
    pub signals_sent: u32,
    /// Whether the target's process group was signalled (the target led its group).
    pub group: bool,
    /// Whether signals went through a pidfd (false: kill(2) right after re-reading the start
    /// ticks, on kernels or sandboxes without pidfds).
    pub pinned: bool,
    /// Seconds from the start of the call to the outcome.
    pub elapsed: f64,
    /// The target's pid.
    pub pid: i32,
    /// Whether the target is gone now (PIDGUARD_OUTCOME_ALREADY_GONE or _EXITED).
    pub stopped: bool,
    /// For PIDGUARD_OUTCOME_ERROR, the message, NUL-terminated; else NULL.
    pub error: *const c_char,
    /// Every signal sent, in order, by number: `signals_sent` of them; NULL when none was.
    pub signals: *const i32,
    /// The number of the signal that ended the caller's own child; 0 when unknown.
    pub exit_signal: i32,
    /// How group signals were delivered; PIDGUARD_GROUP_MODE_NONE when no group was signalled.
    pub group_mode: pidguard_group_mode,
    /// Members of the group still alive at the end (for PIDGUARD_OUTCOME_UNKILLABLE):
    /// `n_survivors` pids; NULL when none.
    pub survivors: *const i32,
    /// How many pids `survivors` holds.
    pub n_survivors: usize,
    /// What was stopped: PIDGUARD_SCOPE_GROUP (the process group, or the process alone when
    /// `group` is false), PIDGUARD_SCOPE_CGROUP (the record's cgroup v2 leaf) or
    /// PIDGUARD_SCOPE_SUPERVISOR (the record's supervisor's tree).
    pub scope: pidguard_scope,
}

impl pidguard_terminate_result {
    /// The C form of core's report, its strings and arrays kept in `kept`.
    pub(crate) fn of(r: &TerminateReport, kept: &mut Kept) -> FfiResult<Self> {
        let v = TerminateView::from(r);
        let signals = signal_numbers(&v.signals)?;
        Ok(pidguard_terminate_result {
            outcome: (&r.outcome).into(),
            refusal: r.outcome.refusal().into(),
            exited_after: signo(v.after.as_deref())?,
            exit_code: v.exit_code.unwrap_or(-1),
            signals_sent: signals.len() as u32,
            group: v.group,
            pinned: v.pinned,
            elapsed: v.elapsed,
            pid: v.pid,
            stopped: v.stopped,
            error: kept.str(v.error),
            signals: kept.ints(signals),
            exit_signal: v.exit_signal.unwrap_or(0),
            group_mode: r.group_mode.into(),
            n_survivors: v.survivors.len(),
            survivors: kept.ints(v.survivors),
            scope: (&r.scope).into(),
        })
    }
}

/// What pidguard_stop_pid_file() did. A plain struct the caller allocates; nothing in it needs
/// freeing. Its strings and arrays (also those of `check` and `terminate`) point to copies the
/// library keeps for the calling thread until its next pidguard_stop_pid_file().
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_stop_result {
    /// The outcome.
    pub outcome: pidguard_stop_outcome,
    /// The exit status `pidguard stop` gives for this outcome: 0 stopped, 1 nothing to do
    /// (stale or already gone), 2 unkillable or a signalling error, 3 refused or foreign, 5
    /// undecided (the identity could not be read), 77 the kernel refused the signal (EPERM). (A
    /// negative status from pidguard_stop_pid_file() is the command's 4, bad input.) (`status`
    /// in the other bindings.)
    pub exit_status: i32,
    /// Repeats `check.reason`: what pidguard_check_pid_file() said (why the record was stale,
    /// for PIDGUARD_STOP_STALE).
    pub reason: pidguard_check_reason,
    /// Repeats `check.verdict`: the identity verdict; PIDGUARD_VERDICT_NONE when not judged.
    pub verdict: pidguard_verdict,
    /// Repeats `check.pid`: the pid in the file; 0 when there was none.
    pub pid: i32,
    /// Why it was refused, for PIDGUARD_STOP_REFUSED; else PIDGUARD_REFUSAL_NONE.
    pub refusal: pidguard_refusal,
    /// For PIDGUARD_STOP_EXITED, the number of the last signal sent before it exited; else 0
    /// (`after` in the other bindings).
    pub exited_after: i32,
    /// Repeats `terminate.exit_code` (-1 without `terminate`).
    pub exit_code: i32,
    /// The length of `signals`.
    pub signals_sent: u32,
    /// Repeats `terminate.group` (false without `terminate`).
    pub group: bool,
    /// Repeats `terminate.pinned` (false without `terminate`).
    pub pinned: bool,
    /// Whether the pidfile was removed (only stale or stopped records, and only if the file was
    /// still the one judged).
    pub pid_file_removed: bool,
    /// Whether the identity was taken on the lenient policy; the warning (`warning_message`)
    /// is then also the thread's last error message.
    pub warning: bool,
    /// Repeats `terminate.elapsed`: seconds the schedule ran (0 without `terminate`).
    pub elapsed: f64,
    /// The pidfile, NUL-terminated.
    pub pid_file: *const c_char,
    /// Its format (the file is read to tell).
    pub format: pidguard_format,
    /// Whether `stale_reason` is set (for PIDGUARD_STOP_STALE).
    pub has_stale_reason: bool,
    /// For PIDGUARD_STOP_STALE, why the record is stale; else PIDGUARD_CHECK_VALID (see
    /// `has_stale_reason`).
    pub stale_reason: pidguard_check_reason,
    /// The particulars of a refusal ("owned by uid 65534, target uid 0"), NUL-terminated; NULL
    /// when there are none.
    pub detail: *const c_char,
    /// For PIDGUARD_STOP_ERROR, the message, NUL-terminated; else NULL.
    pub error: *const c_char,
    /// Every signal sent, in order, by number (`signals_sent` of them); NULL when none was.
    pub signals: *const i32,
    /// The warning (for example that the lenient policy was used), NUL-terminated; NULL when
    /// there is none (`warning` in the other bindings, whose presence is the `warning` member
    /// here).
    pub warning_message: *const c_char,
    /// What pidguard_check_pid_file() said about the file.
    pub check: pidguard_pid_file_check,
    /// Whether the process was pinned and the schedule ran (`terminate` is set).
    pub has_terminate: bool,
    /// The termination report when `has_terminate`; all members zero (pointers NULL) otherwise.
    pub terminate: pidguard_terminate_result,
    /// What the record aims at: PIDGUARD_SCOPE_CGROUP or PIDGUARD_SCOPE_SUPERVISOR (the scope
    /// recorded with a command pidguard started: its whole tree), or PIDGUARD_SCOPE_GROUP (no
    /// scope, or the recorded one is gone).
    pub scope: pidguard_scope,
}

impl pidguard_stop_result {
    /// The C form of core's report, its strings and arrays kept in `kept`.
    pub(crate) fn of(r: &StopReport, kept: &mut Kept) -> FfiResult<Self> {
        let v = StopView::from(r);
        let check = pidguard_pid_file_check::of(&r.check, kept);
        let terminate = r.terminate.as_ref().map(|t| pidguard_terminate_result::of(t, kept)).transpose()?;
        let signals = signal_numbers(&v.signals)?;
        Ok(pidguard_stop_result {
            outcome: (&r.outcome).into(),
            exit_status: v.status,
            reason: check.reason,
            verdict: check.verdict,
            pid: check.pid,
            refusal: r.outcome.refusal().into(),
            exited_after: signo(v.after.as_deref())?,
            exit_code: terminate.map_or(-1, |t| t.exit_code),
            signals_sent: signals.len() as u32,
            group: terminate.is_some_and(|t| t.group),
            pinned: terminate.is_some_and(|t| t.pinned),
            pid_file_removed: v.pid_file_removed,
            warning: v.warning.is_some(),
            elapsed: terminate.map_or(0.0, |t| t.elapsed),
            pid_file: kept.str(Some(v.pid_file.as_os_str().as_bytes())),
            format: (&r.format).into(),
            has_stale_reason: v.stale_reason.is_some(),
            stale_reason: r.outcome.stale_reason().as_ref().map_or(pidguard_check_reason::PIDGUARD_CHECK_VALID, Into::into),
            detail: kept.str(v.detail),
            error: kept.str(v.error),
            signals: kept.ints(signals),
            warning_message: kept.str(v.warning),
            check,
            has_terminate: terminate.is_some(),
            // SAFETY: every member of pidguard_terminate_result is valid as all-zero bytes
            // (numbers, bools, NULL pointers, and enums whose 0 is a value).
            terminate: terminate.unwrap_or(unsafe { std::mem::zeroed() }),
            scope: (&r.scope).into(),
        })
    }
}
