//! Shared pieces of the pidguard benchmarks: a live-process fixture with two pidfiles
//! (with and without the start-token xattr), the "syscall floor" of `validate_pid_file`, and
//! small statistics helpers. Not part of the test suite; run `./scripts/bench.sh`.
//!
//! # The syscall floor
//! [`floor_validate`] performs, with raw `libc` calls and no allocation, exactly the system calls
//! that pidguard's `check_pid_file` design needs for a live process (see `BENCHMARKS.md`):
//!
//! | step | system calls |
//! |---|---|
//! | pidfile | `openat(O_NOFOLLOW\|O_NONBLOCK)`, `fstat`, `read`, `fgetxattr(user.pidguard.token)`, `close` |
//! | namespace of the record (token only) | `stat(/proc/self/ns/pid)` |
//! | pin | `pidfd_open` |
//! | identity | `openat`/`read`/`close` of `/proc/<pid>/stat` |
//! | the pinned process still holds the pid | `pidfd_send_signal(0)` |
//! | pidfs inode | `fstatfs`, `fstat` on the pidfd |
//! | psutil create time (`btime`) | `openat`/`read`/`close` of `/proc/stat` |
//! | release | `close(pidfd)` |
//!
//! [`floor_pidfd_only`] is the cheaper design the issue hints at: when the record carries a pidfs
//! inode the pidfd alone proves identity (inode) and liveness (`poll`), with no procfs read.
//!
//! These are the floors of the first design (issue 9), kept for the criterion history. The floor
//! of today's rules, against which the goals of issue 36 are stated, is `bench/floor/`
//! (`floor_validate.c` and `floor_cleanup.c`, their calls checked by `strace -c`; BENCHMARKS.md).
#![allow(clippy::missing_safety_doc)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// A live `sleep` child in its own process group, and two abx-dl pidfiles naming it: `tok.pid`
/// (written by pidguard, so with the `user.pidguard.token` xattr) and `notok.pid` (content and
/// mtime only, as the Python original writes it).
pub struct Fixture {
    /// The child.
    pub child: Child,
    /// The directory holding the pidfiles (removed on drop).
    pub dir: PathBuf,
    /// The pidfile with the token xattr.
    pub with_token: PathBuf,
    /// The pidfile without it.
    pub without_token: PathBuf,
}

impl Fixture {
    /// Spawn the child and write both files under a fresh directory in `base`.
    pub fn new(base: &Path) -> Fixture {
        let dir = base.join(format!("pidguard-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create fixture dir");
        let child = Command::new("sleep")
            .arg("100000")
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn sleep");
        let pid = child.id() as i32;
        let ct = pidguard::lookup(pid).expect("lookup child").create_time;
        let with_token = dir.join("tok.pid");
        pidguard::write_pid_file_with_mtime(&with_token, pid, ct).expect("write tok.pid");
        let without_token = dir.join("notok.pid");
        std::fs::write(&without_token, pid.to_string()).expect("write notok.pid");
        let f = std::fs::File::options().write(true).open(&without_token).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(ct)).unwrap();
        drop(f);
        let fx = Fixture { child, dir, with_token, without_token };
        assert!(has_token(&fx.with_token), "no user xattr support under {}", base.display());
        assert!(!has_token(&fx.without_token));
        for p in [&fx.with_token, &fx.without_token] {
            assert!(pidguard::validate_pid_file(p, None, 5.0), "fixture {} is not valid", p.display());
            assert!(floor_validate(&cpath(p), 5.0), "floor says {} is not valid", p.display());
        }
        assert!(floor_pidfd_only(&cpath(&fx.with_token)));
        fx
    }
    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn has_token(p: &Path) -> bool {
    let c = cpath(p);
    let mut buf = [0u8; 256];
    // SAFETY: valid C string and buffer.
    unsafe { libc::getxattr(c.as_ptr(), c"user.pidguard.token".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) > 0 }
}

/// A path as a C string.
pub fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("path without NUL")
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default().trim().to_string()
}

fn ids() -> &'static (String, String) {
    static IDS: OnceLock<(String, String)> = OnceLock::new();
    IDS.get_or_init(|| {
        let mut m = read_trim("/etc/machine-id");
        if m.is_empty() {
            m = read_trim("/proc/sys/kernel/hostname");
        }
        (m, read_trim("/proc/sys/kernel/random/boot_id"))
    })
}

