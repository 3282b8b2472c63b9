//! The shared materialiser of the conformance vectors (`tests/vectors/*.json`, see the README
//! there). It sets every case up on real processes in a temporary directory, tells a runner what
//! to call, and afterwards reports what it observes (is the pidfile still there, is the
//! bystander alive) and tears everything down. It does not use pidguard to prepare anything:
//! tokens, create times and files are made from procfs directly, so a broken rule in pidguard
//! cannot also break the setup that tests it.
//!
//! ```text
//! vector_fixture serve --vectors DIR --caller PID     line protocol on stdin/stdout (below)
//! vector_fixture drive --vectors DIR [--lang c] -- CMD [ARG…]   run CMD (the C runner) as the caller
//! ```
//!
//! `serve` protocol, one request per line, one JSON reply per line:
//! - `list` → `{"cases": [name, …]}`
//! - `setup NAME` → the prepared case: `{"name", "skip", "call", "pid_file", "cmd_file", "dir",
//!   "pid", "token", "tolerance", "policy", "schedule", "start_time", "umask", "expect"}`.
//!   `skip` is a reason string when the case cannot be set up here, else null.
//! - `finish NAME` → `{"post": {…}}`: the observations the case's `expect` names (see
//!   [`POST_KEYS`]), made after the call; then every process of the case is killed and reaped
//!   and its directory removed.
//!
//! `drive` starts CMD, sends it one tab-separated line per case (`call pid_file cmd_file
//! tolerance pid token policy schedule start_time umask dir`; empty fields for none) and reads
//! one JSON line back, compares it with the case's `expect` exactly as the other runners do,
//! and prints `N passed, N failed, N skipped`. CMD's answer may carry `error_code` (the C
//! status, negative); it is turned into the error-kind slug with `pidguard::ErrorKind`.
//!
//! Every process started here is its own child in a process group it leads; teardown kills
//! those groups (while the leader is still unreaped, so the number cannot have been reused)
//! and reaps the leaders. Nothing else is ever signalled.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

/// Keys of `expect` that are observations made by the fixture after the call.
const POST_KEYS: &[&str] =
    &["file_exists", "target_alive", "group_alive", "leader_alive", "mode", "content", "link_target_unchanged"];

// ---------------------------------------------------------------------------------------------
// procfs, read directly

struct Token {
    machine: String,
    boot: String,
    pidns: u64,
    ticks: u64,
    pidfs: Option<u64>,
}

impl Token {
    fn render(&self) -> String {
        let pidfs = self.pidfs.map(|i| i.to_string()).unwrap_or_else(|| "-".into());
        format!("linux1:{}:{}:{}:{}:{}", self.machine, self.boot, self.pidns, self.ticks, pidfs)
    }
}

fn machine_id() -> String {
    let m = fs::read_to_string("/etc/machine-id").unwrap_or_default().trim().to_string();
    if !m.is_empty() {
        return m;
    }
    fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string()
}

/// Fields after the command name of `/proc/<pid>/stat` (field 3, the state, is index 0).
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let s = fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = s.iter().rposition(|&b| b == b')')?;
    Some(String::from_utf8_lossy(&s[close + 1..]).split_whitespace().map(String::from).collect())
}

fn state(pid: i32) -> Option<char> {
    stat_fields(pid)?.first()?.chars().next()
}

fn ppid_of(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

fn pgid_of(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(2)?.parse().ok()
}

fn alive(pid: i32) -> bool {
    matches!(state(pid), Some(c) if c != 'Z' && c != 'X')
}

fn group_alive(pgid: i32) -> bool {
    fs::read_dir("/proc").map_or(false, |d| {
        d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).any(|p| pgid_of(p) == Some(pgid) && alive(p))
    })
}

fn group_size(pgid: i32) -> usize {
    group_members(pgid).len()
}

