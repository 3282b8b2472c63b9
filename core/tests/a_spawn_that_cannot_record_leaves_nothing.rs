//! `launch::spawn` whose pidfile cannot be written after the command started: nothing may run
//! unrecorded, so everything in the command's scope is killed — also what the command forked and
//! `setsid`ed before the failure (a supervisor's orphans: the supervisor exits only once they are
//! gone, so the spawn must not wait for it before they are) — and the spawn returns promptly.
//!
//! The failure is made deterministic: at the point where spawn is about to write the pidfile, the
//! test waits until the command's daemon has left its session, then takes the guard record itself
//! (a live holder: this test process), so the spawn's own `acquire` answers `Held`.

mod common;

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use common::{alive, race_at, spawn_group, wait_for, TempDir};
use pidguard::guard::{self, Entry};
use pidguard::launch::{self, RecordFormat, ScopeMode, SpawnOptions};
use pidguard::sys::fault::{self, Point};
use pidguard::{ErrorKind, Policy, ProcessRef, Signal};

const TREE: &str = r#"(setsid sh -c 'echo $$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600' &); exec sleep infinity"#;

fn session_of(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 2..].split(' ').nth(3)?.parse().ok()
}

fn daemon_of(dir: &Path) -> Option<i32> {
    std::fs::read_to_string(dir.join("daemon.pid")).ok()?.trim().parse().ok()
}

/// What became of one spawn.
struct Outcome {
    /// The spawn's error (`None`: it succeeded, and its tree was stopped here).
    error: Option<ErrorKind>,
    /// The daemon's pid, when it wrote it.
    daemon: Option<i32>,
    /// Whether the spawn returned within 30 s.
    returned: bool,
}

/// Spawn TREE in `scope` with a guard record that a live holder (a `sleep` of this test) takes
/// first, at the moment spawn is about to write it.
fn spawn_and_lose_the_record(scope: ScopeMode, tag: &str) -> Outcome {
    let dir = TempDir::new(tag);
    let d = dir.path().to_path_buf();
    let pidfile = d.join("svc.pid");
    let holder = spawn_group("exec sleep infinity");
    assert!(wait_for(Duration::from_secs(10), || pidguard::start_token(holder.pid()).is_ok()));
    let entry = Entry::new(holder.pid(), pidguard::start_token(holder.pid()).unwrap().to_string());
    let (tx, rx) = mpsc::channel();
    let (p, e, dd) = (pidfile.clone(), entry.clone(), d.clone());
    std::thread::spawn(move || {
        let taken = p.clone();
        let fired = race_at(Point::BeforeSpawnRecord, move || {
            // No assertion here: a panic would leave the started command unrecorded and alive.
            wait_for(Duration::from_secs(20), || daemon_of(&dd).is_some_and(|x| session_of(x) == Some(x)));
            let _ = guard::create(&taken, &e);
        });
        let opts = SpawnOptions { scope, cwd: Some(d.clone()), format: RecordFormat::Guard, ..Default::default() };
        let r = launch::spawn(&p, &["sh", "-c", TREE], &opts);
        fault::clear_point_hook();
        let _ = tx.send((r, fired.get()));
    });
    let mut got = rx.recv_timeout(Duration::from_secs(30)).ok();
    let returned = got.is_some();
    let daemon = daemon_of(dir.path());
    if let Some(x) = daemon {
        // Ours to end if it survived (this also unblocks a hung spawn): pinned first, then
        // checked to still be the daemon that left its session.
        if let Ok(t) = pidguard::start_token(x) {
            if let Ok(h) = ProcessRef::open(x, Some(&t), Policy::Strict) {
                if session_of(x) == Some(x) && !h.has_exited() {
                    let _ = h.signal(Signal::KILL);
                }
            }
        }
    }
    if got.is_none() {
        got = rx.recv_timeout(Duration::from_secs(30)).ok();
    }
    let (result, fired) = got.expect("the spawn returned once its daemon was gone");
    assert_eq!(fired, 1, "the spawn never reached its record");
    let error = match result {
        Err(e) => Some(e.kind()),
        Ok(s) => {
            // Unexpected: stop what it started, reap our child, then let the test fail.
            let _ = guard::remove(&pidfile, &entry);
            let _ = pidguard::stop_pid_file(&pidfile, &Default::default());
            let mut st = 0;
            // SAFETY: our own child (the supervisor or the command); `st` is writable.
            unsafe { libc::waitpid(s.supervisor_pid.unwrap_or(s.pid), &mut st, 0) };
            None
        }
    };
    let _ = guard::remove(&pidfile, &entry);
    drop(holder);
    Outcome { error, daemon, returned }
}

fn leaf_possible() -> bool {
    let dir = TempDir::new("probe-leaf");
    let pidfile = dir.path().join("probe.pid");
    match launch::spawn(&pidfile, &["true"], &SpawnOptions { scope: ScopeMode::Cgroup, ..Default::default() }) {
        Ok(s) => {
            let mut st = 0;
            // SAFETY: `s.pid` is our own child; `st` is writable.
            unsafe { libc::waitpid(s.pid, &mut st, 0) };
            let _ = pidguard::stop_pid_file(&pidfile, &Default::default());
            true
        }
        Err(e) => {
            eprintln!("skipped: no cgroup v2 leaf can be made here: {e}");
            false
        }
    }
}

fn check(scope: ScopeMode, tag: &str) {
    let o = spawn_and_lose_the_record(scope, tag);
    assert!(o.returned, "{scope:?}: the spawn hung once its record could not be written");
    assert_eq!(o.error, Some(ErrorKind::Held), "{scope:?}");
    let daemon = o.daemon.expect("the daemon's pid");
    assert!(!alive(daemon), "{scope:?}: the command's setsid daemon survived a spawn that recorded nothing");
}

#[test]
fn under_a_supervisor_the_command_and_what_it_forked_are_killed_and_the_spawn_returns() {
    check(ScopeMode::Supervisor, "unrecorded-supervisor");
}

#[test]
fn in_a_cgroup_leaf_the_command_and_what_it_forked_are_killed() {
    if leaf_possible() {
        check(ScopeMode::Cgroup, "unrecorded-cgroup");
    }
}
