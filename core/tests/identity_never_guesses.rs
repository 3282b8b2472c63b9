//! A failed read is never a fact about a process: every errno on the way to a live identity is
//! `Unverifiable` with its cause, never `Gone` or `Mismatch`, and nothing is removed, replaced or
//! signalled on the strength of it. Hidden /proc, exhausted descriptors, a time namespace, an
//! unstorable token, a re-executing daemon and a kernel EPERM, each on real processes, plus the whole kind through fault injection at the `sys` boundary.
//!
//! Tests that change process-wide state (rlimits, uid, namespaces, mounts) re-run this binary as
//! a child for that part; the child's assertions fail the parent.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{alive, child_role, now, reexec, spawn_group, wait_for, Proc, TempDir};
use pidguard::guard::{self, AcquireOptions, Entry};
use pidguard::sys::fault::{self, Call};
use pidguard::{
    check_pid_file, cleanup_background_hooks, judge, start_token, stop_pid_file, write_pid_file_with_mtime, CheckReason,
    CleanupOptions, ErrorKind, HookOutcome, Reason, Schedule, StopOptions, Verdict,
};

fn root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

fn have(cmd: &str) -> bool {
    Command::new(cmd).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn quick() -> Schedule {
    "TERM/2/KILL/2".parse().unwrap()
}

// ---------------------------------------------------------------------------------------------
// The whole kind: every errno of the identity path, from every read on it.

#[test]
fn every_read_failure_on_the_identity_path_is_unverifiable_and_keeps_every_record() {
    let errnos = [libc::EPERM, libc::EACCES, libc::ENOENT, libc::EMFILE, libc::ENFILE, libc::ENOMEM, libc::EIO];
    let calls = [Call::ProcRead, Call::PidfdStat, Call::Poll, Call::PidfdOpen];
    let p = spawn_group("exec sleep infinity");
    let token = start_token(p.pid()).unwrap();
    let d = TempDir::new("faults");
    let guard_path = d.path().join("g.json");
    guard::create(&guard_path, &Entry::new(p.pid(), token.to_string())).unwrap();
    let mut seen_unverifiable = 0;
    let other = Entry::current().unwrap();
    for call in calls {
        for errno in errnos {
            // pidfd_open's EPERM is not a failed read but the documented "no pidfd here" path
            // (old seccomp profiles), tested with the kernel paths in signalling.rs.
            // Its ENOENT (like EINVAL and ESRCH) is proof: the number is not a process.
            if call == Call::PidfdOpen && matches!(errno, libc::EPERM | libc::ENOENT) {
                continue;
            }
            for with_token in [true, false] {
                let what = format!("{call:?} -> {} (token {with_token})", pidguard::sys::errno_name(errno));
                let pf = d.path().join(format!("on_Snapshot__1_{call:?}_{errno}_{with_token}.bg.pid"));
                write_pid_file_with_mtime(&pf, p.pid(), now()).unwrap();
                if !with_token {
                    let c = std::ffi::CString::new(pf.as_os_str().as_encoded_bytes()).unwrap();
                    unsafe { libc::removexattr(c.as_ptr(), c"user.pidguard.token".as_ptr()) };
                }
                fault::inject(call, errno);
                let j = judge(p.pid(), Some(&token)).unwrap();
                assert!(!matches!(j.verdict, Verdict::Gone | Verdict::Mismatch), "{what}: judge {j:?}");
                if j.verdict == Verdict::Unverifiable {
                    seen_unverifiable += 1;
                }
                let c = check_pid_file(&pf, None, 5.0);
                assert!(
                    !matches!(c.reason, CheckReason::Gone | CheckReason::Mismatch | CheckReason::Zombie | CheckReason::MtimeSkew),
                    "{what}: check {c:?}"
                );
                let v = guard::check(&guard_path).unwrap();
                assert!(!v.is_stale(), "{what}: guard {v:?}");
                let a = guard::acquire(&guard_path, &other, &AcquireOptions::default());
                assert!(a.is_err(), "{what}: a live holder was replaced");
                let s = stop_pid_file(&pf, &StopOptions { schedule: quick(), ..StopOptions::default() });
                if let Ok(r) = &s {
                    assert!(r.signals().is_empty() || !alive(p.pid()), "{what}: {r:?}");
                }
                let copts = CleanupOptions { schedule: quick(), no_finalize: true, ..CleanupOptions::default() };
                let reports = cleanup_background_hooks(d.path(), &copts, None).unwrap();
                fault::clear();
                assert!(alive(p.pid()), "{what}: the live process was signalled: {reports:?}");
                assert!(pf.exists(), "{what}: the record of a live process was removed: {reports:?}");
                assert_eq!(guard::read(&guard_path).unwrap().pid, p.pid(), "{what}");
                for r in &reports {
                    assert!(matches!(r.outcome, HookOutcome::Unverified | HookOutcome::Refused(_)), "{what}: {r:?}");
                }
                std::fs::remove_file(&pf).unwrap();
            }
        }
    }
    assert!(seen_unverifiable >= 10, "the faults never reached the identity path ({seen_unverifiable})");
}

#[test]
fn a_pid_that_is_now_a_thread_is_gone() {
    // A thread id is a number no process has: pidfd_open answers EINVAL.
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        tx.send(unsafe { libc::gettid() }).unwrap();
        std::thread::sleep(Duration::from_millis(500));
    });
    let tid = rx.recv().unwrap();
    assert_eq!(judge(tid, None).unwrap(), pidguard::Judgement { verdict: Verdict::Gone, reason: Reason::NoSuchProcess });
    assert_eq!(pidguard::lookup(tid).unwrap_err().kind(), ErrorKind::NoSuchProcess);
    t.join().unwrap();
}

