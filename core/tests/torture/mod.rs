//! The real PID-reuse torture (a recorded pid handed to a bystander group, same-tick and
//! different-tick, through handles opened before the death), shared by `examples/reuse_torture.rs` and
//! `tests/signalling.rs`. See the example for what one round does. Must run as PID 1 of a
//! private PID namespace.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pidguard::sys::fault::{self, Call};
use pidguard::{
    check_pid_file, cleanup_background_hooks, compare_tokens, judge, start_token, stop_pid_file, terminate, write_pid_file_with_mtime,
    CheckReason, CleanupOptions, Delivery, HookOutcome, Outcome, Policy, ProcessRef, Reason, Schedule, Signal,
    StartToken, StopOptions, StopOutcome, TerminateOptions, Verdict,
};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// pidfd with `PIDFD_SIGNAL_PROCESS_GROUP`.
    GroupFlag,
    /// `EINVAL` for the group flag: member by member.
    Members,
    /// `EPERM` from `pidfd_open`: unpinned, `kill(2)`.
    Unpinned,
}

impl Mode {
    fn inject(self) {
        fault::clear();
        match self {
            Mode::GroupFlag => {}
            Mode::Members => fault::inject(Call::PidfdSignalGroup, libc::EINVAL),
            Mode::Unpinned => fault::inject(Call::PidfdOpen, libc::EPERM),
        }
    }
}

fn now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

fn stat_of(pid: i32) -> Option<(char, i32, u64)> {
    let s = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let st = pidguard::sys::parse_stat(&s)?;
    Some((st.state as char, st.pgrp, st.start_ticks))
}

/// Live (non-zombie) members of group `pgid`.
fn members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if let Some((state, pg, _)) = stat_of(pid) {
            if pg == pgid && state != 'Z' && state != 'X' {
                out.push(pid);
            }
        }
    }
    out.sort();
    out
}

fn reap_all() {
    loop {
        // SAFETY: plain waitpid on any child, non-blocking.
        let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
        if r <= 0 {
            break;
        }
    }
}

/// Whether this process may open pidfds: not under a seccomp filter that refuses `pidfd_open`
/// (scripts/test-seccomp.sh runs the torture so), where every handle is unpinned whatever the
/// round's mode.
fn pidfds_here() -> bool {
    // SAFETY: plain system call with integer arguments; a descriptor returned is closed at once.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid() as libc::c_long, 0 as libc::c_long) };
    if fd >= 0 {
        // SAFETY: `fd` was just opened here and is owned by nobody else.
        unsafe { libc::close(fd as i32) };
    }
    fd >= 0
}

fn set_last_pid(n: i32) -> std::io::Result<()> {
    std::fs::write("/proc/sys/kernel/ns_last_pid", n.to_string())
}

fn spawn_leader(cmd: &str, args: &[&str]) -> Child {
    let mut c = Command::new(cmd);
    c.args(args).process_group(0).stdin(Stdio::null()).stdout(Stdio::null());
    match c.spawn() {
        Ok(child) => child,
        // glibc's posix_spawn tries clone3 and falls back to clone only on ENOSYS: under a
        // seccomp filter answering EPERM for clone3 (scripts/test-seccomp.sh) std's fork path is
        // taken instead (any pre_exec hook selects it).
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            // SAFETY: the hook does nothing (no allocation, no lock) between fork and exec.
            unsafe { c.pre_exec(|| Ok(())) };
            c.spawn().expect("spawn (fork)")
        }
        Err(e) => panic!("spawn: {e}"),
    }
}

pub struct Stats {
    pub rounds: u32,
    pub same_tick: u32,
    pub failures: u32,
    pub not_reused: u32,
    pub pidfs_decided: u32,
    pub ticks_only_fooled: u32,
}

fn fail(stats: &mut Stats, round: u32, mode: Mode, what: String) {
    stats.failures += 1;
    if stats.failures <= 20 {
        eprintln!("reuse-torture: FAIL round {round} ({mode:?}): {what}");
    }
}

