//! Credentials: the real and effective uids and `CAP_KILL`, the three facts kill(2) weighs.

/// This process's real and effective uids, in one `getresuid(2)` where the system has it (Linux,
/// FreeBSD; the saved uid is not needed: kill(2) compares the *sender's* real or effective uid
/// with the target's real or saved uid — kill(2), "Permissions").
#[cfg(any(target_os = "linux", target_os = "freebsd"))]
pub(crate) fn uids() -> (u32, u32) {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: getresuid(2) writes three uid_t through valid pointers; it cannot fail with them.
    unsafe { libc::getresuid(&mut r, &mut e, &mut s) };
    (r, e)
}

/// macOS has no `getresuid`: `getuid(2)` and `geteuid(2)`.
#[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
pub(crate) fn uids() -> (u32, u32) {
    (nix::unistd::getuid().as_raw(), nix::unistd::geteuid().as_raw())
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

/// Whether this process may signal root's processes or every process: a real or effective uid
/// of 0, or `CAP_KILL` in its effective set (a fact about its credentials; what follows from it
/// is decided above this layer, in `protect`). A real uid of 0 counts although the effective one
/// was lowered (ArchiveBox started as root runs with uids (0, 999, 0)): kill(2) lets the *real*
/// uid reach every process whose real or saved uid is 0.
pub(crate) fn privileged() -> bool {
    let (ruid, euid) = uids();
    ruid == 0 || euid == 0 || has_cap_kill()
}

/// This process's real, effective and saved uids and gids (`getresuid(2)`, `getresgid(2)`), for
/// deciding whether it may start a command as another identity.
#[cfg(target_os = "linux")]
pub(crate) fn resids() -> ([u32; 3], [u32; 3]) {
    let (mut r, mut e, mut s) = (0, 0, 0);
    let (mut gr, mut ge, mut gs) = (0, 0, 0);
    // SAFETY: getresuid/getresgid write three ids through valid pointers; they cannot fail with them.
    unsafe {
        libc::getresuid(&mut r, &mut e, &mut s);
        libc::getresgid(&mut gr, &mut ge, &mut gs);
    }
    ([r, e, s], [gr, ge, gs])
}

/// This process's supplementary groups (`getgroups(2)`).
#[cfg(target_os = "linux")]
pub(crate) fn groups() -> std::io::Result<Vec<u32>> {
    Ok(nix::unistd::getgroups().map_err(std::io::Error::from)?.into_iter().map(|g| g.as_raw()).collect())
}

/// Whether this process holds `CAP_SETUID` and `CAP_SETGID` (capabilities(7)): `(in the
/// effective set, in the permitted set)`. A process with both permitted but not effective (root
/// that lowered its effective uid: ids (0, U, 0)) gets them back in its effective set by setting
/// its effective uid to 0, which a real or saved uid of 0 allows. An error answers "no".
#[cfg(target_os = "linux")]
pub(crate) fn id_caps() -> (bool, bool) {
    const CAP_SETGID: u32 = 6;
    const CAP_SETUID: u32 = 7;
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
    let both = (1 << CAP_SETUID) | (1 << CAP_SETGID);
    if r != 0 {
        return (false, false);
    }
    (data[0].effective & both == both, data[0].permitted & both == both)
}