#[test]
fn emfile_is_an_error_of_its_kind_not_not_found() {
    let p = spawn_group("exec sleep infinity");
    fault::inject(Call::PidfdOpen, libc::EMFILE);
    let e = pidguard::lookup(p.pid()).unwrap_err();
    let j = judge(p.pid(), None).unwrap();
    fault::clear();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Io, Some(libc::EMFILE)), "{e}");
    assert_eq!(j.reason, Reason::LiveIdentityUnreadable(libc::EMFILE));
    assert_eq!(j.reason.to_string(), "live-identity-unreadable: EMFILE");
}

// ---------------------------------------------------------------------------------------------
// Out of file descriptors.

const EMFILE_CHILD: &str = "cleanup_out_of_descriptors_stops_or_keeps_every_live_hook";

#[test]
fn cleanup_out_of_descriptors_stops_or_keeps_every_live_hook() {
    if let Some(role) = child_role() {
        if role != EMFILE_CHILD {
            return;
        }
        // The child: lower the soft limit, then clean the directory the parent prepared.
        let limit: u64 = std::env::var("PIDGUARD_NOFILE").unwrap().parse().unwrap();
        let dir = std::env::var("PIDGUARD_DIR").unwrap();
        let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
        r.rlim_cur = limit;
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) }, 0, "{}", std::io::Error::last_os_error());
        let copts = CleanupOptions { schedule: quick(), no_finalize: true, ..CleanupOptions::default() };
        let reports = cleanup_background_hooks(std::path::Path::new(&dir), &copts, None).unwrap();
        let count = |o: fn(&HookOutcome) -> bool| reports.iter().filter(|r| o(&r.outcome)).count();
        println!(
            "emfile-child: hooks={} exited={} unverified={} other={:?}",
            reports.len(),
            count(|o| matches!(o, HookOutcome::Exited(_))),
            count(|o| *o == HookOutcome::Unverified),
            reports
                .iter()
                .filter(|r| !matches!(r.outcome, HookOutcome::Exited(_) | HookOutcome::Unverified))
                .take(5)
                .map(|r| (&r.name, &r.outcome, r.reason, &r.error))
                .collect::<Vec<_>>()
        );
        return;
    }
    for (hooks, limit) in [(40usize, 10u64), (1100, 1024)] {
        let d = TempDir::new(&format!("emfile-{hooks}"));
        // Each pidfile right after its spawn, as a spawner writes it (with its token).
        let procs: Vec<Proc> = (0..hooks)
            .map(|i| {
                let p = spawn_group("exec sleep infinity");
                write_pid_file_with_mtime(&d.path().join(format!("on_Snapshot__{i}_h.bg.pid")), p.pid(), now()).unwrap();
                p
            })
            .collect();
        let out = reexec(EMFILE_CHILD, &[], |c| {
            c.env("PIDGUARD_NOFILE", limit.to_string()).env("PIDGUARD_DIR", d.path());
        });
        assert!(out.status.success(), "child failed (limit {limit})");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find(|l| l.contains("emfile-child:")).expect("summary").to_string();
        eprintln!("{hooks} hooks under ulimit -n {limit}: {line}");
        // Every live hook still running has kept its pidfile; every stopped one is gone.
        let mut kept_live = 0;
        for (i, p) in procs.iter().enumerate() {
            let pf = d.path().join(format!("on_Snapshot__{i}_h.bg.pid"));
            if alive(p.pid()) {
                assert!(pf.exists(), "{hooks}/{limit}: hook {i} (pid {}) is running without its pidfile: {line}", p.pid());
                kept_live += 1;
            }
        }
        assert!(line.contains(&format!("hooks={hooks}")), "{line}");
        assert!(line.ends_with("other=[]"), "{line}");
        // Batches within the limit: at 1024 every hook is stopped; at 10 most are.
        if limit >= 1024 {
            assert_eq!(kept_live, 0, "{line}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The token xattr cannot be stored.

#[test]
fn a_token_that_cannot_be_stored_fails_the_write_and_keeps_the_old_file() {
    let p = spawn_group("exec sleep infinity");
    let d = TempDir::new("xattr");
    let pf = d.path().join("h.pid");
    write_pid_file_with_mtime(&pf, p.pid(), now()).unwrap();
    let before = (std::fs::read(&pf).unwrap(), std::fs::metadata(&pf).unwrap());
    let q = spawn_group("exec sleep infinity");
    for errno in [libc::ENOSPC, libc::EDQUOT, libc::E2BIG, libc::EIO] {
        fault::inject(Call::Setxattr, errno);
        let e = write_pid_file_with_mtime(&pf, q.pid(), now()).unwrap_err();
        fault::clear();
        assert_eq!(e.errno(), Some(errno), "{e}");
        let after = (std::fs::read(&pf).unwrap(), std::fs::metadata(&pf).unwrap());
        use std::os::unix::fs::MetadataExt;
        assert_eq!(after.0, before.0);
        assert_eq!((after.1.ino(), after.1.mtime_nsec()), (before.1.ino(), before.1.mtime_nsec()));
        assert_eq!(check_pid_file(&pf, None, 5.0).reason, CheckReason::Valid);
    }
    // No user xattrs on this file system: written without a token, as documented.
    fault::inject(Call::Setxattr, libc::ENOTSUP);
    write_pid_file_with_mtime(&pf, q.pid(), now()).unwrap();
    fault::clear();
    let c = check_pid_file(&pf, None, 5.0);
    assert!(c.valid && c.token.is_none(), "{c:?}");
}

// ---------------------------------------------------------------------------------------------
// A daemon that re-executes itself keeps its guard.

const REEXEC_CHILD: &str = "a_daemon_that_reexecutes_itself_gets_its_own_guard_back";

#[test]
fn a_daemon_that_reexecutes_itself_gets_its_own_guard_back() {
    if let Some(role) = child_role() {
        if role != REEXEC_CHILD {
            return;
        }
        let path = std::path::PathBuf::from(std::env::var("PIDGUARD_GUARD").unwrap());
        if std::env::var("PIDGUARD_STAGE").as_deref() == Ok("1") {
            let g = guard::acquire(&path, &Entry::current().unwrap().with_field("image", "first"), &AcquireOptions::default()).unwrap();
            g.keep();
            // execv: the same pid and start token, a new image.
            let exe = std::env::current_exe().unwrap();
            let err = Command::new(exe)
                .args([REEXEC_CHILD, "--exact", "--nocapture", "--test-threads=1"])
                .env("PIDGUARD_STAGE", "2")
                .exec();
            panic!("exec failed: {err}");
        }
        let g = guard::acquire(&path, &Entry::current().unwrap().with_field("image", "second"), &AcquireOptions::default())
            .expect("the re-executed daemon gets its own guard back");
        assert_eq!(g.entry().pid, std::process::id() as i32);
        assert_eq!(g.entry().field("image"), Some("first"));
        assert!(g.release().unwrap());
        println!("reexec-child: own guard handed back");
        return;
    }
    let d = TempDir::new("reexec");
    let path = d.path().join("daemon.json");
    let out = reexec(REEXEC_CHILD, &[], |c| {
        c.env("PIDGUARD_GUARD", &path).env("PIDGUARD_STAGE", "1");
    });
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("own guard handed back"));
    assert!(!path.exists(), "the own guard released its record");
}

// ---------------------------------------------------------------------------------------------
// /proc mounted hidepid=2; a time namespace; EPERM from the kernel.

const HIDDEN_CHILD: &str = "under_hidepid_a_live_process_is_never_gone";

#[test]
fn under_hidepid_a_live_process_is_never_gone() {
    if let Some(role) = child_role() {
        if role != HIDDEN_CHILD {
            return;
        }
        // Runs as uid 65534 under /proc mounted hidepid=2: the target (uid 1000) is invisible.
        let pid: i32 = std::env::var("PIDGUARD_PID").unwrap().parse().unwrap();
        let dir = std::path::PathBuf::from(std::env::var("PIDGUARD_DIR").unwrap());
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "hidepid is not in force");
        let c = check_pid_file(&dir.join("h.pid"), None, 5.0);
        println!("hidden-child: check {:?} {:?} valid={}", c.reason, c.judgement, c.valid);
        assert!(!matches!(c.reason, CheckReason::Gone | CheckReason::Mismatch), "{c:?}");
        let v = guard::check(&dir.join("g.json")).unwrap();
        println!("hidden-child: guard {:?}", v.identity);
        assert!(!v.is_stale(), "{v:?}");
        let e = guard::acquire(&dir.join("g.json"), &Entry::current().unwrap(), &AcquireOptions::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Held, "{e}");
        let r = stop_pid_file(&dir.join("h.pid"), &StopOptions { schedule: quick(), ..StopOptions::default() }).unwrap();
        println!("hidden-child: stop {:?}", r.outcome);
        assert!(!r.pid_file_removed && r.signals().is_empty(), "{r:?}");
        assert!(dir.join("h.pid").exists());
        println!("hidden-child: ok");
        return;
    }
    if !root() || !have("setpriv") || !have("unshare") {
        println!("SKIP hidepid: needs root, setpriv and unshare");
        return;
    }
    let d = TempDir::new("hidepid");
    std::fs::set_permissions(d.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The checker's own directory: it may write there (acquire's temporary file).
    std::os::unix::fs::chown(d.path(), Some(65534), Some(65534)).unwrap();
    let target = Proc(
        Command::new("setpriv")
            .args(["--reuid=1000", "--regid=1000", "--clear-groups", "sleep", "infinity"])
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_for(Duration::from_secs(5), || pidguard::sys::procfs::read_uids(target.pid()).is_ok_and(|u| u.0 == 1000)));
    let pf = d.path().join("h.pid");
    write_pid_file_with_mtime(&pf, target.pid(), now()).unwrap();
    let tok = start_token(target.pid()).unwrap();
    guard::create(&d.path().join("g.json"), &Entry::new(target.pid(), tok.to_string())).unwrap();
    for f in ["h.pid", "g.json"] {
        std::os::unix::fs::chown(d.path().join(f), Some(65534), Some(65534)).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    // A private mount namespace with /proc remounted hidepid=2 (our PID namespace: the target
    // stays reachable by number), the checker dropped to uid 65534.
    let script = format!(
        "mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups '{}' {HIDDEN_CHILD} --exact --nocapture --test-threads=1",
        exe.display()
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("PIDGUARD_TEST_CHILD", HIDDEN_CHILD)
        .env("PIDGUARD_PID", target.pid().to_string())
        .env("PIDGUARD_DIR", d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}\n{}", String::from_utf8_lossy(&out.stderr));
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("mount") {
        println!("SKIP hidepid: cannot mount /proc with hidepid here");
        return;
    }
    assert!(out.status.success() && text.contains("hidden-child: ok"), "{text}");
    assert!(alive(target.pid()) && pf.exists());
}

#[test]
fn a_process_recorded_inside_a_time_namespace_matches_from_the_host() {
    if !root() || !have("unshare") {
        println!("SKIP time namespace: needs root and unshare");
        return;
    }
    // The process lives in a time namespace whose boot time is a day earlier; its own view of
    // its start ticks is a day later than the host's.
    let probe = Command::new("unshare").args(["--time", "--boottime", "86400", "--fork", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        println!("SKIP time namespace: time namespaces are not available here");
        return;
    }
    let d = TempDir::new("timens");
    // `unshare --time` moves only its children into the new time namespace: fork, and have
    // the child say its pid.
    let mut leader = Command::new("unshare")
        .args(["--time", "--boottime", "86400", "--fork", "sh", "-c", "echo $$; exec sleep infinity"])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // unshare --fork whose child dies of SIGKILL (the cleanup here) says "sigprocmask unblock
        // failed" (it cannot reset SIGKILL's handler): noise, not a failure.
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(leader.stdout.take().unwrap()), &mut line).unwrap();
    let _leader = Proc(leader);
    let pid: i32 = line.trim().parse().unwrap();
    let inside = InsidePid(pid);
    assert!(wait_for(Duration::from_secs(5), || std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")));
    let host = start_token(inside.pid()).unwrap();
    // The token as the process itself reads it: ticks in its own time namespace.
    let own_ticks = {
        let out = Command::new("nsenter")
            .args(["--time", "-t", &inside.pid().to_string(), "cat", &format!("/proc/{}/stat", inside.pid())])
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&out.stdout).to_string();
        s[s.rfind(')').unwrap() + 2..].split(' ').nth(19).and_then(|v| v.parse::<u64>().ok())
    };
    let Some(own_ticks) = own_ticks else {
        println!("SKIP time namespace: nsenter --time could not read the stat");
        return;
    };
    assert_ne!(own_ticks, host.start_ticks, "the time namespace did not shift the start ticks");
    let recorded = pidguard::StartToken { start_ticks: own_ticks, ..host.clone() };
    let j = judge(inside.pid(), Some(&recorded)).unwrap();
    if host.pidfs_ino.is_none() {
        println!("SKIP time namespace: no pidfs inode on this kernel; start ticks decide ({j:?})");
        return;
    }
    assert_eq!(j.verdict, Verdict::Match, "{j:?} (recorded ticks {own_ticks}, host ticks {})", host.start_ticks);
    let g = d.path().join("g.json");
    guard::create(&g, &Entry::new(inside.pid(), recorded.to_string())).unwrap();
    let e = guard::acquire(&g, &Entry::current().unwrap(), &AcquireOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Held);
    assert!(alive(inside.pid()));
}

/// A pid inside the time namespace (its group, the leader's, is ended by the leader's `Proc`).
struct InsidePid(i32);
impl InsidePid {
    fn pid(&self) -> i32 {
        self.0
    }
}

const EPERM_CHILD: &str = "the_kernel_refusing_a_signal_is_permission_denied";

#[test]
fn the_kernel_refusing_a_signal_is_permission_denied() {
    if let Some(role) = child_role() {
        if role != EPERM_CHILD {
            return;
        }
        let pid: i32 = std::env::var("PIDGUARD_PID").unwrap().parse().unwrap();
        let token: pidguard::StartToken = std::env::var("PIDGUARD_TOKEN").unwrap().parse().unwrap();
        let e = pidguard::terminate_pid(pid, Some(&token), pidguard::Policy::Strict, &pidguard::TerminateOptions::default())
            .unwrap_err();
        assert_eq!((e.kind(), e.errno()), (ErrorKind::PermissionDenied, Some(libc::EPERM)), "{e}");
        println!("eperm-child: {e}");
        return;
    }
    if !root() || !have("setpriv") {
        println!("SKIP kernel EPERM: needs root (to run the caller as another user) and setpriv");
        return;
    }
    let p = spawn_group("exec sleep infinity");
    let token = start_token(p.pid()).unwrap();
    let out = reexec(EPERM_CHILD, &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], |c| {
        c.env("PIDGUARD_PID", p.pid().to_string()).env("PIDGUARD_TOKEN", token.to_string());
    });
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("eperm-child:"));
    assert!(alive(p.pid()));
}

// ---------------------------------------------------------------------------------------------
// At the edges (issue: no /proc, a leader whose threads live on, a pid above pid_max, a new
// machine id, a failed thread spawn).

/// A program whose main thread calls `pthread_exit` while a worker thread runs: the leader shows
/// `Z` in /proc/<pid>/stat, the process lives on (openclaw/openclaw PR #137726). Compiled here.
fn leader_exits_program(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let src = dir.join("leader_exits.c");
    std::fs::write(
        &src,
        "#include <pthread.h>\n#include <unistd.h>\nstatic void *w(void *a){ (void)a; for(;;) pause(); return 0; }\n\
         int main(void){ pthread_t t; pthread_create(&t, 0, w, 0); pthread_exit(0); }\n",
    )
    .unwrap();
    let exe = dir.join("leader_exits");
    let ok = Command::new("cc").args(["-O2", "-pthread", "-o"]).arg(&exe).arg(&src).status().is_ok_and(|s| s.success());
    ok.then_some(exe)
}

#[test]
fn a_leader_whose_main_thread_exited_is_alive_to_every_consumer() {
    let d = TempDir::new("leader-exits");
    let Some(exe) = leader_exits_program(d.path()) else {
        println!("SKIP: no C compiler");
        return;
    };
    let p = Proc(Command::new(&exe).process_group(0).stdin(Stdio::null()).spawn().unwrap());
    let pid = p.pid();
    let leader_z = || pidguard::sys::procfs::read_stat(pid).is_ok_and(|s| s.state == b'Z' && s.num_threads == 2);
    assert!(wait_for(Duration::from_secs(10), leader_z), "the leader never showed Z with a live thread");
    // The one rule, without a pidfd: Z with 2 threads has not exited.
    assert!(!pidguard::thread_group_exited(&pidguard::sys::procfs::read_stat(pid).unwrap(), None));
    assert_eq!(pidguard::probe_alive(pid).unwrap(), true);
    assert!(pidguard::is_process_alive(pid as i64));
    let info = pidguard::lookup(pid).unwrap();
    assert!(!info.is_zombie() && info.state == 'Z', "{info:?}");
    assert!(info.argv.as_ref().is_some_and(|a| !a.is_empty()), "the argv is read from a live thread: {info:?}");
    let token = start_token(pid).unwrap();
    assert_eq!(judge(pid, Some(&token)).unwrap().verdict, Verdict::Match);
    // A token-less abx-dl record with its .sh, as `pidguard write` makes it: valid.
    let pf = d.path().join("on_Snapshot__1_lz.bg.pid");
    pidguard::launch::record_existing(&pf, pid, pidguard::launch::RecordFormat::AbxDl).unwrap();
    let c = std::ffi::CString::new(pf.as_os_str().as_encoded_bytes()).unwrap();
    unsafe { libc::removexattr(c.as_ptr(), c"user.pidguard.token".as_ptr()) };
    let sh = d.path().join("on_Snapshot__1_lz.bg.sh");
    let chk = check_pid_file(&pf, Some(&sh), 5.0);
    assert!(chk.valid, "{chk:?}");
    // Stopped, and only then is its pidfile removed.
    let r = stop_pid_file(&pf, &StopOptions { schedule: quick(), cmd_file: Some(sh.clone()), ..StopOptions::default() }).unwrap();
    assert!(matches!(r.outcome, pidguard::StopOutcome::Exited(_)), "{r:?}");
    assert!(wait_for(Duration::from_secs(5), || !std::path::Path::new(&format!("/proc/{pid}/task/{}", pid + 1)).exists() || !alive(pid)));
    assert!(!pf.exists());
}

#[test]
fn a_leader_whose_main_thread_exited_is_stopped_by_cleanup() {
    let d = TempDir::new("leader-exits-cleanup");
    let Some(exe) = leader_exits_program(d.path()) else {
        println!("SKIP: no C compiler");
        return;
    };
    let hooks = d.path().join("out");
    std::fs::create_dir(&hooks).unwrap();
    let p = Proc(Command::new(&exe).process_group(0).stdin(Stdio::null()).spawn().unwrap());
    let pid = p.pid();
    assert!(wait_for(Duration::from_secs(10), || pidguard::sys::procfs::read_stat(pid).is_ok_and(|s| s.state == b'Z' && s.num_threads == 2)));
    let pf = hooks.join("on_Snapshot__1_lz.bg.pid");
    pidguard::launch::record_existing(&pf, pid, pidguard::launch::RecordFormat::AbxDl).unwrap();
    let copts = CleanupOptions { schedule: quick(), no_finalize: true, ..CleanupOptions::default() };
    let reports = cleanup_background_hooks(&hooks, &copts, None).unwrap();
    assert!(matches!(reports[0].outcome, HookOutcome::Exited(_)), "{:?}", reports[0]);
    assert_eq!(pidguard::ExitCode::for_cleanup(&reports), pidguard::ExitCode::Done);
    assert_eq!(pidguard::probe_alive(pid).unwrap(), false, "stopped: a zombie of ours now, not alive");
    assert!(!pidguard::is_process_alive(pid as i64));
}

const NO_PROC_CHILD: &str = "without_proc_every_record_is_kept_undecided";

#[test]
fn without_proc_every_record_is_kept_undecided() {
    if let Some(role) = child_role() {
        if role != NO_PROC_CHILD {
            return;
        }
        // /proc is not mounted in this mount namespace (a chroot, a minimal container).
        assert!(!std::path::Path::new("/proc/self").exists(), "/proc is still mounted");
        let pid: i32 = std::env::var("PIDGUARD_PID").unwrap().parse().unwrap();
        let tok: pidguard::StartToken = std::env::var("PIDGUARD_TOKEN").unwrap().parse().unwrap();
        let dir = std::path::PathBuf::from(std::env::var("PIDGUARD_DIR").unwrap());
        let j = judge(pid, Some(&tok)).unwrap();
        assert_eq!((j.verdict, j.reason), (Verdict::Unverifiable, Reason::MachineIdentityUnreadable(libc::ENOENT)));
        assert_eq!(j.to_string(), "unverifiable (machine-identity-unreadable: ENOENT)");
        assert!(start_token(pid).is_err());
        let pf = dir.join("out/on_Snapshot__1_h.bg.pid");
        let c = check_pid_file(&pf, None, 5.0);
        assert_eq!(c.reason, CheckReason::Unverifiable, "{c:?}");
        let v = guard::check(&dir.join("g.json")).unwrap();
        assert!(!v.is_stale(), "{v:?}");
        let r = stop_pid_file(&pf, &StopOptions { schedule: quick(), ..StopOptions::default() }).unwrap();
        assert!(!r.pid_file_removed && r.signals().is_empty(), "{r:?}");
        assert_eq!(pidguard::ExitCode::for_stop(&r.outcome), pidguard::ExitCode::Undecided);
        let copts = CleanupOptions { schedule: quick(), no_finalize: true, ..CleanupOptions::default() };
        let reports = cleanup_background_hooks(&dir.join("out"), &copts, None).unwrap();
        assert_eq!(reports[0].outcome, HookOutcome::Unverified, "{:?}", reports[0]);
        assert_eq!(pidguard::ExitCode::for_cleanup(&reports), pidguard::ExitCode::Undecided);
        assert!(pf.exists());
        // Nothing was cached from the failed reads: with /proc back, the same record matches.
        let mounted = Command::new("mount").args(["-t", "proc", "proc", "/proc"]).status().unwrap();
        assert!(mounted.success());
        assert_eq!(judge(pid, Some(&tok)).unwrap().verdict, Verdict::Match);
        println!("no-proc-child: ok");
        return;
    }
    if !root() || !have("unshare") {
        println!("SKIP: needs root and unshare");
        return;
    }
    let d = TempDir::new("no-proc");
    std::fs::create_dir(d.path().join("out")).unwrap();
    let p = spawn_group("exec sleep infinity");
    write_pid_file_with_mtime(&d.path().join("out/on_Snapshot__1_h.bg.pid"), p.pid(), now()).unwrap();
    let tok = start_token(p.pid()).unwrap();
    guard::create(&d.path().join("g.json"), &Entry::new(p.pid(), tok.to_string())).unwrap();
    let exe = std::env::current_exe().unwrap();
    let script = format!("umount -l /proc && exec '{}' {NO_PROC_CHILD} --exact --nocapture --test-threads=1", exe.display());
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("PIDGUARD_TEST_CHILD", NO_PROC_CHILD)
        .env("PIDGUARD_PID", p.pid().to_string())
        .env("PIDGUARD_TOKEN", tok.to_string())
        .env("PIDGUARD_DIR", d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("no-proc-child: ok"), "{text}");
    assert!(alive(p.pid()) && d.path().join("out/on_Snapshot__1_h.bg.pid").exists());
}

const NO_PROC_FAULT_CHILD: &str = "a_failed_read_of_a_machine_fact_is_unknown_and_not_cached";

#[test]
fn a_failed_read_of_a_machine_fact_is_unknown_and_not_cached() {
    if let Some(role) = child_role() {
        if role != NO_PROC_FAULT_CHILD {
            return;
        }
        // A fresh process: nothing read yet. "procfs missing" for the machine's facts.
        let pid: i32 = std::env::var("PIDGUARD_PID").unwrap().parse().unwrap();
        let tok: pidguard::StartToken = std::env::var("PIDGUARD_TOKEN").unwrap().parse().unwrap();
        fault::inject(Call::MachineFact, libc::ENOENT);
        let j = judge(pid, Some(&tok)).unwrap();
        assert_eq!(j.reason, Reason::MachineIdentityUnreadable(libc::ENOENT), "{j:?}");
        assert_eq!(judge(pid, None).unwrap().reason, Reason::MachineIdentityUnreadable(libc::ENOENT));
        fault::clear();
        assert_eq!(judge(pid, Some(&tok)).unwrap().verdict, Verdict::Match, "a failed read was cached");
        println!("fault-child: ok");
        return;
    }
    let p = spawn_group("exec sleep infinity");
    let tok = start_token(p.pid()).unwrap();
    let out = reexec(NO_PROC_FAULT_CHILD, &[], |c| {
        c.env("PIDGUARD_PID", p.pid().to_string()).env("PIDGUARD_TOKEN", tok.to_string());
    });
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("fault-child: ok"));
}

#[test]
fn an_equal_boot_id_proves_the_same_kernel_whatever_the_machine_id() {
    // rook/rook#182: the record was written before /etc/machine-id was generated (or it was
    // replaced since): same boot id, same pidfs inode.
    let d = TempDir::new("machine-id");
    std::fs::create_dir(d.path().join("out")).unwrap();
    let p = spawn_group("exec sleep infinity");
    let mut tok = start_token(p.pid()).unwrap();
    tok.machine_id = "written-before-machine-id".into();
    assert_eq!(judge(p.pid(), Some(&tok)).unwrap().verdict, Verdict::Match);
    let pf = d.path().join("out/on_Snapshot__1_h.bg.pid");
    write_pid_file_with_mtime(&pf, p.pid(), now()).unwrap();
    let c = std::ffi::CString::new(pf.as_os_str().as_encoded_bytes()).unwrap();
    let v = tok.to_string();
    assert_eq!(unsafe { libc::setxattr(c.as_ptr(), c"user.pidguard.token".as_ptr(), v.as_ptr().cast(), v.len(), 0) }, 0);
    assert!(check_pid_file(&pf, None, 5.0).valid);
    let copts = CleanupOptions { schedule: quick(), no_finalize: true, ..CleanupOptions::default() };
    let reports = cleanup_background_hooks(&d.path().join("out"), &copts, None).unwrap();
    assert!(matches!(reports[0].outcome, HookOutcome::Exited(_)), "{:?}", reports[0]);
    // Another machine's record: a differing machine id *and* boot id. Kept, and cleanup says
    // it left something undecided.
    let q = spawn_group("exec sleep infinity");
    let mut tok = start_token(q.pid()).unwrap();
    tok.machine_id = "another-host".into();
    tok.boot_id = "00000000-0000-4000-8000-000000000000".into();
    let pf = d.path().join("out/on_Snapshot__2_h.bg.pid");
    write_pid_file_with_mtime(&pf, q.pid(), now()).unwrap();
    let v = tok.to_string();
    let c = std::ffi::CString::new(pf.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::setxattr(c.as_ptr(), c"user.pidguard.token".as_ptr(), v.as_ptr().cast(), v.len(), 0) }, 0);
    let reports = cleanup_background_hooks(&d.path().join("out"), &copts, None).unwrap();
    let r = reports.iter().find(|r| r.pid == Some(q.pid())).unwrap();
    assert_eq!(r.outcome, HookOutcome::Foreign, "{r:?}");
    assert_eq!(pidguard::ExitCode::for_cleanup(&reports), pidguard::ExitCode::Undecided);
    assert!(alive(q.pid()) && pf.exists());
}

