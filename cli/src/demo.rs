//! `pidguard demo`: the main job on real processes.
//!
//! In a fresh temporary directory it starts background hooks the way abx-dl's spawner does
//! (pidfile + `.sh` + logs, each hook its own process group): one that exits on SIGTERM, one
//! that ignores SIGTERM and has children, one that has already exited, and a stale pidfile
//! whose pid now belongs to a live, unrelated bystander group. Where the machine allows it, the
//! pid reuse is real: inside a private PID namespace the recorded hook is killed and reaped and
//! its pid forced onto the bystander through `ns_last_pid`. Then one cleanup, a table, and the
//! proof that the bystander survived and no hook did.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

use pidguard::launch::{self, now, RecordFormat};
use pidguard::{
    cleanup_background_hooks, start_token, terminate, write_cmd_file, write_pid_file_with_mtime, CleanupOptions, Policy,
    ProcessRef, TerminateOptions,
};

use crate::report;

const NS_LAST_PID: &str = "/proc/sys/kernel/ns_last_pid";
const BYSTANDER: &str = "sleep 600 & sleep 600 & wait";

/// The `unshare` options that give a private PID namespace here, if any: as root (or with
/// `CAP_SYS_ADMIN`) a plain one; otherwise one inside an unprivileged user namespace
/// (`-r`, `--map-root-user`: the caller is root only inside, over its own processes), which
/// most distributions allow (`kernel.unprivileged_userns_clone`, `user.max_user_namespaces`).
fn namespace_args() -> Option<&'static [&'static str]> {
    const PLAIN: &[&str] = &["--pid", "--fork", "--mount-proc"];
    const USERNS: &[&str] = &["-r", "--pid", "--fork", "--mount-proc"];
    [PLAIN, USERNS].into_iter().find(|args| {
        Command::new("unshare")
            .args(*args)
            .arg("true")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    })
}

/// Entry point: re-run inside a private PID namespace when possible. Linux only: elsewhere
/// it says so and exits with "bad input" (4) before starting anything.
pub fn run(no_namespace: bool, in_namespace: bool) -> ExitCode {
    if !cfg!(target_os = "linux") {
        // It reads /proc and forces a pid reuse through ns_last_pid: both Linux's alone.
        eprintln!("pidguard demo: unsupported on this system: the demo reads /proc and forces a pid reuse through /proc/sys/kernel/ns_last_pid, which only Linux has (pidguard is run-tested on Linux only; see docs/platforms.md)");
        return pidguard::ExitCode::BadInput.into();
    }
    if !in_namespace && !no_namespace {
        if let Some(ns) = namespace_args() {
            let exe = match std::env::current_exe() {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("pidguard demo: cannot find own executable: {e}");
                    return ExitCode::from(1);
                }
            };
            // bash is the namespace's init (pid 1): it reaps the orphans a killed hook leaves, so
            // their pid numbers (and group numbers) become free for the forced reuse.
            let st = Command::new("unshare")
                .args(ns)
                .args(["bash", "-c", "\"$0\" demo --in-namespace; exit $?"])
                .arg(exe)
                .status();
            return match st {
                Ok(s) => ExitCode::from(s.code().unwrap_or(1) as u8),
                Err(e) => {
                    eprintln!("pidguard demo: unshare failed: {e}");
                    ExitCode::from(1)
                }
            };
        }
        println!("(no private PID namespace here — neither `unshare --pid --fork --mount-proc` nor, unprivileged,");
        println!(" `unshare -r --pid --fork --mount-proc` is permitted —");
        println!(" so the stale record names a live bystander with a wrong mtime and no token instead of a real reuse)\n");
    }
    match body(in_namespace) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("pidguard demo: {e}");
            ExitCode::from(1)
        }
    }
}

/// Whether `pid` is still allocated: a process (zombies included) has it as pid or pgid.
fn number_in_use(pid: i32) -> bool {
    if fs::metadata(format!("/proc/{pid}")).is_ok() {
        return true;
    }
    let Ok(rd) = fs::read_dir("/proc") else { return true };
    rd.flatten().any(|e| {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { return false };
        let Ok(s) = fs::read_to_string(format!("/proc/{p}/stat")) else { return false };
        let Some(i) = s.rfind(')') else { return false };
        s[i + 2..].split(' ').nth(2).and_then(|g| g.parse::<i32>().ok()) == Some(pid)
    })
}

