//! `pidguard`: a command-line front end over pidguard's core, in the spirit of
//! start-stop-daemon, for shell scripts and operators (SPEC §7).
//!
//! Exit codes: 0 done, 1 nothing to do, 2 unkillable, 3 refused, 4 bad input, 5 undecided (a hook whose identity could not be read was kept).

mod demo;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pidguard::{
    check_pid_file, cleanup_background_hooks, terminate, CleanupOptions, HookOutcome, Outcome, Policy, Schedule,
    TerminateOptions,
};
use serde_json::json;

/// Exit statuses, documented in the README.
pub(crate) mod exit {
    pub const DONE: u8 = 0;
    pub const NOTHING: u8 = 1;
    pub const UNKILLABLE: u8 = 2;
    pub const REFUSED: u8 = 3;
    pub const BAD_INPUT: u8 = 4;
    /// Something was left undecided: a hook whose identity could not be read was kept whole.
    pub const UNDECIDED: u8 = 5;
}

#[derive(Parser)]
#[command(name = "pidguard", version, about = "Track and stop processes by pid, safe against pid reuse.")]
#[command(after_help = "Exit codes: 0 done, 1 nothing to do, 2 unkillable, 3 refused, 4 bad input, 5 undecided (a hook whose identity could not be read was kept).")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Say whether a pidfile (abx-dl or guard JSON) still names the process it recorded (exit 0 when valid, 1 when not).
    Status {
        /// The pidfile.
        pidfile: PathBuf,
        /// The hook's `.sh` command file (default: `<pidfile without .pid>.sh` when it exists).
        #[arg(long)]
        cmd_file: Option<PathBuf>,
        /// Tolerance of the mtime rule for token-less pidfiles, seconds.
        #[arg(long, default_value_t = pidguard::DEFAULT_TOLERANCE)]
        tolerance: f64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop the process a pidfile (abx-dl or guard JSON) names, with its process group, by an escalation schedule.
    Stop {
        /// The pidfile.
        pidfile: PathBuf,
        /// start-stop-daemon's `--retry` syntax: `TERM/5/KILL/2`, `-9/1`, a bare `5`, `.../forever`.
        #[arg(long, default_value = "TERM/2/KILL/1")]
        retry: String,
        /// Also act on a record whose identity cannot be verified (written before tokens existed).
        #[arg(long)]
        lenient: bool,
        /// The `.sh` command file to check the live argv against (default: beside the pidfile).
        #[arg(long)]
        cmd_file: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop every background hook under DIR (files matching `on_*.pid`) and drop stale records.
    Cleanup {
        /// The output directory to search recursively.
        dir: PathBuf,
        /// Append abx-dl's `Process` and `ArchiveResult` JSON lines here.
        #[arg(long)]
        index: Option<PathBuf>,
        /// The escalation schedule.
        #[arg(long, default_value = "TERM/2/KILL/1")]
        retry: String,
        /// File-name glob of the pidfiles.
        #[arg(long, default_value = "on_*.pid")]
        pattern: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
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
}

fn bad_input(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("pidguard: {msg}");
    ExitCode::from(exit::BAD_INPUT)
}

fn default_cmd_file(pidfile: &std::path::Path) -> Option<PathBuf> {
    let p = pidfile.with_extension("sh");
    p.exists().then_some(p)
}

/// Whether `path` holds a guard pidfile (one JSON object) rather than an abx-dl pidfile.
fn is_guard_file(path: &std::path::Path) -> bool {
    use std::io::Read;
    let Ok(m) = std::fs::symlink_metadata(path) else { return false };
    if !m.is_file() {
        return false;
    }
    let mut buf = [0u8; 64];
    // Neither follow a symlink nor block on a FIFO swapped in since the lstat above.
    use std::os::unix::fs::OpenOptionsExt;
    let n = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .and_then(|mut f| if f.metadata()?.is_file() { f.read(&mut buf) } else { Ok(0) })
        .unwrap_or(0);
    buf[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Exit status for an error met while reading a pidfile: refusals of an untrusted file are
/// "refused", anything else "bad input".
fn error_status(e: &pidguard::Error) -> u8 {
    if e.kind().family() == pidguard::ErrorKind::Untrusted {
        exit::REFUSED
    } else {
        exit::BAD_INPUT
    }
}

/// `status` of a guard pidfile (SPEC §3.2).
fn guard_status(pidfile: &std::path::Path, json: bool) -> ExitCode {
    let v = match pidguard::guard::check(pidfile) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("pidguard: {e}");
            return ExitCode::from(error_status(&e));
        }
    };
    let verdict = v.identity.map(|j| (j.verdict, j.reason));
    let held = matches!(verdict, Some((pidguard::Verdict::Match, _)));
    if json {
        println!(
            "{}",
            json!({"pidfile": pidfile, "format": "guard", "found": v.found, "valid": held,
                   "pid": v.entry.as_ref().map(|e| e.pid),
                   "verdict": verdict.map(|(v, _)| v.as_str()), "verdict_reason": verdict.map(|(_, r)| r.to_string()),
                   "fields": v.entry.as_ref().map(|e| e.fields.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone()))).collect::<serde_json::Map<_, _>>())})
        );
    } else {
        match (&v.entry, verdict) {
            (Some(e), Some((vd, why))) => println!("{}: guard record of pid {} — {vd} ({why})", pidfile.display(), e.pid),
            _ => println!("{}: no record", pidfile.display()),
        }
    }
    ExitCode::from(if held { exit::DONE } else { exit::NOTHING })
}

