//! Scenario benchmarks of pidguard that are not micro-benchmarks. Each subcommand
//! prints one JSON object per line on stdout; `scripts/bench.sh` collects them.
//!
//! - `validate <rounds> <batch>`: `validate_pid_file` vs the syscall floor, alternating batches
//!   in one process on the same files and process (a cross-check of the criterion figures).
//! - `hooks <n> <reps>`: `cleanup_background_hooks` over `n` live hooks that ignore SIGTERM,
//!   schedule `TERM/2/KILL/1`: wall time and peak RSS of the cleanup.
//! - `exit <runs>`: SIGKILL → `ProcessRef::wait` returning, vs a 10 ms `kill(pid, 0)` poll loop,
//!   alternating, `runs` each.
//! - `scan <n> <reps>`: `cleanup_background_hooks` over `n` stale pidfiles: wall, peak RSS.
//! - `hooks <n> <reps> exit`: the same as `hooks` with hooks that exit on SIGTERM.
//! - `make-stale <dir> <n> <per_dir>`: write `n` stale hook records (token-less `.pid` naming a
//!   pid that does not exist, mtime a minute ago, `.sh`, two empty logs), `per_dir` to a plugin
//!   directory, for `clean`, `bench/python/bench_cleanup.py` and `strace`.
//! - `clean <dir> <index>`: one `cleanup_background_hooks(dir, index, is_tty=true)`; prints
//!   wall time, reports and peak RSS (`VmHWM` of the whole process).
//! - `syscalls <n> [what]`: `n` calls of one thing and nothing else, for `strace -c -f` (run it
//!   with n = 0 and n = N; the difference over N is the count per call). `what` is `validate`
//!   (default: `validate_pid_file` of the token-carrying pidfile), `lookup`, `judge` or `sysinfo`
//!   (the calls of `sysinfo <rounds> <batch>`).
//! - `sysinfo <rounds> <batch>`: the cost of asking about one live pid through the `sysinfo`
//!   crate (a kept `System`, `refresh_processes_specifics` of that pid with nothing extra to
//!   refresh, then its `start_time`) against pidguard's procfs/pidfd path (`lookup`, and `judge`
//!   with the recorded token), alternating batches in one process.
//!
//! Files go under `$PIDGUARD_BENCH_DIR` (default `target/`): it must support user xattrs.
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pidguard::{cleanup_background_hooks, CleanupOptions, HookOutcome, Policy, ProcessRef, Signal};
use pidguard_bench::{cpath, floor_validate, percentile, reset_peak_rss, vm_hwm_kib, vm_rss_kib, Fixture};

fn base() -> PathBuf {
    std::env::var_os("PIDGUARD_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

fn arg(args: &[String], i: usize, default: usize) -> usize {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn json_list(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:.6}")).collect();
    format!("[{}]", parts.join(","))
}

/// A `sleep` child in its own process group that ignores SIGTERM (the disposition survives exec).
fn spawn_term_ignoring(dir: &Path, name: &str) -> Child {
    let out = std::fs::File::create(dir.join(format!("{name}.stdout.log"))).unwrap();
    let err = std::fs::File::create(dir.join(format!("{name}.stderr.log"))).unwrap();
    let mut cmd = Command::new("sleep");
    cmd.arg("600").process_group(0).stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: signal() is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            Ok(())
        });
    }
    cmd.spawn().expect("spawn sleep")
}

fn validate(rounds: usize, batch: usize) {
    let fx = Fixture::new(&base());
    for (name, path) in [("with_token", &fx.with_token), ("without_token", &fx.without_token)] {
        let cp = cpath(path);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let t = Instant::now();
            for _ in 0..batch {
                assert!(pidguard::validate_pid_file(std::hint::black_box(path), None, 5.0));
            }
            a.push(t.elapsed().as_secs_f64() / batch as f64 * 1e6);
            let t = Instant::now();
            for _ in 0..batch {
                assert!(floor_validate(std::hint::black_box(&cp), 5.0));
            }
            b.push(t.elapsed().as_secs_f64() / batch as f64 * 1e6);
        }
        println!(
            "{{\"bench\":\"validate_interleaved\",\"case\":\"{name}\",\"unit\":\"us\",\"batch\":{batch},\"pidguard\":{},\"floor\":{}}}",
            json_list(&a),
            json_list(&b)
        );
    }
}

fn spawn_term_exiting(dir: &Path, name: &str) -> Child {
    let out = std::fs::File::create(dir.join(format!("{name}.stdout.log"))).unwrap();
    let err = std::fs::File::create(dir.join(format!("{name}.stderr.log"))).unwrap();
    Command::new("sleep").arg("600").process_group(0).stdin(Stdio::null()).stdout(out).stderr(err).spawn().expect("spawn sleep")
}

