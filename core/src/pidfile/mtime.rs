//! The abx-dl pidfile: the decimal pid as content, the process start time
//! as the file's mtime, plus pidguard's strong start token in the `user.pidguard.token` xattr.

use std::fmt;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::atomic;
use super::cmd::{command_matches, py_isspace, LiveCommand, Recorded, RecordedCommand};
use crate::error::{Error, Result};
use crate::identity::{check_pid_range, create_time, Judgement, ProcessRef, Reason, StartToken, Verdict};
use crate::sys::{self, procfs};

/// The extended attribute in which a pidfile that `spawn` wrote for a command started as
/// another identity says which: `uid=U gid=G groups=A,B` ([`crate::launch::RunAs`]'s text).
/// Information only: no check reads it to decide anything.
pub const RUN_AS_XATTR: &str = "user.pidguard.run_as";

/// The extended attribute that carries the start token of the recorded process.
pub const TOKEN_XATTR: &str = "user.pidguard.token";

/// Default tolerance of the mtime check, seconds (abx-dl's value).
pub const DEFAULT_TOLERANCE: f64 = 5.0;

/// Largest pidfile content read; longer content is malformed (10 MB of digits is not a pid).
const MAX_CONTENT: u64 = 4096;

/// Write an abx-dl pidfile for `pid` whose process started at `start_time` (seconds since the
/// epoch, as `time.time()` gives it right after spawning).
///
/// Same observable result as the Python original (content = decimal pid without newline, atime
/// and mtime = `start_time` to the nanosecond, rounded down as `os.utime` does), but written
/// through a temporary file (`O_EXCL|O_NOFOLLOW`, mode 0644 whatever the umask), `fsync`, then
/// `rename`, so no reader sees an empty file or a wrong mtime. When the token of `pid` can be
/// read and its psutil create time is within 5 s of `start_time`, the token is stored in
/// [`TOKEN_XATTR`]; on file systems without user xattrs (`ENOTSUP`) the write succeeds without
/// it.
///
/// Errors (nothing is written, and a previous pidfile stays byte for byte as it was):
/// `InvalidArgument` when `start_time` is not finite or `pid` is outside 1 to 4194304;
/// `Untrusted` when the target is a symlink, FIFO or directory; file system errors as
/// `NotFound`, `PermissionDenied` or `Io` — including an `fsetxattr` of the token that fails
/// with anything but `ENOTSUP` (`ENOSPC`, `EDQUOT`, `E2BIG`, `EIO`).
pub fn write_pid_file_with_mtime(pid_file: &Path, pid: i32, start_time: f64) -> Result<()> {
    write_pid_file_scoped(pid_file, pid, start_time, None, None, false).map(drop)
}

/// [`write_pid_file_with_mtime`], and with the token the `scope` record in
/// [`crate::identity::SCOPE_XATTR`] (text of a [`crate::identity::ScopeRecord`]). Whether the
/// scope was recorded: not when the file system has no user xattrs (`ENOTSUP`), or when the
/// token could not be (a scope is only ever read together with the token that dates it).
/// `token`: the process's start token when the caller read it already (a spawner, while its
/// child was held before exec: the child may have exited by now); else it is read here.
///
/// `require_token` (pidguard's own `run`/`spawn`): a record that cannot carry its
/// start token — no user xattrs on the file system (ramfs, NFSv3, some FUSE), or the token could
/// not be read — is not written (`Unsupported`, naming the guard record that would carry it;
/// the previous pidfile stays as it was). Without the token the record would be judged by argv
/// and mtime alone: once the process renamed itself it would read "not valid", a second start
/// would start a duplicate, and a stop would refuse (shared/BUGS.md L6).
pub(crate) fn write_pid_file_scoped(
    pid_file: &Path,
    pid: i32,
    start_time: f64,
    token: Option<crate::identity::StartToken>,
    scope: Option<&str>,
    require_token: bool,
) -> Result<bool> {
    write_pid_file_run_as(pid_file, pid, start_time, token, scope, None, require_token)
}

