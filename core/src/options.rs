//! The options of the pidfile check, decided once for every shell.
//!
//! Rust, C, Python, Node and the CLI all reach the check through [`CheckOptions`]: a shell
//! converts its language's values (type checks only) and calls [`CheckOptions::from_parts`],
//! which makes every decision about them:
//!
//! - **tolerance**: seconds between a token-less record's mtime and its process's create time.
//!   Absent (`None` in Python, `null`/`undefined` in Node, no `--tolerance`) is
//!   [`DEFAULT_TOLERANCE`] (5.0, abx-dl's value). A value that is not a finite number ≥ 0
//!   (negative, NaN, infinite) admits no skew: a token-less record is `mtime-skew`, a record
//!   with a start token is still judged by its token. The check never fails on it — every
//!   failure of the check is an answer, never an exception, as in abx-dl — and the CLI's `status` answers the same.
//!   (The operations that act on a record — stop, pin, cleanup — refuse such a tolerance with
//!   `InvalidArgument` before anything is touched: they are not checks.)
//! - **recorded command**: the hook's `.sh` file (abx-dl up to 1.12) or its argv (abx-dl's
//!   current release), never both: giving both is `InvalidArgument`. A missing `.sh` or an empty
//!   argv records nothing (the command rules are skipped).
//!
//! The options of stop ([`StopOptions`]) and of the cleanup ([`CleanupOptions`]) live here too,
//! one type per operation: every surface (Rust, C's `pidguard_stop_options` and
//! `pidguard_cleanup_options`, Python's keyword arguments, Node's options objects, the CLI's
//! flags) has exactly the fields named in [`StopOptions::FIELDS`] and [`CleanupOptions::FIELDS`],
//! under the same names (a parity test on each surface reads `tests/operations/options.json`).
//! Each is built from the values a language gives (`from_args`), refuses bad values with
//! `InvalidArgument` before anything is touched (`validate`), and stop finds the hook's `.sh`
//! beside the pidfile by itself ([`StopOptions::cmd_file_for`]).
//!
//! abx-dl's own `validate_pid_file(pid_file, expected_argv, tolerance=None)` returns False for
//! every call (its comparison with `None` raises inside its `try`). `pidguard.abx_dl` keeps that
//! result as a translation of abx-dl's call shape; it is not a rule of pidguard's check.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::pidfile::cmd::RecordedCommand;
use crate::identity::ProcessRef;
use crate::pidfile::mtime::{check_pinned_opened, check_pinned_read, CmdRule, PidFileCheck, ReadScope, DEFAULT_TOLERANCE};
use crate::pidfile::Format;
use crate::identity::Policy;
use crate::signal::Schedule;

/// What [`check_pid_file_with`] needs besides the path: the recorded command and the
/// tolerance. `Default` is no recorded command and [`DEFAULT_TOLERANCE`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckOptions<'a> {
    /// The hook's recorded command: a `.sh` file or an argv ([`RecordedCommand`]); `None`: no
    /// command rules.
    pub recorded: Option<RecordedCommand<'a>>,
    /// Seconds allowed between a token-less record's mtime and the process's create time. A value
    /// that is not finite and ≥ 0 admits no skew (`mtime-skew`).
    pub tolerance: f64,
}

impl Default for CheckOptions<'_> {
    fn default() -> Self {
        CheckOptions { recorded: None, tolerance: DEFAULT_TOLERANCE }
    }
}

impl<'a> CheckOptions<'a> {
    /// The one parser every shell calls, from the values as each language gives them:
    /// `cmd_file` (a `.sh` path), `argv` (the recorded argv), `tolerance` (seconds; `None` is
    /// [`DEFAULT_TOLERANCE`]).
    ///
    /// Errors: `InvalidArgument` when both `cmd_file` and `argv` are given.
    pub fn from_parts(cmd_file: Option<&'a Path>, argv: Option<&'a [String]>, tolerance: Option<f64>) -> Result<Self> {
        let recorded = match (cmd_file, argv) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid("the recorded command is a .sh file or an argv, not both (give cmd_file or argv)"))
            }
            (Some(p), None) => Some(RecordedCommand::File(p)),
            (None, Some(a)) => Some(RecordedCommand::Argv(a)),
            (None, None) => None,
        };
        Ok(CheckOptions { recorded, tolerance: tolerance.unwrap_or(DEFAULT_TOLERANCE) })
    }
}

