//! Status codes, `pidguard_strerror` and the per-thread last error.

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

use pidguard_core::ErrorKind;

use crate::boundary::{run_value, text_out};
use crate::last_error::{last_errno, last_refusal, status_of, with_last_message};
use crate::types::pidguard_refusal;

/// The status every pidguard function returns: 0, or the negation of a stable error-kind code.
///
/// The values come from one table in pidguard's core (`ErrorKind`), shared with the Python and
/// Node bindings: `PIDGUARD_E<KIND>` is `-code` of that kind (Python `pidguard.<Kind>Error`,
/// Node `code 'PIDGUARD_<KIND>'`). Codes are never renumbered; new kinds are appended, so treat
/// any other negative value as an error too. Functions return `int`; this enum names the
/// values. A verdict (`PIDGUARD_VERDICT_GONE`) or an outcome (`PIDGUARD_OUTCOME_UNKILLABLE`) is
/// a result, never a status: a status < 0 means "pidguard could not answer".
///
/// Some statuses refine a broader one: PIDGUARD_ESYMLINK ... PIDGUARD_ETOO_LARGE say which rule
/// refused a file (family PIDGUARD_EUNTRUSTED), PIDGUARD_EINVALID_JSON, PIDGUARD_EBAD_PID and
/// PIDGUARD_EBAD_TOKEN which rule its content broke (family PIDGUARD_EMALFORMED).
/// pidguard_status_family() maps a status to its family, for code that handles them alike.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, dead_code)]
pub enum pidguard_status {
    /// Success.
    PIDGUARD_OK = 0,
    /// An argument is NULL where a value is required, or out of its documented range: a pid
    /// outside 1 to 4194304, a non-finite time, a malformed schedule or start token, a string that
    /// must be UTF-8 and is not, an index past the end.
    PIDGUARD_EINVALID_ARGUMENT = -1,
    /// A file or directory that must exist does not (ENOENT).
    PIDGUARD_ENOT_FOUND = -2,
    /// A file that must not exist does (EEXIST).
    PIDGUARD_EALREADY_EXISTS = -3,
    /// A file's content is not what its format allows.
    PIDGUARD_EMALFORMED = -4,
    /// A file was refused before its content was trusted: a symlink, FIFO, directory, hard
    /// link, insecure mode or owner, or too large.
    PIDGUARD_EUNTRUSTED = -5,
    /// No process has this pid, or it has exited (ESRCH).
    PIDGUARD_ENO_SUCH_PROCESS = -6,
    /// The kernel refused the operation (EPERM, EACCES).
    PIDGUARD_EPERMISSION_DENIED = -7,
    /// A wait ran past its deadline (ETIMEDOUT).
    PIDGUARD_ETIMED_OUT = -8,
    /// A guard pidfile is held by a live process.
    PIDGUARD_EHELD = -9,
    /// A guard pidfile no longer holds the record that was to be replaced.
    PIDGUARD_ESUPERSEDED = -10,
    /// The kernel or file system lacks a needed feature (ENOSYS, EOPNOTSUPP).
    PIDGUARD_EUNSUPPORTED = -11,
    /// Signalling was refused by a safety rule or the policy.
    PIDGUARD_EREFUSED = -12,
    /// Any other operating-system error; pidguard_last_error_errno() says which.
    PIDGUARD_EIO = -13,
    /// A panic was caught at the C boundary: a bug in pidguard (please report it). Nothing
    /// unwound into the caller.
    PIDGUARD_EPANIC = -14,
    /// A symlink where a pidfile must be: never followed (ELOOP). Refines PIDGUARD_EUNTRUSTED.
    PIDGUARD_ESYMLINK = -15,
    /// A directory where a pidfile must be (EISDIR). Refines PIDGUARD_EUNTRUSTED.
    PIDGUARD_EIS_DIRECTORY = -16,
    /// A FIFO, socket or device node where a pidfile must be; refused without blocking.
    /// Refines PIDGUARD_EUNTRUSTED.
    PIDGUARD_ENOT_REGULAR_FILE = -17,
    /// A pidfile with more than one link: another name for it may be someone else's. Refines
    /// PIDGUARD_EUNTRUSTED.
    PIDGUARD_EHARD_LINKED = -18,
    /// A pidfile that group or others may read or write (mode not within 0600). Refines
    /// PIDGUARD_EUNTRUSTED.
    PIDGUARD_EINSECURE_MODE = -19,
    /// A pidfile larger than its format allows (4096 bytes for a guard pidfile). Refines
    /// PIDGUARD_EUNTRUSTED.
    PIDGUARD_ETOO_LARGE = -20,
    /// Guard pidfile content that is not one JSON object of string members (bad syntax, not
    /// UTF-8, a duplicate member, a non-string field). Refines PIDGUARD_EMALFORMED.
    PIDGUARD_EINVALID_JSON = -21,
    /// A guard record whose pid is missing, not an integer, not positive or above pid_max.
    /// Refines PIDGUARD_EMALFORMED.
    PIDGUARD_EBAD_PID = -22,
    /// A guard record whose start token is missing, not a string, empty, or (where it is
    /// judged) not a pidguard start token. Refines PIDGUARD_EMALFORMED.
    PIDGUARD_EBAD_TOKEN = -23,
}

