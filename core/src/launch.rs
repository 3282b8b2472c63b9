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

mod record;
mod run_as;
mod vacant;

pub use run_as::{parse_chuid, IdSpec, RunAs};

pub use record::{move_record, now, record, record_existing, record_existing_scoped};
use record::acquire_record;
pub use vacant::{cmd_file_for, ensure_vacant, RecordFormat};

use crate::error::{Error, ErrorKind, Result};
use crate::pidfile::cmd::write_cmd_file;


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
    check_command_in(program, cwd, None)
}

/// [`check_command`] with `path` (a `PATH` value) in place of the caller's `$PATH` when given.
fn check_command_in(program: &std::ffi::OsStr, cwd: Option<&Path>, path: Option<&std::ffi::OsStr>) -> Result<()> {
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
    let path = path.map(|p| p.to_os_string()).or_else(|| std::env::var_os("PATH")).unwrap_or_else(|| "/usr/bin:/bin".into());
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

/// Open (creating it with mode `0644` minus the umask, emptying it) the log file at `path`
/// that a spawned command's stdout or stderr goes to: afterwards the log holds only what the
/// command writes, as abx-dl's `stdout_file.open("wb")` (1.13.127, 1.13.423) leaves it.
///
/// The log may sit in a directory another user can write, so: a symlink at its name is never
/// followed (`O_NOFOLLOW`: root must not truncate the file it names), a FIFO never blocks the
/// open (`O_NONBLOCK`), and only a regular file is accepted. For a privileged caller (a real or
/// effective uid of 0, or `CAP_KILL`) the directories on the path are walked one by one and a step from a directory
/// (or symlink) owned by a non-root uid to a directory owned by another uid is refused (the
/// `chase(CHASE_SAFE)` rule of systemd, CVE-2018-16888).
///
/// **A privileged caller never writes into a file someone else made.** A log that exists and
/// is owned by a uid other than the caller's effective uid (the owner files it creates get), or
/// that has more than one link, is not written into: a user who pre-created it (mode `0666` in
/// a sticky world-writable directory, where `fs.protected_regular=0` lets root open it) would
/// read — and could rewrite — the privileged command's output, and a hard link would make the
/// truncation reach another file. It is *replaced*: a fresh file (`O_EXCL`, mode `0644` minus
/// the umask, the caller's own) is made beside it and renamed over its name, as a pidfile is
/// written; the other file is left as it was, unread and untouched, under no name. Replacing
/// rather than refusing keeps abx-dl's behaviour (every run starts its logs afresh, whoever
/// wrote the last ones). The file is never truncated before it was judged (it is opened
/// without `O_TRUNC`, then emptied with `ftruncate` when it is the caller's own). An
/// unprivileged caller writes into any regular file the kernel lets it open, as before.
///
/// Errors: `Untrusted` for a symlink at the name, an unsafe transition on the path, or not a
/// regular file, or a foreign log that cannot be replaced (the rename refused: a sticky
/// directory whose owner the caller is not, without `CAP_FOWNER`), naming its owner;
/// `PermissionDenied`, `NotFound`, `Io` from `open(2)`.
pub fn open_log(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    let walk = crate::protect::walk();
    let open_err = |e: io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) => Error::at(ErrorKind::Symlink, path, "is a symbolic link: refusing to write through it"),
        _ => Error::io_at(path, "open log", &e),
    };
    let (dir, name) = crate::sys::DirFd::parent_of(path, walk).map_err(open_err)?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let f = std::fs::File::from(dir.create_file(name, flags, 0o644).map_err(open_err)?);
    let m = f.metadata().map_err(|e| Error::io_at(path, "fstat", &e))?;
    if !m.is_file() {
        return Err(Error::at(ErrorKind::NotRegularFile, path, "not a regular file"));
    }
    let (_, euid) = crate::sys::uids();
    if crate::protect::privileged() && (m.uid() != euid || m.nlink() != 1) {
        drop(f);
        return replace_log(&dir, name, path, m.uid(), m.nlink(), euid);
    }
    f.set_len(0).map_err(|e| Error::io_at(path, "truncate log", &e))?;
    Ok(f)
}

