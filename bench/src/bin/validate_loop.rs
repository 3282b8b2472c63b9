//! `validate_pid_file` from Rust in a loop, measured as `bench/floor/floor_validate.c` measures
//! the floor of its rules, for `bench/floor/validate.sh`:
//!
//! ```text
//! validate_loop PIDFILE N [WARM]
//! ```
//!
//! WARM calls (default 100), then N calls timed, each `pidguard::validate_pid_file(PIDFILE,
//! None, 5.0)` and each must be true. Prints one JSON line: `{"contender": "rust", "n": N,
//! "valid": V, "cpu_us": C, "wall_us": W, "user_us": U, "sys_us": S}`, per call: CPU from
//! `CLOCK_PROCESS_CPUTIME_ID`, wall from `CLOCK_MONOTONIC`, user and system from
//! `getrusage(RUSAGE_SELF)`. Exits 1 when a call said false.
use std::path::Path;

fn clock(id: libc::clockid_t) -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(id, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn rusage() -> (f64, f64) {
    // SAFETY: getrusage writes one rusage through a valid pointer; all-zero is a valid rusage.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(r.ru_utime), tv(r.ru_stime))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: validate_loop PIDFILE N [WARM]");
        std::process::exit(2);
    }
    let path = Path::new(&args[1]);
    let n: u64 = args[2].parse().expect("N");
    let warm: u64 = args.get(3).map_or(100, |w| w.parse().expect("WARM"));
    for _ in 0..warm {
        if !pidguard::validate_pid_file(std::hint::black_box(path), None, 5.0) {
            eprintln!("validate_loop: {} is not valid: {:?}", path.display(), pidguard::check_pid_file(path, None, 5.0));
            std::process::exit(1);
        }
    }
    let r0 = rusage();
    let w0 = clock(libc::CLOCK_MONOTONIC);
    let c0 = clock(libc::CLOCK_PROCESS_CPUTIME_ID);
    let mut valid = 0u64;
    for _ in 0..n {
        valid += u64::from(pidguard::validate_pid_file(std::hint::black_box(path), None, 5.0));
    }
    let c1 = clock(libc::CLOCK_PROCESS_CPUTIME_ID);
    let w1 = clock(libc::CLOCK_MONOTONIC);
    let r1 = rusage();
    let k = if n == 0 { 0.0 } else { 1e6 / n as f64 };
    println!(
        "{{\"contender\": \"rust\", \"n\": {n}, \"valid\": {valid}, \"cpu_us\": {:.4}, \"wall_us\": {:.4}, \"user_us\": {:.4}, \"sys_us\": {:.4}}}",
        (c1 - c0) * k,
        (w1 - w0) * k,
        (r1.0 - r0.0) * k,
        (r1.1 - r0.1) * k
    );
    std::process::exit(if valid == n { 0 } else { 1 });
}
