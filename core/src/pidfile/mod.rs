//! Pidfile formats: the abx-dl mtime format and its `.sh` command file.

pub(crate) mod atomic;
pub mod cmd;
pub mod mtime;
pub(crate) mod target;

/// Read an open regular file whose `fstat` gave `size` bytes, at most `max` bytes, from offset 0
/// (`pread`, so the file position does not matter and the same descriptor can be read again).
///
/// Reads what fstat said is there and stops: a file of `size` bytes costs one `read` instead of
/// two (the second only seeing end-of-file), an empty one none — the content as of the `fstat`
/// (a writer that appends afterwards is not waited for). Only for the regular files of hook
/// directories (pidfiles, `.sh`, logs), whose size is their content's (unlike procfs files).
/// Errors: the `pread` error (`EINTR` is retried).
pub(crate) fn read_bounded(f: &std::fs::File, size: u64, max: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let want = size.min(max) as usize;
    let mut buf = vec![0u8; want];
    let mut len = 0usize;
    while len < want {
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
