//! The default finalize: abx-dl's `Process` and `ArchiveResult` JSON lines.

use std::fs;
use std::io::Write;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::Serialize;

use super::HookReport;
use crate::error::{Error, Result};
use crate::sys::DirFd;

/// A new record id: 12 hex digits of the millisecond time, `-`, 20 random hex digits.
pub fn new_id() -> String {
    let ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let mut rnd = [0u8; 10];
    crate::pidfile::atomic::random_bytes(&mut rnd);
    format!("{:012x}-{}", ms & 0xffff_ffff_ffff, crate::pidfile::atomic::hex(&rnd))
}

fn iso(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

#[derive(Serialize)]
struct ProcessRecord<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    cmd: &'a [String],
    pwd: std::borrow::Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<i32>,
    exit_code: i32,
    stdout: &'a str,
    stderr: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<&'a str>,
    ended_at: &'a str,
}

#[derive(Serialize)]
struct ArchiveResultRecord<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot_id: Option<&'a str>,
    plugin: std::borrow::Cow<'a, str>,
    hook_name: &'a str,
    status: &'a str,
    process_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_str: Option<String>,
    output_files: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    start_ts: Option<&'a str>,
    end_ts: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// The most of one log that finalize reads into the index, bytes (16 MiB).
pub const MAX_LOG_BYTES: u64 = 16 << 20;

/// The most of all logs together that one cleanup copies into the index, bytes (64 MiB): once
/// it is spent, each further log is cut (with the marker line of a log cut at [`MAX_LOG_BYTES`]
/// and a note). Counted in log bytes read, whichever hooks read them first (on a pool, the order
/// in which hooks finish); the index holds them JSON-escaped (a NUL or control byte takes six).
/// A user's sparse 16 MiB logs cost root at most this much reading per cleanup, whatever their
/// number.
pub const MAX_INDEX_LOG_BYTES: u64 = 64 << 20;

/// A log's text (empty when there is none) and the note of what was not read in it; `Err`
/// (why) when it could not be read.
type LogRead = std::result::Result<(String, Option<String>), String>;

/// What a log that could not be looked at or opened gives. Missing (`ENOENT`, or a name too
/// long to exist: `ENAMETOOLONG`): nothing, no note. Put there by the hook's user instead of a
/// log (a symlink: `ELOOP`; a socket: `ENXIO`): nothing, with a note — the user's own doing, not
/// a failed read, and it must not keep the record from ever being retired. Anything else
/// (`EMFILE`, `ENFILE`, `EACCES`, `EIO`, …) is a failed read: `Err`, never an empty log.
fn log_open_error(e: std::io::Error, which: &str, step: &str) -> LogRead {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENAMETOOLONG) => Ok((String::new(), None)),
        Some(libc::ELOOP) => Ok((String::new(), Some(format!("{which} log is a symbolic link: not read")))),
        Some(libc::ENXIO) => Ok((String::new(), Some(format!("{which} log is not a regular file: not read")))),
        _ => Err(format!("{which} log cannot be {step}: {e}")),
    }
}