/// [`open_log`]'s replacement of a log that a privileged caller must not write into: a fresh
/// file beside it (`O_EXCL|O_NOFOLLOW`), renamed over `name` in the same directory descriptor.
fn replace_log(dir: &crate::sys::DirFd, name: &std::ffi::OsStr, path: &Path, owner: u32, links: u64, euid: u32) -> Result<std::fs::File> {
    let tmp = crate::pidfile::atomic::temp_name(Path::new(name));
    let tmp = tmp.file_name().unwrap_or_default();
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let fd = dir.create_file(tmp, flags, 0o644).map_err(|e| Error::io_at(path, "create a log to replace the existing one", &e))?;
    if let Err(e) = dir.rename(tmp, name) {
        let _ = dir.unlink(tmp);
        let why = if owner != euid { format!("owned by uid {owner}, not by the caller (uid {euid})") } else { format!("it has {links} links") };
        let mut x = Error::at(ErrorKind::Untrusted, path, format_args!("log {why}: not written into, and it cannot be replaced: {e}"));
        if let Some(n) = e.raw_os_error() {
            x.set_errno(n);
        }
        return Err(x);
    }
    Ok(std::fs::File::from(fd))
}

/// Which scope [`spawn`] starts a command in (see [`crate::identity::Scope`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScopeMode {
    /// A cgroup v2 leaf where the caller may make one, else a supervisor (default). The
    /// report's [`Spawned::note`] says why the leaf could not be made.
    #[default]
    Auto,
    /// A cgroup v2 leaf, or an error.
    Cgroup,
    /// A subreaper supervisor, even where a leaf could be made.
    Supervisor,
    /// No scope: the command's process group only (what a record written by abx-dl gets).
    Group,
}

impl ScopeMode {
    /// `"auto"`, `"cgroup"`, `"supervisor"` or `"group"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ScopeMode::Auto => "auto",
            ScopeMode::Cgroup => "cgroup",
            ScopeMode::Supervisor => "supervisor",
            ScopeMode::Group => "group",
        }
    }
}

impl std::str::FromStr for ScopeMode {
    type Err = Error;
    /// Errors: `InvalidArgument` for anything but the four names.
    fn from_str(s: &str) -> Result<ScopeMode> {
        match s {
            "auto" => Ok(ScopeMode::Auto),
            "cgroup" => Ok(ScopeMode::Cgroup),
            "supervisor" => Ok(ScopeMode::Supervisor),
            "group" => Ok(ScopeMode::Group),
            _ => Err(Error::invalid(format!("scope must be auto, cgroup, supervisor or group, not {s:?}"))),
        }
    }
}

/// Options of [`spawn`].
#[derive(Clone, Debug, Default)]
pub struct SpawnOptions {
    /// The scope to start the command in (default [`ScopeMode::Auto`]).
    pub scope: ScopeMode,
    /// The command's working directory (default: the caller's).
    pub cwd: Option<PathBuf>,
    /// Where the command's stdout goes, truncated (default `<pidfile without .pid>.stdout.log`).
    pub stdout: Option<PathBuf>,
    /// Where the command's stderr goes, truncated (default `<pidfile without .pid>.stderr.log`).
    pub stderr: Option<PathBuf>,
    /// The pidfile's format (default the abx-dl format).
    pub format: RecordFormat,
    /// Extra fields of a guard record (`RecordFormat::Guard` only).
    pub fields: Vec<(String, String)>,
    /// Hand the command's stdout and stderr to the caller through two pipes instead of log
    /// files: [`Spawned::output`] holds their read ends (default false). `stdout` and `stderr`
    /// must then be `None`. For a caller that reads the output itself (Node's
    /// `stdio: ['ignore', 'pipe', 'pipe']`); the write ends are the command's only (and its
    /// descendants'), so a read sees end-of-file once all of them have closed them.
    pub pipe_output: bool,
    /// The command's environment: exactly these `(name, value)` pairs, in order (default
    /// `None`: the caller's environment, as read when [`spawn`] is called). Its `PATH`, when it
    /// has one (the first), is where a program named without a `/` is looked up (as Python's `subprocess`
    /// and Node's `child_process` do); without one, the caller's `PATH`. A name that is empty or
    /// holds `=` or a NUL byte, or a value holding a NUL byte, is `InvalidArgument` before
    /// anything is created. Setting it never touches the caller's own environment (no
    /// `setenv`: safe while other threads run).
    pub env: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// Start the command as this user (Python `subprocess`'s `user=`, start-stop-daemon's
    /// `--chuid`): its real, effective and saved uid (default: the caller's). See the
    /// `run_as` rules in this module's [`spawn`] doc for names, defaults and who may ask.
    pub user: Option<IdSpec>,
    /// Its real, effective and saved gid (default with `user`: the user's primary group).
    pub group: Option<IdSpec>,
    /// Exactly these supplementary groups (default with `user`: the user's groups, as
    /// `initgroups(3)` gives them; without `user`: unchanged).
    pub extra_groups: Option<Vec<IdSpec>>,
}

