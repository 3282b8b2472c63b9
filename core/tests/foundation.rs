//! Identity, the abx-dl pidfile and group termination on real processes.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::*;
use pidguard::*;

#[test]
fn token_and_lookup_of_a_live_process() {
    let p = spawn_group("exec sleep infinity");
    let info = lookup(p.pid()).unwrap();
    assert_eq!(info.pid, p.pid());
    assert_eq!(info.pgid, p.pid());
    assert!(!info.is_zombie());
    let tok = start_token(p.pid()).unwrap();
    assert_eq!(tok, info.token);
    assert_eq!(tok.to_string().parse::<StartToken>().unwrap(), tok);
    assert_eq!(judge(p.pid(), Some(&tok)).unwrap().verdict, Verdict::Match);
    let mut other = tok.clone();
    // Another process: other start ticks, and (as a record from a kernel without pidfs) no
    // inode, which would otherwise decide alone.
    other.start_ticks += 1;
    other.pidfs_ino = None;
    assert_eq!(judge(p.pid(), Some(&other)).unwrap().verdict, Verdict::Mismatch);
    assert_eq!(judge(p.pid(), None).unwrap().verdict, Verdict::Unverifiable);
}

#[test]
fn zombie_is_gone() {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id() as i32;
    assert!(wait_for(Duration::from_secs(5), || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap().contains(") Z")));
    let j = judge(pid, None).unwrap();
    assert_eq!((j.verdict, j.reason), (Verdict::Gone, Reason::Zombie));
    c.wait().unwrap();
    assert_eq!(judge(pid, None).unwrap().reason, Reason::NoSuchProcess);
}

#[test]
fn lookup_refuses_bad_pids() {
    for pid in [0, -1, i32::MAX] {
        assert_eq!(lookup(pid).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
}

#[test]
fn pidfile_round_trip_with_token() {
    let d = TempDir::new("rt");
    let p = spawn_group("exec sleep infinity");
    let t = now();
    let pf = d.path().join("on_x.bg.pid");
    write_pid_file_with_mtime(&pf, p.pid(), t).unwrap();
    assert_eq!(std::fs::read_to_string(&pf).unwrap(), p.pid().to_string());
    let m = std::fs::metadata(&pf).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o644);
    let check = check_pid_file(&pf, None, 5.0);
    assert!(check.valid, "{check:?}");
    assert!(check.token.is_some(), "token xattr expected on this file system");
    assert!((check.mtime.unwrap() - t).abs() < 1e-6);
    // With a token, the mtime no longer matters (a clock step does not invalidate).
    write_pid_file_with_mtime(&pf, p.pid(), t).unwrap();
    let f = std::fs::File::options().write(true).open(&pf).unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)).unwrap();
    assert!(validate_pid_file(&pf, None, 5.0));
}

#[test]
fn pidfile_without_token_uses_mtime_rule() {
    let d = TempDir::new("mt");
    let p = spawn_group("exec sleep infinity");
    let info = lookup(p.pid()).unwrap();
    let pf = d.path().join("on_y.bg.pid");
    std::fs::write(&pf, p.pid().to_string()).unwrap();
    let f = std::fs::File::options().write(true).open(&pf).unwrap();
    let at = |secs: f64| std::time::SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs);
    f.set_modified(at(info.create_time + 1.0)).unwrap();
    assert!(validate_pid_file(&pf, None, 5.0));
    f.set_modified(at(info.create_time + 6.0)).unwrap();
    let c = check_pid_file(&pf, None, 5.0);
    assert_eq!(c.reason, CheckReason::MtimeSkew);
}

#[test]
fn malformed_contents_are_false() {
    let d = TempDir::new("bad");
    let pf = d.path().join("on_z.pid");
    for content in [&b""[..], b"\n", b"0", b"-1", b"+5", b"5_0", b"5\0", b"99999999", b"abc", b"503\n7\n"] {
        std::fs::write(&pf, content).unwrap();
        let c = check_pid_file(&pf, None, 5.0);
        assert_eq!(c.reason, CheckReason::Malformed, "{content:?}");
    }
    std::fs::write(&pf, vec![b'7'; 10 << 20]).unwrap();
    assert_eq!(check_pid_file(&pf, None, 5.0).reason, CheckReason::Malformed);
}

