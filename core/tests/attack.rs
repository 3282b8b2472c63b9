//! Adversarial tests: each one is a way pidguard could have signalled the wrong process, lost a
//! file, hung or lied, that the other tests do not cover.

mod common;

use std::path::Path;
use std::time::Duration;

use common::TempDir;
use pidguard::sys::fault::{self, Point};
use pidguard::{
    cleanup_background_hooks, stop_pid_file, write_pid_file_with_mtime, CleanupOptions,
    HookOutcome, StopOptions, StopOutcome,
};

/// A record of `pid` whose process is long gone: token-less, mtime in 2001.
fn write_stale(path: &Path, pid: i32) {
    std::fs::write(path, pid.to_string()).unwrap();
    let t = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// The race of wazuh/wazuh#38155: a stale pidfile is rewritten by a new spawn (renamed into place, as
/// `write_pid_file_with_mtime` and the Python original's writers do) right after `stop` judged
/// the stale one and compared it unchanged, just before removal. The new record must survive.
/// The race is played deterministically at the point where it hurts
/// ([`fault::Point::BeforePidfileRemove`]). Seen failing before the fix (the remover unlinked by
/// name after the compare, deleting the new record); a random-timing version of this test also
/// caught it, once in 3000 rounds.
#[test]
fn a_pidfile_rewritten_between_check_and_removal_survives() {
    let dir = TempDir::new("rewritten-race");
    let path = dir.path().join("on_x.bg.pid");
    // The new record names this test process, with its token: `stop` would refuse to signal
    // it (own pid) and keep it, so nothing but the race can take it away.
    let me = std::process::id() as i32;
    let fresh_time = pidguard::lookup(me).unwrap().create_time;
    let fresh = dir.path().join(".fresh");
    write_pid_file_with_mtime(&fresh, me, fresh_time).unwrap();
    let fresh_bytes = std::fs::read(&fresh).unwrap();
    write_stale(&path, dead_pid());

    let (p2, f2) = (path.clone(), fresh.clone());
    let fired = common::race_at(Point::BeforePidfileRemove, move || std::fs::rename(&f2, &p2).unwrap());
    let r = stop_pid_file(&path, &StopOptions::default());
    fault::clear_point_hook();
    let r = r.unwrap();
    assert_eq!(fired.get(), 1, "the race point was not reached: {r:?}");
    assert!(r.signals().is_empty(), "{r:?}");
    assert!(matches!(r.outcome, StopOutcome::Stale(_)), "{r:?}");
    assert!(
        !r.pid_file_removed,
        "stop claims it removed the stale record, but the name held the new one: {r:?}"
    );
    assert_eq!(
        std::fs::read(&path).ok(),
        Some(fresh_bytes),
        "the new record was lost"
    );
    // No private leftovers beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["on_x.bg.pid".to_string()]);

    // Without a racer the stale record is removed, as before.
    write_stale(&path, dead_pid());
    let r = stop_pid_file(&path, &StopOptions::default()).unwrap();
    assert!(r.pid_file_removed && !path.exists(), "{r:?}");
}

/// Cleanup's path to the same removal: a stale hook pidfile rewritten at the worst moment
/// survives `cleanup_background_hooks`, which reports it as not removed.
#[test]
fn cleanup_keeps_a_record_rewritten_before_removal() {
    let dir = TempDir::new("cleanup-rewritten-race");
    let path = dir.path().join("on_Snapshot__1_x.bg.pid");
    let me = std::process::id() as i32;
    let fresh = dir.path().join("fresh.tmp");
    write_pid_file_with_mtime(&fresh, me, pidguard::lookup(me).unwrap().create_time).unwrap();
    let fresh_bytes = std::fs::read(&fresh).unwrap();
    write_stale(&path, dead_pid());
    let (p2, f2) = (path.clone(), fresh.clone());
    fault::set_point_hook(move |_| std::fs::rename(&f2, &p2).unwrap());
    let opts = CleanupOptions {
        no_finalize: true,
        ..CleanupOptions::default()
    };
    let r = cleanup_background_hooks(dir.path(), &opts, None);
    fault::clear_point_hook();
    let r = r.unwrap();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].outcome, HookOutcome::Stale);
    assert!(r[0].signals.is_empty());
    assert!(!r[0].pid_file_removed, "{:?}", r[0]);
    assert_eq!(
        std::fs::read(&path).ok(),
        Some(fresh_bytes),
        "the new record was lost"
    );
}

/// A pid that names no process now (searched down from pid_max).
fn dead_pid() -> i32 {
    let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (2..=max)
        .rev()
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap()
}

/// The guard format's removal is the same remove-by-content (`pidfile::retire`): a record put at
/// the name after the compare, just before the rename aside, is given back, and `remove` says it
/// removed nothing. Without a racer the record goes. Seen failing with the re-check after the
/// rename left out (the new record was unlinked).
#[test]
fn guard_record_replaced_between_compare_and_removal_survives() {
    use pidguard::guard::{create, read, remove, Entry};
    let dir = TempDir::new("guard-race");
    let path = dir.path().join("svc.pid");
    let old = Entry::new(dead_pid(), "old-token");
    let new = Entry::new(dead_pid(), "new-token");
    create(&path, &old).unwrap();
    // The newcomer's record, made beside it and renamed into place at the worst moment.
    let fresh = dir.path().join("fresh.pid");
    create(&fresh, &new).unwrap();
    let (p2, f2) = (path.clone(), fresh.clone());
    let fired = common::race_at(Point::BeforePidfileRemove, move || std::fs::rename(&f2, &p2).unwrap());
    let r = remove(&path, &old);
    fault::clear_point_hook();
    assert_eq!(fired.get(), 1, "the race point was not reached: {r:?}");
    assert!(!r.unwrap(), "remove claims it removed the old record, but the name held the new one");
    assert_eq!(read(&path).unwrap(), new, "the new record was lost");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["svc.pid".to_string()], "no private leftovers");
    // Without a racer: the record that is there is removed by its own content only.
    assert!(!remove(&path, &old).unwrap(), "another record is not removed");
    assert!(remove(&path, &new).unwrap() && !path.exists());
}