/// The read ends of the command's stdout and stderr ([`SpawnOptions::pipe_output`]): pipes,
/// close-on-exec, blocking, owned by the caller (dropping one closes it; the command then gets
/// `EPIPE`/`SIGPIPE` when it writes there).
#[derive(Debug)]
pub struct OutputPipes {
    /// The command's stdout.
    pub stdout: std::os::fd::OwnedFd,
    /// The command's stderr.
    pub stderr: std::os::fd::OwnedFd,
}

/// What [`spawn`] started.
#[derive(Debug)]
pub struct Spawned {
    /// The command's pid (the one in the pidfile).
    pub pid: i32,
    /// The pidfile written.
    pub pid_file: PathBuf,
    /// The `.sh` command file beside an abx-dl pidfile.
    pub cmd_file: Option<PathBuf>,
    /// Where the command's stdout and stderr go (empty with [`SpawnOptions::pipe_output`]:
    /// see [`Self::output`]).
    pub stdout: PathBuf,
    /// See [`Self::stdout`].
    pub stderr: PathBuf,
    /// The scope the command runs in: `Cgroup`, `Supervisor`, or `Group` (none).
    pub scope: crate::identity::ScopeKind,
    /// The scope as recorded beside the pidfile (`None` for `Group`, or when it could not be
    /// recorded: see [`Self::note`]).
    pub scope_record: Option<crate::identity::ScopeRecord>,
    /// The supervisor's pid, in `Supervisor` mode: the caller's child, which exits with the
    /// command's status once the whole tree has exited (reap it, or let it be reaped when the
    /// caller exits).
    pub supervisor_pid: Option<i32>,
    /// Why the scope is weaker than asked for (the leaf could not be made, the file system has
    /// no user xattrs to record the scope in), when it is.
    pub note: Option<String>,
    /// The read ends of the command's stdout and stderr, with [`SpawnOptions::pipe_output`].
    pub output: Option<OutputPipes>,
    /// The identity the command was started as ([`SpawnOptions::user`], `group`,
    /// `extra_groups`, resolved), recorded beside the pidfile; `None` when none was asked for.
    pub run_as: Option<RunAs>,
}

/// A program found as `execvp(3)` would find it, as an absolute path: `program` with a `/` is
/// taken relative to `cwd` when relative (the child changes into `cwd` first), else relative to
/// the caller's directory; one without is looked up in `$PATH`. See [`check_command`] for the
/// errors.
pub fn resolve_program(program: &std::ffi::OsStr, cwd: Option<&Path>) -> Result<PathBuf> {
    resolve_program_in(program, cwd, None)
}

/// [`resolve_program`] with `path` (a `PATH` value) in place of the caller's `$PATH` when given.
fn resolve_program_in(program: &std::ffi::OsStr, cwd: Option<&Path>, path: Option<&std::ffi::OsStr>) -> Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    check_command_in(program, cwd, path)?;
    let here = std::env::current_dir().map_err(|e| Error::io_at(Path::new("."), "getcwd", &e))?;
    let base = match cwd {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => here.join(d),
        None => here.clone(),
    };
    if program.as_bytes().contains(&b'/') {
        let p = Path::new(program);
        return Ok(if p.is_absolute() { p.to_path_buf() } else { base.join(p) });
    }
    let path = path.map(|p| p.to_os_string()).or_else(|| std::env::var_os("PATH")).unwrap_or_else(|| "/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let cand = dir.join(program);
        let ok = std::fs::metadata(&cand).is_ok_and(|m| m.is_file())
            && nix::unistd::access(&cand, nix::unistd::AccessFlags::X_OK).is_ok();
        if ok {
            return Ok(if cand.is_absolute() { cand } else { here.join(cand) });
        }
    }
    Err(Error::at(ErrorKind::NotFound, Path::new(program), "cannot start: No such file or directory (not found in $PATH)"))
}