/// [`write_pid_file_scoped`] with the identity the process was started as ([`RUN_AS_XATTR`],
/// written with the token, by the same rules as the scope).
pub(crate) fn write_pid_file_run_as(
    pid_file: &Path,
    pid: i32,
    start_time: f64,
    token: Option<crate::identity::StartToken>,
    scope: Option<&str>,
    run_as: Option<&str>,
    require_token: bool,
) -> Result<bool> {
    if !start_time.is_finite() {
        return Err(Error::invalid(format!("{}: start_time {start_time} is not finite", pid_file.display())));
    }
    let pid = check_pid_range(pid as i64)?;
    let secs = start_time.floor();
    if secs.abs() > 1e15 {
        return Err(Error::invalid(format!("{}: start_time {start_time} is out of range", pid_file.display())));
    }
    let nsecs = (((start_time - secs) * 1e9) as i64).clamp(0, 999_999_999);
    let token = token.or_else(|| crate::identity::start_token(pid).ok()).filter(|t| {
        create_time(t.start_ticks).is_ok_and(|ct| (ct - start_time).abs() <= DEFAULT_TOLERANCE)
    });
    let no_token = |why: &str| {
        Error::at(
            crate::error::ErrorKind::Unsupported,
            pid_file,
            format!(
                "{why}, so an abx-dl pidfile here cannot carry the start token that proves its process (a process that renames itself would be judged not valid and started twice): not written; write a guard record instead (`pidguard run --guard`, RecordFormat::Guard: the token is in the file), or put the pidfile on a file system with user xattrs"
            ),
        )
    };
    if require_token && token.is_none() {
        return Err(no_token("the process's start token could not be read"));
    }
    let mut scoped = false;
    atomic::replace_file(pid_file, pid.to_string().as_bytes(), 0o644, |fd| {
        if let Some(t) = &token {
            // A file system without user xattrs (ENOTSUP) just gets no token. Any other failure
            // (ENOSPC, EDQUOT, E2BIG, EIO) fails the write, and the previous pidfile stays as it
            // was: a record silently written without its token would be judged by the weaker
            // mtime rule.
            match sys::fsetxattr(fd.as_fd(), TOKEN_XATTR, t.to_string().as_bytes()) {
                Ok(true) => {}
                Ok(false) if require_token => return Err(no_token("this file system keeps no user xattrs")),
                Ok(false) => log::debug!("{}: no user xattrs here; written without a start token", pid_file.display()),
                Err(e) => return Err(Error::io_at(pid_file, "store the start token (fsetxattr)", &e)),
            }
            if let Some(sc) = scope {
                match sys::fsetxattr(fd.as_fd(), crate::identity::SCOPE_XATTR, sc.as_bytes()) {
                    Ok(recorded) => scoped = recorded,
                    Err(e) => return Err(Error::io_at(pid_file, "store the scope (fsetxattr)", &e)),
                }
            }
            if let Some(ra) = run_as {
                if let Err(e) = sys::fsetxattr(fd.as_fd(), RUN_AS_XATTR, ra.as_bytes()) {
                    return Err(Error::io_at(pid_file, "store the identity it runs as (fsetxattr)", &e));
                }
            }
        }
        sys::futimens(fd.as_fd(), secs as i64, nsecs).map_err(|e| Error::io_at(pid_file, "futimens", &e))
    })?;
    Ok(scoped)
}

/// Why a pidfile is or is not valid: the answer of `check_pid_file`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckReason {
    /// Valid: the recorded process is alive and matches.
    Valid,
    /// No file at the path.
    Missing,
    /// The file could not be opened or read.
    Unreadable,
    /// A symlink, FIFO, directory or other non-regular file.
    NotRegular,
    /// The content is not one decimal pid from 1 to 4194304.
    Malformed,
    /// The token xattr is present but is not a pidguard start token.
    BadToken,
    /// No such process.
    Gone,
    /// The process is a zombie.
    Zombie,
    /// The token proves another process holds the pid (or another boot wrote the file).
    Mismatch,
    /// The file was written on another machine or in another PID namespace.
    Foreign,
    /// Nothing proves it either way: the live identity could not be read (the judgement's
    /// reason names the errno), the record's token cannot be confirmed, or — for a token-less
    /// record — the live argv or the command file could not be read. Never a reason to remove
    /// the record or to signal.
    Unverifiable,
    /// No token, and the mtime is more than `tolerance` from the process's create time.
    MtimeSkew,
    /// The live command does not match the `.sh` file (or the live argv is unreadable).
    CmdMismatch,
}

