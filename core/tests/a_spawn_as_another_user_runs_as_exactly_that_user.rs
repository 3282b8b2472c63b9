//! `launch::spawn` with `SpawnOptions::{user, group, extra_groups}`: the command's real,
//! effective and saved uid and gid and its supplementary groups are exactly those asked for, in
//! both scope modes; the supervisor and the leaf stay the caller's; the record says who the
//! command runs as; a stop by the caller leaves no survivor (a plain child, a `setsid`
//! grandchild, a double-forked `setsid` daemon). A caller that may not take the identity gets
//! `PermissionDenied` with nothing made; the ArchiveBox shape (ids (0, U, 0)) works. And a
//! command killed by a signal under a supervisor reads as signalled to the caller.
//!
//! Root only (skipped, with the reason, otherwise). The callers that are not root are this test
//! binary re-run as a child (`common::reexec`) that changes its own ids first.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{child_role, reexec, wait_for, TempDir};
use pidguard::launch::{self, IdSpec, ScopeMode, SpawnOptions};
use pidguard::ErrorKind;

const NOBODY: u32 = 65534;

fn root() -> bool {
    // SAFETY: geteuid cannot fail.
    let r = unsafe { libc::geteuid() } == 0;
    if !r {
        eprintln!("skipped: spawning as another user needs root");
    }
    r
}

fn reap(pid: i32) -> i32 {
    let mut st = 0;
    // SAFETY: `pid` is our own child; `st` is writable.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    st
}

/// A directory nobody may write and reach: /tmp/pidguard-user-<pid>-<tag>, mode 0777.
fn shared(tag: &str) -> TempDir {
    let d = TempDir(PathBuf::from(format!("/tmp/pidguard-user-{}-{tag}", std::process::id())));
    let _ = std::fs::remove_dir_all(d.path());
    std::fs::create_dir_all(d.path()).unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// The four numbers of the `Uid:`, `Gid:` lines and the `Groups:` of /proc/<pid>/status.
fn ids(pid: i32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = |k: &str| -> Vec<u32> {
        let l = s.lines().find_map(|l| l.strip_prefix(k)).unwrap_or("");
        let mut v: Vec<u32> = l.split_ascii_whitespace().map(|n| n.parse().unwrap()).collect();
        v.sort_unstable();
        v
    };
    (line("Uid:"), line("Gid:"), line("Groups:"))
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !matches!(s[s.rfind(')').unwrap() + 2..].as_bytes()[0], b'Z' | b'X'),
        Err(_) => false,
    }
}

const TREE: &str = "sleep 3600 & echo $! > child.pid; setsid sh -c 'echo $$ > grand.pid; exec sleep 3600' & \
                    (setsid sh -c \"echo \\$\\$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600\" &); exec sleep 3600";

fn read_pid(dir: &Path, name: &str) -> i32 {
    let f = dir.join(name);
    // The file exists before `echo` has written its line: wait for the whole line.
    assert!(wait_for(Duration::from_secs(20), || std::fs::read_to_string(&f).is_ok_and(|t| t.ends_with('\n'))), "{name} was never written");
    std::fs::read_to_string(&f).unwrap().trim().parse().unwrap()
}

fn leaf_possible() -> bool {
    let d = TempDir::new("user-probe");
    match launch::spawn(&d.path().join("p.pid"), &["true"], &SpawnOptions { scope: ScopeMode::Cgroup, ..Default::default() }) {
        Ok(s) => {
            reap(s.pid);
            let _ = pidguard::stop_pid_file(&d.path().join("p.pid"), &pidguard::StopOptions::default());
            true
        }
        Err(e) => {
            eprintln!("skipped the cgroup mode: {e}");
            false
        }
    }
}

