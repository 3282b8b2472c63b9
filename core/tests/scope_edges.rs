//! Scopes at their edges (issue 34) on real processes: only pidguard's own leaves are scopes;
//! a privileged spawner's leaf is never below a cgroup another uid can write; empty leaves do
//! not pile up.
//!
//! Every scenario runs in a child of this test binary (`PIDGUARD_TEST_CHILD=<name>`), in a
//! private PID namespace (`unshare --pid --fork --mount-proc`: whatever a failing test leaves
//! dies with it) and in a cgroup v2 directory of its own, `/pidguard-edges-<pid>-<n>` below the
//! cgroup2 mount, with `pids.max` set (where the pids controller is available): the cgroups a
//! scenario makes are below it, and the parent removes it afterwards.
//!
//! Needs root, unshare(1) and a cgroup2 mount; otherwise each test prints why and passes.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{child_role, reexec, wait_for, TempDir};
use pidguard::identity::{ScopeRecord, SCOPE_XATTR};
use pidguard::launch::{self, ScopeMode, SpawnOptions};
use pidguard::{cleanup_background_hooks, stop_pid_file, CleanupOptions, HookOutcome, Refusal, StopOptions, StopOutcome};

/// The cgroup2 mount point from `/proc/self/mountinfo`, never assumed.
fn cgroup2_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        let dash = f.iter().position(|x| *x == "-")?;
        (f.get(dash + 1) == Some(&"cgroup2") && f[3] == "/").then(|| PathBuf::from(f[4].replace("\\040", " ")))
    })
}

fn cannot_run() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("run as root (cgroups, other uids)".into());
    }
    if cgroup2_mount().is_none() {
        return Some("no cgroup2 mount in /proc/self/mountinfo".into());
    }
    match Command::new("unshare").args(["--pid", "--fork", "--mount-proc", "true"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("unshare --pid not permitted: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Some(format!("no unshare(1): {e}")),
    }
}

static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Run the test `name` as a child (see the module docs); fail if it failed.
fn run_child(name: &str) {
    if let Some(why) = cannot_run() {
        println!("SKIP {name}: {why}");
        return;
    }
    let mount = cgroup2_mount().unwrap();
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let cg = mount.join(format!("pidguard-edges-{}-{n}", std::process::id()));
    std::fs::create_dir(&cg).unwrap();
    // Bounded: a scenario never forks more than a few processes at once.
    if std::fs::write(cg.join("pids.max"), "256").is_err() {
        println!("note: no pids controller in {}: pids.max not set", cg.display());
    }
    let tmp = std::env::temp_dir().join(format!("pidguard-edges-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let script = r#"echo 0 > "$PIDGUARD_TEST_CGROUP/cgroup.procs" || exit 97
exec "$@""#;
    let out = reexec(name, &["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script, "sh"], |c| {
        c.env("PIDGUARD_TEST_CGROUP", &cg).env("TMPDIR", &tmp);
    });
    let events = cg.join("cgroup.events");
    wait_for(Duration::from_secs(20), || std::fs::read_to_string(&events).is_ok_and(|t| t.contains("populated 0")));
    remove_cgroup_tree(&cg);
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(out.status.success(), "{name} failed: {:?}", out.status);
}

/// Remove a test cgroup and everything below it (killing what is still in it: only this test's
/// processes can be there).
fn remove_cgroup_tree(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_cgroup_tree(&e.path());
        }
    }
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    let events = dir.join("cgroup.events");
    wait_for(Duration::from_secs(10), || std::fs::read_to_string(&events).map_or(true, |t| t.contains("populated 0")));
    let _ = std::fs::remove_dir(dir);
}

/// A test that runs `$body()` in a child (see [`run_child`]).
macro_rules! scenario {
    ($name:ident, $body:expr) => {
        #[test]
        fn $name() {
            const NAME: &str = stringify!($name);
            match child_role() {
                Some(r) if r == NAME => ($body)(),
                Some(_) => {}
                None => run_child(NAME),
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// inside the child

/// The test's own cgroup (absolute path).
fn test_cgroup() -> PathBuf {
    PathBuf::from(std::env::var("PIDGUARD_TEST_CGROUP").unwrap())
}

/// `path` below the cgroup2 mount, as a record names it (starting with `/`).
fn rel(path: &Path) -> String {
    format!("/{}", path.strip_prefix(cgroup2_mount().unwrap()).unwrap().display())
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap().trim().to_string()
}

fn ino(path: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap())
}

fn alive(pid: i32) -> bool {
    // A zombie is not alive: read its state.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|t| t.rsplit_once(") ").is_some_and(|(_, r)| !r.starts_with('Z')))
}

/// A process of the test's own (`sleep infinity` in a session of its own), moved into the
/// cgroup `into`.
fn bystander_in(into: &Path) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new("sleep");
    c.arg("infinity").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = c.spawn().unwrap();
    std::fs::write(into.join("cgroup.procs"), child.id().to_string()).unwrap();
    child
}

fn end(mut c: std::process::Child) {
    let _ = c.kill();
    let _ = c.wait();
}

fn set_xattr(path: &Path, name: &str, v: &[u8]) {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = std::ffi::CString::new(name).unwrap();
    // SAFETY: valid strings and a readable buffer of its length.
    let r = unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), v.as_ptr().cast(), v.len(), 0) };
    assert_eq!(r, 0, "setxattr {name}: {}", std::io::Error::last_os_error());
}

