//! Recording a process you started: start-stop-daemon's `--make-pidfile`, done safely.
//!
//! A spawner (`pidguard run`, abx-dl's executor, a supervisor written against this crate)
//! does three things, and only the middle one is not pidguard's business:
//!
//! 1. [`ensure_vacant`] — refuse to start when the pidfile still names a live process of its
//!    own (or one whose identity cannot be read): the pidfile belongs to it;
//! 2. spawn the child (in a new session, so that it leads its own process group and a group
//!    stop reaches its children);
//! 3. [`record`] — write the pidfile for the child's pid: the abx-dl format with its start token
//!    and the `.sh` command file beside it, or a guard record.
//!
//! The spawn itself stays with the caller: Python has `subprocess`, Node `child_process`, Rust
//! `std::process::Command`; each knows best how to hand over file descriptors and environment.
//! What must not differ between them — when a pidfile is free to be written, what is written,
//! and which start time goes with it — is decided here.
//!
//! The abx-dl format is a record, not a lock: two spawners racing on one pidfile can both pass
//! [`ensure_vacant`]. For single-instance services use [`RecordFormat::Guard`], whose
//! [`record`] goes through [`crate::guard::acquire`] and lets exactly one win.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, ErrorKind, Result};
use crate::guard::{self, AcquireOptions, Entry};
use crate::identity::{lookup, Verdict};
use crate::pidfile::cmd::write_cmd_file;
use crate::options::check_pid_file;
use crate::pidfile::mtime::{write_pid_file_with_mtime, CheckReason, DEFAULT_TOLERANCE};

/// Which kind of pidfile [`record`] writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecordFormat {
    /// The abx-dl format: the pid as content, the start time as mtime, the start token in the
    /// `user.pidguard.token` xattr, and `<name>.sh` beside it (default).
    #[default]
    AbxDl,
    /// One JSON guard record (`{"pid", "start_token", …}`), created by exactly one of any
    /// number of racing spawners.
    Guard,
}

/// The `.sh` command file that goes with an abx-dl pidfile: `<pidfile without .pid>.sh`
/// ([`crate::options::cmd_file_for`], where the name is decided).
pub fn cmd_file_for(pid_file: &Path) -> PathBuf {
    crate::options::cmd_file_for(pid_file)
}

