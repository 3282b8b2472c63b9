//! Human sentences and JSON for reports. Human output never shows a placeholder (`-`, `[]`):
//! what is unknown or empty is left out or said in words.

use std::path::Path;

use pidguard::{CheckReason, HookReport, PidFileCheck, Reason, StopReport, Verdict};
use serde_json::{json, Value};

pub fn check_json(path: &Path, c: &PidFileCheck) -> Value {
    json!({
        "pidfile": path,
        "valid": c.valid,
        "reason": c.reason.as_str(),
        "pid": c.pid,
        "verdict": c.judgement.map(|j| j.verdict.as_str()),
        "verdict_reason": c.judgement.map(|j| j.reason.to_string()),
        "token": c.token.as_ref().map(|t| t.to_string()),
        "mtime": c.mtime,
        "create_time": c.create_time,
    })
}

pub fn hook_json(r: &HookReport) -> Value {
    json!({
        "name": r.name,
        "dir": r.dir,
        "pid": r.pid,
        "verdict": r.verdict.map(|v| v.as_str()),
        "verdict_reason": r.verdict_reason.map(|v| v.to_string()),
        "reason": r.reason.as_str(),
        "outcome": r.outcome.as_str(),
        "outcome_detail": r.outcome.to_string(),
        "signals": r.signals.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "exit_code": r.exit_code,
        "error": r.error,
        "notes": r.notes,
        "output_files": &*r.output_files,
        "unverified_leftovers": r.unverified_leftovers,
        "pid_file_removed": r.pid_file_removed,
        "elapsed_s": r.elapsed.map(|d| d.as_secs_f64()),
    })
}

/// A core error as a user reads it: its message, and the system's text when it carries an errno
/// that the message does not already show.
pub fn error_text(e: &pidguard::Error) -> String {
    let msg = e.to_string();
    match e.errno() {
        Some(n) if e.kind().family() == pidguard::ErrorKind::PermissionDenied || e.kind() == pidguard::ErrorKind::Io => {
            let os = std::io::Error::from_raw_os_error(n).to_string();
            let short = os.split(" (os error").next().unwrap_or(&os).to_string();
            if msg.contains(&short) {
                msg
            } else {
                format!("{msg}: {short}")
            }
        }
        _ => msg,
    }
}

/// Why `path` cannot be opened for reading, as the system says it (for messages only: the
/// decision was already made by core). Neither follows a symlink nor blocks on a FIFO.
pub fn open_error(path: &Path) -> Option<std::io::Error> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path).err()
}

/// `match`, or `mismatch (start-ticks-differ)`: the reason only where it adds something.
pub fn verdict_text(v: Verdict, why: Reason) -> String {
    match (v, why) {
        (Verdict::Match, Reason::TokenEqual) => "match".into(),
        (Verdict::Gone, Reason::NoSuchProcess) => "gone".into(),
        _ => format!("{v} ({why})"),
    }
}

/// ` (signals sent: TERM, KILL)` or ` (no signal sent)`.
pub fn signals_text(signals: &[String]) -> String {
    if signals.is_empty() {
        " (no signal sent)".into()
    } else {
        format!(" (signals sent: {})", signals.join(", "))
    }
}

/// `, pidfile removed` when it was.
pub fn removed_text(removed: bool) -> &'static str {
    if removed {
        ", pidfile removed"
    } else {
        ""
    }
}