fn stop(pf: &Path) -> pidguard::StopReport {
    let r = stop_pid_file(pf, &StopOptions { schedule: "TERM/1/KILL/1".parse().unwrap(), ..StopOptions::default() }).unwrap();
    println!("stop {}: {:?} detail {:?} signals {:?}", pf.display(), r.outcome, r.detail, r.signals());
    r
}

// ---------------------------------------------------------------------------------------------
// 1. only pidguard's own leaves are scopes

/// A root-owned record whose scope names another cgroup — a sibling cgroup with a process in it,
/// and a cgroup of a leaf's name that has a child cgroup — is refused by stop and cleanup: the
/// record kept, the other cgroup's process alive, the cgroup not removed.
fn foreign_cgroup_body() {
    let cg = test_cgroup();
    let victim_cg = cg.join("victim");
    std::fs::create_dir(&victim_cg).unwrap();
    let victim = bystander_in(&victim_cg);
    // A cgroup with a leaf's name holding a child cgroup (a slice with services below).
    let fake = cg.join("fake").join("pidguard").join("run-1-0123456789abcdef");
    std::fs::create_dir_all(fake.join("service")).unwrap();
    let service = bystander_in(&fake.join("service"));
    let dir = TempDir::new("foreign");
    let hooks = dir.path().join("plugin");
    std::fs::create_dir_all(&hooks).unwrap();
    for (target, who) in [(&victim_cg, victim.id()), (&fake, service.id())] {
        let pf = hooks.join("on_Snapshot__10_x.bg.pid");
        // The recorded process itself: ours, in a process group only.
        let s = launch::spawn(&pf, &["sleep", "infinity"], &SpawnOptions { scope: ScopeMode::Group, ..SpawnOptions::default() }).unwrap();
        let rec = ScopeRecord::Cgroup { boot_id: boot_id(), id: ino(target), path: rel(target) };
        set_xattr(&pf, SCOPE_XATTR, rec.to_string().as_bytes());
        let r = stop(&pf);
        assert_eq!(r.outcome, StopOutcome::Refused(Refusal::UntrustedPidfile), "{:?}", r.detail);
        assert!(r.detail.clone().unwrap_or_default().contains("not a pidguard leaf"), "{:?}", r.detail);
        assert!(r.signals().is_empty(), "nothing signalled");
        let c = cleanup_background_hooks(dir.path(), &CleanupOptions { no_finalize: true, ..CleanupOptions::default() }, None).unwrap();
        let h = c.first().map(|h| (h.outcome.clone(), h.signals.clone()));
        println!("cleanup: {h:?}");
        assert!(matches!(h, Some((HookOutcome::Refused(Refusal::UntrustedPidfile), ref sig)) if sig.is_empty()), "{h:?}");
        assert!(pf.exists(), "the record is kept");
        assert!(alive(who as i32), "the other cgroup's process is alive");
        assert!(alive(s.pid), "the recorded process is not signalled either");
        assert!(target.is_dir(), "the other cgroup is not removed");
        assert!(std::fs::read_to_string(target.join("cgroup.procs")).unwrap().trim().is_empty() || who == victim.id());
        // Ours: end it by hand, drop the record.
        // SAFETY: kill of our own child.
        unsafe { libc::kill(s.pid, libc::SIGKILL) };
        let mut st = 0;
        // SAFETY: reap our own child.
        unsafe { libc::waitpid(s.pid, &mut st, 0) };
        std::fs::remove_file(&pf).unwrap();
    }
    end(victim);
    end(service);
}
scenario!(a_record_naming_a_cgroup_that_is_not_a_pidguard_leaf_is_refused, foreign_cgroup_body);

