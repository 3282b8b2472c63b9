//! Real PID-reuse torture. Run it as PID 1 of a private PID namespace:
//!
//! ```sh
//! cargo build -p pidguard-core --example reuse_torture
//! unshare --pid --fork --mount-proc target/debug/examples/reuse_torture 500
//! ```
//!
//! Each round records a process that leads its own group (an abx-dl pidfile with the token in
//! its xattr, a token-only record, and handles opened on it), kills and reaps it, then writes
//! N-1 to `/proc/sys/kernel/ns_last_pid` so that a bystander gets the very same pid N and leads
//! its own group with two children. Then every way pidguard can act on the old record is run
//! against it: `judge`, `ProcessRef::open` (strict and lenient), `check_pid_file`,
//! `stop_pid_file` (strict and lenient), `cleanup_background_hooks`, and `signal`,
//! `signal_group` and `terminate` through the handles opened before the death. The bystander
//! and both children must survive, every round. Rounds rotate over the three kernel paths
//! (pidfd with the group flag; `EINVAL` for the flag; no pidfd at all), and some rounds are
//! deliberately slow so that both same-tick reuse (same start ticks: only the pidfs inode tells
//! the two apart) and different-tick reuse occur.
//!
//! Prints one summary line `reuse-torture: rounds=… same_tick=… …` and exits 1 on any failure,
//! 2 when it cannot run (not PID 1 of a namespace, no `ns_last_pid`), 0 otherwise.

#[path = "../tests/torture/mod.rs"]
mod torture;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(500);
    let verbose = args.iter().any(|a| a == "-v");
    if let Some(why) = torture::cannot_run() {
        eprintln!("reuse-torture: {why}");
        std::process::exit(2);
    }
    let t0 = std::time::Instant::now();
    let stats = torture::run(rounds, verbose);
    println!("{}", stats.line(t0.elapsed()));
    std::process::exit(if stats.passed(rounds) { 0 } else { 1 });
}
