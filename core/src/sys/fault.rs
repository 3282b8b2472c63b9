//! Fault injection for tests: make the next calls of one system call fail with a chosen errno.
//!
//! The table is thread-local, so tests running in parallel do not see each other's faults, and
//! pidguard's waits run on the calling thread. Compiled in only with the `fault-injection`
//! feature (pidguard's own tests turn it on); otherwise its seams (`check`, `point`) are empty and
//! cost nothing.

#[cfg(feature = "fault-injection")]
use std::cell::RefCell;
use std::io;

/// A system call of the `sys` layer that can be made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `pidfd_open(2)`.
    PidfdOpen,
    /// `pidfd_send_signal(2)` without flags.
    PidfdSignal,
    /// `pidfd_send_signal(2)` with `PIDFD_SIGNAL_PROCESS_GROUP`.
    PidfdSignalGroup,
    /// `kill(2)` and `killpg(3)`.
    Kill,
    /// `waitid(2)`.
    Waitid,
    /// `fgetxattr(2)`.
    Getxattr,
    /// `fsetxattr(2)`.
    Setxattr,
    /// `open(2)` with `O_TMPFILE` (guard pidfiles fall back to a named temporary without it).
    OpenTmpfile,
    /// Every read of a live process's procfs files (`/proc/<pid>/stat`, `status`, `cmdline`,
    /// the `/proc/<pid>` directory) on the identity path.
    ProcRead,
    /// `fstat(2)`/`fstatfs(2)` of a pidfd (its pidfs inode).
    PidfdStat,
    /// `poll(2)` of pidfds.
    Poll,
    /// The `openat(2)` of a hook's log by cleanup's default finalize.
    LogOpen,
    /// The reads of the machine's facts: `/proc/sys/kernel/random/boot_id` and
    /// `/proc/self/ns/pid` (as when `/proc` is not mounted). Only reads not yet cached fail:
    /// a test that injects it runs in a fresh process (a forked child) or before any read.
    MachineFact,
    /// `std::thread::Builder::spawn` of pidguard's own threads (a cleanup's pool, the CLI's
    /// spinner): fails as under a pids limit (`EAGAIN`).
    ThreadSpawn,
}

#[cfg(feature = "fault-injection")]
thread_local! {
    static FAULTS: RefCell<Vec<(Call, i32)>> = const { RefCell::new(Vec::new()) };
    static CALLS: RefCell<Vec<Call>> = const { RefCell::new(Vec::new()) };
}

#[cfg(feature = "fault-injection")]
/// Make every later `call` on this thread fail with `errno`, until [`clear`].
pub fn inject(call: Call, errno: i32) {
    FAULTS.with(|f| f.borrow_mut().push((call, errno)));
}

#[cfg(feature = "fault-injection")]
/// Remove every injected fault on this thread and forget the recorded calls.
pub fn clear() {
    FAULTS.with(|f| f.borrow_mut().clear());
    CALLS.with(|c| c.borrow_mut().clear());
}

#[cfg(feature = "fault-injection")]
/// How many times `call` was attempted on this thread since the last [`clear`].
pub fn count(call: Call) -> usize {
    CALLS.with(|c| c.borrow().iter().filter(|&&x| x == call).count())
}

/// The faults injected on this thread, for [`install`] on another (a cleanup's pool threads
/// take the calling thread's faults with them).
#[cfg(feature = "fault-injection")]
pub(crate) fn snapshot() -> Vec<(Call, i32)> {
    FAULTS.with(|f| f.borrow().clone())
}

/// Inject `faults` on this thread (see [`snapshot`]).
#[cfg(feature = "fault-injection")]
pub(crate) fn install(faults: &[(Call, i32)]) {
    FAULTS.with(|f| f.borrow_mut().extend_from_slice(faults));
}

/// Without fault injection there is nothing to carry over.
#[cfg(not(feature = "fault-injection"))]
pub(crate) fn snapshot() -> Vec<(Call, i32)> {
    Vec::new()
}

/// Without fault injection there is nothing to install.
#[cfg(not(feature = "fault-injection"))]
pub(crate) fn install(_faults: &[(Call, i32)]) {}

#[cfg(feature = "fault-injection")]
pub(crate) fn check(call: Call) -> io::Result<()> {
    // try_with: during thread (or process) teardown the table is gone, and there is no fault.
    let _ = CALLS.try_with(|c| {
        let mut c = c.borrow_mut();
        // Bounded: tests look at recent calls only.
        if c.len() > 100_000 {
            c.clear();
        }
        c.push(call)
    });
    match FAULTS.try_with(|f| f.borrow().iter().find(|(c, _)| *c == call).map(|&(_, e)| e)).ok().flatten() {
        Some(errno) => Err(io::Error::from_raw_os_error(errno)),
        None => Ok(()),
    }
}

#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn check(_call: Call) -> io::Result<()> {
    Ok(())
}

/// A place in pidguard where a test can run code of its own, to play a racing process at the
/// worst moment deterministically instead of hoping to hit a window of microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// A record (an abx-dl pidfile judged stale or whose process stopped, or a guard record being
    /// removed) was compared unchanged; it is about to be renamed aside and taken away.
    BeforePidfileRemove,
    /// Cleanup judged a hook (and listed its directory); it is about to retire its record and
    /// finalize it.
    BeforeHookFinish,
    /// A uid-restricted group signal checked one member's uid (through its pidfd); that
    /// member's signal is next (the residual window between check and signal).
    BeforeMemberSignal,
    /// A scope's member walk listed a process (in `cgroup.procs`, or in a parent's `children`)
    /// and is about to pin it with a pidfd (the window the walk's re-check after pinning closes).
    BeforeScopePin,
    /// `launch::spawn` started the command (in its scope); its pidfile is about to be written.
    BeforeSpawnRecord,
    /// `launch::record_existing_scoped` (`pidguard write --adopt`) moved the pinned process into
    /// its leaf; the move is about to be verified and the record written (the window a pid
    /// reuse would fall in).
    AfterAdoptMove,
}

#[cfg(feature = "fault-injection")]
type PointHook = Box<dyn FnMut(Point)>;

#[cfg(feature = "fault-injection")]
thread_local! {
    static POINTS: RefCell<Option<PointHook>> = const { RefCell::new(None) };
}

#[cfg(feature = "fault-injection")]
/// Run `hook` (on this thread) every time pidguard reaches one of the [`Point`]s, until
/// [`clear_point_hook`].
pub fn set_point_hook(hook: impl FnMut(Point) + 'static) {
    POINTS.with(|p| *p.borrow_mut() = Some(Box::new(hook)));
}

#[cfg(feature = "fault-injection")]
/// Remove the hook set by [`set_point_hook`].
pub fn clear_point_hook() {
    POINTS.with(|p| *p.borrow_mut() = None);
}

#[cfg(feature = "fault-injection")]
pub(crate) fn point(at: Point) {
    // Taken out while it runs, so a hook that calls into pidguard does not re-enter itself.
    let hook = POINTS.try_with(|p| p.borrow_mut().take()).ok().flatten();
    if let Some(mut h) = hook {
        h(at);
        let _ = POINTS.try_with(|p| {
            let mut slot = p.borrow_mut();
            if slot.is_none() {
                *slot = Some(h);
            }
        });
    }
}

#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn point(_at: Point) {}
