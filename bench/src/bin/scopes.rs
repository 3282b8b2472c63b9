//! What a scope costs (issue 25), each figure against a peer measured in the same run:
//!
//! - `spawn <rounds> <per_round> <gap_ms> [pidguard-cli]`: the wall time of one `launch::spawn` of
//!   `sleep 1000` in each scope — `group` (no scope: the peer), `cgroup` (a leaf made, joined
//!   before exec, recorded), `supervisor` (a subreaper forked first) — and of a plain
//!   `std::process::Command::spawn` (no pidfile at all), in alternating rounds; with the CLI's
//!   path, also `pidguard run --scope …` (a whole process each); `gap_ms` apart (0: a burst).
//!   Teardown is not timed.
//! - `stop <n> <reps>`: stop a tree of `n` processes (a shell that forks `n - 1` sleeps, all in
//!   one process group and one scope) with `stop_pid_file`, `TERM/2/KILL/1` (bound 3 s), in the
//!   three modes, alternating; once with a tree that ignores SIGTERM (the whole schedule runs:
//!   the bound is what is measured against) and once with one that exits on SIGTERM; and a tree
//!   of `setsid` escapees, which only a scope reaches.
//! - `mechanism <n> <gap_ms>`: what a leaf's spawn cost is made of: a child that only exits, by `fork`,
//!   by `fork` + writing `0` to a leaf's `cgroup.procs` in the child (what `launch::spawn` does),
//!   and by `clone3(CLONE_INTO_CGROUP)`, alternating, `gap_ms` apart (the kernel's cgroup
//!   migration lock is cheap only right after another migration).
//! - `user <rounds> <per_round> <gap_ms>`: what starting the command as another user costs
//!   (issue 44): `launch::spawn` of `sleep 1000` as `nobody` (uid 65534: the user database read,
//!   `getgrouplist`, and in the child `setgroups`, `setresgid`, `setresuid` and their read-back)
//!   against the same spawn as the caller, in the cgroup and supervisor scopes, alternating.
//! - `memory <cli> <heap_mib>`: `Pss` and `Private_Dirty` (`/proc/<pid>/smaps_rollup`) of the
//!   supervisor (`pidguard-scope`) spawned by the CLI (which then exits), by this process, and by
//!   a spawner with a `<heap_mib>` MiB heap that rewrites it after the spawn (as a garbage
//!   collector does) — against the `sleep` command each supervises.
//!
//! Run as root (a cgroup leaf), inside a private PID namespace (`scripts/bench.sh` does:
//! `unshare --pid --fork --mount-proc`): this process is then pid 1 and reaps every orphan.
//! Prints markdown tables on stdout and one JSON object per measurement on stderr.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pidguard::launch::{self, ScopeMode, SpawnOptions};
use pidguard::{stop_pid_file, StopOptions};
use pidguard_bench::percentile;

const MODES: [ScopeMode; 3] = [ScopeMode::Group, ScopeMode::Cgroup, ScopeMode::Supervisor];

fn arg(args: &[String], i: usize, default: usize) -> usize {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn base() -> PathBuf {
    let b = std::env::var_os("PIDGUARD_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join(format!("bench-scopes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&b);
    std::fs::create_dir_all(&b).unwrap();
    b
}

/// Reap every exited child (as pid 1 of the namespace, orphans are ours too).
fn reap() {
    loop {
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer.
        if unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) } <= 0 {
            return;
        }
    }
}

/// The comm of each live process of this namespace other than ourselves.
fn live_comms() -> Vec<String> {
    reap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| p != std::process::id() as i32)
        .filter_map(|p| {
            let s = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let (open, close) = (s.find('(')?, s.rfind(')')?);
            (!matches!(s[close + 2..].as_bytes()[0], b'Z' | b'X')).then(|| s[open + 1..close].to_string())
        })
        .collect()
}

/// Live processes of this namespace other than ourselves.
fn live_others() -> usize {
    live_comms().len()
}

/// The tree is settled: `n` sleeps (every fork has exec'd, every `setsid` is done), and nothing
/// else but a supervisor.
fn tree_up(n: usize) -> bool {
    let c = live_comms();
    c.iter().filter(|x| *x == "sleep").count() >= n && c.iter().all(|x| x == "sleep" || x == "pidguard-scope")
}

fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

