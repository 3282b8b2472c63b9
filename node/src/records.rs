//! The guard records as JavaScript sees them (`guard.Entry`, `guard.Verdict`) and their
//! conversions from core's: a leaf module, read by `guard.rs` (which returns them) and by
//! `convert.rs` (the `holder` of a `PIDGUARD_HELD` error), so neither imports the other.

use indexmap::IndexMap;
use napi_derive::napi;
use pidguard::guard as core;

/// A guard record as this module returns it: the holder's pid and start token, and the
/// caller's own string members in file order.
///
/// Key order caveat: JavaScript lists integer-like keys (`"7"`, `"42"`) before all others, so
/// a file whose fields have such names after other names (written by another binding) comes
/// back in a different order, and its `encode` is not the file's bytes; `remove` then returns
/// `false`. Fields named like that are better avoided.
#[napi(object, namespace = "guard")]
pub struct Entry {
    /// The holder's pid.
    pub pid: i32,
    /// The holder's start token (`linux1:…`, see `startToken(pid)`).
    pub start_token: String,
    /// The caller's members (`{ session: 's1' }`), in wire order.
    #[napi(ts_type = "Record<string, string>")]
    pub fields: IndexMap<String, String>,
}

/// The answer of `check`, and the `holder` of a `PIDGUARD_HELD` error.
#[napi(object, namespace = "guard")]
pub struct Verdict {
    /// Whether a file was found; `false` means there is no record at all.
    pub found: bool,
    /// The record, when found.
    pub entry: Option<Entry>,
    /// The identity of the holder, when found: `'gone'` or `'mismatch'` (stale:
    /// `acquire` replaces it), `'match'` or `'unverifiable'` (held).
    #[napi(ts_type = "'match' | 'mismatch' | 'unverifiable' | 'gone'")]
    pub verdict: Option<String>,
    /// Why that verdict (`'token-equal'`, `'boot-id-differs'`, `'start-ticks-differ'`,
    /// `'foreign-pid-namespace'`, `'no-such-process'`, `'zombie'`, …).
    pub reason: Option<String>,
    /// The uid owning the file, when found.
    pub owner_uid: Option<u32>,
    /// Whether the record is proven stale (`'gone'` or `'mismatch'`).
    pub stale: bool,
}

pub(crate) fn entry(e: core::Entry) -> Entry {
    Entry { pid: e.pid, start_token: e.start_token, fields: e.fields.into_iter().collect() }
}

pub(crate) fn verdict(v: core::Verdict) -> Verdict {
    Verdict {
        found: v.found,
        stale: v.is_stale(),
        entry: v.entry.map(entry),
        verdict: v.identity.map(|j| j.verdict.as_str().to_string()),
        reason: v.identity.map(|j| j.reason.to_string()),
        owner_uid: v.owner_uid,
    }
}
