//! A spawner that learns its record's final path only after the spawn (abx-plugins'
//! `launchChromium`): `spawn` with `pipe_output` into a temporary pidfile, read the command's
//! output from the pipes, `move_record` to the final path. The final record carries the token and
//! the scope, so a stop of it reaches a `setsid` escapee; the temporary record and its `.sh` are
//! gone; a move that does not fit (another pid, a held target) changes nothing.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pidguard::launch::{move_record, spawn, ScopeMode, SpawnOptions};
use pidguard::{check_pid_file, stop_pid_file, ErrorKind, StopOptions, DEFAULT_TOLERANCE};

/// Prints one line on each stream, starts a `setsid` escapee, then waits.
const SCRIPT: &str = "echo to-out; echo to-err >&2; setsid sh -c 'exec sleep 3600' </dev/null >/dev/null 2>&1 & exec sleep infinity";

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pg-move-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Live (not zombie) processes carrying the marker in their environment.
fn live_with_marker(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if !env.split(|b| *b == 0).any(|v| v == marker.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if matches!(stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next()), Some(c) if c != 'Z' && c != 'X') {
            out.push(pid);
        }
    }
    out
}

/// Ends what is left of this test's tree (by marker, through a pidfd), passed or failed.
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

/// One line from a pipe's read end (blocking: the command writes it at once).
fn first_line(fd: std::os::fd::OwnedFd) -> String {
    let mut f = std::fs::File::from(fd);
    let mut got = Vec::new();
    let mut b = [0u8; 1];
    while f.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
        got.push(b[0]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn a_piped_spawn_moved_to_its_final_path_is_stopped_with_its_whole_scope() {
    let dir = tmp("scope");
    let (tmp_pid, final_pid) = (dir.join("launch").join("chrome.pid"), dir.join("chrome.pid"));
    std::fs::create_dir_all(tmp_pid.parent().unwrap()).unwrap();
    let marker = format!("PIDGUARD_TEST_MARKER=move-{}", std::process::id());
    let _reaper = Reaper(marker.clone());
    std::env::set_var("PIDGUARD_TEST_MARKER", marker.split_once('=').unwrap().1);

    // Log paths and pipes do not mix.
    let both = SpawnOptions { pipe_output: true, stdout: Some(dir.join("o.log")), ..Default::default() };
    assert_eq!(spawn(&tmp_pid, &["true"], &both).unwrap_err().kind(), ErrorKind::InvalidArgument);

    let opts = SpawnOptions { scope: ScopeMode::Auto, pipe_output: true, ..Default::default() };
    let s = spawn(&tmp_pid, &["sh", "-c", SCRIPT], &opts).expect("spawn");
    let start = pidguard::launch::now();
    let pipes = s.output.expect("pipe_output gives the read ends");
    assert_eq!(first_line(pipes.stdout), "to-out");
    assert_eq!(first_line(pipes.stderr), "to-err");
    assert!(!dir.join("launch").join("chrome.stdout.log").exists(), "no log file with pipes");
    assert!(wait_for(Duration::from_secs(10), || live_with_marker(&marker).len() >= 2), "the tree did not start");
    let recorded = s.scope_record.clone().expect("the scope is recorded (user xattrs in the temp dir)");

    // A move that does not fit changes nothing.
    let e = move_record(&tmp_pid, &final_pid, s.pid + 1, start).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(tmp_pid.exists() && !final_pid.exists());

    assert!(move_record(&tmp_pid, &final_pid, s.pid, start).expect("move"), "the whole record moved");
    let c = check_pid_file(&final_pid, None, DEFAULT_TOLERANCE);
    assert!(c.valid, "{:?}", c.reason);
    assert_eq!(c.scope.as_ref(), Some(&recorded), "the scope moved with the record");
    assert_eq!(std::fs::read_to_string(&final_pid).unwrap(), s.pid.to_string());
    assert!(!tmp_pid.exists(), "the temporary record is removed");
    assert!(!dir.join("launch").join("chrome.sh").exists(), "its .sh is removed");

    // The final record is now the live one: a second move onto it is refused.
    let again = dir.join("other.pid");
    std::fs::copy(&final_pid, &again).unwrap();
    let e = move_record(&again, &final_pid, s.pid, start).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Held | ErrorKind::InvalidArgument), "{e}");
    let _ = std::fs::remove_file(&again);

    let r = stop_pid_file(&final_pid, &StopOptions { schedule: "TERM/5/KILL/2".parse().unwrap(), ..Default::default() }).unwrap();
    assert!(matches!(r.outcome, pidguard::StopOutcome::Exited(_)), "{:?}", r.outcome);
    assert!(wait_for(Duration::from_secs(5), || live_with_marker(&marker).is_empty()), "survivors {:?}", live_with_marker(&marker));
    let mut st = 0;
    // SAFETY: waitpid on our own child (the command, or its supervisor).
    unsafe { libc::waitpid(s.supervisor_pid.unwrap_or(s.pid), &mut st, 0) };
    let _ = std::fs::remove_dir_all(&dir);
}

/// A record another user could have written (their token and scope xattrs are their claim) is
/// never moved into one of the caller's: as root, `from` owned by uid 65534 is refused, and
/// neither file changes.
#[test]
fn a_record_owned_by_another_user_is_not_moved() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (a file of another uid)");
        return;
    }
    let dir = tmp("foreign");
    // Without the other test's marker (set in this process's environment): not its survivor.
    let mut child = std::process::Command::new("sleep").arg("infinity").env_remove("PIDGUARD_TEST_MARKER").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let pid = child.id() as i32;
    let from = dir.join("user.pid");
    let to = dir.join("root.pid");
    pidguard::write_pid_file_with_mtime(&from, pid, pidguard::launch::now()).unwrap();
    std::os::unix::fs::chown(&from, Some(65534), Some(65534)).unwrap();
    let err = move_record(&from, &to, pid, pidguard::launch::now()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Untrusted, "{err}");
    assert!(from.exists() && !to.exists(), "nothing moved");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
