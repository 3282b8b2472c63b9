//! Under a uid restriction (a pidfile owned by another user), each group member is checked
//! through its own pidfd immediately before its own signal.

mod common;

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{race_at, wait_for, Proc};
use pidguard::sys::fault::{self, Point};
use pidguard::{Policy, ProcessRef, Signal};

const NOBODY: u32 = 65534;

/// The real, effective and saved uids of `pid` (`Uid:` of /proc/<pid>/status).
fn uids(pid: i32) -> Option<Vec<u32>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("Uid:"))?;
    Some(line.split_whitespace().skip(1).take(3).filter_map(|x| x.parse().ok()).collect())
}

/// Whether SIGTERM is pending for `pid` (it blocks SIGTERM, so a delivered one stays pending:
/// `ShdPnd`/`SigPnd` of /proc/<pid>/status, bit 14).
fn term_pending(pid: i32) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    s.lines()
        .filter(|l| l.starts_with("ShdPnd:") || l.starts_with("SigPnd:"))
        .filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
        .any(|m| m & (1 << (libc::SIGTERM - 1)) != 0)
}

/// The member that changes uid between the group's check and its own signal. A real setuid
/// exec needs a setuid-root binary that switches all of its uids (`su`, `sudo`); the test plays
/// it with a process that runs as nobody (real and effective uid 65534) but keeps a saved uid
/// of 0, so it can become root (`setresuid(0, 0, 0)`) the moment the test tells it to — at
/// the fault point right after the leader's check, before any other member is looked at again.
/// It blocks SIGTERM, so a signal sent to it stays pending and is seen without waiting.
///
/// Seen failing with the previous order (every member's uid checked first, all signals after):
/// the member, root by the time its signal came, had SIGTERM pending.
#[test]
fn a_member_that_becomes_root_after_the_group_was_checked_gets_no_signal() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (to run processes as uid {NOBODY} and switch one to root)");
        return;
    }
    // The leader: the pidfile owner's own process, leading its group.
    let leader = Proc(
        Command::new("sleep")
            .arg("120")
            .uid(NOBODY)
            .gid(NOBODY)
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn sleep"),
    );
    let lpid = leader.pid();
    let script = "import os, signal, sys, time\n\
                  signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n\
                  os.setresuid(65534, 65534, 0)\n\
                  sys.stdin.buffer.read(1)\n\
                  os.setresuid(0, 0, 0)\n\
                  time.sleep(120)\n";
    let mut member = Proc(
        Command::new("python3")
            .args(["-c", script])
            .process_group(lpid)
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn python3"),
    );
    let mpid = member.pid();
    assert!(wait_for(Duration::from_secs(20), || uids(mpid) == Some(vec![NOBODY, NOBODY, 0])), "member never became nobody");
    let mut stdin = member.0.stdin.take().unwrap();

    let token = pidguard::start_token(lpid).unwrap();
    let mut h = ProcessRef::open(lpid, Some(&token), Policy::Strict).unwrap();
    h.restrict_to_uid(NOBODY);
    let fired = race_at(Point::BeforeMemberSignal, move || {
        // First stop: the leader has just been checked. The member turns root now.
        if stdin.write_all(b"x").is_ok() {
            let _ = stdin.flush();
        }
        assert!(wait_for(Duration::from_secs(20), || uids(mpid) == Some(vec![0, 0, 0])), "member never became root");
    });
    let sent = h.signal_group(Signal::TERM);
    fault::clear_point_hook();
    assert!(fired.get() >= 1, "the point between a member's check and its signal was never reached");
    assert!(sent.is_ok(), "{sent:?}");
    // The leader (uid 65534) got its SIGTERM.
    assert!(wait_for(Duration::from_secs(20), || !common::alive(lpid)), "the leader was not signalled");
    // The member, root by the time its turn came, got nothing.
    assert_eq!(uids(mpid), Some(vec![0, 0, 0]));
    assert!(!term_pending(mpid), "root's SIGTERM reached a member that had become root");
    drop(member);
    drop(leader);
}
