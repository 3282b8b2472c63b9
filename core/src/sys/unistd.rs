//! This process: its pid, parent, group, fork generation and clock ticks.

/// A counter that a `fork(2)` child sees incremented (`pthread_atfork`): per-process caches
/// (the pid namespace) compare it instead of asking the kernel for the pid on every call.
pub(crate) fn fork_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Once;
    static GEN: AtomicU64 = AtomicU64::new(0);
    static REGISTER: Once = Once::new();
    extern "C" fn in_child() {
        GEN.fetch_add(1, Ordering::Relaxed);
    }
    REGISTER.call_once(|| {
        // Raw libc: nix 0.32 does not wrap `pthread_atfork`.
        // SAFETY: registering a handler that only touches an atomic is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
    GEN.load(Ordering::Relaxed)
}

/// This process's pid.
pub(crate) fn getpid() -> i32 {
    nix::unistd::getpid().as_raw()
}

/// This process's parent pid.
pub(crate) fn getppid() -> i32 {
    nix::unistd::getppid().as_raw()
}

/// This process's process group.
pub(crate) fn getpgrp() -> i32 {
    nix::unistd::getpgrp().as_raw()
}

#[cfg(target_os = "linux")]
/// `CLOCK_BOOTTIME` now, in nanoseconds: the clock of a process's start time in
/// `/proc/<pid>/stat` (field 22 is its start in `CLOCK_BOOTTIME`, in [`clk_tck`] ticks).
pub(crate) fn boottime_ns() -> std::io::Result<u128> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128)
}

#[cfg(target_os = "linux")]
/// `sysconf(_SC_CLK_TCK)`: clock ticks per second of `/proc/<pid>/stat` times (100 on Linux).
pub(crate) fn clk_tck() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(v)) if v > 0 => v as u64,
        _ => 100,
    }
}
