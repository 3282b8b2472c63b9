//! Fault injection for tests: make the next calls of one system call fail with a chosen errno.
//!
//! The table is thread-local, so tests running in parallel do not see each other's faults, and
//! pidguard's waits run on the calling thread. Not for production use.

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
}

thread_local! {
    static FAULTS: RefCell<Vec<(Call, i32)>> = const { RefCell::new(Vec::new()) };
    static CALLS: RefCell<Vec<Call>> = const { RefCell::new(Vec::new()) };
}

/// Make every later `call` on this thread fail with `errno`, until [`clear`].
pub fn inject(call: Call, errno: i32) {
    FAULTS.with(|f| f.borrow_mut().push((call, errno)));
}

/// Remove every injected fault on this thread and forget the recorded calls.
pub fn clear() {
    FAULTS.with(|f| f.borrow_mut().clear());
    CALLS.with(|c| c.borrow_mut().clear());
}

/// How many times `call` was attempted on this thread since the last [`clear`].
pub fn count(call: Call) -> usize {
    CALLS.with(|c| c.borrow().iter().filter(|&&x| x == call).count())
}

pub(crate) fn check(call: Call) -> io::Result<()> {
    CALLS.with(|c| {
        let mut c = c.borrow_mut();
        // Bounded: tests look at recent calls only.
        if c.len() > 100_000 {
            c.clear();
        }
        c.push(call)
    });
    match FAULTS.with(|f| f.borrow().iter().find(|(c, _)| *c == call).map(|&(_, e)| e)) {
        Some(errno) => Err(io::Error::from_raw_os_error(errno)),
        None => Ok(()),
    }
}