impl CheckReason {
    /// A stable kebab-case slug (`"mtime-skew"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            CheckReason::Valid => "valid",
            CheckReason::Missing => "missing",
            CheckReason::Unreadable => "unreadable",
            CheckReason::NotRegular => "not-regular",
            CheckReason::Malformed => "malformed",
            CheckReason::BadToken => "bad-token",
            CheckReason::Gone => "gone",
            CheckReason::Zombie => "zombie",
            CheckReason::Mismatch => "mismatch",
            CheckReason::Foreign => "foreign",
            CheckReason::Unverifiable => "unverifiable",
            CheckReason::MtimeSkew => "mtime-skew",
            CheckReason::CmdMismatch => "cmd-mismatch",
        }
    }
}

impl fmt::Display for CheckReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The full answer about one abx-dl pidfile.
#[derive(Clone, Debug, PartialEq)]
pub struct PidFileCheck {
    /// What `validate_pid_file` returns.
    pub valid: bool,
    /// Why.
    pub reason: CheckReason,
    /// The pid in the file, when it parsed.
    pub pid: Option<i32>,
    /// The identity verdict, when the process was judged (`Match` for a token-less file that
    /// passed the mtime rule is not claimed: such a file's verdict is `Unverifiable`).
    pub judgement: Option<Judgement>,
    /// The recorded start token, when the file has one.
    pub token: Option<StartToken>,
    /// The recorded scope (the [`crate::identity::SCOPE_XATTR`] beside the token), when the
    /// file has one: the record of a command pidguard started in a cgroup leaf or under a
    /// supervisor.
    pub scope: Option<crate::identity::ScopeRecord>,
    /// The file's mtime, seconds since the epoch.
    pub mtime: Option<f64>,
    /// The live process's psutil-compatible create time, for a token-less record (the mtime
    /// rule needs it); `None` when the token decided (its start ticks are exact).
    pub create_time: Option<f64>,
    /// Owner uid and mode of the file, when it could be opened.
    pub owner: Option<(u32, u32)>,
    /// The start ticks of the live process that the checks were made against.
    pub(crate) live_start_ticks: Option<u64>,
    /// Why the file is refused for its links, for a privileged caller (see
    /// `pidfile::refused_links`): such a record authorises no signal.
    pub(crate) linked: Option<String>,
    /// `(dev, inode)` of the file judged, when it was opened and examined (`fstat`).
    pub(crate) file_id: Option<(u64, u64)>,
    /// The error of the open, `fstat` or read that made the reason `Unreadable`
    /// ([`PidFileCheck::os_error`]).
    pub(crate) read_error: Option<ReadError>,
}

impl PidFileCheck {
    pub(crate) fn new(reason: CheckReason) -> PidFileCheck {
        PidFileCheck {
            valid: false,
            reason,
            pid: None,
            judgement: None,
            token: None,
            scope: None,
            mtime: None,
            create_time: None,
            owner: None,
            live_start_ticks: None,
            file_id: None,
            linked: None,
            read_error: None,
        }
    }
    /// A check answering `Unreadable` because of `e`.
    fn unreadable(e: std::io::Error) -> PidFileCheck {
        let mut c = PidFileCheck::new(CheckReason::Unreadable);
        c.read_error = Some(ReadError(std::sync::Arc::new(e)));
        c
    }
    /// Why the file could not be opened or read, when the reason is `Unreadable`: the system's
    /// error with its errno (`EACCES`, `EIO`, …), or — for a privileged caller's unsafe path
    /// transition — an error without an errno whose text names both ends of the step. For
    /// tools that word the answer and choose an exit status ([`crate::ExitCode::for_check`])
    /// without opening the file again. `None` for every other reason.
    pub fn os_error(&self) -> Option<&std::io::Error> {
        self.read_error.as_ref().map(|r| &*r.0)
    }
    /// Whether the record belongs to another machine or PID namespace (leave it alone).
    pub fn is_foreign(&self) -> bool {
        self.reason == CheckReason::Foreign
    }
}

/// The system's error behind an `Unreadable` check, shared by the check's clones; two are equal
/// when their errno and text are.
#[derive(Clone, Debug)]
pub(crate) struct ReadError(std::sync::Arc<std::io::Error>);

impl PartialEq for ReadError {
    fn eq(&self, other: &Self) -> bool {
        self.0.raw_os_error() == other.0.raw_os_error() && self.0.to_string() == other.0.to_string()
    }
}

