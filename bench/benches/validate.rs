//! Criterion benchmarks of `validate_pid_file` on a live process, with and without the
//! start-token xattr, against the syscall floor of the same design (`pidguard_bench` docs).
//! The fixture files live under `$PIDGUARD_BENCH_DIR` (default `target/`), which must support
//! user xattrs (tmpfs before 6.6 does not).
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use pidguard_bench::{cpath, floor_pidfd_only, floor_validate, part_btime, part_pidfd, part_pidfile, part_proc_pid_stat, Fixture};

fn base() -> PathBuf {
    std::env::var_os("PIDGUARD_BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

fn validate(c: &mut Criterion) {
    let fx = Fixture::new(&base());
    let pid = fx.pid();
    for (name, path) in [("with_token", &fx.with_token), ("without_token", &fx.without_token)] {
        let cp = cpath(path);
        let mut g = c.benchmark_group(format!("validate_{name}"));
        g.bench_function("pidguard", |b| b.iter(|| assert!(pidguard::validate_pid_file(black_box(path), None, 5.0))));
        g.bench_function("floor", |b| b.iter(|| assert!(floor_validate(black_box(&cp), 5.0))));
        if name == "with_token" {
            g.bench_function("floor_pidfd_only", |b| b.iter(|| assert!(floor_pidfd_only(black_box(&cp)))));
        }
        g.finish();
    }
    let cp = cpath(&fx.with_token);
    let mut g = c.benchmark_group("floor_parts");
    g.bench_function("pidfile_open_fstat_read_fgetxattr_close", |b| b.iter(|| assert!(part_pidfile(black_box(&cp)))));
    g.bench_function("proc_pid_stat_open_read_close", |b| b.iter(|| assert!(part_proc_pid_stat(black_box(pid)))));
    g.bench_function("pidfd_open_fstatfs_fstat_close", |b| b.iter(|| assert!(part_pidfd(black_box(pid)))));
    g.bench_function("proc_stat_btime_open_read_close", |b| b.iter(|| assert!(part_btime())));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(60).warm_up_time(Duration::from_millis(700)).measurement_time(Duration::from_secs(3));
    targets = validate
}
criterion_main!(benches);