/// Refuse to (re)write `pid_file` while it still belongs to a process.
///
/// `Ok(())` when the path is free: no file, or a record proven stale (gone, reused, an
/// earlier boot, a token-less record whose mtime or command no longer matches), or content
/// that is not a record at all (malformed: it names no process). Such a file is replaced
/// by [`record`].
///
/// Errors: `Held` when a live process matches the record (abx-dl: [`check_pid_file`] says
/// valid; guard: the holder is `Match`), or when the record cannot be judged (its live identity
/// is unreadable, or it was written on another machine or in another PID namespace) — a
/// record that may be alive is never overwritten; `Untrusted` (or a refinement) for a symlink,
/// FIFO or directory at the path; `PermissionDenied`/`Io` when the file cannot be read.
pub fn ensure_vacant(pid_file: &Path, format: RecordFormat) -> Result<()> {
    match format {
        RecordFormat::AbxDl => {
            let cmd = cmd_file_for(pid_file);
            let c = check_pid_file(pid_file, cmd.exists().then_some(cmd.as_path()), DEFAULT_TOLERANCE);
            let held = |why: &str| {
                let mut e = Error::at(ErrorKind::Held, pid_file, format_args!("{why}; not overwritten"));
                if let Some(pid) = c.pid {
                    e = e.with_pid(pid);
                }
                Err(e)
            };
            match c.reason {
                CheckReason::Valid => held(&format!("held by pid {}, alive and matching", c.pid.unwrap_or(0))),
                CheckReason::Unverifiable | CheckReason::Foreign => {
                    let why = c.judgement.map(|j| j.reason.as_str()).unwrap_or(c.reason.as_str());
                    held(&format!("names pid {} whose identity cannot be judged here ({why})", c.pid.unwrap_or(0)))
                }
                CheckReason::NotRegular => Err(Error::at(ErrorKind::NotRegularFile, pid_file, "not a regular file")),
                CheckReason::Unreadable => {
                    // Ask the system why, so that the caller sees its text (EACCES, EIO, …).
                    let opened = crate::sys::open_raw(pid_file, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0, crate::protect::walk());
                    match opened {
                        Err(e) => Err(Error::io_at(pid_file, "open", &e)),
                        Ok(_) => Err(Error::at(ErrorKind::Io, pid_file, "cannot be read")),
                    }
                }
                _ => Ok(()),
            }
        }
        RecordFormat::Guard => {
            let v = guard::check(pid_file)?;
            match v.identity {
                Some(j) if j.verdict == Verdict::Match || j.verdict == Verdict::Unverifiable => {
                    Err(Error::held(pid_file, v))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Check, before anything is created, that `program` can be started in `cwd`: the spawner
/// calls it first so that a command that cannot start leaves no log, pidfile or directory
/// behind. `cwd` (default: the current directory) must be a directory; `program` with a `/` is
/// looked up relative to it, one without in each directory of `$PATH` (`/usr/bin:/bin` when
/// unset), as `execvp(3)` does; it must be a regular file this process may execute
/// (`access(2)` with `X_OK`).
///
/// Errors: `NotFound` naming the missing program (`not found in $PATH` when it was searched) or
/// the missing `--cwd` directory; `InvalidArgument` when `cwd` is not a directory; `PermissionDenied` when the program exists but may not be executed.
pub fn check_command(program: &std::ffi::OsStr, cwd: Option<&Path>) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if let Some(d) = cwd {
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Error::at(ErrorKind::InvalidArgument, d, "--cwd: not a directory")),
            Err(e) => return Err(Error::io_at(d, "--cwd", &e)),
        }
    }
    let executable = |p: &Path| -> std::result::Result<(), io::Error> {
        let m = std::fs::metadata(p)?;
        if !m.is_file() {
            return Err(io::Error::from_raw_os_error(if m.is_dir() { libc::EISDIR } else { libc::EACCES }));
        }
        nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).map_err(io::Error::from)
    };
    let shown = Path::new(program);
    if program.as_bytes().contains(&b'/') {
        let p = match cwd {
            Some(d) if shown.is_relative() => d.join(shown),
            _ => shown.to_path_buf(),
        };
        return executable(&p).map_err(|e| Error::io_at(shown, "cannot start", &e));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let mut denied = None;
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        match executable(&dir.join(program)) {
            Ok(()) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => denied = Some(e),
            Err(_) => {}
        }
    }
    Err(match denied {
        Some(e) => Error::io_at(shown, "cannot start", &e),
        None => Error::at(ErrorKind::NotFound, shown, "cannot start: No such file or directory (not found in $PATH)"),
    })
}

/// Check that the directory a file at `path` is to be created in exists (the current directory
/// for a bare name), so that the error names the directory and not the file.
///
/// Errors: `NotFound` "D: directory does not exist (create it first: mkdir -p D)"; `InvalidArgument`
/// when D is not a directory; `PermissionDenied`/`Io` from `stat(2)`.
pub fn check_parent_dir(path: &Path) -> Result<()> {
    let d = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => return Ok(()),
    };
    match std::fs::metadata(d) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::at(ErrorKind::InvalidArgument, d, format_args!("not a directory (needed for {})", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::at(
            ErrorKind::NotFound,
            d,
            format_args!("directory does not exist (create it first: mkdir -p {})", d.display()),
        )),
        Err(e) => Err(Error::io_at(d, "stat", &e)),
    }
}

/// Create the missing directories above a guard record at `pid_file`, each with mode exactly
/// `0700` ([`crate::guard::DIR_MODE`]), as [`crate::guard::create`] does; existing ones are left
/// as they are. For spawners that open the logs beside the record before writing it.
///
/// Errors: `Untrusted` when a privileged caller's path crosses an unsafe transition (see
/// [`open_log`]); `PermissionDenied`, `NotFound`, `Io` from `mkdir`.
pub fn make_record_dir(pid_file: &Path) -> Result<()> {
    match pid_file.parent() {
        Some(d) if !d.as_os_str().is_empty() => crate::pidfile::record::file::make_parent(pid_file, d),
        _ => Ok(()),
    }
}

