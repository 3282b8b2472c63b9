//! A record whose first process exited while its scope still runs (a launcher that exits once
//! the browser is up): probing it, pinning it and asking its status leave every process alive.
//! Before, `pin_pid_file` stopped such a scope before answering, so a sweep's "is this session
//! in use?" killed the browsers of sessions in use.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{alive, wait_for, TempDir};
use pidguard::launch::{self, ScopeMode, SpawnOptions};
use pidguard::ops::Answer;
use pidguard::{CheckOptions, PidFilePin, StopOptions};

fn reap(pid: i32) {
    let mut st = 0;
    // SAFETY: `pid` is our own child (the command or the supervisor); `st` is writable.
    unsafe { libc::waitpid(pid, &mut st, 0) };
}

fn case(scope: ScopeMode) {
    let dir = TempDir::new("probe-never-acts");
    let pidfile = dir.path().join("launcher.pid");
    // The launcher starts a long-lived child in its scope, says its pid, and exits.
    let script = "sleep infinity & echo $! > child.pid.tmp && mv child.pid.tmp child.pid";
    let opts = SpawnOptions { scope, cwd: Some(dir.path().to_path_buf()), ..Default::default() };
    let s = match launch::spawn(&pidfile, &["sh", "-c", script], &opts) {
        Ok(s) => s,
        Err(e) if scope == ScopeMode::Cgroup => {
            eprintln!("skipped: no cgroup v2 leaf can be made here: {e}");
            return;
        }
        Err(e) => panic!("spawn: {e}"),
    };
    assert!(s.scope_record.is_some(), "{:?}", s.note);
    let child_file = dir.path().join("child.pid");
    let read = |p: &Path| std::fs::read_to_string(p).ok().and_then(|t| t.trim().parse::<i32>().ok());
    assert!(wait_for(Duration::from_secs(20), || read(&child_file).is_some()), "no child");
    let child = read(&child_file).unwrap();
    // The launcher exits; in a cgroup leaf it is our own child: reap it, so its record is gone.
    if scope == ScopeMode::Cgroup {
        reap(s.pid);
    }
    assert!(wait_for(Duration::from_secs(20), || !alive(s.pid)), "the launcher did not exit");

    let probe = pidguard::probe_pid_file(&pidfile, &CheckOptions::default()).expect("probe");
    assert!(alive(child), "{scope:?}: the probe signalled the scope");
    assert_eq!(probe.answer, Answer::Running, "{scope:?}: {probe:?}");
    assert!(probe.in_use() && probe.scope_members >= Some(1), "{scope:?}: {probe:?}");

    let status = pidguard::probe::status_pid_file(&pidfile, &CheckOptions::default()).expect("status");
    assert!(alive(child), "{scope:?}: status signalled the scope");
    assert!(status.running(), "{scope:?}: {status:?}");

    let pin = pidguard::pin_pid_file(&pidfile, None, pidguard::DEFAULT_TOLERANCE).expect("pin");
    assert!(alive(child), "{scope:?}: pin_pid_file signalled the scope: {pin:?}");
    assert!(pidfile.exists(), "{scope:?}: pin_pid_file retired the record of a running scope");
    let h = match pin {
        PidFilePin::Pinned(h) => h,
        PidFilePin::Left(r) => panic!("{scope:?}: no handle for a running scope: {r:?}"),
    };
    assert_eq!(h.scope_kind(), s.scope);
    assert!(h.has_exited() && h.pidfd_raw().is_none());
    // The handle reaches the scope when the caller asks: a termination stops the child.
    let t = h
        .terminate(&pidguard::TerminateOptions { schedule: "TERM/10/KILL/10".parse().unwrap(), group: true, reap: false })
        .expect("terminate");
    assert!(!alive(child), "{scope:?}: the scope-only handle did not reach the scope: {t:?}");
    let _ = pidguard::stop_pid_file(&pidfile, &StopOptions::default());
    reap(s.supervisor_pid.unwrap_or(s.pid));
}

#[test]
fn under_a_supervisor() {
    case(ScopeMode::Supervisor);
}

#[test]
fn in_a_cgroup_leaf() {
    case(ScopeMode::Cgroup);
}
