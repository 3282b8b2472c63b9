//! Field parity of the C surface with core's reports: for every report of
//! `tests/operations/reports.json` (the same table as `pidguard::report::FIELDS`), the committed
//! `include/pidguard.h` has every field, and no C member the table lacks, except the documented
//! helpers below.
//!
//! Where each report lives in C:
//! - ProcessInfo, PidFileCheck, TerminateReport, StopReport, Spawned: the members of the structs
//!   `pidguard_process_info`, `pidguard_pid_file_check`, `pidguard_terminate_result`,
//!   `pidguard_stop_result`, `pidguard_spawn_result`;
//! - HookReport: the accessors `pidguard_cleanup_report_<field>` of the opaque cleanup report;
//! - Judgement: the outputs `<field>_out` of `pidguard_judge`.
//!
//! How a C member stands for a field:
//! - by the field's own name. An `Option<T>` is then a sentinel or a NULL pointer the member's
//!   documentation gives, or the member plus a `has_<field>` member;
//! - by an alias of [`ALIASES`] (a C name that predates the table): its documentation in the
//!   header names the field in backquotes;
//! - C-only helpers: `has_<member>`, `n_<member>` (the length of an array member), and the
//!   members of [`HELPERS`], whose documentation in the header says what they stand for (the
//!   field they count, or the member of a nested report they repeat).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// `(report, C name, field)`: a C member or accessor with another name than the field.
const ALIASES: &[(&str, &str, &str)] = &[
    ("ProcessInfo", "zombie", "is_zombie"),
    ("ProcessInfo", "group_leader", "is_group_leader"),
    ("PidFileCheck", "foreign", "is_foreign"),
    ("TerminateReport", "exited_after", "after"),
    ("StopReport", "exit_status", "status"),
    ("StopReport", "exited_after", "after"),
    ("StopReport", "warning_message", "warning"),
    ("HookReport", "leftovers", "unverified_leftovers"),
    ("HookReport", "times", "started_at"),
    ("HookReport", "times", "ended_at"),
    // `stdout` is a macro of <stdio.h> in some C libraries (musl: `(stdout)`): no member may
    // take its name.
    ("Spawned", "stdout_path", "stdout"),
    ("Spawned", "stderr_path", "stderr"),
];

