//! Starting a command in a new session, optionally joined to a cgroup before it execs, or under
//! a subreaper supervisor: `fork(2)` and, in the child, only async-signal-safe calls
//! (`signal-safety(7)`): the caller may be a multithreaded interpreter (Python, Node), whose
//! other threads do not exist in the child and may hold locks (malloc's among them).
//!
//! Everything the child needs (the argv and environment arrays, the paths, the descriptors) is
//! built before the fork. A failure in the child before `execve` is reported through a
//! close-on-exec pipe as (stage, errno), and the parent reaps what it forked: a spawn that
//! fails leaves no process behind.
//!
//! The command is held before its `execve` until the spawner has read what it needs of it (its
//! start token: [`spawn`]'s `held`): a command that exits at once (a daemon's first process
//! forks and exits) must not be gone before its record is written, or the record goes without
//! its token and the scope beside it. The hold is one byte on a `socketpair` (sent with
//! `MSG_NOSIGNAL`: a child that already failed must not raise `SIGPIPE` in the spawner); a
//! child that sees the spawner close it without the byte exits without running the command.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::errno::cvt;

/// What to start. Built by the caller before the fork.
pub(crate) struct Command<'a> {
    /// The program to `execve`: a path (absolute, or relative to `cwd` when given).
    pub program: CString,
    /// argv, argv[0] first.
    pub argv: Vec<CString>,
    /// The environment, `NAME=value` each.
    pub env: Vec<CString>,
    /// The working directory of the command.
    pub cwd: Option<CString>,
    /// Descriptors to become the command's stdin, stdout and stderr.
    pub stdio: [BorrowedFd<'a>; 3],
    /// `cgroup.procs` of the cgroup the command joins before it execs (writing `0` moves the
    /// writer: Linux ≥ 4.5's cgroup v2).
    /// (A raw descriptor: the caller keeps it open across the call.)
    pub join: Option<RawFd>,
    /// The directory of that cgroup: the command is born in it with
    /// `clone3(CLONE_INTO_CGROUP)` (Linux ≥ 5.7), where the kernel allows; `join` is the
    /// fallback. (A raw descriptor, kept open by the caller across the call.)
    pub join_dir: Option<RawFd>,
    /// `/dev/null`, for the supervisor's own stdio.
    // Read by the supervisor alone, which is Linux's.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub devnull: BorrowedFd<'a>,
    /// The identity the command takes before it execs (after it joined its cgroup), or `None`
    /// to keep the spawner's. A supervisor keeps the spawner's identity in every case: only
    /// the command's own process takes this one.
    pub ids: Option<&'a ChildIds>,
}

/// The identity a command takes in its child before `execve`, decided and checked by the
/// spawner before the fork (`launch::run_as`). Applied with raw system calls (a forked child of
/// a threaded spawner has one thread, and glibc's wrappers would broadcast to threads that no
/// longer exist) in the one order that works: the supplementary groups (`setgroups`, which
/// needs `CAP_SETGID`), the gids, then the uids (after which no privilege is left), then read
/// back and compared.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // applied by the Linux child only
pub(crate) struct ChildIds {
    /// Set the effective uid to 0 first, regaining the permitted capabilities (a spawner with
    /// real or saved uid 0 and another effective uid: its effective set is empty).
    pub regain: bool,
    /// The spawner's effective uid, restored after the gids are set when `uid` is `None` and
    /// `regain` moved it.
    pub euid: u32,
    /// The supplementary groups, exactly (`None`: unchanged).
    pub groups: Option<Vec<libc::gid_t>>,
    /// The real, effective and saved gid (`None`: unchanged).
    pub gid: Option<u32>,
    /// The real, effective and saved uid (`None`: unchanged).
    pub uid: Option<u32>,
    /// Room for `getgroups(2)` in the child, for the read-back (as long as `groups`).
    pub scratch: std::cell::UnsafeCell<Vec<libc::gid_t>>,
}

