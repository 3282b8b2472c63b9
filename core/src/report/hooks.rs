//! The view of one hook of a cleanup: [`HookView`].

use serde::Serialize;

#[cfg(doc)]
use crate::pathtext::path_text;

use super::base::{epoch_secs, slug, ReportPath};

/// What `cleanup_background_hooks` did with one hook.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, dict, name = "HookReport", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "HookReport", object_from_js = false))]
pub struct HookView {
    /// The hook's basename (`on_Snapshot__20_x.bg`), in the lossless
    /// [`path_text`] form (a name that is not UTF-8 or holds a
    /// backslash is escaped there).
    pub name: String,
    /// The directory holding its files.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub dir: ReportPath,
    /// Its pidfile.
    #[cfg_attr(feature = "node", napi(ts_type = "string"))]
    pub pid_file: ReportPath,
    /// The recorded pid, when the file parsed.
    pub pid: Option<i32>,
    /// The identity verdict, when judged: `match`, `mismatch`, `unverifiable` or `gone`.
    pub verdict: Option<String>,
    /// Why that verdict (`token-equal`, `no-such-process`, …), when judged.
    pub verdict_reason: Option<String>,
    /// The pidfile check's reason (`valid`, `gone`, `mtime-skew`, …).
    pub reason: String,
    /// What cleanup did: `stale`, `foreign`, `unreadable`, `unverified`, `already-gone`,
    /// `exited`, `unkillable`, `refused` or `error`.
    pub outcome: String,
    /// For `exited`: the signal after which the group exited.
    pub after: Option<String>,
    /// For `refused`: why.
    pub refusal: Option<String>,
    /// Every signal sent, in order, by name.
    pub signals: Vec<String>,
    /// The exit code when known (the caller's own child): the code, or 128 + signal.
    pub exit_code: Option<i32>,
    /// The error, for failed hooks (`Process unkillable`, a refusal, a finalize failure).
    pub error: Option<String>,
    /// What the cleanup could not read beside the hook (a log that is a symlink or a FIFO, a
    /// log cut at 16 MiB), one sentence each.
    pub notes: Vec<String>,
    /// Files under `dir`, relative to it, in the lossless
    /// [`path_text`] form, sorted: everything but the four files (`.pid`, `.sh`,
    /// `.stdout.log`, `.stderr.log`) of every hook the cleanup found in it.
    pub output_files: Vec<String>,
    /// The argv recorded in the `.sh` file.
    pub cmd: Vec<String>,
    /// Live processes whose group is the recorded pid of a stale record: listed, never
    /// signalled.
    pub unverified_leftovers: Vec<i32>,
    /// When the hook started (the pidfile's mtime), seconds since the epoch.
    pub started_at: Option<f64>,
    /// When cleanup finished with it, seconds since the epoch.
    pub ended_at: f64,
    /// Seconds the schedule ran for this hook, when it ran.
    pub elapsed: Option<f64>,
    /// Whether the pidfile was removed.
    pub pid_file_removed: bool,
    /// Whether the hook counts as succeeded.
    pub succeeded: bool,
    /// What the record aims at: `cgroup`, `supervisor` (its scope: the hook's whole tree) or
    /// `group` (no scope: the hook's process group).
    pub scope: String,
}

impl From<&crate::HookReport> for HookView {
    fn from(r: &crate::HookReport) -> Self {
        HookView {
            name: r.name.clone(),
            dir: r.dir.clone().into(),
            pid_file: r.pid_file.clone().into(),
            error: r.error.clone(),
            notes: r.notes.clone(),
            cmd: r.cmd.clone(),
            unverified_leftovers: r.unverified_leftovers.clone(),
            ..HookView::scalars(r)
        }
    }
}

/// From an owned report the strings and lists are moved, not copied (a cleanup of thousands of
/// hooks converts every report).
impl From<crate::HookReport> for HookView {
    fn from(r: crate::HookReport) -> Self {
        let v = HookView::scalars(&r);
        HookView {
            name: r.name,
            dir: r.dir.into(),
            pid_file: r.pid_file.into(),
            error: r.error,
            notes: r.notes,
            cmd: r.cmd,
            unverified_leftovers: r.unverified_leftovers,
            ..v
        }
    }
}

