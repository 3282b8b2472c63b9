//! Guard pidfiles on real files and real processes: racing creators and acquirers, stale and
//! reused holders, refused reads, modes, and the owner rule.
//!
//! Racing processes are this test binary re-executed as a worker (see `a_guard_held_by_another_process_is_held_here_until_that_process_releases_it`),
//! driven line by line over a pipe and killed by pid when dropped.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::*;
use pidguard::guard::{self, AcquireOptions, Entry};
use pidguard::{ErrorKind, Reason, StartToken, Verdict};

const WORKER_ENV: &str = "PIDGUARD_GUARD_TEST_WORKER";
const UMASK_ENV: &str = "PIDGUARD_GUARD_TEST_UMASK_CHILD";
const TAG: &str = "GUARDRACE ";
/// The test that, re-executed with `WORKER_ENV` or `UMASK_ENV` set, is the worker or the umask child.
const WORKER_TEST: &str = "a_guard_held_by_another_process_is_held_here_until_that_process_releases_it";

// ---------------------------------------------------------------------------------------------
// Helpers

/// A directory on tmpfs when there is one (the races are about link(2), not the disk; fsync on
/// ext4 would make 40,000 creates slow), else the usual temporary directory.
fn fast_tempdir(tag: &str) -> TempDir {
    let base = Path::new("/dev/shm");
    if base.is_dir() {
        let p = base.join(format!("pidguard-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        if std::fs::create_dir_all(&p).is_ok() {
            return TempDir(p);
        }
    }
    TempDir::new(tag)
}

fn my_entry(name: &str) -> Entry {
    Entry::current().unwrap().with_field("racer", name)
}

/// A record naming a process that has exited and been reaped (`Gone`, or `Mismatch` if the pid
/// was reused meanwhile: stale either way).
fn dead_entry() -> Entry {
    let p = spawn_group("exec sleep infinity");
    let tok = pidguard::start_token(p.pid()).unwrap();
    let e = Entry::new(p.pid(), tok.to_string()).with_field("who", "dead");
    drop(p);
    e
}

/// A record naming `pid` (alive) with a token that differs from the live one in `edit`.
fn edited_entry(pid: i32, edit: impl FnOnce(&mut StartToken)) -> Entry {
    let mut tok = pidguard::start_token(pid).unwrap();
    edit(&mut tok);
    Entry::new(pid, tok.to_string())
}

fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

fn write_mode(path: &Path, bytes: &[u8], mode: u32) {
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn slug(r: &pidguard::Result<impl Sized>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.kind().slug().into(),
    }
}

// ---------------------------------------------------------------------------------------------
// The worker: this test binary re-executed, reading commands from stdin.

/// A guard that another process holds is `Held` here, naming that process's record, until that
/// process releases it; then it is ours to acquire. The other process is this test binary
/// re-executed as a racing worker, which is also what the races below run: with
/// `PIDGUARD_GUARD_TEST_WORKER` set, this test is the worker loop (commands on stdin, one result
/// line each on stdout), and with `PIDGUARD_GUARD_TEST_UMASK_CHILD` set, the umask child.
#[test]
fn a_guard_held_by_another_process_is_held_here_until_that_process_releases_it() {
    if std::env::var_os(UMASK_ENV).is_some() {
        return umask_child();
    }
    if let Some(name) = std::env::var_os(WORKER_ENV) {
        return worker_loop(&name.to_string_lossy());
    }
    let d = fast_tempdir("held-elsewhere");
    let path = d.path().join("run/guard.json");
    let mut pool = Pool::new(0, 1);
    assert_eq!(pool.all(&format!("acquire {}", path.display())), ["ok"]);
    match guard::acquire(&path, &my_entry("here"), &AcquireOptions::default()) {
        Err(e) if e.kind() == ErrorKind::Held => {
            let h = e.holder().unwrap();
            assert_eq!(h.entry.as_ref().unwrap().field("racer"), Some("p0"), "{h:?}");
        }
        other => panic!("a guard held by a live worker process: {:?}", other.map(|g| g.is_held())),
    }
    assert_eq!(guard::read(&path).unwrap().field("racer"), Some("p0"), "the worker's record is untouched");
    assert_eq!(pool.all("release"), ["released"]);
    let g = guard::acquire(&path, &my_entry("here"), &AcquireOptions::default()).unwrap();
    assert!(g.is_held());
    assert_eq!(guard::read(&path).unwrap().field("racer"), Some("here"));
}

/// The racing worker: reads commands from stdin, answers each with one tagged line on stdout.
fn worker_loop(name: &str) {
    let me = my_entry(name);
    let mut held: Option<guard::Guard> = None;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        let reply = run_command(&line, &me, &mut held);
        writeln!(out, "{TAG}{reply}").unwrap();
        out.flush().unwrap();
    }
}

fn run_command(line: &str, me: &Entry, held: &mut Option<guard::Guard>) -> String {
    let (cmd, arg) = line.split_once(' ').unwrap_or((line, ""));
    match cmd {
        "create" => slug(&guard::create(Path::new(arg), me)),
        "acquire" => match guard::acquire(Path::new(arg), me, &AcquireOptions::default()) {
            Ok(g) => {
                // While we hold it, the file must hold exactly our record.
                let mine = g.is_held();
                *held = Some(g);
                if mine { "ok".into() } else { "ok-but-not-held".into() }
            }
            Err(e) if e.kind() == ErrorKind::Held => {
                let h = e.holder().unwrap();
                format!("held {}", h.entry.as_ref().unwrap().field("racer").unwrap_or("?"))
            }
            Err(e) => e.kind().slug().into(),
        },
        "release" => match held.take().map(|g| g.release()) {
            Some(Ok(true)) => "released".into(),
            Some(Ok(false)) => "not-held".into(),
            Some(Err(e)) => e.kind().slug().into(),
            None => "none".into(),
        },
        other => format!("unknown command {other}"),
    }
}