fn round(i: u32, dir: &Path, stats: &mut Stats, verbose: bool) {
    let mode = [Mode::GroupFlag, Mode::Members, Mode::Unpinned][(i % 3) as usize];
    // Every fourth round waits a few ticks before the reuse, so both same-tick and
    // different-tick reuse are exercised whatever the machine's speed.
    let slow = i % 4 == 3;
    let pid_file = dir.join("on_Snapshot__10_torture.bg.pid");

    // 1. The recorded process: a group leader.
    fault::clear();
    let mut rec = spawn_leader("sleep", &["infinity"]);
    let p = rec.id() as i32;
    write_pid_file_with_mtime(&pid_file, p, now()).expect("write pidfile");
    let token: StartToken = start_token(p).expect("token of the recorded process");
    let record = format!("{p} {token}"); // the token-only record
    // Without pidfds the writer could not have read the pidfs inode: the handles are opened
    // with the token such a writer records (start ticks only).
    let held_token = if mode == Mode::Unpinned { StartToken { pidfs_ino: None, ..token.clone() } } else { token.clone() };
    mode.inject();
    let held = ProcessRef::open(p, Some(&held_token), Policy::Strict).expect("open the recorded process");
    let held_group = ProcessRef::open(p, Some(&held_token), Policy::Strict).expect("open the recorded process");
    if held.is_pinned() != (mode != Mode::Unpinned && pidfds_here()) {
        fail(stats, i, mode, format!("handle reports pinned={} ", held.is_pinned()));
    }
    fault::clear();
    if check_pid_file(&pid_file, None, 5.0).token.is_none() {
        fail(stats, i, mode, "the pidfile carries no token (no user xattrs here?)".into());
    }

    // 2. Kill and reap it, then force its pid onto a bystander that leads its own group.
    if slow {
        std::thread::sleep(Duration::from_millis(25));
    }
    rec.kill().unwrap();
    rec.wait().unwrap();
    set_last_pid(p - 1).expect("write ns_last_pid");
    let mut by = spawn_leader("sh", &["-c", "sleep infinity & sleep infinity & wait"]);
    let b = by.id() as i32;
    if b != p {
        stats.not_reused += 1;
        let _ = by.kill();
        let _ = by.wait();
        reap_all();
        return;
    }
    let t0 = Instant::now();
    while members(p).len() < 3 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let before = members(p);
    if before.len() != 3 {
        fail(stats, i, mode, format!("bystander group did not form: {before:?}"));
    }
    let bt = start_token(p).expect("bystander token");
    let same_tick = bt.start_ticks == token.start_ticks;
    if same_tick {
        stats.same_tick += 1;
    }
    // The limit of start ticks alone: a token without the pidfs inode matches the bystander in
    // every same-tick round. (Counted, never acted on.)
    if compare_tokens(&StartToken { pidfs_ino: None, ..token.clone() }, &bt).verdict == Verdict::Match {
        stats.ticks_only_fooled += 1;
    }

    // 3. Everything pidguard can do with the old record.
    mode.inject();
    let (parsed_pid, parsed_tok) = record.split_once(' ').unwrap();
    let rpid: i32 = parsed_pid.parse().unwrap();
    let rtok: StartToken = parsed_tok.parse().unwrap();
    match judge(rpid, Some(&rtok)) {
        Ok(j) if j.verdict == Verdict::Mismatch => {
            if same_tick && j.reason != Reason::PidfsInodeDiffers {
                fail(stats, i, mode, format!("same-tick reuse judged {:?}", j.reason));
            }
            if j.reason == Reason::PidfsInodeDiffers {
                stats.pidfs_decided += 1;
            }
        }
        // Unpinned, a same-tick reuse cannot be proven either way: it must not be Match.
        Ok(j) if mode == Mode::Unpinned && same_tick && j.verdict == Verdict::Unverifiable => {}
        other => fail(stats, i, mode, format!("judge: {other:?} (same_tick={same_tick})")),
    }
    for policy in [Policy::Strict, Policy::Lenient] {
        match ProcessRef::open(rpid, Some(&rtok), policy) {
            Err(e) if e.refusal().is_some() => {}
            other => fail(stats, i, mode, format!("open {policy:?}: {other:?}")),
        }
    }
    let c = check_pid_file(&pid_file, None, 5.0);
    if c.valid || !(c.reason == CheckReason::Mismatch || (mode == Mode::Unpinned && c.reason == CheckReason::Unverifiable)) {
        fail(stats, i, mode, format!("check_pid_file: {:?} valid={}", c.reason, c.valid));
    }
    let quick: Schedule = "TERM/0.3/KILL/0.3".parse().unwrap();
    for policy in [Policy::Strict, Policy::Lenient] {
        let opts = StopOptions { schedule: quick.clone(), policy, ..StopOptions::default() };
        match stop_pid_file(&pid_file, &opts) {
            Ok(r) if r.signals().is_empty() && matches!(r.outcome, StopOutcome::Stale(_) | StopOutcome::Refused(_)) => {}
            other => fail(stats, i, mode, format!("stop {policy:?}: {other:?}")),
        }
        if !pid_file.exists() {
            // A stale record is removed: put the old record back for the next client.
            write_old_record(&pid_file, p, &token);
        }
    }
    // Handles opened before the death.
    match held.signal(Signal::KILL) {
        Ok(Delivery::AlreadyGone) => {}
        other => fail(stats, i, mode, format!("held.signal: {other:?}")),
    }
    match held.signal_group(Signal::KILL) {
        Ok(Delivery::AlreadyGone) => {}
        other => fail(stats, i, mode, format!("held.signal_group: {other:?}")),
    }
    let t1 = Instant::now();
    let rep = terminate(vec![held_group], &TerminateOptions { schedule: quick.clone(), ..TerminateOptions::default() });
    if rep[0].outcome != Outcome::AlreadyGone || !rep[0].signals.is_empty() {
        fail(stats, i, mode, format!("terminate(held): {:?} signals={:?} after {:?}", rep[0].outcome, rep[0].signals, t1.elapsed()));
    }
    let copts = CleanupOptions { schedule: quick, no_finalize: true, ..CleanupOptions::default() };
    match cleanup_background_hooks(dir, &copts, None) {
        Ok(reps) if reps.len() == 1 && reps[0].outcome == HookOutcome::Stale && reps[0].signals.is_empty() => {
            if !reps[0].unverified_leftovers.contains(&p) {
                fail(stats, i, mode, format!("cleanup did not list the bystander group: {:?}", reps[0].unverified_leftovers));
            }
        }
        // Unpinned, a same-tick reuse cannot be proven either way: the record is kept,
        // nothing is signalled (it is not a Match), and the hook is reported unverified.
        Ok(reps)
            if mode == Mode::Unpinned
                && same_tick
                && reps.len() == 1
                && reps[0].outcome == HookOutcome::Unverified
                && reps[0].signals.is_empty()
                && !reps[0].pid_file_removed => {}
        other => fail(stats, i, mode, format!("cleanup: {other:?}")),
    }
    fault::clear();

    // 4. The bystander and its children survive.
    let after = members(p);
    if after != before || stat_of(p).map(|s| s.2) != Some(bt.start_ticks) {
        fail(stats, i, mode, format!("bystander group hit: before {before:?}, after {after:?} (same_tick={same_tick})"));
    }
    if verbose {
        eprintln!("round {i}: {mode:?} pid {p} same_tick={same_tick} slow={slow}");
    }
    // SAFETY: the bystander is our unreaped child, so the group number is still its own.
    unsafe { libc::kill(-p, libc::SIGKILL) };
    let _ = by.wait();
    let t0 = Instant::now();
    while !members(p).is_empty() && t0.elapsed() < Duration::from_secs(5) {
        reap_all();
        std::thread::sleep(Duration::from_millis(1));
    }
    reap_all();
    let _ = std::fs::remove_file(&pid_file);
    stats.rounds += 1;
}

