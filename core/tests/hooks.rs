//! `cleanup_background_hooks` on real hooks (the cleanup of abx-dl's `process_utils`).

mod common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use pidguard::*;

/// Start a hook the way abx-dl's spawner does.
fn spawn_hook(dir: &Path, name: &str, argv: &[&str]) -> Proc {
    fs::create_dir_all(dir).unwrap();
    write_cmd_file(&dir.join(format!("{name}.sh")), argv).unwrap();
    let out = fs::File::create(dir.join(format!("{name}.stdout.log"))).unwrap();
    let err = fs::File::create(dir.join(format!("{name}.stderr.log"))).unwrap();
    let child = Command::new(argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .unwrap();
    write_pid_file_with_mtime(&dir.join(format!("{name}.pid")), child.id() as i32, now()).unwrap();
    Proc(child)
}

/// Overwrite the token xattr of a pidfile (as another writer would have stored it).
pub fn set_token_xattr(path: &Path, value: &str) {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = std::ffi::CString::new(TOKEN_XATTR).unwrap();
    // SAFETY: valid NUL-terminated strings and a byte buffer of the given length.
    let r = unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
    assert_eq!(r, 0, "setxattr: {}", std::io::Error::last_os_error());
}

/// A pid that named our own child, now reaped: no process of ours holds it.
fn reaped_pid() -> i32 {
    let mut c = Command::new("true").spawn().unwrap();
    let p = c.id() as i32;
    c.wait().unwrap();
    p
}

/// A stale hook's four files in `dir`: its `.sh`, empty logs and a bare pidfile naming `dead`.
fn stale_hook(dir: &Path, name: &str, dead: i32) {
    write_cmd_file(&dir.join(format!("{name}.sh")), &["sleep", "1"]).unwrap();
    fs::write(dir.join(format!("{name}.stdout.log")), "").unwrap();
    fs::write(dir.join(format!("{name}.stderr.log")), "").unwrap();
    fs::write(dir.join(format!("{name}.pid")), dead.to_string()).unwrap();
}

fn fast() -> CleanupOptions {
    CleanupOptions { schedule: "TERM/0.5/KILL/2".parse().unwrap(), is_tty: true, ..Default::default() }
}

#[test]
fn cleanup_stops_hooks_and_writes_index_lines() {
    let d = TempDir::new("cleanup");
    let out = d.path().join("snap");
    let a = spawn_hook(&out.join("plugin_a"), "on_Snapshot__10_a.bg", &["sleep", "infinity"]);
    let b = spawn_hook(
        &out.join("plugin_b"),
        "on_Snapshot__20_b.bg",
        &["bash", "-c", "trap '' TERM; echo out > result.txt; echo '{\"type\": \"ArchiveResult\", \"status\": \"succeeded\", \"output_str\": \"did it\"}'; echo oops >&2; sleep infinity & sleep infinity & wait"],
    );
    let (apid, bpid) = (a.pid(), b.pid());
    assert!(wait_for(Duration::from_secs(5), || group_members(bpid).len() == 3));
    let index = d.path().join("index.jsonl");
    let opts = CleanupOptions { index_path: Some(index.clone()), ..fast() };
    let reports = cleanup_background_hooks(&out, &opts, None).unwrap();
    assert_eq!(reports.len(), 2);
    let ra = reports.iter().find(|r| r.pid == Some(apid)).unwrap();
    let rb = reports.iter().find(|r| r.pid == Some(bpid)).unwrap();
    assert_eq!(ra.outcome, HookOutcome::Exited(Signal::TERM));
    assert_eq!(rb.outcome, HookOutcome::Exited(Signal::KILL));
    assert_eq!(ra.exit_code, Some(128 + 15));
    assert!(group_members(apid).is_empty() && group_members(bpid).is_empty());
    assert_eq!(rb.output_files.to_vec(), vec!["result.txt".to_string()]);
    assert_eq!(rb.cmd[0], "bash");
    // Pidfiles and logs removed on success, .sh kept.
    for (dir, name) in [("plugin_a", "on_Snapshot__10_a.bg"), ("plugin_b", "on_Snapshot__20_b.bg")] {
        let base = out.join(dir);
        assert!(!base.join(format!("{name}.pid")).exists());
        assert!(!base.join(format!("{name}.stdout.log")).exists());
        assert!(!base.join(format!("{name}.stderr.log")).exists());
        assert!(base.join(format!("{name}.sh")).exists());
    }
    let lines: Vec<serde_json::Value> =
        fs::read_to_string(&index).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    let procs: Vec<_> = lines.iter().filter(|v| v["type"] == "Process").collect();
    let results: Vec<_> = lines.iter().filter(|v| v["type"] == "ArchiveResult").collect();
    assert_eq!((procs.len(), results.len()), (2, 2));
    let rb_json = results.iter().find(|v| v["hook_name"] == "on_Snapshot__20_b.bg").unwrap();
    assert_eq!(rb_json["status"], "succeeded");
    assert_eq!(rb_json["output_str"], "did it");
    assert_eq!(rb_json["plugin"], "plugin_b");
    assert_eq!(rb_json["output_files"], serde_json::json!(["result.txt"]));
    let pb = procs.iter().find(|v| v["id"] == rb_json["process_id"]).unwrap();
    assert_eq!(pb["pid"], bpid);
    assert_eq!(pb["cmd"][0], "bash");
    assert!(pb["stderr"].as_str().unwrap().contains("oops"));
    let id = pb["id"].as_str().unwrap();
    assert_eq!(id.len(), 12 + 1 + 20);
    assert_eq!(&id[12..13], "-");
}

#[test]
fn stale_record_naming_a_live_bystander_sends_nothing() {
    // The pidfile names a live group leader whose identity differs (a reused pid).
    let d = TempDir::new("stale");
    let dir = d.path().join("p");
    fs::create_dir_all(&dir).unwrap();
    let by = spawn_group("sleep infinity & sleep infinity & wait");
    assert!(wait_for(Duration::from_secs(5), || group_members(by.pid()).len() == 3));
    let pf = dir.join("on_Snapshot__x.bg.pid");
    write_pid_file_with_mtime(&pf, by.pid(), now() - 3600.0).unwrap();
    let reports = cleanup_background_hooks(d.path(), &fast(), None).unwrap();
    assert_eq!(reports[0].outcome, HookOutcome::Stale);
    assert_eq!(reports[0].reason, CheckReason::MtimeSkew);
    assert!(reports[0].signals.is_empty());
    assert_eq!(reports[0].unverified_leftovers.len(), 3);
    assert!(!pf.exists());
    assert_eq!(group_members(by.pid()).len(), 3);
}

#[test]
fn foreign_and_unreadable_records_are_left_alone() {
    let d = TempDir::new("foreign");
    let p = spawn_group("exec sleep infinity");
    let pf = d.path().join("on_f.bg.pid");
    write_pid_file_with_mtime(&pf, p.pid(), now()).unwrap();
    // Rewrite the token as if another machine had written the record (another machine id and
    // boot id: an equal boot id alone proves the same kernel).
    let c = check_pid_file(&pf, None, 5.0);
    let mut t = c.token.unwrap();
    t.machine_id = "another-host".into();
    t.boot_id = "00000000-0000-4000-8000-000000000000".into();
    set_token_xattr(&pf, &t.to_string());
    let dir_named_like_a_pidfile = d.path().join("on_d.bg.pid");
    fs::create_dir(&dir_named_like_a_pidfile).unwrap();
    let sym = d.path().join("on_s.bg.pid");
    std::os::unix::fs::symlink("/etc/hostname", &sym).unwrap();
    let reports = cleanup_background_hooks(d.path(), &CleanupOptions { no_finalize: true, ..fast() }, None).unwrap();
    let rf = reports.iter().find(|r| r.pid_file == pf).unwrap();
    assert_eq!(rf.outcome, HookOutcome::Foreign);
    assert!(pf.exists());
    let rs = reports.iter().find(|r| r.pid_file == sym).unwrap();
    assert_eq!(rs.outcome, HookOutcome::Unreadable);
    assert!(fs::symlink_metadata(&sym).is_ok());
    let rd = reports.iter().find(|r| r.pid_file == dir_named_like_a_pidfile).expect("a directory named like a pidfile is reported");
    assert_eq!(rd.outcome, HookOutcome::Unreadable);
    assert!(dir_named_like_a_pidfile.is_dir());
    assert!(alive(p.pid()));
}

#[test]
fn zombie_leader_with_live_children_gets_its_group_stopped() {
    // The hook's leader exited (unreaped: it is our child) but left workers in its group.
    let d = TempDir::new("zleader");
    let dir = d.path().join("z");
    let mut c = spawn_hook(&dir, "on_z.bg", &["bash", "-c", "sleep infinity & sleep infinity & exit 7"]);
    let pid = c.pid();
    assert!(wait_for(Duration::from_secs(5), || !alive(pid) && group_members(pid).len() == 2));
    let reports = cleanup_background_hooks(d.path(), &CleanupOptions { no_finalize: true, ..fast() }, None).unwrap();
    assert_eq!(reports[0].outcome, HookOutcome::Exited(Signal::TERM), "{:?}", reports[0]);
    assert_eq!(reports[0].exit_code, Some(7));
    assert!(group_members(pid).is_empty());
    // Left waitable for the code that spawned it (WNOWAIT).
    assert_eq!(c.0.wait().unwrap().code(), Some(7));
}

#[test]
fn finalize_callback_errors_are_reported() {
    let d = TempDir::new("fin");
    let dir = d.path().join("f");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("on_gone.bg.pid"), "999999").unwrap();
    let mut seen = Vec::new();
    let mut cb = |r: &HookReport| -> Result<(), String> {
        seen.push(r.name.clone());
        Err("callback failed".into())
    };
    let reports = cleanup_background_hooks(d.path(), &fast(), Some(&mut cb)).unwrap();
    assert_eq!(seen, vec!["on_gone.bg".to_string()]);
    assert!(reports[0].error.as_deref().unwrap().contains("callback failed"));
}

