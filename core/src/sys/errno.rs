//! Errno helpers: a raw return turned into an `io::Error`, an errno into its symbolic name.

use std::io;

/// For the raw `libc` calls that remain: a negative return is the errno of `errno`.
pub(super) fn cvt(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The symbolic name of an errno (`"EMFILE"`), for reasons and messages; `"errno N"` for the
/// rare ones.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTSUP => "ENOTSUP",
        libc::ELOOP => "ELOOP",
        libc::EDQUOT => "EDQUOT",
        libc::E2BIG => "E2BIG",
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        libc::ENODATA => "ENODATA",
        #[cfg(not(target_os = "linux"))]
        libc::ENOATTR => "ENOATTR",
        // One value with ENOTSUP on Linux and FreeBSD, another on macOS.
        #[cfg(target_os = "macos")]
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EXDEV => "EXDEV",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}
