//! A scope whose members cannot be read is not "left" by the recorded process: a failed read
//! proves nothing, so the stop neither claims that the process left its scope nor stops its
//! group on that guess. Here `pidfd_open` fails (as on Linux < 5.3, or under valgrind 3.19)
//! from the spawn on, so the record's token has no pidfs inode and still matches, while the
//! supervisor's tree cannot be walked.

mod common;

use std::time::Duration;

use common::{alive, wait_for, TempDir};
use pidguard::launch::{self, ScopeMode, SpawnOptions};
use pidguard::sys::fault::{self, Call};
use pidguard::{stop_pid_file, StopOptions, StopOutcome};

fn reap(pid: i32) {
    let mut st = 0;
    // SAFETY: `pid` is our own child (the supervisor); `st` is writable.
    unsafe { libc::waitpid(pid, &mut st, 0) };
}

#[test]
fn a_supervisor_scope_that_cannot_be_walked_is_not_claimed_left_and_nothing_is_signalled() {
    let dir = TempDir::new("scope-unreadable");
    let pidfile = dir.path().join("job.pid");
    let opts = SpawnOptions { scope: ScopeMode::Supervisor, ..Default::default() };
    fault::clear();
    fault::inject(Call::PidfdOpen, libc::ENOSYS);
    let s = launch::spawn(&pidfile, &["sleep", "infinity"], &opts);
    let s = match s {
        Ok(s) => s,
        Err(e) => {
            fault::clear();
            panic!("spawn under a supervisor: {e}");
        }
    };
    let sup = s.supervisor_pid.expect("a supervisor");
    let blind = stop_pid_file(&pidfile, &StopOptions { schedule: "TERM/1/KILL/1".parse().unwrap(), ..Default::default() });
    fault::clear();
    let still_alive = alive(s.pid);

    // Ours to end, with pidfds this time; then reap the supervisor.
    let r = stop_pid_file(&pidfile, &StopOptions { schedule: "TERM/5/KILL/5".parse().unwrap(), ..Default::default() }).unwrap();
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{r:?}");
    assert!(wait_for(Duration::from_secs(20), || !alive(sup)), "the supervisor did not exit");
    reap(sup);

    let blind = blind.expect("a report");
    assert_eq!(blind.warning, None, "a scope that could not be read was taken as left: {blind:?}");
    assert!(!matches!(blind.outcome, StopOutcome::Exited(_) | StopOutcome::AlreadyGone), "{blind:?}");
    assert!(!blind.pid_file_removed);
    assert!(still_alive, "the command was signalled although its scope could not be read");
}