#[test]
fn missing_directory_is_an_error() {
    let e = cleanup_background_hooks(Path::new("/nonexistent/pidguard"), &fast(), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

#[test]
fn bad_cleanup_options_are_refused_before_anything_is_touched() {
    let d = TempDir::new("badopts");
    let pf = d.path().join("on_gone.bg.pid");
    fs::write(&pf, "999999").unwrap();
    for opts in [
        CleanupOptions { tolerance: -1.0, ..fast() },
        CleanupOptions { tolerance: f64::NAN, ..fast() },
        CleanupOptions { pattern: String::new(), ..fast() },
        CleanupOptions { pattern: "a/on_*.pid".into(), ..fast() },
    ] {
        let e = cleanup_background_hooks(d.path(), &opts, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{opts:?}");
        assert!(pf.exists(), "nothing is removed on bad input");
    }
}

/// Enough stale hooks for the cleanup's thread pool, several to a directory: every record is
/// retired, each hook's two index lines arrive together and whole (Process, then its
/// ArchiveResult), the reports come back sorted by pidfile path, and the hooks of one directory
/// share one output list that holds the directory's real output and none of the hooks' own files.
#[test]
fn many_stale_hooks_keep_index_lines_whole_and_share_one_listing_per_directory() {
    let d = TempDir::new("pool");
    let out = d.path().join("snap");
    // A pid that named our own child, reaped: stale whatever holds the number now (the record
    // has no token and its mtime is a minute off).
    let dead = reaped_pid();
    let n = PARALLEL_MIN_HOOKS * 2;
    for i in 0..n {
        let dir = out.join(format!("plugin{}", i % 4));
        fs::create_dir_all(&dir).unwrap();
        let name = format!("on_Snapshot__{i:03}_x.bg");
        write_cmd_file(&dir.join(format!("{name}.sh")), &["sleep", "1"]).unwrap();
        fs::write(dir.join(format!("{name}.stdout.log")), format!("hook {i}\n")).unwrap();
        fs::write(dir.join(format!("{name}.stderr.log")), "").unwrap();
        write_pid_file_with_mtime(&dir.join(format!("{name}.pid")), dead, now() - 60.0).unwrap();
    }
    for p in 0..4 {
        fs::write(out.join(format!("plugin{p}")).join("result.txt"), "r").unwrap();
    }
    let index = d.path().join("index.jsonl");
    let reports = cleanup_background_hooks(&out, &CleanupOptions { index_path: Some(index.clone()), ..fast() }, None).unwrap();
    assert_eq!(reports.len(), n);
    assert!(reports.windows(2).all(|w| w[0].pid_file < w[1].pid_file), "reports sorted by pidfile path");
    for r in &reports {
        assert_eq!(r.outcome, HookOutcome::Stale, "{r:?}");
        assert!(r.pid_file_removed && r.signals.is_empty());
        assert_eq!(r.output_files.to_vec(), vec!["result.txt".to_string()], "{}", r.name);
    }
    let first = &reports[0];
    for r in reports.iter().filter(|r| r.dir == first.dir) {
        assert!(std::sync::Arc::ptr_eq(&r.output_files, &first.output_files), "one list per directory");
    }
    let text = fs::read_to_string(&index).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).expect("a whole JSON line")).collect();
    assert_eq!(lines.len(), 2 * n);
    let mut seen = std::collections::HashSet::new();
    for pair in lines.chunks(2) {
        assert_eq!((pair[0]["type"].as_str(), pair[1]["type"].as_str()), (Some("Process"), Some("ArchiveResult")));
        assert_eq!(pair[1]["process_id"], pair[0]["id"]);
        let name = pair[1]["hook_name"].as_str().unwrap();
        let i: usize = name["on_Snapshot__".len()..][..3].parse().unwrap();
        assert_eq!(pair[0]["stdout"], format!("hook {i}\n"), "the Process line is its own hook's");
        assert!(seen.insert(i));
    }
    assert_eq!(seen.len(), n);
}

#[test]
fn a_stale_hooks_logs_are_read_only_when_regular_and_a_planted_link_or_fifo_is_never_opened() {
    // Each log is looked at (fstatat, no link followed) before it is opened: a symlink to a
    // secret and a FIFO are reported, not read (nothing blocks, nothing of the secret reaches the
    // index), an empty log gives an empty field, a non-empty one its text; on success the
    // links themselves are unlinked, never their targets.
    let d = TempDir::new("logs");
    let out = d.path().join("snap");
    let dead = reaped_pid();
    let secret = d.path().join("secret");
    fs::write(&secret, "TOP-SECRET\n").unwrap();
    let cases = [("a", "link", "empty"), ("b", "fifo", "text"), ("c", "text", "empty")];
    for (tag, out_kind, err_kind) in cases {
        let dir = out.join(format!("plugin_{tag}"));
        fs::create_dir_all(&dir).unwrap();
        let name = format!("on_Snapshot__{tag}.bg");
        write_cmd_file(&dir.join(format!("{name}.sh")), &["sleep", "1"]).unwrap();
        for (which, kind) in [("stdout", out_kind), ("stderr", err_kind)] {
            let p = dir.join(format!("{name}.{which}.log"));
            match kind {
                "link" => std::os::unix::fs::symlink(&secret, &p).unwrap(),
                "fifo" => assert!(Command::new("mkfifo").arg(&p).status().unwrap().success()),
                "text" => fs::write(&p, format!("{which} of {tag}\n")).unwrap(),
                _ => fs::write(&p, "").unwrap(),
            }
        }
        write_pid_file_with_mtime(&dir.join(format!("{name}.pid")), dead, now() - 60.0).unwrap();
    }
    let index = d.path().join("index.jsonl");
    let (tx, rx) = std::sync::mpsc::channel();
    let (o, i) = (out.clone(), index.clone());
    std::thread::spawn(move || {
        let r = cleanup_background_hooks(&o, &CleanupOptions { index_path: Some(i), ..fast() }, None);
        let _ = tx.send(r);
    });
    let reports = rx.recv_timeout(Duration::from_secs(20)).expect("a FIFO log blocked the cleanup").unwrap();
    assert_eq!(reports.len(), 3);
    let by = |tag: &str| reports.iter().find(|r| r.name == format!("on_Snapshot__{tag}.bg")).unwrap();
    assert_eq!(by("a").notes, vec!["stdout log is a symbolic link: not read".to_string()]);
    assert_eq!(by("b").notes, vec!["stdout log is not a regular file: not read".to_string()]);
    assert!(by("c").notes.is_empty(), "{:?}", by("c").notes);
    let text = fs::read_to_string(&index).unwrap();
    assert!(!text.contains("TOP-SECRET"), "a linked file reached the index");
    let procs: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).filter(|v| v["type"] == "Process").collect();
    let proc_of = |tag: &str| procs.iter().find(|p| p["pwd"].as_str().unwrap().ends_with(&format!("plugin_{tag}"))).unwrap();
    assert_eq!((proc_of("a")["stdout"].as_str(), proc_of("a")["stderr"].as_str()), (Some(""), Some("")));
    assert_eq!((proc_of("b")["stdout"].as_str(), proc_of("b")["stderr"].as_str()), (Some(""), Some("stderr of b\n")));
    assert_eq!((proc_of("c")["stdout"].as_str(), proc_of("c")["stderr"].as_str()), (Some("stdout of c\n"), Some("")));
    for r in &reports {
        assert!(r.pid_file_removed, "{r:?}");
        assert!(!r.dir.join(format!("{}.stdout.log", r.name)).exists() && fs::symlink_metadata(r.dir.join(format!("{}.stdout.log", r.name))).is_err());
    }
    assert_eq!(fs::read_to_string(&secret).unwrap(), "TOP-SECRET\n", "the link's target is untouched");
}

