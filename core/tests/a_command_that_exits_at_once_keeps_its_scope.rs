//! `launch::spawn` of a command that exits at once — a daemon's first process forks, `setsid`s
//! and exits — still records the command's start token and so its scope: the spawner reads the
//! token while the command is held before its exec. Without that, the command was often gone by
//! the time its pidfile was written (`true`: 14 of 20 spawns), the record went without its
//! token and its scope, the spawn said "no user xattrs", and the daemon left in the scope could
//! never be stopped (nor the cgroup leaf removed).

mod common;

use std::path::Path;
use std::time::Duration;

use common::{alive, wait_for, TempDir};
use pidguard::launch::{self, ScopeMode, SpawnOptions};
use pidguard::{stop_pid_file, StopOptions, StopOutcome};

fn reap(pid: i32) {
    let mut st = 0;
    // SAFETY: `pid` is our own child (the command or the supervisor); `st` is writable.
    unsafe { libc::waitpid(pid, &mut st, 0) };
}

fn leaf_possible() -> bool {
    let dir = TempDir::new("exits-probe");
    match launch::spawn(&dir.path().join("p.pid"), &["true"], &SpawnOptions { scope: ScopeMode::Cgroup, ..Default::default() }) {
        Ok(s) => {
            reap(s.pid);
            let _ = stop_pid_file(&dir.path().join("p.pid"), &StopOptions::default());
            true
        }
        Err(e) => {
            eprintln!("skipped: no cgroup v2 leaf can be made here: {e}");
            false
        }
    }
}

/// `true`, 20 times: every spawn records its scope, and a stop then finds it (and removes a leaf).
fn true_keeps_its_scope(scope: ScopeMode) {
    let dir = TempDir::new("exits-true");
    for i in 0..20 {
        let pidfile = dir.path().join(format!("t{i}.pid"));
        let s = launch::spawn(&pidfile, &["true"], &SpawnOptions { scope, ..Default::default() }).expect("spawn true");
        let recorded = s.scope_record.clone();
        let note = s.note.clone();
        // Reaped only after the record is judged: a reaped supervisor's scope is gone.
        let r = stop_pid_file(&pidfile, &StopOptions::default()).expect("stop");
        reap(s.supervisor_pid.unwrap_or(s.pid));
        assert!(recorded.is_some() && note.is_none(), "spawn {i} of `true` lost its scope: {note:?}");
        if scope == ScopeMode::Cgroup {
            // The leaf is found (its record was written), found empty, and removed.
            assert!(matches!(r.outcome, StopOutcome::AlreadyGone | StopOutcome::Exited(_)), "spawn {i}: {r:?}");
            assert_eq!(r.scope, s.scope, "spawn {i}: the stop did not find the scope");
        } else {
            // A supervisor exits once its tree is empty: its scope is then gone, the record stale
            // (or `true` had not ended yet, and the stop ended it).
            assert!(matches!(r.outcome, StopOutcome::AlreadyGone | StopOutcome::Stale(_) | StopOutcome::Exited(_)), "spawn {i}: {r:?}");
        }
    }
}

/// A shell that forks a `setsid` daemon and exits at once: the daemon is stopped through the scope.
fn daemonizer_is_stopped(scope: ScopeMode) {
    let dir = TempDir::new("exits-daemon");
    let pidfile = dir.path().join("d.pid");
    let script = "(setsid sh -c 'echo $$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600' &)";
    let opts = SpawnOptions { scope, cwd: Some(dir.path().to_path_buf()), ..Default::default() };
    let s = launch::spawn(&pidfile, &["sh", "-c", script], &opts).expect("spawn");
    let daemon_file = dir.path().join("daemon.pid");
    let daemon = |d: &Path| std::fs::read_to_string(d).ok().and_then(|t| t.trim().parse::<i32>().ok());
    assert!(wait_for(Duration::from_secs(20), || daemon(&daemon_file).is_some()), "no daemon");
    let d = daemon(&daemon_file).unwrap();
    let r = stop_pid_file(&pidfile, &StopOptions { schedule: "TERM/5/KILL/5".parse().unwrap(), ..Default::default() }).expect("stop");
    let survived = alive(d);
    if survived {
        // Ours (it carries this test's directory as its cwd): pinned, then killed.
        if let Ok(t) = pidguard::start_token(d) {
            if let Ok(h) = pidguard::ProcessRef::open(d, Some(&t), pidguard::Policy::Strict) {
                let _ = h.signal(pidguard::Signal::KILL);
            }
        }
    }
    reap(s.supervisor_pid.unwrap_or(s.pid));
    assert!(s.scope_record.is_some(), "{:?}", s.note);
    assert!(!survived, "{scope:?}: the daemon of a command that exited at once survived the stop: {r:?}");
    assert_eq!(r.scope, s.scope);
}

#[test]
fn in_a_cgroup_leaf() {
    if leaf_possible() {
        true_keeps_its_scope(ScopeMode::Cgroup);
        daemonizer_is_stopped(ScopeMode::Cgroup);
    }
}

#[test]
fn under_a_supervisor() {
    true_keeps_its_scope(ScopeMode::Supervisor);
    daemonizer_is_stopped(ScopeMode::Supervisor);
}
