//! Pidfile formats: the abx-dl mtime format (SPEC §3.1) and its `.sh` command file.

pub(crate) mod atomic;
pub mod cmd;
pub mod mtime;
pub(crate) mod target;

/// Read an open regular file whose `fstat` gave `size` bytes, at most `max` bytes, from offset 0
/// (`pread`, so the file position does not matter and the same descriptor can be read again).
///
/// Stops as soon as `size` bytes are in (or `max`): a file of the size fstat gave costs one
/// `read` instead of two (the second only seeing end-of-file). A file that reports size 0
/// (which a regular file on some file systems does whatever it holds) is read until end-of-file.
/// Errors: the `pread` error (`EINTR` is retried).
pub(crate) fn read_bounded(f: &std::fs::File, size: u64, max: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let want = if size == 0 { max } else { size.min(max) };
    let mut buf = vec![0u8; want.min(if size == 0 { 4096 } else { want }) as usize];
    let mut len = 0usize;
    while (len as u64) < want {
        if len == buf.len() {
            let grow = (buf.len().max(4096) as u64).min(want - len as u64) as usize;
            buf.resize(len + grow, 0);
        }
        match f.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(buf)
}
