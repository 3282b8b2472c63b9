//! Scopes (issue 25, SPEC §4.3) on real processes: a spawned command's whole tree — a
//! double-forked `setsid` daemon, a detached Chromium with its crash handlers — stopped through
//! [`launch::spawn`] + [`stop_pid_file`] / [`cleanup_background_hooks`], in a cgroup v2 leaf and
//! under a supervisor (also with cgroup v2 hidden), and what a scope must never touch.
//!
//! Every scenario runs in a child of this test binary (`PIDGUARD_TEST_CHILD=<name>`,
//! `PIDGUARD_TEST_MODE=<mode>`):
//! - in a private PID namespace (`unshare --pid --fork --mount-proc`): every process in its
//!   `/proc` is the test's own (so "zero survivors" is "no other live process"), pids can be
//!   forced with `ns_last_pid`, and whatever a failing test leaves dies with the namespace;
//! - in a cgroup v2 directory of its own, `/pidguard-test-<pid>-<n>` below the cgroup2 mount
//!   (found in `/proc/self/mountinfo`), so the leaves it makes (`<own cgroup>/pidguard/run-…`)
//!   are its alone; after the child, the parent fails the test if any leaf is left;
//! - `hidden` mode: also a private mount namespace with a tmpfs over the cgroup2 mount point,
//!   so that `ScopeMode::Auto` falls back to the supervisor.
//!
//! Needs root, unshare(1) and a cgroup2 mount; the Chromium tests also Node and Debian's
//! `chromium` (installed by `scripts/install-chromium.sh` when missing; skipped, with the
//! reason, only when it cannot be installed).

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{child_role, reexec, wait_for, TempDir};
use pidguard::identity::{ScopeKind, ScopeRecord};
use pidguard::launch::{self, ScopeMode, SpawnOptions, Spawned};
use pidguard::{
    cleanup_background_hooks, stop_pid_file, CheckReason, CleanupOptions, ExitCode, HookOutcome, HookReport, Refusal,
    Schedule, Signal, StopOptions, StopOutcome, StopReport,
};

const HOOK_JS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/cli/chrome_hook.js");
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

// ---------------------------------------------------------------------------------------------
// modes and the child runner

/// How a scenario's command is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `ScopeMode::Auto` with cgroup v2 visible: a leaf.
    Cgroup,
    /// `ScopeMode::Supervisor` with cgroup v2 visible.
    Supervisor,
    /// `ScopeMode::Auto` with cgroup v2 hidden (tmpfs over its mount point): the supervisor, and
    /// the report's note says why.
    Hidden,
    /// `ScopeMode::Group`: no scope (the documented limitation: an escapee survives).
    Group,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Cgroup => "cgroup",
            Mode::Supervisor => "supervisor",
            Mode::Hidden => "hidden",
            Mode::Group => "group",
        }
    }
    fn from_env() -> Mode {
        match std::env::var("PIDGUARD_TEST_MODE").as_deref() {
            Ok("cgroup") => Mode::Cgroup,
            Ok("supervisor") => Mode::Supervisor,
            Ok("hidden") => Mode::Hidden,
            Ok("group") => Mode::Group,
            m => panic!("PIDGUARD_TEST_MODE: {m:?}"),
        }
    }
    fn scope_mode(self) -> ScopeMode {
        match self {
            Mode::Cgroup | Mode::Hidden => ScopeMode::Auto,
            Mode::Supervisor => ScopeMode::Supervisor,
            Mode::Group => ScopeMode::Group,
        }
    }
    fn kind(self) -> ScopeKind {
        match self {
            Mode::Cgroup => ScopeKind::Cgroup,
            Mode::Supervisor | Mode::Hidden => ScopeKind::Supervisor,
            Mode::Group => ScopeKind::Group,
        }
    }
}

/// The cgroup2 mount point from `/proc/self/mountinfo` (the first `cgroup2` line whose root is
/// `/`), never assumed.
fn cgroup2_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        let dash = f.iter().position(|x| *x == "-")?;
        (f.get(dash + 1) == Some(&"cgroup2") && f[3] == "/").then(|| PathBuf::from(f[4].replace("\\040", " ")))
    })
}

/// Why the scenarios cannot run here, if they cannot.
fn cannot_run() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("scopes are tested as root (a leaf, ns_last_pid, other users)".into());
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

/// Run the test `name` as a child in `mode` (see the module docs), and fail if it failed or left
/// a cgroup leaf behind. Returns false (after printing why) when the scenarios cannot run here.
fn run_child(name: &str, mode: Mode) -> bool {
    if let Some(why) = cannot_run() {
        println!("SKIP {name} ({}): {why}", mode.name());
        return false;
    }
    let mount = cgroup2_mount().unwrap();
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let cg = mount.join(format!("pidguard-test-{}-{n}", std::process::id()));
    std::fs::create_dir(&cg).unwrap();
    // Every child is pid 1 of its namespace: give each its own temporary directory.
    let tmp = std::env::temp_dir().join(format!("pidguard-scopes-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let script = r#"echo 0 > "$PIDGUARD_TEST_CGROUP/cgroup.procs" || exit 97
if [ -n "$PIDGUARD_TEST_HIDE" ]; then mount -t tmpfs pidguard-hidden "$PIDGUARD_TEST_HIDE" || exit 98; fi
exec "$@""#;
    let out = reexec(name, &["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script, "sh"], |c| {
        c.env("PIDGUARD_TEST_MODE", mode.name()).env("PIDGUARD_TEST_CGROUP", &cg).env("TMPDIR", &tmp).env_remove("PIDGUARD_TEST_HIDE");
        if mode == Mode::Hidden {
            c.env("PIDGUARD_TEST_HIDE", &mount);
        }
    });
    // The namespace's processes die with its init; wait for the test's cgroup to empty.
    let events = cg.join("cgroup.events");
    wait_for(Duration::from_secs(20), || std::fs::read_to_string(&events).is_ok_and(|t| t.contains("populated 0")));
    let left = leaves_in(&cg.join("pidguard"));
    remove_test_cgroup(&cg);
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(out.status.success(), "{name} ({}) failed: {:?}", mode.name(), out.status);
    assert!(left.is_empty(), "{name} ({}): cgroup leaves left behind: {left:?}", mode.name());
    true
}

/// The `run-*` leaves in a `pidguard` cgroup directory.
fn leaves_in(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("run-")).collect()
}

/// Remove a test cgroup and everything below it (killing what is still in it: only this test's
/// processes can be there).
fn remove_test_cgroup(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_test_cgroup(&e.path());
        }
    }
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    let events = dir.join("cgroup.events");
    wait_for(Duration::from_secs(10), || std::fs::read_to_string(&events).map_or(true, |t| t.contains("populated 0")));
    let _ = std::fs::remove_dir(dir);
}

/// In a child: the role's mode when this process is the child for `name`; `None` in the parent
/// (or in a child running another test).
fn child_mode(name: &str) -> Option<Mode> {
    (child_role().as_deref() == Some(name)).then(Mode::from_env)
}

/// Whether this is a child process for some other test (then a test returns at once).
fn other_child(name: &str) -> bool {
    child_role().is_some_and(|r| r != name)
}

