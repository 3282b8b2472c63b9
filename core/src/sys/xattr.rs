//! Extended attributes of an open file: `fgetxattr(2)`, `fsetxattr(2)`.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::errno::cvt;
use super::fault::{self, Call};

/// `fgetxattr(2)` of `name` on an open file. `Ok(None)` when the attribute is absent or the
/// file system has no user xattrs.
pub(crate) fn fgetxattr(fd: BorrowedFd<'_>, name: &str) -> io::Result<Option<Vec<u8>>> {
    fault::check(Call::Getxattr)?;
    // Raw libc: nix 0.32 has no extended-attribute wrappers.
    // Unreachable: every caller passes a constant name (`TOKEN_XATTR`, `SCOPE_XATTR`: no NUL), never input.
    let cname = CString::new(name).expect("xattr name has no NUL");
    // A token fits the first, stack-held buffer; the heap is used only for what is returned
    // (nothing at all for the common "no such attribute").
    let mut small = [0u8; 256];
    let mut large = Vec::new();
    loop {
        let buf: &mut [u8] = if large.is_empty() { &mut small } else { &mut large };
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let n = unsafe {
            libc::fgetxattr(fd.as_raw_fd(), cname.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        };
        if n >= 0 {
            return Ok(Some(buf[..n as usize].to_vec()));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENODATA) | Some(libc::ENOTSUP) => return Ok(None),
            Some(libc::ERANGE) if large.is_empty() => large = vec![0u8; 4096],
            _ => return Err(e),
        }
    }
}

/// `fsetxattr(2)`; `Ok(false)` when the file system does not support user xattrs.
pub(crate) fn fsetxattr(fd: BorrowedFd<'_>, name: &str, value: &[u8]) -> io::Result<bool> {
    // Raw libc: nix 0.32 has no extended-attribute wrappers.
    let r = fault::check(Call::Setxattr).and_then(|()| {
        // Unreachable: every caller passes a constant name (`TOKEN_XATTR`, `SCOPE_XATTR`: no NUL), never input.
        let cname = CString::new(name).expect("xattr name has no NUL");
        // SAFETY: `value` is valid for its length.
        cvt(unsafe { libc::fsetxattr(fd.as_raw_fd(), cname.as_ptr(), value.as_ptr().cast(), value.len(), 0) } as libc::c_long)
    });
    // Only "this file system has no user xattrs" means "store no token"; ENOSPC, EDQUOT, E2BIG
    // or EIO fail the write (ENOTSUP and EOPNOTSUPP are one value on Linux).
    match r {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => Ok(false),
        Err(e) => Err(e),
    }
}