fn hooks(n: usize, reps: usize, exit_on_term: bool) {
    for rep in 0..reps {
        let out = base().join(format!("pidguard-bench-hooks-{}-{n}-{rep}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let mut children = Vec::with_capacity(n);
        for i in 0..n {
            let dir = out.join(format!("plugin{i:03}"));
            std::fs::create_dir_all(&dir).unwrap();
            let name = format!("on_Snapshot__{i:03}_bench.bg");
            let child = if exit_on_term { spawn_term_exiting(&dir, &name) } else { spawn_term_ignoring(&dir, &name) };
            let pid = child.id() as i32;
            let ct = pidguard::lookup(pid).unwrap().create_time;
            pidguard::write_pid_file_with_mtime(&dir.join(format!("{name}.pid")), pid, ct).unwrap();
            pidguard::write_cmd_file(&dir.join(format!("{name}.sh")), &["sleep", "600"]).unwrap();
            children.push(child);
        }
        let rss_before = vm_rss_kib();
        let reset = reset_peak_rss();
        let t = Instant::now();
        let reports = cleanup_background_hooks(&out, &CleanupOptions::default(), None).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let hwm = vm_hwm_kib();
        let expect = if exit_on_term { Signal::TERM } else { Signal::KILL };
        let killed = reports.iter().filter(|r| r.outcome == HookOutcome::Exited(expect)).count();
        let max_elapsed = reports.iter().filter_map(|r| r.elapsed).max().unwrap_or_default().as_secs_f64();
        for mut c in children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&out);
        println!(
            "{{\"bench\":\"hooks\",\"mode\":\"{}\",\"n\":{n},\"rep\":{rep},\"wall_s\":{wall:.6},\"max_hook_elapsed_s\":{max_elapsed:.6},\"peak_rss_kib\":{hwm},\"rss_before_kib\":{rss_before},\"peak_reset\":{reset},\"exited_after_kill\":{killed},\"reports\":{}}}",
            if exit_on_term { "exit" } else { "ignore" },
            reports.len()
        );
        assert_eq!(killed, n, "every hook must exit after {expect}: {reports:?}");
    }
}

fn proc_alive(pid: i32) -> bool {
    // A competent poll loop: kill(pid, 0) says the pid exists; a zombie (our own unreaped child
    // here) has exited, so look at the state letter too.
    // SAFETY: null signal.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(b) => {
            let close = b.iter().rposition(|&c| c == b')').unwrap_or(0);
            !matches!(b.get(close + 2), Some(b'Z') | Some(b'X'))
        }
        Err(_) => false,
    }
}

fn exit_latency(runs: usize) {
    let (mut pg, mut poll) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    let spawn = || Command::new("sleep").arg("600").process_group(0).stdin(Stdio::null()).spawn().expect("spawn sleep");
    for _ in 0..runs {
        // pidguard: pin, SIGKILL, wait on the pidfd.
        let mut c = spawn();
        let pid = c.id() as i32;
        let tok = pidguard::start_token(pid).unwrap();
        let h = ProcessRef::open(pid, Some(&tok), Policy::Strict).unwrap();
        assert!(h.is_pinned());
        let t = Instant::now();
        // SAFETY: our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        assert!(h.wait(Some(Duration::from_secs(10))).unwrap());
        pg.push(t.elapsed().as_secs_f64() * 1e3);
        drop(h);
        c.wait().unwrap();

        // Peer: the usual poll loop, 10 ms period.
        let mut c = spawn();
        let pid = c.id() as i32;
        let t = Instant::now();
        // SAFETY: our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        while proc_alive(pid) {
            std::thread::sleep(Duration::from_millis(10));
        }
        poll.push(t.elapsed().as_secs_f64() * 1e3);
        c.wait().unwrap();
    }
    println!(
        "{{\"bench\":\"exit\",\"runs\":{runs},\"unit\":\"ms\",\"pidguard_median\":{:.4},\"pidguard_p99\":{:.4},\"pidguard_max\":{:.4},\"poll10ms_median\":{:.4},\"poll10ms_p99\":{:.4}}}",
        percentile(&pg, 50.0),
        percentile(&pg, 99.0),
        percentile(&pg, 100.0),
        percentile(&poll, 50.0),
        percentile(&poll, 99.0)
    );
}