/// Whether the process ignores SIGTERM (bit 15 of `SigIgn` in `/proc/<pid>/status`).
fn ignores_term(pid: i32) -> bool {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines().find_map(|l| l.strip_prefix("SigIgn:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok()).is_some_and(|m| m & (1 << 14) != 0)
}

fn group_members(pgid: i32) -> Vec<i32> {
    fs::read_dir("/proc").map_or(Vec::new(), |d| {
        d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).filter(|&p| pgid_of(p) == Some(pgid) && alive(p)).collect()
    })
}

/// Wait until `pid` has finished its exec: right after `spawn` returns (vfork released at
/// exec), `/proc/<pid>/cmdline` can still be empty.
fn wait_exec(pid: i32) -> bool {
    wait_until(|| fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty()))
}

fn pidfs_ino(pid: i32) -> Option<u64> {
    // SAFETY: plain syscalls on a pidfd we own and close.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if fd < 0 {
            return None;
        }
        let mut sfs: libc::statfs = std::mem::zeroed();
        let mut st: libc::stat = std::mem::zeroed();
        let ok = libc::fstatfs(fd, &mut sfs) == 0 && libc::fstat(fd, &mut st) == 0;
        libc::close(fd);
        // PIDFS_MAGIC: only pidfs gives every process its own inode (Linux >= 6.9).
        (ok && sfs.f_type as u64 == 0x5049_4446).then_some(st.st_ino)
    }
}

fn token_of(pid: i32) -> Option<Token> {
    let f = stat_fields(pid)?;
    let ticks = f.get(19)?.parse().ok()?;
    let pidns = fs::metadata("/proc/self/ns/pid").ok()?.ino();
    let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?.trim().to_string();
    Some(Token { machine: machine_id(), boot, pidns, ticks, pidfs: pidfs_ino(pid) })
}

/// psutil's create time: btime + start ticks / CLK_TCK.
fn create_time(ticks: u64) -> f64 {
    let stat = fs::read_to_string("/proc/stat").unwrap_or_default();
    let btime: f64 = stat.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    btime + ticks as f64 / hz
}

