//! The decision table of [`super`], printed as markdown for docs/design.md.

use super::rules::{decide, on_live_scope, scope_consulted, Allows, Answer, Decision, Operation, ScopeAllows, OPERATIONS, REASONS};
use crate::identity::Policy;

fn op_name(op: Operation) -> &'static str {
    match op {
        Operation::Check => "check",
        Operation::Validate => "validate",
        Operation::Status => "status",
        Operation::Probe => "probe",
        Operation::Stop => "stop",
        Operation::Pin => "pin",
        Operation::Judge => "cleanup's judge",
    }
}

fn cell(a: Decision) -> String {
    match a {
        Decision::Answer(Answer::Running) => "running".into(),
        Decision::Answer(Answer::NotRunning) => "not running".into(),
        Decision::Answer(Answer::Undecided) => "undecided".into(),
        Decision::Answer(Answer::Unusable) => "unusable".into(),
        Decision::Allows(Allows::Act) => "act".into(),
        Decision::Allows(Allows::ActLeniently) => "act (lenient, warned)".into(),
        Decision::Allows(Allows::Retire) => "retire".into(),
        Decision::Allows(Allows::Keep(r)) => format!("keep: refused ({r})"),
        Decision::Allows(Allows::Leave) => "leave (foreign)".into(),
        Decision::Allows(Allows::Nothing) => "nothing".into(),
        Decision::Allows(Allows::Fail) => "error".into(),
    }
}

fn scope_cell(s: ScopeAllows) -> &'static str {
    match s {
        ScopeAllows::Ignore => "—",
        ScopeAllows::Count => "running, N processes",
        ScopeAllows::Handle => "scope-only handle (no signal)",
        ScopeAllows::Stop => "stop the scope, then retire",
    }
}

/// The table as markdown: one row per reason, one column per operation, then the row of a
/// recorded scope that still holds processes (consulted only for the reasons marked). The
/// `stop` column reads the strict policy; a lenient cell follows it in parentheses where the
/// policy changes the decision.
pub fn markdown_table() -> String {
    let mut s = String::from("| reason | scope consulted |");
    for op in OPERATIONS {
        s.push_str(&format!(" {} |", op_name(op)));
    }
    s.push_str("\n|---|---|");
    for _ in OPERATIONS {
        s.push_str("---|");
    }
    s.push('\n');
    for r in REASONS {
        s.push_str(&format!("| `{r}` | {} |", if scope_consulted(r) { "yes" } else { "no" }));
        for op in OPERATIONS {
            let strict = decide(op, r, Policy::Strict);
            let lenient = decide(op, r, Policy::Lenient);
            if strict == lenient {
                s.push_str(&format!(" {} |", cell(strict)));
            } else {
                s.push_str(&format!(" {} (lenient: {}) |", cell(strict), cell(lenient)));
            }
        }
        s.push('\n');
    }
    s.push_str("| its scope still holds processes | |");
    for op in OPERATIONS {
        s.push_str(&format!(" {} |", scope_cell(on_live_scope(op))));
    }
    s.push('\n');
    s
}
