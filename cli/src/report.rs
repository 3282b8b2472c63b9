//! Human tables and JSON for reports.

use std::path::Path;

use pidguard::{HookReport, PidFileCheck};
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
        "output_files": r.output_files,
        "unverified_leftovers": r.unverified_leftovers,
        "pid_file_removed": r.pid_file_removed,
        "elapsed_s": r.elapsed.map(|d| d.as_secs_f64()),
    })
}

pub fn print_table(reports: &[HookReport]) {
    let mut reports: Vec<&HookReport> = reports.iter().collect();
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    let rows: Vec<[String; 7]> = reports
        .iter()
        .map(|r| {
            [
                r.name.clone(),
                r.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                match (r.verdict, r.verdict_reason) {
                    (Some(v), Some(why)) if why.as_str() != r.reason.as_str() && r.reason.as_str() != v.as_str() => {
                        format!("{v} ({why}; {})", r.reason)
                    }
                    (Some(v), Some(why)) if why.as_str() != v.as_str() => format!("{v} ({why})"),
                    (Some(v), _) => format!("{v} ({})", r.reason),
                    (None, _) => r.reason.to_string(),
                },
                r.outcome.to_string(),
                if r.signals.is_empty() { "none".into() } else { r.signals.iter().map(|s| s.name()).collect::<Vec<_>>().join(",") },
                r.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into()),
                r.elapsed.map(|d| format!("{:.1} ms", d.as_secs_f64() * 1e3)).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let head = ["hook", "pid", "verdict (reason)", "outcome", "signals sent", "exit", "time"];
    let mut w: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells.iter().enumerate().map(|(i, c)| format!("{c:<width$}", width = w[i])).collect();
        println!("  {}", parts.join("  "));
    };
    line(&head.map(String::from));
    line(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>());
    for row in &rows {
        line(row);
    }
    for r in &reports {
        if !r.unverified_leftovers.is_empty() {
            println!(
                "  note: {}: live processes {:?} still carry pgid {} — unverified, NOT signalled",
                r.name,
                r.unverified_leftovers,
                r.pid.unwrap_or(0)
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
