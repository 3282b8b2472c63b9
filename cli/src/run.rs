//! `pidguard run` and `pidguard write`: start a command and record it, or record a running
//! process. When a pidfile is free and what goes into it is decided in core
//! ([`pidguard::launch`]); this file only spawns.

use std::path::{Path, PathBuf};
use std::process::ExitCode as ProcessExit;

use pidguard::launch::{self, RecordFormat, ScopeMode, SpawnOptions};
use pidguard::{ExitCode, Format};
use serde_json::json;

use crate::fail;

/// The arguments of `pidguard run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The pidfile to write (e.g. `/run/myapp.pid`, or `on_X.bg.pid` in a hook directory).
    pidfile: PathBuf,
    /// Write a guard record (one JSON object; exactly one of racing starters wins) instead of an abx-dl pidfile.
    #[arg(long)]
    guard: bool,
    /// Where the command's stdout goes (truncated; default `<pidfile without .pid>.stdout.log`).
    #[arg(long, value_name = "FILE")]
    stdout: Option<PathBuf>,
    /// Where the command's stderr goes (truncated; default `<pidfile without .pid>.stderr.log`).
    #[arg(long, value_name = "FILE")]
    stderr: Option<PathBuf>,
    /// The command's working directory (default: the current one).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The scope the command runs in: `auto` (a cgroup v2 leaf where one can be made, else a
    /// subreaper supervisor), `cgroup`, `supervisor`, or `group` (its process group only).
    #[arg(long, value_name = "MODE", default_value = "auto")]
    scope: String,
    /// Start the command as this user, and group when given (start-stop-daemon's `--chuid`):
    /// names or numbers. Its real, effective and saved uid and gid are exactly those; without
    /// GROUP, the user's primary group. Its supplementary groups are the user's (as
    /// initgroups(3) gives them), unless --extra-groups is given. The scope, the pidfile and the
    /// logs stay the caller's. Root may ask for any user (so may root that lowered only its
    /// effective uid); anyone else only for itself. Refused (exit 77) before anything is made.
    #[arg(long, visible_alias = "chuid", value_name = "USER[:GROUP]")]
    user: Option<String>,
    /// The command's supplementary groups, exactly: names or numbers separated by commas (an
    /// empty value: none). Default with --user: the user's groups; without it: unchanged.
    #[arg(long, value_name = "GROUP,...")]
    extra_groups: Option<String>,
    /// Print one JSON object: pid, pid_file, format, cmd_file (abx-dl only), stdout, stderr, scope, scope_record, supervisor_pid, note, run_as.
    #[arg(long)]
    json: bool,
    /// The command and its arguments (after `--`).
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Why `pidfile` looks like the command put first (`pidguard run sleep 100`, `pidguard run --
/// sleep 100 app.pid`), if it does: it does not end in `.pid` and either a word of the command
/// ends in `.pid` or it is a bare name of a program on `$PATH`.
fn misplaced_pidfile(pidfile: &Path, command: &[String]) -> Option<String> {
    let name = pidfile.to_string_lossy();
    if name.ends_with(".pid") {
        return None;
    }
    if let Some(w) = command.iter().find(|w| w.ends_with(".pid")) {
        return Some(format!("{name:?} was taken as the pidfile, but {w:?} looks like one: the pidfile comes first"));
    }
    let bare = !name.contains('/');
    if bare && launch::check_command(pidfile.as_os_str(), None).is_ok() {
        return Some(format!(
            "{name:?} was taken as the pidfile, but it is a program on $PATH: the pidfile comes first \
             (a pidfile not ending in .pid needs a directory, e.g. ./{name})"
        ));
    }
    None
}

/// Spawn `args.command` in a new session and a scope, with its output in files, record it,
/// print its pid. Everything is decided and done in core ([`launch::spawn`]).
pub fn run(args: &RunArgs) -> ProcessExit {
    let format = if args.guard { RecordFormat::Guard } else { RecordFormat::AbxDl };
    if let Some(msg) = misplaced_pidfile(&args.pidfile, &args.command) {
        eprintln!("pidguard: {msg}\nusage: pidguard run PIDFILE [OPTIONS] -- COMMAND [ARGS]...");
        return ExitCode::Usage.into();
    }
    let scope = match args.scope.parse::<ScopeMode>() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pidguard: --scope: {}", e.message());
            return ExitCode::Usage.into();
        }
    };
    let (user, group) = match args.user.as_deref().map(launch::parse_chuid).transpose() {
        Ok(Some((u, g))) => (Some(u), g),
        Ok(None) => (None, None),
        Err(e) => {
            eprintln!("pidguard: --user: {}", e.message());
            return ExitCode::Usage.into();
        }
    };
    let extra_groups = match args.extra_groups.as_deref() {
        None => None,
        Some("") => Some(Vec::new()),
        Some(list) => match list.split(',').map(str::parse).collect::<Result<Vec<launch::IdSpec>, _>>() {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("pidguard: --extra-groups: {}", e.message());
                return ExitCode::Usage.into();
            }
        },
    };
    let opts = SpawnOptions {
        scope,
        cwd: args.cwd.clone(),
        stdout: args.stdout.clone(),
        stderr: args.stderr.clone(),
        format,
        fields: Vec::new(),
        pipe_output: false,
        env: None,
        user,
        group,
        extra_groups,
    };
    let s = match launch::spawn(&args.pidfile, &args.command, &opts) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    if let Some(n) = &s.note {
        eprintln!("pidguard: note: {}", pidguard::report::printable(n));
    }
    if args.json {
        println!(
            "{}",
            json!({"pid": s.pid, "pid_file": s.pid_file, "format": if args.guard { Format::Guard } else { Format::AbxDl }.as_str(),
                   "cmd_file": s.cmd_file, "stdout": s.stdout, "stderr": s.stderr,
                   "scope": s.scope.as_str(), "scope_record": s.scope_record.as_ref().map(|r| r.to_string()),
                   "supervisor_pid": s.supervisor_pid, "note": s.note, "run_as": s.run_as.as_ref().map(|r| r.to_string())})
        );
    } else {
        println!("{}", s.pid);
    }
    ExitCode::Done.into()
}

/// Record the running process `pid` in `pidfile`; a pidfile that already names it is rewritten.
pub fn write(pidfile: &Path, pid: i32, guard: bool, adopt: bool) -> ProcessExit {
    let format = if guard { RecordFormat::Guard } else { RecordFormat::AbxDl };
    if let Err(e) = launch::ensure_vacant(pidfile, format) {
        let holder = e.pid().or_else(|| e.holder().and_then(|v| v.entry.as_ref()).map(|en| en.pid));
        let same = e.kind() == pidguard::ErrorKind::Held && holder == Some(pid);
        if !same {
            return fail(&e);
        }
        if guard {
            // The guard record already names this very process.
            println!("{}: already records pid {pid}", pidfile.display());
            return ExitCode::Done.into();
        }
    }
    match launch::record_existing_scoped(pidfile, pid, format, adopt) {
        Ok(scope) => {
            match scope {
                Some(s) => println!("{}: recorded pid {pid} (scope: {})", pidfile.display(), s.kind()),
                None if adopt => println!("{}: recorded pid {pid} (moved into a cgroup leaf, but the scope could not be recorded: no user xattrs)", pidfile.display()),
                None => println!("{}: recorded pid {pid}", pidfile.display()),
            }
            ExitCode::Done.into()
        }
        Err(e) => fail(&e),
    }
}