/// Parse pidfile content as the original's `int(text.strip())`, restricted: UTF-8 text, the
/// whitespace `str.strip()` removes around it (Unicode White_Space and `\x1c`–`\x1f`: a vertical
/// tab, a no-break space, an ideographic space), then one run of ASCII digits, value in
/// 1 to 4194304. Signs, underscores, non-ASCII digits, several numbers and NUL bytes are
/// refused; so is text that is not UTF-8 (the original's `read_text()` raises there).
///
/// Leading zeros are allowed, however many (`int("000000000007")` is 7); a value that
/// overflows is refused like any other value above 4194304 (`PID_MAX_LIMIT`).
pub fn parse_pid_content(content: &[u8]) -> Option<i32> {
    let Ok(text) = std::str::from_utf8(content) else { return None };
    let t = text.trim_matches(py_isspace).as_bytes();
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = t.iter().try_fold(0i64, |v, &d| v.checked_mul(10)?.checked_add(i64::from(d - b'0')))?;
    (1..=procfs::pid_max() as i64).contains(&v).then_some(v as i32)
}

/// The recorded command that [`check_pinned_opened`] compares a token-less record with.
pub(crate) enum CmdRule<'a> {
    /// No command rule.
    None,
    /// Load this record, only if the rule is reached (after the mtime rule passed).
    Command(RecordedCommand<'a>),
    /// Already loaded by the caller (cleanup reads every hook's `.sh` once for its report; the
    /// check uses the same read instead of opening the file a second time), with the uid owning
    /// the file when it was opened. A file owned by neither the pidfile's owner nor root is no
    /// evidence either way (see [`cmd_file_is_foreign`]): the rule is then skipped, as with no file.
    Loaded(&'a Result<Option<Recorded>>, Option<u32>),
}

/// Whether a command file owned by `sh_owner` is someone else's than the record's (owned by
/// `pid_owner`): neither that owner nor root. In a shared (sticky, world-writable) directory any
/// user can create the `.sh` beside another user's record; a different command there must not
/// make that user's live record stale (and its hook run on untracked), nor an unreadable one
/// keep it from being judged.
pub(crate) fn cmd_file_is_foreign(sh_owner: Option<u32>, pid_owner: Option<u32>) -> bool {
    matches!((sh_owner, pid_owner), (Some(sh), Some(pid)) if sh != 0 && sh != pid)
}

/// The check of an abx-dl pidfile (`crate::options::check_pid_file_with`) of a pidfile already
/// opened with the strict opener, handing on the pin it made (the process it judged, for the
/// caller to act on instead of pinning and reading again: there when the file names a process
/// that may be acted on or needs its group looked at — valid, zombie, or a token-less record
/// whose mtime or command is off; never for a proven mismatch or an unreadable one). Opened
/// (`pidfile::retire::open_strict_in` from its directory's descriptor, so that the caller knows
/// which directory the record was judged in); `opened` is that open's result.
pub(crate) fn check_pinned_opened(opened: std::io::Result<std::fs::File>, cmd: CmdRule<'_>, tolerance: f64) -> (PidFileCheck, Option<ProcessRef>) {
    let (check, pin, _) = check_pinned_kept(opened, cmd, tolerance, false);
    (check, pin)
}

/// [`check_pinned_opened`], and with `keep` the record's descriptor too, kept open through the
/// judgement (when it was a regular file), for a caller that retires the record right after
/// through the very descriptor it was judged through (`retire::claim_judged`). Without `keep`
/// the descriptor is closed before the process is looked at.
pub(crate) fn check_pinned_kept(
    opened: std::io::Result<std::fs::File>,
    cmd: CmdRule<'_>,
    tolerance: f64,
    keep: bool,
) -> (PidFileCheck, Option<ProcessRef>, Option<std::fs::File>) {
    check_pinned_read(opened, cmd, tolerance, keep, ReadScope::Yes)
}

/// Whether a check reads the record's scope ([`crate::identity::SCOPE_XATTR`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadScope {
    /// Read it, with the token that dates it: the report says it, and whatever acts on the
    /// record (stop, cleanup) or asks whether it runs (probe, status) reaches or counts it.
    Yes,
    /// Leave it unread: the answer is only whether the recorded process lives and is the one
    /// recorded (`validate_pid_file`), which the scope does not enter — it says what a stop
    /// reaches, not who the process is.
    No,
}

