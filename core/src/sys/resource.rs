//! Resource limits: the soft `RLIMIT_NOFILE` and how many descriptors are open.

/// The soft `RLIMIT_NOFILE`: how many descriptors this process may have open.
pub(crate) fn nofile_soft_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, Resource};
    // `rlim_t` is 32 bits wide on some 32-bit targets and signed on FreeBSD (`RLIM_INFINITY`
    // is `i64::MAX` there, so nothing real is lost).
    #[allow(clippy::useless_conversion, clippy::unnecessary_fallible_conversions)]
    getrlimit(Resource::RLIMIT_NOFILE).ok().and_then(|(soft, _hard)| u64::try_from(soft).ok())
}

/// How many descriptors this process has open now (entries of `/proc/self/fd`).
#[cfg(target_os = "linux")]
pub(crate) fn open_fd_count() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count())
}

/// How many descriptors this process has open now (entries of `/dev/fd`, which lists every
/// descriptor on macOS).
#[cfg(target_os = "macos")]
pub(crate) fn open_fd_count() -> Option<usize> {
    std::fs::read_dir("/dev/fd").ok().map(|d| d.count())
}

/// Unknown on FreeBSD (its `/dev/fd` shows only 0–2 unless fdescfs is mounted): the caller
/// assumes its default.
#[cfg(target_os = "freebsd")]
pub(crate) fn open_fd_count() -> Option<usize> {
    None
}