/// A test that runs `$body(mode)` in a child for each mode (see [`run_child`]).
macro_rules! scenario {
    ($name:ident, $body:expr, [$($mode:ident),+]) => {
        #[test]
        fn $name() {
            const NAME: &str = stringify!($name);
            if let Some(mode) = child_mode(NAME) {
                ($body)(mode);
                return;
            }
            if other_child(NAME) {
                return;
            }
            for mode in [$(Mode::$mode),+] {
                if !run_child(NAME, mode) {
                    return;
                }
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// inside the child

/// (pid, ppid, sid, state, comm) of a process, from `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(i32, i32, i32, char, String)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s[open + 1..close].to_string();
    let f: Vec<&str> = s[close + 2..].split(' ').collect();
    Some((pid, f[1].parse().ok()?, f[3].parse().ok()?, f[0].chars().next()?, comm))
}

fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|s| s.3 != 'Z' && s.3 != 'X')
}

/// Reap every exited child of ours (in the namespace we are pid 1: orphans are ours).
fn reap_zombies() {
    loop {
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if r <= 0 {
            return;
        }
    }
}

/// Every live process of the namespace but ourselves (pid 1): the test's own, all of them.
fn others() -> Vec<(i32, i32, i32, char, String)> {
    reap_zombies();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid == 1 {
            continue;
        }
        if let Some(s) = stat(pid) {
            if s.3 != 'Z' && s.3 != 'X' {
                out.push(s);
            }
        }
    }
    out
}

/// Wait (deadline, polling) until no other process lives; the survivors if some still do.
fn survivors_after(timeout: Duration) -> Vec<(i32, i32, i32, char, String)> {
    let mut left = Vec::new();
    wait_for(timeout, || {
        left = others();
        left.is_empty()
    });
    left
}

fn kill(pid: i32, sig: i32) {
    assert!(pid > 1);
    // SAFETY: kill(2) of a positive pid other than 1: a process of this test's namespace.
    unsafe { libc::kill(pid, sig) };
}

/// End every other process of the namespace (by pid: all are the test's own) and reap them.
fn end_all() {
    for _ in 0..100 {
        let o = others();
        if o.is_empty() {
            return;
        }
        for p in o {
            kill(p.0, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read_own_cgroup() -> String {
    let t = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    t.lines().find_map(|l| l.strip_prefix("0::")).unwrap().trim_end().to_string()
}

/// Our leaves (below our own cgroup's `pidguard` directory).
fn own_leaves() -> Vec<String> {
    match cgroup2_mount() {
        Some(m) => leaves_in(&m.join(read_own_cgroup().trim_start_matches('/')).join("pidguard")),
        None => Vec::new(),
    }
}

/// The directory of a cgroup record's leaf.
fn leaf_dir(s: &Spawned) -> Option<PathBuf> {
    match &s.scope_record {
        Some(ScopeRecord::Cgroup { path, .. }) => Some(cgroup2_mount().unwrap().join(path.trim_start_matches('/'))),
        _ => None,
    }
}

fn opts(mode: Mode) -> SpawnOptions {
    SpawnOptions { scope: mode.scope_mode(), ..SpawnOptions::default() }
}

/// `launch::spawn` and the checks every scope spawn must pass: the kind asked for, a record for
/// a scope, the note when cgroup v2 is hidden.
fn spawn(pid_file: &Path, argv: &[&str], mode: Mode) -> Spawned {
    let s = launch::spawn(pid_file, argv, &opts(mode)).unwrap_or_else(|e| panic!("spawn {argv:?} ({}): {e}", mode.name()));
    println!("spawned {argv:?} in {} mode: pid {} scope {} record {:?} note {:?}", mode.name(), s.pid, s.scope, s.scope_record.as_ref().map(|r| r.to_string()), s.note);
    assert_eq!(s.scope, mode.kind(), "{s:?}");
    assert_eq!(s.scope_record.is_some(), mode != Mode::Group, "a scope is recorded: {s:?}");
    match mode {
        Mode::Hidden => {
            let note = s.note.as_deref().unwrap_or("");
            assert!(note.contains("no cgroup leaf could be made") && note.contains("supervisor"), "the note says why: {note:?}");
            assert!(note.contains("cgroup2"), "the note names the hidden cgroup2 mount: {note:?}");
        }
        _ => assert_eq!(s.note, None, "{s:?}"),
    }
    if let Some(d) = leaf_dir(&s) {
        assert!(d.is_dir(), "the leaf {} exists", d.display());
    }
    s
}

fn sched(s: &str) -> Schedule {
    s.parse().unwrap()
}

fn stop(pf: &Path) -> StopReport {
    let r = stop_pid_file(pf, &StopOptions::default()).unwrap();
    println!("stop: {:?} scope {} signals {:?} warning {:?} detail {:?}", r.outcome, r.scope, r.signals(), r.warning, r.detail);
    r
}

fn cleanup(dir: &Path) -> HookReport {
    let mut rs = cleanup_background_hooks(dir, &CleanupOptions { no_finalize: true, ..CleanupOptions::default() }, None).unwrap();
    assert_eq!(rs.len(), 1, "{rs:?}");
    let r = rs.pop().unwrap();
    println!("cleanup: {:?} scope {} signals {:?} notes {:?} error {:?}", r.outcome, r.scope, r.signals, r.notes, r.error);
    r
}

/// A bystander command: a process group of its own, every signal blocked (inherited across
/// exec), so that a signal sent to it stays pending and [`untouched`] sees it deterministically.
fn bystander(argv: &[&str]) -> Command {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]).stdin(Stdio::null()).process_group(0);
    // SAFETY: only async-signal-safe calls (sigfillset, sigprocmask) between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigprocmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
            Ok(())
        })
    };
    c
}

/// Alive, and no signal was sent to it (nothing pending: a bystander blocks every signal).
fn untouched(pid: i32) -> bool {
    let Ok(t) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    let pending = |k: &str| t.lines().find_map(|l| l.strip_prefix(k)).map(|v| u64::from_str_radix(v.trim(), 16).unwrap_or(1));
    alive(pid) && pending("SigPnd:") == Some(0) && pending("ShdPnd:") == Some(0)
}

/// Force the next fork in this namespace to get `pid` (`ns_last_pid`), and start the bystander
/// `argv` there. Panics if the pid could not be had.
fn bystander_at(pid: i32, argv: &[&str]) -> std::process::Child {
    for _ in 0..20 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).expect("write ns_last_pid");
        let mut c = bystander(argv).spawn().unwrap();
        if c.id() as i32 == pid {
            return c;
        }
        let _ = c.kill();
        let _ = c.wait();
    }
    panic!("could not place a bystander at pid {pid}: /proc/{pid}/stat {:?}; our threads {:?}", std::fs::read_to_string(format!("/proc/{pid}/stat")), std::fs::read_dir("/proc/self/task").map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>()));
}

/// The double-forked `setsid` daemon: the first process exits at once; its grandchild leads a
/// session of its own and runs two `sleep`s.
const DAEMON: &[&str] = &["sh", "-c", "( setsid sh -c 'sleep 4711 & exec sleep 4712' </dev/null >/dev/null 2>&1 & ); exit 0"];

/// Live processes other than ourselves and a supervisor, without reaping anything.
fn others_no_reap() -> Vec<(i32, i32, i32, char, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if let Some(s) = stat(pid).filter(|s| pid != 1 && s.3 != 'Z' && s.3 != 'X' && s.4 != "pidguard-scope") {
            out.push(s);
        }
    }
    out
}

/// Until cleared: each time `launch::spawn` is about to record its command, wait (deadline)
/// until only the daemon's two sleeps live (its first process has exited), so that the record
/// is always written after the command exited — the case a fast daemon hits by chance.
fn record_after_the_daemon_forked() {
    use pidguard::sys::fault::{self, Point};
    fault::set_point_hook(|p| {
        if p == Point::BeforeSpawnRecord {
            let up = wait_for(Duration::from_secs(20), || {
                let o = others_no_reap();
                o.len() == 2 && o.iter().all(|p| p.4 == "sleep")
            });
            assert!(up, "the daemon did not fork: {:?}", others_no_reap());
        }
    });
}

