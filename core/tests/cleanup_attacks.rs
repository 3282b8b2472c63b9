//! `cleanup_background_hooks` against a user who shares the tree with root: the
//! user exchanges directories, plants links and files, and exhausts descriptors. The races are played at `sys::fault` points, so each test is
//! deterministic.

mod common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use common::TempDir;
use pidguard::sys::fault::{self, Point};
use pidguard::*;

/// A token-less record of `pid` with a mtime far in the past.
fn write_stale(path: &Path, pid: i32) {
    fs::write(path, pid.to_string()).unwrap();
    let t = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    fs::File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
}

fn dead_pid() -> i32 {
    let max: i32 = fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    (2..=max).rev().find(|p| !Path::new(&format!("/proc/{p}")).exists()).unwrap()
}

fn opts(index: &Path) -> CleanupOptions {
    CleanupOptions { index_path: Some(index.to_path_buf()), is_tty: true, schedule: "TERM/0.5/KILL/2".parse().unwrap(), ..Default::default() }
}

/// `renameat2(a, b, RENAME_EXCHANGE)`.
fn exchange(a: &Path, b: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: two NUL-terminated paths.
    let r = unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
    assert_eq!(r, 0, "renameat2: {}", std::io::Error::last_os_error());
}

/// The hook's directory is exchanged with a private sibling after its pidfile was judged, when
/// the cleanup has closed the directory it judged in and opens it again to finish the hook (a
/// directory with a subdirectory is finished by the batches). Nothing of the sibling (its logs,
/// its file names) may reach the index, and the record is not finalized: the directory at that
/// name is not the one the record was judged in.
#[test]
fn a_hook_directory_exchanged_after_the_judgement_is_not_read() {
    let d = TempDir::new("exchanged-dir");
    let snap = d.path().join("snap");
    let (u, r) = (snap.join("u"), snap.join("r"));
    fs::create_dir_all(u.join("sub")).unwrap();
    fs::create_dir_all(&r).unwrap();
    let name = "on_S__1.bg";
    write_stale(&u.join(format!("{name}.pid")), dead_pid());
    fs::write(u.join(format!("{name}.stdout.log")), "USER-OUT\n").unwrap();
    fs::write(r.join(format!("{name}.stdout.log")), "SECRET-OUT\n").unwrap();
    fs::write(r.join(format!("{name}.stderr.log")), "SECRET-ERR\n").unwrap();
    fs::write(r.join("secret-name.txt"), "x").unwrap();
    let index = d.path().join("index.jsonl");

    let (u2, r2) = (u.clone(), r.clone());
    let fired = common::race_at(Point::BeforeHookFinish, move || exchange(&u2, &r2));
    let reports = cleanup_background_hooks(&snap, &opts(&index), None);
    fault::clear_point_hook();
    let reports = reports.unwrap();
    assert_eq!(fired.get(), 1);
    assert_eq!(reports.len(), 1, "{reports:?}");
    let rep = &reports[0];
    let text = fs::read_to_string(&index).unwrap_or_default();
    assert!(!text.contains("SECRET"), "the other directory's logs reached the index: {text}");
    assert!(!text.contains("secret-name"), "the other directory's names reached the index: {text}");
    assert!(!rep.output_files.iter().any(|f| f.contains("secret")), "{rep:?}");
    assert!(text.is_empty(), "index records for a hook whose directory was replaced: {text}");
    assert_eq!(rep.outcome, HookOutcome::Unverified, "{rep:?}");
    assert!(!rep.pid_file_removed, "{rep:?}");
    assert!(rep.error.as_deref().is_some_and(|e| e.contains("directory")), "{rep:?}");
    assert_eq!(ExitCode::for_cleanup(&reports), ExitCode::Undecided);
    // Both directories are as they were (exchanged by the attacker, nothing taken away).
    assert!(u.join(format!("{name}.stdout.log")).exists() && r.join(format!("{name}.pid")).exists());
    assert!(u.join("secret-name.txt").exists());
}

