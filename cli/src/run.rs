//! `pidguard run` and `pidguard write`: start a command and record it, or record a running
//! process. When a pidfile is free and what goes into it is decided in core
//! ([`pidguard::launch`]); this file only spawns.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode as ProcessExit, Stdio};

use pidguard::launch::{self, RecordFormat};
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
    /// Print one JSON object: pid, pid_file, format, cmd_file (abx-dl only), stdout, stderr.
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

fn open_log(path: &Path) -> Result<File, ProcessExit> {
    // Core decides how a log beside a pidfile is opened (no symlink, no FIFO, regular files
    // only, and no unsafe transition on a privileged caller's path).
    launch::open_log(path).map_err(|e| fail(&e))
}

/// Start `argv` (at least one word) in a new session, stdin from `/dev/null`, stdout and stderr
/// to the given files, in `cwd` when given. A new session: the child leads its own process
/// group (so `pidguard stop` reaches its children and nothing else) and has no controlling
/// terminal (a closed terminal does not hang it up), as start-stop-daemon --background does.
/// Errors: the spawn's (a missing program, `EACCES`, …).
pub fn spawn<S: AsRef<std::ffi::OsStr>>(argv: &[S], cwd: Option<&Path>, out: File, err: File) -> std::io::Result<Child> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null()).stdout(out).stderr(err);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    cmd.spawn()
}

/// Spawn `args.command` in a new session with its output in files, record it, print its pid.
pub fn run(args: &RunArgs) -> ProcessExit {
    let format = if args.guard { RecordFormat::Guard } else { RecordFormat::AbxDl };
    if let Some(msg) = misplaced_pidfile(&args.pidfile, &args.command) {
        eprintln!("pidguard: {msg}\nusage: pidguard run PIDFILE [OPTIONS] -- COMMAND [ARGS]...");
        return ExitCode::Usage.into();
    }
    // Nothing is created unless the command can start: a missing program or --cwd, or a
    // missing directory for the logs, is reported before any file exists.
    if let Err(e) = launch::check_command(args.command[0].as_ref(), args.cwd.as_deref()) {
        return fail(&e);
    }
    // Refuse before anything is started or written: the pidfile may still be another process's.
    if let Err(e) = launch::ensure_vacant(&args.pidfile, format) {
        return fail(&e);
    }
    if args.guard {
        // A guard record's directory is created as guard::create creates it (0700), before the
        // logs that go beside the record are opened.
        if let Err(e) = launch::make_record_dir(&args.pidfile) {
            return fail(&e);
        }
    }
    let (default_out, default_err) = pidguard::options::default_log_files(&args.pidfile);
    let out_path = args.stdout.clone().unwrap_or(default_out);
    let err_path = args.stderr.clone().unwrap_or(default_err);
    for p in [&args.pidfile, &out_path, &err_path] {
        if let Err(e) = launch::check_parent_dir(p) {
            return fail(&e);
        }
    }
    let out = match open_log(&out_path) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let err = match open_log(&err_path) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let mut child = match spawn(&args.command, args.cwd.as_deref(), out, err) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pidguard: cannot start {:?}: {e}", args.command[0]);
            return ExitCode::for_io(&e).into();
        }
    };
    let start_time = launch::now();
    let pid = child.id() as i32;
    if let Err(e) = launch::record(&args.pidfile, pid, start_time, &args.command, format, &[]) {
        // Nothing may run unrecorded: the child is ours and unreaped, so its pid cannot have
        // been reused; stop it and reap it.
        let _ = child.kill();
        let _ = child.wait();
        eprintln!("pidguard: started pid {pid} but could not record it, so it was stopped again");
        return fail(&e);
    }
    if args.json {
        println!(
            "{}",
            json!({"pid": pid, "pid_file": args.pidfile, "format": if args.guard { Format::Guard } else { Format::AbxDl }.as_str(),
                   "cmd_file": (!args.guard).then(|| launch::cmd_file_for(&args.pidfile)),
                   "stdout": out_path, "stderr": err_path})
        );
    } else {
        println!("{pid}");
    }
    ExitCode::Done.into()
}

/// Record the running process `pid` in `pidfile`; a pidfile that already names it is rewritten.
pub fn write(pidfile: &Path, pid: i32, guard: bool) -> ProcessExit {
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
    match launch::record_existing(pidfile, pid, format) {
        Ok(()) => {
            println!("{}: recorded pid {pid}", pidfile.display());
            ExitCode::Done.into()
        }
        Err(e) => fail(&e),
    }
}
