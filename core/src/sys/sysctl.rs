//! `sysctl(3)` reads of macOS and FreeBSD (compile-checked only): by MIB or by name, into a
//! caller's buffer.

use std::io;

/// `sysctl(2)` of `mib` into `buf`: the number of bytes written. Errors: the errno.
pub(crate) fn sysctl_mib(mib: &[libc::c_int], buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len();
    // SAFETY: `mib` is valid for its length, `buf` for `len` bytes; no new value is set.
    let r = unsafe {
        libc::sysctl(mib.as_ptr().cast_mut(), mib.len() as libc::c_uint, buf.as_mut_ptr().cast(), &mut len, std::ptr::null_mut(), 0)
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len)
}

/// The size in bytes `sysctl(2)` of `mib` would write now.
#[cfg_attr(target_os = "macos", allow(dead_code))]
pub(crate) fn sysctl_size(mib: &[libc::c_int]) -> io::Result<usize> {
    let mut len = 0usize;
    // SAFETY: a NULL old value asks for the size only.
    let r = unsafe { libc::sysctl(mib.as_ptr().cast_mut(), mib.len() as libc::c_uint, std::ptr::null_mut(), &mut len, std::ptr::null_mut(), 0) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len)
}

/// `sysctlbyname(3)` of `name` into `buf`: the number of bytes written.
pub(crate) fn sysctl_name(name: &std::ffi::CStr, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len();
    // SAFETY: a NUL-terminated name; `buf` is valid for `len` bytes; no new value is set.
    let r = unsafe { libc::sysctlbyname(name.as_ptr(), buf.as_mut_ptr().cast(), &mut len, std::ptr::null_mut(), 0) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len)
}