/// Where in the child a spawn failed (for the error message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// `setsid(2)`.
    Setsid,
    /// Writing `0` to the cgroup's `cgroup.procs`.
    JoinCgroup,
    /// `dup2(2)` of the standard descriptors.
    Stdio,
    /// `chdir(2)` to the working directory.
    Chdir,
    /// `execve(2)`.
    Exec,
    /// The supervisor's `prctl(PR_SET_CHILD_SUBREAPER)`.
    Subreaper,
    /// The supervisor's `fork(2)` of the command.
    Fork,
    /// Taking the requested user and groups (`setgroups`, `setresgid`, `setresuid`, and their
    /// read-back: `EPERM` when the ids read back differ).
    Credentials,
    /// The spawner's reading of the held processes' start tokens (`held` answered false): the
    /// command was never executed (it exits 127 when its hold ends without the go byte).
    Record,
}

impl Stage {
    fn from_u8(b: u8) -> Stage {
        match b {
            1 => Stage::Setsid,
            2 => Stage::JoinCgroup,
            3 => Stage::Stdio,
            4 => Stage::Chdir,
            6 => Stage::Subreaper,
            7 => Stage::Fork,
            8 => Stage::Credentials,
            9 => Stage::Record,
            _ => Stage::Exec,
        }
    }
    fn code(self) -> u8 {
        match self {
            Stage::Setsid => 1,
            Stage::JoinCgroup => 2,
            Stage::Stdio => 3,
            Stage::Chdir => 4,
            Stage::Exec => 5,
            Stage::Subreaper => 6,
            Stage::Fork => 7,
            Stage::Credentials => 8,
            Stage::Record => 9,
        }
    }
    /// What the stage did, for messages.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Stage::Setsid => "setsid",
            Stage::JoinCgroup => "join the cgroup",
            Stage::Stdio => "set up stdio",
            Stage::Chdir => "change directory",
            Stage::Exec => "exec",
            Stage::Subreaper => "become a child subreaper",
            Stage::Fork => "fork the command",
            Stage::Credentials => "take the user and groups",
            Stage::Record => "read its start token before its exec (nothing was run)",
        }
    }
}

/// A failed spawn: where, and the errno.
#[derive(Debug)]
pub(crate) struct SpawnError {
    pub stage: Stage,
    pub error: io::Error,
}

impl From<io::Error> for SpawnError {
    fn from(error: io::Error) -> Self {
        SpawnError { stage: Stage::Fork, error }
    }
}

/// Null-terminated pointer arrays for `execve`, built before the fork.
struct Exec {
    argv: Vec<*const libc::c_char>,
    env: Vec<*const libc::c_char>,
}