/// `(report, C name, what it stands for)`: C-only members; the header's documentation of each
/// says what it stands for in these words.
const HELPERS: &[(&str, &str, &str)] = &[
    ("TerminateReport", "signals_sent", "signals"),
    ("StopReport", "signals_sent", "signals"),
    ("StopReport", "reason", "check.reason"),
    ("StopReport", "verdict", "check.verdict"),
    ("StopReport", "pid", "check.pid"),
    ("StopReport", "exit_code", "terminate.exit_code"),
    ("StopReport", "group", "terminate.group"),
    ("StopReport", "pinned", "terminate.pinned"),
    ("StopReport", "elapsed", "terminate.elapsed"),
    ("HookReport", "len", "number of hooks"),
    ("HookReport", "free", "Free a report"),
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The reports and their fields, from tests/operations/reports.json.
fn reports() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(repo().join("tests/operations/reports.json")).expect("read reports.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("reports.json is JSON");
    json["reports"]
        .as_object()
        .expect("a `reports` object")
        .iter()
        .map(|(name, fields)| {
            let fields = fields.as_array().expect("a list of fields").iter().map(|f| f.as_str().expect("a field name").to_string());
            (name.clone(), fields.collect())
        })
        .collect()
}

/// `(name, documentation)` of each member of `typedef struct <name> { … }` in the header.
fn struct_members(header: &str, name: &str) -> Vec<(String, String)> {
    let start = header.find(&format!("typedef struct {name} {{")).unwrap_or_else(|| panic!("no struct {name} in the header"));
    let end = start + header[start..].find(&format!("}} {name};")).expect("the struct's end");
    let mut members = Vec::new();
    let mut doc = String::new();
    for line in header[start..end].lines().skip(1) {
        let l = line.trim();
        if l.starts_with("/**") || l.starts_with('*') {
            doc.push_str(l.trim_start_matches("/**").trim_start_matches("*/").trim_start_matches('*'));
            doc.push(' ');
        } else if let Some(decl) = l.strip_suffix(';') {
            let last = decl.rsplit([' ', '*']).next().unwrap_or(decl);
            let member = last.split('[').next().unwrap_or(last);
            members.push((member.to_string(), std::mem::take(&mut doc)));
        }
    }
    members
}

/// `(suffix, documentation)` of every function `<prefix><suffix>(` in the header, and its
/// parameter names.
fn functions(header: &str, prefix: &str) -> Vec<(String, String, Vec<String>)> {
    let lines: Vec<&str> = header.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(at) = line.find(prefix) else { continue };
        if !line.contains('(') || line.trim_start().starts_with('*') {
            continue;
        }
        let suffix: String = line[at + prefix.len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let mut doc = Vec::new();
        for l in lines[..i].iter().rev().skip(1) {
            if l.trim_start().starts_with("/**") {
                break;
            }
            doc.push(l.trim().trim_start_matches('*').trim());
        }
        doc.reverse();
        let mut proto = String::new();
        for l in &lines[i..] {
            proto.push_str(l);
            if l.contains(");") {
                break;
            }
        }
        let params = proto[proto.find('(').unwrap() + 1..proto.rfind(')').unwrap()]
            .split(',')
            .map(|p| p.trim().rsplit([' ', '*']).next().unwrap_or("").to_string())
            .collect();
        out.push((suffix, doc.join(" "), params));
    }
    out
}

/// The C names (with their documentation) that stand for `report`'s fields.
fn c_surface(header: &str, report: &str) -> Vec<(String, String)> {
    let strukt = match report {
        "ProcessInfo" => "pidguard_process_info",
        "PidFileCheck" => "pidguard_pid_file_check",
        "TerminateReport" => "pidguard_terminate_result",
        "StopReport" => "pidguard_stop_result",
        "Spawned" => "pidguard_spawn_result",
        "HookReport" => {
            let accessors = functions(header, "pidguard_cleanup_report_");
            return accessors.into_iter().map(|(name, doc, _)| (name, doc)).collect();
        }
        "Judgement" => {
            let judge = functions(header, "pidguard_judge").into_iter().find(|(s, _, _)| s.is_empty()).expect("pidguard_judge");
            return judge.2.iter().filter_map(|p| p.strip_suffix("_out")).map(|p| (p.to_string(), judge.1.clone())).collect();
        }
        other => panic!("report {other} of reports.json has no place in C: add it to c_surface (and to the header)"),
    };
    struct_members(header, strukt)
}

/// Everything wrong with the C surface of `report` (empty when it matches `fields`).
fn mismatches(header: &str, report: &str, fields: &[String]) -> Vec<String> {
    let surface = c_surface(header, report);
    let names: Vec<&str> = surface.iter().map(|(n, _)| n.as_str()).collect();
    fn field_of<'a>(report: &str, c: &'a str) -> Vec<&'a str> {
        let aliased: Vec<&str> = ALIASES.iter().filter(|(r, n, _)| *r == report && *n == c).map(|(_, _, f)| *f).collect();
        if aliased.is_empty() { vec![c] } else { aliased }
    }
    let mut wrong = Vec::new();
    for f in fields {
        if !names.iter().any(|c| field_of(report, c).contains(&f.as_str())) {
            wrong.push(format!("{report}.{f}: no C member or accessor stands for it"));
        }
    }
    for (c, doc) in &surface {
        for (_, _, f) in ALIASES.iter().filter(|(r, n, _)| *r == report && n == c) {
            if !doc.contains(&format!("`{f}`")) {
                wrong.push(format!("{report}: C `{c}` stands for `{f}` but its documentation does not say so"));
            }
        }
        if field_of(report, c).iter().all(|f| fields.iter().any(|x| x == f)) {
            continue;
        }
        let base = c.strip_prefix("has_").or_else(|| c.strip_prefix("n_"));
        if base.is_some_and(|b| names.contains(&b) || fields.iter().any(|x| x == b)) {
            continue;
        }
        match HELPERS.iter().find(|(r, n, _)| *r == report && n == c) {
            Some((_, _, what)) if doc.contains(what) => {}
            Some((_, _, what)) => wrong.push(format!("{report}: C helper `{c}` does not document that it stands for `{what}`")),
            None => wrong.push(format!("{report}: C has `{c}`, which reports.json lacks (add the field to core, or document a helper)")),
        }
    }
    wrong
}

#[test]
fn every_report_field_is_on_the_c_surface_and_nothing_else() {
    let header = std::fs::read_to_string(repo().join("include/pidguard.h")).expect("read include/pidguard.h");
    let reports = reports();
    assert_eq!(reports.len(), 7, "reports.json names {} reports", reports.len());
    let wrong: Vec<String> = reports.iter().flat_map(|(r, fields)| mismatches(&header, r, fields)).collect();
    assert!(wrong.is_empty(), "the C surface differs from tests/operations/reports.json:\n  {}", wrong.join("\n  "));
}

/// The check can fail: a field the header lacks, and a C member the table lacks, are both
/// reported.
#[test]
fn a_missing_or_extra_field_is_reported() {
    let header = std::fs::read_to_string(repo().join("include/pidguard.h")).expect("read include/pidguard.h");
    let mut fields = reports()["TerminateReport"].clone();
    fields.push("invented".to_string());
    fields.retain(|f| f != "stopped");
    let wrong = mismatches(&header, "TerminateReport", &fields);
    assert!(wrong.iter().any(|w| w.contains("TerminateReport.invented")), "{wrong:?}");
    assert!(wrong.iter().any(|w| w.contains("C has `stopped`")), "{wrong:?}");
    let hook = mismatches(&header, "HookReport", &reports()["HookReport"].iter().filter(|f| *f != "notes").cloned().collect::<Vec<_>>());
    assert!(hook.iter().any(|w| w.contains("C has `notes`")), "{hook:?}");
}