/// `stop` of a guard pidfile: the record's token decides under the chosen policy.
fn guard_stop(pidfile: &std::path::Path, schedule: Schedule, policy: Policy, json: bool) -> ExitCode {
    let v = match pidguard::guard::check(pidfile) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("pidguard: {e}");
            return ExitCode::from(error_status(&e));
        }
    };
    let (Some(entry), Some(j)) = (v.entry.clone(), v.identity) else {
        println!("{}: no record — nothing to do", pidfile.display());
        return ExitCode::from(exit::NOTHING);
    };
    let (status, outcome, signals) = if v.is_stale() {
        (exit::NOTHING, format!("stale ({}, {}): nothing sent", j.verdict, j.reason), vec![])
    } else if !v.authorizes(policy) {
        (exit::REFUSED, format!("refused ({}, {})", j.verdict, j.reason), vec![])
    } else {
        match v.open(policy) {
            Ok(h) => {
                let r = terminate(vec![h], &TerminateOptions { schedule, group: true, reap: true }).remove(0);
                let st = match r.outcome {
                    Outcome::Exited { .. } => exit::DONE,
                    Outcome::AlreadyGone => exit::NOTHING,
                    Outcome::Refused(_) => exit::REFUSED,
                    Outcome::Unkillable | Outcome::Error(_) => exit::UNKILLABLE,
                };
                (st, r.outcome.as_str().to_string(), r.signals.iter().map(|s| s.name()).collect())
            }
            Err(e) if e.kind() == pidguard::ErrorKind::NoSuchProcess => (exit::NOTHING, "already-gone".to_string(), vec![]),
            Err(e) => (exit::REFUSED, e.to_string(), vec![]),
        }
    };
    // Like an abx-dl record, a stale or stopped guard record is removed — by content, so a
    // record rewritten meanwhile by a new holder survives.
    let removed = (status == exit::DONE || status == exit::NOTHING) && pidguard::guard::remove(pidfile, &entry).unwrap_or(false);
    if json {
        println!("{}", json!({"pidfile": pidfile, "format": "guard", "pid": entry.pid, "outcome": outcome, "signals": signals, "pid_file_removed": removed, "exit": status}));
    } else {
        println!(
            "{}: pid {} — {} [{}]{}",
            pidfile.display(),
            entry.pid,
            outcome,
            signals.join(" "),
            if removed { " (pidfile removed)" } else { "" }
        );
    }
    ExitCode::from(status)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Token { pid } => {
            let Ok(pid) = pid.parse::<i32>() else { return bad_input(format!("not a pid: {pid:?}")) };
            match pidguard::start_token(pid) {
                Ok(t) => {
                    println!("{t}");
                    ExitCode::from(exit::DONE)
                }
                Err(e) if e.kind() == pidguard::ErrorKind::NoSuchProcess => {
                    eprintln!("pidguard: {e}");
                    ExitCode::from(exit::NOTHING)
                }
                Err(e) => bad_input(e),
            }
        }
        Cmd::Status { pidfile, cmd_file, tolerance, json } => {
            if !tolerance.is_finite() || tolerance < 0.0 {
                return bad_input(format!("bad tolerance {tolerance}"));
            }
            if is_guard_file(&pidfile) {
                return guard_status(&pidfile, json);
            }
            let cmd = cmd_file.or_else(|| default_cmd_file(&pidfile));
            let c = check_pid_file(&pidfile, cmd.as_deref(), tolerance);
            if json {
                println!("{}", report::check_json(&pidfile, &c));
            } else {
                let verdict = c.judgement.map(|j| format!("{} ({})", j.verdict, j.reason)).unwrap_or_else(|| "-".into());
                println!(
                    "{}: {} — pid {}, verdict {}, reason {}",
                    pidfile.display(),
                    if c.valid { "valid" } else { "not valid" },
                    c.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                    verdict,
                    c.reason
                );
            }
            ExitCode::from(if c.valid { exit::DONE } else { exit::NOTHING })
        }
        Cmd::Stop { pidfile, retry, lenient, cmd_file, json } => {
            let schedule: Schedule = match retry.parse() {
                Ok(s) => s,
                Err(e) => return bad_input(e),
            };
            let policy = if lenient { Policy::Lenient } else { Policy::Strict };
            if is_guard_file(&pidfile) {
                return guard_stop(&pidfile, schedule, policy, json);
            }
            let opts = pidguard::StopOptions {
                schedule,
                policy,
                cmd_file: cmd_file.or_else(|| default_cmd_file(&pidfile)),
                ..Default::default()
            };
            let r = match pidguard::stop_pid_file(&pidfile, &opts) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("pidguard: {e}");
                    return ExitCode::from(error_status(&e));
                }
            };
            if let Some(w) = &r.warning {
                eprintln!("pidguard: warning: {w}");
            }
            let signals: Vec<String> = r.signals().iter().map(|s| s.name()).collect();
            let status = r.outcome.exit_code() as u8;
            if json {
                println!(
                    "{}",
                    json!({"pidfile": pidfile, "format": "abx-dl", "pid": r.check.pid, "check": r.check.reason.as_str(),
                           "outcome": r.outcome.as_str(), "detail": r.outcome.to_string(), "refusal_detail": r.detail, "signals": signals,
                           "exit_code": r.exit().code(), "pid_file_removed": r.pid_file_removed, "exit": status})
                );
            } else {
                println!(
                    "{}: pid {} — {}{} [{}]{}",
                    pidfile.display(),
                    r.check.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                    r.outcome,
                    r.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default(),
                    signals.join(" "),
                    if r.pid_file_removed { " (pidfile removed)" } else { "" }
                );
            }
            ExitCode::from(status)
        }
        Cmd::Cleanup { dir, index, retry, pattern, json } => {
            let schedule: Schedule = match retry.parse() {
                Ok(s) => s,
                Err(e) => return bad_input(e),
            };
            let opts = CleanupOptions { index_path: index, is_tty: true, schedule, pattern, ..Default::default() };
            let reports = match cleanup_background_hooks(&dir, &opts, None) {
                Ok(r) => r,
                Err(e) => return bad_input(e),
            };
            if json {
                println!("{}", serde_json::Value::Array(reports.iter().map(report::hook_json).collect()));
            } else {
                report::print_table(&reports);
            }
            let status = if reports.is_empty() {
                exit::NOTHING
            } else if reports.iter().any(|r| r.outcome == HookOutcome::Unkillable) {
                exit::UNKILLABLE
            } else if reports.iter().any(|r| matches!(r.outcome, HookOutcome::Refused(_))) {
                exit::REFUSED
            } else if reports.iter().any(|r| r.outcome == HookOutcome::Unverified) {
                exit::UNDECIDED
            } else {
                exit::DONE
            };
            ExitCode::from(status)
        }
        Cmd::Demo { no_namespace, in_namespace } => demo::run(no_namespace, in_namespace),
    }
}