/// One line for `status` of an abx-dl pidfile.
pub fn check_text(path: &Path, c: &PidFileCheck, os_error: Option<&std::io::Error>) -> String {
    let p = path.display();
    let pid = c.pid.map(|p| format!("pid {p}, ")).unwrap_or_default();
    match (c.reason, c.judgement) {
        (CheckReason::Valid, Some(j)) if j.verdict == Verdict::Match => format!("{p}: valid — {pid}match"),
        (CheckReason::Valid, _) => {
            format!("{p}: valid — {pid}no start token recorded; the mtime and command rules of the abx-dl format agree")
        }
        (CheckReason::Missing, _) => format!("{p}: not valid — no such file"),
        (CheckReason::Unreadable, _) => match os_error {
            Some(e) => format!("{p}: cannot be read: {e}"),
            None => format!("{p}: cannot be read"),
        },
        (CheckReason::NotRegular, _) => format!("{p}: not valid — not a regular file (not followed, not read)"),
        (CheckReason::Malformed, _) => format!("{p}: not valid — the content is not one pid"),
        (CheckReason::BadToken, _) => format!("{p}: not valid — {pid}the token xattr is not a pidguard start token"),
        (CheckReason::Unverifiable, Some(j)) => {
            format!("{p}: undecided — {pid}{}: the live identity could not be read", verdict_text(j.verdict, j.reason))
        }
        (r, Some(j)) if r.as_str() != j.verdict.as_str() => {
            format!("{p}: not valid — {pid}{r}, {}", verdict_text(j.verdict, j.reason))
        }
        (_, Some(j)) => format!("{p}: not valid — {pid}{}", verdict_text(j.verdict, j.reason)),
        (r, None) => format!("{p}: not valid — {pid}{r}"),
    }
}

/// One line for `stop` of an abx-dl pidfile.
pub fn stop_text(path: &Path, r: &StopReport, signals: &[String]) -> String {
    let p = path.display();
    if r.check.reason == CheckReason::Missing {
        return format!("{p}: no pidfile — nothing to do");
    }
    let who = r.check.pid.map(|n| format!("pid {n}")).unwrap_or_else(|| "no pid".into());
    let sent = if r.terminate.is_some() || !signals.is_empty() { signals_text(signals) } else { " (no signal sent)".into() };
    let detail = r.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
    format!("{p}: {who} — {}{detail}{sent}{}", r.outcome, removed_text(r.pid_file_removed))
}

/// One line per hook of a cleanup, sorted by name, then the notes.
pub fn print_hooks(reports: &[HookReport]) {
    let mut reports: Vec<&HookReport> = reports.iter().collect();
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    let width = reports.iter().map(|r| r.name.chars().count()).max().unwrap_or(0);
    for r in &reports {
        let mut line = format!("  {:<width$}  ", r.name);
        if let Some(pid) = r.pid {
            line.push_str(&format!("pid {pid}: "));
        }
        line.push_str(&r.outcome.to_string());
        let why = match (r.verdict, r.verdict_reason) {
            (Some(v), Some(why)) if r.reason.as_str() != v.as_str() && r.reason != CheckReason::Valid => {
                let vt = verdict_text(v, why);
                if vt.contains(r.reason.as_str()) {
                    vt
                } else {
                    format!("{}, {vt}", r.reason)
                }
            }
            (Some(v), Some(why)) if !(v == Verdict::Match && r.reason == CheckReason::Valid) => verdict_text(v, why),
            (None, _) if r.reason != CheckReason::Valid => r.reason.to_string(),
            _ => String::new(),
        };
        if !why.is_empty() && !r.outcome.to_string().contains(&why) {
            line.push_str(&format!(" [{why}]"));
        }
        let sigs: Vec<String> = r.signals.iter().map(|s| s.name()).collect();
        line.push_str(&signals_text(&sigs));
        if let Some(c) = r.exit_code {
            line.push_str(&format!(", exit status {c}"));
        }
        if let Some(d) = r.elapsed {
            line.push_str(&format!(", {:.1} ms", d.as_secs_f64() * 1e3));
        }
        line.push_str(removed_text(r.pid_file_removed));
        println!("{line}");
    }
    for r in &reports {
        if !r.unverified_leftovers.is_empty() {
            let pids: Vec<String> = r.unverified_leftovers.iter().map(|p| p.to_string()).collect();
            println!(
                "  note: {}: live processes {} still carry process group {} — unverified, NOT signalled",
                r.name,
                pids.join(", "),
                r.pid.map(|p| p.to_string()).unwrap_or_else(|| "of the record".into())
            );
        }
        if let Some(e) = &r.error {
            println!("  note: {}: {e}", r.name);
        }
        for n in &r.notes {
            println!("  note: {}: {n}", r.name);
        }
    }
}
