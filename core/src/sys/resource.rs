//! Resource limits: the soft `RLIMIT_NOFILE` and how many descriptors are open.

/// The soft `RLIMIT_NOFILE`: how many descriptors this process may have open.
pub(crate) fn nofile_soft_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, Resource};
    // `rlim_t` is 32 bits wide on some 32-bit targets.
    #[allow(clippy::useless_conversion)]
    getrlimit(Resource::RLIMIT_NOFILE).ok().map(|(soft, _hard)| u64::from(soft))
}

/// How many descriptors this process has open now (entries of `/proc/self/fd`).
pub(crate) fn open_fd_count() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count())
}
