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

/// The calling thread's scheduling priority raised to the highest nice value (-20) while this
/// lives, and put back when it is dropped: for a stop that must outrun a fork storm on a loaded
/// machine. Only where the caller may (`CAP_SYS_NICE`, e.g. root): otherwise nothing changes.
/// On Linux `setpriority(PRIO_PROCESS, tid)` changes one thread (the caller's other threads
/// keep theirs); elsewhere it does nothing.
pub(crate) struct ThreadBoost {
    #[cfg(target_os = "linux")]
    back: Option<(libc::id_t, libc::c_int)>,
}

impl ThreadBoost {
    /// Raise the calling thread's priority, if allowed (see the type's docs).
    pub(crate) fn new() -> ThreadBoost {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
            // getpriority can return -1 as a value: errno tells an error apart.
            // SAFETY: errno location is thread-local; getpriority/setpriority take plain integers.
            unsafe { *libc::__errno_location() = 0 };
            let was = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
            if unsafe { *libc::__errno_location() } != 0 || was <= -20 {
                return ThreadBoost { back: None };
            }
            // SAFETY: as above.
            let ok = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, -20) } == 0;
            ThreadBoost { back: ok.then_some((tid, was)) }
        }
        #[cfg(not(target_os = "linux"))]
        ThreadBoost {}
    }
}

impl Drop for ThreadBoost {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some((tid, was)) = self.back {
            // SAFETY: plain integers; the thread is this one (a boost is not sent across threads).
            unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, was) };
        }
    }
}