/// Read a hook's log `name` in its directory `dir` (opened once for the hook) for its `Process` record: lossily decoded, empty when missing.
/// A log that could not be read is `Err` (see [`log_open_error`]), not an empty log.
///
/// The log sits in a directory the hook's user may write, so it is opened without following a
/// symlink (`O_NOFOLLOW`: a link to a root-only file must not copy that file into the index)
/// and without blocking (`O_NONBLOCK`: a FIFO planted there must not hang the cleanup), and
/// only a regular file is read. It is first looked at without opening it (`fstatat`,
/// `AT_SYMLINK_NOFOLLOW`): a symlink, FIFO or device is never opened, and an empty regular file
/// costs that one call (what its open, `fstat` and close would have said: nothing to read). A
/// longer log is cut at [`MAX_LOG_BYTES`], or at what is left of the cleanup's `budget` (see
/// [`MAX_INDEX_LOG_BYTES`]; what is read is taken from it), and ends with a marker line. Anything
/// not read in full is said in the returned note.
fn read_log(dir: &DirFd, name: &OsStr, which: &str, budget: &AtomicU64) -> LogRead {
    match dir.lstat(name) {
        Err(e) => return log_open_error(e, which, "looked at"),
        Ok(st) if st.is_symlink() => return Ok((String::new(), Some(format!("{which} log is a symbolic link: not read")))),
        Ok(st) if !st.is_file() => return Ok((String::new(), Some(format!("{which} log is not a regular file: not read")))),
        Ok(st) if st.size == 0 => return Ok((String::new(), None)),
        Ok(_) => {}
    }
    // Not empty: opened without following a link or blocking, and examined again through the
    // descriptor (the name may have been swapped since the look above).
    let f = match crate::sys::fault::check(crate::sys::fault::Call::LogOpen).and_then(|()| crate::pidfile::retire::open_strict_in(dir, name)) {
        Ok(f) => f,
        Err(e) => return log_open_error(e, which, "opened"),
    };
    let size = match f.metadata() {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => return Ok((String::new(), Some(format!("{which} log is not a regular file: not read")))),
        Err(e) => return Err(format!("{which} log cannot be examined: {e}")),
    };
    // What this log may take of the cleanup's budget: taken before the read.
    let want = size.min(MAX_LOG_BYTES);
    let left = budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| Some(left.saturating_sub(want))).unwrap_or(0);
    let max = want.min(left);
    // One read for a log of the size fstat gave.
    let buf = match crate::pidfile::read_bounded(&f, size, max) {
        Ok(b) => b,
        Err(e) => return Err(format!("{which} log could not be read: {e}")),
    };
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if size > max {
        text.push_str(&format!("\n[pidguard: log truncated: {size} bytes, the first {max} kept]\n"));
        let why = if max < want { format!(": this cleanup's total of {MAX_INDEX_LOG_BYTES} log bytes was reached") } else { String::new() };
        return Ok((text, Some(format!("{which} log truncated at {max} of {size} bytes{why}"))));
    }
    Ok((text, None))
}

/// A hook's two logs, read by [`read_logs`] for [`default_finalize`].
pub(crate) struct Logs {
    stdout: String,
    stderr: String,
    notes: Vec<String>,
}

/// Read the two logs of `report`'s hook from its directory `dir` (see [`read_log`]), before its
/// record is retired. `Err` (why) when either could not be read: the caller then keeps the
/// record and the logs and writes nothing (a failed read is not an empty log).
/// `budget` is what is left of the cleanup's [`MAX_INDEX_LOG_BYTES`].
pub(crate) fn read_logs(report: &HookReport, dir: &DirFd, budget: &AtomicU64) -> std::result::Result<Logs, String> {
    let (stdout, n1) = read_log(dir, &OsString::from(format!("{}.stdout.log", report.name)), "stdout", budget)?;
    let (stderr, n2) = read_log(dir, &OsString::from(format!("{}.stderr.log", report.name)), "stderr", budget)?;
    Ok(Logs { stdout, stderr, notes: n1.into_iter().chain(n2).collect() })
}

/// The index that finalize appends to, opened once per cleanup.
#[derive(Debug)]
pub(crate) struct Index {
    file: fs::File,
    path: std::path::PathBuf,
}

impl Index {
    /// Open (creating it 0644 when missing) the index for appending: `O_APPEND|O_NOFOLLOW|
    /// O_NONBLOCK`, and only a regular file. A symlink, FIFO, directory or device at the path is
    /// an `Untrusted` error, so a cleanup never appends to whatever file a planted link names.
    pub(crate) fn open(path: &Path) -> Result<Index> {
        let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let fd = crate::sys::open_raw(path, flags, 0o644).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::at(crate::ErrorKind::Untrusted, path, "the index is a symbolic link, or a directory on its way beneath the output directory is one: nothing appended"),
            _ => Error::io_at(path, "open index", &e),
        })?;
        let file = fs::File::from(fd);
        let m = file.metadata().map_err(|e| Error::io_at(path, "fstat index", &e))?;
        if !m.is_file() {
            return Err(Error::at(crate::ErrorKind::Untrusted, path, "the index is not a regular file: nothing appended"));
        }
        Ok(Index { file, path: path.to_path_buf() })
    }

    /// Append `lines` in one `write(2)` (`O_APPEND`: concurrent appenders never interleave a
    /// record).
    fn append(&self, lines: &[u8]) -> Result<()> {
        (&self.file).write_all(lines).map_err(|e| Error::io_at(&self.path, "append to index", &e))
    }
}

