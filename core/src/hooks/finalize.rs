//! The default finalize: abx-dl's `Process` and `ArchiveResult` JSON lines.

use std::fs;
use std::io::{Seek, Write};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::records::{records, records_into};
use super::HookReport;
use crate::error::{Error, Result};
use crate::sys::DirFd;

/// The most of one log that finalize copies into the index, in bytes **as written there**
/// (16 MiB): JSON-escaped, where a NUL or another control byte takes six bytes, a quote, a
/// backslash or a newline two, and a byte that is not UTF-8 the three of U+FFFD. A longer log
/// is cut at a character boundary, with a marker line and a note. What is read of the file is
/// at most as much (every byte read takes at least one byte in the index), so the memory a log
/// costs is bounded by it too, whatever the file's size (a sparse file of 4 GiB included).
pub const MAX_LOG_BYTES: u64 = 16 << 20;

/// The most of all logs together that one cleanup copies into the index, in bytes as written
/// there (64 MiB, JSON-escaped as for [`MAX_LOG_BYTES`]): once it is spent, each further log
/// is cut (with the marker line of a log cut at [`MAX_LOG_BYTES`] and a note). Counted
/// whichever hooks write first (on a pool, the order in which hooks finish). A user's logs,
/// sparse or not, make root append at most this much of them to the index per cleanup (plus
/// each hook's marker lines and record fields), whatever their number.
pub const MAX_INDEX_LOG_BYTES: u64 = 64 << 20;

/// The bytes `c` takes inside a JSON string as serde_json writes it.
fn json_len(c: char) -> u64 {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8() as u64,
    }
}

/// The longest prefix of `buf`, lossily decoded (as `String::from_utf8_lossy` does), whose JSON
/// encoding takes at most `max` bytes; with the number of bytes of `buf` it covers and the
/// bytes it takes as JSON.
fn decode_bounded(buf: &[u8], max: u64) -> (String, usize, u64) {
    let mut text = String::new();
    let (mut used, mut taken) = (0u64, 0usize);
    for chunk in buf.utf8_chunks() {
        for c in chunk.valid().chars() {
            let n = json_len(c);
            if used + n > max {
                return (text, taken, used);
            }
            used += n;
            taken += c.len_utf8();
            text.push(c);
        }
        if !chunk.invalid().is_empty() {
            if used + 3 > max {
                return (text, taken, used);
            }
            used += 3;
            taken += chunk.invalid().len();
            text.push(char::REPLACEMENT_CHARACTER);
        }
    }
    (text, taken, used)
}

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
/// longer log is cut where its JSON encoding reaches [`MAX_LOG_BYTES`], or what is left of the
/// cleanup's `budget` (see [`MAX_INDEX_LOG_BYTES`]; what the kept text takes as JSON is taken
/// from it), and ends with a marker line; at most that many bytes of the file are read. A log
/// with more than one link is not read when the caller is privileged (noted). Anything not
/// copied in full is said in the returned note.
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
        Ok(m) if m.is_file() && crate::pidfile::refused_links(&m).is_some() => {
            // For a privileged caller: another name for it may be a root-only file.
            let why = crate::pidfile::refused_links(&m).unwrap_or_default();
            return Ok((String::new(), Some(format!("{which} log {why}: not read"))));
        }
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => return Ok((String::new(), Some(format!("{which} log is not a regular file: not read")))),
        Err(e) => return Err(format!("{which} log cannot be examined: {e}")),
    };
    // What this log may take of the cleanup's budget, in bytes as JSON: reserved before the
    // read (at most six per byte of the file), what is not used given back after it.
    let want = size.saturating_mul(6).min(MAX_LOG_BYTES);
    let left = budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| Some(left.saturating_sub(want))).unwrap_or(0);
    let max = want.min(left);
    // Every byte read takes at least one byte as JSON: `max` bytes of the file are enough. One
    // read for a log of the size fstat gave.
    let buf = match crate::pidfile::read_bounded(&f, size, max) {
        Ok(b) => b,
        Err(e) => {
            budget.fetch_add(max, Ordering::Relaxed);
            return Err(format!("{which} log could not be read: {e}"));
        }
    };
    let (mut text, kept, used) = decode_bounded(&buf, max);
    drop(buf);
    budget.fetch_add(max - used, Ordering::Relaxed);
    if (kept as u64) < size {
        text.push_str(&format!("\n[pidguard: log truncated: {size} bytes, the first {kept} kept]\n"));
        let why = if max < want {
            format!(": this cleanup's total of {MAX_INDEX_LOG_BYTES} log bytes in the index was reached")
        } else {
            String::new()
        };
        return Ok((text, Some(format!("{which} log truncated at {kept} of {size} bytes ({used} bytes in the index){why}"))));
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
    use super::outcome::with_stem_name;
    let (stdout, n1) = with_stem_name(&report.pid_file, ".stdout.log", |out| read_log(dir, out, "stdout", budget))?;
    let (stderr, n2) = with_stem_name(&report.pid_file, ".stderr.log", |err| read_log(dir, err, "stderr", budget))?;
    Ok(Logs { stdout, stderr, notes: n1.into_iter().chain(n2).collect() })
}