/// `validate_pid_file` as abx-dl calls it: true when the file names a live process that is the
/// one it recorded. Every failure is `false`, never an error. A thin wrapper of
/// [`check_pid_file_with`] (abx-dl's argument shape: a `.sh` file or none, seconds).
pub fn validate_pid_file(pid_file: &Path, cmd_file: Option<&Path>, tolerance: f64) -> bool {
    validate_pid_file_with(pid_file, &CheckOptions { recorded: cmd_file.map(RecordedCommand::File), tolerance })
}

/// `validate_pid_file` with the options every shell parses ([`CheckOptions::from_parts`]):
/// whether the file names a live process that is the one it recorded, by the rules of
/// [`check_pid_file_with`] (the same file checks, token, boot, namespace, pidfs inode, mtime and
/// command rules). Every failure is `false`, never an error.
///
/// One thing is left out: the record's scope ([`crate::identity::SCOPE_XATTR`]) is not read.
/// It says what a stop of the record reaches, not who the process is, so it never decides this
/// answer — except that a scope xattr that is not a scope record makes the full check
/// `bad-token` (and stop, cleanup and probe refuse the record), while this answer, which never
/// reads it, can still be `true` for a live, matching process. (One `fgetxattr` fewer per call.)
pub fn validate_pid_file_with(pid_file: &Path, opts: &CheckOptions<'_>) -> bool {
    let cmd = opts.recorded.map_or(CmdRule::None, CmdRule::Command);
    let opened = crate::pidfile::retire::open_strict(pid_file);
    check_pinned_read(opened, cmd, opts.tolerance, false, ReadScope::No).0.valid
}

/// Judge an abx-dl pidfile and say why, with abx-dl's argument shape: a thin wrapper of
/// [`check_pid_file_with`] (`cmd_file` a `.sh` file or none, `tolerance` in seconds).
pub fn check_pid_file(pid_file: &Path, cmd_file: Option<&Path>, tolerance: f64) -> PidFileCheck {
    check_pid_file_with(pid_file, &CheckOptions { recorded: cmd_file.map(RecordedCommand::File), tolerance })
}

/// The check of an abx-dl pidfile: judge it and say why. Never fails: every problem is a reason.
/// Every shell's `validate_pid_file` and `check_pid_file` end here, with the options parsed by
/// [`CheckOptions::from_parts`].
///
/// - The file must be a regular file (opened with `O_NOFOLLOW|O_NONBLOCK`: a symlink is
///   refused, a FIFO cannot block) holding one decimal pid from 1 to 4194304.
/// - A zombie or missing process is `Gone`/`Zombie`.
/// - With a `user.pidguard.token`, the token decides: another boot → `Mismatch` without looking
///   at the process; another machine or PID namespace → `Foreign`.
/// - Without one: valid only when `|mtime − create_time| <= opts.tolerance` (seconds; a
///   tolerance that is not finite and ≥ 0 admits no skew), and the recorded command
///   (`opts.recorded`, a `.sh` file or the argv) matches the live argv by abx-dl's current
///   rules (`pidfile::cmd::command_matches`); a `.sh` file that is missing, or an empty argv, records nothing.
pub fn check_pid_file_with(pid_file: &Path, opts: &CheckOptions<'_>) -> PidFileCheck {
    check_pinned(pid_file, opts).0
}

/// [`check_pid_file_with`], handing on the pin it made: the process it judged, for the caller
/// to act on instead of pinning and reading again. The handle is there when the file names a
/// process that may be acted on or needs its group looked at (valid, zombie, or a token-less
/// record whose mtime or command is off); never for a proven mismatch or an unreadable one.
pub(crate) fn check_pinned(pid_file: &Path, opts: &CheckOptions<'_>) -> (PidFileCheck, Option<ProcessRef>) {
    let cmd = opts.recorded.map_or(CmdRule::None, CmdRule::Command);
    check_pinned_opened(crate::pidfile::retire::open_strict(pid_file), cmd, opts.tolerance)
}

/// The `.sh` command file that goes with an abx-dl pidfile: `<pidfile without .pid>.sh` (the
/// name `launch` writes it under, abx-dl's).
pub fn cmd_file_for(pid_file: &Path) -> PathBuf {
    pid_file.with_extension("sh")
}

/// The `.sh` command file the `status` and `stop` commands check an abx-dl pidfile's live
/// command against when none is given: [`cmd_file_for`] when it exists (`None` otherwise: no
/// command rules).
pub fn default_cmd_file(pid_file: &Path) -> Option<PathBuf> {
    let p = cmd_file_for(pid_file);
    p.exists().then_some(p)
}