/// [`check_pinned_kept`], reading the scope or not (`scope`).
pub(crate) fn check_pinned_read(
    opened: std::io::Result<std::fs::File>,
    cmd: CmdRule<'_>,
    tolerance: f64,
    keep: bool,
    scope: ReadScope,
) -> (PidFileCheck, Option<ProcessRef>, Option<std::fs::File>) {
    let f = match opened {
        Ok(f) => f,
        Err(e) => {
            return (
                match e.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::ENOTDIR) => PidFileCheck::new(CheckReason::Missing),
                    Some(libc::ELOOP) => PidFileCheck::new(CheckReason::NotRegular),
                    _ => PidFileCheck::unreadable(e),
                },
                None,
                None,
            )
        }
    };
    let meta = match f.metadata() {
        Ok(m) => m,
        Err(e) => return (PidFileCheck::unreadable(e), None, None),
    };
    if !meta.is_file() {
        return (PidFileCheck::new(CheckReason::NotRegular), None, None);
    }
    let mut slot = Some(f);
    let (check, pin) = check_examined(&mut slot, &meta, cmd, tolerance, keep, scope);
    (check, pin, slot)
}

/// [`check_pinned_kept`] of the regular file in `slot`, examined as `meta`; without `keep`,
/// `slot` is emptied (the file closed) once it has been read.
fn check_examined(
    slot: &mut Option<std::fs::File>,
    meta: &std::fs::Metadata,
    cmd: CmdRule<'_>,
    tolerance: f64,
    keep: bool,
    scope: ReadScope,
) -> (PidFileCheck, Option<ProcessRef>) {
    // Unreachable: the caller puts the file in the slot.
    let f = slot.as_ref().expect("an open record");
    let mut out = PidFileCheck::new(CheckReason::Malformed);
    out.file_id = Some((meta.dev(), meta.ino()));
    out.owner = Some((meta.uid(), meta.mode()));
    out.linked = super::refused_links(meta);
    out.mtime = Some(meta.mtime() as f64 + meta.mtime_nsec() as f64 * 1e-9);
    // One read of what fstat says is there (at most one byte past the bound, to tell too long).
    // Longer content is malformed, not truncated: a prefix of it could parse.
    let parsed = super::with_bounded(f, meta.len(), MAX_CONTENT + 1, |buf| if buf.len() as u64 > MAX_CONTENT { None } else { parse_pid_content(buf) });
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            out.reason = CheckReason::Unreadable;
            out.read_error = Some(ReadError(std::sync::Arc::new(e)));
            return (out, None);
        }
    };
    let Some(pid) = parsed else { return (out, None) };
    out.pid = Some(pid);
    let token = match sys::fgetxattr(f.as_fd(), TOKEN_XATTR) {
        Ok(Some(raw)) => match std::str::from_utf8(&raw).ok().and_then(|s| s.parse::<StartToken>().ok()) {
            Some(t) => Some(t),
            None => {
                out.reason = CheckReason::BadToken;
                return (out, None);
            }
        },
        _ => None,
    };
    out.token = token;
    if out.token.is_some() && scope == ReadScope::Yes {
        // A scope is read only with the token that dates it (see write_pid_file_scoped).
        match sys::fgetxattr(f.as_fd(), crate::identity::SCOPE_XATTR) {
            Ok(Some(raw)) => match std::str::from_utf8(&raw).ok().and_then(|s| s.parse::<crate::identity::ScopeRecord>().ok()) {
                Some(sc) => out.scope = Some(sc),
                None => {
                    out.reason = CheckReason::BadToken;
                    return (out, None);
                }
            },
            _ => {}
        }
    }
    if !keep {
        *slot = None;
    }

    // A record from another boot, machine or namespace is decided without a liveness probe
    // (inside `probe`).
    let mut h = match ProcessRef::probe(pid, out.token.as_ref(), false) {
        Ok(h) => h,
        Err(j) => {
            out.judgement = Some(j);
            out.reason = match j.verdict {
                Verdict::Gone => CheckReason::Gone,
                Verdict::Mismatch => CheckReason::Mismatch,
                _ if j.reason.is_foreign() => CheckReason::Foreign,
                _ => CheckReason::Unverifiable,
            };
            return (out, None);
        }
    };
    let j = h.judgement();
    out.judgement = Some(j);
    out.live_start_ticks = h.stat().map(|s| s.start_ticks);
    match j.verdict {
        Verdict::Gone => {
            out.reason = if j.reason == Reason::NoSuchProcess { CheckReason::Gone } else { CheckReason::Zombie };
            return (out, Some(h));
        }
        Verdict::Mismatch => {
            out.reason = CheckReason::Mismatch;
            return (out, None);
        }
        Verdict::Unverifiable if out.token.is_some() => {
            out.reason = if j.reason.is_foreign() { CheckReason::Foreign } else { CheckReason::Unverifiable };
            return (out, None);
        }
        // A matching token alone decides: it was read from the process itself when it was
        // spawned, stronger evidence than the mtime or the command line (a hook that execs into
        // another program, or runs through its shebang, is still itself).
        Verdict::Match => {
            out.valid = true;
            out.reason = CheckReason::Valid;
            return (out, Some(h));
        }
        Verdict::Unverifiable => {}
    }
    // No token: abx-dl's evidence (mtime and argv). The probe read the stat (no inode to decide by).
    let Some(stat) = h.stat() else {
        out.reason = CheckReason::Unverifiable;
        return (out, None);
    };
    out.create_time = create_time(stat.start_ticks).ok();
    let (Some(mt), Some(ct)) = (out.mtime, out.create_time) else {
        out.reason = CheckReason::Unverifiable;
        return (out, None);
    };
    // The original's rule: strict `>` fails.
    if !tolerance.is_finite() || (mt - ct).abs() > tolerance {
        out.reason = CheckReason::MtimeSkew;
        return (out, Some(h));
    }
    let loaded_here;
    let loaded = match cmd {
        CmdRule::None => None,
        CmdRule::Command(c) => {
            loaded_here = c.load();
            Some(&loaded_here)
        }
        CmdRule::Loaded(r, sh_owner) => (!cmd_file_is_foreign(sh_owner, out.owner.map(|o| o.0))).then_some(r),
    };
    if let Some(loaded) = loaded {
        match loaded {
            // A missing file, an empty file or argv, or a last line that does not split (an
            // unbalanced quote) records no argv: the argv rules are skipped, as in the original.
            Ok(Some(rec)) if !rec.argv.is_empty() || rec.text.contains("--remote-debugging-port") => {
                let comm = stat.comm.clone();
                let Some(live) = live_command(pid, &comm) else {
                    // The argv could not be read (hidepid, a kernel thread, a process that just
                    // exited): no evidence either way.
                    out.reason = if h.has_exited() { CheckReason::Zombie } else { CheckReason::Unverifiable };
                    return (out, None);
                };
                // The argv was read by number: it is the pinned process's only if that process
                // still holds the number now.
                if h.has_exited() {
                    out.judgement = Some(Judgement { verdict: Verdict::Gone, reason: Reason::Zombie });
                    out.reason = CheckReason::Zombie;
                    return (out, Some(h));
                }
                if !command_matches(rec, &live) {
                    out.reason = CheckReason::CmdMismatch;
                    return (out, Some(h));
                }
            }
            Ok(_) => {}
            // A cmd file that cannot be read or trusted (planted FIFO, symlink, not UTF-8) is no
            // evidence either way.
            Err(_) => {
                out.reason = CheckReason::Unverifiable;
                return (out, None);
            }
        }
    }
    let _ = h.complete();
    out.valid = true;
    out.reason = CheckReason::Valid;
    (out, Some(h))
}

