//! `pidguard`: a command-line front end over pidguard's core, in the spirit of
//! start-stop-daemon, for shell scripts and operators.
//!
//! Exit codes are decided in core ([`pidguard::ExitCode`]); this binary only maps its results
//! to them. `pidguard --help`, docs/cli.md and the man page (`pidguard man`) list them.

mod demo;
mod man;
mod progress;
mod report;
mod run;

use std::path::PathBuf;
use std::process::ExitCode as ProcessExit;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use pidguard::report::{PidFileCheckView, StopView};
use pidguard::{cleanup_background_hooks, CleanupOptions, ExitCode};

/// The text after `--help`: every exit code, from core's table.
fn exit_codes_help() -> String {
    format!("Exit codes:\n{}", ExitCode::table())
}

#[derive(Parser)]
#[command(name = "pidguard", version, about = "Track and stop processes by pid, safe against pid reuse.")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start a command in a new session, its output to files, and record it in PIDFILE (start-stop-daemon's --start --background --make-pidfile).
    ///
    /// Refuses (exit 3) while PIDFILE still names a live process of its own. Writes the abx-dl
    /// pidfile (the pid, the start time as mtime, the start token in an xattr) and the command
    /// as `<name>.sh` beside it, or with --guard a JSON guard record. Prints the pid. On a file
    /// system without user xattrs (ramfs, NFSv3) an abx-dl pidfile cannot carry its token: the
    /// command is ended and nothing recorded (exit 4); use --guard there.
    Run(run::RunArgs),
    /// Record an already running process in PIDFILE (abx-dl format with its start token and `.sh`, or --guard).
    Write {
        /// The pidfile to write.
        pidfile: PathBuf,
        /// The pid of the running process.
        pid: String,
        /// Write a guard record instead of an abx-dl pidfile.
        #[arg(long)]
        guard: bool,
        /// First move the process into a cgroup v2 leaf of its own and record it as its scope:
        /// what it forks from then on is stopped with it, `setsid` or not (children it forked
        /// before stay outside). Needs a cgroup2 mount the caller may create cgroups in.
        #[arg(long)]
        adopt: bool,
    },
    /// Say whether a pidfile (abx-dl or guard JSON) still names the process it recorded, or its scope still runs (exit 0 when running, 1 when not).
    Status {
        /// The pidfile.
        pidfile: PathBuf,
        /// The hook's `.sh` command file (default: `<pidfile without .pid>.sh` when it exists).
        #[arg(long)]
        cmd_file: Option<PathBuf>,
        /// The hook's recorded argv instead of a `.sh` file (abx-dl's current release), after `--`:
        /// `status PIDFILE -- sleep 1000` (with --cmd-file too: bad input, core's rule).
        #[arg(last = true)]
        argv: Vec<String>,
        /// Tolerance of the mtime rule for token-less pidfiles, seconds (default 5; a value
        /// that is not a finite number ≥ 0 admits no skew).
        #[arg(long, allow_negative_numbers = true)]
        tolerance: Option<f64>,
        /// Print JSON (the fields are listed from core's report table by `command()`).
        #[arg(long)]
        json: bool,
    },
    /// Stop the process a pidfile (abx-dl or guard JSON) names, with its process group, by an escalation schedule.
    Stop {
        /// The pidfile.
        pidfile: PathBuf,
        /// The escalation schedule in start-stop-daemon's `--retry` syntax: `TERM/5/KILL/2`,
        /// `-9/1`, a bare `5`, `.../forever` (default `TERM/2/KILL/1`). `--retry` is its old name.
        #[arg(long, visible_alias = "retry", value_name = "SCHEDULE")]
        schedule: Option<String>,
        /// `strict` (default): act only on a proven identity; `lenient`: also on a record whose
        /// identity cannot be verified (written before tokens existed), with a warning.
        #[arg(long, value_name = "strict|lenient", conflicts_with = "lenient")]
        policy: Option<String>,
        /// The same as `--policy lenient` (its old name).
        #[arg(long)]
        lenient: bool,
        /// The `.sh` command file to check the live argv against (default: beside the pidfile).
        #[arg(long)]
        cmd_file: Option<PathBuf>,
        /// Tolerance of the mtime rule for token-less pidfiles, seconds (default 5; anything but
        /// a finite number ≥ 0 is bad input: stop acts on the answer).
        #[arg(long, allow_negative_numbers = true)]
        tolerance: Option<f64>,
        /// Signal the process alone, not the process group it leads (core's `group` = false).
        #[arg(long)]
        no_group: bool,
        /// Exit 0 instead of 1 when there was nothing to do (no pidfile, a stale record, the
        /// process already gone), as start-stop-daemon's `--oknodo`: a repeated stop succeeds.
        #[arg(long)]
        oknodo: bool,
        /// Print JSON (the fields are listed from core's report table by `command()`).
        #[arg(long)]
        json: bool,
    },
    /// Stop every background hook under DIR (files matching `on_*.pid`) and drop stale records.
    Cleanup {
        /// The output directory to search recursively.
        dir: PathBuf,
        /// Append abx-dl's `Process` and `ArchiveResult` JSON lines here (with the hooks' output)
        /// and delete the logs of hooks that ended; without it every log is kept. `--index` is
        /// its old name.
        #[arg(long, visible_alias = "index", value_name = "FILE")]
        index_path: Option<PathBuf>,
        /// The escalation schedule in start-stop-daemon's `--retry` syntax (default
        /// `TERM/2/KILL/1`). `--retry` is its old name.
        #[arg(long, visible_alias = "retry", value_name = "SCHEDULE")]
        schedule: Option<String>,
        /// File-name glob of the pidfiles (default `on_*.pid`).
        #[arg(long)]
        pattern: Option<String>,
        /// Tolerance of the mtime rule for token-less pidfiles, seconds (default 5; anything but
        /// a finite number ≥ 0 is bad input).
        #[arg(long, allow_negative_numbers = true)]
        tolerance: Option<f64>,
        /// Do not finalize: no index lines, every log kept (always so without `--index-path`).
        #[arg(long)]
        no_finalize: bool,
        /// Print JSON (the fields are listed from core's report table by `command()`).
        #[arg(long)]
        json: bool,
    },
    /// List the pidfiles directly in DIR: each one's pid, verdict and whether its process is running, stale or undecided.
    List {
        /// The directory (not searched recursively).
        dir: PathBuf,
        /// File-name glob of the pidfiles.
        #[arg(long, default_value = "*.pid")]
        pattern: String,
    },
    /// Print the start token of a live process.
    Token {
        /// The pid.
        pid: String,
    },
    /// Show the main job on real processes in a fresh temporary directory.
    Demo {
        /// Run in the current PID namespace even where a private one could be made.
        #[arg(long)]
        no_namespace: bool,
        /// Internal: already inside the private PID namespace.
        #[arg(long, hide = true)]
        in_namespace: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff, section 1) to stdout.
    Man,
}

