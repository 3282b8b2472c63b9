//! What every system's layer shares: the record of one process in Linux's terms ([`Stat`]),
//! the token-field rule, the constants that differ between systems, and the [`Unported`]
//! error of a feature one system's layer does not have.

/// The fields of `/proc/<pid>/stat` that pidguard uses (on macOS and FreeBSD, the same facts
/// from their process records, in these terms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Field 2, `comm`, without the parentheses (bytes: it may hold anything but NUL).
    pub comm: Vec<u8>,
    /// Field 3, the state letter (`R`, `S`, `D`, `Z`, `T`, …).
    pub state: u8,
    /// Field 4.
    pub ppid: i32,
    /// Field 5, the process group.
    pub pgrp: i32,
    /// Field 6, the session.
    pub session: i32,
    /// Field 20, `num_threads`: the threads of the whole thread group, the leader counted while
    /// it is not released (a leader in `Z` whose other threads run counts them too).
    pub num_threads: i64,
    /// Field 22, `starttime`, in clock ticks since boot (macOS: µs since the epoch; FreeBSD: µs
    /// since boot — each system's token start).
    pub start_ticks: u64,
}

/// Make a string safe as one field of a start token: printable ASCII without `:`.
pub(crate) fn token_field(raw: &str) -> String {
    let t = raw.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_') {
        t.to_string()
    } else {
        t.bytes().map(|b| format!("{b:02x}")).collect()
    }
}

/// A feature of pidguard that this system's layer does not have (not ported, or no equivalent
/// here), carried inside an [`std::io::Error`] (kind `Unsupported`, no errno); `kind_of_io` maps
/// it to `ErrorKind::Unsupported`. Its text names the feature and docs/platforms.md.
#[derive(Debug)]
pub struct Unported {
    /// What is missing, in a few words.
    pub what: &'static str,
}

impl std::fmt::Display for Unported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unsupported on this system: {} (pidguard is run-tested on Linux only; see docs/platforms.md)", self.what)
    }
}

impl std::error::Error for Unported {}

/// The error of a feature this system's layer does not have (see [`Unported`]).
#[cfg(not(target_os = "linux"))]
pub(crate) fn unported(what: &'static str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Unsupported, Unported { what })
}

/// Whether `err` is an [`Unported`] refusal.
pub(crate) fn is_unported(err: &std::io::Error) -> bool {
    err.get_ref().is_some_and(|e| e.is::<Unported>())
}

/// `O_PATH` where the system has it (Linux; FreeBSD ≥ 14), else what opens a directory for
/// lookups only: macOS's `O_EXEC`, which with `O_DIRECTORY` is `O_SEARCH`. Every caller
/// passes it with `O_DIRECTORY`, except Linux's own safe path walk (`chase`), which macOS and
/// FreeBSD do not have.
#[cfg(any(target_os = "linux", target_os = "freebsd"))]
pub(crate) const O_PATH: i32 = libc::O_PATH;
/// See the Linux and FreeBSD definition.
#[cfg(target_os = "macos")]
pub(crate) const O_PATH: i32 = libc::O_EXEC;

/// `S_IFMT` and the file types as `u32` (`mode_t` is `u16` on macOS and FreeBSD).
#[allow(clippy::unnecessary_cast)]
pub(crate) mod mode {
    /// `S_IFMT`.
    pub(crate) const S_IFMT: u32 = libc::S_IFMT as u32;
    /// `S_IFREG`.
    pub(crate) const S_IFREG: u32 = libc::S_IFREG as u32;
    /// `S_IFDIR`.
    pub(crate) const S_IFDIR: u32 = libc::S_IFDIR as u32;
    /// `S_IFLNK`.
    pub(crate) const S_IFLNK: u32 = libc::S_IFLNK as u32;
}