/// The logs `pidguard run` gives a command it starts when none are named:
/// `(<pidfile stem>.stdout.log, <pidfile stem>.stderr.log)` beside the pidfile (abx-dl's names).
pub fn default_log_files(pid_file: &Path) -> (PathBuf, PathBuf) {
    let stem = pid_file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    (pid_file.with_file_name(format!("{stem}.stdout.log")), pid_file.with_file_name(format!("{stem}.stderr.log")))
}

/// The check of the CLI's `status`, for a pidfile of either format: a guard record
/// (`pidguard::guard::check`, judged by its token; `opts` do not apply) or an abx-dl pidfile
/// ([`check_pid_file_with`]; with no recorded command in `opts`, the `.sh` beside the pidfile
/// when it exists, [`default_cmd_file`]). Returns the format with the answer.
///
/// Errors: those of the guard check (an unreadable or malformed guard record); the abx-dl
/// check never fails.
pub fn status(pid_file: &Path, opts: &CheckOptions<'_>) -> Result<(Format, PidFileCheck)> {
    match Format::of(pid_file) {
        Format::Guard => Ok((Format::Guard, crate::guard::check(pid_file)?.to_check())),
        Format::AbxDl => {
            let beside = if opts.recorded.is_none() { default_cmd_file(pid_file) } else { None };
            let opts = match &beside {
                Some(p) => CheckOptions { recorded: Some(RecordedCommand::File(p)), ..*opts },
                None => *opts,
            };
            Ok((Format::AbxDl, check_pid_file_with(pid_file, &opts)))
        }
    }
}

/// Refuse a tolerance that is not finite seconds ≥ 0 (`InvalidArgument`): the operations that
/// act on a record admit no such value (the check does: it admits no skew).
fn validate_tolerance(tolerance: f64) -> Result<()> {
    if tolerance.is_finite() && tolerance >= 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(format!("tolerance must be finite seconds >= 0, not {tolerance}")))
    }
}

/// Parse a schedule given as text (start-stop-daemon's `--retry` syntax); `None` is the default
/// `TERM/2/KILL/1`. Errors: `InvalidArgument` for a malformed schedule.
fn schedule_of(text: Option<&str>) -> Result<Schedule> {
    text.map_or_else(|| Ok(Schedule::default()), str::parse)
}

/// Options of [`stop_pid_file`](crate::stop_pid_file), the same on every surface (Rust, C,
/// Python, Node, CLI; field names in [`StopOptions::FIELDS`]). `Default` is core's defaults.
#[derive(Clone, Debug)]
pub struct StopOptions {
    /// The escalation schedule (default `TERM/2/KILL/1`).
    pub schedule: Schedule,
    /// `Strict` (default): act only on a proven identity (a matching token, or for a token-less
    /// file the mtime and command rules of [`check_pid_file`]). `Lenient`: also act on a
    /// token-less file whose mtime is off (`mtime-skew`), with a warning; a recorded token that
    /// cannot be confirmed is still refused.
    pub policy: Policy,
    /// The hook's `.sh` command file to check the live argv against. `None` (default): the `.sh`
    /// beside the pidfile when it exists ([`StopOptions::cmd_file_for`]), as `pidguard stop` does.
    pub cmd_file: Option<PathBuf>,
    /// Tolerance of the mtime rule for token-less pidfiles, seconds (default 5.0); must be
    /// finite and ≥ 0.
    pub tolerance: f64,
    /// Signal the process group the target leads (default true).
    pub group: bool,
}

impl Default for StopOptions {
    fn default() -> Self {
        StopOptions { schedule: Schedule::default(), policy: Policy::Strict, cmd_file: None, tolerance: DEFAULT_TOLERANCE, group: true }
    }
}