/// The command's environment as `NAME=value` C strings: `given` (see [`SpawnOptions::env`]),
/// or the caller's own.
///
/// Errors: `InvalidArgument` for a name that is empty or holds `=` or NUL, or a value with NUL.
fn environment(given: Option<&[(std::ffi::OsString, std::ffi::OsString)]>) -> Result<Vec<std::ffi::CString>> {
    use std::os::unix::ffi::OsStrExt;
    let entry = |k: &std::ffi::OsStr, v: &std::ffi::OsStr| -> Result<std::ffi::CString> {
        let (k, v) = (k.as_bytes(), v.as_bytes());
        if k.is_empty() || k.contains(&b'=') || k.contains(&0) {
            return Err(Error::invalid(format!("spawn: {:?} is not an environment variable name (empty, or holds '=' or a NUL byte)", String::from_utf8_lossy(k))));
        }
        let mut b = Vec::with_capacity(k.len() + 1 + v.len());
        b.extend_from_slice(k);
        b.push(b'=');
        b.extend_from_slice(v);
        std::ffi::CString::new(b).map_err(|_| Error::invalid(format!("spawn: the value of {} holds a NUL byte", String::from_utf8_lossy(k))))
    };
    match given {
        Some(pairs) => pairs.iter().map(|(k, v)| entry(k, v)).collect(),
        None => std::env::vars_os().map(|(k, v)| entry(&k, &v)).collect(),
    }
}

