//! The index records of a finalized hook: abx-dl's `Process` and `ArchiveResult` JSON lines,
//! written byte by byte (the bytes serde_json writes for them: a test compares the two), with
//! their ids and times built on the stack.

use std::time::SystemTime;

use super::{HookOutcome, HookReport};
use crate::json::{put_int, put_key, put_str, put_strs};

/// A new record id: 12 hex digits of the millisecond time, `-`, 20 random hex digits.
pub fn new_id() -> String {
    Id::new().as_str().to_string()
}

/// A record id (see [`new_id`]), built on the stack: two of them per hook finalized.
struct Id([u8; 33]);

impl Id {
    fn new() -> Id {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0) as u64;
        let mut rnd = [0u8; 10];
        crate::pidfile::atomic::random_bytes(&mut rnd);
        let mut id = [b'-'; 33];
        for (i, c) in id[..12].iter_mut().enumerate() {
            *c = DIGITS[((ms >> (4 * (11 - i))) & 15) as usize];
        }
        for (i, b) in rnd.iter().enumerate() {
            id[13 + 2 * i] = DIGITS[(b >> 4) as usize];
            id[14 + 2 * i] = DIGITS[(b & 15) as usize];
        }
        Id(id)
    }

    fn as_str(&self) -> &str {
        // Unreachable: hex digits and `-` only.
        std::str::from_utf8(&self.0).expect("an id is ASCII")
    }
}

/// ISO 8601 UTC with microseconds (`2026-12-02T07:25:56.123456Z`), on the stack.
struct Iso([u8; 27]);

impl Iso {
    fn new(t: SystemTime) -> Iso {
        use std::io::Write;
        let mut buf = [0u8; 27];
        // RFC 3339 with microseconds and a four-digit year is 27 bytes: reached for recorded
        // times (`mtime_instant` bounds them) and for the clock's now from 1970 to 9999; a clock
        // outside that range panics here, as humantime's `to_string` did before (humantime
        // itself panics before 1970).
        write!(&mut buf[..], "{}", humantime::format_rfc3339_micros(t)).expect("27 bytes");
        Iso(buf)
    }

    fn as_str(&self) -> &str {
        // Unreachable: humantime writes ASCII.
        std::str::from_utf8(&self.0).expect("an ISO time is ASCII")
    }
}

#[cfg(test)]
pub(super) fn iso(t: SystemTime) -> String {
    Iso::new(t).as_str().to_string()
}

/// The first instant ISO 8601's four-digit years (and so `iso`) cannot write: 10000-01-01T00:00:00Z.
const YEAR_10000: u64 = 253_402_300_800;

/// A pidfile's mtime as the hook's start time, when it is one `iso` can write: finite, not
/// before the epoch, before the year 10000. Anyone who can write the pidfile sets its mtime
/// (`touch -d`, any 64-bit time on tmpfs), so a time out of that range is no start time —
/// `None`, and the records leave `started_at` out — never a panic of the cleanup.
pub(crate) fn mtime_instant(mtime: f64) -> Option<SystemTime> {
    if !(mtime.is_finite() && (0.0..YEAR_10000 as f64).contains(&mtime)) {
        return None;
    }
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::try_from_secs_f64(mtime).ok()?)
}


/// The hook's two index records, each a JSON line: `Process` and `ArchiveResult` (see
/// [`default_finalize`](super::finalize::default_finalize)), with `"type": "ArchiveResult"`
/// lines on its stdout overriding `status`/`output_str` (the last wins). Written field by field
/// in the order and with the omissions of abx-dl's records (an absent `pid`, `started_at`,
/// `start_ts`, `output_str` or empty `error` is left out), into one buffer sized for both.
pub(super) fn records(report: &HookReport, stdout: &str, stderr: &str) -> Vec<u8> {
    let mut o = Vec::new();
    records_into(&mut o, report, stdout, stderr);
    o
}

/// Whether a hook's exit status is unknown to this cleanup: it ended by itself (a stale record,
/// or one found already gone) while no pidguard process was its parent, so nothing reaped it
/// here and no status was learnt. Its records then say so — `"exit_code": null` (abx-dl reads
/// `exit_code: int | None`) and `"status": "unknown"` — rather than call it a success. (The
/// `pidguard.abx_dl` drop-in keeps the seed's shape instead: see docs/python.md.)
fn status_unknown(report: &HookReport) -> bool {
    report.exit_code.is_none() && report.error.is_none() && matches!(report.outcome, HookOutcome::Stale | HookOutcome::AlreadyGone)
}