/// The same exchange when the cleanup holds the descriptor it listed and judged the directory
/// through until the hook is finished (a directory without subdirectories, finished during the
/// walk): the hook is finished in the directory it was judged in, wherever its name now leads —
/// its own logs in the index, its own record and logs removed (from the directory now named
/// `r`) — and nothing of the sibling is read or touched.
#[test]
fn a_hook_directory_exchanged_while_held_is_finished_where_it_was_judged() {
    let d = TempDir::new("exchanged-held");
    let snap = d.path().join("snap");
    let (u, r) = (snap.join("u"), snap.join("r"));
    fs::create_dir_all(&u).unwrap();
    fs::create_dir_all(&r).unwrap();
    let name = "on_S__1.bg";
    write_stale(&u.join(format!("{name}.pid")), dead_pid());
    fs::write(u.join(format!("{name}.stdout.log")), "USER-OUT\n").unwrap();
    fs::write(r.join(format!("{name}.stdout.log")), "SECRET-OUT\n").unwrap();
    fs::write(r.join(format!("{name}.stderr.log")), "SECRET-ERR\n").unwrap();
    fs::write(r.join("secret-name.txt"), "x").unwrap();
    let index = d.path().join("index.jsonl");

    let (u2, r2) = (u.clone(), r.clone());
    let fired = common::race_at(Point::BeforeHookFinish, move || exchange(&u2, &r2));
    let reports = cleanup_background_hooks(&snap, &opts(&index), None);
    fault::clear_point_hook();
    let reports = reports.unwrap();
    assert_eq!(fired.get(), 1);
    assert_eq!(reports.len(), 1, "{reports:?}");
    let rep = &reports[0];
    let text = fs::read_to_string(&index).unwrap_or_default();
    assert!(!text.contains("SECRET"), "the other directory's logs reached the index: {text}");
    assert!(!text.contains("secret-name"), "the other directory's names reached the index: {text}");
    assert!(!rep.output_files.iter().any(|f| f.contains("secret")), "{rep:?}");
    assert!(text.contains("USER-OUT"), "the hook's own log is missing from the index: {text}");
    assert_eq!(rep.outcome, HookOutcome::Stale, "{rep:?}");
    assert!(rep.pid_file_removed, "{rep:?}");
    // The judged directory (now named `r`) lost the hook's record and logs; the sibling (now
    // named `u`) kept everything.
    assert!(!r.join(format!("{name}.pid")).exists() && !r.join(format!("{name}.stdout.log")).exists());
    assert!(u.join(format!("{name}.stdout.log")).exists() && u.join(format!("{name}.stderr.log")).exists());
    assert!(u.join("secret-name.txt").exists());
}

/// A log that cannot be opened (here `EMFILE`) is not an empty log: no index records, the
/// logs and the record are kept, the cleanup is undecided — and the next cleanup finalizes the
/// hook once, with its logs.
#[test]
fn a_log_that_cannot_be_read_is_not_an_empty_log() {
    let d = TempDir::new("unreadable-log");
    let snap = d.path().join("snap");
    let p = snap.join("p");
    fs::create_dir_all(&p).unwrap();
    let name = "on_S__1.bg";
    let pid_file = p.join(format!("{name}.pid"));
    write_stale(&pid_file, dead_pid());
    fs::write(p.join(format!("{name}.stdout.log")), "OUT-1\n").unwrap();
    fs::write(p.join(format!("{name}.stderr.log")), "ERR-1\n").unwrap();
    let index = d.path().join("index.jsonl");

    fault::inject(fault::Call::LogOpen, libc::EMFILE);
    let reports = cleanup_background_hooks(&snap, &opts(&index), None);
    fault::clear();
    let reports = reports.unwrap();
    let rep = &reports[0];
    let text = fs::read_to_string(&index).unwrap_or_default();
    assert!(text.is_empty(), "records written from logs that were not read: {text}");
    assert!(pid_file.exists() && !rep.pid_file_removed, "{rep:?}");
    assert!(p.join(format!("{name}.stdout.log")).exists() && p.join(format!("{name}.stderr.log")).exists());
    assert_eq!(rep.outcome, HookOutcome::Unverified, "{rep:?}");
    assert!(rep.error.as_deref().is_some_and(|e| e.contains("log")), "{rep:?}");
    assert_eq!(ExitCode::for_cleanup(&reports), ExitCode::Undecided);

    // Descriptors back: one finalize, with the logs.
    let reports = cleanup_background_hooks(&snap, &opts(&index), None).unwrap();
    assert_eq!(reports[0].outcome, HookOutcome::Stale, "{reports:?}");
    let text = fs::read_to_string(&index).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("OUT-1") && text.contains("ERR-1"), "{text}");
    assert!(!pid_file.exists());
}