fn exec_arrays(cmd: &Command<'_>) -> Exec {
    let mut argv: Vec<*const libc::c_char> = cmd.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut env: Vec<*const libc::c_char> = cmd.env.iter().map(|a| a.as_ptr()).collect();
    env.push(std::ptr::null());
    Exec { argv, env }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a writable array of two ints.
    #[cfg(not(target_os = "macos"))]
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } as i64)?;
    // macOS has no pipe2: the flag is set right after (see HoldPair::new).
    #[cfg(target_os = "macos")]
    // SAFETY: as above; fcntl on the two fresh descriptors.
    unsafe {
        cvt(libc::pipe(fds.as_mut_ptr()) as i64)?;
        for fd in fds {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    // SAFETY: two fresh descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The two ends of the hold before `execve` (see the module's doc): raw descriptors, both
/// close-on-exec, owned by [`HoldPair`] in the spawner.
#[derive(Clone, Copy)]
struct Hold {
    child: RawFd,
    spawner: RawFd,
}

/// The spawner's side of the hold.
struct HoldPair {
    child: OwnedFd,
    spawner: OwnedFd,
}

impl HoldPair {
    fn new() -> io::Result<HoldPair> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` is a writable array of two ints.
        #[cfg(not(target_os = "macos"))]
        cvt(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } as i64)?;
        // macOS has no SOCK_CLOEXEC: set right after (a fork by another thread in between
        // could inherit the ends until it execs).
        #[cfg(target_os = "macos")]
        // SAFETY: as above; fcntl on the two fresh descriptors.
        unsafe {
            cvt(libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) as i64)?;
            for fd in fds {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        // SAFETY: two fresh descriptors owned by nobody else.
        Ok(unsafe { HoldPair { child: OwnedFd::from_raw_fd(fds[0]), spawner: OwnedFd::from_raw_fd(fds[1]) } })
    }

    fn raw(&self) -> Hold {
        Hold { child: self.child.as_raw_fd(), spawner: self.spawner.as_raw_fd() }
    }

    /// Let the held command exec: one byte, without `SIGPIPE` if it is already gone.
    fn release(self) {
        drop(self.child);
        let go = [1u8];
        // SAFETY: a valid socket and a one-byte buffer. A failure (EPIPE: the child failed
        // before it was held) leaves nothing to release.
        unsafe { libc::send(self.spawner.as_raw_fd(), go.as_ptr().cast(), 1, libc::MSG_NOSIGNAL) };
    }
}

/// In a forked child: report (stage, errno) on `fd` and `_exit(127)`. Async-signal-safe.
fn child_fail(fd: RawFd, stage: Stage) -> ! {
    // SAFETY: errno location, write and _exit are async-signal-safe; `msg` lives on the stack.
    unsafe {
        // `last_os_error` reads errno (a thread-local) and allocates nothing.
        let e = io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        let mut msg = [0u8; 5];
        msg[0] = stage.code();
        msg[1..].copy_from_slice(&e.to_le_bytes());
        libc::write(fd, msg.as_ptr().cast(), msg.len());
        libc::_exit(127)
    }
}

/// In a forked child: become the command (new session, cgroup, stdio, cwd, default signals),
/// then `execve`. Never returns. Async-signal-safe only.
fn child_exec(cmd: &Command<'_>, ex: &Exec, report: RawFd, hold: Hold, born_in_cgroup: bool) -> ! {
    // SAFETY: every call below is async-signal-safe (signal-safety(7); prctl/close_range are
    // plain system calls); every pointer was built before the fork and is still valid in the
    // child's copy of the address space.
    unsafe {
        if libc::setsid() < 0 {
            child_fail(report, Stage::Setsid);
        }
        if let Some(procs) = cmd.join.filter(|_| !born_in_cgroup) {
            let zero = b"0";
            if libc::write(procs, zero.as_ptr().cast(), 1) != 1 {
                child_fail(report, Stage::JoinCgroup);
            }
        }
        for (target, fd) in cmd.stdio.iter().enumerate() {
            let fd = fd.as_raw_fd();
            if fd == target as RawFd {
                // Already in place: only clear close-on-exec.
                if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                    child_fail(report, Stage::Stdio);
                }
            } else if libc::dup2(fd, target as RawFd) < 0 {
                child_fail(report, Stage::Stdio);
            }
        }
        if let Some(d) = &cmd.cwd {
            if libc::chdir(d.as_ptr()) < 0 {
                child_fail(report, Stage::Chdir);
            }
        }
        // The identity last before the hold: the cgroup was joined (and its descriptors used)
        // with the spawner's rights, which the command never has.
        if let Some(ids) = cmd.ids {
            if !take_ids(ids) {
                child_fail(report, Stage::Credentials);
            }
        }
        // The command starts with default dispositions and nothing blocked, whatever the
        // spawner ignored or blocked (Python and Node ignore SIGPIPE; a supervisor blocks all).
        for s in 1..=last_signal() {
            if s != libc::SIGKILL && s != libc::SIGSTOP {
                libc::signal(s, libc::SIG_DFL);
            }
        }
        // Held until the spawner has read our identity (the module's doc). Only the spawner's
        // end can send the byte: ours is closed first.
        libc::close(hold.spawner);
        let mut go = 0u8;
        loop {
            let n = libc::read(hold.child, (&mut go as *mut u8).cast(), 1);
            if n == 1 {
                break;
            }
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // The spawner gave up (or is gone): never run unrecorded.
            libc::_exit(127);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::execve(cmd.program.as_ptr(), ex.argv.as_ptr(), ex.env.as_ptr());
        child_fail(report, Stage::Exec)
    }
}

/// In a forked child: take `ids` (see [`ChildIds`]) and read them back. Async-signal-safe (raw
/// system calls only). False with errno set when a call failed, or with `EPERM` when what was
/// read back is not what was asked.
#[cfg(target_os = "linux")]
fn take_ids(ids: &ChildIds) -> bool {
    let keep = u32::MAX as libc::c_ulong; // -1: "unchanged" to setresuid/setresgid
    // SAFETY: raw id system calls with plain integers, and getgroups/setgroups with buffers of
    // the lengths given (the scratch buffer is this child's own copy).
    unsafe {
        let set_errno = |e: i32| *libc::__errno_location() = e;
        if ids.regain && libc::syscall(libc::SYS_setresuid, keep, 0 as libc::c_ulong, keep) != 0 {
            return false;
        }
        if let Some(g) = &ids.groups {
            if libc::syscall(libc::SYS_setgroups, g.len() as libc::c_ulong, g.as_ptr()) != 0 {
                return false;
            }
        }
        if let Some(gid) = ids.gid {
            let g = gid as libc::c_ulong;
            if libc::syscall(libc::SYS_setresgid, g, g, g) != 0 {
                return false;
            }
        }
        let uid = match ids.uid {
            Some(u) => Some(u),
            None if ids.regain => {
                // Only the gids or groups were asked for: the effective uid goes back to
                // what it was (the real and saved ones were never touched).
                if libc::syscall(libc::SYS_setresuid, keep, ids.euid as libc::c_ulong, keep) != 0 {
                    return false;
                }
                None
            }
            None => None,
        };
        if let Some(u) = uid {
            let u = u as libc::c_ulong;
            if libc::syscall(libc::SYS_setresuid, u, u, u) != 0 {
                return false;
            }
        }
        // Read back: every id exactly as asked.
        let (mut r, mut e, mut s) = (0u32, 0u32, 0u32);
        let three = |a: u32, b: u32, c: u32, want: u32| a == want && b == want && c == want;
        if let Some(u) = ids.uid {
            if libc::syscall(libc::SYS_getresuid, &mut r as *mut u32, &mut e as *mut u32, &mut s as *mut u32) != 0 || !three(r, e, s, u) {
                set_errno(libc::EPERM);
                return false;
            }
        }
        if let Some(g) = ids.gid {
            if libc::syscall(libc::SYS_getresgid, &mut r as *mut u32, &mut e as *mut u32, &mut s as *mut u32) != 0 || !three(r, e, s, g) {
                set_errno(libc::EPERM);
                return false;
            }
        }
        if let Some(want) = &ids.groups {
            let buf = &mut *ids.scratch.get();
            let n = libc::syscall(libc::SYS_getgroups, buf.len() as libc::c_ulong, buf.as_mut_ptr());
            if n < 0 || n as usize != want.len() || !want.iter().all(|g| buf[..n as usize].contains(g)) {
                set_errno(libc::EPERM);
                return false;
            }
        }
        true
    }
}

/// No identity changes outside Linux (refused before the fork by `launch::run_as`).
#[cfg(not(target_os = "linux"))]
fn take_ids(_ids: &ChildIds) -> bool {
    false
}

/// Read the report pipe to its end: the messages the children wrote.
fn read_report(fd: &OwnedFd) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: `buf` is writable for its length; `fd` is valid.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            out.extend_from_slice(&buf[..n as usize]);
        } else if n == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return out;
        }
    }
}

pub(crate) fn reap(pid: i32) {
    let mut st = 0;
    loop {
        // SAFETY: `st` is writable; `pid` is our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

fn decode_failure(msg: &[u8]) -> Option<SpawnError> {
    if msg.len() < 5 {
        return None;
    }
    let errno = i32::from_le_bytes([msg[1], msg[2], msg[3], msg[4]]);
    Some(SpawnError { stage: Stage::from_u8(msg[0]), error: io::Error::from_raw_os_error(errno) })
}

/// `struct clone_args` of clone3(2) (Linux ≥ 5.3; `cgroup` ≥ 5.7): `CLONE_ARGS_SIZE_VER2`.
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `clone3(CLONE_INTO_CGROUP)`: fork a child born in the cgroup whose directory is `dir` (as
/// `fork`: 0 in the child, its pid in the parent; `SIGCHLD` at its exit). Errors: `ENOSYS`,
/// `E2BIG`, `EINVAL` where the kernel lacks it; `EPERM` under a seccomp filter; the cgroup's
/// own refusals (`EACCES`, `EBUSY`, `EOPNOTSUPP`).
#[cfg(target_os = "linux")]
fn clone_into_cgroup(dir: RawFd) -> io::Result<i32> {
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    let mut a = CloneArgs { flags: CLONE_INTO_CGROUP, exit_signal: libc::SIGCHLD as u64, cgroup: dir as u64, ..CloneArgs::default() };
    // SAFETY: clone3 without CLONE_VM is a fork: the child gets a copy of the address space and
    // runs only async-signal-safe code (child_exec) before it execs or exits; `a` is valid and
    // its size is passed.
    let r = unsafe { libc::syscall(libc::SYS_clone3, &mut a as *mut CloneArgs, std::mem::size_of::<CloneArgs>()) };
    cvt(r).map(|p| p as i32)
}

#[cfg(not(target_os = "linux"))]
fn clone_into_cgroup(_dir: RawFd) -> io::Result<i32> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Start `cmd` as our child, in a new session (it leads its own process group and has no
/// controlling terminal), in `cmd.join_dir`'s cgroup when given: born there by
/// `clone3(CLONE_INTO_CGROUP)`, else (an older kernel, a seccomp filter) joined by writing `0`
/// to `cmd.join` before it execs. `held` is
/// called with the child's pid while the child is held before its `execve` (it cannot have
/// exited by the command yet); when it answers false the child is never let go (it exits 127
/// without executing anything), is reaped, and the error's stage is [`Stage::Record`]. Returns
/// its pid once `execve` succeeded.
///
/// Errors: where the child failed and the errno (`ENOENT`/`EACCES` from `execve`, `EACCES`
/// or `EBUSY`/`EOPNOTSUPP` from the cgroup join); the child has been reaped then.
pub(crate) fn spawn(cmd: &Command<'_>, held: &mut dyn FnMut(i32) -> bool) -> Result<i32, SpawnError> {
    let ex = exec_arrays(cmd);
    let (rd, wr) = pipe()?;
    let hold = HoldPair::new()?;
    let h = hold.raw();
    // Born in the cgroup where the kernel allows: a child that writes `0` to `cgroup.procs`
    // waits for an RCU grace period in the kernel (~16 ms, most of a leaf's spawn cost).
    let (pid, born) = match cmd.join_dir.map(clone_into_cgroup) {
        Some(Ok(pid)) => (pid, true),
        // ENOSYS (before 5.3), E2BIG/EINVAL (no CLONE_INTO_CGROUP before 5.7), EPERM (a
        // seccomp filter), or any refusal of the cgroup: the fork and the write decide.
        // SAFETY: fork(2); the child runs only async-signal-safe code (child_exec) and never
        // returns into Rust code of the parent.
        _ => (cvt(unsafe { libc::fork() } as i64)? as i32, false),
    };
    if pid == 0 {
        child_exec(cmd, &ex, wr.as_raw_fd(), h, born);
    }
    drop(wr);
    if !held(pid) {
        drop(hold);
        reap(pid);
        return Err(SpawnError { stage: Stage::Record, error: io::Error::from_raw_os_error(libc::ECANCELED) });
    }
    hold.release();
    let msg = read_report(&rd);
    if let Some(e) = decode_failure(&msg) {
        reap(pid);
        return Err(e);
    }
    Ok(pid)
}

/// Start `cmd` under a supervisor: a child of ours that makes itself a child subreaper
/// (`PR_SET_CHILD_SUBREAPER`, Linux ≥ 3.4), starts the command (in a session of its own, as
/// [`spawn`]), and then only reaps — every descendant the command orphans becomes the
/// supervisor's child — until it has no child left, and ends as the command ended: its exit
/// code, or killed by the same signal (re-raised on itself with no core dump), so that its
/// parent's `waitpid`/`waitid` reads the command's own status. It blocks every signal it can (a `SIGTERM`
/// meant for the tree must not orphan the tree), leads a session of its own (a signal to the
/// spawner's group does not reach it), holds nothing of the spawner's (its descriptors are
/// closed, its stdio is `/dev/null`) and is named `pidguard-scope`: it execs the small program
/// of that name ([`supervisor_program`]; then it holds none of the spawner's memory), or, where
/// there is none, reaps in the fork itself.
///
/// `held` is called with (supervisor pid, command pid) while the command is held before its
/// `execve` (neither can have exited by the command yet). Returns (supervisor pid, command pid)
/// once the command has exec'd. Errors as [`spawn`]; the supervisor has been reaped then.
#[cfg(target_os = "linux")]
pub(crate) fn spawn_supervised(cmd: &Command<'_>, held: &mut dyn FnMut(i32, i32) -> bool) -> Result<(i32, i32), SpawnError> {
    let ex = exec_arrays(cmd);
    let (rd, wr) = pipe()?;
    let hold = HoldPair::new()?;
    let h = hold.raw();
    let name = b"pidguard-scope\0";
    // A spawner whose real and effective uids differ (root that lowered only its effective uid,
    // ids (0, U, 0)) starting the command as another identity keeps its supervisor a fork: an
    // exec would copy the effective uid into the saved one ((0, U, U)), and the command, running
    // as U, could then signal its supervisor (kill(2) matches the target's saved uid) and leave
    // its scope by killing it. The fork keeps (0, U, 0), out of the command's reach.
    // For the same reason its saved uid is set to its real one ((0, U, U) from a spawner that
    // set both, as `setpriv --euid` does, becomes (0, U, 0)).
    let (ruid, euid) = super::uids();
    let keep_out_of_reach = cmd.ids.is_some() && ruid != euid;
    let program = if keep_out_of_reach { None } else { supervisor_program() };
    // SAFETY: fork(2); the child runs only async-signal-safe code and ends in `_exit`.
    let sup = cvt(unsafe { libc::fork() } as i64)? as i32;
    if sup == 0 {
        // SAFETY: async-signal-safe calls only (see child_exec).
        unsafe {
            let w = wr.as_raw_fd();
            if libc::setsid() < 0 {
                child_fail(w, Stage::Setsid);
            }
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong) < 0 {
                child_fail(w, Stage::Subreaper);
            }
            libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
            #[cfg(target_os = "linux")]
            if keep_out_of_reach {
                let keep = u32::MAX as libc::c_ulong;
                if libc::syscall(libc::SYS_setresuid, keep, keep, ruid as libc::c_ulong) != 0 {
                    child_fail(w, Stage::Credentials);
                }
            }
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
            let child = libc::fork();
            if child < 0 {
                child_fail(w, Stage::Fork);
            }
            if child == 0 {
                // The command: its own session inside the supervisor's tree.
                child_exec(cmd, &ex, w, h, false);
            }
            // The hold is between the spawner and the command.
            libc::close(h.child);
            libc::close(h.spawner);
            let mut msg = [0u8; 5];
            msg[0] = b'P';
            msg[1..].copy_from_slice(&child.to_le_bytes());
            libc::write(w, msg.as_ptr().cast(), msg.len());
            // Hold nothing of the spawner's: stdio to /dev/null, every other descriptor closed
            // (the command keeps its own copies; the report pipe's last writer is then the
            // command until it execs).
            let null = cmd.devnull.as_raw_fd();
            for t in 0..3 {
                libc::dup2(null, t);
            }
            libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, libc::c_uint::MAX, 0 as libc::c_uint);
            // Become the small supervisor program: nothing of the spawner's memory is kept
            // (the subreaper flag, the session, the signal mask and the children survive the
            // exec). Where it cannot be exec'd, this fork reaps as the program would.
            if let Some(prog) = &program {
                let mut digits = [0u8; 12];
                let mut n = child as u32;
                let mut i = digits.len() - 1; // digits[11] stays NUL
                loop {
                    i -= 1;
                    digits[i] = b'0' + (n % 10) as u8;
                    n /= 10;
                    if n == 0 {
                        break;
                    }
                }
                let argv = [prog.as_ptr(), digits[i..].as_ptr().cast::<libc::c_char>(), std::ptr::null()];
                let envp: [*const libc::c_char; 1] = [std::ptr::null()];
                libc::execve(prog.as_ptr(), argv.as_ptr(), envp.as_ptr());
            }
            let mut code = 0;
            let mut killed_by = 0;
            loop {
                let mut st = 0;
                let r = libc::waitpid(-1, &mut st, 0);
                if r == child {
                    if libc::WIFEXITED(st) {
                        (code, killed_by) = (libc::WEXITSTATUS(st), 0);
                    } else if libc::WIFSIGNALED(st) {
                        (code, killed_by) = (128 + libc::WTERMSIG(st), libc::WTERMSIG(st));
                    }
                } else if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    break;
                }
            }
            // Killed by a signal: end by the same signal (as the supervisor program does: no
            // core dump, default action, unblocked, raised), so that our parent reads the
            // command's own status.
            if killed_by > 0 {
                libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
                let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                libc::signal(killed_by, libc::SIG_DFL);
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, killed_by);
                libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
                libc::kill(libc::getpid(), killed_by);
            }
            libc::_exit(code)
        }
    }
    drop(wr);
    // Until the command's pid (or a failure, or the end) is known; then the command is released.
    let mut msg = Vec::new();
    let told = |m: &[u8]| m.chunks_exact(5).any(|c| c[0] == b'P' || decode_failure(c).is_some());
    while !told(&msg) {
        let mut buf = [0u8; 64];
        // SAFETY: `buf` is writable for its length; `rd` is valid.
        let n = unsafe { libc::read(rd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            msg.extend_from_slice(&buf[..n as usize]);
        } else if n == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    if let Some(m) = msg.chunks_exact(5).find(|c| c[0] == b'P') {
        if !held(sup, i32::from_le_bytes([m[1], m[2], m[3], m[4]])) {
            // Never let go: the command exits 127 unexecuted, the supervisor, its tree empty,
            // exits after reaping it.
            drop(hold);
            reap(sup);
            return Err(SpawnError { stage: Stage::Record, error: io::Error::from_raw_os_error(libc::ECANCELED) });
        }
    }
    hold.release();
    msg.extend(read_report(&rd));
    // Five-byte messages in any order: `P` and the command's pid from the supervisor, or a
    // failure (stage, errno) from either child.
    let mut cmd_pid = 0;
    let mut failure = None;
    for m in msg.chunks_exact(5) {
        if m[0] == b'P' {
            cmd_pid = i32::from_le_bytes([m[1], m[2], m[3], m[4]]);
        } else if failure.is_none() {
            failure = decode_failure(m);
        }
    }
    if let Some(e) = failure {
        reap(sup);
        return Err(e);
    }
    if cmd_pid <= 0 {
        reap(sup);
        return Err(SpawnError { stage: Stage::Fork, error: io::Error::from_raw_os_error(libc::EIO) });
    }
    Ok((sup, cmd_pid))
}

/// The name of the supervisor program [`spawn_supervised`] execs (`core/src/bin/pidguard-scope.rs`).
#[cfg(target_os = "linux")]
pub(crate) const SUPERVISOR_PROGRAM: &str = "pidguard-scope";

/// Where the supervisor program is, looked for before the fork: beside the shared object that
/// holds this code (`dladdr`: `libpidguard.so`, the Python extension module, the Node addon),
/// then beside the running executable (the `pidguard` CLI, a Rust program; and the directory
/// above a cargo `deps` directory, where tests run). The first candidate that passes
/// [`trusted_program`] is used; `None` when none does: the supervisor is then the fork itself
/// (the same reaping loop, without the exec).
#[cfg(target_os = "linux")]
fn supervisor_program() -> Option<CString> {
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;
    let mut dirs: Vec<PathBuf> = Vec::new();
    // SAFETY: dladdr fills `info` for an address inside a loaded object; `info` is zeroed
    // plain data and `dli_fname`, when set, is a NUL-terminated path owned by the loader.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(supervisor_program as *const libc::c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            let p = PathBuf::from(std::ffi::OsStr::from_bytes(std::ffi::CStr::from_ptr(info.dli_fname).to_bytes()));
            if let Some(d) = p.parent().filter(|_| p.is_absolute()) {
                dirs.push(d.to_path_buf());
            }
        }
    }
    if let Some(d) = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.to_path_buf())) {
        let above_deps = d.file_name().is_some_and(|n| n == "deps").then(|| d.parent().map(|p| p.to_path_buf())).flatten();
        dirs.push(d);
        dirs.extend(above_deps);
    }
    let root_only = super::creds::root_or_capable();
    let (_, euid) = super::uids();
    dirs.iter().find_map(|d| trusted_program(&d.join(SUPERVISOR_PROGRAM), root_only, euid))
}

/// `path` as the supervisor program may exec it, or `None`. Always: a regular executable file
/// (not a symlink) that no group or other may write.
///
/// - `root_only` (the caller is root, can become root again, or holds a capability: see
///   `creds::root_or_capable`): the file must be owned by root, and so must every directory
///   from `/` down to it, each a real directory (the path is made canonical first and then each
///   component checked with `lstat`: no symlink on the way) that no group or other may write
///   — or, if they may, that has the sticky bit (then only root, the owner of the directory and
///   of the entry in it, can rename or remove that entry). No one but root can then replace the
///   program or any directory on its way between this check and the `execve` (which uses the
///   canonical path checked). Otherwise a user who owns the program (or a directory on its
///   path) could make, say, ArchiveBox running as (0, 999, 0) exec the user's code with a real
///   uid of 0, which `setresuid(0, 0, 0)` turns into root. POSIX ACLs show their mask in the
///   group bits, so an ACL that grants writing is refused too.
/// - otherwise (a plain user): owned by root or by the caller's effective uid (the program runs
///   with no more than the caller's own rights).
#[cfg(target_os = "linux")]
fn trusted_program(path: &std::path::Path, root_only: bool, euid: u32) -> Option<CString> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    let file_ok = |m: &std::fs::Metadata, owners: &[u32]| m.file_type().is_file() && m.mode() & 0o111 != 0 && m.mode() & 0o022 == 0 && owners.contains(&m.uid());
    if !root_only {
        return file_ok(&m, &[0, euid]).then(|| CString::new(path.as_os_str().as_bytes()).ok()).flatten();
    }
    let real = std::fs::canonicalize(path).ok()?;
    let m = std::fs::symlink_metadata(&real).ok()?;
    if !file_ok(&m, &[0]) {
        return None;
    }
    for dir in real.ancestors().skip(1) {
        let d = std::fs::symlink_metadata(dir).ok()?;
        let writable_by_others = d.mode() & 0o022 != 0 && d.mode() & 0o1000 == 0;
        if !d.file_type().is_dir() || d.uid() != 0 || writable_by_others {
            return None;
        }
    }
    CString::new(real.as_os_str().as_bytes()).ok()
}

/// A supervisor needs `PR_SET_CHILD_SUBREAPER` (Linux): elsewhere it fails with `ENOSYS`
/// (FreeBSD's `procctl(PROC_REAP_ACQUIRE)` would be its twin: not built).
#[cfg(not(target_os = "linux"))]
pub(crate) fn spawn_supervised(_cmd: &Command<'_>, _held: &mut dyn FnMut(i32, i32) -> bool) -> Result<(i32, i32), SpawnError> {
    Err(SpawnError { stage: Stage::Subreaper, error: io::Error::from_raw_os_error(libc::ENOSYS) })
}

/// The highest signal number whose disposition a spawned command gets reset to the default.
fn last_signal() -> i32 {
    #[cfg(target_os = "linux")]
    return libc::SIGRTMAX();
    #[cfg(not(target_os = "linux"))]
    return 31;
}
