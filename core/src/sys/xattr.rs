//! Extended attributes of an open file: `fgetxattr(2)`, `fsetxattr(2)` (Linux; macOS's take a
//! position and options more), FreeBSD's `extattr_get_fd(2)`/`extattr_set_fd(2)` in the `user`
//! namespace. The name is Linux's (`user.pidguard.token`) everywhere: macOS has no namespaces
//! and stores it as it is; FreeBSD stores `pidguard.token` in its `user` namespace.

#[cfg(target_os = "freebsd")]
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::errno::cvt;
use super::fault::{self, Call};

/// The errno of an absent attribute: `ENODATA` on Linux, `ENOATTR` on macOS and FreeBSD.
#[cfg(target_os = "linux")]
const ABSENT: i32 = libc::ENODATA;
#[cfg(not(target_os = "linux"))]
const ABSENT: i32 = libc::ENOATTR;

/// An attribute name as a C string, on the stack (one per call, at every validate and stale
/// record: no allocation).
#[cfg(not(target_os = "freebsd"))]
struct NameBuf([u8; 64]);

#[cfg(not(target_os = "freebsd"))]
impl NameBuf {
    /// Unreachable panics: every caller passes a constant name (`TOKEN_XATTR`, `SCOPE_XATTR`:
    /// short, no NUL), never input.
    fn new(name: &str) -> NameBuf {
        assert!(name.len() < 64 && !name.contains('\0'), "xattr name is a short constant without NUL");
        let mut buf = [0u8; 64];
        buf[..name.len()].copy_from_slice(name.as_bytes());
        NameBuf(buf)
    }

    fn as_cstr(&self) -> &std::ffi::CStr {
        // Unreachable: `new` leaves at least one NUL after the name and none in it.
        std::ffi::CStr::from_bytes_until_nul(&self.0).expect("NUL-terminated")
    }
}

