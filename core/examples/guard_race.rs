//! Race many processes on one guard pidfile, round after round, and count winners.
//!
//! ```text
//! guard_race [--rounds N] [--racers M] [--dir DIR] [--mode create|acquire]
//! ```
//!
//! The coordinator starts M copies of itself (`--worker`), each a separate process with its own
//! pid and start token, and in every round tells all of them at once to `create` (or
//! `acquire`, over a stale record of an exited process) the same fresh path. Exactly one must
//! win; the others must get `AlreadyExists` (or `Held`, naming the winner). Any other outcome is
//! a violation: it is printed and the exit status is 1. `scripts/guard-race.sh` runs it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use pidguard::guard::{self, AcquireOptions, Entry};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--worker") {
        return worker(&args[1]);
    }
    let mut rounds = 1000usize;
    let mut racers = 64usize;
    let mut dir: Option<PathBuf> = None;
    let mut mode = "create".to_string();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--rounds" => rounds = val().parse().unwrap_or_else(|_| usage("bad --rounds")),
            "--racers" => racers = val().parse().unwrap_or_else(|_| usage("bad --racers")),
            "--dir" => dir = Some(PathBuf::from(val())),
            "--mode" => mode = val(),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    if mode != "create" && mode != "acquire" {
        usage("--mode is create or acquire");
    }
    let base = dir.unwrap_or_else(|| {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() }
    });
    let dir = base.join(format!("pidguard-guard-race-{}", std::process::id()));
    std::process::exit(coordinate(&dir, rounds, racers, &mode));
}

fn usage(msg: &str) -> ! {
    eprintln!("guard_race: {msg}\nusage: guard_race [--rounds N] [--racers M] [--dir DIR] [--mode create|acquire]");
    std::process::exit(2)
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Our own child, by pid; closing stdin ends it anyway.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn coordinate(dir: &Path, rounds: usize, racers: usize, mode: &str) -> i32 {
    let exe = std::env::current_exe().expect("current_exe");
    let mut workers: Vec<Worker> = (0..racers)
        .map(|i| {
            let mut child = Command::new(&exe)
                .args(["--worker", &format!("w{i}")])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn worker");
            let stdin = child.stdin.take().unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            Worker { child, stdin, stdout }
        })
        .collect();
    std::fs::create_dir_all(dir).expect("create the race directory");
    let stale = if mode == "acquire" { Some(dead_record()) } else { None };
    let (mut single, mut lost, mut violations) = (0usize, 0usize, 0usize);
    let t0 = Instant::now();
    for round in 0..rounds {
        let path = dir.join(format!("r{round}.json"));
        if let Some(s) = &stale {
            guard::create(&path, s).expect("write the stale record");
        }
        let cmd = format!("{mode} {}\n", path.display());
        for w in workers.iter_mut() {
            w.stdin.write_all(cmd.as_bytes()).expect("send");
        }
        for w in workers.iter_mut() {
            w.stdin.flush().expect("send");
        }
        let results: Vec<String> = workers.iter_mut().map(recv).collect();
        let winners: Vec<usize> = (0..racers).filter(|&i| results[i] == "ok").collect();
        let on_file = guard::read(&path).ok().and_then(|e| e.field("racer").map(str::to_string));
        let ok = winners.len() == 1
            && on_file.as_deref() == Some(format!("w{}", winners[0]).as_str())
            && results.iter().enumerate().all(|(i, r)| {
                i == winners[0]
                    || r == "already-exists"
                    || (mode == "acquire" && r == &format!("held w{}", winners[0]))
            });
        if ok {
            single += 1;
            lost += racers - 1;
        } else {
            violations += 1;
            eprintln!("round {round}: VIOLATION: file holds {on_file:?}; results {results:?}");
        }
        if mode == "acquire" {
            for w in workers.iter_mut() {
                w.stdin.write_all(b"release\n").expect("send");
                w.stdin.flush().expect("send");
            }
            for w in workers.iter_mut() {
                recv(w);
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    let secs = t0.elapsed().as_secs_f64();
    drop(workers);
    let _ = std::fs::remove_dir_all(dir);
    println!(
        "guard-race ({mode}): {rounds} rounds x {racers} processes: {single} rounds with exactly one winner, \
         {lost} losers refused, {violations} violations, {secs:.1} s ({:.2} ms/round)",
        secs * 1000.0 / rounds.max(1) as f64
    );
    if violations == 0 { 0 } else { 1 }
}

fn recv(w: &mut Worker) -> String {
    let mut line = String::new();
    if w.stdout.read_line(&mut line).expect("read worker") == 0 {
        panic!("a worker exited");
    }
    line.trim_end().to_string()
}

/// A record of a process that has exited and been reaped: stale for every round.
fn dead_record() -> Entry {
    let mut c = Command::new("sleep").arg("30").spawn().expect("spawn sleep");
    let pid = c.id() as i32;
    let tok = pidguard::start_token(pid).expect("token");
    c.kill().expect("kill our own child");
    c.wait().expect("reap");
    Entry::new(pid, tok.to_string()).with_field("racer", "stale")
}

fn worker(name: &str) {
    let me = Entry::current().expect("own token").with_field("racer", name);
    let mut held: Option<guard::Guard> = None;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.expect("read command");
        let (cmd, arg) = line.split_once(' ').unwrap_or((&line, ""));
        let reply = match cmd {
            "create" => match guard::create(Path::new(arg), &me) {
                Ok(()) => "ok".to_string(),
                Err(e) => e.kind().slug().to_string(),
            },
            "acquire" => match guard::acquire(Path::new(arg), &me, &AcquireOptions::default()) {
                Ok(g) => {
                    let r = if g.is_held() { "ok" } else { "ok-but-not-held" };
                    held = Some(g);
                    r.to_string()
                }
                Err(e) => match e.holder().and_then(|h| h.entry.as_ref()) {
                    Some(h) => format!("held {}", h.field("racer").unwrap_or("?")),
                    None => e.kind().slug().to_string(),
                },
            },
            "release" => match held.take().map(guard::Guard::release) {
                Some(Ok(true)) => "released".to_string(),
                Some(Ok(false)) => "not-held".to_string(),
                Some(Err(e)) => e.kind().slug().to_string(),
                None => "none".to_string(),
            },
            other => format!("unknown {other}"),
        };
        writeln!(out, "{reply}").expect("reply");
        out.flush().expect("reply");
    }
}