fn clk_tck() -> f64 {
    static T: OnceLock<f64> = OnceLock::new();
    // SAFETY: sysconf has no memory effects.
    *T.get_or_init(|| unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64)
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

/// Start ticks (field 22) from a `/proc/<pid>/stat` line, and whether it is a zombie.
fn parse_stat(buf: &[u8]) -> Option<(u64, bool)> {
    let close = buf.iter().rposition(|&b| b == b')')?;
    let mut f = buf[close + 1..].split(|&b| b == b' ').filter(|s| !s.is_empty());
    let state = f.next()?;
    let zombie = matches!(state, b"Z" | b"X");
    let ticks = parse_u64(f.nth(18)?)?;
    Some((ticks, zombie))
}

struct Fd(i32);
impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor.
        unsafe { libc::close(self.0) };
    }
}

unsafe fn read_all(fd: i32, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        let r = libc::read(fd, buf[n..].as_mut_ptr().cast(), buf.len() - n);
        if r <= 0 {
            break;
        }
        n += r as usize;
    }
    n
}

unsafe fn proc_stat_of(pid: i32) -> Option<(u64, bool)> {
    let mut path = [0u8; 32];
    let s = format_proc_path(&mut path, pid);
    let fd = libc::open(s.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let fd = Fd(fd);
    let mut buf = [0u8; 512];
    let n = read_all(fd.0, &mut buf);
    parse_stat(&buf[..n])
}

/// `/proc/<pid>/stat\0` without allocating.
fn format_proc_path(out: &mut [u8; 32], pid: i32) -> &[u8] {
    let mut digits = [0u8; 12];
    let mut d = 0;
    let mut v = pid as u32;
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut n = 0;
    for &b in b"/proc/" {
        out[n] = b;
        n += 1;
    }
    for i in (0..d).rev() {
        out[n] = digits[i];
        n += 1;
    }
    for &b in b"/stat\0" {
        out[n] = b;
        n += 1;
    }
    &out[..n]
}

unsafe fn btime() -> Option<u64> {
    let fd = libc::open(c"/proc/stat".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let fd = Fd(fd);
    let mut buf = [0u8; 16384];
    let n = read_all(fd.0, &mut buf);
    let b = &buf[..n];
    let i = b.windows(6).position(|w| w == b"btime ")?;
    let rest = &b[i + 6..];
    let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
    parse_u64(&rest[..end])
}

/// The pidfile part: pid, mtime (s), and the token xattr length (0 when absent).
unsafe fn read_pidfile(path: &std::ffi::CStr, tok: &mut [u8; 256]) -> Option<(i32, f64, usize)> {
    let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let fd = Fd(fd);
    let mut st: libc::stat = std::mem::zeroed();
    if libc::fstat(fd.0, &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return None;
    }
    let mtime = st.st_mtime as f64 + st.st_mtime_nsec as f64 * 1e-9;
    let mut buf = [0u8; 64];
    let n = libc::read(fd.0, buf.as_mut_ptr().cast(), buf.len());
    if n <= 0 {
        return None;
    }
    let pid = parse_u64(buf[..n as usize].trim_ascii())?;
    if pid == 0 || pid > 4_194_304 {
        return None;
    }
    let t = libc::fgetxattr(fd.0, c"user.pidguard.token".as_ptr(), tok.as_mut_ptr().cast(), tok.len());
    Some((pid as i32, mtime, t.max(0) as usize))
}

/// The recorded token's fields: machine, boot, pidns inode, start ticks, pidfs inode.
fn split_token(t: &[u8]) -> Option<(&[u8], &[u8], u64, u64, Option<u64>)> {
    let mut it = t.split(|&b| b == b':');
    if it.next()? != b"linux1" {
        return None;
    }
    let m = it.next()?;
    let b = it.next()?;
    let ns = parse_u64(it.next()?)?;
    let ticks = parse_u64(it.next()?)?;
    let pfs = it.next().and_then(parse_u64);
    Some((m, b, ns, ticks, pfs))
}

unsafe fn own_pidns() -> u64 {
    let mut st: libc::stat = std::mem::zeroed();
    if libc::stat(c"/proc/self/ns/pid".as_ptr(), &mut st) != 0 {
        return 0;
    }
    st.st_ino
}

unsafe fn pidfs_ino(fd: i32) -> Option<u64> {
    let mut sfs: libc::statfs = std::mem::zeroed();
    if libc::fstatfs(fd, &mut sfs) != 0 || sfs.f_type as i64 != 0x5049_4446 {
        return None;
    }
    let mut st: libc::stat = std::mem::zeroed();
    if libc::fstat(fd, &mut st) != 0 {
        return None;
    }
    Some(st.st_ino)
}

/// The syscall floor of pidguard's `validate_pid_file` design (see the module docs): the same
/// system calls and decisions, raw `libc`, no allocation, no error reporting.
pub fn floor_validate(path: &std::ffi::CStr, tolerance: f64) -> bool {
    // SAFETY: raw system calls on descriptors this function owns.
    unsafe {
        let mut tok = [0u8; 256];
        let Some((pid, mtime, tlen)) = read_pidfile(path, &mut tok) else { return false };
        let rec = if tlen > 0 {
            let Some(r) = split_token(&tok[..tlen]) else { return false };
            let (m, b) = ids();
            if r.0 != m.as_bytes() || r.1 != b.as_bytes() || r.2 != own_pidns() {
                return false;
            }
            Some(r)
        } else {
            None
        };
        let pfd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if pfd < 0 {
            return false;
        }
        let pfd = Fd(pfd);
        let Some((ticks, zombie)) = proc_stat_of(pid) else { return false };
        if libc::syscall(libc::SYS_pidfd_send_signal, pfd.0, 0, std::ptr::null::<libc::siginfo_t>(), 0) != 0 {
            return false;
        }
        let ino = pidfs_ino(pfd.0);
        let Some(bt) = btime() else { return false };
        let ct = bt as f64 + ticks as f64 / clk_tck();
        if zombie {
            return false;
        }
        match rec {
            Some((_, _, _, rticks, rino)) => rticks == ticks && !matches!((rino, ino), (Some(a), Some(b)) if a != b),
            None => (mtime - ct).abs() <= tolerance,
        }
    }
}

/// The cheaper design for a record with a pidfs inode: pidfile, namespace check, `pidfd_open`,
/// `fstatfs`+`fstat` (the inode proves identity), `poll` (not exited), `close`. No procfs read.
pub fn floor_pidfd_only(path: &std::ffi::CStr) -> bool {
    // SAFETY: raw system calls on descriptors this function owns.
    unsafe {
        let mut tok = [0u8; 256];
        let Some((pid, _, tlen)) = read_pidfile(path, &mut tok) else { return false };
        let Some((m, b, ns, _, Some(rino))) = split_token(&tok[..tlen]) else { return false };
        let ids = ids();
        if m != ids.0.as_bytes() || b != ids.1.as_bytes() || ns != own_pidns() {
            return false;
        }
        let pfd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if pfd < 0 {
            return false;
        }
        let pfd = Fd(pfd);
        if pidfs_ino(pfd.0) != Some(rino) {
            return false;
        }
        let mut p = libc::pollfd { fd: pfd.0, events: libc::POLLIN, revents: 0 };
        libc::poll(&mut p, 1, 0) == 0
    }
}

/// Open/read/close of `/proc/<pid>/stat` alone (one component of the floor).
pub fn part_proc_pid_stat(pid: i32) -> bool {
    // SAFETY: see proc_stat_of.
    unsafe { proc_stat_of(pid).is_some() }
}

/// `pidfd_open` + `fstatfs` + `fstat` + `close` alone (one component of the floor).
pub fn part_pidfd(pid: i32) -> bool {
    // SAFETY: raw system calls on a descriptor this function owns.
    unsafe {
        let pfd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if pfd < 0 {
            return false;
        }
        let pfd = Fd(pfd);
        pidfs_ino(pfd.0).is_some()
    }
}

/// Open/read/close of `/proc/stat` for `btime` alone (one component of the floor).
pub fn part_btime() -> bool {
    // SAFETY: see btime.
    unsafe { btime().is_some() }
}

/// The pidfile open/fstat/read/fgetxattr/close alone (one component of the floor).
pub fn part_pidfile(path: &std::ffi::CStr) -> bool {
    let mut tok = [0u8; 256];
    // SAFETY: see read_pidfile.
    unsafe { read_pidfile(path, &mut tok).is_some() }
}

/// Peak resident set size of this process (`VmHWM`), KiB.
pub fn vm_hwm_kib() -> u64 {
    status_field("VmHWM:")
}

/// Current resident set size (`VmRSS`), KiB.
pub fn vm_rss_kib() -> u64 {
    status_field("VmRSS:")
}

fn status_field(name: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim().trim_end_matches(" kB").trim().to_string())))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Reset this process's peak RSS to its current RSS (`/proc/self/clear_refs` ← `5`, Linux ≥ 4.0).
/// Returns whether the kernel accepted it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Median and percentile of a sample (sorted copy; nearest-rank percentile).
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let rank = ((p / 100.0) * s.len() as f64).ceil().max(1.0) as usize;
    s[rank.min(s.len()) - 1]
}