fn kill_all(pf: &Path) {
    let _ = stop_pid_file(pf, &StopOptions { schedule: "KILL/2".parse().unwrap(), ..StopOptions::default() });
    let _ = std::fs::remove_file(pf);
    reap();
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn stats(v: &[f64]) -> String {
    format!("{:.0} µs (IQR {:.0}–{:.0})", percentile(v, 50.0), percentile(v, 25.0), percentile(v, 75.0))
}

fn spawn_bench(rounds: usize, per_round: usize, gap_ms: u64, cli: Option<&str>) {
    let dir = base();
    let names = ["group", "cgroup", "supervisor", "std Command", "CLI group", "CLI cgroup", "CLI supervisor"];
    let mut t: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    // Per round: the median of each, and its ratio to the group's.
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for round in 0..rounds {
        let mut round_t: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        let mut order: Vec<usize> = (0..if cli.is_some() { names.len() } else { 4 }).collect();
        let len = order.len();
        order.rotate_left(round % len);
        for &which in &order {
            for k in 0..per_round {
                let pf = dir.join(format!("s-{which}-{k}.pid"));
                // Hooks are spawned seconds apart, not in a burst: the kernel's cgroup migration
                // lock is cheap only right after another migration (see `mechanism`).
                std::thread::sleep(Duration::from_millis(gap_ms));
                match which {
                    0..=2 => {
                        let o = SpawnOptions { scope: MODES[which], ..SpawnOptions::default() };
                        let t0 = Instant::now();
                        let s = launch::spawn(&pf, &["sleep", "1000"], &o).expect("spawn");
                        round_t[which].push(us(t0.elapsed()));
                        assert_eq!(s.scope.as_str(), names[which], "{s:?}");
                        kill_all(&pf);
                    }
                    3 => {
                        let t0 = Instant::now();
                        let mut c = Command::new("sleep").arg("1000").stdin(Stdio::null()).spawn().unwrap();
                        round_t[which].push(us(t0.elapsed()));
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    _ => {
                        let scope = names[which].trim_start_matches("CLI ");
                        let t0 = Instant::now();
                        let out = Command::new(cli.unwrap()).args(["run", "--scope", scope]).arg(&pf).args(["--", "sleep", "1000"]).output().unwrap();
                        round_t[which].push(us(t0.elapsed()));
                        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                        kill_all(&pf);
                    }
                }
            }
        }
        for i in 0..names.len() {
            if round_t[i].is_empty() {
                continue;
            }
            let peer = if i >= 4 { 4 } else { 0 };
            ratios[i].push(percentile(&round_t[i], 50.0) / percentile(&round_t[peer], 50.0));
            t[i].extend(round_t[i].iter().copied());
        }
    }
    println!("| spawn of `sleep 1000`, {gap_ms} ms apart | per spawn, median (IQR) | / group (ratio of medians) | / group (median of per-round ratios) |");
    println!("|---|---|---|---|");
    for i in 0..names.len() {
        if t[i].is_empty() {
            continue;
        }
        let peer = if i >= 4 { 4 } else { 0 };
        let r = percentile(&t[i], 50.0) / percentile(&t[peer], 50.0);
        println!("| {} | {} | {:.2}× | {:.2}× |", names[i], stats(&t[i]), r, percentile(&ratios[i], 50.0));
        eprintln!("{{\"bench\":\"spawn\",\"what\":\"{}\",\"n\":{},\"median_us\":{:.1},\"p25_us\":{:.1},\"p75_us\":{:.1},\"ratio\":{:.3}}}", names[i], t[i].len(), percentile(&t[i], 50.0), percentile(&t[i], 25.0), percentile(&t[i], 75.0), r);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn user_bench(rounds: usize, per_round: usize, gap_ms: u64) {
    use pidguard::launch::IdSpec;
    let dir = base();
    let names = ["cgroup", "cgroup as nobody", "supervisor", "supervisor as nobody"];
    let mut t: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for round in 0..rounds {
        let mut round_t: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.rotate_left(round % names.len());
        for &which in &order {
            for k in 0..per_round {
                let pf = dir.join(format!("u-{which}-{k}.pid"));
                std::thread::sleep(Duration::from_millis(gap_ms));
                let scope = if which < 2 { ScopeMode::Cgroup } else { ScopeMode::Supervisor };
                let user = (which % 2 == 1).then_some(IdSpec::Id(65534));
                let o = SpawnOptions { scope, user, ..SpawnOptions::default() };
                let t0 = Instant::now();
                let s = launch::spawn(&pf, &["sleep", "1000"], &o).expect("spawn");
                round_t[which].push(us(t0.elapsed()));
                assert_eq!(s.run_as.is_some(), which % 2 == 1, "{s:?}");
                kill_all(&pf);
            }
        }
        for i in 0..names.len() {
            ratios[i].push(percentile(&round_t[i], 50.0) / percentile(&round_t[i - i % 2], 50.0));
            t[i].extend(round_t[i].iter().copied());
        }
    }
    println!("| spawn of `sleep 1000`, {gap_ms} ms apart | per spawn, median (IQR) | / as the caller (ratio of medians) | / as the caller (median of per-round ratios) |");
    println!("|---|---|---|---|");
    for i in 0..names.len() {
        let r = percentile(&t[i], 50.0) / percentile(&t[i - i % 2], 50.0);
        println!("| {} | {} | {:.2}× | {:.2}× |", names[i], stats(&t[i]), r, percentile(&ratios[i], 50.0));
        eprintln!("{{\"bench\":\"user\",\"what\":\"{}\",\"n\":{},\"median_us\":{:.1},\"ratio\":{:.3}}}", names[i], t[i].len(), percentile(&t[i], 50.0), r);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The tree: a shell that forks `n - 1` sleeps (in its group, or each `setsid`), then becomes
/// a sleep; `ignore` makes all of them ignore SIGTERM (inherited across exec).
fn tree_command(n: usize, ignore: bool, escape: bool) -> Vec<String> {
    let trap = if ignore { "trap '' TERM; " } else { "" };
    let child = if escape { "setsid sleep 1000 </dev/null >/dev/null 2>&1 &" } else { "sleep 1000 &" };
    vec!["sh".into(), "-c".into(), format!("{trap}i=1; while [ $i -lt {n} ]; do {child} i=$((i+1)); done; exec sleep 1000")]
}

fn stop_bench(n: usize, reps: usize) {
    let dir = base();
    println!("| tree of {n} | scope | reps | stop wall, median (min–max) | / 3 s bound | / group stop | survivors |");
    println!("|---|---|---|---|---|---|---|");
    for (variant, ignore, escape) in [("ignores TERM", true, false), ("exits on TERM", false, false), ("setsid escapees, ignore TERM", true, true)] {
        let mut walls: Vec<Vec<f64>> = vec![Vec::new(); 3];
        let mut survivors: Vec<usize> = vec![0; 3];
        for rep in 0..reps {
            for j in 0..3 {
                let m = (j + rep) % 3;
                let pf = dir.join(format!("t-{m}.pid"));
                let s = launch::spawn(&pf, &tree_command(n, ignore, escape), &SpawnOptions { scope: MODES[m], ..SpawnOptions::default() }).expect("spawn");
                let _ = &s;
                assert!(wait_until(Duration::from_secs(120), || tree_up(n)), "the tree did not come up: {:?}", live_comms());
                let t0 = Instant::now();
                let r = stop_pid_file(&pf, &StopOptions::default()).unwrap();
                let wall = t0.elapsed().as_secs_f64();
                let left = live_others();
                survivors[m] = survivors[m].max(left);
                walls[m].push(wall);
                let reported: Vec<i32> = r.terminate.as_ref().map(|t| t.survivors.clone()).unwrap_or_default();
                eprintln!("{{\"bench\":\"stop\",\"variant\":\"{variant}\",\"scope\":\"{}\",\"n\":{n},\"wall_s\":{wall:.4},\"outcome\":\"{}\",\"survivors\":{left},\"reported_survivors\":{:?}}}", MODES[m].as_str(), r.outcome, &reported[..reported.len().min(5)]);
                // End what a group stop left (escapees), by the scope's absence: every process
                // of this namespace is the bench's own.
                if left > 0 {
                    for e in std::fs::read_dir("/proc").unwrap().flatten() {
                        if let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()).filter(|&p| p > 1 && p != std::process::id() as i32) {
                            // SAFETY: kill(2) of a positive pid of our own namespace, not 1.
                            unsafe { libc::kill(p, libc::SIGKILL) };
                        }
                    }
                    wait_until(Duration::from_secs(10), || live_others() == 0);
                }
                kill_all(&pf);
            }
        }
        let group = percentile(&walls[0], 50.0);
        for m in 0..3 {
            let w = &walls[m];
            let med = percentile(w, 50.0);
            let min = w.iter().copied().fold(f64::INFINITY, f64::min);
            let max = w.iter().copied().fold(0.0, f64::max);
            println!(
                "| {variant} | {} | {} | {med:.3} s ({min:.3}–{max:.3}) | {:.2}× | {:.2}× | {} |",
                MODES[m].as_str(),
                w.len(),
                med / 3.0,
                med / group,
                survivors[m]
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Pss` and `Private_Dirty` of `pid`, KiB, from `/proc/<pid>/smaps_rollup`.
fn smaps(pid: i32) -> (u64, u64, u64) {
    let t = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let get = |k: &str| t.lines().find_map(|l| l.strip_prefix(k)).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0);
    (get("Rss:"), get("Pss:"), get("Private_Dirty:"))
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

fn memory_row(what: &str, sup: i32, cmd: i32) {
    let (sr, sp, sd) = smaps(sup);
    let (cr, cp, cd) = smaps(cmd);
    assert_eq!(comm(sup), "pidguard-scope", "pid {sup} is not a supervisor");
    println!(
        "| {what} | {} KiB | {sp} KiB | {sd} KiB | {cp} KiB | {cd} KiB | {:.2}× |",
        sr,
        sd as f64 / cd.max(1) as f64
    );
    eprintln!("{{\"bench\":\"memory\",\"what\":\"{what}\",\"sup_rss_kib\":{sr},\"sup_pss_kib\":{sp},\"sup_private_dirty_kib\":{sd},\"cmd_rss_kib\":{cr},\"cmd_pss_kib\":{cp},\"cmd_private_dirty_kib\":{cd}}}");
}

/// A spawner with a `heap_mib` MiB heap (written), which spawns `sleep` under a supervisor,
/// prints "<supervisor> <command>", rewrites its heap (as a collector does) and waits for
/// stdin to close.
fn big_spawner(pf: &Path, heap_mib: usize) {
    let mut heap = vec![1u8; heap_mib << 20];
    let s = launch::spawn(pf, &["sleep", "1000"], &SpawnOptions { scope: ScopeMode::Supervisor, ..SpawnOptions::default() }).unwrap();
    for b in heap.iter_mut().step_by(4096) {
        *b = 2;
    }
    println!("{} {}", s.supervisor_pid.unwrap(), s.pid);
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    std::hint::black_box(&heap);
}

fn memory_bench(cli: &str, heap_mib: usize) {
    let dir = base();
    println!("| supervisor spawned by | its Rss | its Pss | its Private_Dirty | the command's (`sleep`) Pss | the command's Private_Dirty | Private_Dirty / the command's |");
    println!("|---|---|---|---|---|---|---|");
    // 1. the CLI, which exits: the supervisor is then the only user of what it inherited.
    let pf = dir.join("cli.pid");
    let out = Command::new(cli).args(["run", "--json", "--scope", "supervisor"]).arg(&pf).args(["--", "sleep", "1000"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let num = |k: &str| -> i32 {
        let i = text.find(&format!("\"{k}\":")).unwrap() + k.len() + 3;
        text[i..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    let (sup, cmd) = (num("supervisor_pid"), num("pid"));
    memory_row("`pidguard run` (exited)", sup, cmd);
    kill_all(&pf);
    // 2. this process (a small Rust program, alive).
    let pf = dir.join("lib.pid");
    let s = launch::spawn(&pf, &["sleep", "1000"], &SpawnOptions { scope: ScopeMode::Supervisor, ..SpawnOptions::default() }).unwrap();
    memory_row("`launch::spawn` from this bench (alive)", s.supervisor_pid.unwrap(), s.pid);
    kill_all(&pf);
    // 3. a spawner with a big heap that it rewrites after the spawn, alive, then exited.
    let pf = dir.join("big.pid");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["big-spawner", &heap_mib.to_string()])
        .arg(&pf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().unwrap()), &mut line).unwrap();
    let mut it = line.split_whitespace().map(|w| w.parse::<i32>().unwrap());
    let (sup, cmd) = (it.next().unwrap(), it.next().unwrap());
    memory_row(&format!("a spawner with a {heap_mib} MiB heap, rewritten after the spawn (alive)"), sup, cmd);
    drop(child.stdin.take());
    let _ = child.wait();
    memory_row(&format!("the same, after the spawner exited"), sup, cmd);
    kill_all(&pf);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `struct clone_args` of clone3(2) (Linux ≥ 5.3; `cgroup` ≥ 5.7).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// The mechanism behind a leaf's spawn cost, alone: a child that only exits, started by
/// `fork`, by `fork` + writing `0` to the leaf's `cgroup.procs` in the child (what
/// `launch::spawn` does now), and by `clone3(CLONE_INTO_CGROUP)` (born in the leaf), `n` each,
/// alternating; the time from the fork to the parent's reap.
fn mechanism_bench(n: usize, gap_ms: u64) {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let own = own.lines().find_map(|l| l.strip_prefix("0::")).unwrap().trim().to_string();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mount = mountinfo
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let d = f.iter().position(|x| *x == "-")?;
            (f.get(d + 1) == Some(&"cgroup2") && f[3] == "/").then(|| f[4].to_string())
        })
        .expect("a cgroup2 mount");
    let leaf = PathBuf::from(format!("{mount}{}/pidguard-bench-mechanism-{}", own.trim_end_matches('/'), std::process::id()));
    std::fs::create_dir(&leaf).unwrap();
    let dir = std::fs::File::open(&leaf).unwrap();
    let procs = std::fs::OpenOptions::new().write(true).open(leaf.join("cgroup.procs")).unwrap();
    use std::os::fd::AsRawFd;
    let (dfd, pfd) = (dir.as_raw_fd(), procs.as_raw_fd());
    let names = ["fork", "fork + write cgroup.procs in the child", "clone3(CLONE_INTO_CGROUP)"];
    let mut t: Vec<Vec<f64>> = vec![Vec::new(); 3];
    for i in 0..n {
        for k in 0..3 {
            let which = (k + i) % 3;
            // Spawns seconds apart (hooks) meet an idle kernel: model that with a pause.
            std::thread::sleep(Duration::from_millis(gap_ms));
            let t0 = Instant::now();
            // SAFETY: the children call only write(2) and _exit(2) (async-signal-safe); this
            // program is single-threaded here.
            let pid = unsafe {
                match which {
                    0 | 1 => libc::fork(),
                    _ => {
                        let mut a = CloneArgs { flags: CLONE_INTO_CGROUP, exit_signal: libc::SIGCHLD as u64, cgroup: dfd as u64, ..CloneArgs::default() };
                        libc::syscall(libc::SYS_clone3, &mut a as *mut CloneArgs, std::mem::size_of::<CloneArgs>()) as i32
                    }
                }
            };
            assert!(pid >= 0, "{}: {}", names[which], std::io::Error::last_os_error());
            if pid == 0 {
                // SAFETY: see above.
                unsafe {
                    if which == 1 && libc::write(pfd, b"0".as_ptr().cast(), 1) != 1 {
                        libc::_exit(1);
                    }
                    libc::_exit(0);
                }
            }
            let mut st = 0;
            // SAFETY: waitpid of our own child with a valid status pointer.
            unsafe { libc::waitpid(pid, &mut st, 0) };
            t[which].push(us(t0.elapsed()));
            assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0, "{}: child failed", names[which]);
        }
    }
    drop((dir, procs));
    let _ = std::fs::remove_dir(&leaf);
    println!("| a child that only exits, fork to reap, {gap_ms} ms apart | median (IQR) | / fork |");
    println!("|---|---|---|");
    for k in 0..3 {
        let r = percentile(&t[k], 50.0) / percentile(&t[0], 50.0);
        println!("| {} | {} | {r:.1}× |", names[k], stats(&t[k]));
        eprintln!("{{\"bench\":\"mechanism\",\"what\":\"{}\",\"n\":{n},\"median_us\":{:.1},\"ratio\":{r:.2}}}", names[k], percentile(&t[k], 50.0));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("spawn") => spawn_bench(arg(&args, 2, 10), arg(&args, 3, 20), arg(&args, 4, 0) as u64, args.get(5).map(String::as_str)),
        Some("user") => user_bench(arg(&args, 2, 10), arg(&args, 3, 10), arg(&args, 4, 100) as u64),
        Some("stop") => stop_bench(arg(&args, 2, 200), arg(&args, 3, 3)),
        Some("memory") => memory_bench(args.get(2).expect("memory <pidguard-cli> <heap_mib>"), arg(&args, 3, 64)),
        Some("mechanism") => mechanism_bench(arg(&args, 2, 200), arg(&args, 3, 0) as u64),
        Some("big-spawner") => big_spawner(Path::new(&args[3]), arg(&args, 2, 64)),
        _ => {
            eprintln!("usage: scopes spawn <rounds> <per_round> <gap_ms> [pidguard-cli] | user <rounds> <per_round> <gap_ms> | mechanism <n> <gap_ms> | stop <n> <reps> | memory <pidguard-cli> <heap_mib>");
            std::process::exit(64);
        }
    }
}
