//! Human sentences for reports, and the JSON line of `--json` (core's report views as they
//! serialize). Human output never shows a placeholder (`-`, `[]`): what is unknown or empty is
//! left out or said in words. Names, paths, errors and notes that came from files are shown
//! through core's [`pidguard::report::printable`]: no control character reaches the terminal,
//! and a newline in a name cannot forge a report line.

use std::path::Path;

use pidguard::report::printable;
use pidguard::{CheckReason, Format, HookReport, PidFileCheck, Reason, StopReport, Verdict};

/// Print one report (or a list of them) as a JSON line: the serde form of core's
/// [`pidguard::report`] views, the same fields, in the same order, that a Python or Node caller
/// gets.
pub fn print_json(text: serde_json::Result<String>) {
    match text {
        Ok(t) => println!("{t}"),
        // The views hold strings, numbers, booleans and lists only: serde_json cannot refuse them.
        Err(e) => eprintln!("pidguard: cannot write the report as JSON: {e}"),
    }
}

/// Print the reports of a cleanup as one JSON array on one line, as [`print_json`] prints the
/// list of core's [`pidguard::report::HookView`]s (the same bytes), but streamed: each report is
/// written as it comes by core's byte writer ([`pidguard::report::write_hook_json`], no view
/// built), through one buffer flushed every 64 KiB, so a cleanup of thousands of hooks neither
/// copies every report nor holds the whole text (a view and serde per report were ~1.1 µs per
/// hook of a cleanup of stale records, a sixth of the command's own CPU). A reader that stops
/// early (`| head`) is not an error.
pub fn print_hooks_json(reports: Vec<HookReport>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let mut buf = Vec::with_capacity(1 << 16);
    let written = (|| -> std::io::Result<()> {
        buf.push(b'[');
        for (i, r) in reports.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            pidguard::report::write_hook_json(&mut buf, r);
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        buf.extend_from_slice(b"]\n");
        out.write_all(&buf)?;
        out.flush()
    })();
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => eprintln!("pidguard: cannot write the report as JSON: {e}"),
        _ => {}
    }
}

/// A core error as a user reads it: its message, and the system's text when it carries an errno
/// that the message does not already show.
pub fn error_text(e: &pidguard::Error) -> String {
    // The message may name files (paths from the tree): no control character is printed raw.
    let msg = printable(&e.to_string()).into_owned();
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

/// One line for `status` of a pidfile (a guard record's check is [`pidguard::guard::Verdict::to_check`]).
pub fn check_text(path: &Path, format: Format, c: &PidFileCheck, os_error: Option<&std::io::Error>) -> String {
    let p = printable(&pidguard::report::path_text(path.as_os_str())).into_owned();
    let record = if format == Format::Guard { "guard record of " } else { "" };
    let pid = c.pid.map(|p| format!("{record}pid {p}, ")).unwrap_or_default();
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
        (r, Some(j)) if r.as_str() != j.verdict.as_str() && !verdict_text(j.verdict, j.reason).contains(r.as_str()) => {
            format!("{p}: not valid — {pid}{r}, {}", verdict_text(j.verdict, j.reason))
        }
        (_, Some(j)) => format!("{p}: not valid — {pid}{}", verdict_text(j.verdict, j.reason)),
        (r, None) => format!("{p}: not valid — {pid}{r}"),
    }
}

/// The lines of `list DIR`: one per pidfile, "STATE  PIDFILE  pid N, VERDICT" (the check's
/// words, as `status` prints them), then a count; "no pidfiles" when there are none.
pub fn list_text(dir: &Path, entries: &[pidguard::DirEntryStatus]) -> String {
    let d = printable(&pidguard::report::path_text(dir.as_os_str())).into_owned();
    if entries.is_empty() {
        return format!("{d}: no pidfiles\n");
    }
    let mut out = String::new();
    for e in entries {
        let line = match (&e.check, &e.scope_text) {
            // What `status` prints for a record that runs only through its scope.
            // (or, for one whose scope could not be read, why it is undecided).
            (Ok(_), Some(t)) => format!("{}: {} — {t}", printable(&pidguard::report::path_text(e.path.as_os_str())), if e.state == pidguard::EntryState::Undecided { "undecided" } else { "running" }),
            (Ok(c), None) => check_text(&e.path, e.format, c, c.os_error()),
            (Err(err), _) => format!("{}: cannot be checked: {err}", printable(&pidguard::report::path_text(e.path.as_os_str()))),
        };
        out.push_str(&format!("{:<9} {line}\n", e.state.as_str()));
    }
    let n = |s: pidguard::EntryState| entries.iter().filter(|e| e.state == s).count();
    out.push_str(&format!(
        "{d}: {} pidfile(s): {} running, {} stale, {} undecided\n",
        entries.len(),
        n(pidguard::EntryState::Running),
        n(pidguard::EntryState::Stale),
        n(pidguard::EntryState::Undecided)
    ));
    out
}

/// One line for `stop` of a pidfile.
pub fn stop_text(r: &StopReport) -> String {
    let p = printable(&pidguard::report::path_text(r.pid_file.as_os_str())).into_owned();
    if r.check.reason == CheckReason::Missing {
        return format!("{p}: no pidfile — nothing to do");
    }
    let mut who = r.check.pid.map(|n| format!("pid {n}")).unwrap_or_else(|| "no pid".into());
    if r.scope != pidguard::identity::ScopeKind::Group {
        // The whole tree was the target, not only the group (a group is said by omission).
        who.push_str(&format!(" (scope: {})", r.scope));
    }
    let signals: Vec<String> = r.signals().iter().map(|s| s.name()).collect();
    let detail = r.detail.as_deref().map(|d| format!(": {}", printable(d))).unwrap_or_default();
    format!("{p}: {who} — {}{detail}{}{}", r.outcome, signals_text(&signals), removed_text(r.pid_file_removed))
}

/// One line per hook of a cleanup, sorted by name, then the notes.
pub fn print_hooks(reports: &[HookReport]) {
    let mut reports: Vec<&HookReport> = reports.iter().collect();
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    let width = reports.iter().map(|r| printable(&r.name).chars().count()).max().unwrap_or(0);
    for r in &reports {
        let mut line = format!("  {:<width$}  ", printable(&r.name));
        if let Some(pid) = r.pid {
            line.push_str(&format!("pid {pid}: "));
        }
        if r.scope != pidguard::identity::ScopeKind::Group {
            line.push_str(&format!("(scope: {}) ", r.scope));
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
                printable(&r.name),
                pids.join(", "),
                r.pid.map(|p| p.to_string()).unwrap_or_else(|| "of the record".into())
            );
        }
        if let Some(e) = &r.error {
            println!("  note: {}: {}", printable(&r.name), printable(e));
        }
        for n in &r.notes {
            println!("  note: {}: {}", printable(&r.name), printable(n));
        }
    }
}