/// Two hooks of one directory whose names sort differently from their pidfiles' (`on_x` is a
/// prefix of `on_x-y`, while `on_x-y.pid` sorts before `on_x.pid`): both hooks' own files are
/// left out of both reports' `output_files`, and the directory's other file is in.
#[test]
fn a_directory_finished_during_the_walk_lists_only_its_outputs() {
    let d = TempDir::new("cleanup-leaf-outputs");
    let out = d.path().join("snap");
    let dir = out.join("plugin");
    fs::create_dir_all(&dir).unwrap();
    let dead = reaped_pid();
    for name in ["on_x", "on_x-y"] {
        stale_hook(&dir, name, dead);
    }
    fs::write(dir.join("result.txt"), "r").unwrap();
    let reports = cleanup_background_hooks(&out, &fast(), None).unwrap();
    assert_eq!(reports.len(), 2);
    for r in &reports {
        assert_eq!(r.outcome, HookOutcome::Stale, "{r:?}");
        assert_eq!(r.output_files.to_vec(), vec!["result.txt".to_string()], "{r:?}");
    }
}

/// A hook whose directory has a subdirectory with a hook of its own, both stale, with an index:
/// the subdirectory's hook is finished during the walk and its report waits in the batch of
/// index records until after the walk; its four files are still no output of the hook above
/// (found by the attack pass of issue 28's second round; before, they were listed with an
/// index and left out without one).
#[test]
fn a_finished_hook_below_another_is_not_its_output() {
    for with_index in [true, false] {
        let d = TempDir::new("cleanup-nested-outputs");
        let out = d.path().join("snap");
        let top = out.join("plugin");
        let sub = top.join("sub");
        fs::create_dir_all(&sub).unwrap();
        let dead = reaped_pid();
        for (dir, name) in [(&top, "on_p"), (&sub, "on_s")] {
            stale_hook(dir, name, dead);
        }
        fs::write(sub.join("result.txt"), "r").unwrap();
        let index = d.path().join("index.jsonl");
        let opts = CleanupOptions { index_path: with_index.then(|| index.clone()), ..fast() };
        let reports = cleanup_background_hooks(&out, &opts, None).unwrap();
        assert_eq!(reports.len(), 2);
        let p = reports.iter().find(|r| r.name == "on_p").unwrap();
        assert_eq!(p.output_files.to_vec(), vec!["sub/result.txt".to_string()], "index {with_index}: {p:?}");
        let s = reports.iter().find(|r| r.name == "on_s").unwrap();
        assert_eq!(s.output_files.to_vec(), vec!["result.txt".to_string()], "index {with_index}: {s:?}");
    }
}
