//! Credentials: the effective uid and `CAP_KILL`.

/// This process's effective uid.
pub(crate) fn geteuid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Whether this process holds `CAP_KILL` in its effective set (capabilities(7)): it may then
/// signal any process, like root. One `capget(2)` (no file is opened: it is asked before every
/// path a privileged caller opens). An error answers "no".
#[cfg(target_os = "linux")]
pub(crate) fn has_cap_kill() -> bool {
    /// `CAP_KILL` and `_LINUX_CAPABILITY_VERSION_3` from `<linux/capability.h>`.
    const CAP_KILL: u32 = 5;
    const VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header { version: VERSION_3, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: capget(2) with a version-3 header writes two `Data` records, which `data` holds.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut Header, data.as_mut_ptr()) };
    r == 0 && data[0].effective & (1 << CAP_KILL) != 0
}

/// No capabilities on macOS and FreeBSD: only root may signal every process.
#[cfg(not(target_os = "linux"))]
pub(crate) fn has_cap_kill() -> bool {
    false
}

/// Whether this process is privileged: effective uid 0 or `CAP_KILL` in its effective set (a
/// fact about its credentials; what follows from it is decided above this layer, in `protect`).
pub(crate) fn privileged() -> bool {
    geteuid() == 0 || has_cap_kill()
}
