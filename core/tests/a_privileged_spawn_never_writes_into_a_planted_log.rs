//! A privileged spawner never writes a command's output into a log file another user made: a
//! user who pre-creates `job.stdout.log` (mode 0666) in a sticky world-writable directory
//! (`fs.protected_regular=0` lets root open it) must not read root's output through it. The log
//! is replaced by rename with a file of root's own; the planted file stays empty. A hard link
//! at the log's name is replaced too, never truncated. Needs root (to chown); skipped
//! otherwise. The only processes are this test's own short commands (no signal is sent).

mod common;

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use common::{wait_for, TempDir};
use pidguard::launch::{self, ScopeMode, SpawnOptions};

fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A sticky, world-writable directory like /tmp, and a root-only one for the records.
fn dirs(t: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    let shared = t.path().join("shared");
    let records = t.path().join("records");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::create_dir_all(&records).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    (shared, records)
}

/// `path` made by uid 65534 with mode 0666, and the user's own descriptor on it.
fn plant(path: &Path) -> std::fs::File {
    std::fs::write(path, b"").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::os::unix::fs::lchown(path, Some(65534), Some(65534)).unwrap();
    std::fs::File::open(path).unwrap()
}

fn run(pid_file: &Path, out: &Path, err: &Path, text: &str) {
    let opts = SpawnOptions { scope: ScopeMode::Group, stdout: Some(out.into()), stderr: Some(err.into()), ..Default::default() };
    let s = launch::spawn(pid_file, &["sh", "-c", &format!("echo {text}; echo {text} >&2")], &opts).unwrap();
    // Our own child: reaped here (no signal is sent by this test).
    let mut st = 0;
    // SAFETY: waitpid(2) on our own child with a valid pointer.
    assert_eq!(unsafe { libc::waitpid(s.pid, &mut st, 0) }, s.pid);
}

#[test]
fn a_log_planted_by_another_user_is_replaced_not_written_into() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let t = TempDir::new("planted-log");
    let (shared, records) = dirs(&t);
    let (out, err) = (shared.join("job.stdout.log"), shared.join("job.stderr.log"));
    let mut user_out = plant(&out);
    let mut user_err = plant(&err);
    run(&records.join("job.pid"), &out, &err, "root-secret");

    for (path, planted) in [(&out, &mut user_out), (&err, &mut user_err)] {
        assert!(wait_for(Duration::from_secs(10), || std::fs::read(path).is_ok_and(|b| b == b"root-secret\n")), "{}", path.display());
        let m = std::fs::symlink_metadata(path).unwrap();
        assert_eq!(m.uid(), 0, "the log at {} is root's own", path.display());
        assert_eq!(m.mode() & 0o022, 0, "not writable by others");
        let mut seen = Vec::new();
        planted.read_to_end(&mut seen).unwrap();
        assert!(seen.is_empty(), "the user's file received root's output: {:?}", String::from_utf8_lossy(&seen));
    }
    // No temporary is left beside the logs.
    let names: Vec<_> = std::fs::read_dir(&shared).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_hard_link_at_a_logs_name_is_replaced_not_truncated() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let t = TempDir::new("linked-log");
    let (shared, records) = dirs(&t);
    // Root's precious file, linked into the shared directory under the log's name.
    let precious = records.join("precious");
    std::fs::write(&precious, b"KEEP ME").unwrap();
    let out = shared.join("job.stdout.log");
    std::fs::hard_link(&precious, &out).unwrap();
    run(&records.join("job.pid"), &out, &shared.join("job.stderr.log"), "fresh");
    assert!(wait_for(Duration::from_secs(10), || std::fs::read(&out).is_ok_and(|b| b == b"fresh\n")));
    assert_eq!(std::fs::read(&precious).unwrap(), b"KEEP ME");
    assert_eq!(std::fs::metadata(&precious).unwrap().nlink(), 1);
}

#[test]
fn the_callers_own_log_is_emptied_and_reused() {
    let t = TempDir::new("own-log");
    let d = t.path();
    let out = d.join("job.stdout.log");
    std::fs::write(&out, b"an older, longer run's output\n").unwrap();
    let ino = std::fs::metadata(&out).unwrap().ino();
    run(&d.join("job.pid"), &out, &d.join("job.stderr.log"), "new");
    assert!(wait_for(Duration::from_secs(10), || std::fs::read(&out).is_ok_and(|b| b == b"new\n")));
    assert_eq!(std::fs::metadata(&out).unwrap().ino(), ino, "the caller's own log is the same file, emptied");
}