const PID_MAX_CHILD: &str = "a_live_pid_above_pid_max_is_judged_by_its_identity";

#[test]
fn a_live_pid_above_pid_max_is_judged_by_its_identity() {
    if let Some(role) = child_role() {
        if role != PID_MAX_CHILD {
            return;
        }
        // PID 1 of a private PID namespace; pid_max is per namespace (Linux >= 6.14).
        let set = |f: &str, v: &str| std::fs::write(format!("/proc/sys/kernel/{f}"), v);
        if set("pid_max", "100000").is_err() || set("ns_last_pid", "50000").is_err() {
            println!("SKIP: pid_max or ns_last_pid cannot be set in this namespace");
            return;
        }
        let p = spawn_group("exec sleep infinity");
        assert!(p.pid() > 50000, "pid {}", p.pid());
        let dir = std::path::PathBuf::from(std::env::var("PIDGUARD_DIR").unwrap());
        let pf = dir.join("on_Snapshot__1_h.bg.pid");
        write_pid_file_with_mtime(&pf, p.pid(), now()).unwrap();
        set("pid_max", "32768").unwrap();
        assert!(p.pid() > pidguard::sys::procfs::kernel_pid_max().unwrap());
        assert!(check_pid_file(&pf, None, 5.0).valid);
        let copts = CleanupOptions { schedule: quick(), no_finalize: true, ..CleanupOptions::default() };
        let reports = cleanup_background_hooks(&dir, &copts, None).unwrap();
        assert!(matches!(reports[0].outcome, HookOutcome::Exited(_)), "{:?}", reports[0]);
        assert!(!pf.exists());
        // Above the kernel's hard limit nothing can live: malformed.
        std::fs::write(&pf, "4194305").unwrap();
        assert_eq!(check_pid_file(&pf, None, 5.0).reason, CheckReason::Malformed);
        println!("pid-max-child: ok");
        return;
    }
    if !root() || !have("unshare") {
        println!("SKIP: needs root and unshare");
        return;
    }
    let d = TempDir::new("pid-max");
    let out = reexec(PID_MAX_CHILD, &["unshare", "--pid", "--fork", "--mount-proc"], |c| {
        c.env("PIDGUARD_DIR", d.path());
    });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && (text.contains("pid-max-child: ok") || text.contains("SKIP")), "{text}");
}