// ---------------------------------------------------------------------------------------------
// 2. root's leaf is never below a cgroup another uid can write

/// Root spawns from inside a cgroup delegated to uid 4242: the leaf is made below the nearest
/// ancestor root owns (the test's cgroup), never below the user's; with a `pidguard` directory
/// there that the user owns, no leaf is made (Cgroup: an error with the reason; Auto: the
/// supervisor, and the note says why).
fn delegated_body() {
    let cg = test_cgroup();
    let user = cg.join("user");
    std::fs::create_dir(&user).unwrap();
    for f in [&user, &user.join("cgroup.procs"), &user.join("cgroup.subtree_control")] {
        std::os::unix::fs::chown(f, Some(4242), Some(4242)).unwrap();
    }
    std::fs::write(user.join("cgroup.procs"), "0").unwrap();
    let dir = TempDir::new("delegated");
    let pf = dir.path().join("a.pid");
    let s = launch::spawn(&pf, &["sleep", "infinity"], &SpawnOptions { scope: ScopeMode::Cgroup, ..SpawnOptions::default() }).unwrap();
    let path = match &s.scope_record {
        Some(ScopeRecord::Cgroup { path, .. }) => path.clone(),
        r => panic!("not a cgroup scope: {r:?}"),
    };
    println!("leaf: {path}");
    assert!(!path.starts_with(&rel(&user)), "root's leaf below the user's cgroup: {path}");
    assert!(path.starts_with(&format!("{}/pidguard/run-", rel(&cg))), "the leaf is below the nearest root-owned ancestor: {path}");
    assert!(!user.join("pidguard").exists(), "nothing made in the user's cgroup");
    let r = stop(&pf);
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?}", r.outcome);
    let mut st = 0;
    // SAFETY: reap our own child.
    unsafe { libc::waitpid(s.pid, &mut st, 0) };
    // The user owns the `pidguard` directory root would use: refused, with the reason.
    std::os::unix::fs::chown(cg.join("pidguard"), Some(4242), Some(4242)).unwrap();
    let e = launch::spawn(&pf, &["sleep", "infinity"], &SpawnOptions { scope: ScopeMode::Cgroup, ..SpawnOptions::default() }).unwrap_err();
    println!("refused: {e}");
    assert!(e.message().contains("another uid"), "{e}");
    assert!(!pf.exists());
    let s = launch::spawn(&pf, &["sleep", "infinity"], &SpawnOptions::default()).unwrap();
    println!("auto: {:?} note {:?}", s.scope, s.note);
    assert_eq!(s.scope, pidguard::identity::ScopeKind::Supervisor);
    assert!(s.note.as_deref().unwrap_or("").contains("another uid"), "{:?}", s.note);
    let r = stop(&pf);
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?}", r.outcome);
    std::fs::write(cg.join("cgroup.procs"), "0").unwrap();
}
scenario!(roots_leaf_is_never_below_a_cgroup_a_user_owns, delegated_body);

// ---------------------------------------------------------------------------------------------
// 4. empty leaves do not pile up

fn leaves(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("run-")).collect()
}