/// The index that finalize appends to, opened once per cleanup.
#[derive(Debug)]
pub(crate) struct Index {
    file: fs::File,
    path: std::path::PathBuf,
    /// The threads of one cleanup append one at a time, so that a failed append can be cut back
    /// without cutting another thread's records.
    appending: std::sync::Mutex<()>,
}

impl Index {
    /// Open (creating it 0644 when missing) the index for appending: `O_APPEND|O_NOFOLLOW|
    /// O_NONBLOCK`, and only a regular file. A symlink, FIFO, directory or device at the path is
    /// an `Untrusted` error, so a cleanup never appends to whatever file a planted link names;
    /// so is, for a privileged caller, a file with more than one link (`HardLinked`: on a host
    /// with `fs.protected_hardlinks=0` a user could link a root-only file into the tree, and
    /// root would append its users' logs to it). An index under the cleanup's tree is opened
    /// beneath it (`tree`: no symlink on the way); any other as every path is.
    pub(crate) fn open(tree: &crate::sys::Tree, path: &Path) -> Result<Index> {
        let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let fd = tree.open_path(path, flags, 0o644).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::at(crate::ErrorKind::Untrusted, path, "the index is a symbolic link, or a directory on its way beneath the output directory is one: nothing appended"),
            _ => Error::io_at(path, "open index", &e),
        })?;
        let file = fs::File::from(fd);
        let m = file.metadata().map_err(|e| Error::io_at(path, "fstat index", &e))?;
        if !m.is_file() {
            return Err(Error::at(crate::ErrorKind::Untrusted, path, "the index is not a regular file: nothing appended"));
        }
        if let Some(why) = crate::pidfile::refused_links(&m) {
            return Err(Error::at(crate::ErrorKind::HardLinked, path, format_args!("the index {why}: nothing appended")));
        }
        Ok(Index { file, path: path.to_path_buf(), appending: std::sync::Mutex::new(()) })
    }

    /// Append `lines` (whole records, each ending in a newline) in one `write(2)` (`O_APPEND`:
    /// concurrent appenders never interleave a record), whole or not at all: a write that stops
    /// short (`ENOSPC`, `EDQUOT`, `EFBIG`) is cut back with `ftruncate` to where it began — the
    /// end of the last whole line — when nothing was appended after it meanwhile (by another
    /// process: this cleanup's threads append one at a time). Errors: `Io`/`PermissionDenied`
    /// with the errno of the failed write (`ENOSPC` for a short one).
    fn append(&self, lines: &[u8]) -> Result<()> {
        self.append_kept(lines).map_err(|(_, e)| e)
    }

    /// [`Self::append`], saying on failure how many bytes of `lines` stay in the index: 0 when
    /// nothing was written or the short write was cut back, the bytes written when it could not
    /// be cut back (something was appended after them).
    fn append_kept(&self, lines: &[u8]) -> std::result::Result<(), (usize, Error)> {
        use std::os::unix::fs::MetadataExt;
        let _one = self.appending.lock().unwrap_or_else(|p| p.into_inner());
        let written = loop {
            match (&self.file).write(lines) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let n = match written {
            Ok(n) if n == lines.len() => return Ok(()),
            Ok(n) => n,
            Err(e) => return Err((0, Error::io_at(&self.path, "append to index", &e))),
        };
        // Short: the file offset is the end of what this write appended.
        let end = (&self.file).stream_position().ok();
        let size = self.file.metadata().ok().map(|m| m.size());
        let kept = match (end, size) {
            (Some(end), Some(size)) if size == end && end >= n as u64 => match self.file.set_len(end - n as u64) {
                Ok(()) => 0,
                Err(e) => {
                    log::warn!("{}: could not cut back a partial record: {e}", self.path.display());
                    n
                }
            },
            _ => {
                log::warn!("{}: a partial record could not be cut back: something was appended after it", self.path.display());
                n
            }
        };
        Err((kept, Error::io_at(&self.path, "append to index", &std::io::Error::from_raw_os_error(libc::ENOSPC))))
    }
}