/// The live argv; `None` when it cannot be read (another user's process under `hidepid`).
/// An empty argv (a process that cleared it) is compared by its name, as psutil's is.
fn live_command(pid: i32, comm: &[u8]) -> Option<LiveCommand> {
    let argv = procfs::read_cmdline(pid).ok()?;
    Some(LiveCommand {
        argv: argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect(),
        name: String::from_utf8_lossy(comm).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_rules() {
        assert_eq!(parse_pid_content(b"123"), Some(123));
        assert_eq!(parse_pid_content(b" 123\n"), Some(123));
        // More than ten digits, all but the last zeros: still 7, as Python's int() reads it.
        assert_eq!(parse_pid_content(b"000000000007"), Some(7));
        assert_eq!(parse_pid_content(b"99999999999999999999999"), None);
        // str.strip()'s set: a vertical tab, the separators \x1c-\x1f, NBSP, ideographic space.
        assert_eq!(parse_pid_content(b"\x0b12\x1c\x1f"), Some(12));
        assert_eq!(parse_pid_content("\u{a0}12\u{3000}".as_bytes()), Some(12));
        for bad in [&b""[..], b"\n", b"0", b"-1", b"+5", b"5_0", b"5\0", b"99999999", b"abc", b"503\n7\n", b"1 2", b"12\x85", b"\x01 12"] {
            assert_eq!(parse_pid_content(bad), None, "{bad:?}");
        }
    }
}