/// Start the daemon, recorded after its first process exited, and check it came up.
fn start_daemon(pf: &Path, mode: Mode) -> Spawned {
    record_after_the_daemon_forked();
    let s = spawn(pf, DAEMON, mode);
    pidguard::sys::fault::clear_point_hook();
    let up = wait_for(Duration::from_secs(20), || {
        let o = others();
        !alive(s.pid) && o.iter().filter(|p| p.4 == "sleep").count() == 2
    });
    assert!(up, "the daemon did not come up: {:?}", others());
    let sleeps: Vec<_> = others().into_iter().filter(|p| p.4 == "sleep").collect();
    // The escapee left the command's session (and so its group).
    assert!(sleeps.iter().all(|p| p.2 != s.pid), "the daemon did not leave the session: {sleeps:?}");
    s
}

/// A guard record of a command that exits at once (recorded after it exited) is written with
/// the command's token and its scope: `spawn` does not fail with "has exited".
fn guard_record_body(mode: Mode) {
    let dir = TempDir::new("guardrec");
    let pf = dir.path().join("daemon.json");
    record_after_the_daemon_forked();
    let o = SpawnOptions { scope: mode.scope_mode(), format: launch::RecordFormat::Guard, ..SpawnOptions::default() };
    let r = launch::spawn(&pf, DAEMON, &o);
    pidguard::sys::fault::clear_point_hook();
    let s = r.unwrap_or_else(|e| panic!("spawn: {e}"));
    let text = std::fs::read_to_string(&pf).unwrap();
    assert!(text.contains("start_token") && text.contains(&format!("\"scope\":\"{}", mode.kind())), "{text}");
    assert_eq!(s.scope, mode.kind());
    // (A guard record's scope is not acted on by stop yet: end the daemon through the scope.)
    let pidguard::identity::ScopeState::Open(scope) = pidguard::identity::Scope::open(s.scope_record.as_ref().unwrap(), None) else { panic!() };
    let r = pidguard::signal::terminate_scopes(&[(s.pid, &scope)], &sched("TERM/2/KILL/1"));
    assert!(r[0].outcome.is_stopped(), "{:?}", r[0].outcome);
    scope.release();
    assert!(survivors_after(Duration::from_secs(5)).is_empty());
}
scenario!(a_guard_record_of_a_command_that_exited_at_once_is_written_with_its_scope, guard_record_body, [Cgroup, Supervisor]);

/// A record that cannot be written (the token's fsetxattr fails with ENOSPC) after the command
/// already forked a setsid daemon: spawn fails and nothing of the command's tree runs on — and
/// under a supervisor it returns at all (it used to wait for the daemon forever).
fn undo_body(mode: Mode) {
    use pidguard::sys::fault::{self, Call};
    let dir = TempDir::new("undo");
    let pf = dir.path().join("a.pid");
    let (tx, rx) = std::sync::mpsc::channel();
    let pf2 = pf.clone();
    // On a thread, so that a spawn that never returns fails the test instead of hanging it; the
    // faults and the point hook are per thread: set them there.
    std::thread::spawn(move || {
        record_after_the_daemon_forked();
        fault::inject(Call::Setxattr, libc::ENOSPC);
        let r = launch::spawn(&pf2, DAEMON, &opts(mode)).map(|s| s.pid);
        let _ = tx.send(r);
    });
    let r = rx.recv_timeout(Duration::from_secs(30)).expect("spawn returned after its record failed");
    let e = r.expect_err("the record failed");
    println!("spawn: {e}");
    assert!(e.message().contains("fsetxattr"), "{e}");
    let left = survivors_after(Duration::from_secs(5));
    assert!(left.is_empty(), "nothing runs unrecorded: {left:?}");
    assert!(!pf.exists());
    assert!(own_leaves().is_empty(), "{:?}", own_leaves());
}
scenario!(a_record_that_cannot_be_written_leaves_nothing_running, undo_body, [Cgroup, Supervisor]);

/// A cgroup record judged where cgroup v2 is hidden (a mount namespace covering its mount
/// point): nothing can be told — unverifiable, nothing signalled, record kept; the same record
/// judged with cgroup v2 visible stops the whole tree.
fn judged_hidden_body(mode: Mode) {
    if let Ok(pf) = std::env::var("PIDGUARD_TEST_JUDGE") {
        // The nested judge, in a mount namespace that hides cgroup v2.
        let r = stop(Path::new(&pf));
        assert_eq!(r.outcome, StopOutcome::Refused(Refusal::Unverifiable), "{:?}", r.outcome);
        assert!(r.signals().is_empty() && Path::new(&pf).exists());
        assert!(r.detail.unwrap_or_default().contains("not the cgroup2 file system"));
        return;
    }
    let dir = TempDir::new("judgedhidden");
    let pf = dir.path().join("a.pid");
    let s = start_daemon(&pf, mode);
    let mount = cgroup2_mount().unwrap();
    let exe = std::env::current_exe().unwrap();
    let name = child_role().unwrap();
    let out = Command::new("unshare")
        .args(["--mount", "sh", "-c", "mount -t tmpfs pidguard-hidden \"$0\" && exec \"$@\""])
        .arg(&mount)
        .arg(&exe)
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env("PIDGUARD_TEST_JUDGE", &pf)
        .output()
        .unwrap();
    println!("nested judge: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("running 1 test"), "the nested judge failed");
    assert_eq!(others().iter().filter(|p| p.4 == "sleep").count(), 2, "nothing was signalled");
    let r = stop(&pf);
    assert_eq!(r.outcome, StopOutcome::Exited(Signal::TERM));
    assert!(survivors_after(Duration::from_secs(5)).is_empty());
    assert!(!leaf_dir(&s).unwrap().exists());
}
scenario!(a_cgroup_record_judged_where_cgroup2_is_hidden_is_unverifiable_and_kept, judged_hidden_body, [Cgroup]);

// ---------------------------------------------------------------------------------------------
// 1. the double-fork daemon

fn daemon_body(mode: Mode, via_cleanup: bool) {
    let dir = TempDir::new("daemon");
    let hook = dir.path().join("plugin");
    std::fs::create_dir_all(&hook).unwrap();
    let pf = hook.join("on_Snapshot__10_daemon.bg.pid");
    let s = start_daemon(&pf, mode);
    let leaf = leaf_dir(&s);
    let (stopped, scope) = if via_cleanup {
        let r = cleanup(dir.path());
        (r.outcome.after().is_some() || r.outcome == HookOutcome::AlreadyGone, r.scope)
    } else {
        let r = stop(&pf);
        (r.outcome.after().is_some() || r.outcome == StopOutcome::AlreadyGone, r.scope)
    };
    if mode == Mode::Group {
        // The documented limitation: a group stop does not reach a process that left the group.
        let left = others();
        assert_eq!(left.iter().filter(|p| p.4 == "sleep").count(), 2, "the escapee survives a group stop: {left:?}");
        end_all();
        return;
    }
    assert!(stopped, "stopped");
    assert_eq!(scope, mode.kind());
    let left = survivors_after(Duration::from_secs(5));
    assert!(left.is_empty(), "survivors: {left:?}");
    assert!(!pf.exists(), "pidfile removed");
    if let Some(l) = leaf {
        assert!(!l.exists(), "the leaf {} is removed", l.display());
    }
    assert!(own_leaves().is_empty(), "{:?}", own_leaves());
}


scenario!(a_double_forked_setsid_daemon_is_stopped_whole, |m| daemon_body(m, false), [Cgroup, Supervisor, Hidden, Group]);
scenario!(a_double_forked_setsid_daemon_is_cleaned_up_whole, |m| daemon_body(m, true), [Cgroup, Supervisor, Hidden, Group]);

// ---------------------------------------------------------------------------------------------
// 2. a real browser, launched as abx-plugins' Chrome launcher does it

/// Debian's chromium: installed by scripts/install-chromium.sh when missing. Why not, if not.
fn chromium() -> Result<PathBuf, String> {
    let find = || {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join("chromium"))
            .find(|p| p.is_file())
    };
    if Command::new("node").arg("--version").output().map_or(true, |o| !o.status.success()) {
        return Err("no node on PATH".into());
    }
    if let Some(p) = find() {
        return Ok(p);
    }
    let out = Command::new("bash").arg(format!("{REPO}/scripts/install-chromium.sh")).output().map_err(|e| e.to_string())?;
    match find() {
        Some(p) => Ok(p),
        None => Err(format!("chromium could not be installed: {}", String::from_utf8_lossy(&out.stderr).trim())),
    }
}