/// Start `argv` (at least one word) in a new session, inside a scope, with its output in files,
/// and record it in `pid_file`: the one call behind `pidguard run` and every binding's `spawn`.
///
/// 1. Checked before anything is created ([`check_command`], [`ensure_vacant`],
///    [`check_parent_dir`]): a command that cannot start leaves no file behind.
/// 2. The logs are opened ([`open_log`]); stdin is `/dev/null`.
/// 3. The scope ([`ScopeMode`]): a cgroup v2 leaf `pidguard/run-…` below the caller's own
///    cgroup, which the child joins before it execs (so not even its first fork escapes); or a
///    supervisor, a child of the caller that is a child subreaper and starts the command (see
///    [`crate::identity::Scope`]). The command itself always leads a new session and process
///    group (Node's `detached: true`), so a record read without its scope is still stopped
///    with its group.
/// 4. The pidfile: the abx-dl format with the token and the scope in
///    [`crate::identity::SCOPE_XATTR`] (plus the `.sh`), or a guard record with a `scope`
///    field. If it cannot be written, the command and everything in its scope are killed, the
///    leaf removed and the direct child reaped: nothing runs unrecorded.
///
/// **As another user** ([`SpawnOptions::user`], `group`, `extra_groups`): the command's
/// real, effective and saved uid and gid and its supplementary groups are exactly those,
/// set in its own process before it execs — after it joined its leaf — with `setgroups`,
/// `setresgid`, `setresuid` in that order, then read back (a difference fails the spawn). A
/// supervisor keeps the caller's identity (it must stay able to signal the tree); the leaf and
/// its files stay the caller's (never chowned: the command cannot write `cgroup.procs`, move
/// itself or others out, or make cgroups in it). The record stays the caller's too (owned by
/// its effective uid, with the caller's authority) and says who the command runs as:
/// [`crate::pidfile::mtime::RUN_AS_XATTR`] beside an abx-dl pidfile, a `run_as` field in a
/// guard record. Names and numbers, the defaults when only `user` is given (its primary group,
/// its `initgroups` groups) and who may ask are described in the `run_as` module: root; root
/// that lowered only its effective uid (ids (0, U, 0)); anyone, for ids it already holds. The
/// log files are opened by the caller (owned by it) and handed to the command open.
///
/// Errors (nothing left running, no leaf left): `InvalidArgument` for an empty `argv`, a NUL
/// in a word or a bad [`SpawnOptions::env`]; `PermissionDenied` (before anything is made) when
/// the caller may not start a command as the identity asked for, `NotFound` for a user or
/// group name with no entry; those of the checks (`NotFound`, `PermissionDenied`, `Held`, `Untrusted`);
/// `Unsupported`-like `Io` with the step when `ScopeMode::Cgroup` cannot make or join a leaf;
/// `Io`/`NotFound`/`PermissionDenied` from the `fork`, the cgroup join, `chdir` or `execve`
/// with the step in the message; the record's errors.
pub fn spawn<S: AsRef<std::ffi::OsStr>>(pid_file: &Path, argv: &[S], opts: &SpawnOptions) -> Result<Spawned> {
    use std::ffi::CString;
    use std::os::fd::AsFd;
    use std::os::unix::ffi::OsStrExt;
    use crate::identity::{create_leaf, ScopeKind, ScopeRecord};
    use crate::sys::spawn as sp;

    let Some(first) = argv.first() else { return Err(Error::invalid("spawn: the command is empty")) };
    let cstr = |b: &[u8]| CString::new(b).map_err(|_| Error::invalid("spawn: a NUL byte in the command, its directory or the environment"));
    // The environment first: a bad name or value is refused before anything is looked up.
    let env = environment(opts.env.as_deref())?;
    // The identity next: a caller that may not take it is refused before anything is made.
    let ids = run_as::resolve(opts.user.as_ref(), opts.group.as_ref(), opts.extra_groups.as_deref())?;
    let (run_as, child_ids) = match ids {
        Some((r, c)) => (Some(r), Some(c)),
        None => (None, None),
    };
    let run_as_text = run_as.as_ref().map(|r| r.to_string());
    let env_path = opts.env.as_ref().and_then(|e| e.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_os_str()));
    let program = resolve_program_in(first.as_ref(), opts.cwd.as_deref(), env_path)?;
    ensure_vacant(pid_file, opts.format)?;
    if opts.format == RecordFormat::Guard {
        make_record_dir(pid_file)?;
    }
    if opts.pipe_output && (opts.stdout.is_some() || opts.stderr.is_some()) {
        return Err(Error::invalid("spawn: stdout and stderr paths cannot be given with pipe_output"));
    }
    let (default_out, default_err) = crate::options::default_log_files(pid_file);
    let (out_path, err_path) = match opts.pipe_output {
        true => (PathBuf::new(), PathBuf::new()),
        false => (opts.stdout.clone().unwrap_or(default_out), opts.stderr.clone().unwrap_or(default_err)),
    };
    check_parent_dir(pid_file)?;
    if !opts.pipe_output {
        check_parent_dir(&out_path)?;
        check_parent_dir(&err_path)?;
    }
    let devnull = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null").map_err(|e| Error::io_at(Path::new("/dev/null"), "open", &e))?;
    let words: Vec<CString> = argv.iter().map(|a| cstr(a.as_ref().as_bytes())).collect::<Result<_>>()?;
    let cwd = opts.cwd.as_ref().map(|d| cstr(d.as_os_str().as_bytes())).transpose()?;
    let text: Vec<String> = argv.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect();

    // The leaf before the logs: a spawn that fails for want of a leaf creates (or truncates) no
    // file.
    let mut note = None;
    let leaf = match opts.scope {
        ScopeMode::Auto | ScopeMode::Cgroup => match create_leaf() {
            Ok(l) => Some(l),
            Err(why) if opts.scope == ScopeMode::Cgroup => {
                return Err(Error::new(ErrorKind::Io, format!("spawn: no cgroup leaf could be made: {why}")))
            }
            Err(why) => {
                note = Some(format!("no cgroup leaf could be made ({why}): started under a supervisor"));
                None
            }
        },
        _ => None,
    };
    // The command's stdout and stderr: the logs, or the write ends of two pipes (their read
    // ends go to the caller).
    let outputs = || -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd, Option<OutputPipes>)> {
        if !opts.pipe_output {
            return Ok((open_log(&out_path)?.into(), open_log(&err_path)?.into(), None));
        }
        let pipe = || std::io::pipe().map_err(|e| Error::io_at(Path::new("pipe"), "spawn: create the output pipes", &e));
        let ((out_r, out_w), (err_r, err_w)) = (pipe()?, pipe()?);
        Ok((out_w.into(), err_w.into(), Some(OutputPipes { stdout: out_r.into(), stderr: err_r.into() })))
    };
    let (out, err, output) = match outputs() {
        Ok(o) => o,
        Err(e) => {
            if let Some(l) = &leaf {
                l.discard();
            }
            return Err(e);
        }
    };
    let cmd = |join: Option<(std::os::fd::RawFd, std::os::fd::RawFd)>| sp::Command {
        program: CString::new(program.as_os_str().as_bytes()).unwrap_or_default(),
        argv: words.clone(),
        env: env.clone(),
        cwd: cwd.clone(),
        stdio: [devnull.as_fd(), out.as_fd(), err.as_fd()],
        join: join.map(|(procs, _)| procs),
        join_dir: join.map(|(_, dir)| dir),
        devnull: devnull.as_fd(),
        ids: child_ids.as_ref(),
    };
    // A token that cannot be read (a /proc that hides the machine's facts, `subset=pid`) means
    // no provable record: the command is then never executed.
    let token_error: std::cell::RefCell<Option<Error>> = std::cell::RefCell::new(None);
    let failed = |e: sp::SpawnError| {
        let shown = Path::new(first.as_ref());
        if e.stage == sp::Stage::Record {
            let why = token_error.borrow_mut().take().map_or_else(|| "unknown".to_string(), |t| t.message().to_string());
            return Error::at(
                ErrorKind::Io,
                shown,
                format!("not started: its start token could not be read while it was held before its exec ({why}), so no provable record could be written"),
            );
        }
        let mut x = Error::io_at(shown, &format!("cannot start ({})", e.stage.as_str()), &e.error);
        if e.stage == sp::Stage::Exec {
            x = Error::io_at(shown, "cannot start", &e.error);
        }
        x
    };
    // The start tokens, read while the command is held before its exec: a command that exits
    // at once (a daemon's first process) is still recorded with its token, and so its scope.
    let mut cmd_token: Option<crate::identity::StartToken> = None;
    let mut sup_token: Option<crate::identity::StartToken> = None;
    let mut held = |p: i32| match crate::identity::start_token(p) {
        Ok(t) => {
            cmd_token = Some(t);
            true
        }
        Err(e) => {
            *token_error.borrow_mut() = Some(e);
            false
        }
    };
    // (pid, supervisor, scope record, leaf kept)
    let mut started: Option<(i32, Option<i32>, Option<ScopeRecord>)> = None;
    let mut kept_leaf = None;
    if let Some(l) = leaf {
        match sp::spawn(&cmd(Some(l.join_fds())), &mut held) {
            Ok(pid) => {
                started = Some((pid, None, Some(l.record.clone())));
                kept_leaf = Some(l);
            }
            Err(e) if e.stage == sp::Stage::JoinCgroup && opts.scope == ScopeMode::Auto => {
                l.discard();
                note = Some(format!("the cgroup leaf could not be joined ({}): started under a supervisor", e.error));
            }
            Err(e) => {
                l.discard();
                return Err(failed(e));
            }
        }
    }
    if started.is_none() {
        if opts.scope == ScopeMode::Group {
            let pid = sp::spawn(&cmd(None), &mut held).map_err(failed)?;
            started = Some((pid, None, None));
        } else {
            let mut held_both = |s: i32, p: i32| match (crate::identity::start_token(s), crate::identity::start_token(p)) {
                (Ok(a), Ok(b)) => {
                    sup_token = Some(a);
                    cmd_token = Some(b);
                    true
                }
                (Err(e), _) | (_, Err(e)) => {
                    *token_error.borrow_mut() = Some(e);
                    false
                }
            };
            let (sup, pid) = sp::spawn_supervised(&cmd(None), &mut held_both).map_err(failed)?;
            let rec = sup_token.take().map(|token| ScopeRecord::Supervisor { pid: sup, token });
            started = Some((pid, Some(sup), rec));
        }
    }
    let start_time = now();
    let Some((pid, sup, rec)) = started else { return Err(Error::new(ErrorKind::Io, "spawn: nothing started")) };
    let undo = |why: Error| -> Error {
        // Nothing may run unrecorded: kill the scope (or the command), reap our child.
        if let Some(l) = &kept_leaf {
            l.discard();
        }
        if let Ok(fd) = crate::sys::pidfd_open(pid) {
            let _ = crate::sys::pidfd_send_signal(fd.as_fd(), libc::SIGKILL, 0);
        }
        if let Some(s) = sup {
            end_supervised(s, rec.as_ref());
        }
        crate::sys::spawn::reap(sup.unwrap_or(pid));
        why
    };
    crate::sys::fault::point(crate::sys::fault::Point::BeforeSpawnRecord);
    if sup.is_some() && rec.is_none() {
        return Err(undo(Error::new(ErrorKind::Io, "spawn: the supervisor's start token could not be read")));
    }
    let scope_text = rec.as_ref().map(|r| r.to_string());
    let recorded = match opts.format {
        RecordFormat::AbxDl => {
            // The record must be provable: without user xattrs (or without the token) nothing is
            // written, the command is ended, and the `.sh` written for it removed.
            let cmd_file = cmd_file_for(pid_file);
            let r = write_cmd_file(&cmd_file, &text).and_then(|()| {
                crate::pidfile::mtime::write_pid_file_run_as(pid_file, pid, start_time, cmd_token.clone(), scope_text.as_deref(), run_as_text.as_deref(), true)
            });
            match r {
                Ok(ok) => ok || scope_text.is_none(),
                Err(e) => {
                    if e.kind() == ErrorKind::Unsupported {
                        let _ = crate::sys::unlink_path(&cmd_file, crate::protect::walk());
                    }
                    return Err(undo(e));
                }
            }
        }
        RecordFormat::Guard => {
            let mut fields = opts.fields.clone();
            if let Some(t) = &scope_text {
                fields.push(("scope".to_string(), t.clone()));
            }
            if let Some(t) = &run_as_text {
                fields.push(("run_as".to_string(), t.clone()));
            }
            let token = match cmd_token.clone().map_or_else(|| crate::identity::start_token(pid), Ok) {
                Ok(t) => t,
                Err(e) => return Err(undo(e)),
            };
            if let Err(e) = acquire_record(pid_file, pid, token, &fields) {
                return Err(undo(e));
            }
            true
        }
    };
    let scope_kind = rec.as_ref().map_or(ScopeKind::Group, |r| r.kind());
    if !recorded {
        note = Some(format!(
            "the scope ({scope_kind}) could not be recorded: the pidfile's file system has no user xattrs; a stop reaches the command's group only"
        ));
    }
    Ok(Spawned {
        pid,
        pid_file: pid_file.to_path_buf(),
        cmd_file: (opts.format == RecordFormat::AbxDl).then(|| cmd_file_for(pid_file)),
        stdout: out_path,
        stderr: err_path,
        scope: scope_kind,
        scope_record: if recorded { rec } else { None },
        supervisor_pid: sup,
        note,
        output,
        run_as,
    })
}