#[test]
fn the_tree_runs_as_exactly_the_ids_asked_for_and_the_callers_stop_reaches_all_of_it() {
    if child_role().is_some() || !root() {
        return;
    }
    let mut modes = vec![ScopeMode::Supervisor];
    if leaf_possible() {
        modes.push(ScopeMode::Cgroup);
    }
    for mode in modes {
        let d = shared(mode.as_str());
        let pf = d.path().join("tree.pid");
        let o = SpawnOptions {
            scope: mode,
            cwd: Some(d.path().to_path_buf()),
            user: Some(IdSpec::Name("nobody".into())),
            group: Some(IdSpec::Id(NOBODY)),
            extra_groups: Some(vec![IdSpec::Id(100), IdSpec::Name("65534".into())]),
            ..Default::default()
        };
        let s = launch::spawn(&pf, &["sh", "-c", TREE], &o).expect("spawn as nobody");
        assert_eq!(s.run_as.as_ref().map(|r| r.to_string()).as_deref(), Some("uid=65534 gid=65534 groups=100,65534"));
        let pids = [s.pid, read_pid(d.path(), "child.pid"), read_pid(d.path(), "grand.pid"), read_pid(d.path(), "daemon.pid")];
        for p in pids {
            assert_eq!(ids(p), (vec![NOBODY; 4], vec![NOBODY; 4], vec![100, NOBODY]), "pid {p} ({mode:?})");
        }
        match s.supervisor_pid {
            Some(sup) => assert_eq!(ids(sup).0, vec![0; 4], "the supervisor keeps the caller's ids"),
            None => {
                let rec = s.scope_record.as_ref().unwrap().to_string();
                let path = rec.splitn(4, ':').nth(3).unwrap().to_string();
                let mount = std::fs::read_to_string("/proc/self/mountinfo").unwrap().lines().find_map(|l| {
                    let (left, right) = l.split_once(" - ")?;
                    (right.split(' ').next() == Some("cgroup2")).then(|| left.split(' ').nth(4).unwrap().to_string())
                });
                let leaf = PathBuf::from(mount.unwrap()).join(path.trim_start_matches('/'));
                assert_eq!(std::fs::metadata(&leaf).unwrap().uid(), 0, "the leaf stays the caller's");
                assert_eq!(std::fs::metadata(leaf.join("cgroup.procs")).unwrap().uid(), 0);
            }
        }
        assert_eq!(std::fs::metadata(&pf).unwrap().uid(), 0, "the record is the caller's");
        let r = pidguard::stop_pid_file(&pf, &pidguard::StopOptions { schedule: "TERM/5/KILL/5".parse().unwrap(), ..Default::default() }).unwrap();
        assert!(matches!(r.outcome, pidguard::StopOutcome::Exited(_)), "{r:?}");
        reap(s.supervisor_pid.unwrap_or(s.pid));
        for p in pids {
            assert!(wait_for(Duration::from_secs(10), || !alive(p)), "pid {p} survived the stop ({mode:?})");
        }
    }
}

#[test]
fn bad_names_and_ids_are_refused_before_anything_is_made() {
    if child_role().is_some() || !root() {
        return;
    }
    let d = TempDir::new("user-bad");
    let pf = d.path().join("x.pid");
    let try_as = |user: Option<IdSpec>, group: Option<IdSpec>| {
        launch::spawn(&pf, &["sleep", "100"], &SpawnOptions { user, group, ..Default::default() }).unwrap_err().kind()
    };
    assert_eq!(try_as(Some(IdSpec::Name("no-such-user-pidguard".into())), None), ErrorKind::NotFound);
    assert_eq!(try_as(Some(IdSpec::Id(NOBODY)), Some(IdSpec::Name("no-such-group-pidguard".into()))), ErrorKind::NotFound);
    assert_eq!(try_as(Some(IdSpec::Id(u32::MAX)), None), ErrorKind::InvalidArgument);
    // A uid with no entry needs its group: no silent root gid.
    assert_eq!(try_as(Some(IdSpec::Id(4_242_424)), None), ErrorKind::InvalidArgument);
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "a refused spawn left a file");
}

/// The child role: drop this process to nobody (or to the ArchiveBox shape), then spawn.
fn as_caller(shape: &str, dir: &Path, ask: SpawnOptions) {
    // SAFETY: id calls on this process (the re-run test binary, one test thread).
    unsafe {
        match shape {
            "nobody" => {
                assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
                assert_eq!(libc::setresgid(NOBODY, NOBODY, NOBODY), 0);
                assert_eq!(libc::setresuid(NOBODY, NOBODY, NOBODY), 0);
            }
            _ => assert_eq!(libc::setresuid(0, NOBODY, 0), 0),
        }
    }
    let pf = dir.join("c.pid");
    match launch::spawn(&pf, &["sh", "-c", TREE], &SpawnOptions { cwd: Some(dir.to_path_buf()), ..ask }) {
        Err(e) => println!("RESULT {:?} {}", e.kind(), e),
        Ok(s) => {
            let pids = [s.pid, read_pid(dir, "child.pid"), read_pid(dir, "grand.pid"), read_pid(dir, "daemon.pid")];
            for p in pids {
                let (u, g, gs) = ids(p);
                println!("IDS {p} {u:?} {g:?} {gs:?}");
            }
            println!("OWNER {}", std::fs::metadata(&pf).unwrap().uid());
            if let Some(sup) = s.supervisor_pid {
                println!("SUPERVISOR {:?}", std::fs::read_to_string(format!("/proc/{sup}/status")).unwrap().lines().find(|l| l.starts_with("Uid:")).unwrap().split_whitespace().skip(1).collect::<Vec<_>>());
            }
            let r = pidguard::stop_pid_file(&pf, &pidguard::StopOptions { schedule: "TERM/5/KILL/5".parse().unwrap(), ..Default::default() }).unwrap();
            println!("STOP {:?} {:?}", r.outcome, r.detail);
            reap(s.supervisor_pid.unwrap_or(s.pid));
            let left = pids.iter().filter(|&&p| wait_for(Duration::from_secs(10), || !alive(p)).then_some(()).is_none()).count();
            println!("LEFT {left}");
        }
    }
}