/// Live, non-zombie members of a process group.
fn members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(s) = fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(i) = s.rfind(')') else { continue };
        let f: Vec<&str> = s[i + 2..].split(' ').collect();
        if f.len() > 2 && f[0] != "Z" && f[2].parse::<i32>().ok() == Some(pgid) {
            out.push(pid);
        }
    }
    out.sort();
    out
}

fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// Start `argv` in a new session (it leads its own process group), stdin from `/dev/null`,
/// output to the given files, in `cwd`: the demo keeps the `Child` to reap what it kills.
fn spawn_in_session(argv: &[&str], cwd: Option<&Path>, out: fs::File, err: fs::File) -> std::io::Result<Child> {
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null()).stdout(out).stderr(err);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    cmd.spawn()
}

/// Start a hook as abx-dl does: logs, spawn in its own session and process group
/// ([`spawn_in_session`]), then the `.sh` and the pidfile with the start time taken right after
/// the spawn ([`launch::record`]).
fn spawn_hook(dir: &Path, name: &str, argv: &[&str]) -> Result<Child, String> {
    fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let out = fs::File::create(dir.join(format!("{name}.stdout.log"))).map_err(|e| e.to_string())?;
    let err = fs::File::create(dir.join(format!("{name}.stderr.log"))).map_err(|e| e.to_string())?;
    let child = spawn_in_session(argv, Some(dir), out, err).map_err(|e| format!("spawn {name}: {e}"))?;
    let start_time = now();
    launch::record(&dir.join(format!("{name}.pid")), child.id() as i32, start_time, argv, RecordFormat::AbxDl, &[])
        .map_err(|e| e.to_string())?;
    Ok(child)
}

fn spawn_bystander() -> Result<Child, String> {
    Command::new("bash")
        .args(["-c", BYSTANDER])
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("spawn bystander: {e}"))
}

struct Stale {
    bystander: Child,
    how: String,
}

/// Real reuse inside the namespace: record a hook, kill and reap it, hand its pid to a bystander.
fn reuse_in_namespace(dir: &Path, name: &str, children: &mut Vec<Child>) -> Result<Stale, String> {
    let argv = ["bash", "-c", BYSTANDER];
    for attempt in 1..=5 {
        let victim = spawn_hook(dir, name, &argv)?;
        let pid = victim.id() as i32;
        wait_until(Duration::from_secs(5), || members(pid).len() >= 3);
        // The hook dies with its whole group (through pidguard), and is reaped; its orphans are
        // reaped by the namespace's init. Only then is the number free.
        let token = start_token(pid).map_err(|e| e.to_string())?;
        let h = ProcessRef::open(pid, Some(&token), Policy::Strict).map_err(|e| e.to_string())?;
        let kill_now: pidguard::Schedule = "KILL/5".parse().map_err(|e: pidguard::Error| e.to_string())?;
        terminate(vec![h], &TerminateOptions { schedule: kill_now, reap: true, ..Default::default() });
        drop(victim);
        if !wait_until(Duration::from_secs(5), || !number_in_use(pid)) {
            return Err(format!("pid {pid} still in use after its group was killed"));
        }
        fs::write(NS_LAST_PID, (pid - 1).to_string()).map_err(|e| format!("write {NS_LAST_PID}: {e}"))?;
        let mut b = spawn_bystander()?;
        if b.id() as i32 == pid {
            let how = format!(
                "real reuse (attempt {attempt}): hook pid {pid} was recorded, killed and reaped; {NS_LAST_PID} \
                 gave the same pid to a bystander running the very same command in its own group"
            );
            return Ok(Stale { bystander: b, how });
        }
        let _ = b.kill();
        let _ = b.wait();
        let _ = children;
    }
    Err("could not force pid reuse in 5 attempts".into())
}

/// Without a namespace: a pidfile that names a live bystander, with an mtime an hour off and no
/// token (the create time is not within 5 s of the recorded start time, so none is stored).
fn stale_without_namespace(dir: &Path, name: &str) -> Result<Stale, String> {
    fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let b = spawn_bystander()?;
    write_cmd_file(&dir.join(format!("{name}.sh")), &["bash", "-c", BYSTANDER]).map_err(|e| e.to_string())?;
    write_pid_file_with_mtime(&dir.join(format!("{name}.pid")), b.id() as i32, now() - 3600.0).map_err(|e| e.to_string())?;
    Ok(Stale { how: format!("simulated: a pidfile naming live bystander {} with an mtime 1 h before its start", b.id()), bystander: b })
}