/// The other side: a symlink planted where a log belongs is the hook's user's doing, not a
/// failed read of a real log: noted, not followed, and the hook is finalized (else any user
/// could keep a record from ever being retired).
#[test]
fn a_planted_symlink_log_is_noted_and_the_hook_finalized() {
    let d = TempDir::new("f6b");
    let snap = d.path().join("snap");
    let p = snap.join("p");
    fs::create_dir_all(&p).unwrap();
    let name = "on_S__1.bg";
    write_stale(&p.join(format!("{name}.pid")), dead_pid());
    fs::write(d.path().join("secret"), "SECRET").unwrap();
    std::os::unix::fs::symlink(d.path().join("secret"), p.join(format!("{name}.stdout.log"))).unwrap();
    let index = d.path().join("index.jsonl");
    let reports = cleanup_background_hooks(&snap, &opts(&index), None).unwrap();
    let rep = &reports[0];
    assert_eq!(rep.outcome, HookOutcome::Stale, "{rep:?}");
    assert!(rep.notes.iter().any(|n| n.contains("symbolic link")), "{rep:?}");
    let text = fs::read_to_string(&index).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(!text.contains("SECRET"));
    assert_eq!(ExitCode::for_cleanup(&reports), ExitCode::Done);
}

/// A hook whose finalize failed does not let the cleanup say "done".
#[test]
fn a_failed_finalize_is_not_exit_0() {
    let d = TempDir::new("failed-finalize");
    let snap = d.path().join("snap");
    let p = snap.join("p");
    fs::create_dir_all(&p).unwrap();
    write_stale(&p.join("on_S__1.bg.pid"), dead_pid());
    let mut fail = |_: &HookReport| Err("No space left on device".to_string());
    let reports = cleanup_background_hooks(&snap, &CleanupOptions { is_tty: true, ..Default::default() }, Some(&mut fail)).unwrap();
    assert!(reports[0].error.as_deref().is_some_and(|e| e.contains("finalize failed")), "{reports:?}");
    assert_ne!(ExitCode::for_cleanup(&reports), ExitCode::Done, "{reports:?}");
}

/// One cleanup copies at most `MAX_INDEX_LOG_BYTES` of logs into the index, whatever the
/// number of hooks; logs beyond it are cut with the marker and a note.
#[test]
fn the_logs_one_cleanup_copies_are_bounded() {
    let d = TempDir::new("f4b");
    let snap = d.path().join("snap");
    let chunk = vec![b'a'; 1 << 20];
    let hooks = 5;
    for i in 0..hooks {
        let p = snap.join(format!("p{i}"));
        fs::create_dir_all(&p).unwrap();
        write_stale(&p.join(format!("on_S__{i}.bg.pid")), dead_pid());
        let mut f = fs::File::create(p.join(format!("on_S__{i}.bg.stdout.log"))).unwrap();
        for _ in 0..16 {
            std::io::Write::write_all(&mut f, &chunk).unwrap();
        }
    }
    let index = d.path().join("index.jsonl");
    let reports = cleanup_background_hooks(&snap, &opts(&index), None).unwrap();
    let size = fs::metadata(&index).unwrap().len();
    assert!(size <= pidguard::hooks::MAX_INDEX_LOG_BYTES + (1 << 20), "index of {size} bytes");
    assert!(reports.iter().any(|r| r.notes.iter().any(|n| n.contains("cleanup"))), "{reports:?}");
    assert_eq!(fs::read_to_string(&index).unwrap().lines().count(), 2 * hooks);
}