#[test]
fn child_caller() {
    let Some(role) = child_role() else { return };
    let dir = PathBuf::from(std::env::var("PIDGUARD_TEST_DIR").unwrap());
    let (shape, ask) = role.split_once(':').unwrap();
    let ask = match ask {
        "root" => SpawnOptions { user: Some(IdSpec::Id(0)), ..Default::default() },
        "root-group" => SpawnOptions { user: Some(IdSpec::Id(NOBODY)), extra_groups: Some(vec![IdSpec::Id(0)]), ..Default::default() },
        "self" | "nobody" => SpawnOptions { scope: ScopeMode::Supervisor, user: Some(IdSpec::Id(NOBODY)), ..Default::default() },
        _ => unreachable!(),
    };
    as_caller(shape, &dir, ask);
}

fn run_child(role: &str, dir: &Path) -> String {
    let out = reexec("child_caller", &[], |c| {
        c.env("PIDGUARD_TEST_CHILD", role).env("PIDGUARD_TEST_DIR", dir);
    });
    assert!(out.status.success(), "the child failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_unprivileged_caller_gets_permission_denied_and_nothing_is_made() {
    if child_role().is_some() || !root() {
        return;
    }
    for ask in ["root", "root-group"] {
        let d = shared(&format!("deny-{ask}"));
        let out = run_child(&format!("nobody:{ask}"), d.path());
        assert!(out.contains("RESULT PermissionDenied"), "{out}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "a refused spawn left a file");
    }
    // Its own ids it may ask for.
    let d = shared("deny-self");
    let out = run_child("nobody:self", d.path());
    assert!(out.contains("STOP Exited") && out.contains("LEFT 0"), "{out}");
}

#[test]
fn the_archivebox_shape_real_root_effective_u_spawns_as_u() {
    if child_role().is_some() || !root() {
        return;
    }
    let d = shared("archivebox");
    let out = run_child("archivebox:nobody", d.path());
    let want = format!("[{n}, {n}, {n}, {n}] [{n}, {n}, {n}, {n}] [{n}]", n = NOBODY);
    assert_eq!(out.lines().filter(|l| l.contains("IDS ") && l.ends_with(&want)).count(), 4, "{out}");
    assert!(out.contains(&format!("OWNER {NOBODY}")), "{out}");
    // Its supervisor keeps (0, U, 0): the command, running as U, cannot signal it (kill(2) needs
    // the target's real or saved uid to be U) and so cannot leave its scope by killing it.
    assert!(out.contains(&format!("SUPERVISOR [\"0\", \"{NOBODY}\", \"0\", \"{NOBODY}\"]")), "{out}");
    assert!(out.contains("STOP Exited") && out.contains("LEFT 0"), "{out}");
}

#[test]
fn a_command_killed_by_a_signal_reads_as_signalled_through_its_supervisor() {
    if child_role().is_some() {
        return;
    }
    let d = TempDir::new("user-signalled");
    for mode in [ScopeMode::Supervisor, ScopeMode::Group] {
        let pf = d.path().join(format!("k-{}.pid", mode.as_str()));
        let s = launch::spawn(&pf, &["sh", "-c", "kill -TERM $$"], &SpawnOptions { scope: mode, ..Default::default() }).unwrap();
        let st = reap(s.supervisor_pid.unwrap_or(s.pid));
        assert!(libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGTERM && !libc::WCOREDUMP(st), "{mode:?}: status {st:#x}");
    }
}