fn exe_name(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok().and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
}

/// The live browser processes (of this namespace: every one is the test's own): their
/// executables are Chromium's (`chromium`, `chrome_crashpad_handler`).
fn browser_processes() -> Vec<(i32, i32, i32, char, String)> {
    others().into_iter().filter(|p| exe_name(p.0).is_some_and(|n| n.starts_with("chrom"))).collect()
}

fn chromium_body(mode: Mode, via_cleanup: bool) {
    let bin = chromium().expect("checked by the parent");
    let dir = TempDir::new("chrome");
    let hook = dir.path().join("chrome");
    std::fs::create_dir_all(&hook).unwrap();
    let udd = dir.path().join("user-data");
    // Chromium's crash database goes below $XDG_CONFIG_HOME: keep it in the test's directory.
    std::env::set_var("HOME", dir.path());
    std::env::set_var("XDG_CONFIG_HOME", dir.path().join("config"));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let pf = hook.join("on_Snapshot__20_chrome_launch.bg.pid");
    let s = spawn(&pf, &["node", HOOK_JS, bin.to_str().unwrap(), udd.to_str().unwrap(), &port], mode);
    let udd_arg = format!("--user-data-dir={}", udd.display());
    // Up: its DevTools port answers (what the launcher waits for), >= 5 processes, and the crash
    // handlers' double forks are done (none is a crash handler's child any more).
    let ready = wait_for(Duration::from_secs(90), || {
        let b = browser_processes();
        let main = b.iter().any(|p| std::fs::read(format!("/proc/{}/cmdline", p.0)).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&udd_arg)));
        let crashpad: Vec<_> = b.iter().filter(|p| p.4.starts_with("chrome_crashpad")).collect();
        let settled = crashpad.iter().all(|c| !crashpad.iter().any(|q| q.0 == c.1));
        let port_up = std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_ok();
        main && !crashpad.is_empty() && settled && port_up && b.len() >= 5
    });
    let b = browser_processes();
    println!("browser processes ({}): {:?}", b.len(), b);
    assert!(ready, "chromium did not come up (>= 5 processes, a crash handler): {b:?}\nstderr: {}", std::fs::read_to_string(&s.stderr).unwrap_or_default());
    let hook_pid = s.pid;
    for p in b.iter().filter(|p| p.4.starts_with("chrome_crashpad")) {
        // The crash handlers double-fork and setsid: outside the hook's session, orphaned (to
        // pid 1 of this namespace) unless a supervisor holds them.
        assert_ne!(p.2, hook_pid, "crashpad handler in the hook's session: {p:?}");
        let expected_parent = s.supervisor_pid.unwrap_or(1);
        assert_eq!(p.1, expected_parent, "crashpad handler's parent: {p:?}");
    }
    let leaf = leaf_dir(&s);
    let (stopped, scope) = if via_cleanup {
        let r = cleanup(dir.path());
        (r.outcome.after().is_some(), r.scope)
    } else {
        let r = stop(&pf);
        (r.outcome.after().is_some(), r.scope)
    };
    if mode == Mode::Group {
        let left = browser_processes();
        assert!(left.len() >= 5, "a group stop leaves the detached browser running: {left:?}");
        end_all();
        return;
    }
    assert!(stopped && scope == mode.kind(), "stopped through its scope");
    let left = survivors_after(Duration::from_secs(10));
    assert!(left.is_empty(), "survivors: {left:?}");
    if let Some(l) = leaf {
        assert!(!l.exists(), "the leaf {} is removed", l.display());
    }
}

fn chromium_scenario(name: &str, via_cleanup: bool, modes: &[Mode]) {
    if let Some(mode) = child_mode(name) {
        chromium_body(mode, via_cleanup);
        return;
    }
    if other_child(name) {
        return;
    }
    if cannot_run().is_none() {
        if let Err(why) = chromium() {
            println!("SKIP {name}: {why}");
            return;
        }
    }
    for &m in modes {
        if !run_child(name, m) {
            return;
        }
    }
}

#[test]
fn a_detached_chromium_hook_is_stopped_whole() {
    chromium_scenario("a_detached_chromium_hook_is_stopped_whole", false, &[Mode::Cgroup, Mode::Hidden, Mode::Group]);
}

#[test]
fn a_detached_chromium_hook_is_cleaned_up_whole() {
    chromium_scenario("a_detached_chromium_hook_is_cleaned_up_whole", true, &[Mode::Cgroup, Mode::Hidden]);
}

// ---------------------------------------------------------------------------------------------
// 3. reuse safety

/// A scope whose processes are all gone: the record is stale, removed, nothing is signalled,
/// and an empty leaf is removed.
fn stale_scope_body(mode: Mode) {
    let dir = TempDir::new("stale");
    let pf = dir.path().join("a.pid");
    let s = spawn(&pf, &["sleep", "4713"], mode);
    let leaf = leaf_dir(&s);
    kill(s.pid, libc::SIGKILL);
    assert!(wait_for(Duration::from_secs(10), || others().is_empty()), "{:?}", others());
    let r = stop(&pf);
    assert!(matches!(r.outcome, StopOutcome::AlreadyGone | StopOutcome::Stale(CheckReason::Gone)), "{:?}", r.outcome);
    assert!(r.signals().is_empty(), "nothing signalled: {:?}", r.signals());
    assert!(r.pid_file_removed && !pf.exists());
    if let Some(l) = leaf {
        assert!(!l.exists(), "the empty leaf is removed");
    }
}
scenario!(a_scope_whose_processes_are_gone_is_stale_and_nothing_is_signalled, stale_scope_body, [Cgroup, Supervisor, Hidden]);

/// The scope is gone (processes exited, leaf removed or supervisor reaped) and a bystander now
/// has the recorded pid: untouched, the record stale.
fn bystander_body(mode: Mode) {
    let dir = TempDir::new("bystander");
    let pf = dir.path().join("a.pid");
    let s = spawn(&pf, &["sleep", "4714"], mode);
    let leaf = leaf_dir(&s);
    kill(s.pid, libc::SIGKILL);
    assert!(wait_for(Duration::from_secs(10), || others().is_empty()), "{:?}", others());
    if let Some(l) = &leaf {
        std::fs::remove_dir(l).unwrap();
    }
    let mut by = bystander_at(s.pid, &["sleep", "4715"]);
    for via_cleanup in [false, true] {
        if via_cleanup {
            // The same record again, for cleanup (stop removed it).
            let hook = dir.path().join("hooks");
            std::fs::create_dir_all(&hook).unwrap();
            let pf2 = hook.join("on_X.bg.pid");
            std::fs::copy(dir.path().join("kept.pid"), &pf2).unwrap();
            copy_xattrs(&dir.path().join("kept.pid"), &pf2);
            let r = cleanup(&hook);
            assert_eq!(r.outcome, HookOutcome::Stale, "{r:?}");
            assert!(r.signals.is_empty());
        } else {
            std::fs::copy(&pf, dir.path().join("kept.pid")).unwrap();
            copy_xattrs(&pf, &dir.path().join("kept.pid"));
            let r = stop(&pf);
            assert_eq!(r.outcome, StopOutcome::Stale(CheckReason::Mismatch), "{:?}", r.outcome);
            assert!(r.signals().is_empty());
            assert!(!pf.exists());
        }
        assert!(untouched(by.id() as i32), "the bystander at the recorded pid is untouched");
    }
    let _ = by.kill();
    let _ = by.wait();
}
scenario!(a_bystander_at_the_recorded_pid_with_the_scope_gone_is_untouched, bystander_body, [Cgroup, Hidden]);

