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

/// Whether this process is root, can become root again, or holds any capability: a real,
/// effective or saved uid of 0 (`setresuid(2)` lets it take back uid 0 from any of the three:
/// ArchiveBox started as root runs with (0, 999, 0)), or any capability in its effective or
/// permitted set (the ambient ones, which outlive an `execve`, are among the permitted). A
/// program such a process execs must be root's: whoever could replace the program would get
/// what the process has. Read now (one `getresuid(2)`, one `capget(2)`); an error of `capget`
/// answers "yes" (could not tell, so the stricter rule).
#[cfg(target_os = "linux")]
pub(crate) fn root_or_capable() -> bool {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: getresuid(2) writes three uid_t through valid pointers; it cannot fail with them.
    unsafe { libc::getresuid(&mut r, &mut e, &mut s) };
    if r == 0 || e == 0 || s == 0 {
        return true;
    }
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
    let mut header = Header { version: 0x2008_0522, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: capget(2) with a version-3 header writes two `Data` records, which `data` holds.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut Header, data.as_mut_ptr()) };
    rc != 0 || data.iter().any(|d| d.effective != 0 || d.permitted != 0)
}