/// What the default finalize did with a hook: its notes, and whether it removed the pidfile
/// (by committing the claim it was given).
pub(crate) struct Finalized {
    pub(crate) notes: Vec<String>,
    pub(crate) removed: bool,
}

/// abx-dl's finalize for one hook, with its logs read by [`read_logs`]: let
/// `"type": "ArchiveResult"` lines on stdout override `status`/`output_str` (the last wins);
/// append one `Process` and one `ArchiveResult` JSON line to `index` when given (and print them
/// to stdout when `is_tty` is false).
///
/// `claim` is the hook's pidfile, taken aside by this cleanup (see `pidfile::retire::Claim`)
/// when its outcome retires it: the steps are ordered so that a failure loses nothing. The
/// records are appended first, whole or not at all; only then is the claimed pidfile unlinked
/// and, on success, the two logs deleted (`unlink` removes a planted link itself, never its
/// target). When the append fails (`ENOSPC`), the pidfile is given its name back and the logs
/// stay: the next cleanup finds the hook again and finalizes it. The `.sh` file is always kept.
///
/// Errors: `Io`/`PermissionDenied` when the index cannot be appended to (the pidfile then
/// restored, as said).
pub(crate) fn default_finalize(
    report: &HookReport,
    logs: Logs,
    dir: &DirFd,
    index: Option<&Index>,
    is_tty: bool,
    claim: Option<crate::pidfile::retire::Claim<'_>>,
) -> Result<Finalized> {
    let Logs { stdout, stderr, notes } = logs;
    if let Some(index) = index {
        let lines = records(report, &stdout, &stderr);
        if let Err(e) = index.append(&lines) {
            let restored = claim.is_some_and(|c| c.restore());
            let kept = if restored { "the pidfile is back and the logs are kept" } else { "the logs are kept" };
            return Err(Error::new(e.kind(), format!("{e}; nothing of this hook was appended, {kept}")));
        }
        if !is_tty {
            // Unreachable: serde_json writes UTF-8 only.
            print!("{}", std::str::from_utf8(&lines).expect("serde_json writes UTF-8"));
        }
    }
    // The logs go with the record: only when this cleanup retired the very pidfile it judged.
    // A record rewritten meanwhile (a new hook under the same name) keeps its logs.
    let removed = match claim {
        Some(c) => match c.commit() {
            Ok(()) => true,
            Err(e) => return Err(Error::io_at(&report.pid_file, "unlink the retired pidfile", &e)),
        },
        None => false,
    };
    if report.succeeded() && removed {
        unlink_logs(&report.pid_file, dir);
    }
    Ok(Finalized { notes, removed })
}

/// Delete the two logs of the hook whose pidfile is `pid_file` (`<name>.stdout.log`,
/// `<name>.stderr.log`) in `dir` (`unlink` removes a planted link itself, never its target).
fn unlink_logs(pid_file: &Path, dir: &DirFd) {
    for suffix in [".stdout.log", ".stderr.log"] {
        let _ = super::outcome::with_stem_name(pid_file, suffix, |n| dir.unlink(n));
    }
}