/// The help of `--json` of `sub` when its JSON is one of core's reports
/// ([`pidguard::report::FIELDS`]): what is printed, then the report's fields in order.
fn json_help(sub: &str) -> Option<String> {
    let (what, name) = match sub {
        "status" => ("Print the check as one JSON object, plus `probe` (the Probe: answer, running, scope_members)", "PidFileCheck"),
        "stop" => ("Print the report as one JSON object", "StopReport"),
        "cleanup" => ("Print a JSON array (and no progress line), one object per hook", "HookReport"),
        _ => return None,
    };
    let fields = pidguard::report::FIELDS.iter().find(|(n, _)| *n == name).map(|(_, f)| f.join(", ")).unwrap_or_default();
    Some(format!("{what} with the fields of the library's {name}: {fields}"))
}

/// The clap definition with the exit-code table and the JSON fields, as `--help`, completions
/// and the man page see it.
pub(crate) fn command() -> clap::Command {
    Cli::command().after_help(exit_codes_help()).mut_subcommands(|s| {
        let s = match json_help(s.get_name()) {
            Some(h) => s.mut_arg("json", |a| a.help(h)),
            None => s,
        };
        s.after_help(exit_codes_help())
    })
}

fn bad_input(msg: impl std::fmt::Display) -> ProcessExit {
    eprintln!("pidguard: {msg}");
    ExitCode::BadInput.into()
}