/// Append to `out` the JSON of `r`'s [`HookView`], the very bytes of
/// `serde_json::to_vec(&HookView::from(r))` (compact, fields in the view's order, `null` for
/// what is absent), without building the view: no copy of its strings and lists, no allocation
/// for its slugs. The CLI's `cleanup --json` writes thousands of these; a test compares the
/// bytes with serde_json's for reports of every shape.
pub fn write_hook_json(out: &mut Vec<u8>, r: &crate::HookReport) {
    use crate::json::{put_int, put_key, put_str, put_strs};
    fn opt_str(out: &mut Vec<u8>, s: Option<&str>) {
        match s {
            Some(s) => put_str(out, s),
            None => out.extend_from_slice(b"null"),
        }
    }
    fn opt_int(out: &mut Vec<u8>, n: Option<i32>) {
        match n {
            Some(n) => put_int(out, n),
            None => out.extend_from_slice(b"null"),
        }
    }
    fn float(out: &mut Vec<u8>, v: Option<f64>) {
        // serde_json's own formatting (ryu; `null` when not finite): the same digits.
        // Unreachable error: writing to a vector does not fail.
        serde_json::to_writer(&mut *out, &v).expect("a write to a vector");
    }
    out.push(b'{');
    put_key(out, "name");
    put_str(out, &r.name);
    put_key(out, "dir");
    put_str(out, &path_text_of(&r.dir));
    put_key(out, "pid_file");
    put_str(out, &path_text_of(&r.pid_file));
    put_key(out, "pid");
    opt_int(out, r.pid);
    put_key(out, "verdict");
    opt_str(out, r.verdict.map(|v| v.as_str()));
    put_key(out, "verdict_reason");
    opt_str(out, r.verdict_reason.map(|x| slug(&x)).as_deref());
    put_key(out, "reason");
    put_str(out, r.reason.as_str());
    put_key(out, "outcome");
    put_str(out, r.outcome.as_str());
    put_key(out, "after");
    opt_str(out, r.outcome.after().map(|s| s.name()).as_deref());
    put_key(out, "refusal");
    opt_str(out, r.outcome.refusal().map(|x| x.as_str()));
    put_key(out, "signals");
    out.push(b'[');
    for (i, sig) in r.signals.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put_str(out, &sig.name());
    }
    out.push(b']');
    put_key(out, "exit_code");
    opt_int(out, r.exit_code);
    put_key(out, "error");
    opt_str(out, r.error.as_deref());
    put_key(out, "notes");
    put_strs(out, &r.notes);
    put_key(out, "output_files");
    put_strs(out, &r.output_files);
    put_key(out, "cmd");
    put_strs(out, &r.cmd);
    put_key(out, "unverified_leftovers");
    out.push(b'[');
    for (i, pid) in r.unverified_leftovers.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put_int(out, *pid);
    }
    out.push(b']');
    put_key(out, "started_at");
    float(out, r.started_at.map(epoch_secs));
    put_key(out, "ended_at");
    float(out, Some(epoch_secs(r.ended_at)));
    put_key(out, "elapsed");
    float(out, r.elapsed.map(|d| d.as_secs_f64()));
    put_key(out, "pid_file_removed");
    out.extend_from_slice(if r.pid_file_removed { b"true" } else { b"false" });
    put_key(out, "succeeded");
    out.extend_from_slice(if r.succeeded() { b"true" } else { b"false" });
    put_key(out, "scope");
    put_str(out, r.scope.as_str());
    out.push(b'}');
}

/// A report path as JSON shows it ([`ReportPath`]'s serialization: its `path_text` form).
fn path_text_of(p: &std::path::Path) -> std::borrow::Cow<'_, str> {
    crate::pathtext::path_text(p.as_os_str())
}

