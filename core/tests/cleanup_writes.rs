//! What root's cleanup writes into a tree and an index that users share: bounded by the bytes
//! written (not read), each hook once however many cleanups run, names that tell two files
//! apart. The races are played at `sys::fault` points, so each test is deterministic.

mod common;

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use common::TempDir;
use pidguard::sys::fault::{self, Point};
use pidguard::*;

fn write_stale(path: &Path, pid: i32) {
    fs::write(path, pid.to_string()).unwrap();
    let t = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    fs::File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
}

fn dead_pid() -> i32 {
    let max: i32 = fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    (2..=max).rev().find(|p| !Path::new(&format!("/proc/{p}")).exists()).unwrap()
}

fn opts(index: &Path) -> CleanupOptions {
    CleanupOptions {
        index_path: Some(index.to_path_buf()),
        is_tty: true,
        schedule: "TERM/0.5/KILL/2".parse().unwrap(),
        ..Default::default()
    }
}

/// The index's records, parsed (every line must be one JSON object).
fn records(index: &Path) -> Vec<serde_json::Value> {
    let text = fs::read_to_string(index).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "the index ends with a partial line");
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a whole record ({e}): {:.200}", l))).collect()
}

/// A sparse log of NUL bytes takes six bytes per byte in JSON (`\u0000`): the bound is on what
/// is appended. One hook's 16 MiB sparse stdout log appended at most `MAX_LOG_BYTES` (plus the
/// record's own fields) — it appended 96 MiB when the bound was on the bytes read.
#[test]
fn a_sparse_log_appends_at_most_max_log_bytes_to_the_index() {
    let d = TempDir::new("sparse");
    let p = d.path().join("snap/p");
    fs::create_dir_all(&p).unwrap();
    write_stale(&p.join("on_S__1.bg.pid"), dead_pid());
    fs::File::create(p.join("on_S__1.bg.stdout.log")).unwrap().set_len(hooks::MAX_LOG_BYTES).unwrap();
    fs::write(p.join("on_S__1.bg.stderr.log"), "a \"quoted\" line\n").unwrap();
    let index = d.path().join("index.jsonl");
    let reports = cleanup_background_hooks(&d.path().join("snap"), &opts(&index), None).unwrap();
    let size = fs::metadata(&index).unwrap().len();
    assert!(size <= hooks::MAX_LOG_BYTES + (64 << 10), "one sparse log appended {size} bytes");
    let recs = records(&index);
    assert_eq!(recs.len(), 2);
    let stdout = recs[0]["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("\0\0\0") && stdout.contains("[pidguard: log truncated"), "{:.100}", stdout);
    assert_eq!(recs[0]["stderr"], "a \"quoted\" line\n", "a short log is whole");
    assert!(reports[0].notes.iter().any(|n| n.contains("stdout log truncated")), "{:?}", reports[0].notes);
    assert!(reports[0].pid_file_removed && !p.join("on_S__1.bg.stdout.log").exists(), "{:?}", reports[0]);
}

/// Five hooks of 16 MiB sparse logs: the cleanup's total bound is on bytes appended too (it
/// appended ~400 MB, six times `MAX_INDEX_LOG_BYTES`, when it counted bytes read).
#[test]
fn sparse_logs_of_many_hooks_append_at_most_max_index_log_bytes() {
    let d = TempDir::new("sparse5");
    let snap = d.path().join("snap");
    for i in 0..5 {
        let p = snap.join(format!("p{i}"));
        fs::create_dir_all(&p).unwrap();
        write_stale(&p.join(format!("on_S__{i}.bg.pid")), dead_pid());
        fs::File::create(p.join(format!("on_S__{i}.bg.stdout.log"))).unwrap().set_len(hooks::MAX_LOG_BYTES).unwrap();
    }
    let index = d.path().join("index.jsonl");
    cleanup_background_hooks(&snap, &opts(&index), None).unwrap();
    let size = fs::metadata(&index).unwrap().len();
    assert!(size <= hooks::MAX_INDEX_LOG_BYTES + (64 << 10), "five sparse logs appended {size} bytes");
    assert_eq!(records(&index).len(), 10);
}

/// Two cleanups of one tree at once: the second runs to its end while the first is between
/// judging its first hook and finishing it. Each hook is indexed once, with its logs (the
/// first cleanup's claim on each pidfile fails: it finalizes none of them), where each cleanup
/// used to write every hook's records, the late one with empty logs.
#[test]
fn two_cleanups_at_once_index_each_hook_once() {
    let d = TempDir::new("twice");
    let snap = d.path().join("snap");
    let hooks = 3;
    for i in 0..hooks {
        let p = snap.join(format!("p{i}"));
        fs::create_dir_all(&p).unwrap();
        write_stale(&p.join(format!("on_S__{i}.bg.pid")), dead_pid());
        fs::write(p.join(format!("on_S__{i}.bg.stdout.log")), format!("OUT-{i}\n")).unwrap();
    }
    let index = d.path().join("index.jsonl");
    let (snap2, index2) = (snap.clone(), index.clone());
    let ran = std::rc::Rc::new(std::cell::Cell::new(false));
    let ran2 = ran.clone();
    let fired = common::race_at(Point::BeforeHookFinish, move || {
        if !ran2.replace(true) {
            let (s, i) = (snap2.clone(), index2.clone());
            let other = std::thread::spawn(move || cleanup_background_hooks(&s, &opts(&i), None).unwrap());
            let theirs = other.join().unwrap();
            assert!(theirs.iter().all(|r| r.pid_file_removed), "{theirs:?}");
        }
    });
    let ours = cleanup_background_hooks(&snap, &opts(&index), None);
    fault::clear_point_hook();
    let ours = ours.unwrap();
    assert!(fired.get() >= 1);
    let recs = records(&index);
    let mut per_hook: HashMap<String, usize> = HashMap::new();
    for r in recs.iter().filter(|r| r["type"] == "ArchiveResult") {
        *per_hook.entry(r["hook_name"].as_str().unwrap().to_string()).or_default() += 1;
    }
    assert_eq!(per_hook.len(), hooks, "{per_hook:?}");
    assert!(per_hook.values().all(|&n| n == 1), "hooks indexed more than once: {per_hook:?}");
    for r in recs.iter().filter(|r| r["type"] == "Process") {
        assert!(r["stdout"].as_str().unwrap().starts_with("OUT-"), "a record with empty logs: {r}");
    }
    assert!(ours.iter().all(|r| !r.pid_file_removed && r.notes.iter().any(|n| n.contains("not retired by this cleanup"))), "{ours:?}");
}

/// Names that are not UTF-8 keep apart in every report and in the index: `on_a<0xff>` and
/// `on_a<0xfe>` (both U+FFFD when decoded lossily) read `on_a\xff.bg` and `on_a\xfe.bg`, and a
/// real backslash is doubled, so `on_a\xff` spelled with one is a third name.
#[test]
fn non_utf8_names_read_apart_in_reports_and_the_index() {
    use std::os::unix::ffi::OsStrExt;
    let d = TempDir::new("names");
    let p = d.path().join("snap/p");
    fs::create_dir_all(&p).unwrap();
    let names: [&[u8]; 3] = [b"on_a\xff.bg", b"on_a\xfe.bg", b"on_a\\xff.bg"];
    for n in names {
        let mut f = n.to_vec();
        f.extend_from_slice(b".pid");
        write_stale(&p.join(std::ffi::OsStr::from_bytes(&f)), dead_pid());
    }
    fs::write(p.join(std::ffi::OsStr::from_bytes(b"out\xff.txt")), "x").unwrap();
    let index = d.path().join("index.jsonl");
    let reports = cleanup_background_hooks(&d.path().join("snap"), &opts(&index), None).unwrap();
    let mut got: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
    got.sort();
    assert_eq!(got, ["on_a\\\\xff.bg", "on_a\\xfe.bg", "on_a\\xff.bg"]);
    assert_eq!(&*reports[0].output_files, ["out\\xff.txt"]);
    let json: Vec<String> = reports.iter().map(|r| serde_json::to_string(&report::HookView::from(r)).unwrap()).collect();
    assert!(json.iter().any(|j| j.contains(r#""pid_file":""#) && j.contains(r"on_a\\xfe.bg.pid")), "{json:?}");
    let mut hook_names: Vec<String> =
        records(&index).iter().filter(|r| r["type"] == "ArchiveResult").map(|r| r["hook_name"].as_str().unwrap().to_string()).collect();
    hook_names.sort();
    assert_eq!(hook_names, ["on_a\\\\xff.bg", "on_a\\xfe.bg", "on_a\\xff.bg"]);
    assert_eq!(report::path_text(std::ffi::OsStr::from_bytes(b"a\\b\xc3")), "a\\\\b\\xc3");
    assert_eq!(report::printable("x\x1b]0;t\x07\ny\u{9b}"), "x\\x1b]0;t\\x07\\ny\\u{9b}");
}

const LOW_LIMIT_CHILD: &str = "stale_hooks_under_a_low_descriptor_limit_are_each_indexed_once";

/// Stale hooks one to a directory, many in one directory and a few in a directory with a
/// subdirectory, cleaned under `ulimit -n 24`: the hooks finished during the walk (each
/// holding its directory, its pidfile, and its records waiting in a batch) and those left to
/// the batches are each indexed once, with their logs, and their pidfiles and logs removed —
/// none is lost to a descriptor that could not be opened.
#[test]
fn stale_hooks_under_a_low_descriptor_limit_are_each_indexed_once() {
    if let Some(role) = common::child_role() {
        if role != LOW_LIMIT_CHILD {
            return;
        }
        let dir = std::env::var("PIDGUARD_DIR").unwrap();
        let index = std::env::var("PIDGUARD_INDEX").unwrap();
        let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
        r.rlim_cur = 24;
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) }, 0, "{}", std::io::Error::last_os_error());
        let reports = cleanup_background_hooks(Path::new(&dir), &opts(Path::new(&index)), None).unwrap();
        let odd: Vec<_> = reports.iter().filter(|r| r.outcome != HookOutcome::Stale || !r.pid_file_removed).map(|r| (&r.name, &r.outcome, &r.error)).collect();
        println!("low-limit-child: reports={} odd={odd:?}", reports.len());
        return;
    }
    let d = TempDir::new("low-limit");
    let snap = d.path().join("snap");
    let mut hooks = Vec::new();
    let mut add = |dir: &Path, name: String| {
        fs::create_dir_all(dir).unwrap();
        write_stale(&dir.join(format!("{name}.pid")), dead_pid());
        fs::write(dir.join(format!("{name}.stdout.log")), format!("OUT-{name}\n")).unwrap();
        fs::write(dir.join(format!("{name}.sh")), "#!/bin/bash\nsleep infinity\n").unwrap();
        hooks.push((dir.to_path_buf(), name));
    };
    for i in 0..150 {
        add(&snap.join(format!("p{i}")), format!("on_S__{i}.bg"));
    }
    for i in 0..80 {
        add(&snap.join("many"), format!("on_M__{i}.bg"));
    }
    for i in 0..5 {
        add(&snap.join("nested"), format!("on_N__{i}.bg"));
    }
    fs::create_dir_all(snap.join("nested/sub")).unwrap();
    let index = d.path().join("index.jsonl");
    let out = common::reexec(LOW_LIMIT_CHILD, &[], |c| {
        c.env("PIDGUARD_DIR", &snap).env("PIDGUARD_INDEX", &index);
    });
    assert!(out.status.success(), "child failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("low-limit-child:")).expect("summary").to_string();
    assert!(line.ends_with("odd=[]") && line.contains(&format!("reports={}", hooks.len())), "{line}");
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in records(&index) {
        if r["type"] == "Process" {
            let out = r["stdout"].as_str().unwrap();
            *seen.entry(out.trim_start_matches("OUT-").trim_end().to_string()).or_default() += 1;
        }
    }
    for (dir, name) in &hooks {
        assert_eq!(seen.get(name), Some(&1), "{name}: indexed {:?} times", seen.get(name));
        assert!(!dir.join(format!("{name}.pid")).exists() && !dir.join(format!("{name}.stdout.log")).exists(), "{name}");
    }
}