/// The most hooks whose records wait in a [`Batch`] before they are appended (fewer when the
/// descriptors are scarce: each waiting hook holds its directory open).
pub(crate) const BATCH_HOOKS: usize = 64;
/// The most bytes of records that wait in a [`Batch`] before they are appended.
const BATCH_BYTES: usize = 1 << 20;

/// [`default_finalize`] for many hooks, with their records appended to the index together: one
/// `write(2)` (`O_APPEND`) per batch of whole records, of at most [`BATCH_HOOKS`] hooks (fewer
/// under a low `RLIMIT_NOFILE`) and about [`BATCH_BYTES`] bytes. Each hook waits in the batch with its record claimed aside and
/// its directory kept open; the order of the steps is [`default_finalize`]'s for the whole batch:
/// the records appended first, whole or not at all; only then each claimed pidfile unlinked and,
/// on success, each hook's logs deleted. When the batch cannot be appended (`ENOSPC`), its
/// hooks are appended one at a time, as [`default_finalize`] appends (each hook's deleted logs
/// make room for the next): a hook whose records still cannot be appended gets its pidfile
/// back, keeps its logs and has the error in its report, for the next cleanup. For the hooks that the walk finishes (`judge::finish_leaf`); the
/// batches of signalled hooks append hook by hook.
pub(crate) struct Batch<'i> {
    index: &'i Index,
    is_tty: bool,
    /// At most [`BATCH_HOOKS`].
    max_hooks: usize,
    /// The hooks that wait, and their records, one after another in one buffer.
    waiting: std::sync::Mutex<(Vec<Waiting>, Vec<u8>)>,
}

/// One hook in a [`Batch`]: its report (completed when the batch is appended), its records,
/// its claimed pidfile and the directory it was claimed in.
struct Waiting {
    /// Taken when the batch is appended.
    report: Option<HookReport>,
    notes: Vec<String>,
    /// The length of its records in the batch's buffer (they follow those of the hook before).
    lines: usize,
    dir: std::sync::Arc<DirFd>,
    aside: Option<crate::pidfile::retire::Aside>,
}

impl Drop for Waiting {
    /// A hook dropped before its batch was appended (a panic) gets its pidfile back.
    fn drop(&mut self) {
        if let (Some(a), Some(r)) = (self.aside.take(), &self.report) {
            a.restore(&self.dir, &r.pid_file);
        }
    }
}

impl<'i> Batch<'i> {
    /// An empty batch appending to `index` (and printing to stdout when `is_tty` is false),
    /// once `max_hooks` hooks (1 to [`BATCH_HOOKS`]) wait.
    pub(crate) fn new(index: &'i Index, is_tty: bool, max_hooks: usize) -> Self {
        Batch { index, is_tty, max_hooks: max_hooks.clamp(1, BATCH_HOOKS), waiting: std::sync::Mutex::new((Vec::new(), Vec::new())) }
    }