/// A racer: a thread of this process or a worker process, driven by one command at a time.
enum Racer {
    Thread(mpsc::Sender<String>),
    Process { child: Child, stdin: ChildStdin, stdout: BufReader<ChildStdout> },
}

impl Drop for Racer {
    fn drop(&mut self) {
        if let Racer::Process { child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

struct Pool {
    racers: Vec<Racer>,
    results: mpsc::Receiver<(usize, String)>,
}

impl Pool {
    fn new(threads: usize, processes: usize) -> Pool {
        let (res_tx, results) = mpsc::channel();
        let mut racers = Vec::new();
        for i in 0..threads {
            let (tx, rx) = mpsc::channel::<String>();
            let res_tx = res_tx.clone();
            std::thread::spawn(move || {
                let me = my_entry(&format!("t{i}"));
                let mut held = None;
                for cmd in rx {
                    let r = run_command(&cmd, &me, &mut held);
                    if res_tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
            racers.push(Racer::Thread(tx));
        }
        for i in 0..processes {
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", WORKER_TEST, "--nocapture", "--test-threads=1", "-q"])
                .env(WORKER_ENV, format!("p{i}"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn worker");
            let stdin = child.stdin.take().unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            racers.push(Racer::Process { child, stdin, stdout });
        }
        Pool { racers, results }
    }

    /// Send `cmd` to every racer, processes first (they take longer to wake), and collect one
    /// result from each, in racer order.
    fn all(&mut self, cmd: &str) -> Vec<String> {
        for r in self.racers.iter_mut().rev() {
            match r {
                Racer::Thread(tx) => tx.send(cmd.to_string()).unwrap(),
                Racer::Process { stdin, .. } => {
                    writeln!(stdin, "{cmd}").unwrap();
                    stdin.flush().unwrap();
                }
            }
        }
        let n = self.racers.len();
        let mut out = vec![String::new(); n];
        let threads = self.racers.iter().filter(|r| matches!(r, Racer::Thread(_))).count();
        for _ in 0..threads {
            let (i, r) = self.results.recv_timeout(Duration::from_secs(60)).expect("thread racer answers");
            out[i] = r;
        }
        for (i, r) in self.racers.iter_mut().enumerate() {
            if let Racer::Process { stdout, .. } = r {
                out[i] = read_tagged(stdout);
            }
        }
        out
    }
}

fn read_tagged(stdout: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "worker exited");
        if let Some(rest) = line.trim_end().strip_prefix(TAG) {
            return rest.to_string();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Exactly one creator wins

#[test]
fn racing_creates_of_32_threads_and_8_processes_have_exactly_one_winner_in_each_of_1000_rounds() {
    let d = fast_tempdir("create-race");
    let mut pool = Pool::new(32, 8);
    let t0 = Instant::now();
    for round in 0..1000 {
        let path = d.path().join(format!("r{round}/guard.json"));
        let res = pool.all(&format!("create {}", path.display()));
        let wins: Vec<usize> = (0..res.len()).filter(|&i| res[i] == "ok").collect();
        let exists = res.iter().filter(|r| *r == "already-exists").count();
        assert_eq!(wins.len(), 1, "round {round}: {res:?}");
        assert_eq!(exists, res.len() - 1, "round {round}: {res:?}");
        // The file is the winner's record, fully written.
        let e = guard::read(&path).unwrap();
        let winner = if wins[0] < 32 { format!("t{}", wins[0]) } else { format!("p{}", wins[0] - 32) };
        assert_eq!(e.field("racer"), Some(winner.as_str()), "round {round}");
        // No temporary files are left behind.
        assert_eq!(listing(path.parent().unwrap()).len(), 1, "round {round}");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
    eprintln!("d1: 1000 rounds of 40 racers in {:.1} s", t0.elapsed().as_secs_f64());
}

// ---------------------------------------------------------------------------------------------
// Racing acquire over a stale holder, with a reader that never sees a partial file

#[test]
fn racing_acquires_over_stale_holders_have_one_owner_and_readers_never_see_a_partial_file() {
    let d = fast_tempdir("acquire-race");
    let path = d.path().join("run/guard.json");
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (stop, reads, path) = (stop.clone(), reads.clone(), path.clone());
        std::thread::spawn(move || {
            let mut bad = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match guard::read(&path) {
                    Ok(e) => assert!(e.pid > 0 && !e.start_token.is_empty()),
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => bad.push(e.to_string()),
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
            bad
        })
    };
    let bystander = spawn_group("exec sleep infinity");
    let mut pool = Pool::new(4, 16);
    let rounds = 300;
    for round in 0..rounds {
        // A stale holder of three kinds: exited, pid reused (other start ticks), earlier boot.
        let stale = match round % 3 {
            0 => dead_entry(),
            1 => edited_entry(bystander.pid(), |t| { t.start_ticks += 1; t.pidfs_ino = None }),
            _ => edited_entry(bystander.pid(), |t| t.boot_id = "00000000-0000-0000-0000-000000000000".into()),
        };
        guard::create(&path, &stale).unwrap();
        let res = pool.all(&format!("acquire {}", path.display()));
        let wins: Vec<usize> = (0..res.len()).filter(|&i| res[i] == "ok").collect();
        assert_eq!(wins.len(), 1, "round {round}: never two owners, never none: {res:?}");
        let winner = guard::read(&path).unwrap();
        let name = winner.field("racer").unwrap().to_string();
        for (i, r) in res.iter().enumerate() {
            if i != wins[0] {
                assert_eq!(r, &format!("held {name}"), "round {round}: {res:?}");
            }
        }
        let rel = pool.all("release");
        assert_eq!(rel.iter().filter(|r| *r == "released").count(), 1, "round {round}: {rel:?}");
        assert_eq!(rel.iter().filter(|r| *r == "none").count(), rel.len() - 1, "round {round}: {rel:?}");
        assert!(!path.exists(), "round {round}: the winner's release removes its record");
    }
    stop.store(true, Ordering::Relaxed);
    let bad = reader.join().unwrap();
    assert!(bad.is_empty(), "reader saw refusals: {bad:?}");
    eprintln!("d2: {rounds} rounds of 20 racers, {} concurrent reads", reads.load(Ordering::Relaxed));
    assert!(reads.load(Ordering::Relaxed) > 0);
}

// ---------------------------------------------------------------------------------------------
// Removal by content, replace

#[test]
fn remove_after_someone_else_replaced_returns_false_and_leaves_the_new_record() {
    let d = TempDir::new("rm-after-replace");
    let path = d.path().join("g.json");
    let a = Entry::new(100, "linux1:m:b:1:2:-").with_field("who", "a");
    let b = Entry::new(200, "linux1:m:b:1:3:-").with_field("who", "b");
    guard::create(&path, &a).unwrap();
    guard::replace(&path, &a, &b).unwrap();
    let before = std::fs::read(&path).unwrap();
    assert_eq!(before, guard::encode(&b));
    assert!(!guard::remove(&path, &a).unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), before, "byte-identical");
    assert_eq!(listing(d.path()), BTreeSet::from(["g.json".to_string()]));
    assert!(guard::remove(&path, &b).unwrap());
    assert!(!path.exists());
    assert!(!guard::remove(&path, &b).unwrap(), "missing file: false, no error");
}

/// Deterministically: removers of one record take turns (flock on the record file itself),
/// so a remover can never be between its check and its rename while another retires the record
/// and creates a new one — the interleaving in which the second remover would rename the new
/// record aside. Here the test holds the record's lock, as a remover mid-way would, and the
/// remove must wait for it.
#[test]
fn removers_of_one_record_take_turns_on_its_lock() {
    let d = TempDir::new("reclock");
    let path = d.path().join("g.json");
    let e = Entry::new(100, "tok");
    guard::create(&path, &e).unwrap();
    // Our own open file description of the record: flock(2) conflicts between descriptions,
    // even within one process.
    let rec = std::fs::File::open(&path).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: plain system call on a descriptor we own.
    assert_eq!(unsafe { libc::flock(rec.as_raw_fd(), libc::LOCK_EX) }, 0);
    let (tx, rx) = mpsc::channel();
    let p = path.clone();
    let e2 = e.clone();
    std::thread::spawn(move || {
        let _ = tx.send(guard::remove(&p, &e2));
    });
    // It cannot finish while the lock is held (it would in microseconds without the lock).
    assert!(rx.recv_timeout(Duration::from_millis(500)).is_err(), "remove did not wait for the record's lock");
    assert!(path.exists());
    drop(rec); // releases the lock
    assert!(rx.recv_timeout(Duration::from_secs(20)).expect("remove finishes once the lock is free").unwrap());
    assert!(!path.exists());
}

/// A lock that another user can take must not keep root from retiring root's stale record: a
/// user (uid 65534) who can list the directory holds `flock` on it, as long as they like, and
/// cannot open the record (mode 0600) to lock that. Root's `acquire` over the stale record
/// replaces it at once and `remove` of it works (they waited 10 s and failed with `TimedOut`
/// while the guard format locked the directory).
#[test]
fn another_users_lock_on_the_directory_does_not_block_roots_records() {
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/setpriv").exists() || !Path::new("/usr/bin/flock").exists() {
        eprintln!("skip: needs root, setpriv and flock");
        return;
    }
    let d = TempDir::new("userlock");
    let dir = d.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("daemon.json");
    // A stale record of root's: a process of ours that has exited (its token is exact).
    let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let token = pidguard::start_token(child.id() as i32).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    guard::create(&path, &Entry::new(child.id() as i32, token.to_string())).unwrap();
    // The user takes every lock it can: the directory's, and (it cannot) the record's.
    let holder = common::Proc(
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "flock", "-x"])
            .arg(&dir)
            .args(["sh", "-c"])
            .arg(format!("flock -n -x '{}' true 2>/dev/null; exec sleep infinity", path.display()))
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap(),
    );
    let dir_fd = std::fs::File::open(&dir).unwrap();
    use std::os::fd::AsRawFd;
    let held = common::wait_for(Duration::from_secs(10), || {
        // SAFETY: as above; a probe that took the lock gives it back at once.
        unsafe {
            if libc::flock(dir_fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 {
                libc::flock(dir_fd.as_raw_fd(), libc::LOCK_UN);
                false
            } else {
                true
            }
        }
    });
    assert!(held, "the user's flock on the directory never showed");
    let t0 = std::time::Instant::now();
    let g = guard::acquire(&path, &Entry::current().unwrap(), &AcquireOptions::default());
    let took = t0.elapsed();
    let g = g.unwrap_or_else(|e| panic!("acquire over a stale record while another user locks the directory: {e} after {took:?}"));
    assert!(g.replaced().is_some_and(|v| v.is_stale()), "{:?}", g.replaced());
    assert!(took < Duration::from_secs(5), "acquire waited {took:?} for another user's lock");
    // Root's own release of its record is not blocked either.
    let t0 = std::time::Instant::now();
    assert!(g.release().unwrap(), "release removes our record");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(!path.exists());
    drop(holder);
}

#[test]
fn replace_with_a_stale_old_is_superseded_and_writes_nothing() {
    let d = TempDir::new("superseded");
    let path = d.path().join("g.json");
    let a = Entry::new(100, "tok-a");
    let b = Entry::new(200, "tok-b");
    let c = Entry::new(300, "tok-c");
    guard::create(&path, &b).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    let e = guard::replace(&path, &a, &c).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Superseded);
    assert_eq!(e.path(), Some(path.as_path()));
    assert_eq!(std::fs::read(&path).unwrap(), guard::encode(&b));
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), meta.ino(), "the same file, untouched");
    assert_eq!(listing(d.path()).len(), 1);
    // A file that vanished in between is not an error: `new` is created.
    std::fs::remove_file(&path).unwrap();
    guard::replace(&path, &a, &c).unwrap();
    assert_eq!(guard::read(&path).unwrap(), c);
}

#[test]
fn create_never_replaces_and_never_follows_a_planted_symlink() {
    let d = TempDir::new("create-symlink");
    let target = d.path().join("victim");
    std::fs::write(&target, b"precious").unwrap();
    let link = d.path().join("g.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = guard::create(&link, &Entry::new(1, "t")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    // A dangling symlink: still refused, and nothing appears where it points.
    let nowhere = d.path().join("nowhere");
    let link2 = d.path().join("g2.json");
    std::os::unix::fs::symlink(&nowhere, &link2).unwrap();
    assert_eq!(guard::create(&link2, &Entry::new(1, "t")).unwrap_err().kind(), ErrorKind::AlreadyExists);
    assert!(!nowhere.exists());
    // An invalid entry is refused before anything is touched.
    let p = d.path().join("sub/g.json");
    assert_eq!(guard::create(&p, &Entry::new(0, "t")).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(!p.parent().unwrap().exists());
}

// ---------------------------------------------------------------------------------------------
// Every read refusal, each with its own kind, naming the path, with no side effect

#[test]
fn read_refusals_each_have_their_own_kind_and_change_nothing() {
    let d = TempDir::new("refusals");
    let dir = d.path();
    let good = guard::encode(&Entry::new(std::process::id() as i32, "tok"));

    let real = dir.join("real.json");
    write_mode(&real, &good, 0o600);
    let symlink = dir.join("symlink.json");
    std::os::unix::fs::symlink(&real, &symlink).unwrap();
    let directory = dir.join("directory.json");
    std::fs::create_dir(&directory).unwrap();
    let hardlink_a = dir.join("hard-a.json");
    write_mode(&hardlink_a, &good, 0o600);
    std::fs::hard_link(&hardlink_a, dir.join("hard-b.json")).unwrap();
    let group_readable = dir.join("group-readable.json");
    write_mode(&group_readable, &good, 0o640);
    let world_readable = dir.join("world-readable.json");
    write_mode(&world_readable, &good, 0o604);
    let world_writable = dir.join("world-writable.json");
    write_mode(&world_writable, &good, 0o602);
    let big = dir.join("big.json");
    let mut big_content = good.clone();
    big_content.pop();
    big_content.extend(vec![b' '; 4097 - big_content.len()]);
    write_mode(&big, &big_content, 0o600);
    let socket = dir.join("socket.json");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();

    let mut cases: Vec<(PathBuf, ErrorKind)> = vec![
        (symlink, ErrorKind::Symlink),
        (directory, ErrorKind::IsDirectory),
        (socket, ErrorKind::NotRegularFile),
        (hardlink_a, ErrorKind::HardLinked),
        (group_readable, ErrorKind::InsecureMode),
        (world_readable, ErrorKind::InsecureMode),
        (world_writable, ErrorKind::InsecureMode),
        (big, ErrorKind::TooLarge),
    ];
    let content_cases: &[(&str, &[u8], ErrorKind)] = &[
        ("not-json", b"503\n7\n", ErrorKind::InvalidJson),
        ("bare-one", b"1", ErrorKind::InvalidJson),
        ("empty", b"", ErrorKind::InvalidJson),
        ("newline", b"\n", ErrorKind::InvalidJson),
        ("truncated", b"{\"pid\":5,\"start_tok", ErrorKind::InvalidJson),
        ("no-pid", b"{\"start_token\":\"t\"}\n", ErrorKind::BadPid),
        ("pid-zero", b"{\"pid\":0,\"start_token\":\"t\"}\n", ErrorKind::BadPid),
        ("pid-negative", b"{\"pid\":-1,\"start_token\":\"t\"}\n", ErrorKind::BadPid),
        ("pid-above-max", b"{\"pid\":2147483647,\"start_token\":\"t\"}\n", ErrorKind::BadPid),
        ("empty-token", b"{\"pid\":5,\"start_token\":\"\"}\n", ErrorKind::BadToken),
        ("no-token", b"{\"pid\":5}\n", ErrorKind::BadToken),
    ];
    for (name, content, kind) in content_cases {
        let p = dir.join(format!("{name}.json"));
        write_mode(&p, content, 0o600);
        cases.push((p, *kind));
    }
    // A token that is not a pidguard token: `read` accepts it, `check` refuses it.
    let foreign_token = dir.join("foreign-token.json");
    write_mode(&foreign_token, b"{\"pid\":5,\"start_token\":\"go:12345\"}\n", 0o600);

    let before: Vec<(String, u64, u32, Vec<u8>)> = snapshot_dir(dir);
    let mut seen = std::collections::HashSet::new();
    for (p, kind) in &cases {
        for (call, r) in [
            ("read", guard::read(p).map(drop)),
            ("check", guard::check(p).map(drop)),
            ("acquire", guard::acquire(p, &my_entry("x"), &AcquireOptions { takeover: true }).map(drop)),
        ] {
            let e = r.expect_err(&format!("{call} {} must be refused", p.display()));
            assert_eq!(e.kind(), *kind, "{call} {}: {e}", p.display());
            assert_eq!(e.path(), Some(p.as_path()), "{call}: the error names the path");
            assert!(e.to_string().contains(&p.display().to_string()), "{e}");
            assert!(matches!(e.kind().family(), ErrorKind::Untrusted | ErrorKind::Malformed));
        }
        seen.insert(*kind);
    }
    assert_eq!(guard::read(&foreign_token).unwrap().start_token, "go:12345");
    assert_eq!(guard::check(&foreign_token).unwrap_err().kind(), ErrorKind::BadToken);
    assert_eq!(seen.len(), 9, "nine distinct refusal kinds: {seen:?}");
    assert_eq!(snapshot_dir(dir), before, "no file created, changed or removed by a refused call");
    // The readable original is fine.
    assert!(guard::read(&real).is_ok());
}

fn snapshot_dir(dir: &Path) -> Vec<(String, u64, u32, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            let content = if m.is_file() { std::fs::read(e.path()).unwrap() } else { Vec::new() };
            (e.file_name().to_string_lossy().into_owned(), m.ino(), m.mode(), content)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_fifo_is_refused_at_once_and_never_blocks() {
    let d = TempDir::new("fifo");
    let fifo = d.path().join("g.json");
    let status = Command::new("mkfifo").arg("-m").arg("600").arg(&fifo).status().unwrap();
    assert!(status.success());
    let (tx, rx) = mpsc::channel();
    let p = fifo.clone();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = guard::read(&p).map(drop);
        let c = guard::check(&p).map(drop);
        let a = guard::acquire(&p, &Entry::new(7, "t"), &AcquireOptions::default()).map(drop);
        let _ = tx.send((r, c, a, t0.elapsed()));
    });
    // Generous: a blocking open would never return at all.
    let (r, c, a, took) = rx.recv_timeout(Duration::from_secs(20)).expect("read of a FIFO blocked");
    for r in [r, c, a] {
        assert_eq!(r.unwrap_err().kind(), ErrorKind::NotRegularFile);
    }
    assert!(took < Duration::from_secs(10), "{took:?}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO is left alone");
}

// ---------------------------------------------------------------------------------------------
// Modes under umask 0 (in a child process: the umask is process-wide)

fn umask_child() {
    let path = PathBuf::from(std::env::var_os(UMASK_ENV).unwrap());
    pidguard::sys::umask(0);
    guard::create(&path.join("a/b/created.json"), &Entry::new(5, "t")).unwrap();
    let g = guard::acquire(&path.join("c/acquired.json"), &my_entry("umask"), &AcquireOptions::default()).unwrap();
    g.keep();
}

#[test]
fn files_are_0600_and_parents_0700_even_under_umask_0() {
    let d = TempDir::new("umask");
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", WORKER_TEST, "--nocapture", "--test-threads=1", "-q"])
        .env(UMASK_ENV, d.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mode = |p: &str| std::fs::metadata(d.path().join(p)).unwrap().mode() & 0o7777;
    assert_eq!(mode("a"), 0o700);
    assert_eq!(mode("a/b"), 0o700);
    assert_eq!(mode("a/b/created.json"), 0o600);
    assert_eq!(mode("c"), 0o700);
    assert_eq!(mode("c/acquired.json"), 0o600);
    // And they read back (the strict reader accepts exactly what create writes).
    assert_eq!(guard::read(&d.path().join("a/b/created.json")).unwrap(), Entry::new(5, "t"));
}

// ---------------------------------------------------------------------------------------------
// Identity: a record of an earlier boot, a reused pid or pid 1, live holders, foreign records

#[test]
fn a_record_from_an_earlier_boot_is_mismatch_whatever_runs_at_that_pid() {
    let d = TempDir::new("boot");
    let path = d.path().join("g.json");
    // Our own pid, pid 1, a live child: all alive now, all judged by the boot id alone.
    let child = spawn_group("exec sleep infinity");
    for pid in [std::process::id() as i32, 1, child.pid()] {
        let e = edited_entry(pid, |t| t.boot_id = "11111111-2222-3333-4444-555555555555".into());
        guard::create(&path, &e).unwrap();
        let v = guard::check(&path).unwrap();
        let j = v.identity.unwrap();
        assert_eq!((j.verdict, j.reason), (Verdict::Mismatch, Reason::BootIdDiffers), "pid {pid}");
        assert!(v.is_stale());
        assert!(!v.authorizes(pidguard::Policy::Lenient));
        // acquire replaces it, and says whom it replaced.
        let g = guard::acquire(&path, &my_entry("new"), &AcquireOptions::default()).unwrap();
        assert_eq!(g.replaced().unwrap().entry.as_ref(), Some(&e));
        assert!(g.release().unwrap());
    }
    assert!(common::alive(child.pid()));
}

#[test]
fn a_reused_pid_or_pid_1_does_not_block_acquire() {
    let d = TempDir::new("reused-holder");
    let path = d.path().join("g.json");
    let bystander = spawn_group("exec sleep infinity");
    for stale in [
        edited_entry(bystander.pid(), |t| { t.start_ticks += 1; t.pidfs_ino = None }),
        edited_entry(1, |t| { t.start_ticks += 1; t.pidfs_ino = None }),
        dead_entry(),
    ] {
        guard::create(&path, &stale).unwrap();
        let v = guard::check(&path).unwrap();
        assert!(v.is_stale(), "{v:?}");
        let t0 = Instant::now();
        let g = guard::acquire(&path, &my_entry("me"), &AcquireOptions::default()).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert!(g.is_held());
        drop(g);
        assert!(!path.exists(), "drop releases our record");
    }
    // A pidfile containing just `1`: an error at once, never a wait and never a takeover.
    write_mode(&path, b"1", 0o600);
    let e = guard::acquire(&path, &my_entry("me"), &AcquireOptions { takeover: true }).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidJson);
    assert_eq!(std::fs::read(&path).unwrap(), b"1");
    assert!(common::alive(bystander.pid()));
}

#[test]
fn a_live_holder_is_held_with_its_verdict_and_taken_over_only_when_asked() {
    let d = TempDir::new("held");
    let path = d.path().join("g.json");
    let holder_proc = spawn_group("exec sleep infinity");
    let holder = Entry::new(holder_proc.pid(), pidguard::start_token(holder_proc.pid()).unwrap().to_string())
        .with_field("who", "holder");
    guard::create(&path, &holder).unwrap();
    let e = guard::acquire(&path, &my_entry("me"), &AcquireOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Held);
    assert_eq!(e.pid(), Some(holder_proc.pid()));
    let h = e.holder().unwrap();
    assert_eq!(h.entry.as_ref(), Some(&holder));
    assert_eq!(h.identity.unwrap().verdict, Verdict::Match);
    assert_eq!(std::fs::read(&path).unwrap(), guard::encode(&holder), "nothing changed");
    // Explicit takeover.
    let g = guard::acquire(&path, &my_entry("me"), &AcquireOptions { takeover: true }).unwrap();
    assert_eq!(g.replaced().unwrap().identity.unwrap().verdict, Verdict::Match);
    // The displaced holder's own cleanup removes nothing of ours.
    assert!(!guard::remove(&path, &holder).unwrap());
    assert!(g.is_held());
    // Someone takes over from us: our drop leaves their record alone.
    let other = Entry::new(holder_proc.pid(), holder.start_token.clone()).with_field("who", "other");
    guard::replace(&path, g.entry(), &other).unwrap();
    assert!(!g.is_held());
    drop(g);
    assert_eq!(guard::read(&path).unwrap(), other);
    assert!(common::alive(holder_proc.pid()), "acquire never signals anybody");
}

#[test]
fn foreign_namespace_is_held_and_foreign_machine_is_never_taken_over() {
    let d = TempDir::new("foreign");
    let path = d.path().join("g.json");
    let ns = edited_entry(std::process::id() as i32, |t| t.pidns_ino += 1);
    guard::create(&path, &ns).unwrap();
    let e = guard::acquire(&path, &my_entry("me"), &AcquireOptions::default()).unwrap_err();
    let j = e.holder().unwrap().identity.unwrap();
    assert_eq!((j.verdict, j.reason), (Verdict::Unverifiable, Reason::ForeignPidNamespace));
    let g = guard::acquire(&path, &my_entry("me"), &AcquireOptions { takeover: true }).unwrap();
    drop(g);
    // Another host: another machine id *and* another boot id (an equal boot id proves the same
    // kernel, whatever the machine id says: see the next test).
    let host = edited_entry(std::process::id() as i32, |t| {
        t.machine_id = "another-host".into();
        t.boot_id = "00000000-0000-4000-8000-000000000000".into();
    });
    guard::create(&path, &host).unwrap();
    let e = guard::acquire(&path, &my_entry("me"), &AcquireOptions { takeover: true }).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Held);
    assert_eq!(e.holder().unwrap().identity.unwrap().reason, Reason::ForeignMachine);
    assert_eq!(guard::read(&path).unwrap(), host);
}

#[test]
fn a_machine_id_written_after_the_record_does_not_make_it_foreign() {
    // rook/rook#182: /etc/machine-id empty at first boot, generated later (or replaced). The
    // boot id is the same, so is the kernel: the holder is judged, not called foreign.
    let d = TempDir::new("machine-id");
    let path = d.path().join("g.json");
    let rec = edited_entry(std::process::id() as i32, |t| t.machine_id = "written-before-machine-id".into());
    guard::create(&path, &rec).unwrap();
    let v = guard::check(&path).unwrap();
    let j = v.identity.unwrap();
    assert_eq!((j.verdict, j.reason), (Verdict::Match, Reason::TokenEqual), "{v:?}");
}

#[test]
fn as_root_a_guard_file_owned_by_another_user_aims_only_at_that_users_processes() {
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        eprintln!("skipped: needs root to chown a file to another user");
        return;
    }
    let d = TempDir::new("owner-rule");
    let path = d.path().join("g.json");
    // A root process: a user's record naming it authorises nothing, even with its exact token
    // (anyone can compute a token: this is the forged record of the confused-deputy attack).
    let live = spawn_group("exec sleep infinity");
    let matching = Entry::new(live.pid(), pidguard::start_token(live.pid()).unwrap().to_string());
    let unverifiable = edited_entry(live.pid(), |t| t.pidns_ino += 1);
    for (entry, by_root, by_user) in [(&matching, true, false), (&unverifiable, true, false)] {
        guard::create(&path, entry).unwrap();
        assert_eq!(guard::check(&path).unwrap().authorizes(pidguard::Policy::Lenient), by_root);
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let v = guard::check(&path).unwrap();
        assert_eq!(v.owner_uid, Some(65534));
        assert_eq!(v.authorizes(pidguard::Policy::Lenient), by_user, "{v:?}");
        if entry == &matching {
            let e = v.open(pidguard::Policy::Strict).unwrap_err();
            assert_eq!(e.refusal(), Some(pidguard::Refusal::UntrustedPidfile), "{e}");
            assert!(e.to_string().contains("owned by uid 65534, target uid 0"), "{e}");
        }
        std::fs::remove_file(&path).unwrap();
    }
    // The user's own process, named by the user's record: authorised, and pinned for it.
    if std::process::Command::new("setpriv").arg("--version").output().is_ok() {
        let users = spawn_group("exec setpriv --reuid=65534 --regid=65534 --clear-groups sleep infinity");
        assert!(common::wait_for(std::time::Duration::from_secs(5), || {
            pidguard::sys::procfs::read_uids(users.pid()).is_ok_and(|u| u.0 == 65534)
        }));
        let e = Entry::new(users.pid(), pidguard::start_token(users.pid()).unwrap().to_string());
        guard::create(&path, &e).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let v = guard::check(&path).unwrap();
        assert!(v.authorizes(pidguard::Policy::Strict), "{v:?}");
        let h = v.open(pidguard::Policy::Strict).unwrap();
        assert_eq!(h.uid_restriction(), Some(65534));
    }
}

#[test]
fn token_sha256_names_a_secret_without_storing_it() {
    let d = TempDir::new("sha");
    let path = d.path().join("g.json");
    let secret = "s3cret-messaging-token";
    let e = my_entry("x").with_field("token_sha256", guard::token_sha256(secret));
    guard::create(&path, &e).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(secret));
    let back = guard::read(&path).unwrap();
    assert_eq!(back.field("token_sha256"), Some(guard::token_sha256(secret).as_str()));
    assert_eq!(back.field("token_sha256").unwrap().len(), 64);
}

// ---------------------------------------------------------------------------------------------
// Property tests of the JSON parser

mod props {
    use super::*;
    use proptest::prelude::*;

    fn field_name() -> impl Strategy<Value = String> {
        "\\PC{1,12}".prop_filter("reserved", |s| s != "pid" && s != "start_token")
    }

    fn entry() -> impl Strategy<Value = Entry> {
        (1..=i32::MAX, "\\PC{1,40}", proptest::collection::vec((field_name(), any::<String>()), 0..6)).prop_map(
            |(pid, token, fields)| {
                let mut seen = BTreeSet::new();
                let fields = fields.into_iter().filter(|(n, _)| seen.insert(n.clone())).collect();
                Entry { pid, start_token: token, fields }
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// encode then decode gives the same record back, fields in the same order, and the
        /// encoding is one line ending in a newline.
        #[test]
        fn round_trip(e in entry()) {
            let bytes = guard::encode(&e);
            prop_assert_eq!(bytes.last(), Some(&b'\n'));
            prop_assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
            prop_assert_eq!(guard::decode(&bytes).unwrap(), e.clone());
            prop_assert_eq!(guard::encode(&guard::decode(&bytes).unwrap()), bytes);
        }

        /// Arbitrary bytes never panic, and whatever decodes satisfies the record's rules;
        /// every refusal is of the `Malformed` family.
        #[test]
        fn arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            match guard::decode(&b) {
                Ok(e) => prop_assert!(e.validate().is_ok() || guard::encode(&e).len() > guard::MAX_BYTES),
                Err(err) => prop_assert_eq!(err.kind().family(), ErrorKind::Malformed),
            }
        }

        /// Every strict prefix of an encoding (a half-written file) is refused.
        #[test]
        fn prefixes_are_refused(e in entry(), cut in 0usize..1000) {
            let bytes = guard::encode(&e);
            let body = bytes.len() - 1; // without the newline, the object is complete
            let cut = cut % body;
            prop_assert_eq!(guard::decode(&bytes[..cut]).unwrap_err().kind(), ErrorKind::InvalidJson);
        }

        /// Member order in the file does not change pid or token; fields keep their relative
        /// order; whitespace between tokens is accepted.
        #[test]
        fn members_in_any_order(e in entry(), at in 0usize..8, ws in "[ \t\n]{0,3}") {
            let mut members: Vec<String> = e.fields.iter()
                .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), serde_json::to_string(v).unwrap()))
                .collect();
            let at = at % (members.len() + 1);
            members.insert(at, format!("\"pid\"{ws}:{ws}{}", e.pid));
            members.insert(0, format!("\"start_token\":{}", serde_json::to_string(&e.start_token).unwrap()));
            let text = format!("{ws}{{{ws}{}{ws}}}{ws}", members.join(&format!(",{ws}")));
            prop_assert_eq!(guard::decode(text.as_bytes()).unwrap(), e);
        }

        /// A pid that is not a positive 32-bit integer is `BadPid`, whatever the rest.
        #[test]
        fn bad_pids(p in prop_oneof![i64::MIN..=0i64, (i32::MAX as i64 + 1)..=i64::MAX], tok in "\\PC{1,10}") {
            let text = format!("{{\"pid\":{p},\"start_token\":{}}}", serde_json::to_string(&tok).unwrap());
            prop_assert_eq!(guard::decode(text.as_bytes()).unwrap_err().kind(), ErrorKind::BadPid);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The guard example of docs/rust.md (core/tests/docs_examples.rs checks that the page shows it)

#[test]
fn the_guard_example_prints_the_record_and_the_holder() {
    // cargo test builds the examples beside the test binaries' directory.
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("examples/guard_acquire");
    if !bin.exists() {
        let st = Command::new(env!("CARGO")).args(["build", "-q", "-p", "pidguard-core", "--example", "guard_acquire"]).status();
        assert!(st.unwrap().success());
    }
    let out = Command::new(&bin).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let rec = guard::decode(lines.next().unwrap().as_bytes()).unwrap();
    assert_eq!(rec.field("session"), Some("s1"));
    assert_eq!(lines.next(), Some("held: Match"));
}

/// File systems without `O_TMPFILE` (injected here): a named temporary is linked, then
/// unlinked; the result is the same file, mode and single winner, and nothing is left behind.
#[test]
fn create_without_o_tmpfile_falls_back_to_a_named_temporary() {
    use pidguard::sys::fault;
    let d = TempDir::new("no-tmpfile");
    let path = d.path().join("sub/g.json");
    fault::inject(fault::Call::OpenTmpfile, libc::EOPNOTSUPP);
    let e = Entry::new(9, "tok").with_field("a", "b");
    guard::create(&path, &e).unwrap();
    assert_eq!(guard::create(&path, &e).unwrap_err().kind(), ErrorKind::AlreadyExists);
    let g = guard::acquire(&d.path().join("sub/h.json"), &my_entry("x"), &AcquireOptions::default()).unwrap();
    assert!(fault::count(fault::Call::OpenTmpfile) >= 3, "the fault was consulted");
    fault::clear();
    assert_eq!(guard::read(&path).unwrap(), e);
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o7777, 0o600);
    assert!(g.is_held());
    drop(g);
    assert_eq!(listing(&d.path().join("sub")), BTreeSet::from(["g.json".to_string()]), "no temporaries left");
}

#[test]
fn a_forked_childs_copy_of_a_guard_removes_nothing() {
    let dir = std::env::temp_dir().join(format!("pidguard-guard-fork-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("g.json");
    let me = pidguard::guard::Entry::current().unwrap();
    let held = pidguard::guard::acquire(&path, &me, &pidguard::guard::AcquireOptions::default()).unwrap();
    // SAFETY: the child only drops the guard (file system calls) and exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        drop(held);
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(held.is_held(), "the child's copy removed the parent's record");
    assert!(held.release().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stop_pid_file_stops_the_holder_of_a_guard_record_and_removes_it_by_content() {
    let d = TempDir::new("stop-guard");
    let path = d.path().join("g.json");
    let live = spawn_group("sleep infinity & wait");
    assert!(common::wait_for(std::time::Duration::from_secs(10), || common::group_members(live.pid()).len() == 2));
    guard::create(&path, &Entry::new(live.pid(), pidguard::start_token(live.pid()).unwrap().to_string())).unwrap();
    assert_eq!(pidguard::Format::of(&path), pidguard::Format::Guard);
    let opts = pidguard::StopOptions { schedule: "TERM/5/KILL/5".parse().unwrap(), ..Default::default() };
    let r = pidguard::stop_pid_file(&path, &opts).unwrap();
    assert_eq!(r.format, pidguard::Format::Guard);
    assert_eq!(r.outcome, pidguard::StopOutcome::Exited(pidguard::Signal::TERM), "{r:?}");
    assert!(r.pid_file_removed && !path.exists());
    assert!(common::group_members(live.pid()).is_empty());
    // A record whose holder is gone: stale, removed, nothing sent.
    let (dead, tok) = {
        let mut c = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = c.id() as i32;
        let tok = pidguard::start_token(pid).unwrap().to_string();
        c.kill().unwrap();
        c.wait().unwrap();
        (pid, tok)
    };
    guard::create(&path, &Entry::new(dead, tok)).unwrap();
    let r = pidguard::stop_pid_file(&path, &opts).unwrap();
    assert!(matches!(r.outcome, pidguard::StopOutcome::Stale(_)), "{r:?}");
    assert!(r.signals().is_empty() && !path.exists());
}
