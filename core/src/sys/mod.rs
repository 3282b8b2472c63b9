//! The narrow layer of raw system calls and procfs reads: the only place with `unsafe`.
//!
//! Every system call that decides or sends a signal goes through a function here, and each of
//! them first consults the thread-local fault table of [`fault`], so tests can make
//! `pidfd_open` fail with `ENOSYS` or `EPERM`, the process-group flag fail with `EINVAL`, and so
//! exercise every kernel path on one kernel.
//!
//! The calls go through the [`nix`] crate wherever it has a wrapper (signals, `poll`, `flock`,
//! `linkat`, `futimens`, `umask`, ids, `sysconf`, `getrlimit`, `fstat`/`fstatfs`, `open`/`openat`,
//! `fchmod`); raw `libc` remains only where nix has none or where its wrapper loses information,
//! each place saying why. Nothing of nix leaves this module: pids are `i32`, signals plain signal
//! numbers, errors `std::io::Error` with the errno.
//!
//! One layer per system, behind the same functions: Linux (run-tested) is the reference; macOS
//! and FreeBSD (compile-checked only, docs/platforms.md) answer the same calls from
//! `proc_pidinfo`/`sysctl` (`bsd.rs`, `macos.rs`, `freebsd.rs`), with no pidfd: every handle is
//! unpinned and re-reads its process's identity right before each signal. Linux-only calls
//! (`pidfd_*`, `openat2`, `O_TMPFILE`, `getdents64`, `capget`) are gated here by
//! `#[cfg(target_os = …)]`; a feature without an equivalent fails with `ENOSYS` or an
//! [`Unported`] error (`ErrorKind::Unsupported`), never a wrong answer. A module that exists only
//! on Linux is gated at its `mod` line.
#![allow(unsafe_code)]

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")))]
compile_error!("pidguard's system layer exists for Linux (run-tested), macOS and FreeBSD (compile-checked only): see docs/platforms.md");

pub mod chase;
pub mod fault;
// What every system's layer shares: the record type, portable constants, the Unported error.
mod common;
// Public (hidden with `sys`) only so the property tests and fuzz targets reach `parse_stat`.
pub mod procfs;

mod errno;
mod signal;
#[cfg(target_os = "linux")]
mod pidfd;
// No pidfd outside Linux: the same calls, failing with ENOSYS (every handle goes unpinned).
#[cfg(not(target_os = "linux"))]
#[path = "pidfd_none.rs"]
mod pidfd;
mod wait;
mod unistd;
mod creds;
mod resource;
mod random;
mod xattr;
mod file;
mod dir;
mod open;
mod beneath;
// The process records of macOS and FreeBSD: pure parsers, compiled and tested everywhere (each
// system uses only its own: the others' stand unused there).
#[allow(dead_code)]
mod bsd_parse;
#[cfg(any(target_os = "macos", target_os = "freebsd"))]
mod bsd;
#[cfg(any(target_os = "macos", target_os = "freebsd"))]
mod sysctl;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "freebsd")]
mod freebsd;
pub(crate) mod cgroup;
pub(crate) mod spawn;

/// The `/proc/<pid>/stat` parser, reachable for property tests and tools (not a stable API).
pub use procfs::{parse_stat, Stat};
pub use errno::errno_name;
pub(crate) use signal::{kill_probe, kill, killpg};
pub(crate) use pidfd::{PIDFD_SIGNAL_PROCESS_GROUP, pidfd_open, pidfd_send_signal, pidfs_ino};
pub(crate) use wait::{poll_readable, readable_now, ChildExit, waitid_pidfd, waitid_pid_peek};
pub(crate) use unistd::{fork_generation, getpid, getppid, getpgrp};
pub(crate) use creds::{has_cap_kill, privileged, uids};
#[cfg(target_os = "linux")]
pub(crate) use creds::{groups, id_caps, resids};
pub(crate) use resource::{nofile_soft_limit, open_fd_count};
pub(crate) use random::getrandom;
pub(crate) use xattr::{fgetxattr, fsetxattr};
pub use file::umask;
pub(crate) use file::{futimens, fchmod, try_flock_exclusive};
pub(crate) use beneath::Tree;
pub(crate) use dir::{DirFd, Lstat};
#[cfg(test)]
use dir::{fd_id, read_dir_fd};
pub(crate) use open::{link_no_replace, open_tmpfile, link_fd, rename_path, unlink_path, mkdir_path, open_raw, Walk};
pub use common::Unported;
pub(crate) use common::{is_unported, mode, O_PATH};
#[cfg(not(target_os = "linux"))]
pub(crate) use common::unported;

