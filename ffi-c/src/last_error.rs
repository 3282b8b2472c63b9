//! The calling thread's last error and the status of an error kind: the leaf every other
//! module of the C shell stands on (the boundary records failures here, `status.rs` exports
//! their accessors to C), so that no two modules import each other.

use std::cell::RefCell;
use std::ffi::c_int;

use pidguard_core::guard::Verdict as GuardVerdict;
use pidguard_core::{Error, ErrorKind, Refusal};

/// The C status of an error kind: `-kind.code()`. Mechanical, so a kind appended to core's table
/// gets its status without any change here (the header parity test asks for its name).
pub(crate) fn status_of(kind: ErrorKind) -> c_int {
    -kind.code()
}

struct LastError {
    message: String,
    errno: c_int,
    /// The holder named by a `Held` error, while that error is the thread's last one.
    held: Option<GuardVerdict>,
    /// The rule behind a `Refused` error, while that error is the thread's last one.
    refusal: Option<Refusal>,
}

thread_local! {
    static LAST: RefCell<LastError> = const { RefCell::new(LastError { message: String::new(), errno: 0, held: None, refusal: None }) };
}

/// Record the calling thread's last error. NUL bytes are replaced so that C sees one string.
/// Forgets the holder of an earlier `Held` error.
pub(crate) fn set_last_error(message: &str, errno: Option<i32>) {
    set_last(message, errno, None, None);
}

/// Record a failed call's error as the calling thread's last one, with the holder of a `Held`
/// error (pidguard_last_held()) and the rule of a `Refused` one (pidguard_last_error_refusal()).
pub(crate) fn set_last_failure(e: &Error) {
    set_last(e.message(), e.errno(), e.holder().cloned(), e.refusal());
}

fn set_last(message: &str, errno: Option<i32>, held: Option<GuardVerdict>, refusal: Option<Refusal>) {
    let text = message.replace('\0', "?");
    // try_with: during thread teardown the slot may be gone; losing the message beats aborting.
    let _ = LAST.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            l.message = text;
            l.errno = errno.unwrap_or(0);
            l.held = held;
            l.refusal = refusal;
        }
    });
}

/// The holder carried by the calling thread's last error, if it was `Held`.
pub(crate) fn last_held() -> Option<GuardVerdict> {
    LAST.try_with(|l| l.try_borrow().ok().and_then(|l| l.held.clone())).ok().flatten()
}

/// Run `f` on the calling thread's last error message ("" when none); 0 when the slot is gone
/// (thread teardown).
pub(crate) fn with_last_message(f: impl FnOnce(&str) -> usize) -> usize {
    LAST.try_with(|l| f(&l.borrow().message)).unwrap_or(0)
}

/// The errno of the calling thread's last error (0: none).
pub(crate) fn last_errno() -> c_int {
    LAST.try_with(|l| l.borrow().errno).unwrap_or(0)
}

/// The rule behind the calling thread's last error, if it was `Refused`.
pub(crate) fn last_refusal() -> Option<Refusal> {
    LAST.try_with(|l| l.borrow().refusal).ok().flatten()
}