impl HookView {
    /// Everything but the owned strings and lists, which the two conversions take differently.
    fn scalars(r: &crate::HookReport) -> HookView {
        HookView {
            name: String::new(),
            dir: ReportPath::default(),
            pid_file: ReportPath::default(),
            pid: r.pid,
            verdict: r.verdict.map(|v| v.as_str().to_string()),
            verdict_reason: r.verdict_reason.map(|x| slug(&x)),
            reason: r.reason.as_str().to_string(),
            outcome: r.outcome.as_str().to_string(),
            after: r.outcome.after().map(|s| s.name()),
            refusal: r.outcome.refusal().map(|x| x.as_str().to_string()),
            signals: r.signals.iter().map(|s| s.name()).collect(),
            exit_code: r.exit_code,
            error: None,
            notes: Vec::new(),
            output_files: r.output_files.to_vec(),
            cmd: Vec::new(),
            unverified_leftovers: Vec::new(),
            started_at: r.started_at.map(epoch_secs),
            ended_at: epoch_secs(r.ended_at),
            elapsed: r.elapsed.map(|d| d.as_secs_f64()),
            pid_file_removed: r.pid_file_removed,
            succeeded: r.succeeded(),
            scope: r.scope.as_str().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::HookOutcome;
    use std::time::{Duration, SystemTime};

    /// `write_hook_json` against serde_json of the view, for reports of every shape: absent and
    /// present options, every kind of outcome, signals, leftovers, odd text (controls, quotes,
    /// backslashes, non-ASCII), paths that are not UTF-8, times before the epoch.
    #[test]
    fn the_hook_json_writer_writes_what_serde_json_writes() {
        use std::os::unix::ffi::OsStrExt;
        let (odd, base) = crate::hooks::outcome::odd_text_and_report();
        let mut shapes = vec![base.clone()];
        let mut r = base.clone();
        r.pid = None;
        r.started_at = None;
        r.ended_at = SystemTime::UNIX_EPOCH - Duration::new(5, 250_000_000);
        r.name = odd.clone();
        r.dir = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/\xff\xfe/a\\b"));
        shapes.push(r);
        let mut r = base.clone();
        r.verdict = Some(crate::Verdict::Unverifiable);
        r.verdict_reason = Some(crate::identity::Reason::LiveIdentityUnreadable(libc::EMFILE));
        r.outcome = HookOutcome::Exited(crate::Signal::KILL);
        r.signals = vec![crate::Signal::TERM, crate::Signal::KILL];
        r.exit_code = Some(137);
        r.error = Some(odd.clone());
        r.notes = vec![String::new(), odd.clone()];
        r.output_files = std::sync::Arc::from(vec!["a.txt".to_string(), "sub/\u{1b}[31m".to_string()]);
        r.unverified_leftovers = vec![7, 4194304];
        r.elapsed = Some(Duration::new(2, 123_456_789));
        r.pid_file_removed = true;
        r.scope = crate::identity::ScopeKind::Supervisor;
        shapes.push(r);
        for outcome in [HookOutcome::Foreign, HookOutcome::Unreadable, HookOutcome::AlreadyGone, HookOutcome::Unkillable, HookOutcome::Refused(crate::Refusal::NonPositivePid), HookOutcome::Error, HookOutcome::Unverified] {
            let mut r = base.clone();
            r.outcome = outcome;
            r.verdict = Some(crate::Verdict::Match);
            r.verdict_reason = Some(crate::identity::Reason::NoSuchProcess);
            r.cmd = Vec::new();
            r.scope = crate::identity::ScopeKind::Cgroup;
            shapes.push(r);
        }
        for (i, r) in shapes.iter().enumerate() {
            let mut mine = b"[{\"x\":1},".to_vec();
            write_hook_json(&mut mine, r);
            let mut theirs = b"[{\"x\":1},".to_vec();
            serde_json::to_writer(&mut theirs, &HookView::from(r)).unwrap();
            assert_eq!(String::from_utf8_lossy(&mine), String::from_utf8_lossy(&theirs), "shape {i}");
        }
    }
}