fn body(in_namespace: bool) -> Result<bool, String> {
    let root: PathBuf = std::env::temp_dir().join(format!("pidguard-demo-{}-{}", std::process::id(), now() as u64));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    // In an unprivileged user namespace (`unshare -r`) the caller is root inside, so core walks
    // paths with the no-unsafe-transition rule, and every directory of the host (`/`, `/tmp`)
    // shows the overflow uid: `/tmp` → our directory looks like a step from a user's directory
    // into root's. Working from inside the demo's own directory (relative paths, which core
    // walks from `.`) keeps the rule and the demo both.
    let base = if in_namespace {
        std::env::set_current_dir(&root).map_err(|e| format!("cd {}: {e}", root.display()))?;
        PathBuf::new()
    } else {
        root.clone()
    };
    let out = base.join("snapshot");
    println!("pidguard demo — {}", if in_namespace { "inside a private PID namespace" } else { "in the current PID namespace" });
    println!("working directory: {}\n", root.display());

    let mut children: Vec<Child> = Vec::new();
    let sleeper = spawn_hook(&out.join("sleeper"), "on_Snapshot__10_sleeper.bg", &["sleep", "600"])?;
    let stubborn = spawn_hook(
        &out.join("stubborn"),
        "on_Snapshot__20_stubborn.bg",
        &[
            "bash",
            "-c",
            "trap '' TERM; echo '<html>saved</html>' > page.html; \
             echo '{\"type\": \"ArchiveResult\", \"status\": \"succeeded\", \"output_str\": \"saved page.html\"}'; \
             sleep 600 & sleep 600 & wait",
        ],
    )?;
    let quick = spawn_hook(&out.join("quick"), "on_Snapshot__30_quick.bg", &["bash", "-c", "echo finished early; exit 3"])?;
    // A hook whose helper leaves its group (a browser's crash handler, a daemon's double
    // fork): started as `pidguard run` does, in a scope (a cgroup leaf, else a supervisor).
    let daemon_dir = out.join("daemon");
    fs::create_dir_all(&daemon_dir).map_err(|e| e.to_string())?;
    let daemon = pidguard::launch::spawn(
        &daemon_dir.join("on_Snapshot__50_daemon.bg.pid"),
        &["bash", "-c", "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > escapee.pid; exec sleep 600"],
        &pidguard::launch::SpawnOptions { cwd: Some(daemon_dir.clone()), ..Default::default() },
    )
    .map_err(|e| format!("spawn the daemon hook: {e}"))?;
    let escapee_file = daemon_dir.join("escapee.pid");
    wait_until(Duration::from_secs(5), || fs::read_to_string(&escapee_file).is_ok_and(|t| t.trim().parse::<i32>().is_ok()));
    let escapee: i32 = fs::read_to_string(&escapee_file).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0);
    let (sleeper_pid, stubborn_pid, quick_pid) = (sleeper.id() as i32, stubborn.id() as i32, quick.id() as i32);
    children.extend([sleeper, stubborn, quick]);
    let stale_dir = out.join("reused");
    let stale_name = "on_Snapshot__40_reused.bg";
    let mut stale = if in_namespace {
        reuse_in_namespace(&stale_dir, stale_name, &mut children)?
    } else {
        stale_without_namespace(&stale_dir, stale_name)?
    };
    let by_pid = stale.bystander.id() as i32;
    let by_token = start_token(by_pid).map_err(|e| e.to_string())?;

    // Let the groups fill up before looking.
    wait_until(Duration::from_secs(5), || members(stubborn_pid).len() >= 3 && members(by_pid).len() >= 3);
    wait_until(Duration::from_secs(5), || {
        fs::read_to_string(format!("/proc/{quick_pid}/stat")).map(|s| s.contains(") Z")).unwrap_or(true)
    });
    let by_before = members(by_pid);
    // What abx-dl's own mtime-and-argv rule would have said about the stale record.
    let stale_pidfile = stale_dir.join(format!("{stale_name}.pid"));
    let seed_rule = fs::metadata(&stale_pidfile).ok().and_then(|m| m.modified().ok()).and_then(|mt| {
        let mt = mt.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs_f64();
        let ct = pidguard::lookup(by_pid).ok()?.create_time;
        Some((mt - ct).abs())
    });
    println!("hooks started (each leads its own process group; the daemon hook in a scope too):");
    println!("  on_Snapshot__10_sleeper.bg   pid {sleeper_pid:<7} exits on SIGTERM");
    println!("  on_Snapshot__20_stubborn.bg  pid {stubborn_pid:<7} ignores SIGTERM, group {:?}", members(stubborn_pid));
    println!("  on_Snapshot__30_quick.bg     pid {quick_pid:<7} already exited with status 3 (unreaped)");
    println!("  on_Snapshot__40_reused.bg    pid {by_pid:<7} STALE: {}", stale.how);
    println!(
        "  on_Snapshot__50_daemon.bg    pid {:<7} in a scope ({}); its helper pid {escapee} left the group with setsid",
        daemon.pid, daemon.scope
    );
    if let Some(n) = &daemon.note {
        println!("    ({n})");
    }
    println!("  bystander group {by_pid}: {by_before:?} (not a hook; must survive)");
    if let Some(skew) = seed_rule {
        println!(
            "  abx-dl's rule alone (|mtime - create_time| <= 5 s and the same argv) {}: skew {skew:.2} s",
            if skew <= 5.0 { "would accept the stale record and kill the bystander group" } else { "would reject the stale record" }
        );
    }
    println!();

    let index = base.join("index.jsonl");
    let opts = CleanupOptions { index_path: Some(index.clone()), is_tty: true, ..Default::default() };
    println!("cleanup_background_hooks({}, schedule {}) …", out.display(), opts.schedule);
    let t0 = Instant::now();
    let reports = cleanup_background_hooks(&out, &opts, None).map_err(|e| e.to_string())?;
    println!("done in {:.3} s\n", t0.elapsed().as_secs_f64());
    report::print_hooks(&reports);

    let mut ok = true;
    let mut check = |cond: bool, what: String| {
        println!("  [{}] {what}", if cond { " ok " } else { "FAIL" });
        ok &= cond;
    };
    println!();
    let by_after = members(by_pid);
    check(by_after == by_before, format!("bystander group {by_pid} untouched: {by_after:?}"));
    for (name, pid) in [("sleeper", sleeper_pid), ("stubborn", stubborn_pid)] {
        let m = members(pid);
        check(m.is_empty(), format!("no process of hook {name} survives (group {pid}: {m:?})"));
    }
    let escaped_alive = escapee > 0
        && fs::read_to_string(format!("/proc/{escapee}/stat")).is_ok_and(|st| st.rsplit_once(") ").is_some_and(|(_, r)| !r.starts_with('Z')));
    check(
        !escaped_alive && members(daemon.pid).is_empty(),
        format!("the daemon hook's whole tree is stopped through its scope ({}), the setsid helper {escapee} too", daemon.scope),
    );
    let q = reports.iter().find(|r| r.name.contains("quick"));
    check(q.and_then(|r| r.exit_code) == Some(3), "the hook that exited by itself is reported with its own status 3".into());
    let r = reports.iter().find(|r| r.name.contains("reused"));
    check(r.is_some_and(|r| r.signals.is_empty()), "the stale record was sent no signal".into());
    let lines = fs::read_to_string(&index).map(|s| s.lines().count()).unwrap_or(0);
    check(lines == 2 * reports.len(), format!("{lines} JSON lines (Process + ArchiveResult per hook) in {}", index.display()));

    // Stop the bystander we started, through pidguard, by its own token.
    let h = ProcessRef::open(by_pid, Some(&by_token), Policy::Strict).map_err(|e| e.to_string())?;
    let tr = terminate(vec![h], &TerminateOptions { reap: true, ..Default::default() }).remove(0);
    println!("\nstopping the bystander we started: {} ({})", tr.outcome, tr.signals.iter().map(|s| s.name()).collect::<Vec<_>>().join(","));
    let _ = stale.bystander.wait();
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    // The daemon hook's direct child (the command, or its supervisor) is ours to reap.
    let direct = daemon.supervisor_pid.unwrap_or(daemon.pid);
    let mut status = 0;
    // SAFETY: waitpid on our own child with a valid status pointer.
    unsafe { libc::waitpid(direct, &mut status, 0) };
    let _ = std::env::set_current_dir("/");
    let _ = fs::remove_dir_all(&root);
    println!("{}", if ok { "\ndemo passed: the bystander lived, every hook is stopped" } else { "\ndemo FAILED" });
    Ok(ok)
}