/// Open (creating it with mode `0644` minus the umask, truncating it) the log file at `path`
/// that a spawned command's stdout or stderr goes to.
///
/// The log may sit in a directory another user can write, so: a symlink at its name is never
/// followed (`O_NOFOLLOW`: root must not truncate the file it names), a FIFO never blocks the
/// open (`O_NONBLOCK`), and only a regular file is accepted. For a privileged caller (euid 0 or
/// `CAP_KILL`) the directories on the path are walked one by one and a step from a directory
/// (or symlink) owned by a non-root uid to a directory owned by another uid is refused (the
/// `chase(CHASE_SAFE)` rule of systemd, CVE-2018-16888).
///
/// Errors: `Untrusted` for a symlink at the name, an unsafe transition on the path, or not a
/// regular file; `PermissionDenied`, `NotFound`, `Io` from `open(2)`.
pub fn open_log(path: &Path) -> Result<std::fs::File> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let fd = crate::sys::open_raw(path, flags, 0o644, crate::protect::walk()).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => Error::at(ErrorKind::Symlink, path, "is a symbolic link: refusing to write through it"),
        _ => Error::io_at(path, "open log", &e),
    })?;
    let f = std::fs::File::from(fd);
    let m = f.metadata().map_err(|e| Error::io_at(path, "fstat", &e))?;
    if !m.is_file() {
        return Err(Error::at(ErrorKind::NotRegularFile, path, "not a regular file"));
    }
    Ok(f)
}

/// Seconds since the epoch now, as `time.time()` gives it: the `start_time` to pass to
/// [`record`] right after spawning.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Write the pidfile for `pid`, a process the caller has just spawned at `start_time`
/// (seconds since the epoch, [`now`] right after the spawn) running `argv`.
///
/// - [`RecordFormat::AbxDl`]: `<name>.sh` with `argv` ([`write_cmd_file`]; skipped when `argv`
///   is empty), then the pidfile with [`write_pid_file_with_mtime`], which stores the start
///   token because the process was read within 5 s of `start_time`. The pidfile replaces
///   whatever was at the path: call [`ensure_vacant`] before spawning.
/// - [`RecordFormat::Guard`]: [`guard::acquire`] for an [`Entry`] of `pid`, its start token and
///   `fields`; a stale record is replaced by content. `argv` is not written.
///
/// Errors: `NoSuchProcess` when `pid` has already exited; `Held` (guard) when another live
/// holder won the race; the errors of the writers (`InvalidArgument`, `Untrusted`,
/// `PermissionDenied`, `Io`).
pub fn record<S: AsRef<str>>(
    pid_file: &Path,
    pid: i32,
    start_time: f64,
    argv: &[S],
    format: RecordFormat,
    fields: &[(String, String)],
) -> Result<()> {
    match format {
        RecordFormat::AbxDl => {
            if !argv.is_empty() {
                write_cmd_file(&cmd_file_for(pid_file), argv)?;
            }
            write_pid_file_with_mtime(pid_file, pid, start_time)
        }
        RecordFormat::Guard => {
            let token = crate::identity::start_token(pid)?;
            let mut entry = Entry::new(pid, token.to_string());
            for (k, v) in fields {
                entry = entry.with_field(k.clone(), v.clone());
            }
            guard::acquire(pid_file, &entry, &AcquireOptions::default()).map(|g| {
                // The record belongs to the spawned process, not to the caller: keep it.
                g.keep();
            })
        }
    }
}

/// Write the pidfile for `pid`, a process that is already running (`pidguard write`): its
/// start time is its create time read from procfs, and its argv (when readable) goes into the
/// `.sh` file of the abx-dl format, so that the record validates as if its spawner had
/// written it.
///
/// Errors: `Refused` (`init`) for pid 1, at once: no record of it could ever be acted on;
/// `NoSuchProcess` when `pid` does not exist or is a zombie (exited as a whole: a leader whose
/// main thread exited while others run is alive and recorded); `InvalidArgument` for a pid
/// outside 1 to 4194304; the errors of [`record`].
pub fn record_existing(pid_file: &Path, pid: i32, format: RecordFormat) -> Result<()> {
    if pid == 1 {
        let mut e = Error::refused(pid, crate::protect::Refusal::Init);
        e.set_message("pid 1: refused to record (init): no record of it could ever be acted on".to_string());
        return Err(e);
    }
    let info = lookup(pid)?;
    if info.is_zombie() {
        return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} has exited (zombie)")).with_pid(pid));
    }
    let argv = info.argv.clone().unwrap_or_default();
    record(pid_file, pid, info.create_time, &argv, format, &[])
}
