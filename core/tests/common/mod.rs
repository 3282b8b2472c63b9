//! Helpers for tests on real processes. Every process started here is ended by pid (or by
//! pidguard) before the test returns; bystanders get their own process group.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child that is killed (by pid, SIGKILL) and reaped when dropped.
pub struct Proc(pub Child);

impl Proc {
    pub fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Proc {
    /// Kill the whole group this child leads, member by member by pid, then the child, then
    /// reap it. Until the child is reaped its pid (and so its group number) cannot be reused,
    /// so every member found is one this test started.
    fn drop(&mut self) {
        let pgid = self.pid();
        for _ in 0..50 {
            let me = std::process::id() as i32;
            // Never ourselves: a test may have joined the group of a child it started.
            let members: Vec<i32> = group_members(pgid).into_iter().filter(|&m| m != pgid && m != me).collect();
            if members.is_empty() {
                break;
            }
            for m in members {
                // SAFETY: plain kill(2) of a positive pid in our own child's group.
                unsafe { libc::kill(m, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `bash -c script` as the leader of a new process group.
pub fn spawn_group(script: &str) -> Proc {
    Proc(
        Command::new("bash")
            .arg("-c")
            .arg(script)
            .process_group(0)
            .stdin(Stdio::null())
            // Nothing of ours held open: a process that outlived its test (killed test binary)
            // must not keep the harness's pipe open and stall whoever reads it to the end.
            .stdout(Stdio::null())
            // bash reports each child it sees killed ("Killed  sleep infinity"): the tests kill them
            // on purpose, and the line would read as a failure in the test output.
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bash"),
    )
}

/// Live (non-zombie) members of process group `pgid`, from /proc.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let rest = &s[s.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split(' ').collect();
        if f[0] != "Z" && f[2].parse::<i32>().ok() == Some(pgid) {
            out.push(pid);
        }
    }
    out
}

/// Whether `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s[s.rfind(')').unwrap() + 2..].starts_with('Z'),
        Err(_) => false,
    }
}

/// Wait until `cond` holds or `timeout` passes.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// A fresh temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("pidguard-test-{tag}-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Seconds since the epoch as f64.
pub fn now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// The role this test binary was re-run for (`PIDGUARD_TEST_CHILD`), if any.
pub fn child_role() -> Option<String> {
    std::env::var("PIDGUARD_TEST_CHILD").ok()
}

/// Run the test `name` of this binary again as a child with `PIDGUARD_TEST_CHILD=name`, behind
/// `prefix` (for example `unshare --pid --fork --mount-proc`).
pub fn reexec(name: &str, prefix: &[&str], setup: impl FnOnce(&mut Command)) -> std::process::Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = if prefix.is_empty() {
        Command::new(&exe)
    } else {
        let mut c = Command::new(prefix[0]);
        c.args(&prefix[1..]).arg(&exe);
        c
    };
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"]).env("PIDGUARD_TEST_CHILD", name);
    setup(&mut cmd);
    let out = cmd.output().expect("re-run the test binary");
    println!("--- child {name} stdout ---\n{}", String::from_utf8_lossy(&out.stdout));
    println!("--- child {name} stderr ---\n{}", String::from_utf8_lossy(&out.stderr));
    // A child that ran no test (a name that matches none) would pass without doing anything.
    assert!(
        !out.status.success() || String::from_utf8_lossy(&out.stdout).contains("running 1 test"),
        "the child ran no test named {name}"
    );
    out
}

/// Run `race` each time this thread reaches the fault point `at`, until
/// `pidguard::sys::fault::clear_point_hook`; returns how many times it ran (a race test asserts
/// it ran, so a point that is never reached fails the test instead of passing it silently).
pub fn race_at(at: pidguard::sys::fault::Point, mut race: impl FnMut() + 'static) -> std::rc::Rc<std::cell::Cell<u32>> {
    let fired = std::rc::Rc::new(std::cell::Cell::new(0));
    let count = fired.clone();
    pidguard::sys::fault::set_point_hook(move |point| {
        if point == at {
            count.set(count.get() + 1);
            race();
        }
    });
    fired
}