/// The name a record is renamed to before its unlink fits NAME_MAX whatever the record's
/// name: a 250-byte pidfile name is retired like any other.
#[test]
fn a_record_with_a_250_byte_name_is_retired() {
    let d = TempDir::new("long-name");
    let snap = d.path().join("snap");
    let p = snap.join("p");
    fs::create_dir_all(&p).unwrap();
    let name = format!("on_{}.bg.pid", "x".repeat(250 - "on_.bg.pid".len()));
    assert_eq!(name.len(), 250);
    let pid_file = p.join(&name);
    write_stale(&pid_file, dead_pid());
    let index = d.path().join("index.jsonl");
    let reports = cleanup_background_hooks(&snap, &opts(&index), None).unwrap();
    let rep = &reports[0];
    assert_eq!(rep.outcome, HookOutcome::Stale, "{rep:?}");
    assert!(rep.pid_file_removed, "{rep:?}");
    assert!(!pid_file.exists());
    assert_eq!(ExitCode::for_cleanup(&reports), ExitCode::Done);
}

/// In a sticky world-writable directory, a `.sh` planted by another user (uid 65534) next to
/// root's token-less record of a live hook is no evidence against the record: the hook is not
/// called stale (and left running untracked); it is judged as if no `.sh` were there.
#[test]
fn a_cmd_file_of_another_user_is_no_evidence() {
    use std::os::unix::fs::PermissionsExt;
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (chown to uid 65534)");
        return;
    }
    let d = TempDir::new("planted-cmd");
    let snap = d.path().join("snap");
    let p = snap.join("p");
    fs::create_dir_all(&p).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o1777)).unwrap();
    let child = std::process::Command::new("sleep").arg("infinity").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).process_group(0).spawn().unwrap();
    let hook = common::Proc(child);
    let pid = hook.pid();
    let name = "on_S__root.bg";
    let pid_file = p.join(format!("{name}.pid"));
    fs::write(&pid_file, pid.to_string()).unwrap();
    let ct = pidguard::lookup(pid).unwrap().create_time;
    let t = std::time::UNIX_EPOCH + Duration::from_secs_f64(ct);
    fs::File::options().write(true).open(&pid_file).unwrap().set_modified(t).unwrap();
    let sh = p.join(format!("{name}.sh"));
    write_cmd_file(&sh, &["python3", "-c", "other"]).unwrap();
    std::os::unix::fs::chown(&sh, Some(65534), Some(65534)).unwrap();
    let index = d.path().join("index.jsonl");
    let reports = cleanup_background_hooks(&snap, &opts(&index), None).unwrap();
    let rep = &reports[0];
    assert_ne!(rep.reason, CheckReason::CmdMismatch, "{rep:?}");
    assert_ne!(rep.outcome, HookOutcome::Stale, "the planted .sh made root's live record stale: {rep:?}");
    // Judged without the planted file: the live hook, proven by its mtime, was stopped.
    assert!(matches!(rep.outcome, HookOutcome::Exited(_)), "{rep:?}");
    assert!(rep.cmd.is_empty(), "the planted command was reported as the hook's: {rep:?}");
    assert!(!alive_not_zombie(pid));
}

fn alive_not_zombie(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| !r.trim_start().starts_with('Z')))
}
