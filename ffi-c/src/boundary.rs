//! The one boundary between C and Rust: panic catching, error conversion and pointer checks.

use std::any::Any;
use std::ffi::{c_char, c_int, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr::NonNull;

use pidguard_core::{Error, ErrorKind};

use crate::status::{set_last_error, status_of};

/// What an exported body returns before conversion to a status.
pub(crate) type FfiResult<T = ()> = Result<T, Error>;

/// Run the body of exported function `$name` at the boundary: `ffi!("pidguard_x", { … Ok(()) })`.
macro_rules! ffi {
    ($name:literal, $body:block) => {
        $crate::boundary::run($name, move || -> $crate::boundary::FfiResult { $body })
    };
}

/// Run `f`; 0 on success, `-kind.code()` on error, `PIDGUARD_EPANIC` on a panic. A failure
/// records its message as the calling thread's last error. No panic leaves this function.
pub(crate) fn run(name: &'static str, f: impl FnOnce() -> FfiResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            set_last_error(e.message(), e.errno());
            status_of(e.kind())
        }
        Err(payload) => {
            let what = panic_text(payload.as_ref());
            // Formatting a String cannot panic short of running out of memory, which aborts.
            set_last_error(&format!("{name}: panic: {what} (a bug in pidguard; please report it)"), None);
            // The payload may own anything; dropping it must not unwind into C either.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            status_of(ErrorKind::Panic)
        }
    }
}

/// Like [`run`] for the few functions that return a value instead of a status: `fallback` when
/// `f` panics.
pub(crate) fn run_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// The one NULL check every pointer argument goes through: `InvalidArgument` naming the
/// argument when `p` is NULL.
pub(crate) fn non_null<T>(p: *const T, what: &str) -> FfiResult<NonNull<T>> {
    NonNull::new(p as *mut T).ok_or_else(|| Error::invalid(format!("argument `{what}` is NULL")))
}

/// A required NUL-terminated string argument.
pub(crate) fn cstr<'a>(p: *const c_char, what: &str) -> FfiResult<&'a CStr> {
    let p = non_null(p, what)?;
    // SAFETY: the C caller passes a valid NUL-terminated string (documented in the header).
    Ok(unsafe { CStr::from_ptr(p.as_ptr()) })
}

/// An optional string argument: NULL is `None`.
pub(crate) fn opt_cstr<'a>(p: *const c_char, what: &str) -> FfiResult<Option<&'a CStr>> {
    if p.is_null() {
        Ok(None)
    } else {
        cstr(p, what).map(Some)
    }
}

/// A required path argument (bytes, not necessarily UTF-8); empty is `InvalidArgument`.
pub(crate) fn path<'a>(p: *const c_char, what: &str) -> FfiResult<&'a Path> {
    let s = cstr(p, what)?;
    if s.is_empty() {
        return Err(Error::invalid(format!("argument `{what}` is an empty path")));
    }
    Ok(Path::new(OsStr::from_bytes(s.to_bytes())))
}

/// An optional path argument: NULL is `None`.
pub(crate) fn opt_path<'a>(p: *const c_char, what: &str) -> FfiResult<Option<&'a Path>> {
    if p.is_null() {
        Ok(None)
    } else {
        path(p, what).map(Some)
    }
}

/// A required UTF-8 string argument.
pub(crate) fn utf8<'a>(p: *const c_char, what: &str) -> FfiResult<&'a str> {
    utf8_of(cstr(p, what)?, what)
}

/// An optional UTF-8 string argument: NULL is `None`.
pub(crate) fn opt_utf8<'a>(p: *const c_char, what: &str) -> FfiResult<Option<&'a str>> {
    opt_cstr(p, what)?.map(|s| utf8_of(s, what)).transpose()
}

fn utf8_of<'a>(s: &'a CStr, what: &str) -> FfiResult<&'a str> {
    s.to_str().map_err(|_| Error::invalid(format!("argument `{what}` is not UTF-8")))
}

/// A borrowed read-only object argument.
pub(crate) fn obj<'a, T>(p: *const T, what: &str) -> FfiResult<&'a T> {
    let p = non_null(p, what)?;
    // SAFETY: the C caller passes an object this library handed out and has not freed.
    Ok(unsafe { p.as_ref() })
}

/// An output parameter, checked before anything is done and written only on success.
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Store the result (without reading or dropping what the caller's memory held).
    pub(crate) fn write(self, v: T) {
        // SAFETY: the C caller passes a valid, writable, aligned pointer (documented).
        unsafe { self.0.as_ptr().write(v) }
    }
}

/// A required output parameter.
pub(crate) fn out<T>(p: *mut T, what: &str) -> FfiResult<Out<T>> {
    non_null(p as *const T, what).map(Out)
}