impl StopOptions {
    /// The names of the fields, in order: every surface spells each option this way (camelCase
    /// in Node, `--kebab-case` on the command line); the parity tests compare with this list.
    pub const FIELDS: &'static [&'static str] = &["schedule", "policy", "cmd_file", "tolerance", "group"];

    /// Build the options from the values as a language gives them, every one optional (`None`
    /// is the default): `schedule` as text (`--retry` syntax), `policy` as `"strict"` or
    /// `"lenient"`, `cmd_file` a path, `tolerance` seconds, `group` a flag. The result is
    /// validated.
    ///
    /// Errors: `InvalidArgument` for a malformed schedule, an unknown policy, or a tolerance that
    /// is not finite seconds ≥ 0.
    pub fn from_args(schedule: Option<&str>, policy: Option<&str>, cmd_file: Option<PathBuf>, tolerance: Option<f64>, group: Option<bool>) -> Result<Self> {
        let d = StopOptions::default();
        let opts = StopOptions {
            schedule: schedule_of(schedule)?,
            policy: policy.map_or(Ok(d.policy), str::parse)?,
            cmd_file,
            tolerance: tolerance.unwrap_or(d.tolerance),
            group: group.unwrap_or(d.group),
        };
        opts.validate()?;
        Ok(opts)
    }

    /// Check the values no stop can run with. Errors: `InvalidArgument` for a tolerance that is
    /// not finite seconds ≥ 0 (the schedule and policy are valid by their types).
    pub fn validate(&self) -> Result<()> {
        validate_tolerance(self.tolerance)
    }

    /// The `.sh` command file stop checks `pid_file`'s live argv against: `cmd_file` when given,
    /// else the `.sh` beside the pidfile when it exists ([`default_cmd_file`]), else none (no
    /// command rules).
    pub fn cmd_file_for(&self, pid_file: &Path) -> Option<PathBuf> {
        self.cmd_file.clone().or_else(|| default_cmd_file(pid_file))
    }
}

/// Options of [`cleanup_background_hooks`](crate::cleanup_background_hooks), the same on every
/// surface (field names in [`CleanupOptions::FIELDS`]); the defaults are abx-dl's.
#[derive(Clone, Debug)]
pub struct CleanupOptions {
    /// Where the default finalize appends the `Process` and `ArchiveResult` JSON lines.
    pub index_path: Option<PathBuf>,
    /// When false, the default finalize also prints the two lines to stdout.
    pub is_tty: bool,
    /// The escalation schedule, default `TERM/2/KILL/1`.
    pub schedule: Schedule,
    /// Glob (`*`, `?`) matched against file names under the directory, default `on_*.pid`;
    /// must be non-empty and hold no `/`.
    pub pattern: String,
    /// Tolerance of the mtime rule for token-less pidfiles, seconds (default 5.0); must be
    /// finite and ≥ 0.
    pub tolerance: f64,
    /// Skip the default finalize (no index lines, logs kept); `finalize` callbacks still run.
    pub no_finalize: bool,
}

impl Default for CleanupOptions {
    fn default() -> Self {
        CleanupOptions {
            index_path: None,
            is_tty: false,
            schedule: Schedule::default(),
            pattern: "on_*.pid".to_string(),
            tolerance: DEFAULT_TOLERANCE,
            no_finalize: false,
        }
    }
}

impl CleanupOptions {
    /// The names of the fields, in order: every surface spells each option this way (camelCase
    /// in Node, `--kebab-case` on the command line); the parity tests compare with this list.
    pub const FIELDS: &'static [&'static str] = &["index_path", "is_tty", "schedule", "pattern", "tolerance", "no_finalize"];

    /// Build the options from the values as a language gives them, every one optional (`None`
    /// is the default): `index_path` a path, `is_tty` a flag, `schedule` as text (`--retry`
    /// syntax), `pattern` a file-name glob, `tolerance` seconds, `no_finalize` a flag. The
    /// result is validated.
    ///
    /// Errors: `InvalidArgument` for a malformed schedule, a tolerance that is not finite
    /// seconds ≥ 0, or a pattern that is empty or holds `/` or NUL.
    pub fn from_args(
        index_path: Option<PathBuf>,
        is_tty: Option<bool>,
        schedule: Option<&str>,
        pattern: Option<&str>,
        tolerance: Option<f64>,
        no_finalize: Option<bool>,
    ) -> Result<Self> {
        let d = CleanupOptions::default();
        let opts = CleanupOptions {
            index_path,
            is_tty: is_tty.unwrap_or(d.is_tty),
            schedule: schedule_of(schedule)?,
            pattern: pattern.map_or(d.pattern, str::to_string),
            tolerance: tolerance.unwrap_or(d.tolerance),
            no_finalize: no_finalize.unwrap_or(d.no_finalize),
        };
        opts.validate()?;
        Ok(opts)
    }

    /// Check the values no cleanup can run with. Errors: `InvalidArgument` for a tolerance that
    /// is not finite seconds ≥ 0, or a pattern that is empty or holds `/` or NUL.
    pub fn validate(&self) -> Result<()> {
        validate_tolerance(self.tolerance)?;
        if self.pattern.is_empty() || self.pattern.contains(['/', '\0']) {
            return Err(Error::invalid(format!("pattern {:?} must be a non-empty file-name glob without '/'", self.pattern)));
        }
        Ok(())
    }
}
