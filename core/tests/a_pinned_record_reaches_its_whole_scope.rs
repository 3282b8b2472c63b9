//! The abx-dl operations' path (`pin_pid_file`, then signals and a termination through the
//! handle) reaches every process of a record's scope, as `stop_pid_file` does: a descendant
//! that left the group with `setsid` is stopped too; with the scope `group` it survives (the
//! limitation the scope removes, shown so that the test can fail).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pidguard::launch::{spawn, ScopeMode, SpawnOptions};
use pidguard::{pin_pid_file, PidFilePin, ScopeKind, TerminateOptions};

/// A shell that starts a `setsid` escapee (its own session) and then waits.
const ESCAPING: &str = "setsid sh -c 'exec sleep 3600' </dev/null >/dev/null 2>&1 & exec sleep infinity";

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pg-scope-handle-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The live (not zombie) processes of one test's tree, found by the environment marker they
/// inherited (an orphaned escapee has no parent chain left to follow).
fn live_with_marker(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if !env.split(|b| *b == 0).any(|v| v == marker.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
        if matches!(state, Some(c) if c != 'Z' && c != 'X') {
            out.push(pid);
        }
    }
    out
}

/// The process group of a live `pid` (`/proc/<pid>/stat`), if it can be read.
fn pgid_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state, ppid, pgrp.
    stat.rsplit_once(") ")?.1.split(' ').nth(2)?.parse().ok()
}

/// Ends whatever of one test's tree is still alive when the test ends, passed or failed: its
/// processes carry the test's marker, so only they are signalled (by pid, through a pidfd).
struct Reaper(String);

impl Drop for Reaper {
    fn drop(&mut self) {
        for p in live_with_marker(&self.0) {
            if let Ok(h) = pidguard::ProcessRef::open(p, None, pidguard::Policy::Lenient) {
                let _ = h.signal(pidguard::Signal::KILL);
            }
        }
    }
}

fn wait_for(deadline: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// The environment is the process's: tests that set it take turns.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn start(dir: &Path, mode: ScopeMode, marker: &str) -> Option<(PathBuf, pidguard::launch::Spawned)> {
    let _turn = ENV.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("PIDGUARD_TEST_MARKER", marker.split_once('=').unwrap().1);
    let pid_file = dir.join("on_X.bg.pid");
    let opts = SpawnOptions { scope: mode, ..Default::default() };
    let s = match spawn(&pid_file, &["sh", "-c", ESCAPING], &opts) {
        Ok(s) => s,
        Err(e) if mode == ScopeMode::Cgroup => {
            eprintln!("skipped: no cgroup leaf can be made here: {e}");
            return None;
        }
        Err(e) => panic!("spawn: {e}"),
    };
    assert!(wait_for(Duration::from_secs(10), || live_with_marker(marker).len() >= 2), "the tree did not start");
    Some((pid_file, s))
}

fn stop_through_the_pin(pid_file: &Path) -> (ScopeKind, pidguard::TerminateReport) {
    match pin_pid_file(pid_file, None, 5.0).unwrap() {
        PidFilePin::Pinned(h) => {
            let kind = h.scope_kind();
            let t = h.terminate(&TerminateOptions { schedule: "TERM/5/KILL/2".parse().unwrap(), ..Default::default() }).unwrap();
            (kind, t)
        }
        PidFilePin::Left(r) => panic!("not pinned: {:?}", r.outcome),
    }
}

#[test]
fn a_pinned_scoped_record_stops_the_setsid_escapee_in_cgroup_and_supervisor_mode() {
    for (mode, kind) in [(ScopeMode::Cgroup, ScopeKind::Cgroup), (ScopeMode::Supervisor, ScopeKind::Supervisor)] {
        let dir = tmp(mode.as_str());
        let marker = format!("PIDGUARD_TEST_MARKER=pin-{}-{}", mode.as_str(), std::process::id());
        let _reaper = Reaper(marker.clone());
        let Some((pid_file, s)) = start(&dir, mode, &marker) else { continue };
        assert_eq!(s.scope, kind);
        let (got, t) = stop_through_the_pin(&pid_file);
        assert_eq!(got, kind, "the pinned handle carries the scope");
        assert!(t.outcome.is_stopped(), "{mode:?}: {:?}", t.outcome);
        assert!(wait_for(Duration::from_secs(5), || live_with_marker(&marker).is_empty()), "{mode:?}: survivors {:?}", live_with_marker(&marker));
        if let Some(sup) = s.supervisor_pid {
            // Our child: reap it (it exits once its tree is empty).
            let mut st = 0;
            unsafe { libc::waitpid(sup, &mut st, 0) };
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn without_a_scope_the_setsid_escapee_survives_a_group_stop() {
    let dir = tmp("group");
    let marker = format!("PIDGUARD_TEST_MARKER=pin-group-{}", std::process::id());
    let _reaper = Reaper(marker.clone());
    let (pid_file, s) = start(&dir, ScopeMode::Group, &marker).unwrap();
    assert_eq!(s.scope, ScopeKind::Group);
    // The escapee must have left the group before the stop: a child counted by `start` before
    // its `setsid` is still in the group, and the group stop then ends it too (this test failed
    // so in CI).
    assert!(
        wait_for(Duration::from_secs(10), || live_with_marker(&marker).iter().any(|&p| pgid_of(p).is_some_and(|g| g != s.pid))),
        "the escapee did not leave the group"
    );
    let (got, t) = stop_through_the_pin(&pid_file);
    assert_eq!(got, ScopeKind::Group);
    assert!(t.outcome.is_stopped());
    let left = live_with_marker(&marker);
    assert_eq!(left.len(), 1, "the escapee alone survives a group stop: {left:?}");
    // End it: it is ours (it carries this test's marker), by pid through a pidfd.
    for p in left {
        let h = pidguard::ProcessRef::open(p, None, pidguard::Policy::Lenient).unwrap();
        h.signal(pidguard::Signal::KILL).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
