//! The one error type of pidguard and its stable list of kinds.
//!
//! An error means "pidguard could not answer": a verdict such as [`crate::Verdict::Gone`] or an
//! outcome such as [`crate::Outcome::Unkillable`] is a value, never an error.
//!
//! Every kind is defined once, in the table of the `error_kinds!` macro below, with its slug
//! (used by Python class names and the Node `code`), its C status code (`-code`), and the errno
//! it carries when the failure has no errno of its own. Codes are never renumbered; a retired
//! kind keeps its number reserved. Bindings derive their lists from [`ErrorKind::ALL`] and check
//! parity in their tests.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

macro_rules! error_kinds {
    ($( $(#[$doc:meta])* $name:ident = $code:literal, $slug:literal, $errno:expr; )*) => {
        /// What went wrong, as a stable value that every binding maps mechanically.
        ///
        /// The numeric code (see [`ErrorKind::code`]) is the C status negated: `PIDGUARD_E<SLUG>`
        /// = `-code`. Codes are stable across releases.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorKind {
            $( $(#[$doc])* $name, )*
        }

        impl ErrorKind {
            /// Every kind, in code order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$name),*];

            /// The stable positive code of this kind; the C status is its negation.
            pub const fn code(self) -> i32 {
                match self { $(ErrorKind::$name => $code,)* }
            }

            /// The stable slug: lowercase words joined by `-` (`"no-such-process"`).
            pub const fn slug(self) -> &'static str {
                match self { $(ErrorKind::$name => $slug,)* }
            }

            /// The errno this kind stands for when the failure carries none of its own, if any.
            pub const fn default_errno(self) -> Option<i32> {
                match self { $(ErrorKind::$name => $errno,)* }
            }

            /// The kind whose [`code`](Self::code) is `code`, if any.
            pub fn from_code(code: i32) -> Option<ErrorKind> {
                match code { $($code => Some(ErrorKind::$name),)* _ => None }
            }
        }
    };
}

error_kinds! {
    /// An argument is out of its documented range: a pid ≤ 0 or above 4194304 (`PID_MAX_LIMIT`), a non-finite
    /// time, a malformed schedule or token string.
    InvalidArgument = 1, "invalid-argument", Some(libc::EINVAL);
    /// A file that must exist does not (`ENOENT`).
    NotFound = 2, "not-found", Some(libc::ENOENT);
    /// A file that must not exist does (`EEXIST`); a guard `create` that lost the race.
    AlreadyExists = 3, "already-exists", Some(libc::EEXIST);
    /// A file's content is not what its format allows (bad JSON, a pid that is not one decimal
    /// number, an empty token).
    Malformed = 4, "malformed", None;
    /// A file is refused before its content is trusted: a symlink, FIFO, directory, hard link,
    /// insecure mode or owner, or too large.
    Untrusted = 5, "untrusted", None;
    /// No process has this pid (`ESRCH`).
    NoSuchProcess = 6, "no-such-process", Some(libc::ESRCH);
    /// The kernel refused the operation (`EPERM`/`EACCES`).
    PermissionDenied = 7, "permission-denied", Some(libc::EPERM);
    /// A wait ran past its deadline.
    TimedOut = 8, "timed-out", Some(libc::ETIMEDOUT);
    /// A guard pidfile is held by a process that is `Match` or `Unverifiable`.
    Held = 9, "held", Some(libc::EEXIST);
    /// A guard `replace` found that the file no longer holds the record it meant to retire.
    Superseded = 10, "superseded", None;
    /// The kernel or file system lacks a needed feature (`ENOSYS`, `EOPNOTSUPP`).
    Unsupported = 11, "unsupported", Some(libc::ENOSYS);
    /// Signalling was refused by a safety rule or policy (protected pid, identity not proven).
    Refused = 12, "refused", None;
    /// Any other operating-system error; `errno` says which.
    Io = 13, "io", None;
    /// A panic was caught at a binding boundary (a bug in pidguard; please report it).
    Panic = 14, "panic", None;
    /// A symlink where a pidfile must be: never followed (`ELOOP` from `O_NOFOLLOW`). Family
    /// `Untrusted`.
    Symlink = 15, "symlink", Some(libc::ELOOP);
    /// A directory where a pidfile must be (`EISDIR`). Family `Untrusted`.
    IsDirectory = 16, "is-directory", Some(libc::EISDIR);
    /// A FIFO, socket or device node where a pidfile must be: refused without blocking.
    /// Family `Untrusted`.
    NotRegularFile = 17, "not-regular-file", None;
    /// A pidfile with more than one link: another name for it may be controlled by someone else.
    /// Family `Untrusted`.
    HardLinked = 18, "hard-linked", None;
    /// A pidfile that group or others may read or write (mode not within `0600`). Family
    /// `Untrusted`.
    InsecureMode = 19, "insecure-mode", None;
    /// A pidfile larger than its format allows (4096 bytes for the guard format). Family
    /// `Untrusted`.
    TooLarge = 20, "too-large", None;
    /// Guard pidfile content that is not one JSON object of string members (bad syntax, not
    /// UTF-8, a duplicate member, a non-string field). Family `Malformed`.
    InvalidJson = 21, "invalid-json", None;
    /// A guard record whose `pid` is missing, not an integer, not positive, or above 4194304 (`PID_MAX_LIMIT`).
    /// Family `Malformed`.
    BadPid = 22, "bad-pid", None;
    /// A guard record whose `start_token` is missing, not a string, empty, or (where it is
    /// judged) not a pidguard start token. Family `Malformed`.
    BadToken = 23, "bad-token", None;
}

impl ErrorKind {
    /// The broad kind this kind refines: `Untrusted` for a refusal of the file itself (type,
    /// links, mode, size), `Malformed` for a refusal of its content; every other kind is its own
    /// family. Generic handlers match on the family; tests and tools that must say which rule
    /// fired match on the kind.
    pub const fn family(self) -> ErrorKind {
        match self {
            ErrorKind::Symlink
            | ErrorKind::IsDirectory
            | ErrorKind::NotRegularFile
            | ErrorKind::HardLinked
            | ErrorKind::InsecureMode
            | ErrorKind::TooLarge => ErrorKind::Untrusted,
            ErrorKind::InvalidJson | ErrorKind::BadPid | ErrorKind::BadToken => ErrorKind::Malformed,
            other => other,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.slug())
    }
}

/// The error of every fallible pidguard call.
///
/// It carries a [`ErrorKind`], a message that names the path and the reason, and, where they
/// apply, the path, the pid and the errno.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    path: Option<PathBuf>,
    pid: Option<i32>,
    errno: Option<i32>,
    refusal: Option<crate::refusal::Refusal>,
    /// A value of an operation above this layer that the error carries for its caller (the
    /// holder of a guard pidfile: see `Error::holder`), kept without its type known here.
    detail: Option<Box<dyn Detail>>,
}

/// A value an [`Error`] can carry for a layer above it: any `Debug + Send + Sync` value, looked
/// at again by its type (`as_any().downcast_ref`). The error type stays plain data below every
/// operation.
pub(crate) trait Detail: fmt::Debug + Send + Sync + 'static {
    /// The value, to downcast.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: fmt::Debug + Send + Sync + 'static> Detail for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `Result<T, pidguard::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into(), path: None, pid: None, errno: kind.default_errno(), refusal: None, detail: None }
    }

    /// An error about `path`; the message is prefixed with the path.
    pub fn at(kind: ErrorKind, path: &Path, message: impl fmt::Display) -> Error {
        let mut e = Error::new(kind, format!("{}: {}", path.display(), message));
        e.path = Some(path.to_path_buf());
        e
    }

    /// An error from an `io::Error` met while working on `path` (`what` says doing what).
    pub fn io_at(path: &Path, what: &str, err: &io::Error) -> Error {
        let kind = kind_of_io(err);
        let mut e = Error::at(kind, path, format_args!("{what}: {err}"));
        e.errno = err.raw_os_error().or(kind.default_errno());
        e
    }

    /// An error from an `io::Error` met while working on process `pid`.
    pub fn io_pid(pid: i32, what: &str, err: &io::Error) -> Error {
        let kind = kind_of_io(err);
        let mut e = Error::new(kind, format!("pid {pid}: {what}: {err}"));
        e.pid = Some(pid);
        e.errno = err.raw_os_error().or(kind.default_errno());
        e
    }

    /// An `InvalidArgument` error.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// A `Refused` error: signalling `pid` was refused for reason `r`.
    pub fn refused(pid: i32, r: crate::refusal::Refusal) -> Error {
        let mut e = Error::new(ErrorKind::Refused, format!("pid {pid}: refused to signal ({r})"));
        e.pid = Some(pid);
        e.refusal = Some(r);
        e
    }

    /// A `Refused` error with the particulars (`"owned by uid 65534, target uid 0"`), shown
    /// after the refusal's slug: `pid 7: refused to signal (untrusted-pidfile: owned by …)`.
    pub fn refused_because(pid: i32, r: crate::refusal::Refusal, detail: impl fmt::Display) -> Error {
        let mut e = Error::new(ErrorKind::Refused, format!("pid {pid}: refused to signal ({r}: {detail})"));
        e.pid = Some(pid);
        e.refusal = Some(r);
        e
    }

    /// Replace the message, keeping the kind, pid, refusal and errno.
    pub(crate) fn set_message(&mut self, message: String) {
        self.message = message;
    }

    /// Why signalling was refused, for `Refused` errors.
    pub fn refusal(&self) -> Option<crate::refusal::Refusal> {
        self.refusal
    }

    /// Attach `detail` (see [`Detail`]), replacing any earlier one.
    pub(crate) fn set_detail(&mut self, detail: impl Detail) {
        self.detail = Some(Box::new(detail));
    }

    /// The attached detail, when it is a `T`.
    pub(crate) fn detail<T: 'static>(&self) -> Option<&T> {
        self.detail.as_deref().and_then(|d| d.as_any().downcast_ref::<T>())
    }

    /// Set the errno (for an error built from a reason rather than an `io::Error`).
    pub(crate) fn set_errno(&mut self, errno: i32) {
        self.errno = Some(errno);
    }

    /// Attach the pid this error is about.
    pub fn with_pid(mut self, pid: i32) -> Error {
        self.pid = Some(pid);
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The message (also the `Display` text).
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The path the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
    /// The pid the error is about, if any.
    pub fn pid(&self) -> Option<i32> {
        self.pid
    }
    /// The errno, when the failure came from a system call or the kind has a natural one.
    pub fn errno(&self) -> Option<i32> {
        self.errno
    }
}

