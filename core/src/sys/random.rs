//! `getrandom(2)`: bytes from the kernel's random pool.

use std::io;

/// Fill `buf` from the kernel's random pool with `getrandom(2)` (flags 0: blocks only before
/// the pool is first initialised at boot), looping over short reads and `EINTR`.
///
/// Errors: the `getrandom` errno (`ENOSYS` on kernels before 3.17, `EFAULT`).
#[cfg(not(target_os = "macos"))]
pub(crate) fn getrandom(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unwritten tail of `buf`.
        let n = unsafe { libc::getrandom(buf[done..].as_mut_ptr().cast(), buf.len() - done, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
}

/// Fill `buf` from the kernel's random pool with `getentropy(2)` (macOS has no `getrandom`), at
/// most 256 bytes per call as it requires.
///
/// Errors: the `getentropy` errno (`EIO`, `EFAULT`).
#[cfg(target_os = "macos")]
pub(crate) fn getrandom(buf: &mut [u8]) -> io::Result<()> {
    for chunk in buf.chunks_mut(256) {
        // SAFETY: the pointer and length describe `chunk`, at most 256 bytes.
        if unsafe { libc::getentropy(chunk.as_mut_ptr().cast(), chunk.len()) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