/// 20 spawns of commands that exit by themselves, through the library and through the CLI
/// (whose spawner is gone at once): at most one empty leaf left afterwards; a leaf whose
/// command still runs, and another uid's empty leaf, are kept.
fn pile_body() {
    let cg = test_cgroup();
    let dir = TempDir::new("pile");
    let keep = launch::spawn(&dir.path().join("keep.pid"), &["sleep", "infinity"], &SpawnOptions { scope: ScopeMode::Cgroup, ..SpawnOptions::default() }).unwrap();
    let theirs = cg.join("pidguard").join("run-1-00000000000000ff");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).unwrap();
    for i in 0..20 {
        let s = launch::spawn(&dir.path().join(format!("t{i}.pid")), &["true"], &SpawnOptions { scope: ScopeMode::Cgroup, ..SpawnOptions::default() }).unwrap();
        let mut st = 0;
        // SAFETY: reap our own child.
        unsafe { libc::waitpid(s.pid, &mut st, 0) };
    }
    let left = leaves(&cg.join("pidguard"));
    println!("after 20 library spawns: {} leaves: {left:?}", left.len());
    // Ours still running, the other uid's, and at most the last spawn's.
    assert!(left.len() <= 3, "{left:?}");
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/pidguard");
    if cli.exists() {
        for i in 0..20 {
            let o = Command::new(&cli).arg("run").arg("--scope=cgroup").arg(dir.path().join(format!("c{i}.pid"))).args(["--", "true"]).output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        // Ours still running, the other uid's, the library's last spawn's (only this process's
        // next spawn knows its spawn returned: its spawner, this process, is alive) and the last
        // CLI run's (its command may not have exited yet).
        let left = leaves(&cg.join("pidguard"));
        println!("after 20 CLI runs: {} leaves: {left:?}", left.len());
        assert!(left.len() <= 4, "{left:?}");
    } else {
        println!("note: no {} built: the CLI half is not run", cli.display());
    }
    assert!(leaves(&cg.join("pidguard")).iter().any(|n| *n == "run-1-00000000000000ff"), "another uid's leaf is kept");
    let keep_leaf = match &keep.scope_record {
        Some(ScopeRecord::Cgroup { path, .. }) => cgroup2_mount().unwrap().join(path.trim_start_matches('/')),
        r => panic!("{r:?}"),
    };
    assert!(keep_leaf.is_dir(), "a leaf whose command runs is kept");
    let r = stop(&dir.path().join("keep.pid"));
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?}", r.outcome);
}
scenario!(empty_leaves_do_not_pile_up, pile_body);

// ---------------------------------------------------------------------------------------------
// 3. `write --adopt` pinned end to end

fn cgroup_of(pid: i32) -> String {
    let t = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    t.lines().find_map(|l| l.strip_prefix("0::")).unwrap().trim_end().to_string()
}

/// An adopted process whose record cannot be written (its `.sh` path is a directory; a guard
/// record held by a live process) is put back into the cgroup it came from, and no leaf is
/// left; a record that can be written keeps it in its leaf, recorded with its token.
fn adopt_body() {
    let cg = test_cgroup();
    let dir = TempDir::new("adopt");
    let p = bystander_in(&cg);
    let pid = p.id() as i32;
    let before = cgroup_of(pid);
    // The abx-dl format: the `.sh` cannot be written.
    let pf = dir.path().join("a.pid");
    std::fs::create_dir(dir.path().join("a.sh")).unwrap();
    let e = launch::record_existing_scoped(&pf, pid, launch::RecordFormat::AbxDl, true).unwrap_err();
    println!("abx-dl: {e}");
    assert_eq!(cgroup_of(pid), before, "put back where it was");
    assert!(leaves(&cg.join("pidguard")).is_empty(), "no leaf left: {:?}", leaves(&cg.join("pidguard")));
    assert!(alive(pid) && !pf.exists());
    // The guard format: the record is held by a live process (ours).
    let gf = dir.path().join("g.json");
    let holder = launch::spawn(&gf, &["sleep", "infinity"], &SpawnOptions { scope: ScopeMode::Group, format: launch::RecordFormat::Guard, ..SpawnOptions::default() }).unwrap();
    let e = launch::record_existing_scoped(&gf, pid, launch::RecordFormat::Guard, true).unwrap_err();
    println!("guard: {e}");
    assert_eq!(cgroup_of(pid), before, "put back where it was");
    assert!(leaves(&cg.join("pidguard")).is_empty(), "no leaf left: {:?}", leaves(&cg.join("pidguard")));
    // SAFETY: kill and reap our own child.
    unsafe {
        libc::kill(holder.pid, libc::SIGKILL);
        libc::waitpid(holder.pid, std::ptr::null_mut(), 0);
    }
    // The control: a record that can be written keeps the process in its leaf.
    let pf = dir.path().join("b.pid");
    let rec = launch::record_existing_scoped(&pf, pid, launch::RecordFormat::AbxDl, true).unwrap().expect("a scope recorded");
    println!("adopted: {rec}");
    assert_ne!(cgroup_of(pid), before);
    assert_eq!(Some(cgroup_of(pid)), match &rec { ScopeRecord::Cgroup { path, .. } => Some(path.clone()), _ => None });
    let c = pidguard::check_pid_file(&pf, None, 5.0);
    assert_eq!(c.token.map(|t| t.to_string()), Some(pidguard::start_token(pid).unwrap().to_string()));
    let r = stop(&pf);
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?}", r.outcome);
    end(p);
}
scenario!(an_adopted_process_whose_record_cannot_be_written_is_put_back, adopt_body);

// ---------------------------------------------------------------------------------------------
// 7. the supervisor is a small program, not a fork of the spawner