    /// Add one hook, finalized as [`default_finalize`] would with its logs, its claimed pidfile
    /// (`claim`, taken in `dir`) and `report` complete but for the outcome of the append. When
    /// the batch is full it is appended, and the reports of its hooks are returned (from any
    /// thread's hooks: every report comes back once, from here or from [`Self::flush`]).
    pub(crate) fn add(&self, report: HookReport, logs: Logs, dir: std::sync::Arc<DirFd>, claim: Option<crate::pidfile::retire::Aside>) -> Vec<HookReport> {
        thread_local! {
            /// Where a hook's records are written before they join the batch's buffer (kept
            /// from hook to hook: no allocation per hook).
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let Logs { stdout, stderr, notes } = logs;
        let full = SCRATCH.with(|scratch| {
            let mut own = Vec::new();
            // Not reached (nothing here calls back into itself): a buffer of its own would do.
            let mut scratch = scratch.try_borrow_mut();
            let buf = scratch.as_deref_mut().unwrap_or(&mut own);
            buf.clear();
            records_into(buf, &report, &stdout, &stderr);
            let mut w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            if w.0.capacity() == 0 {
                // Sized once per batch, from its first hook's records.
                w.0.reserve_exact(self.max_hooks);
                w.1.reserve(buf.len().saturating_mul(self.max_hooks + self.max_hooks / 4).min(BATCH_BYTES + buf.len()));
            }
            w.1.extend_from_slice(buf);
            w.0.push(Waiting { report: Some(report), notes, lines: buf.len(), dir, aside: claim });
            if w.0.len() < self.max_hooks && w.1.len() < BATCH_BYTES {
                return None;
            }
            Some((std::mem::take(&mut w.0), std::mem::take(&mut w.1)))
        });
        match full {
            Some((hooks, lines)) => self.append(hooks, lines),
            None => Vec::new(),
        }
    }

    /// Append what waits: the reports of its hooks.
    pub(crate) fn flush(&self) -> Vec<HookReport> {
        let all = {
            let mut w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            (std::mem::take(&mut w.0), std::mem::take(&mut w.1))
        };
        self.append(all.0, all.1)
    }

    /// Append the records of `hooks` (`lines`, theirs one after another): the reports of the
    /// hooks.
    fn append(&self, mut hooks: Vec<Waiting>, lines: Vec<u8>) -> Vec<HookReport> {
        if hooks.len() > 1 {
            match self.index.append_kept(&lines) {
                Ok(()) => {
                    self.print(&lines);
                    return hooks.iter_mut().filter_map(|w| settle(w, &Ok(()))).collect();
                }
                // Nothing of the batch was appended (a short write is cut back). One hook at a
                // time then, as hooks finished after signalling are: each hook's logs, deleted
                // once its records are in, make room for the next on a nearly full disk.
                Err((0, _)) => {}
                // A short write that could not be cut back: the hooks whose records are whole in
                // it are in the index; nothing more is appended after its partial record.
                Err((kept, e)) => {
                    let mut whole = 0;
                    for w in &hooks {
                        if whole + w.lines > kept {
                            break;
                        }
                        whole += w.lines;
                    }
                    self.print(&lines[..whole]);
                    let failed = Err(e);
                    let mut end = 0;
                    return hooks
                        .iter_mut()
                        .filter_map(|w| {
                            end += w.lines;
                            settle(w, if end <= kept { &Ok(()) } else { &failed })
                        })
                        .collect();
                }
            }
        }
        let mut start = 0;
        hooks
            .iter_mut()
            .filter_map(|w| {
                let mine = &lines[start..start + w.lines];
                start += w.lines;
                let appended = self.index.append(mine);
                if appended.is_ok() {
                    self.print(mine);
                }
                settle(w, &appended)
            })
            .collect()
    }

    /// Print appended records to stdout when `is_tty` is false.
    fn print(&self, lines: &[u8]) {
        if !self.is_tty {
            // Unreachable: serde_json writes UTF-8 only.
            print!("{}", std::str::from_utf8(lines).expect("serde_json writes UTF-8"));
        }
    }
}

/// The end of one hook of a [`Batch`], its records appended (`appended`) or not: its claimed
/// pidfile unlinked and, on success, its logs deleted; or its pidfile given back, its logs
/// kept and the error in its report. Its report.
fn settle(w: &mut Waiting, appended: &Result<()>) -> Option<HookReport> {
    let mut report = w.report.take()?;
    report.notes.append(&mut w.notes);
    let aside = w.aside.take();
    match appended {
        Ok(()) => {
            let removed = match aside {
                Some(a) => match a.commit(&w.dir) {
                    Ok(()) => true,
                    Err(e) => {
                        let e = Error::io_at(&report.pid_file, "unlink the retired pidfile", &e);
                        super::outcome::add_finalize_error(&mut report, e.to_string());
                        false
                    }
                },
                None => false,
            };
            if report.succeeded() && removed {
                unlink_logs(&report.pid_file, &w.dir);
            }
            report.pid_file_removed = removed;
        }
        Err(e) => {
            let restored = aside.is_some_and(|a| a.restore(&w.dir, &report.pid_file));
            let kept = if restored { "the pidfile is back and the logs are kept" } else { "the logs are kept" };
            super::outcome::add_finalize_error(&mut report, format!("{e}; nothing of this hook was appended, {kept}"));
        }
    }
    Some(report)
}