/// Copy the user xattrs (token, scope) of a pidfile with its mtime, so that the copy is the same
/// record.
fn copy_xattrs(from: &Path, to: &Path) {
    for name in [pidguard::TOKEN_XATTR, pidguard::identity::SCOPE_XATTR] {
        if let Some(v) = get_xattr(from, name) {
            set_xattr(to, name, &v);
        }
    }
    let m = std::fs::metadata(from).unwrap().modified().unwrap();
    std::fs::File::options().write(true).open(to).unwrap().set_modified(m).unwrap();
}

fn get_xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = std::ffi::CString::new(name).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: valid strings and a writable buffer of its length.
    let r = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    (r >= 0).then(|| buf[..r as usize].to_vec())
}

fn set_xattr(path: &Path, name: &str, v: &[u8]) {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = std::ffi::CString::new(name).unwrap();
    // SAFETY: valid strings and a readable buffer of its length.
    let r = unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), v.as_ptr().cast(), v.len(), 0) };
    assert_eq!(r, 0, "setxattr {name}: {}", std::io::Error::last_os_error());
}

/// The leaf's path re-created by someone else (rmdir, mkdir the same path, a bystander in it):
/// another cgroup id, a mismatch: the bystander is untouched and the new cgroup stays.
fn recreated_leaf_body(mode: Mode) {
    let dir = TempDir::new("recreated");
    let pf = dir.path().join("a.pid");
    let s = spawn(&pf, &["sh", "-c", "sleep 4716 & exec sleep 4717"], mode);
    let leaf = leaf_dir(&s).unwrap();
    assert!(wait_for(Duration::from_secs(10), || others().len() == 2));
    std::fs::write(leaf.join("cgroup.kill"), "1").unwrap();
    assert!(wait_for(Duration::from_secs(10), || others().is_empty()), "{:?}", others());
    std::fs::remove_dir(&leaf).unwrap();
    std::fs::create_dir(&leaf).unwrap();
    let mut by = bystander(&["sleep", "4718"]).spawn().unwrap();
    std::fs::write(leaf.join("cgroup.procs"), by.id().to_string()).unwrap();
    let r = stop(&pf);
    assert_eq!(r.outcome, StopOutcome::Stale(CheckReason::Gone), "{:?}", r.outcome);
    let detail = r.detail.clone().unwrap_or_default();
    assert!(detail.contains("another cgroup") && detail.contains("not touched"), "mismatch reported: {detail}");
    assert!(r.signals().is_empty());
    assert!(untouched(by.id() as i32), "the bystander in the re-created leaf is untouched");
    assert!(leaf.is_dir(), "the re-created cgroup is not removed");
    assert!(std::fs::read_to_string(leaf.join("cgroup.procs")).unwrap().contains(&by.id().to_string()));
    let _ = by.kill();
    let _ = by.wait();
    std::fs::remove_dir(&leaf).ok();
    wait_for(Duration::from_secs(5), || std::fs::remove_dir(&leaf).is_ok() || !leaf.exists());
}
scenario!(a_leaf_path_recreated_by_someone_else_is_a_mismatch_and_untouched, recreated_leaf_body, [Cgroup]);

/// The supervisor was killed by a stray SIGKILL (its tree orphaned) and its pid reused by a
/// bystander with a child: the record's scope is a mismatch; the bystander and its child are
/// untouched; the recorded command is still stopped, with its group, as a record without a scope.
fn supervisor_reused_body(mode: Mode) {
    let dir = TempDir::new("supreuse");
    let pf = dir.path().join("a.pid");
    let s = spawn(&pf, &["sleep", "4719"], mode);
    let sup = s.supervisor_pid.unwrap();
    assert!(wait_for(Duration::from_secs(10), || stat(s.pid).is_some_and(|p| p.4 == "sleep")));
    kill(sup, libc::SIGKILL);
    assert!(wait_for(Duration::from_secs(10), || {
        reap_zombies();
        stat(sup).is_none()
    }));
    let by = bystander_at(sup, &["sh", "-c", "sleep 4720 & wait"]);
    let by_pid = by.id() as i32;
    assert!(wait_for(Duration::from_secs(10), || others().iter().any(|p| p.1 == by_pid && p.4 == "sleep")));
    let by_child = others().into_iter().find(|p| p.1 == by_pid).unwrap().0;
    let r = stop(&pf);
    let detail = r.detail.clone().unwrap_or_default();
    assert!(detail.contains("no longer its supervisor"), "mismatch reported: {detail}");
    assert_eq!(r.outcome, StopOutcome::Exited(Signal::TERM));
    assert_eq!(r.scope, ScopeKind::Group);
    assert!(!alive(s.pid), "the recorded command is stopped");
    assert!(untouched(by_pid) && untouched(by_child), "the bystander at the supervisor's pid and its child are untouched");
    end_all();
}
scenario!(a_supervisor_record_whose_pid_was_reused_is_untouched, supervisor_reused_body, [Supervisor, Hidden]);

/// The walk's re-check after pinning, forced deterministically: while the scope's members are
/// listed for a signal, one of them is killed and its pid handed to a bystander outside the
/// scope before it is pinned. The bystander must not be signalled (cgroup: it is not listed
/// again after pinning; supervisor: its parent is not the process it was found under).
///
/// The race is played on `SIGCONT`, the one signal sent to a scope that is not held (any other
/// is sent to a frozen or stopped scope, whose members cannot reap a child, so no member's pid
/// can be freed during its walk): the bystander and one member are stopped, and the signal must
/// continue the member and not the bystander.
fn walk_race_body(mode: Mode) {
    use pidguard::identity::{Scope, ScopeState};
    use pidguard::sys::fault::{self, Point};
    let dir = TempDir::new("race");
    let pf = dir.path().join("a.pid");
    let s = spawn(&pf, &["sh", "-c", "sleep 4721 & sleep 4722 & wait"], mode);
    assert!(wait_for(Duration::from_secs(10), || others().iter().filter(|p| p.4 == "sleep").count() == 2));
    let sh = s.pid;
    let kids: Vec<i32> = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children")).unwrap().split_whitespace().map(|w| w.parse().unwrap()).collect();
    let (victim, member) = (kids[0], kids[1]);
    let stopped = |pid: i32| stat(pid).is_some_and(|p| p.3 == 'T');
    kill(member, libc::SIGSTOP);
    assert!(wait_for(Duration::from_secs(10), || stopped(member)));
    let ScopeState::Open(scope) = Scope::open(s.scope_record.as_ref().unwrap(), None) else { panic!("scope not open") };
    let bystander: std::rc::Rc<std::cell::Cell<i32>> = Default::default();
    let by = bystander.clone();
    let mut seen = 0;
    fault::set_point_hook(move |point| {
        if point != Point::BeforeScopePin || by.get() != 0 {
            return;
        }
        seen += 1;
        // cgroup: the first pin of the listing; supervisor: the first child of the command (the
        // walk pins the command, then lists its children).
        if seen != if mode == Mode::Cgroup { 1 } else { 2 } {
            return;
        }
        kill(victim, libc::SIGKILL);
        // The command's shell reaps it (its `wait`): the pid is free.
        assert!(wait_for(Duration::from_secs(10), || stat(victim).is_none()));
        let c = bystander_at(victim, &["sleep", "4723"]);
        let b = c.id() as i32;
        kill(b, libc::SIGSTOP);
        assert!(wait_for(Duration::from_secs(10), || stat(b).is_some_and(|p| p.3 == 'T')));
        by.set(b);
        std::mem::forget(c);
    });
    let sent = scope.signal(Signal::CONT);
    fault::clear_point_hook();
    let b = bystander.get();
    assert!(b != 0, "the race was played");
    println!("signal: {sent:?}; bystander pid {b}");
    assert!(wait_for(Duration::from_secs(5), || !stopped(member)), "the scope got the signal");
    assert!(stopped(b) && untouched(b), "the bystander that took a member's pid during the walk was signalled");
    kill(b, libc::SIGCONT);
    drop(scope);
    let r = stop(&pf);
    assert!(matches!(r.outcome, StopOutcome::Exited(_) | StopOutcome::AlreadyGone | StopOutcome::Stale(_)), "{:?}", r.outcome);
    let left: Vec<_> = others().into_iter().filter(|p| p.0 != b).collect();
    assert!(left.is_empty(), "{left:?}");
    end_all();
}
scenario!(a_pid_reused_during_the_member_walk_is_not_signalled, walk_race_body, [Cgroup, Supervisor]);