fn status_field(pid: i32, key: &str) -> String {
    let t = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    t.lines().find_map(|l| l.strip_prefix(key)).unwrap_or("").trim().to_string()
}

/// A spawner with a 64 MiB heap (written) starts a command under a supervisor: the supervisor
/// is the `pidguard-scope` program (its executable, its name in `ps`), holding at most 2 MiB,
/// not a copy of the spawner's heap; the command is stopped through it as before.
fn small_supervisor_body() {
    let mut heap = vec![1u8; 64 << 20];
    for b in heap.iter_mut().step_by(4096) {
        *b = 2;
    }
    let dir = TempDir::new("smallsup");
    let pf = dir.path().join("a.pid");
    let s = launch::spawn(&pf, &["sh", "-c", "sleep infinity & exec sleep infinity"], &SpawnOptions { scope: ScopeMode::Supervisor, ..SpawnOptions::default() }).unwrap();
    let sup = s.supervisor_pid.unwrap();
    // The exec may still be under way: wait for the program's name.
    assert!(wait_for(Duration::from_secs(10), || status_field(sup, "Name:") == "pidguard-scope" && std::fs::read_link(format!("/proc/{sup}/exe")).is_ok_and(|e| e.ends_with("pidguard-scope"))));
    let rss_kib: u64 = status_field(sup, "VmRSS:").trim_end_matches(" kB").trim().parse().unwrap();
    let exe = std::fs::read_link(format!("/proc/{sup}/exe")).unwrap();
    println!("supervisor {sup}: exe {} VmRSS {rss_kib} KiB (the spawner's heap: 65536 KiB)", exe.display());
    assert!(rss_kib <= 2048, "the supervisor holds {rss_kib} KiB");
    assert!(wait_for(Duration::from_secs(10), || std::fs::read_to_string(format!("/proc/{}/stat", s.pid)).is_ok_and(|t| t.contains("(sleep)"))));
    let r = stop(&pf);
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?}", r.outcome);
    let mut st = 0;
    // SAFETY: reap the supervisor, our own child.
    unsafe { libc::waitpid(sup, &mut st, 0) };
    std::hint::black_box(&heap);
}
scenario!(the_supervisor_is_a_small_program_not_a_copy_of_the_spawner, small_supervisor_body);

/// The adopted process exits right after the move and its pid is reused by a bystander (forced
/// with `ns_last_pid`) before the record is written: nothing is recorded — not the bystander's
/// token under the adopted pid — and the bystander is left alone.
fn adopt_reuse_body() {
    use std::os::unix::process::CommandExt;
    let cg = test_cgroup();
    let dir = TempDir::new("adoptreuse");
    let p = bystander_in(&cg);
    let pid = p.id() as i32;
    let child = std::rc::Rc::new(std::cell::RefCell::new(Some(p)));
    let by: std::rc::Rc<std::cell::RefCell<Option<std::process::Child>>> = Default::default();
    let (c2, b2) = (child.clone(), by.clone());
    let ran = common::race_at(pidguard::sys::fault::Point::AfterAdoptMove, move || {
        if let Some(mut c) = c2.borrow_mut().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for _ in 0..20 {
            std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).unwrap();
            let mut c = Command::new("sleep");
            c.arg("infinity").stdin(Stdio::null()).process_group(0);
            let c = c.spawn().unwrap();
            if c.id() as i32 == pid {
                *b2.borrow_mut() = Some(c);
                return;
            }
            end(c);
        }
        panic!("could not place a bystander at pid {pid}");
    });
    let pf = dir.path().join("a.pid");
    let r = launch::record_existing_scoped(&pf, pid, launch::RecordFormat::AbxDl, true);
    pidguard::sys::fault::clear_point_hook();
    println!("adopt across a reuse: {r:?}");
    assert_eq!(ran.get(), 1, "the point was reached");
    let e = r.unwrap_err();
    assert_eq!(e.kind(), pidguard::ErrorKind::NoSuchProcess, "{e}");
    assert!(!pf.exists(), "nothing recorded");
    let b = by.borrow_mut().take().expect("the bystander");
    assert!(alive(b.id() as i32), "the bystander runs on");
    assert_eq!(cgroup_of(b.id() as i32), rel(&cg), "the bystander was not moved");
    assert!(leaves(&cg.join("pidguard")).is_empty(), "no leaf left: {:?}", leaves(&cg.join("pidguard")));
    end(b);
}
scenario!(an_adopted_pid_reused_after_the_move_is_never_recorded, adopt_reuse_body);