/// Print a core error with its cause and exit with core's code for it.
pub(crate) fn fail(e: &pidguard::Error) -> ProcessExit {
    eprintln!("pidguard: {}", report::error_text(e));
    ExitCode::for_error(e).into()
}

/// Parse the command line; a usage error exits 64 (EX_USAGE), `--help`/`--version` exit 0.
fn parse() -> Result<Cli, ProcessExit> {
    let matches = command().try_get_matches().map_err(|e| {
        let _ = e.print();
        let code = if e.use_stderr() { ExitCode::Usage } else { ExitCode::Done };
        ProcessExit::from(code)
    })?;
    Cli::from_arg_matches(&matches).map_err(|e| {
        let _ = e.print();
        ProcessExit::from(ExitCode::Usage)
    })
}

/// Write generated text to stdout; a reader that stops early (`| head`) is not an error.
fn print_bytes(buf: &[u8]) -> ProcessExit {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(buf).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::Done.into(),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::Done.into(),
        Err(e) => {
            eprintln!("pidguard: {e}");
            ExitCode::BadInput.into()
        }
    }
}

/// Raise the soft `RLIMIT_NOFILE` to the hard limit, as Go programs do at start: a cleanup of
/// many hooks then fits in one batch of pinned hooks. The command's own choice; the library
/// never changes process limits. A failure leaves the limit as it was.
fn raise_nofile_limit() {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid rlimit; no memory is shared.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

fn parse_pid(pid: &str) -> Result<i32, ProcessExit> {
    pid.trim().parse::<i32>().map_err(|_| bad_input(format!("not a pid: {pid:?}")))
}

fn main() -> ProcessExit {
    let cli = match parse() {
        Ok(c) => c,
        Err(code) => return code,
    };
    // `pidguard run` leaves the limit alone: the command it starts inherits the user's limits
    // (Go, too, gives the processes it starts the soft limit it found).
    if !matches!(cli.cmd, Cmd::Run { .. }) {
        raise_nofile_limit();
    }
    match cli.cmd {
        Cmd::Run(args) => run::run(&args),
        Cmd::Write { pidfile, pid, guard, adopt } => {
            let pid = match parse_pid(&pid) {
                Ok(p) => p,
                Err(code) => return code,
            };
            run::write(&pidfile, pid, guard, adopt)
        }
        Cmd::Token { pid } => {
            let pid = match parse_pid(&pid) {
                Ok(p) => p,
                Err(code) => return code,
            };
            match pidguard::start_token(pid) {
                Ok(t) => {
                    println!("{t}");
                    ExitCode::Done.into()
                }
                Err(e) => fail(&e),
            }
        }
        Cmd::Status { pidfile, cmd_file, argv, tolerance, json } => {
            let argv = (!argv.is_empty()).then_some(argv);
            // Core's status: the record's check, and its scope's member count (a record whose
            // first process exited while its scope runs is running).
            let probe = match pidguard::CheckOptions::from_parts(cmd_file.as_deref(), argv.as_deref(), tolerance)
                .and_then(|opts| pidguard::probe::status_pid_file(&pidfile, &opts))
            {
                Ok(p) => p,
                Err(e) => return fail(&e),
            };
            let (format, c) = (probe.format, &probe.check);
            // The check carries the system's reason for "unreadable": for the message and for
            // core's choice between 77 and 4.
            let os_error = c.os_error();
            if json {
// The record's check (a PidFileCheck: its `valid` is the record's own; the exit
                // status, 0 for a record whose scope still runs, is status's answer).
                // …followed by `probe`: core's Probe of the same record under status's rules
                // (`answer`, `running`, `scope_members`), so a script reads the answer the exit
                // status gives, with the scope's count.
                let check = serde_json::to_string(&PidFileCheckView::from(c));
                let answer = serde_json::to_string(&pidguard::probe::ProbeView::from(&probe));
                report::print_json(check.and_then(|c| answer.map(|a| format!("{},\"probe\":{a}}}", c.strip_suffix('}').unwrap_or(&c)))));
                if let Some(e) = os_error {
                    eprintln!("pidguard: {}: {e}", pidfile.display());
                }
            } else if let Some(t) = probe.scope_text() {
                println!("{}: running — {t}", pidguard::report::printable(&pidguard::report::path_text(pidfile.as_os_str())));
            } else if let Some(t) = probe.undecided_text() {
                println!("{}: undecided — {t}", pidguard::report::printable(&pidguard::report::path_text(pidfile.as_os_str())));
            } else {
                println!("{}", report::check_text(&pidfile, format, c, os_error));
            }
            probe.exit_code(&pidfile, os_error).into()
        }
        Cmd::Stop { pidfile, schedule, policy, lenient, cmd_file, tolerance, no_group, oknodo, json } => {
            // Core parses and checks every option; `--cmd-file` absent is core's default (the
            // `.sh` beside the pidfile).
            let policy = policy.or(lenient.then(|| "lenient".to_string()));
            let opts = match pidguard::StopOptions::from_args(schedule.as_deref(), policy.as_deref(), cmd_file, tolerance, Some(!no_group)) {
                Ok(o) => o,
                Err(e) => return fail(&e),
            };
            let progress = progress::Progress::stop(!json, &pidfile, &opts.schedule.to_string());
            let result = pidguard::stop_pid_file(&pidfile, &opts);
            progress.finish();
            let r = match result {
                Ok(r) => r,
                // Core's error carries the system's own error of the read it judged.
                Err(e) => return fail(&e),
            };
            // Core sets the lenient policy's warning only when it changed the decision.
            if let Some(w) = &r.warning {
                eprintln!("pidguard: warning: {w}");
            }
            if json {
                report::print_json(serde_json::to_string(&StopView::from(&r)));
            } else {
                println!("{}", report::stop_text(&r));
            }
            match ExitCode::for_stop(&r.outcome) {
                ExitCode::NothingToDo if oknodo => ExitCode::Done.into(),
                code => code.into(),
            }
        }
        Cmd::List { dir, pattern } => match pidguard::dir_status(&dir, &pattern) {
            Ok(entries) => {
                print!("{}", report::list_text(&dir, &entries));
                ExitCode::Done.into()
            }
            Err(e) => fail(&e),
        },
        Cmd::Cleanup { dir, index_path, schedule, pattern, tolerance, no_finalize, json } => {
            // Without an index there is nowhere to record a hook's output: keep the logs (no
            // finalize) rather than delete them unrecorded. The command prints its own report,
            // so the index lines never go to stdout (is_tty).
            let no_finalize = no_finalize || index_path.is_none();
            let opts = match CleanupOptions::from_args(index_path, Some(true), schedule.as_deref(), pattern.as_deref(), tolerance, Some(no_finalize)) {
                Ok(o) => o,
                Err(e) => return fail(&e),
            };
            let progress = progress::Progress::start(!json, &dir);
            let result = cleanup_background_hooks(&dir, &opts, None);
            progress.finish();
            let reports = match result {
                Ok(r) => r,
                Err(e) => return fail(&e),
            };
            let code = ExitCode::for_cleanup(&reports);
            if json {
                report::print_hooks_json(reports);
            } else if reports.is_empty() {
                println!("no pidfiles found under {} (pattern {})", dir.display(), opts.pattern);
            } else {
                report::print_hooks(&reports);
            }
            code.into()
        }
        Cmd::Demo { no_namespace, in_namespace } => demo::run(no_namespace, in_namespace),
        Cmd::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut command(), "pidguard", &mut buf);
            print_bytes(&buf)
        }
        Cmd::Man => {
            let mut buf = Vec::new();
            match man::render(&mut buf) {
                Ok(()) => print_bytes(&buf),
                Err(e) => {
                    eprintln!("pidguard: {e}");
                    ExitCode::BadInput.into()
                }
            }
        }
    }
}
