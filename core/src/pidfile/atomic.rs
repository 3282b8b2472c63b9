//! Writing a file so that no reader ever sees it empty or half-written, without following a
//! symlink planted at the target (nothing a link points to is ever written).

use std::fs;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::sys;

/// A fresh name beside `target` for a temporary file.
pub(crate) fn temp_name(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut rnd = [0u8; 8];
    random_bytes(&mut rnd);
    target.with_file_name(format!(".{name}.{}.pidguard-tmp", hex(&rnd)))
}

/// `bytes` as lower-case hex digits, two per byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Fill `buf` with random bytes: from a per-thread pool refilled by one `getrandom(2)` of
/// 4 KiB (a cleanup names three records per hook: one system call serves ~100 hooks instead of
/// an open/read/close of `/dev/urandom` each), falling back to `/dev/urandom`, then to time and
/// pid mixing. The pool is dropped in a `fork(2)` child, so parent and child never hand out the
/// same bytes.
pub(crate) fn random_bytes(buf: &mut [u8]) {
    use std::cell::RefCell;
    const POOL: usize = 4096;
    thread_local! {
        // (fork generation, bytes, how many of them are used)
        static RND: RefCell<(u64, Vec<u8>, usize)> = const { RefCell::new((u64::MAX, Vec::new(), 0)) };
    }
    if buf.len() <= POOL {
        let gen = sys::fork_generation();
        let served = RND.with(|r| {
            let mut r = r.borrow_mut();
            let (g, pool, used) = &mut *r;
            if *g != gen || pool.len() - *used < buf.len() {
                pool.resize(POOL, 0);
                if sys::getrandom(pool).is_err() {
                    pool.clear();
                    *used = 0;
                    return false;
                }
                *g = gen;
                *used = 0;
            }
            buf.copy_from_slice(&pool[*used..*used + buf.len()]);
            // Served bytes are wiped: nothing random outlives its use in the pool.
            pool[*used..*used + buf.len()].fill(0);
            *used += buf.len();
            true
        });
        if served {
            return;
        }
    }
    use std::io::Read;
    if fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(buf)).is_ok() {
        return;
    }
    let mut x = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
        ^ ((std::process::id() as u64) << 32);
    for b in buf.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

/// Refuse a target that exists and is not a regular file (a symlink, FIFO, directory, socket,
/// device): nothing it points to is touched.
pub(crate) fn refuse_non_regular_target(target: &Path) -> Result<()> {
    match fs::symlink_metadata(target) {
        Ok(m) => {
            let ft = m.file_type();
            let what = if ft.is_symlink() {
                "a symlink"
            } else if ft.is_dir() {
                "a directory"
            } else if ft.is_fifo() {
                "a FIFO"
            } else if ft.is_socket() {
                "a socket"
            } else if ft.is_block_device() || ft.is_char_device() {
                "a device"
            } else {
                return Ok(());
            };
            Err(Error::at(ErrorKind::Untrusted, target, format_args!("is {what}, not a regular file; refusing to replace it")))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io_at(target, "lstat", &e)),
    }
}

/// Create a temporary file beside `target` with `O_EXCL|O_NOFOLLOW` and exactly `mode`
/// (independent of the umask), write `content`, let `before_sync` set times or xattrs, `fsync`,
/// and hand it to `publish` (rename or link). The temporary is removed on any failure.
pub(crate) fn write_via_temp(
    target: &Path,
    content: &[u8],
    mode: u32,
    before_sync: impl FnOnce(&OwnedFd) -> Result<()>,
    publish: impl FnOnce(&Path, &Path) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = temp_name(target);
    let fd = sys::open_raw(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW, mode, crate::protect::walk())
        .map_err(|e| Error::io_at(target, "create temporary file", &e))?;
    let result = (|| {
        sys::fchmod(fd.as_fd(), mode).map_err(|e| Error::io_at(target, "fchmod", &e))?;
        let mut f = fs::File::from(fd.try_clone().map_err(|e| Error::io_at(target, "dup", &e))?);
        f.write_all(content).map_err(|e| Error::io_at(target, "write", &e))?;
        before_sync(&fd)?;
        f.sync_all().map_err(|e| Error::io_at(target, "fsync", &e))?;
        publish(&tmp, target).map_err(|e| Error::io_at(target, "publish", &e))
    })();
    if result.is_err() {
        let _ = sys::unlink_path(&tmp, crate::protect::walk());
    }
    result
}

/// Atomically replace `target` (a regular file or nothing) with `content`.
pub(crate) fn replace_file(
    target: &Path,
    content: &[u8],
    mode: u32,
    before_sync: impl FnOnce(&OwnedFd) -> Result<()>,
) -> Result<()> {
    refuse_non_regular_target(target)?;
    write_via_temp(target, content, mode, before_sync, |from, to| sys::rename_path(from, to, crate::protect::walk()))
}
