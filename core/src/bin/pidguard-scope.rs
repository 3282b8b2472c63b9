//! `pidguard-scope`: the supervisor of a scope, exec'd by `launch::spawn` (`ScopeMode::Supervisor`,
//! or `Auto` where no cgroup leaf can be made) in the child it forked, so that the supervisor
//! holds none of the spawner's memory (a fork without exec keeps a Python or Node spawner's whole
//! heap for as long as the command runs) and `ps` names it.
//!
//! Usage (by the spawner, never by hand): `pidguard-scope <command pid>`. Everything else was
//! set up before the exec and survives it: the process is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`, kept across `execve`), leads a session of its own, blocks every
//! signal it can, has `/dev/null` as stdio and no other descriptor, and the command is already
//! its child. It then only reaps — every orphan of the command's tree becomes its child — until
//! it has no child left, and ends as the command ended: with its exit code, or, when a signal
//! killed the command, killed by that same signal (the handler reset, the signal unblocked and
//! raised on itself; core dumps off first, so the supervisor leaves no core of its own). Its
//! parent therefore reads the command's own wait status: `WIFSIGNALED` and the signal from
//! `waitpid`, `CLD_KILLED` from `waitid`, asyncio's negative returncode. (The core-dump flag of
//! the command's status is not carried over.)
//!
//! Run any other way (not a subreaper: started by hand), it prints why and exits 127.
//!
//! The file depends on nothing but `std` (no crate, not even `libc`: the three C functions it
//! calls are declared below), so that a build script can compile it with a plain `rustc` call:
//! the Python binding's build (py/build.rs) does, so that `pip install` from source installs the
//! program beside the extension module as the wheel does.

#![no_main]
// No Rust runtime set-up: the program is `main` as C sees it, and touches as little memory as it
// can (its resident size is what a scope costs while the command runs).

use std::ffi::{c_char, c_int};
#[cfg(target_os = "linux")]
use std::ffi::{c_ulong, c_void};

#[cfg(target_os = "linux")]
extern "C" {
    fn prctl(option: c_int, ...) -> c_int;
    fn waitpid(pid: i32, status: *mut c_int, options: c_int) -> i32;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    fn setrlimit(resource: c_int, rlim: *const [c_ulong; 2]) -> c_int;
    fn signal(sig: c_int, handler: usize) -> usize;
    fn sigprocmask(how: c_int, set: *const [c_ulong; SIGSET_WORDS], old: *mut [c_ulong; SIGSET_WORDS]) -> c_int;
    fn kill(pid: i32, sig: c_int) -> c_int;
    fn getpid() -> i32;
}

/// `sigset_t` as glibc and musl lay it out: 1024 bits in `unsigned long` words (signal n is bit
/// n - 1, as `sigaddset` sets it).
#[cfg(target_os = "linux")]
const SIGSET_WORDS: usize = 1024 / (8 * std::mem::size_of::<c_ulong>());
/// `PR_SET_DUMPABLE` (linux/prctl.h).
#[cfg(target_os = "linux")]
const PR_SET_DUMPABLE: c_int = 4;
/// `RLIMIT_CORE` (asm-generic/resource.h: x86_64 and aarch64, the architectures built here).
#[cfg(target_os = "linux")]
const RLIMIT_CORE: c_int = 4;
/// `SIG_UNBLOCK` (asm-generic/signal-defs.h: x86_64 and aarch64).
#[cfg(target_os = "linux")]
const SIG_UNBLOCK: c_int = 1;
/// `SIG_DFL`: the default action.
#[cfg(target_os = "linux")]
const SIG_DFL: usize = 0;

/// `PR_GET_CHILD_SUBREAPER` (linux/prctl.h; the same number on every Linux architecture).
#[cfg(target_os = "linux")]
const PR_GET_CHILD_SUBREAPER: c_int = 37;
/// `EINTR` (asm-generic/errno-base.h; the same on every Linux architecture).
#[cfg(target_os = "linux")]
const EINTR: i32 = 4;

/// The program's entry, as C calls it: supervisors are Linux's.
#[cfg(not(target_os = "linux"))]
#[no_mangle]
pub extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    127
}

/// Write `msg` to stderr (one `write`; nothing to do if it fails).
#[cfg(target_os = "linux")]
fn say(msg: &[u8]) {
    // SAFETY: `msg` is readable for its length.
    unsafe { write(2, msg.as_ptr().cast(), msg.len()) };
}

/// The program's entry, as C calls it.
///
/// # Safety
/// `argv` holds `argc` valid NUL-terminated strings (as the kernel passes them).
#[cfg(target_os = "linux")]
#[no_mangle]
pub unsafe extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    // argv[1]: the command's pid, decimal.
    let mut child: i32 = 0;
    if argc == 2 {
        // SAFETY: the kernel passes `argc` valid NUL-terminated strings in `argv`.
        let arg = unsafe { std::ffi::CStr::from_ptr(*argv.add(1)) }.to_bytes();
        if !arg.is_empty() && arg.len() <= 10 && arg.iter().all(u8::is_ascii_digit) {
            child = arg.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')).min(i64::from(i32::MAX)) as i32;
        }
    }
    let mut sub: c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int to the given address.
    let is_sub = unsafe { prctl(PR_GET_CHILD_SUBREAPER, &mut sub as *mut c_int as c_ulong, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong) } == 0 && sub != 0;
    if child <= 0 || !is_sub {
        say(b"pidguard-scope: the supervisor of a pidguard scope, started by pidguard itself (pidguard-scope <command pid>, as a child subreaper); not to be run by hand\n");
        return 127;
    }
    let mut code = 0;
    let mut killed_by = 0;
    loop {
        let mut st = 0;
        // SAFETY: `st` is writable; waiting for any child of ours.
        let r = unsafe { waitpid(-1, &mut st, 0) };
        if r == child {
            // The <sys/wait.h> macros: exited (low 7 bits 0), killed (low 7 bits a signal,
            // not 0x7f, which is "stopped"; waitpid without WUNTRACED reports no stop).
            let sig = st & 0x7f;
            if sig == 0 {
                (code, killed_by) = ((st >> 8) & 0xff, 0);
            } else if sig != 0x7f {
                (code, killed_by) = (128 + sig, sig);
            }
        } else if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(EINTR) {
            // ECHILD: the tree is empty.
            break;
        }
    }
    if killed_by > 0 {
        // SAFETY: plain system calls on this process; `die_by` does not return unless the
        // signal did not end it.
        unsafe { die_by(killed_by) };
    }
    code
}

/// End this process by `sig`, as the command ended: no core dump (not dumpable, `RLIMIT_CORE`
/// 0), the default action, the signal unblocked, then raised on ourselves. Returns only if that
/// did not end the process (a signal whose default action does not terminate, which cannot
/// have killed the command); the caller then exits with 128 + `sig`.
///
/// # Safety
/// Plain system calls; async-signal-safe.
#[cfg(target_os = "linux")]
unsafe fn die_by(sig: c_int) {
    let bits = 8 * std::mem::size_of::<c_ulong>();
    let mut one = [0 as c_ulong; SIGSET_WORDS];
    let n = (sig - 1) as usize;
    one[n / bits] |= 1 << (n % bits);
    let none: [c_ulong; 2] = [0, 0];
    // SAFETY: prctl/setrlimit/signal/sigprocmask/kill on this process with valid arguments.
    unsafe {
        prctl(PR_SET_DUMPABLE, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong);
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigprocmask(SIG_UNBLOCK, &one, std::ptr::null_mut());
        kill(getpid(), sig);
    }
}