/// Map an `io::Error` to the kind that names it.
pub(crate) fn kind_of_io(err: &io::Error) -> ErrorKind {
    if crate::sys::chase::is_unsafe_transition(err) {
        return ErrorKind::Untrusted;
    }
    if crate::sys::is_unported(err) {
        return ErrorKind::Unsupported;
    }
    match err.raw_os_error() {
        Some(libc::ENOENT) => ErrorKind::NotFound,
        Some(libc::EEXIST) => ErrorKind::AlreadyExists,
        Some(libc::ESRCH) => ErrorKind::NoSuchProcess,
        Some(libc::EPERM) | Some(libc::EACCES) => ErrorKind::PermissionDenied,
        Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => ErrorKind::Unsupported,
        Some(libc::EINVAL) => ErrorKind::InvalidArgument,
        Some(libc::ETIMEDOUT) => ErrorKind::TimedOut,
        Some(libc::ELOOP) => ErrorKind::Untrusted,
        _ => ErrorKind::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for k in ErrorKind::ALL {
            assert!(seen.insert(k.code()), "duplicate code {}", k.code());
            assert_eq!(ErrorKind::from_code(k.code()), Some(*k));
            assert!(k.slug().bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        }
        // Codes are append-only: these must never change.
        assert_eq!(ErrorKind::InvalidArgument.code(), 1);
        assert_eq!(ErrorKind::NoSuchProcess.code(), 6);
        assert_eq!(ErrorKind::Panic.code(), 14);
        assert_eq!(ErrorKind::Symlink.code(), 15);
        assert_eq!(ErrorKind::BadToken.code(), 23);
    }

    #[test]
    fn families() {
        assert_eq!(ErrorKind::HardLinked.family(), ErrorKind::Untrusted);
        assert_eq!(ErrorKind::BadPid.family(), ErrorKind::Malformed);
        assert_eq!(ErrorKind::Held.family(), ErrorKind::Held);
        for k in ErrorKind::ALL {
            assert_eq!(k.family().family(), k.family(), "families are one level deep");
        }
    }
}