/// [`records`], appended to `o` (grown once, for both lines).
pub(super) fn records_into(o: &mut Vec<u8>, report: &HookReport, stdout: &str, stderr: &str) {
    let success = report.succeeded();
    let unknown = status_unknown(report);
    let mut status = std::borrow::Cow::Borrowed(if unknown { "unknown" } else if success { "succeeded" } else { "failed" });
    let mut output_str = None;
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim()) else { continue };
        if v.get("type").and_then(|t| t.as_str()) != Some("ArchiveResult") {
            continue;
        }
        if let Some(s) = v.get("status").and_then(|s| s.as_str()) {
            status = std::borrow::Cow::Owned(s.to_string());
        }
        if let Some(s) = v.get("output_str").and_then(|s| s.as_str()) {
            output_str = Some(s.to_string());
        }
    }
    let exit_code = (!unknown).then(|| report.exit_code.unwrap_or(if success { 0 } else { -1 }));
    let stderr_head: Option<String> = (report.error.is_none() && !success).then(|| stderr.chars().take(500).collect());
    let error = report.error.as_deref().or(stderr_head.as_deref()).filter(|e| !e.is_empty());
    let (process_id, result_id) = (Id::new(), Id::new());
    let (process_id, result_id) = (process_id.as_str(), result_id.as_str());
    let started = report.started_at.map(Iso::new);
    let started = started.as_ref().map(Iso::as_str);
    let ended = Iso::new(report.ended_at);
    let ended = ended.as_str();
    let pwd = crate::pathtext::path_text(report.dir.as_os_str());
    let plugin = report.dir.file_name().map(crate::pathtext::path_text).unwrap_or_default();
    o.reserve(640 + stdout.len() + stderr.len() + pwd.len() + report.output_files.iter().map(|f| f.len() + 3).sum::<usize>());
    o.extend_from_slice(b"{\"type\":\"Process\"");
    put_key(o, "id");
    put_str(o, process_id);
    put_key(o, "cmd");
    put_strs(o, &report.cmd);
    put_key(o, "pwd");
    put_str(o, &pwd);
    if let Some(pid) = report.pid {
        put_key(o, "pid");
        put_int(o, pid);
    }
    put_key(o, "exit_code");
    match exit_code {
        Some(c) => put_int(o, c),
        None => o.extend_from_slice(b"null"),
    }
    put_key(o, "stdout");
    put_str(o, stdout);
    put_key(o, "stderr");
    put_str(o, stderr);
    if let Some(s) = started {
        put_key(o, "started_at");
        put_str(o, s);
    }
    put_key(o, "ended_at");
    put_str(o, ended);
    o.extend_from_slice(b"}\n{\"type\":\"ArchiveResult\"");
    put_key(o, "id");
    put_str(o, result_id);
    put_key(o, "plugin");
    put_str(o, &plugin);
    put_key(o, "hook_name");
    put_str(o, &report.name);
    put_key(o, "status");
    put_str(o, &status);
    put_key(o, "process_id");
    put_str(o, process_id);
    if let Some(s) = &output_str {
        put_key(o, "output_str");
        put_str(o, s);
    }
    put_key(o, "output_files");
    put_strs(o, &report.output_files);
    if let Some(s) = started {
        put_key(o, "start_ts");
        put_str(o, s);
    }
    put_key(o, "end_ts");
    put_str(o, ended);
    if let Some(e) = error {
        put_key(o, "error");
        put_str(o, e);
    }
    o.extend_from_slice(b"}\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct ProcessRecord<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        cmd: &'a [String],
        pwd: std::borrow::Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pid: Option<i32>,
        exit_code: Option<i32>,
        stdout: &'a str,
        stderr: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        started_at: Option<&'a str>,
        ended_at: &'a str,
    }

    #[derive(Serialize)]
    struct ArchiveResultRecord<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        snapshot_id: Option<&'a str>,
        plugin: std::borrow::Cow<'a, str>,
        hook_name: &'a str,
        status: &'a str,
        process_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        output_str: Option<String>,
        output_files: &'a [String],
        #[serde(skip_serializing_if = "Option::is_none")]
        start_ts: Option<&'a str>,
        end_ts: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a str>,
    }


    /// The records as serde_json writes them (the writer of the first versions): the reference
    /// the byte writer is compared with.
    /// The hook's two index records, each a JSON line: `Process` and `ArchiveResult` (see
    /// [`default_finalize`]), with `"type": "ArchiveResult"` lines on its stdout overriding
    /// `status`/`output_str` (the last wins).
    fn records_serde(report: &HookReport, stdout: &str, stderr: &str) -> Vec<u8> {
        let success = report.succeeded();
        let unknown = status_unknown(report);
        let mut status = std::borrow::Cow::Borrowed(if unknown { "unknown" } else if success { "succeeded" } else { "failed" });
        let mut output_str = None;
        for line in stdout.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim()) else { continue };
            if v.get("type").and_then(|t| t.as_str()) != Some("ArchiveResult") {
                continue;
            }
            if let Some(s) = v.get("status").and_then(|s| s.as_str()) {
                status = std::borrow::Cow::Owned(s.to_string());
            }
            if let Some(s) = v.get("output_str").and_then(|s| s.as_str()) {
                output_str = Some(s.to_string());
            }
        }
        let exit_code = (!unknown).then(|| report.exit_code.unwrap_or(if success { 0 } else { -1 }));
        let stderr_head: Option<String> = (report.error.is_none() && !success).then(|| stderr.chars().take(500).collect());
        let error = report.error.as_deref().or(stderr_head.as_deref());
        let (process_id, result_id) = (Id::new(), Id::new());
        let (process_id, result_id) = (process_id.as_str(), result_id.as_str());
        let started = report.started_at.map(Iso::new);
        let started = started.as_ref().map(Iso::as_str);
        let ended = Iso::new(report.ended_at);
        let ended = ended.as_str();
        let p = ProcessRecord {
            kind: "Process",
            id: process_id,
            cmd: &report.cmd,
            pwd: crate::pathtext::path_text(report.dir.as_os_str()),
            pid: report.pid,
            exit_code,
            stdout,
            stderr,
            started_at: started,
            ended_at: ended,
        };
        let a = ArchiveResultRecord {
            kind: "ArchiveResult",
            id: result_id,
            snapshot_id: None,
            plugin: report.dir.file_name().map(crate::pathtext::path_text).unwrap_or_default(),
            hook_name: &report.name,
            status: &status,
            process_id,
            output_str,
            output_files: &report.output_files,
            start_ts: started,
            end_ts: ended,
            error: error.filter(|e| !e.is_empty()),
        };
        // Both lines serialised into one buffer, sized for them at once.
        let mut lines = Vec::with_capacity(1024 + stdout.len() + stderr.len());
        // Unreachable: serde_json fails only on a writer error (a Vec never fails) or a map with
        // non-string keys (these records have none).
        serde_json::to_writer(&mut lines, &p).expect("plain data serialises");
        lines.push(b'\n');
        serde_json::to_writer(&mut lines, &a).expect("plain data serialises");
        lines.push(b'\n');
        lines
    }


    #[test]
    fn a_pidfile_mtime_out_of_range_is_no_start_time() {
        for m in [-1.0, f64::NAN, f64::INFINITY, 9.223372036854776e18, 400_000_000_000.0, 253_402_300_800.0] {
            assert_eq!(mtime_instant(m), None, "{m}");
        }
        let last = mtime_instant(253_402_300_799.0).expect("the last second of 9999");
        assert_eq!(iso(last), "9999-12-31T23:59:59.000000Z");
        assert!(mtime_instant(0.0).is_some());
    }

    /// The byte writer writes what serde_json writes, for every kind of byte in every string
    /// field and every field present or absent (the ids, random, are masked).
    #[test]
    fn the_byte_writer_writes_what_serde_json_writes() {
        use crate::hooks::HookOutcome;
        let (odd, base) = crate::hooks::outcome::odd_text_and_report();
        let texts = ["", "plain", "a\"b\\c\nd\te\u{0}\u{1f}", odd.as_str(), "{\"type\":\"ArchiveResult\",\"status\":\"failed\",\"output_str\":\"x\\ny\"}\nnot json ArchiveResult\n"];
        let mask = |b: Vec<u8>| -> String {
            let s = String::from_utf8(b).expect("UTF-8");
            // `"id":"<33>"` and `"process_id":"<33>"`: random.
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(i) = rest.find("id\":\"") {
                out.push_str(&rest[..i + 5]);
                out.push_str("ID");
                rest = &rest[i + 5 + 33..];
            }
            out.push_str(rest);
            out
        };
        let mut n = 0;
        for (k, text) in texts.iter().enumerate() {
            for variant in 0..6 {
                let mut r = base.clone();
                match variant {
                    1 => {
                        r.pid = None;
                        r.started_at = None;
                        r.exit_code = Some(137);
                    }
                    2 => {
                        r.outcome = HookOutcome::Unkillable;
                        r.error = Some(text.to_string());
                    }
                    3 => r.outcome = HookOutcome::Error,
                    4 => {
                        r.output_files = std::sync::Arc::from(vec![text.to_string(), "b/c".into()]);
                        r.cmd = vec![text.to_string()];
                        r.name = text.to_string();
                        r.pid = Some(0);
                    }
                    _ => r.error = Some(String::new()),
                }
                let (out, err) = (texts[(k + variant) % texts.len()], *text);
                assert_eq!(mask(records(&r, out, err)), mask(records_serde(&r, out, err)), "text {k}, variant {variant}");
                n += 1;
            }
        }
        assert_eq!(n, 30);
    }
}