// ---------------------------------------------------------------------------------------------
// 4. a hook that moves itself out of its leaf (root can)

fn escape_leaf_body(mode: Mode) {
    let mount = cgroup2_mount().unwrap();
    // With a child left in the leaf, and without (the leaf is then empty: the stop is done by
    // the group stop alone, and must still say so — not "already gone").
    for (via_cleanup, child) in [(false, true), (true, true), (false, false), (true, false)] {
        let dir = TempDir::new("escape");
        let hook = dir.path().join("plugin");
        std::fs::create_dir_all(&hook).unwrap();
        let pf = hook.join("on_Snapshot__30_escape.bg.pid");
        // The hook starts a child (which stays in the leaf), moves itself to the leaf's parent
        // cgroup, then becomes a sleep.
        let script = format!(
            "{}cg=$(sed -n 's/^0:://p' /proc/self/cgroup); echo 0 > '{}'\"${{cg%/*}}/cgroup.procs\" && exec sleep 4725",
            if child { "sleep 4724 & " } else { "" },
            mount.display()
        );
        let s = spawn(&pf, &["sh", "-c", &script], mode);
        let leaf = leaf_dir(&s).unwrap();
        let moved = wait_for(Duration::from_secs(10), || {
            stat(s.pid).is_some_and(|p| p.4 == "sleep")
                && std::fs::read_to_string(format!("/proc/{}/cgroup", s.pid)).is_ok_and(|c| !c.contains("/run-"))
        });
        assert!(moved, "the hook did not move out: {:?}", std::fs::read_to_string(&s.stderr));
        let said = if via_cleanup {
            let r = cleanup(dir.path());
            assert!(r.outcome.after().is_some() && r.signals.contains(&Signal::TERM), "{r:?}");
            r.notes.join("; ")
        } else {
            let r = stop(&pf);
            assert!(r.outcome.after().is_some() && r.signals().contains(&Signal::TERM), "{r:?}");
            r.warning.unwrap_or_default()
        };
        assert!(said.contains("left its scope") && said.contains("process group"), "reported: {said:?}");
        let left = survivors_after(Duration::from_secs(5));
        assert!(left.is_empty(), "survivors: {left:?}");
        assert!(!leaf.exists());
    }
}
scenario!(a_hook_that_moves_out_of_its_leaf_is_reported_and_stopped_through_its_group, escape_leaf_body, [Cgroup]);

// ---------------------------------------------------------------------------------------------
// 5. failures leave nothing behind

/// An explicit cgroup scope where no leaf can be made (cgroup v2 hidden) fails the spawn: no
/// process, no leaf, no pidfile, no log; the error maps to the documented exit status.
fn explicit_cgroup_body(_mode: Mode) {
    let dir = TempDir::new("nocg");
    let pf = dir.path().join("a.pid");
    let mark = dir.path().join("ran");
    let o = SpawnOptions { scope: ScopeMode::Cgroup, ..SpawnOptions::default() };
    let e = launch::spawn(&pf, &["sh", "-c", &format!("touch {}; sleep 4726", mark.display())], &o).unwrap_err();
    println!("error: {e} (exit status {})", ExitCode::for_error(&e).code());
    assert!(e.message().contains("no cgroup leaf could be made"), "{e}");
    assert_eq!(ExitCode::for_error(&e), ExitCode::BadInput, "{e}");
    assert!(others().is_empty(), "no process started: {:?}", others());
    // SAFETY: waitpid with a null status pointer.
    assert_eq!(unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) }, -1, "no child left unreaped");
    assert!(!mark.exists() && !pf.exists());
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(files.is_empty(), "nothing created: {files:?}");
    // Nothing was made on the file system covering the cgroup2 mount either.
    let hidden = PathBuf::from(std::env::var("PIDGUARD_TEST_HIDE").unwrap());
    let made: Vec<_> = std::fs::read_dir(&hidden).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(made.is_empty(), "no leaf (or pidguard directory) made: {made:?}");
}
scenario!(an_explicit_cgroup_scope_without_cgroup2_fails_cleanly, explicit_cgroup_body, [Hidden]);

/// An exec failure — a program that does not exist, and one whose interpreter does not (it
/// passes the checks, execve fails in the child) — leaves no process, no leaf, no pidfile.
fn exec_failure_body(mode: Mode) {
    let dir = TempDir::new("execfail");
    let script = dir.path().join("bad-interpreter");
    std::fs::write(&script, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for prog in ["/nonexistent", script.to_str().unwrap()] {
        let pf = dir.path().join("x.pid");
        let e = launch::spawn(&pf, &[prog], &opts(mode)).unwrap_err();
        println!("{prog}: {e} (exit status {})", ExitCode::for_error(&e).code());
        assert!(e.message().contains("cannot start"), "{e}");
        assert!(others().is_empty(), "no process: {:?}", others());
        // SAFETY: waitpid with a null status pointer.
        assert_eq!(unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) }, -1, "no child left unreaped (a supervisor)");
        assert!(!pf.exists(), "no pidfile");
        assert!(own_leaves().is_empty(), "no leaf: {:?}", own_leaves());
    }
}
scenario!(an_exec_failure_leaves_no_process_leaf_or_pidfile, exec_failure_body, [Cgroup, Supervisor, Hidden]);

// ---------------------------------------------------------------------------------------------
// 6. privilege is never lent

/// Root acts on a record owned by another user (uid 65534) that names root's leaf or root's
/// supervisor: refused, nothing signalled, record kept; the same record owned by root stops.
fn foreign_owner_body(mode: Mode) {
    let dir = TempDir::new("owner");
    let hook = dir.path().join("plugin");
    std::fs::create_dir_all(&hook).unwrap();
    let pf = hook.join("on_Snapshot__40_root.bg.pid");
    let s = spawn(&pf, &["sh", "-c", "sleep 4727 & exec sleep 4728"], mode);
    assert!(wait_for(Duration::from_secs(10), || others().iter().filter(|p| p.4 == "sleep").count() == 2));
    let before: Vec<i32> = others().iter().map(|p| p.0).collect();
    std::os::unix::fs::chown(&pf, Some(65534), Some(65534)).unwrap();
    let r = stop(&pf);
    assert_eq!(r.outcome, StopOutcome::Refused(Refusal::UntrustedPidfile), "{:?}", r.outcome);
    assert!(r.signals().is_empty() && pf.exists());
    let c = cleanup(dir.path());
    assert_eq!(c.outcome, HookOutcome::Refused(Refusal::UntrustedPidfile), "{c:?}");
    assert!(c.signals.is_empty() && pf.exists());
    assert!(before.iter().all(|&p| untouched(p)), "nothing of root's was signalled");
    // The control: root's own record of the same scope is stopped.
    std::os::unix::fs::chown(&pf, Some(0), Some(0)).unwrap();
    let r = stop(&pf);
    assert_eq!(r.outcome, StopOutcome::Exited(Signal::TERM));
    assert!(survivors_after(Duration::from_secs(5)).is_empty());
    let _ = s;
}
scenario!(root_never_acts_on_another_users_record_naming_roots_scope, foreign_owner_body, [Cgroup, Hidden]);