/// `n` pids that name no process now, from the top of the pid range.
fn dead_pids(n: usize) -> Vec<i32> {
    let max = std::fs::read_to_string("/proc/sys/kernel/pid_max").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(32768);
    let mut out = Vec::with_capacity(n);
    let mut p: i32 = max - 1;
    while out.len() < n && p > 300 {
        if !Path::new(&format!("/proc/{p}")).exists() {
            out.push(p);
        }
        p -= 1;
    }
    assert_eq!(out.len(), n, "not enough free pids below pid_max {max}");
    out
}

/// A genuine stale record: the token of a process that has exited.
fn dead_token() -> (String, f64) {
    let mut c = Command::new("sleep").arg("600").stdin(Stdio::null()).spawn().unwrap();
    let pid = c.id() as i32;
    let info = pidguard::lookup(pid).unwrap();
    c.kill().unwrap();
    c.wait().unwrap();
    (info.token.to_string(), info.create_time)
}

fn make_stale(out: &Path, pids: &[i32], token: &str, ct: f64) {
    use std::os::unix::ffi::OsStrExt;
    for (i, pid) in pids.iter().enumerate() {
        let dir = out.join(format!("plugin{i:05}"));
        std::fs::create_dir_all(&dir).unwrap();
        let name = format!("on_Snapshot__{:02}_bench.bg", i % 100);
        let pf = dir.join(format!("{name}.pid"));
        std::fs::write(&pf, pid.to_string()).unwrap();
        let c = std::ffi::CString::new(pf.as_os_str().as_bytes()).unwrap();
        // SAFETY: valid C strings and buffer.
        let r = unsafe { libc::setxattr(c.as_ptr(), c"user.pidguard.token".as_ptr(), token.as_ptr().cast(), token.len(), 0) };
        assert_eq!(r, 0, "setxattr");
        let f = std::fs::File::options().write(true).open(&pf).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs_f64(ct)).unwrap();
        // What write_cmd_file writes, without its fsync (10,000 fsyncs would dominate setup).
        std::fs::write(dir.join(format!("{name}.sh")), "#!/bin/bash\nsleep 600\n").unwrap();
    }
}