/// abx-dl's finalize for one hook, with its logs read by [`read_logs`]: let
/// `"type": "ArchiveResult"` lines on stdout override `status`/`output_str` (the last wins);
/// append one `Process` and one `ArchiveResult` JSON line to `index` when given (and print them
/// to stdout when `is_tty` is false); on success, when this cleanup removed the pidfile it judged, delete the two logs (`unlink` removes a
/// planted link itself, never its target). The `.sh` file is always kept. Returns the notes of
/// logs not read in full.
///
/// Errors: `Io`/`PermissionDenied` when the index cannot be appended to.
pub(crate) fn default_finalize(report: &HookReport, logs: Logs, dir: &DirFd, index: Option<&Index>, is_tty: bool) -> Result<Vec<String>> {
    let stdout_name = OsString::from(format!("{}.stdout.log", report.name));
    let stderr_name = OsString::from(format!("{}.stderr.log", report.name));
    let Logs { stdout, stderr, notes } = logs;
    let success = report.succeeded();
    let mut status = if success { "succeeded" } else { "failed" }.to_string();
    let mut output_str = None;
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim()) else { continue };
        if v.get("type").and_then(|t| t.as_str()) != Some("ArchiveResult") {
            continue;
        }
        if let Some(s) = v.get("status").and_then(|s| s.as_str()) {
            status = s.to_string();
        }
        if let Some(s) = v.get("output_str").and_then(|s| s.as_str()) {
            output_str = Some(s.to_string());
        }
    }
    let exit_code = report.exit_code.unwrap_or(if success { 0 } else { -1 });
    let stderr_head: Option<String> = (report.error.is_none() && !success).then(|| stderr.chars().take(500).collect());
    let error = report.error.as_deref().or(stderr_head.as_deref());
    let process_id = new_id();
    let result_id = new_id();
    let started = report.started_at.map(iso);
    let ended = iso(report.ended_at);
    if let Some(index) = index {
        let p = ProcessRecord {
            kind: "Process",
            id: &process_id,
            cmd: &report.cmd,
            pwd: report.dir.to_string_lossy(),
            pid: report.pid,
            exit_code,
            stdout: &stdout,
            stderr: &stderr,
            started_at: started.as_deref(),
            ended_at: &ended,
        };
        let a = ArchiveResultRecord {
            kind: "ArchiveResult",
            id: &result_id,
            snapshot_id: None,
            plugin: report.dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
            hook_name: &report.name,
            status: &status,
            process_id: &process_id,
            output_str,
            output_files: &report.output_files,
            start_ts: started.as_deref(),
            end_ts: &ended,
            error: error.filter(|e| !e.is_empty()),
        };
        // Both lines serialised into one buffer, sized for them at once.
        let mut lines = Vec::with_capacity(1024 + stdout.len() + stderr.len());
        // Unreachable: serde_json fails only on a writer error (a Vec never fails) or a map with
        // non-string keys (these records have none).
        serde_json::to_writer(&mut lines, &p).expect("plain data serialises");
        lines.push(b'\n');
        serde_json::to_writer(&mut lines, &a).expect("plain data serialises");
        lines.push(b'\n');
        index.append(&lines)?;
        if !is_tty {
            // Unreachable: serde_json writes UTF-8 only.
            print!("{}", std::str::from_utf8(&lines).expect("serde_json writes UTF-8"));
        }
    }
    // The logs go with the record: only when this cleanup retired the very pidfile it judged.
    // A record rewritten meanwhile (a new hook under the same name) keeps its logs.
    if success && report.pid_file_removed {
        let _ = dir.unlink(&stdout_name);
        let _ = dir.unlink(&stderr_name);
    }
    Ok(notes)
}