/// A user's leaf (delegated: owned by uid 65534) holding a root process (as a setuid program
/// started in the user's tree would be): root, stopping the user's record, stops the user's
/// processes and never signals the root one.
fn user_leaf_root_member_body(mode: Mode) {
    let dir = TempDir::new("userleaf");
    let pf = dir.path().join("a.pid");
    let s = spawn(&pf, &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", "sleep 4729 & exec sleep 4730"], mode);
    let leaf = leaf_dir(&s).unwrap();
    let user = |p: i32| std::fs::read_to_string(format!("/proc/{p}/status")).is_ok_and(|t| t.lines().any(|l| l.starts_with("Uid:") && l.contains("65534")));
    assert!(wait_for(Duration::from_secs(10), || others().iter().filter(|p| p.4 == "sleep" && user(p.0)).count() == 2));
    std::os::unix::fs::chown(&leaf, Some(65534), Some(65534)).unwrap();
    let root_member = bystander(&["sleep", "4731"]).spawn().unwrap();
    let rp = root_member.id() as i32;
    std::fs::write(leaf.join("cgroup.procs"), rp.to_string()).unwrap();
    std::os::unix::fs::chown(&pf, Some(65534), Some(65534)).unwrap();
    let r = stop_pid_file(&pf, &StopOptions { schedule: sched("TERM/1/KILL/1"), ..StopOptions::default() }).unwrap();
    println!("stop: {:?} detail {:?} signals {:?}", r.outcome, r.detail, r.signals());
    assert!(untouched(rp), "the root process in the user's leaf was signalled");
    let users: Vec<_> = others().into_iter().filter(|p| p.0 != rp).collect();
    assert!(users.is_empty(), "the user's processes are stopped: {users:?}");
    assert_eq!(r.outcome, StopOutcome::Refused(Refusal::UntrustedPidfile), "{:?}", r.outcome);
    assert!(r.detail.unwrap_or_default().contains(&rp.to_string()));
    assert!(pf.exists(), "the record is kept: its scope is not empty");
    kill(rp, libc::SIGKILL);
    assert!(wait_for(Duration::from_secs(5), || others().is_empty()));
    // Now empty: the record is stale and the leaf removed.
    let r = stop(&pf);
    assert_eq!(r.outcome, StopOutcome::AlreadyGone, "{:?}", r.outcome);
    assert!(!pf.exists() && !leaf.exists());
}
scenario!(root_stopping_a_users_leaf_never_signals_a_root_member, user_leaf_root_member_body, [Cgroup]);

// ---------------------------------------------------------------------------------------------
// 9. fork storms and scopes larger than the free descriptors (issue 34)

/// A pids limit on this child and everything it starts, for tests that fork many processes:
/// the test cgroup's `pids.max` where the pids controller is enabled there, else a cgroup v1
/// `pids` directory of its own (both found in `/proc/self/mountinfo`), which it leaves again
/// (and removes, ending what is left in it: only this test's processes) when dropped.
struct PidsLimit {
    v1: Option<(PathBuf, PathBuf)>,
}

impl PidsLimit {
    /// Errors: why no limit can be set here (then the test is skipped: never an unbounded storm).
    fn new(max: u32) -> Result<PidsLimit, String> {
        let own = PathBuf::from(std::env::var("PIDGUARD_TEST_CGROUP").map_err(|_| "no test cgroup")?);
        if own.join("pids.max").exists() {
            std::fs::write(own.join("pids.max"), max.to_string()).map_err(|e| format!("write pids.max: {e}"))?;
            return Ok(PidsLimit { v1: None });
        }
        let mi = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let mount = mi
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                let dash = f.iter().position(|x| *x == "-")?;
                (f.get(dash + 1) == Some(&"cgroup") && f.get(dash + 3)?.split(',').any(|o| o == "pids")).then(|| PathBuf::from(f[4]))
            })
            .ok_or("no pids controller: not on the cgroup2 test directory, no cgroup v1 pids hierarchy")?;
        let back = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| e.to_string())?
            .lines()
            .find_map(|l| {
                let mut it = l.splitn(3, ':');
                let (_, c, p) = (it.next()?, it.next()?, it.next()?);
                c.split(',').any(|x| x == "pids").then(|| mount.join(p.trim_start_matches('/')))
            })
            .ok_or("no pids line in /proc/self/cgroup")?;
        let dir = mount.join(own.file_name().unwrap());
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        std::fs::write(dir.join("pids.max"), max.to_string()).map_err(|e| format!("write pids.max: {e}"))?;
        std::fs::write(dir.join("cgroup.procs"), "0").map_err(|e| format!("join {}: {e}", dir.display()))?;
        Ok(PidsLimit { v1: Some((dir, back)) })
    }
}

impl Drop for PidsLimit {
    fn drop(&mut self) {
        let Some((dir, back)) = &self.v1 else { return };
        let _ = std::fs::write(back.join("cgroup.procs"), "0");
        wait_for(Duration::from_secs(10), || {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for p in procs.split_whitespace().filter_map(|w| w.parse::<i32>().ok()) {
                kill(p, libc::SIGKILL);
            }
            reap_zombies();
            procs.trim().is_empty()
        });
        if let Err(e) = std::fs::remove_dir(dir) {
            println!("could not remove {}: {e}", dir.display());
        }
    }
}

/// The last pid handed out in this namespace.
fn ns_last_pid() -> i64 {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid").unwrap().trim().parse().unwrap()
}

/// A fork storm: three loops, each starting an orphan that ignores SIGTERM (inherited `SIG_IGN`)
/// in a session of its own and lives 1 s; a fork the pids limit refuses is retried after 10 ms.
const STORM: &str = r#"trap "" TERM; storm() { while :; do (setsid sleep 1 & ) 2>/dev/null || sleep 0.01; done; }; storm & storm & storm & wait"#;

/// A storm of ≥ 200 new processes a second, stopped with `TERM/1/KILL/1`: exited, and no
/// process of the storm alive when the stop returns; within the schedule on an idle machine
/// (`scripts/storm.sh` measures it), and on a loaded one possibly after sweeps past the
/// schedule's end (issue 45: bounded here by the sweeps' 20 s). Three rounds per mode.
fn storm_body(mode: Mode) {
    let _limit = match PidsLimit::new(400) {
        Ok(l) => l,
        Err(why) => return println!("SKIP storm ({}): {why}", mode.name()),
    };
    for round in 0..3 {
        let dir = TempDir::new("storm");
        let pf = dir.path().join("storm.pid");
        let s = spawn(&pf, &["sh", "-c", STORM], mode);
        // A loaded machine slows the storm's start down: up to 30 s, and 40 processes suffice.
        assert!(wait_for(Duration::from_secs(30), || others().len() >= 40), "the storm runs: {} processes", others().len());
        // The rate over a 250 ms window (the wait is the window, not a synchronisation),
        // measured again until it is a storm's: a loaded machine slows the storm down at times.
        let mut rate = 0.0;
        wait_for(Duration::from_secs(15), || {
            let (a, t) = (ns_last_pid(), std::time::Instant::now());
            std::thread::sleep(Duration::from_millis(250));
            rate = (ns_last_pid() - a) as f64 / t.elapsed().as_secs_f64();
            rate >= 200.0
        });
        let t0 = std::time::Instant::now();
        let r = stop_pid_file(&pf, &StopOptions { schedule: sched("TERM/1/KILL/1"), ..StopOptions::default() }).unwrap();
        let took = t0.elapsed();
        let left: Vec<_> = others().into_iter().filter(|p| Some(p.0) != s.supervisor_pid).collect();
        println!("storm round {round} ({}): {rate:.0} new processes/s, stopped in {took:?}: {:?}, {} left", mode.name(), r.outcome, left.len());
        println!("(the storm's rate is printed, not asserted: a loaded machine may not reach 200/s; {rate:.0}/s here)");
        assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?} detail {:?}", r.outcome, r.detail);
        assert!(left.is_empty(), "alive after the stop: {left:?}");
        // On a loaded machine the stop goes on past the schedule's end until the storm is gone
        // (stop-then-kill sweeps, at most 20 s more): the time is printed above, and bounded.
        assert!(took <= Duration::from_secs(2 + 20 + 3), "the stop overran its schedule and its sweeps past the end: {took:?}");
        assert!(!pf.exists(), "the pidfile is removed");
        end_all();
    }
}
scenario!(a_fork_storm_is_stopped_within_the_schedule, storm_body, [Cgroup, Supervisor]);