/// The broad status that `status` refines: PIDGUARD_EUNTRUSTED for PIDGUARD_ESYMLINK,
/// PIDGUARD_EIS_DIRECTORY, PIDGUARD_ENOT_REGULAR_FILE, PIDGUARD_EHARD_LINKED,
/// PIDGUARD_EINSECURE_MODE and PIDGUARD_ETOO_LARGE; PIDGUARD_EMALFORMED for
/// PIDGUARD_EINVALID_JSON, PIDGUARD_EBAD_PID and PIDGUARD_EBAD_TOKEN; `status` itself for every
/// other value (0, the other statuses, and values this library does not know). Thread-safe.
#[no_mangle]
pub extern "C" fn pidguard_status_family(status: c_int) -> c_int {
    run_value(status, || match ErrorKind::from_code(-status) {
        Some(k) if status < 0 => status_of(k.family()),
        _ => status,
    })
}

/// The text of every status: "success", then each kind's slug with spaces, in code order.
fn texts() -> &'static [(c_int, CString)] {
    static TEXTS: OnceLock<Vec<(c_int, CString)>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        let mut v = vec![(0, c"success".to_owned())];
        for k in ErrorKind::ALL {
            let text = k.slug().replace('-', " ");
            v.push((status_of(*k), CString::new(text).unwrap_or_default()));
        }
        v
    })
}

/// A short English name of `status` ("no such process"), for messages and logs.
///
/// - `status`: 0 or a value returned by a pidguard function.
///
/// Returns a NUL-terminated string in static storage: never NULL, never to be freed, valid for
/// the life of the process. An unknown value gives "unknown pidguard status". Thread-safe.
#[no_mangle]
pub extern "C" fn pidguard_strerror(status: c_int) -> *const c_char {
    static UNKNOWN: &std::ffi::CStr = c"unknown pidguard status";
    run_value(UNKNOWN.as_ptr(), || {
        texts().iter().find(|(s, _)| *s == status).map(|(_, t)| t.as_ptr()).unwrap_or(UNKNOWN.as_ptr())
    })
}

/// Copy the message of the calling thread's most recent failure into `buf`, like `snprintf`.
///
/// - `buf`: where to write; may be NULL when `buf_len` is 0 (to ask for the length).
/// - `buf_len`: size of `buf` in bytes, including room for the terminating NUL.
///
/// Returns the full length of the message in bytes, not counting the NUL, whatever `buf_len`
/// is: when the result is >= `buf_len`, the copy was truncated (at a UTF-8 character boundary,
/// always NUL-terminated when `buf_len` > 0). Returns 0 and writes "" when no pidguard call on
/// this thread has failed yet. `pidguard_last_error_message(NULL, 0)` returns the length only,
/// so a buffer of that length + 1 holds the whole message.
///
/// The message is kept per thread: a failure on another thread never changes it. Like errno,
/// it is set by each call that returns a negative status (and by `pidguard_terminate` for the
/// REFUSED and ERROR outcomes) and is left unchanged by calls that succeed.
#[no_mangle]
pub extern "C" fn pidguard_last_error_message(buf: *mut c_char, buf_len: usize) -> usize {
    // A NULL `buf` only asks for the length, whatever `buf_len` says.
    let text = text_out(buf, if buf.is_null() { 0 } else { buf_len }, "buf");
    run_value(0, || with_last_message(|m| text.map_or(0, |t| t.write(m))))
}

/// The errno of the calling thread's most recent failure, when it came from a system call or
/// its kind has a natural one (ENOENT for PIDGUARD_ENOT_FOUND); 0 when there is none or no
/// call has failed on this thread. Same lifetime rules as pidguard_last_error_message().
#[no_mangle]
pub extern "C" fn pidguard_last_error_errno() -> c_int {
    run_value(0, last_errno)
}

/// The rule behind the calling thread's most recent failure when it was PIDGUARD_EREFUSED
/// (PIDGUARD_REFUSAL_INIT, PIDGUARD_REFUSAL_MISMATCH, ...); PIDGUARD_REFUSAL_NONE for any other
/// failure or when no call has failed on this thread. Same lifetime rules as
/// pidguard_last_error_message().
#[no_mangle]
pub extern "C" fn pidguard_last_error_refusal() -> pidguard_refusal {
    run_value(pidguard_refusal::PIDGUARD_REFUSAL_NONE, || last_refusal().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_distinct_text() {
        let mut seen = std::collections::HashSet::new();
        for (s, t) in texts() {
            assert!(seen.insert(t.clone()), "duplicate text for {s}");
        }
        assert_eq!(texts().len(), ErrorKind::ALL.len() + 1);
    }
}