#[cfg(test)]
mod tests {
    //! The places where this layer does more than call nix: real-time signals (nix's `Signal`
    //! has none), `waitid` kept on raw libc for them, and the descriptor-bound `flock`.
    use super::*;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::Path;
    use std::time::Duration;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// A `sleep` child leading its own process group (so a group signal reaches only it).
    fn child() -> (i32, OwnedFd) {
        let c = Command::new("sleep").arg("300").process_group(0).stdin(Stdio::null()).spawn().expect("spawn sleep");
        let pid = c.id() as i32;
        // Reaped below through its pidfd, never through `Child`.
        std::mem::forget(c);
        (pid, pidfd_open(pid).expect("pidfd_open"))
    }

    /// Wait (at most 10 s) for the child to exit and reap it.
    fn reap(fd: &OwnedFd) -> Option<ChildExit> {
        poll_readable(&[fd.as_fd()], Some(Duration::from_secs(10))).expect("poll");
        waitid_pidfd(fd.as_fd(), false).expect("waitid")
    }

    #[test]
    fn kill_and_killpg_deliver_every_signal_number_and_waitid_reports_it() {
        let rt = libc::SIGRTMIN() + 1;
        for (sig, group) in [(libc::SIGTERM, false), (libc::SIGTERM, true), (rt, false), (rt, true)] {
            let (pid, fd) = child();
            let sent = if group { killpg(pid, sig) } else { kill(pid, sig) };
            if let Err(e) = sent {
                // Our own unreaped child: its pid cannot have been reused. Do not leak it.
                let _ = kill(pid, libc::SIGKILL);
                let _ = reap(&fd);
                panic!("signal {sig}, group {group}: {e}");
            }
            assert_eq!(reap(&fd), Some(ChildExit::Signal(sig)), "signal {sig}, group {group}");
        }
    }

    #[test]
    fn kill_probe_sees_a_live_child_and_not_a_reaped_one() {
        let (pid, fd) = child();
        kill_probe(pid).expect("live child");
        assert_eq!(waitid_pidfd(fd.as_fd(), false).expect("waitid"), None, "still running");
        kill(pid, libc::SIGKILL).expect("kill");
        assert_eq!(reap(&fd), Some(ChildExit::Signal(libc::SIGKILL)));
        assert_eq!(kill_probe(pid).unwrap_err().raw_os_error(), Some(libc::ESRCH));
    }