#[test]
fn write_refuses_symlink_and_bad_time() {
    let d = TempDir::new("sym");
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let pf = d.path().join("on_s.pid");
    std::os::unix::fs::symlink(&victim, &pf).unwrap();
    let e = write_pid_file_with_mtime(&pf, std::process::id() as i32, now()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Untrusted);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert_eq!(check_pid_file(&pf, None, 5.0).reason, CheckReason::NotRegular);
    let pf2 = d.path().join("on_t.pid");
    for t in [f64::NAN, f64::INFINITY] {
        assert_eq!(write_pid_file_with_mtime(&pf2, 5, t).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    assert!(!pf2.exists());
}

#[test]
fn terminate_group_with_term_trapping_children() {
    // A hook whose children ignore SIGTERM: the group must end up empty.
    let p = spawn_group("trap '' TERM; sleep infinity & sleep infinity & wait");
    assert!(wait_for(Duration::from_secs(5), || group_members(p.pid()).len() >= 3));
    let tok = start_token(p.pid()).unwrap();
    let h = ProcessRef::open(p.pid(), Some(&tok), Policy::Strict).unwrap();
    assert!(h.is_pinned());
    let schedule: Schedule = "TERM/0.3/KILL/2".parse().unwrap();
    let r = terminate(vec![h], &TerminateOptions { schedule, ..Default::default() });
    assert_eq!(r[0].outcome, Outcome::Exited { after: Signal::KILL }, "{r:?}");
    assert!(r[0].group);
    assert_eq!(r[0].signals, vec![Signal::TERM, Signal::CONT, Signal::KILL]);
    assert!(group_members(p.pid()).is_empty());
}

#[test]
fn terminate_returns_as_soon_as_the_target_exits() {
    // A target that exits on SIGTERM ends the wait at once.
    let p = spawn_group("exec sleep infinity");
    let h = ProcessRef::open(p.pid(), Some(&start_token(p.pid()).unwrap()), Policy::Strict).unwrap();
    let schedule: Schedule = "TERM/20/KILL/1".parse().unwrap();
    let r = terminate(vec![h], &TerminateOptions { schedule, ..Default::default() });
    assert_eq!(r[0].outcome, Outcome::Exited { after: Signal::TERM });
    assert!(r[0].elapsed < Duration::from_secs(10), "{:?}", r[0].elapsed);
    assert_eq!(r[0].exit, ExitStatus::Signaled(libc_sigterm()));
}

fn libc_sigterm() -> i32 {
    15
}

#[test]
fn open_refuses_protected_and_mismatched() {
    let me = std::process::id() as i32;
    for (pid, r) in [(0, Refusal::NonPositivePid), (-1, Refusal::NonPositivePid), (1, Refusal::Init), (me, Refusal::OwnPid)] {
        let e = ProcessRef::open(pid, None, Policy::Lenient).unwrap_err();
        assert_eq!((e.kind(), e.refusal()), (ErrorKind::Refused, Some(r)), "pid {pid}");
    }
    let p = spawn_group("exec sleep infinity");
    let mut tok = start_token(p.pid()).unwrap();
    // Another process: other start ticks, and (as a record from a kernel without pidfs) no
    // inode, which would otherwise decide alone.
    tok.start_ticks += 7;
    tok.pidfs_ino = None;
    let e = ProcessRef::open(p.pid(), Some(&tok), Policy::Lenient).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::Mismatch));
    let e = ProcessRef::open(p.pid(), None, Policy::Strict).unwrap_err();
    assert_eq!(e.refusal(), Some(Refusal::Unverifiable));
    assert!(ProcessRef::open(p.pid(), None, Policy::Lenient).is_ok());
    assert!(alive(p.pid()));
}