/// Before an unrecorded supervisor (our child) is reaped: kill everything in its tree — the
/// command may have forked (and `setsid`ed) already, its orphans are the supervisor's children,
/// and the supervisor exits only once they are gone — waiting up to 2 s for it to exit. If the
/// tree cannot be walked (no pidfds, no record) or does not empty, the supervisor itself is
/// killed, so that reaping it cannot hang (its last orphans then pass to init).
fn end_supervised(sup: i32, rec: Option<&crate::identity::ScopeRecord>) {
    use crate::identity::{Scope, ScopeState};
    use std::os::fd::AsFd;
    let Ok(fd) = crate::sys::pidfd_open(sup) else {
        // Our unreaped child: its number cannot have passed to anyone else.
        let _ = crate::sys::kill(sup, libc::SIGKILL);
        return;
    };
    if let Some(ScopeState::Open(scope)) = rec.map(|r| Scope::open(r, None)) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while !scope.is_empty() && std::time::Instant::now() < deadline {
            let _ = scope.signal(crate::signo::Signal::KILL);
            let _ = crate::sys::poll_readable(&[fd.as_fd()], Some(std::time::Duration::from_millis(50)));
        }
        if scope.is_empty() {
            return;
        }
    }
    let _ = crate::sys::pidfd_send_signal(fd.as_fd(), libc::SIGKILL, 0);
}