    #[test]
    fn capget_agrees_with_the_status_file() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap().trim();
        let eff = u64::from_str_radix(eff, 16).unwrap();
        assert_eq!(creds::has_cap_kill(), eff & (1 << 5) != 0, "CapEff {eff:#x}");
    }

    #[test]
    fn flock_lives_with_the_descriptor() {
        let dir = std::env::temp_dir().join(format!("pidguard-sys-flock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let open = || open_raw(&dir, libc::O_RDONLY | libc::O_DIRECTORY, 0, Walk::Kernel).expect("open dir");
        let (a, b) = (open(), open());
        assert!(try_flock_exclusive(a.as_fd()).unwrap(), "first taker wins");
        assert!(!try_flock_exclusive(b.as_fd()).unwrap(), "held by another open file description");
        // Still held after the call returned: nothing unlocked it behind the caller's back.
        assert!(!try_flock_exclusive(b.as_fd()).unwrap());
        drop(a);
        // Another test of this process may fork at any moment: until that child execs
        // (O_CLOEXEC), its copy of `a` still holds the lock. It lets go within moments.
        let released = (0..200).any(|_| {
            try_flock_exclusive(b.as_fd()).unwrap() || {
                std::thread::sleep(std::time::Duration::from_millis(10));
                false
            }
        });
        assert!(released, "closing the holder releases it");
        drop(b);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn dirfd_reaches_only_names_directly_in_its_directory() {
        let base = std::env::temp_dir().join(format!("pidguard-sys-dirfd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(base.join("outside"), "x").unwrap();
        std::fs::write(dir.join("a"), "a").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), dir.join("link")).unwrap();
        let d = DirFd::open(&dir, Walk::Kernel).unwrap();
        for bad in ["", ".", "..", "../outside", "sub/a", "a\0"] {
            let bad = std::ffi::OsStr::new(bad);
            assert_eq!(d.open_file(bad, libc::O_RDONLY).unwrap_err().raw_os_error(), Some(libc::EINVAL), "{bad:?}");
            assert_eq!(d.unlink(bad).unwrap_err().raw_os_error(), Some(libc::EINVAL), "{bad:?}");
            assert_eq!(d.rename(std::ffi::OsStr::new("a"), bad).unwrap_err().raw_os_error(), Some(libc::EINVAL), "{bad:?}");
            assert_eq!(d.lstat_id(bad).unwrap_err().raw_os_error(), Some(libc::EINVAL), "{bad:?}");
        }
        assert!(base.join("outside").exists() && dir.join("a").exists(), "nothing outside or inside was touched");
        // O_NOFOLLOW reaches openat: the link is refused, not followed out of the directory.
        let link = std::ffi::OsStr::new("link");
        assert_eq!(d.open_file(link, libc::O_RDONLY | libc::O_NOFOLLOW).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        // rename, lstat_id and unlink act on the names themselves.
        d.rename(std::ffi::OsStr::new("a"), std::ffi::OsStr::new("b")).unwrap();
        let (dev, ino) = d.lstat_id(std::ffi::OsStr::new("b")).unwrap();
        let m = std::fs::metadata(dir.join("b")).unwrap();
        assert_eq!((dev, ino), (std::os::unix::fs::MetadataExt::dev(&m), std::os::unix::fs::MetadataExt::ino(&m)));
        assert_ne!(d.lstat_id(link).unwrap(), (dev, ino));
        d.link_no_replace(std::ffi::OsStr::new("b"), std::ffi::OsStr::new("c")).unwrap();
        assert_eq!(d.link_no_replace(std::ffi::OsStr::new("b"), std::ffi::OsStr::new("c")).unwrap_err().raw_os_error(), Some(libc::EEXIST));
        d.unlink(link).unwrap();
        assert!(base.join("outside").exists(), "unlink removed the link, not its target");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn read_dir_fd_lists_every_entry_once_with_its_kind() {
        let dir = std::env::temp_dir().join(format!("pidguard-sys-readdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink("sub", dir.join("link-to-sub")).unwrap();
        // More names than one getdents64 buffer holds (32 KiB), so the loop goes round.
        let mut want: Vec<(String, bool)> = (0..1500).map(|i| (format!("file-{i:04}-{}", "x".repeat(20)), false)).collect();
        for (n, _) in &want {
            std::fs::write(dir.join(n), "").unwrap();
        }
        want.push(("sub".into(), true));
        want.push(("link-to-sub".into(), false));
        want.sort();
        let fd = open_raw(&dir, libc::O_RDONLY | libc::O_DIRECTORY, 0, Walk::Kernel).unwrap();
        let mut got: Vec<(String, bool)> = read_dir_fd(fd.as_fd()).unwrap().into_iter().map(|(n, d)| (n.into_string().unwrap(), d)).collect();
        got.sort();
        assert_eq!(got, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn open_raw_refuses_an_inner_nul_and_passes_flags_through() {
        let e = open_raw(Path::new("/tmp/a\0b"), libc::O_RDONLY, 0, Walk::Kernel).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        // O_NOFOLLOW reaches open(2): a symlink is refused with ELOOP.
        let dir = std::env::temp_dir().join(format!("pidguard-sys-open-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        let e = open_raw(&link, libc::O_RDONLY | libc::O_NOFOLLOW, 0, Walk::Kernel).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
