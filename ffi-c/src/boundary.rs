//! The one boundary between C and Rust: panic catching, error conversion and pointer checks.

use std::any::Any;
use std::ffi::{c_char, c_int, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr::NonNull;

use pidguard_core::{Error, ErrorKind, Schedule, StartToken};

use crate::last_error::{set_last_error, set_last_failure, status_of};

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
            set_last_failure(&e);
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

/// An optional pointer argument read with `f`: NULL is `None`.
pub(crate) fn opt<T>(p: *const c_char, what: &str, f: fn(*const c_char, &str) -> FfiResult<T>) -> FfiResult<Option<T>> {
    if p.is_null() {
        Ok(None)
    } else {
        f(p, what).map(Some)
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
    opt(p, what, path)
}

/// A required UTF-8 string argument.
pub(crate) fn utf8<'a>(p: *const c_char, what: &str) -> FfiResult<&'a str> {
    utf8_of(cstr(p, what)?, what)
}

/// An optional UTF-8 string argument: NULL is `None`.
pub(crate) fn opt_utf8<'a>(p: *const c_char, what: &str) -> FfiResult<Option<&'a str>> {
    opt(p, what, utf8)
}

fn utf8_of<'a>(s: &'a CStr, what: &str) -> FfiResult<&'a str> {
    s.to_str().map_err(|_| Error::invalid(format!("argument `{what}` is not UTF-8")))
}

/// An optional start-token argument (a token from pidguard_start_token()): NULL is `None`;
/// core parses it.
pub(crate) fn token(p: *const c_char, what: &str) -> FfiResult<Option<StartToken>> {
    opt_utf8(p, what)?.map(str::parse).transpose()
}

/// A schedule argument in start-stop-daemon's --retry syntax (core parses it): NULL is core's
/// default.
pub(crate) fn schedule(p: *const c_char) -> FfiResult<Schedule> {
    opt_utf8(p, "schedule")?.map_or(Ok(Schedule::default()), str::parse)
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

/// An output parameter that may be NULL (not wanted): `None` then.
pub(crate) fn opt_out<T>(p: *mut T, what: &str) -> FfiResult<Option<Out<T>>> {
    if p.is_null() {
        Ok(None)
    } else {
        out(p, what).map(Some)
    }
}

/// The body of exported function `name` that reads one value of an object: `f` of the object
/// argument `object` (named `what`) into the output `value_out` (named `out_name`), inside the
/// boundary like every body.
pub(crate) fn get<O, T>(
    name: &'static str,
    (object, what): (*const O, &str),
    (value_out, out_name): (*mut T, &str),
    f: impl FnOnce(&O) -> FfiResult<T>,
) -> c_int {
    run(name, || {
        let o = obj(object, what)?;
        let value_out = out(value_out, out_name)?;
        value_out.write(f(o)?);
        Ok(())
    })
}

/// A new object handed to C, which owns it until it passes it to [`free`].
pub(crate) fn boxed<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

/// Take back an object from [`boxed`], which the call then frees: `InvalidArgument` when NULL.
pub(crate) fn take<T>(p: *mut T, what: &str) -> FfiResult<Box<T>> {
    non_null(p as *const T, what)?;
    // SAFETY: `p` came from `boxed` and the caller hands it back once (documented).
    Ok(unsafe { Box::from_raw(p) })
}

/// Free an object from [`boxed`]; NULL does nothing. A panic while dropping it does not
/// unwind into C.
pub(crate) fn free<T>(p: *mut T) {
    run_value((), || {
        if !p.is_null() {
            // SAFETY: `p` came from `boxed` and the caller frees it once (documented).
            drop(unsafe { Box::from_raw(p) });
        }
    })
}

/// A borrowed object argument the call may change.
pub(crate) fn obj_mut<'a, T>(p: *mut T, what: &str) -> FfiResult<&'a mut T> {
    let mut p = non_null(p as *const T, what)?;
    // SAFETY: the C caller passes an object this library handed out, has not freed it, and
    // does not use it from another thread during the call (documented).
    Ok(unsafe { p.as_mut() })
}

/// A byte-string argument: `len` bytes at `p`; `p` may be NULL only when `len` is 0.
pub(crate) fn bytes<'a>(p: *const u8, len: usize, what: &str) -> FfiResult<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    let p = non_null(p, what)?;
    // SAFETY: the caller gives `len` readable bytes at `p` (documented).
    Ok(unsafe { std::slice::from_raw_parts(p.as_ptr(), len) })
}

/// An snprintf-like output buffer: `buf` may be NULL only when `buf_len` is 0. Checked before
/// anything is done.
pub(crate) struct TextOut {
    buf: *mut c_char,
    len: usize,
}

/// Check an snprintf-like buffer argument.
pub(crate) fn text_out(buf: *mut c_char, buf_len: usize, what: &str) -> FfiResult<TextOut> {
    if buf_len > 0 {
        non_null(buf as *const c_char, what)?;
    }
    Ok(TextOut { buf, len: buf_len })
}

impl TextOut {
    /// Copy `s` (ASCII or UTF-8 without NUL), truncated at a character boundary to fit with its
    /// NUL; returns `s.len()`.
    pub(crate) fn write(self, s: &str) -> usize {
        if self.len > 0 {
            let mut n = s.len().min(self.len - 1);
            while n > 0 && !s.is_char_boundary(n) {
                n -= 1;
            }
            // SAFETY: `buf` has `len` writable bytes (checked non-NULL); n + 1 <= len.
            unsafe {
                std::ptr::copy_nonoverlapping(s.as_ptr(), self.buf as *mut u8, n);
                *self.buf.add(n) = 0;
            }
        }
        s.len()
    }
}