#[test]
fn a_failed_thread_spawn_leaves_the_cleanup_working_on_one_thread() {
    // nubjs/nub PR #136: EAGAIN from clone under a pids limit. Enough hooks for a pool.
    let d = TempDir::new("no-threads");
    let n = pidguard::PARALLEL_MIN_HOOKS + 2;
    let procs: Vec<Proc> = (0..n)
        .map(|i| {
            let p = spawn_group("exec sleep infinity");
            write_pid_file_with_mtime(&d.path().join(format!("on_Snapshot__{i}_h.bg.pid")), p.pid(), now()).unwrap();
            p
        })
        .collect();
    fault::inject(Call::ThreadSpawn, libc::EAGAIN);
    let copts = CleanupOptions { schedule: quick(), no_finalize: true, ..CleanupOptions::default() };
    let reports = cleanup_background_hooks(d.path(), &copts, None).unwrap();
    let tried = fault::count(Call::ThreadSpawn);
    fault::clear();
    assert!(tried >= 1, "the pool was not asked for");
    assert_eq!(reports.len(), n);
    assert!(reports.iter().all(|r| matches!(r.outcome, HookOutcome::Exited(_))), "{:?}", reports.iter().find(|r| !matches!(r.outcome, HookOutcome::Exited(_))));
    assert!(procs.iter().all(|p| !alive(p.pid())));
}

#[test]
fn a_schedule_without_a_last_wait_lets_the_target_act_before_unkillable() {
    // `--retry 0` is TERM/0/KILL/0: the target had no time to act on either signal.
    for sched in ["TERM/0/KILL/0", "TERM/-1"] {
        let d = TempDir::new("no-last-wait");
        let p = spawn_group("exec sleep infinity");
        let pf = d.path().join("h.pid");
        write_pid_file_with_mtime(&pf, p.pid(), now()).unwrap();
        let r = stop_pid_file(&pf, &StopOptions { schedule: sched.parse().unwrap(), ..StopOptions::default() }).unwrap();
        assert!(matches!(r.outcome, pidguard::StopOutcome::Exited(_)), "{sched}: {r:?}");
    }
}
