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

#![no_main]
// No Rust runtime set-up: the program is `main` as C sees it, and touches as little memory as it
// can (its resident size is what a scope costs while the command runs).

/// The program's entry, as C calls it: supervisors are Linux's.
#[cfg(not(target_os = "linux"))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    127
}

/// Write `msg` to stderr (one `write`; nothing to do if it fails).
#[cfg(target_os = "linux")]
fn say(msg: &[u8]) {
    // SAFETY: `msg` is readable for its length.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}

/// The program's entry, as C calls it.
///
/// # Safety
/// `argv` holds `argc` valid NUL-terminated strings (as the kernel passes them).
#[cfg(target_os = "linux")]
#[no_mangle]
pub unsafe extern "C" fn main(argc: libc::c_int, argv: *const *const libc::c_char) -> libc::c_int {
    // argv[1]: the command's pid, decimal.
    let mut child: i32 = 0;
    if argc == 2 {
        // SAFETY: the kernel passes `argc` valid NUL-terminated strings in `argv`.
        let arg = unsafe { std::ffi::CStr::from_ptr(*argv.add(1)) }.to_bytes();
        if !arg.is_empty() && arg.len() <= 10 && arg.iter().all(u8::is_ascii_digit) {
            child = arg.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')).min(i64::from(i32::MAX)) as i32;
        }
    }
    let mut sub: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int to the given address.
    let is_sub = unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut sub as *mut libc::c_int as libc::c_ulong, 0, 0, 0) } == 0 && sub != 0;
    if child <= 0 || !is_sub {
        say(b"pidguard-scope: the supervisor of a pidguard scope, started by pidguard itself (pidguard-scope <command pid>, as a child subreaper); not to be run by hand\n");
        return 127;
    }
    let mut code = 0;
    let mut killed_by = 0;
    loop {
        let mut st = 0;
        // SAFETY: `st` is writable; waiting for any child of ours.
        let r = unsafe { libc::waitpid(-1, &mut st, 0) };
        if r == child {
            if libc::WIFEXITED(st) {
                (code, killed_by) = (libc::WEXITSTATUS(st), 0);
            } else if libc::WIFSIGNALED(st) {
                (code, killed_by) = (128 + libc::WTERMSIG(st), libc::WTERMSIG(st));
            }
        } else if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
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
unsafe fn die_by(sig: libc::c_int) {
    // SAFETY: prctl/setrlimit/signal/sigprocmask/kill on this process with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
        let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(sig, libc::SIG_DFL);
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
    }
}