/// `fgetxattr(2)` of `name` on an open file. `Ok(None)` when the attribute is absent or the
/// file system has no user xattrs.
#[cfg(not(target_os = "freebsd"))]
pub(crate) fn fgetxattr(fd: BorrowedFd<'_>, name: &str) -> io::Result<Option<Vec<u8>>> {
    fault::check(Call::Getxattr)?;
    // Raw libc: nix 0.32 has no extended-attribute wrappers.
    let cname = NameBuf::new(name);
    let cname = cname.as_cstr();
    // A token fits the first, stack-held buffer; the heap is used only for what is returned
    // (nothing at all for the common "no such attribute").
    let mut small = [0u8; 256];
    let mut large = Vec::new();
    loop {
        let buf: &mut [u8] = if large.is_empty() { &mut small } else { &mut large };
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        #[cfg(target_os = "linux")]
        let n = unsafe { libc::fgetxattr(fd.as_raw_fd(), cname.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        // macOS: position 0 (only resource forks have others), no options.
        #[cfg(target_os = "macos")]
        let n = unsafe { libc::fgetxattr(fd.as_raw_fd(), cname.as_ptr(), buf.as_mut_ptr().cast(), buf.len(), 0, 0) };
        if n >= 0 {
            return Ok(Some(buf[..n as usize].to_vec()));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(ABSENT) | Some(libc::ENOTSUP) => return Ok(None),
            Some(libc::ERANGE) if large.is_empty() => large = vec![0u8; 4096],
            _ => return Err(e),
        }
    }
}

/// `fsetxattr(2)`; `Ok(false)` when the file system does not support user xattrs.
#[cfg(not(target_os = "freebsd"))]
pub(crate) fn fsetxattr(fd: BorrowedFd<'_>, name: &str, value: &[u8]) -> io::Result<bool> {
    // Raw libc: nix 0.32 has no extended-attribute wrappers.
    let r = fault::check(Call::Setxattr).and_then(|()| {
        let cname = NameBuf::new(name);
        let cname = cname.as_cstr();
        // SAFETY: `value` is valid for its length.
        #[cfg(target_os = "linux")]
        let r = unsafe { libc::fsetxattr(fd.as_raw_fd(), cname.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
        #[cfg(target_os = "macos")]
        let r = unsafe { libc::fsetxattr(fd.as_raw_fd(), cname.as_ptr(), value.as_ptr().cast(), value.len(), 0, 0) };
        cvt(r as libc::c_long)
    });
    // Only "this file system has no user xattrs" means "store no token"; ENOSPC, EDQUOT, E2BIG
    // or EIO fail the write (ENOTSUP and EOPNOTSUPP are one value on Linux).
    match r {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => Ok(false),
        Err(e) => Err(e),
    }
}

/// FreeBSD: `extattr_get_fd(2)` of `name` (a `user.` name: see [`super::bsd_parse::extattr_user_name`])
/// in the `user` namespace. `Ok(None)` when the attribute is absent or the file system has no
/// extended attributes (`EOPNOTSUPP`); a name outside `user.` has none either.
#[cfg(target_os = "freebsd")]
pub(crate) fn fgetxattr(fd: BorrowedFd<'_>, name: &str) -> io::Result<Option<Vec<u8>>> {
    fault::check(Call::Getxattr)?;
    let Some(short) = super::bsd_parse::extattr_user_name(name) else { return Ok(None) };
    // Unreachable: every caller passes the constant `TOKEN_XATTR` (no NUL), never input.
    let cname = CString::new(short).expect("xattr name has no NUL");
    let absent = |e: io::Error| match e.raw_os_error() {
        Some(ABSENT) | Some(libc::EOPNOTSUPP) => Ok(None),
        _ => Err(e),
    };
    for _ in 0..4 {
        // The size first (a NULL buffer), then the value into one byte more: extattr_get_fd
        // truncates silently, so a value that grew in between fills that byte and is read again.
        // SAFETY: a NULL buffer of length 0 asks for the size only.
        let size = match cvt(unsafe { libc::extattr_get_fd(fd.as_raw_fd(), libc::EXTATTR_NAMESPACE_USER, cname.as_ptr(), std::ptr::null_mut(), 0) } as libc::c_long) {
            Ok(n) => n as usize,
            Err(e) => return absent(e),
        };
        let mut buf = vec![0u8; size + 1];
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        match cvt(unsafe { libc::extattr_get_fd(fd.as_raw_fd(), libc::EXTATTR_NAMESPACE_USER, cname.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) } as libc::c_long) {
            Ok(n) if (n as usize) <= size => {
                buf.truncate(n as usize);
                return Ok(Some(buf));
            }
            Ok(_) => continue,
            Err(e) => return absent(e),
        }
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// FreeBSD: `extattr_set_fd(2)` of `name` in the `user` namespace; `Ok(false)` when the file
/// system has no extended attributes (`EOPNOTSUPP`) or the name is not a `user.` one.
#[cfg(target_os = "freebsd")]
pub(crate) fn fsetxattr(fd: BorrowedFd<'_>, name: &str, value: &[u8]) -> io::Result<bool> {
    fault::check(Call::Setxattr)?;
    let Some(short) = super::bsd_parse::extattr_user_name(name) else { return Ok(false) };
    // Unreachable: every caller passes the constant `TOKEN_XATTR` (no NUL), never input.
    let cname = CString::new(short).expect("xattr name has no NUL");
    // SAFETY: `value` is valid for its length.
    let r = unsafe { libc::extattr_set_fd(fd.as_raw_fd(), libc::EXTATTR_NAMESPACE_USER, cname.as_ptr(), value.as_ptr().cast(), value.len()) };
    match cvt(r as libc::c_long) {
        Ok(n) if n as usize == value.len() => Ok(true),
        Ok(_) => Err(io::Error::from_raw_os_error(libc::EIO)),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(false),
        Err(e) => Err(e),
    }
}