/// Whether the runner says it runs in a private PID namespace of its own (made with `unshare
/// --pid --fork --mount-proc` by the test scripts), where writing `ns_last_pid` affects nothing
/// outside. A namespace we did not make ourselves (a container shared with others) does not count.
fn in_private_pidns() -> bool {
    let own = fs::metadata("/proc/self/ns/pid").map(|m| m.ino()).ok();
    std::env::var("PIDGUARD_VECTORS_PIDNS").ok().and_then(|v| v.parse::<u64>().ok()) == own && own.is_some()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

// ---------------------------------------------------------------------------------------------
// one prepared case

#[derive(Default)]
struct Prepared {
    dir: PathBuf,
    /// Leaders of groups we created, still our children (zombies pin their numbers).
    children: Vec<Child>,
    target: Option<i32>,
    leader: Option<i32>,
    pid_file: PathBuf,
    victim: Option<(PathBuf, Vec<u8>)>,
}

impl Prepared {
    fn teardown(&mut self) {
        for c in &mut self.children {
            let pid = c.id() as i32;
            // Our own unreaped child leads this group: the number cannot belong to anyone else.
            // SAFETY: killpg(2) of a group whose leader is our unreaped child.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
            let _ = c.kill();
            let _ = c.wait();
        }
        self.children.clear();
        if !self.dir.as_os_str().is_empty() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

struct Fixture {
    cases: BTreeMap<String, Value>,
    caller: i32,
    base: PathBuf,
    prepared: Option<Prepared>,
    counter: u32,
}

fn spawn(argv: &[String], group: i32) -> std::io::Result<Child> {
    Command::new(&argv[0])
        .args(&argv[1..])
        .process_group(group)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

fn wait_until(what: impl Fn() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

fn subst(s: &str, vars: &[(&str, String)]) -> String {
    let mut out = s.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

fn forge(live: &Token, variant: &str) -> Result<String, String> {
    let t = Token { machine: live.machine.clone(), boot: live.boot.clone(), pidns: live.pidns, ticks: live.ticks, pidfs: live.pidfs };
    Ok(match variant {
        "live" => t.render(),
        "other-boot" => Token { boot: "00000000-0000-4000-8000-000000000000".into(), ..t }.render(),
        // Another machine: another machine id and another boot (an equal boot id proves the
        // same kernel whatever the machine id: see the next variant).
        "other-machine" => {
            Token { machine: "0123456789abcdef0123456789abcdef".into(), boot: "00000000-0000-4000-8000-000000000000".into(), ..t }.render()
        }
        // A machine id written (or replaced) after the record, the same boot (rook/rook#182).
        "other-machine-same-boot" => Token { machine: "0123456789abcdef0123456789abcdef".into(), ..t }.render(),
        // Recorded by a reader that could not read the boot id (no /proc): never a value.
        "unknown-boot" => Token { boot: "unknown".into(), ..t }.render(),
        "other-pidns" => Token { pidns: t.pidns + 1, ..t }.render(),
        // Another process's start ticks, as recorded without a pidfs inode (which would decide
        // alone, ticks unread).
        "other-ticks" => Token { ticks: t.ticks + 1, pidfs: None, ..t }.render(),
        // The same process seen from another time namespace: other ticks, the same inode.
        "other-ticks-same-inode" => Token { ticks: t.ticks + 86_400 * 100, ..t }.render(),
        "other-pidfs" => match t.pidfs {
            Some(i) => Token { pidfs: Some(i + 1), ..t }.render(),
            None => return Err("the kernel has no pidfs (Linux < 6.9): no pidfs inode to forge".into()),
        },
        "no-pidfs" => Token { pidfs: None, ..t }.render(),
        "short" => format!("linux1:{}:{}:{}:{}", t.machine, t.boot, t.pidns, t.ticks),
        "garbage" => "not-a-token".into(),
        "wrong-version" => t.render().replacen("linux1", "linux9", 1),
        other => return Err(format!("unknown token variant {other:?}")),
    })
}

impl Fixture {
    fn load(dir: &Path, caller: i32) -> Fixture {
        let mut cases = BTreeMap::new();
        let mut files: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for f in files {
            let v: Value = serde_json::from_slice(&fs::read(&f).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            for c in v["cases"].as_array().unwrap_or_else(|| panic!("{}: no \"cases\" array", f.display())) {
                let name = c["name"].as_str().unwrap_or_else(|| panic!("{}: a case without a name", f.display())).to_string();
                // Every binding makes the one call of core: a case cannot be marked as a known
                // difference of one binding, a disagreement is a bug.
                assert!(c.get("diverges").is_none(), "{name}: \"diverges\" is not a field of a case any more");
                assert!(cases.insert(name.clone(), c.clone()).is_none(), "duplicate case name {name}");
            }
        }
        // Unique on the machine, not only in our PID namespace: runners in other private
        // namespaces have the same small pids (two runs at once shared a directory).
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let base = std::env::temp_dir().join(format!("pidguard-vectors-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&base).unwrap();
        Fixture { cases, caller, base, prepared: None, counter: 0 }
    }

    fn setup(&mut self, name: &str) -> Value {
        if let Some(mut p) = self.prepared.take() {
            p.teardown();
        }
        let Some(case) = self.cases.get(name).cloned() else { return json!({"name": name, "error": "no such case"}) };
        self.counter += 1;
        let mut p = Prepared { dir: self.base.join(format!("c{}", self.counter)), ..Default::default() };
        fs::create_dir_all(&p.dir).unwrap();
        let out = match self.materialise(&case, &mut p) {
            Ok(v) => v,
            Err(reason) => json!({"name": name, "skip": reason, "expect": case["expect"]}),
        };
        self.prepared = Some(p);
        out
    }

    fn materialise(&self, case: &Value, p: &mut Prepared) -> Result<Value, String> {
        let dir = p.dir.clone();
        let dir_s = dir.to_string_lossy().into_owned();
        let default_argv = vec!["sleep".to_string(), "1000".to_string()];
        let argv: Vec<String> = case["argv"]
            .as_array()
            .map(|a| a.iter().map(|x| subst(x.as_str().unwrap_or(""), &[("dir", dir_s.clone())])).collect())
            .unwrap_or(default_argv.clone());
        // Copies of system binaries under another name ("chrome" → a copy of sleep), so that the
        // live process name is that name.
        if let Some(copies) = case["copy_as"].as_object() {
            for (new, orig) in copies {
                let src = which(orig.as_str().unwrap()).ok_or_else(|| format!("{orig} not found on PATH"))?;
                let dst = dir.join(new);
                fs::copy(&src, &dst).map_err(|e| format!("copy {}: {e}", src.display()))?;
                fs::set_permissions(&dst, fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        // Extra files the process needs (a script for an interpreter).
        // A file whose text starts with `#!` is made executable, so that the kernel runs it
        // through its shebang (a node hook under `plugins/chrome/`).
        for (name, text) in case["files"].as_object().into_iter().flatten() {
            let path = dir.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let text = subst(text.as_str().unwrap_or(""), &[("dir", dir_s.clone())]);
            fs::write(&path, &text).unwrap();
            if text.starts_with("#!") {
                fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        let kind = case["process"].as_str().unwrap_or("none");
        let mut token: Option<Token> = None;
        let mut pid: Option<i32> = None;
        let grouped = case["leader"].as_bool().unwrap_or(true);
        let mut group = 0;
        if !grouped && matches!(kind, "live" | "other-user") {
            let l = spawn(&default_argv, 0).map_err(|e| e.to_string())?;
            group = l.id() as i32;
            wait_exec(group);
            p.leader = Some(group);
            p.children.push(l);
        }
        match kind {
            "none" => {}
            "live" | "other-user" => {
                let argv = if kind == "other-user" {
                    if !is_root() {
                        return Err("another user's process needs root (setpriv --reuid)".into());
                    }
                    which("setpriv").ok_or("setpriv is not installed")?;
                    let mut a: Vec<String> =
                        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"].iter().map(|s| s.to_string()).collect();
                    a.extend(argv.clone());
                    a
                } else {
                    argv.clone()
                };
                let c = spawn(&argv, group).map_err(|e| format!("spawn {argv:?}: {e}"))?;
                let id = c.id() as i32;
                p.children.push(c);
                if !wait_exec(id) {
                    return Err(format!("{argv:?} never finished its exec"));
                }
                // Processes that must ignore SIGTERM have installed their trap before the call.
                if let Some(n) = case["wait_ignoring_term"].as_u64() {
                    if !wait_until(|| group_members(id).into_iter().filter(|&m| ignores_term(m)).count() >= n as usize) {
                        return Err(format!("the group of {id} never had {n} members ignoring SIGTERM"));
                    }
                }
                if kind == "other-user" && !wait_until(|| fs::metadata(format!("/proc/{id}")).is_ok_and(|m| m.uid() == 65534)) {
                    return Err("setpriv did not switch to uid 65534".into());
                }
                if let Some(n) = case["wait_members"].as_u64() {
                    if !wait_until(|| group_size(id) >= n as usize) {
                        return Err(format!("the group of {id} never had {n} live members"));
                    }
                }
                pid = Some(id);
                token = token_of(id);
            }
            "leader-thread-exited" => {
                // The main thread calls pthread_exit while a worker runs: /proc/<pid>/stat says
                // Z for the leader, the process lives (openclaw/openclaw PR #137726).
                let src = p.dir.join("leader_exits.c");
                fs::write(
                    &src,
                    "#include <pthread.h>\n#include <unistd.h>\nstatic void *w(void *a){ (void)a; for(;;) pause(); return 0; }\n\
                     int main(void){ pthread_t t; pthread_create(&t, 0, w, 0); pthread_exit(0); }\n",
                )
                .map_err(|e| e.to_string())?;
                let exe = p.dir.join("leader_exits");
                let built = Command::new("cc").args(["-O2", "-pthread", "-o"]).arg(&exe).arg(&src).status();
                if !built.is_ok_and(|s| s.success()) {
                    return Err("no C compiler (cc) to build the leader-thread-exited program".into());
                }
                let c = spawn(&[exe.to_string_lossy().into_owned()], 0).map_err(|e| e.to_string())?;
                let id = c.id() as i32;
                p.children.push(c);
                let threads = |pid: i32| {
                    fs::read_to_string(format!("/proc/{pid}/status"))
                        .ok()
                        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Threads:").map(|v| v.trim().to_string())))
                };
                if !wait_until(|| state(id) == Some('Z') && threads(id).as_deref() == Some("2")) {
                    return Err(format!("{id}: the leader never showed Z with a live thread"));
                }
                pid = Some(id);
                token = token_of(id);
            }
            "exited" | "zombie" | "zombie-leader-with-child" => {
                let a = if kind == "zombie-leader-with-child" {
                    vec!["sh".into(), "-c".into(), "sleep 1000 & sleep 0.05; exit 0".into()]
                } else {
                    default_argv.clone()
                };
                let mut c = spawn(&a, 0).map_err(|e| e.to_string())?;
                let id = c.id() as i32;
                wait_exec(id);
                token = token_of(id);
                if kind != "zombie-leader-with-child" {
                    let _ = c.kill();
                }
                if kind == "exited" {
                    let _ = c.wait();
                } else {
                    if !wait_until(|| state(id) == Some('Z')) {
                        return Err(format!("{id} never became a zombie"));
                    }
                    p.children.push(c);
                }
                pid = Some(id);
            }
            "reused" => {
                if !in_private_pidns() {
                    return Err("forcing a pid onto a bystander needs a private PID namespace (ns_last_pid); run under unshare --pid --fork --mount-proc".into());
                }
                let bystander: Option<Vec<String>> =
                    case["bystander"].as_array().map(|a| a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect());
                let (id, t) = self.reuse(p, bystander)?;
                pid = Some(id);
                token = Some(t);
            }
            "self" => {
                pid = Some(self.caller);
                token = token_of(self.caller);
            }
            "parent" => {
                let pp = ppid_of(self.caller).filter(|&x| x > 0).ok_or("the caller's parent is not visible here")?;
                pid = Some(pp);
                token = token_of(pp);
            }
            "caller-group" => {
                let g = pgid_of(self.caller).filter(|&x| x > 0).ok_or("the caller's process group is not visible in this PID namespace")?;
                if g == self.caller {
                    return Err("the caller leads its own process group (covered by the own-pid cases)".into());
                }
                pid = Some(g);
                token = token_of(g);
            }
            "init" => {
                pid = Some(1);
                token = token_of(1);
            }
            other => return Err(format!("unknown process kind {other:?}")),
        }
        if pid.is_some() && kind != "exited" && token.is_none() {
            return Err("cannot read the token of the process".into());
        }
        p.target = pid;
        let tok_variant = case["token"].as_str();
        let token_s = match (&token, tok_variant) {
            (_, None) => None,
            (Some(t), Some(v)) => Some(forge(t, v)?),
            (None, Some(_)) => return Err("a token is asked for but the case has no process".into()),
        };
        let create = token.as_ref().map(|t| create_time(t.ticks));
        let mut vars = vec![("dir", dir_s.clone())];
        if let Some(pid) = pid {
            vars.push(("pid", pid.to_string()));
        }
        vars.push(("token", token_s.clone().unwrap_or_default()));

        // The pidfile.
        let file = &case["file"];
        let fname = file["name"].as_str().unwrap_or("on_hook.bg.pid");
        p.pid_file = dir.join(fname);
        let content: Vec<u8> = if let Some(r) = file["content_repeat"].as_array() {
            r[0].as_str().unwrap().repeat(r[1].as_u64().unwrap() as usize).into_bytes()
        } else if let Some(hex) = file["content_hex"].as_str() {
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
        } else {
            subst(file["content"].as_str().unwrap_or("{pid}"), &vars).into_bytes()
        };
        let fkind = file["kind"].as_str().unwrap_or("regular");
        let real: PathBuf = match fkind {
            "regular" => p.pid_file.clone(),
            "symlink" | "hardlink" => dir.join("victim"),
            _ => PathBuf::new(),
        };
        match fkind {
            "missing" => {}
            "dangling-symlink" => std::os::unix::fs::symlink(dir.join("nowhere"), &p.pid_file).unwrap(),
            "fifo" => {
                // SAFETY: mkfifo on a path we own.
                if unsafe { libc::mkfifo(cstr(&p.pid_file).as_ptr(), 0o644) } != 0 {
                    return Err(format!("mkfifo: {}", std::io::Error::last_os_error()));
                }
            }
            "directory" => fs::create_dir(&p.pid_file).unwrap(),
            "regular" | "symlink" | "hardlink" => {
                fs::write(&real, &content).unwrap();
                if let Some(x) = file["xattr"].as_str() {
                    let t = token.as_ref().ok_or("an xattr is asked for but the case has no process")?;
                    let v = forge(t, x)?;
                    let name = CString::new("user.pidguard.token").unwrap();
                    // SAFETY: setxattr on a path we own with valid buffers.
                    let r = unsafe {
                        libc::setxattr(cstr(&real).as_ptr(), name.as_ptr(), v.as_ptr().cast(), v.len(), 0)
                    };
                    if r != 0 {
                        return Err(format!("this file system has no user xattrs: {}", std::io::Error::last_os_error()));
                    }
                }
                let mode = u32::from_str_radix(file["mode"].as_str().unwrap_or("0644"), 8).unwrap();
                fs::set_permissions(&real, fs::Permissions::from_mode(mode)).unwrap();
                if let Some(owner) = file["owner"].as_str() {
                    if !is_root() {
                        return Err("chown to another user needs root".into());
                    }
                    assert_eq!(owner, "nobody");
                    std::os::unix::fs::chown(&real, Some(65534), Some(65534)).unwrap();
                }
                let mtime = match &file["mtime"] {
                    Value::Number(n) => create.map(|c| c + n.as_f64().unwrap()),
                    Value::Object(o) => o.get("absolute").and_then(Value::as_f64),
                    _ => create,
                };
                if let Some(m) = mtime {
                    let secs = m.floor();
                    let ts = libc::timespec { tv_sec: secs as libc::time_t, tv_nsec: ((m - secs) * 1e9) as libc::c_long };
                    // SAFETY: utimensat on a path we own with two valid timespecs.
                    unsafe { libc::utimensat(libc::AT_FDCWD, cstr(&real).as_ptr(), [ts, ts].as_ptr(), 0) };
                }
                if fkind == "symlink" {
                    std::os::unix::fs::symlink(&real, &p.pid_file).unwrap();
                } else if fkind == "hardlink" {
                    fs::hard_link(&real, &p.pid_file).unwrap();
                }
                if fkind != "regular" {
                    p.victim = Some((real.clone(), content.clone()));
                }
            }
            other => return Err(format!("unknown file kind {other:?}")),
        }
        let call = &case["call"];
        let cmd_path = dir.join(fname.strip_suffix(".pid").unwrap_or(fname).to_string() + ".sh");
        let cmd_file = match case["cmd"].as_str() {
            Some(text) => {
                fs::write(&cmd_path, subst(text, &vars)).unwrap();
                Some(cmd_path)
            }
            None if call["cmd_file_missing"].as_bool() == Some(true) => Some(cmd_path),
            None => None,
        };
        let call_pid = match &call["pid"] {
            Value::Number(n) => Some(n.as_i64().unwrap()),
            _ => pid.map(i64::from),
        };
        let start_time = match &call["start_time"] {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(format!("{:.9}", create.unwrap_or(0.0) + n.as_f64().unwrap())),
            _ => create.map(|c| format!("{c:.9}")),
        };
        let mut expect = case["expect"].clone();
        if let Some(o) = expect.as_object_mut() {
            for (k, v) in o.iter_mut() {
                if k == "pid" && v.as_str() == Some("{pid}") {
                    *v = json!(pid);
                } else if let Some(t) = v.as_str() {
                    *v = json!(subst(t, &vars));
                }
            }
        }
        Ok(json!({
            "name": case["name"],
            "skip": null,
            "call": call["fn"],
            "dir": dir_s,
            "pid_file": p.pid_file,
            "cmd_file": if call["no_cmd"].as_bool() == Some(true) { None } else { cmd_file },
            "pid": call_pid,
            "token": if call["no_token"].as_bool() == Some(true) { None } else { token_s },
            "tolerance": call["tolerance"].as_f64().unwrap_or(5.0),
            "policy": call["policy"].as_str().unwrap_or("strict"),
            "schedule": call["schedule"].as_str().unwrap_or("TERM/5/KILL/5"),
            "start_time": start_time,
            "umask": call["umask"],
            "expect": expect,
        }))
    }

    /// Record a process, kill and reap it, and force its pid onto a bystander group leader with
    /// two children (ns_last_pid). Returns the old pid and the old process's token.
    fn reuse(&self, p: &mut Prepared, bystander: Option<Vec<String>>) -> Result<(i32, Token), String> {
        let bystander = bystander.unwrap_or_else(|| vec!["sh".into(), "-c".into(), "sleep 1000 & sleep 1000 & wait".into()]);
        for _ in 0..20 {
            let mut old = spawn(&["sleep".into(), "1000".into()], 0).map_err(|e| e.to_string())?;
            let id = old.id() as i32;
            let tok = token_of(id).ok_or("cannot read a token")?;
            let _ = old.kill();
            let _ = old.wait();
            fs::write("/proc/sys/kernel/ns_last_pid", (id - 1).to_string()).map_err(|e| format!("ns_last_pid: {e}"))?;
            let c = spawn(&bystander, 0).map_err(|e| e.to_string())?;
            let got = c.id() as i32;
            p.children.push(c);
            wait_exec(got);
            if got == id {
                if bystander[0] == "sh" {
                    wait_until(|| group_size(id) >= 3);
                }
                return Ok((id, tok));
            }
        }
        Err("the bystander never got the recorded pid".into())
    }

    fn finish(&mut self, name: &str) -> Value {
        let Some(mut p) = self.prepared.take() else { return json!({"post": {}}) };
        let case = self.cases.get(name).cloned().unwrap_or(Value::Null);
        let mut post = Map::new();
        if let Some(expect) = case["expect"].as_object() {
            for k in expect.keys().filter(|k| POST_KEYS.contains(&k.as_str())) {
                let v = match k.as_str() {
                    "file_exists" => json!(fs::symlink_metadata(&p.pid_file).is_ok()),
                    "target_alive" => json!(p.target.is_some_and(alive)),
                    "group_alive" => json!(p.target.is_some_and(group_alive)),
                    "leader_alive" => json!(p.leader.is_some_and(alive)),
                    "mode" => json!(fs::symlink_metadata(&p.pid_file).ok().map(|m| format!("{:04o}", m.mode() & 0o7777))),
                    "content" => json!(fs::read(&p.pid_file).ok().map(|b| String::from_utf8_lossy(&b).into_owned())),
                    "link_target_unchanged" => {
                        json!(p.victim.as_ref().is_some_and(|(path, bytes)| fs::read(path).ok().as_ref() == Some(bytes)))
                    }
                    _ => Value::Null,
                };
                post.insert(k.clone(), v);
            }
        }
        p.teardown();
        json!({"post": post})
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(mut p) = self.prepared.take() {
            p.teardown();
        }
        let _ = fs::remove_dir_all(&self.base);
    }
}

fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file()).and_then(|p| fs::canonicalize(p).ok())
}

// ---------------------------------------------------------------------------------------------
// comparison (the same rule in every runner; see tests/vectors/README.md)

/// The mismatches between `expect` and `actual`: each expected key must be equal, or one of
/// the values of an expected array; `elapsed_below` bounds `actual.elapsed`.
fn compare(expect: &Value, actual: &Map<String, Value>) -> Vec<String> {
    let mut bad = Vec::new();
    for (k, want) in expect.as_object().into_iter().flatten() {
        if k == "elapsed_below" {
            let e = actual.get("elapsed").and_then(Value::as_f64);
            if !e.is_some_and(|e| e < want.as_f64().unwrap()) {
                bad.push(format!("elapsed: want < {want}, got {e:?}"));
            }
            continue;
        }
        let got = actual.get(k).unwrap_or(&Value::Null);
        let ok = match want {
            Value::Array(any) => any.iter().any(|w| num_eq(w, got)),
            w => num_eq(w, got),
        };
        if !ok {
            bad.push(format!("{k}: want {want}, got {got}"));
        }
    }
    bad
}

fn num_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

// ---------------------------------------------------------------------------------------------

fn serve(vectors: &Path, caller: i32) {
    let mut fx = Fixture::load(vectors, caller);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let (op, arg) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        let reply = match op {
            "list" => json!({"cases": fx.cases.keys().collect::<Vec<_>>()}),
            "setup" => fx.setup(arg),
            "finish" => fx.finish(arg),
            _ => json!({"error": format!("unknown request {op:?}")}),
        };
        writeln!(out, "{reply}").unwrap();
        out.flush().unwrap();
    }
}

struct Driven {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn drive(vectors: &Path, lang: &str, cmd: &[String]) -> i32 {
    let mut child = Command::new(&cmd[0]).args(&cmd[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("start the runner");
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut d = Driven { child, stdin, stdout };
    let mut fx = Fixture::load(vectors, d.child.id() as i32);
    let names: Vec<String> = fx.cases.keys().cloned().collect();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let field = |v: &Value| match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for name in &names {
        let s = fx.setup(name);
        if let Some(reason) = s["skip"].as_str() {
            fx.finish(name);
            skipped += 1;
            println!("skip {name}: {reason}");
            continue;
        }
        let line = ["call", "pid_file", "cmd_file", "tolerance", "pid", "token", "policy", "schedule", "start_time", "umask", "dir"]
            .iter()
            .map(|k| field(&s[*k]))
            .collect::<Vec<_>>()
            .join("\t");
        writeln!(d.stdin, "{line}").unwrap();
        d.stdin.flush().unwrap();
        let mut answer = String::new();
        d.stdout.read_line(&mut answer).unwrap();
        let mut actual: Map<String, Value> = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{name}: the runner said {answer:?}: {e}"));
        if let Some(reason) = actual.get("skip").and_then(Value::as_str) {
            fx.finish(name);
            skipped += 1;
            println!("skip {name}: {reason}");
            continue;
        }
        if let Some(code) = actual.remove("error_code").and_then(|c| c.as_i64()) {
            let slug = pidguard::ErrorKind::from_code(-code as i32).map(|k| k.slug().to_string()).unwrap_or(format!("status {code}"));
            actual.insert("error".into(), json!(slug));
        }
        let post = fx.finish(name);
        if let Some(p) = post["post"].as_object() {
            actual.extend(p.clone());
        }
        let bad = compare(&s["expect"], &actual);
        if bad.is_empty() {
            passed += 1;
        } else {
            failed += 1;
            println!("FAIL {name}: {}  (answer {})", bad.join("; "), Value::Object(actual));
        }
    }
    drop(d.stdin);
    let _ = d.child.wait();
    println!("vectors ({lang}): {passed} passed, {failed} failed, {skipped} skipped");
    i32::from(failed > 0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let vectors = PathBuf::from(opt("--vectors").unwrap_or_else(|| "tests/vectors".into()));
    match args.first().map(String::as_str) {
        Some("serve") => {
            // SAFETY: getppid has no preconditions.
            let caller = opt("--caller").and_then(|c| c.parse().ok()).unwrap_or_else(|| unsafe { libc::getppid() });
            serve(&vectors, caller);
        }
        Some("drive") => {
            let i = args.iter().position(|a| a == "--").expect("drive --vectors DIR -- CMD");
            let lang = opt("--lang").unwrap_or_else(|| "c".into());
            std::process::exit(drive(&vectors, &lang, &args[i + 1..]));
        }
        _ => {
            eprintln!("usage: vector_fixture serve --vectors DIR [--caller PID] | drive --vectors DIR [--lang c] -- CMD [ARG…]");
            std::process::exit(2);
        }
    }
}
