//! At the library level, a privileged caller's path-based calls refuse
//! a path on which a directory (or symlink) owned by a non-root uid leads to a directory owned
//! by another uid (systemd's CHASE_SAFE rule, CVE-2018-16888), and still follow root's own
//! links. Needs root (to chown); skipped otherwise. The only process signalled is this test's
//! own child.

mod common;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use common::{alive, spawn_group, wait_for, TempDir};
use pidguard::guard::{self, AcquireOptions, Entry};
use pidguard::launch::{self, RecordFormat};
use pidguard::{check_pid_file, stop_pid_file, CheckReason, ErrorKind, StopOptions, StopOutcome};

fn chown(p: &Path, uid: u32) {
    std::os::unix::fs::lchown(p, Some(uid), Some(uid)).unwrap();
}

#[test]
fn a_users_symlink_to_roots_directory_is_refused_by_every_path_call() {
    if !nix_is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let t = TempDir::new("path-safety");
    let (rootrun, home) = (t.path().join("rootrun"), t.path().join("home"));
    std::fs::create_dir_all(&rootrun).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    chown(&home, 65534);
    let link = home.join("run");
    symlink(&rootrun, &link).unwrap();
    chown(&link, 65534);

    let child = spawn_group("exec sleep infinity");
    let pid = child.pid();
    assert!(wait_for(Duration::from_secs(5), || std::fs::read(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with(b"sleep"))));
    launch::record_existing(&rootrun.join("app.pid"), pid, RecordFormat::AbxDl).unwrap();
    let via = link.join("app.pid");

    // stop: refused, nothing signalled, root's record kept; the message names the step.
    let e = stop_pid_file(&via, &StopOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Untrusted, "{e}");
    assert!(e.message().contains("owned by uid 65534 and leads to") && e.message().contains("owned by uid 0"), "{e}");
    assert!(alive(pid) && rootrun.join("app.pid").exists());
    // check: the file is not read through the path.
    assert_eq!(check_pid_file(&via, None, 2.0).reason, CheckReason::Unreadable);
    assert!(pidguard::pidfile::open_error(&via).is_some_and(|e| e.to_string().contains("unsafe path")));
    // launch: neither a log nor a record is written through it.
    std::fs::write(rootrun.join("app.stdout.log"), "ROOT LOG").unwrap();
    assert_eq!(launch::open_log(&link.join("app.stdout.log")).unwrap_err().kind(), ErrorKind::Untrusted);
    assert_eq!(std::fs::read_to_string(rootrun.join("app.stdout.log")).unwrap(), "ROOT LOG");
    assert_eq!(launch::record_existing(&link.join("w.pid"), pid, RecordFormat::AbxDl).unwrap_err().kind(), ErrorKind::Untrusted);
    assert!(!rootrun.join("w.pid").exists() && !rootrun.join("w.sh").exists());
    assert_eq!(launch::make_record_dir(&link.join("sub/g.json")).unwrap_err().kind(), ErrorKind::Untrusted);
    assert!(!rootrun.join("sub").exists());
    // guard: create, acquire, read, remove, replace.
    let token = pidguard::start_token(pid).unwrap().to_string();
    let entry = Entry::new(pid, token.clone());
    assert_eq!(guard::create(&link.join("g.json"), &entry).unwrap_err().kind(), ErrorKind::Untrusted);
    assert!(guard::acquire(&link.join("g.json"), &entry, &AcquireOptions::default()).is_err());
    assert!(!rootrun.join("g.json").exists());
    guard::create(&rootrun.join("g.json"), &entry).unwrap();
    assert_eq!(guard::read(&link.join("g.json")).unwrap_err().kind(), ErrorKind::Untrusted);
    assert!(guard::remove(&link.join("g.json"), &entry).is_err());
    assert!(guard::replace(&link.join("g.json"), &entry, &Entry::new(pid, token)).is_err());
    assert!(rootrun.join("g.json").exists());
    assert!(alive(pid));

    // Root's own link to root's directory (a /var/run -> /run layout) is followed.
    let varrun = t.path().join("varrun");
    symlink(&rootrun, &varrun).unwrap();
    assert_eq!(check_pid_file(&varrun.join("app.pid"), None, 2.0).reason, CheckReason::Valid);
    let r = stop_pid_file(&varrun.join("app.pid"), &StopOptions::default()).unwrap();
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?}", r.outcome);
    drop(child);
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}
