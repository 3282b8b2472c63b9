//! `kill(2)` and `killpg`: signals by number, for targets the caller has already checked.

use std::io;

use nix::sys::signal::Signal as NixSignal;
use nix::unistd::Pid;

use super::errno::cvt;
use super::fault::{self, Call};

/// `kill(target, sig)` for a target already checked by the caller (a pid > 1, or `-pgid`).
/// nix's `kill`/`killpg` take its own `Signal` enum, which has no real-time signals
/// (SIGRTMIN..=SIGRTMAX); those, which our `Signal` allows, go through raw `libc::kill`.
fn send(target: i32, sig: i32) -> io::Result<()> {
    match NixSignal::try_from(sig) {
        Ok(s) if target > 0 => Ok(nix::sys::signal::kill(Pid::from_raw(target), s)?),
        // killpg(3) is kill(2) with the group negated; the caller asserted pgid > 1.
        Ok(s) => Ok(nix::sys::signal::killpg(Pid::from_raw(-target), s)?),
        // SAFETY: plain system call; `target` is a checked pid or a negated group > 1.
        Err(_) => cvt(unsafe { libc::kill(target, sig) } as libc::c_long).map(drop),
    }
}

/// `kill(pid, 0)`: does a process with this pid exist (`Ok` or `EPERM`: yes; `ESRCH`: no)?
/// Sends nothing.
pub(crate) fn kill_probe(pid: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pid > 0, "pidguard bug: kill({pid}, 0) reached the system-call layer");
    // `None` is signal 0: only existence and permission are checked.
    Ok(nix::sys::signal::kill(Pid::from_raw(pid), None)?)
}

/// `kill(2)`. Callers have already refused pid ≤ 0, pid 1 and their own pid (see `signal::guard`).
pub(crate) fn kill(pid: i32, sig: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pid > 1, "pidguard bug: kill({pid}) reached the system-call layer");
    send(pid, sig)
}

/// `kill(-pgid, sig)`, i.e. `killpg(pgid, sig)`. Callers have refused group ≤ 1 and their own group.
pub(crate) fn killpg(pgid: i32, sig: i32) -> io::Result<()> {
    fault::check(Call::Kill)?;
    assert!(pgid > 1, "pidguard bug: killpg({pgid}) reached the system-call layer");
    send(-pgid, sig)
}
