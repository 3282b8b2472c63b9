//! What a cleanup reports: its options, each hook's outcome and report, and the finalize-error
//! wording the exit codes read.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::identity::{Reason, Verdict};
use crate::pidfile::mtime::{CheckReason};
use crate::signal::{Refusal, Signal};

pub use crate::options::CleanupOptions;

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
    /// [`path_text`](crate::pathtext::path_text) form (a name that is not UTF-8 or holds a
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
    /// [`path_text`](crate::pathtext::path_text) form, sorted: everything but the four files (`.pid`,
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
    /// What the record aims at: its scope (`Cgroup`, `Supervisor`: the hook's whole tree), or
    /// `Group` (no scope recorded, or the recorded one is gone).
    pub scope: crate::identity::ScopeKind,
}

impl HookReport {
    /// Whether the hook is finalized as succeeded.
    pub fn succeeded(&self) -> bool {
        self.outcome.succeeded() && self.error.is_none()
    }
}

/// What a hook's `error` says of a failed finalize (the default's, or the caller's callback):
/// `finalize failed: <why>`, after any error already there (see [`finalize_failed`]).
pub(crate) const FINALIZE_FAILED: &str = "finalize failed: ";

pub(super) fn add_finalize_error(report: &mut HookReport, e: String) {
    report.error = Some(match report.error.take() {
        Some(prev) => format!("{prev}; {FINALIZE_FAILED}{e}"),
        None => format!("{FINALIZE_FAILED}{e}"),
    });
}

/// Whether the hook's finalize (the default's, or the caller's callback) failed.
pub(crate) fn finalize_failed(report: &HookReport) -> bool {
    report.error.as_deref().is_some_and(|e| e.starts_with(FINALIZE_FAILED) || e.contains(&format!("; {FINALIZE_FAILED}")))
}

/// The name of one of a hook's files: the stem of its pidfile (`on_x.bg` of `on_x.bg.pid`, as
/// the bytes of its name, whatever bytes it holds) with `suffix` appended (`<name>.sh`,
/// `<name>.stdout.log`), in one allocation.
pub(crate) fn stem_with(pid_file: &Path, suffix: &str) -> std::ffi::OsString {
    let stem = pid_file.file_stem().unwrap_or_default();
    let mut s = std::ffi::OsString::with_capacity(stem.len() + suffix.len());
    s.push(stem);
    s.push(suffix);
    s
}

/// [`stem_with`] without an allocation: the name is built in a buffer on the stack (a file
/// name is at most `NAME_MAX`, 255 bytes, so a stem and a suffix of up to 16 bytes always fit;
/// a longer stem, which names no file, gets a heap copy) and handed to `f`.
pub(crate) fn with_stem_name<R>(pid_file: &Path, suffix: &str, f: impl FnOnce(&std::ffi::OsStr) -> R) -> R {
    use std::os::unix::ffi::OsStrExt;
    let stem = pid_file.file_stem().unwrap_or_default().as_bytes();
    let mut buf = [0u8; 272];
    let n = stem.len() + suffix.len();
    if n > buf.len() {
        return f(&stem_with(pid_file, suffix));
    }
    buf[..stem.len()].copy_from_slice(stem);
    buf[stem.len()..n].copy_from_slice(suffix.as_bytes());
    f(std::ffi::OsStr::from_bytes(&buf[..n]))
}

/// `dir.join(name)` in one allocation (`Path::join` copies, then grows the copy).
pub(crate) fn joined(dir: &Path, name: &std::ffi::OsStr) -> std::path::PathBuf {
    let mut p = std::path::PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    p.push(dir);
    p.push(name);
    p
}

/// An empty `output_files`, shared (no allocation per report).
pub(crate) fn no_files() -> Arc<[String]> {
    static EMPTY: std::sync::OnceLock<Arc<[String]>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::from(Vec::new())).clone()
}

/// Tests' odd text (every ASCII byte, non-ASCII, `\u{2028}`, slash, backslash, quote) and a
/// stale report with odd bytes in its directory and argv: what the JSON writers are compared on.
#[cfg(test)]
pub(crate) fn odd_text_and_report() -> (String, HookReport) {
    let mut odd = String::new();
    for c in 0u8..0x80 {
        odd.push(c as char);
    }
    odd.push_str("é€😀\u{7f}\u{2028}/\\\"");
    let report = HookReport {
        name: "on_Snapshot__20_x.bg".into(),
        dir: "/tmp/o/plugin\u{1}\"x".into(),
        pid_file: "/tmp/o/plugin/on_x.pid".into(),
        pid: Some(-2147483648),
        verdict: None,
        verdict_reason: None,
        reason: crate::CheckReason::Gone,
        outcome: HookOutcome::Stale,
        signals: Vec::new(),
        exit_code: None,
        error: None,
        output_files: no_files(),
        cmd: vec!["sleep".into(), "6\"0\n0".into()],
        unverified_leftovers: Vec::new(),
        started_at: Some(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::new(1_796_479_884, 739_415_123)),
        ended_at: std::time::SystemTime::now(),
        pid_file_removed: false,
        elapsed: None,
        notes: Vec::new(),
        scope: crate::identity::ScopeKind::Group,
    };
    (odd, report)
}