/// Busy loops (`while :; do :; done`), four per core, children of this test in its pids-limited
/// cgroup and its PID namespace: the load a CI runner has. Ended by pid on drop.
struct BusyLoops(Vec<std::process::Child>);

impl BusyLoops {
    fn start() -> BusyLoops {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        BusyLoops(
            (0..4 * cores)
                .map(|_| Command::new("setsid").args(["sh", "-c", "while :; do :; done"]).spawn().expect("start a busy loop"))
                .collect(),
        )
    }

    fn pids(&self) -> Vec<i32> {
        self.0.iter().map(|c| c.id() as i32).collect()
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            kill(c.id() as i32, libc::SIGKILL);
            let _ = c.wait();
        }
    }
}

/// Issue 45: the storm of [`storm_body`] on a loaded machine (four busy loops per core, all in
/// the pids-limited cgroup). The stop's schedule is `TERM/1/KILL/1`; it may go on past the
/// schedule's end (stop-then-kill sweeps until the tree is empty), but it must end with the
/// storm stopped: `Exited`, nothing of the storm alive. Two rounds per mode (scripts/storm.sh
/// measures 20 per mode under a heavier load).
fn storm_under_load_body(mode: Mode) {
    let _limit = match PidsLimit::new(400) {
        Ok(l) => l,
        Err(why) => return println!("SKIP storm under load ({}): {why}", mode.name()),
    };
    for round in 0..2 {
        let load = BusyLoops::start();
        let busy = load.pids();
        let storm = || others().into_iter().filter(|p| !busy.contains(&p.0)).collect::<Vec<_>>();
        let dir = TempDir::new("storm-load");
        let pf = dir.path().join("storm.pid");
        let s = spawn(&pf, &["sh", "-c", STORM], mode);
        assert!(wait_for(Duration::from_secs(30), || storm().len() >= 40), "the storm runs: {} processes", storm().len());
        let mut rate = 0.0;
        wait_for(Duration::from_secs(15), || {
            let (a, t) = (ns_last_pid(), std::time::Instant::now());
            std::thread::sleep(Duration::from_millis(250));
            rate = (ns_last_pid() - a) as f64 / t.elapsed().as_secs_f64();
            rate >= 100.0
        });
        let before = storm().len();
        let t0 = std::time::Instant::now();
        let r = stop_pid_file(&pf, &StopOptions { schedule: sched("TERM/1/KILL/1"), ..StopOptions::default() }).unwrap();
        let took = t0.elapsed();
        let left: Vec<_> = storm().into_iter().filter(|p| Some(p.0) != s.supervisor_pid).collect();
        println!(
            "storm under load, round {round} ({}): {} busy loops, {rate:.0} new processes/s, {before} processes, stopped in {took:?}: {:?}, {} left",
            mode.name(),
            busy.len(),
            r.outcome,
            left.len()
        );
        assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?} detail {:?}, {} left: {left:?}", r.outcome, r.detail, left.len());
        assert!(left.is_empty(), "alive after the stop: {left:?}");
        assert!(!pf.exists(), "the pidfile is removed");
        drop(load);
        end_all();
    }
}
scenario!(a_fork_storm_on_a_loaded_machine_is_stopped, storm_under_load_body, [Cgroup, Supervisor]);

/// A scope of 240 members (120 children of the command, 120 orphans in sessions of their own)
/// stopped by a caller that may hold only 128 descriptors: every member is stopped.
fn many_members_body(mode: Mode) {
    let _limit = match PidsLimit::new(400) {
        Ok(l) => l,
        Err(why) => return println!("SKIP many members ({}): {why}", mode.name()),
    };
    let dir = TempDir::new("many");
    let pf = dir.path().join("many.pid");
    let script = "i=0; while [ $i -lt 120 ]; do sleep 4760 & (setsid sleep 4761 &); i=$((i+1)); done; wait";
    let s = spawn(&pf, &["sh", "-c", script], mode);
    assert!(wait_for(Duration::from_secs(30), || others().iter().filter(|p| p.4 == "sleep").count() == 240), "240 members run");
    let lim = libc::rlimit { rlim_cur: 128, rlim_max: 128 };
    // SAFETY: setrlimit with a valid struct, for this test child only.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    let r = stop(&pf);
    let left: Vec<_> = others().into_iter().filter(|p| Some(p.0) != s.supervisor_pid).collect();
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?} detail {:?}", r.outcome, r.detail);
    assert!(left.is_empty(), "{} alive after the stop: {left:?}", left.len());
    end_all();
}
scenario!(a_scope_larger_than_the_free_descriptors_is_stopped, many_members_body, [Cgroup, Supervisor]);

/// A scope is held for a signal (frozen, or stopped with `SIGSTOP` first) and released after:
/// a tree that ignores the schedule's only signal (`INT`) is left running, not frozen or
/// stopped, and a member stopped before the stop stays stopped (only what the stop stopped is
/// continued).
fn held_and_released_body(mode: Mode) {
    let dir = TempDir::new("held");
    let pf = dir.path().join("held.pid");
    let s = spawn(&pf, &["sh", "-c", "trap '' INT; sleep 4770 & sleep 4771 & wait"], mode);
    let sleeps = || others().into_iter().filter(|p| p.4 == "sleep").collect::<Vec<_>>();
    assert!(wait_for(Duration::from_secs(10), || sleeps().len() == 2));
    let cmdline = |p: i32| std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default();
    let paused = sleeps().into_iter().find(|p| cmdline(p.0).contains("4771")).unwrap().0;
    let running = sleeps().into_iter().find(|p| cmdline(p.0).contains("4770")).unwrap().0;
    let state = |p: i32| stat(p).map(|s| s.3);
    kill(paused, libc::SIGSTOP);
    assert!(wait_for(Duration::from_secs(10), || state(paused) == Some('T')));
    let r = stop_pid_file(&pf, &StopOptions { schedule: sched("INT/0.3"), ..StopOptions::default() }).unwrap();
    println!("stop: {:?} signals {:?}", r.outcome, r.signals());
    assert_eq!(r.outcome, StopOutcome::Unkillable, "{:?}", r.outcome);
    assert!(state(s.pid).is_some_and(|c| c != 'T') && state(running).is_some_and(|c| c != 'T'), "left stopped: sh {:?}, sleep {:?}", state(s.pid), state(running));
    assert_eq!(state(paused), Some('T'), "a member stopped before the stop stays stopped");
    if let Some(d) = leaf_dir(&s) {
        assert_eq!(std::fs::read_to_string(d.join("cgroup.freeze")).unwrap().trim(), "0", "the leaf is thawed");
        assert!(std::fs::read_to_string(d.join("cgroup.events")).unwrap().contains("frozen 0"));
    }
    let r = stop(&pf);
    assert!(matches!(r.outcome, StopOutcome::Exited(_)), "{:?}", r.outcome);
    assert!(!pf.exists());
    end_all();
}
scenario!(a_held_scope_is_released_after_its_signal, held_and_released_body, [Cgroup, Supervisor]);