fn scan(n: usize, reps: usize) {
    let pids = dead_pids(n);
    let (token, ct) = dead_token();
    for rep in 0..reps {
        let out = base().join(format!("pidguard-bench-scan-{}-{rep}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        make_stale(&out, &pids, &token, ct);
        let rss_before = vm_rss_kib();
        let reset = reset_peak_rss();
        let t = Instant::now();
        let reports = cleanup_background_hooks(&out, &CleanupOptions::default(), None).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let hwm = vm_hwm_kib();
        let stale = reports.iter().filter(|r| r.outcome == HookOutcome::Stale && r.pid_file_removed).count();
        let _ = std::fs::remove_dir_all(&out);
        println!(
            "{{\"bench\":\"scan\",\"n\":{n},\"rep\":{rep},\"wall_s\":{wall:.6},\"peak_rss_kib\":{hwm},\"rss_before_kib\":{rss_before},\"peak_reset\":{reset},\"stale_removed\":{stale},\"procs\":{}}}",
            std::fs::read_dir("/proc").map(|d| d.filter(|e| e.as_ref().is_ok_and(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())).count()).unwrap_or(0)
        );
        assert_eq!(stale, n, "every record must be stale and removed");
    }
}

/// `n` stale records under `out`, `per_dir` to a directory: a token-less `.pid` naming a pid
/// that does not exist, mtime a minute ago, the `.sh` and two empty logs beside it.
fn make_stale_plain(out: &Path, n: usize, per_dir: usize) {
    let pids = dead_pids(n);
    let mtime = std::time::SystemTime::now() - Duration::from_secs(60);
    for (i, pid) in pids.iter().enumerate() {
        let dir = out.join(format!("plugin{:05}", i / per_dir.max(1)));
        if i % per_dir.max(1) == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let name = format!("on_Snapshot__{:05}_bench.bg", i);
        let pf = dir.join(format!("{name}.pid"));
        std::fs::write(&pf, pid.to_string()).unwrap();
        let f = std::fs::File::options().write(true).open(&pf).unwrap();
        f.set_modified(mtime).unwrap();
        std::fs::write(dir.join(format!("{name}.sh")), "#!/bin/bash\nsleep 600\n").unwrap();
        std::fs::write(dir.join(format!("{name}.stdout.log")), "").unwrap();
        std::fs::write(dir.join(format!("{name}.stderr.log")), "").unwrap();
    }
}

fn clean(dir: &Path, index: &Path) {
    let opts = CleanupOptions { index_path: Some(index.to_path_buf()), is_tty: true, ..CleanupOptions::default() };
    let t = Instant::now();
    let reports = cleanup_background_hooks(dir, &opts, None).unwrap();
    let wall = t.elapsed().as_secs_f64();
    let stale = reports.iter().filter(|r| r.outcome == HookOutcome::Stale && r.pid_file_removed).count();
    println!(
        "{{\"bench\":\"clean\",\"wall_s\":{wall:.6},\"reports\":{},\"stale_removed\":{stale},\"peak_rss_kib\":{}}}",
        reports.len(),
        vm_hwm_kib()
    );
}

fn syscalls(n: usize, what: &str) {
    let fx = Fixture::new(&base());
    let pid = fx.pid();
    let token = pidguard::start_token(pid).expect("start_token");
    let mut si = SysinfoProbe::new();
    eprintln!("fixture pid {pid}, {what} x {n}");
    for _ in 0..n {
        match what {
            "validate" => assert!(pidguard::validate_pid_file(std::hint::black_box(&fx.with_token), None, 5.0)),
            "lookup" => assert!(pidguard::lookup(std::hint::black_box(pid)).is_ok()),
            "judge" => assert_eq!(pidguard::judge(std::hint::black_box(pid), Some(&token)).unwrap().verdict, pidguard::Verdict::Match),
            "sysinfo" => assert!(si.start_time(std::hint::black_box(pid)).is_some()),
            _ => panic!("syscalls: unknown {what} (validate, lookup, judge, sysinfo)"),
        }
    }
}

/// What a user of the `sysinfo` crate does to learn whether one pid is alive and when it
/// started: one kept `System`, refreshed for that pid only, with no optional data.
struct SysinfoProbe(sysinfo::System);

impl SysinfoProbe {
    fn new() -> SysinfoProbe {
        SysinfoProbe(sysinfo::System::new().expect("sysinfo::System::new"))
    }
    /// The start time (whole seconds since the epoch) of `pid`, `None` when sysinfo does not see it.
    fn start_time(&mut self, pid: i32) -> Option<u64> {
        use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate};
        let p = Pid::from_u32(pid as u32);
        self.0.refresh_processes_specifics(ProcessesToUpdate::Some(&[p]), true, ProcessRefreshKind::nothing());
        self.0.process(p).map(|pr| pr.start_time())
    }
}

fn sysinfo_vs_procfs(rounds: usize, batch: usize) {
    let fx = Fixture::new(&base());
    let pid = fx.pid();
    let token = pidguard::start_token(pid).expect("start_token");
    let mut si = SysinfoProbe::new();
    let (mut s, mut l, mut j) = (Vec::new(), Vec::new(), Vec::new());
    let per_call = |t: Instant| t.elapsed().as_secs_f64() / batch as f64 * 1e6;
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..batch {
            assert!(si.start_time(std::hint::black_box(pid)).is_some());
        }
        s.push(per_call(t));
        let t = Instant::now();
        for _ in 0..batch {
            assert!(pidguard::lookup(std::hint::black_box(pid)).is_ok());
        }
        l.push(per_call(t));
        let t = Instant::now();
        for _ in 0..batch {
            let v = pidguard::judge(std::hint::black_box(pid), Some(&token)).unwrap().verdict;
            assert_eq!(v, pidguard::Verdict::Match);
        }
        j.push(per_call(t));
    }
    println!(
        "{{\"bench\":\"sysinfo_vs_procfs\",\"unit\":\"us\",\"batch\":{batch},\"sysinfo\":{},\"lookup\":{},\"judge\":{}}}",
        json_list(&s),
        json_list(&l),
        json_list(&j)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("validate") => validate(arg(&args, 2, 30), arg(&args, 3, 2000)),
        Some("hooks") => hooks(arg(&args, 2, 10), arg(&args, 3, 3), args.get(4).map(String::as_str) == Some("exit")),
        Some("make-stale") => make_stale_plain(Path::new(&args[2]), arg(&args, 3, 1000), arg(&args, 4, 1)),
        Some("clean") => clean(Path::new(&args[2]), Path::new(&args[3])),
        Some("exit") => exit_latency(arg(&args, 2, 1000)),
        Some("scan") => scan(arg(&args, 2, 10_000), arg(&args, 3, 5)),
        Some("syscalls") => syscalls(arg(&args, 2, 1000), args.get(3).map_or("validate", String::as_str)),
        Some("sysinfo") => sysinfo_vs_procfs(arg(&args, 2, 30), arg(&args, 3, 2000)),
        _ => {
            eprintln!("usage: scenarios validate|hooks|exit|scan|make-stale|clean|syscalls|sysinfo [args] (see the module docs)");
            std::process::exit(2);
        }
    }
}