/// Write the old record again (content and token xattr, as `write_pid_file_with_mtime` wrote
/// it); rewriting it through pidguard now would record the bystander.
fn write_old_record(pid_file: &Path, pid: i32, token: &StartToken) {
    std::fs::write(pid_file, pid.to_string()).unwrap();
    let c = std::ffi::CString::new(pid_file.as_os_str().as_encoded_bytes()).unwrap();
    let v = token.to_string();
    // SAFETY: valid C strings and buffer.
    let r = unsafe { libc::setxattr(c.as_ptr(), c"user.pidguard.token".as_ptr(), v.as_ptr().cast(), v.len(), 0) };
    assert_eq!(r, 0, "setxattr: {}", std::io::Error::last_os_error());
}


impl Stats {
    /// The summary line.
    pub fn line(&self, elapsed: Duration) -> String {
        format!(
            "reuse-torture: rounds={} same_tick={} pidfs_decided={} ticks_only_would_match={} not_reused={} failures={} elapsed={:.1}s",
            self.rounds,
            self.same_tick,
            self.pidfs_decided,
            self.ticks_only_fooled,
            self.not_reused,
            self.failures,
            elapsed.as_secs_f64()
        )
    }
    /// Whether the run passed: no failure, and nearly every round really reused the pid.
    pub fn passed(&self, asked: u32) -> bool {
        self.failures == 0 && self.rounds > 0 && self.not_reused * 10 <= asked
    }
}

/// Why the torture cannot run here, if it cannot.
pub fn cannot_run() -> Option<String> {
    if std::process::id() != 1 {
        return Some("must run as PID 1 of a private PID namespace (unshare --pid --fork --mount-proc)".into());
    }
    if set_last_pid(100).is_err() {
        return Some("cannot write /proc/sys/kernel/ns_last_pid".into());
    }
    None
}

/// Run `rounds` rounds in a fresh directory under `$TMPDIR`.
pub fn run(rounds: u32, verbose: bool) -> Stats {
    let dir = std::env::temp_dir().join(format!(
        "pidguard-torture-{}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut stats = Stats { rounds: 0, same_tick: 0, failures: 0, not_reused: 0, pidfs_decided: 0, ticks_only_fooled: 0 };
    for i in 0..rounds {
        round(i, &dir, &mut stats, verbose);
    }
    let _ = std::fs::remove_dir_all(&dir);
    stats
}
