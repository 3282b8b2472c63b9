//! `launch`: a pidfile written for a process the caller spawned validates as that process, and
//! is never overwritten while that process lives — in both formats.

mod common;

use std::time::Duration;

use common::{spawn_group, wait_for, TempDir};
use pidguard::launch::{self, RecordFormat};
use pidguard::{check_pid_file, CheckReason, ErrorKind, ExitCode, Verdict, DEFAULT_TOLERANCE};

#[test]
fn abx_dl_record_of_a_spawned_child_is_valid_and_held_until_it_exits() {
    let dir = TempDir::new("launch-abx");
    let pidfile = dir.path().join("on_x.bg.pid");
    launch::ensure_vacant(&pidfile, RecordFormat::AbxDl).expect("a missing pidfile is vacant");

    let mut child = spawn_group("exec sleep infinity");
    // The recorded argv is the one the process runs once bash has exec'd: a token-less reader
    // (no xattrs) checks it against the .sh file.
    let cmdline = format!("/proc/{}/cmdline", child.pid());
    assert!(wait_for(Duration::from_secs(10), || std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"sleep\0"))));
    let argv = ["sleep", "infinity"];
    launch::record(&pidfile, child.pid(), launch::now(), &argv, RecordFormat::AbxDl, &[]).unwrap();

    let sh = std::fs::read_to_string(dir.path().join("on_x.bg.sh")).unwrap();
    assert_eq!(sh, "#!/bin/bash\nsleep infinity\n");
    let c = check_pid_file(&pidfile, Some(&dir.path().join("on_x.bg.sh")), DEFAULT_TOLERANCE);
    assert!(c.valid, "{c:?}");
    if c.token.is_some() {
        assert_eq!(c.judgement.map(|j| j.verdict), Some(Verdict::Match));
    } else {
        eprintln!("note: no user xattrs on {}: the record has no token", dir.path().display());
    }

    let e = launch::ensure_vacant(&pidfile, RecordFormat::AbxDl).expect_err("a live holder keeps its pidfile");
    assert_eq!(e.kind(), ErrorKind::Held);
    assert_eq!(e.pid(), Some(child.pid()));
    assert_eq!(ExitCode::for_error(&e), ExitCode::Refused);

    child.0.kill().unwrap();
    child.0.wait().unwrap();
    launch::ensure_vacant(&pidfile, RecordFormat::AbxDl).expect("the holder is gone: vacant");
    assert_eq!(check_pid_file(&pidfile, None, DEFAULT_TOLERANCE).reason, CheckReason::Gone);
}

#[test]
fn record_existing_validates_a_process_started_earlier() {
    let dir = TempDir::new("launch-existing");
    let pidfile = dir.path().join("svc.pid");
    let child = spawn_group("exec sleep infinity");
    let cmdline = format!("/proc/{}/cmdline", child.pid());
    assert!(wait_for(Duration::from_secs(10), || std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"sleep\0"))));
    launch::record_existing(&pidfile, child.pid(), RecordFormat::AbxDl).unwrap();
    let c = check_pid_file(&pidfile, Some(&dir.path().join("svc.sh")), DEFAULT_TOLERANCE);
    assert!(c.valid, "{c:?}");
    assert_eq!(
        launch::record_existing(&pidfile, 0, RecordFormat::AbxDl).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn guard_record_of_a_spawned_child_is_held_until_it_exits() {
    let dir = TempDir::new("launch-guard");
    let path = dir.path().join("run").join("svc.json");
    let mut child = spawn_group("sleep infinity");
    launch::record(&path, child.pid(), launch::now(), &[] as &[&str], RecordFormat::Guard, &[("name".into(), "svc".into())]).unwrap();
    let v = pidguard::guard::check(&path).unwrap();
    assert_eq!(v.entry.as_ref().map(|e| e.pid), Some(child.pid()));
    assert_eq!(v.identity.map(|j| j.verdict), Some(Verdict::Match));
    let e = launch::ensure_vacant(&path, RecordFormat::Guard).expect_err("held");
    assert_eq!(e.kind(), ErrorKind::Held);

    child.0.kill().unwrap();
    child.0.wait().unwrap();
    launch::ensure_vacant(&path, RecordFormat::Guard).expect("stale: vacant");
    // A new start replaces the stale record by content.
    let other = spawn_group("sleep infinity");
    launch::record(&path, other.pid(), launch::now(), &[] as &[&str], RecordFormat::Guard, &[]).unwrap();
    assert_eq!(pidguard::guard::check(&path).unwrap().entry.map(|e| e.pid), Some(other.pid()));
}
