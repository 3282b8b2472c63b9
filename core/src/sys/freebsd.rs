//! FreeBSD (compile-checked only): one process's `kinfo_proc` from `sysctl(KERN_PROC_PID)` —
//! `ki_start`, `ki_pgid`, `ki_stat`, the uids, the jail — with its start turned into µs since
//! boot (`ki_start` less `kern.boottime`, which a clock step moves together), and the machine's
//! facts: `kern.hostuuid` as the machine id, `kern.boot_id` (FreeBSD ≥ 13) as the boot id, the
//! caller's jail as its pid space. No per-process unique id exists: (pid, start µs since boot)
//! is the identity. argv from `KERN_PROC_ARGS`, the executable from `KERN_PROC_PATHNAME`.

use std::io;
use std::path::PathBuf;
use std::sync::OnceLock;

use super::bsd_parse::Facts;
use super::sysctl::{sysctl_mib, sysctl_name, sysctl_size};
use super::bsd_parse::{self, kinfo, BsdProc};

// The offsets the pure parser reads (and its Linux tests use) are the `libc` crate's layout of
// `kinfo_proc`: a wrong one fails this build, not a run.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<libc::kinfo_proc>() == kinfo::SIZE);
    assert!(offset_of!(libc::kinfo_proc, ki_structsize) == kinfo::STRUCTSIZE);
    assert!(offset_of!(libc::kinfo_proc, ki_pid) == kinfo::PID);
    assert!(offset_of!(libc::kinfo_proc, ki_ppid) == kinfo::PPID);
    assert!(offset_of!(libc::kinfo_proc, ki_pgid) == kinfo::PGID);
    assert!(offset_of!(libc::kinfo_proc, ki_sid) == kinfo::SID);
    assert!(offset_of!(libc::kinfo_proc, ki_ruid) == kinfo::RUID);
    assert!(offset_of!(libc::kinfo_proc, ki_svuid) == kinfo::SVUID);
    assert!(offset_of!(libc::kinfo_proc, ki_start) == kinfo::START);
    assert!(size_of::<libc::timeval>() == 16);
    assert!(offset_of!(libc::kinfo_proc, ki_stat) == kinfo::STAT);
    assert!(offset_of!(libc::kinfo_proc, ki_comm) == kinfo::COMM);
    assert!(offset_of!(libc::kinfo_proc, ki_emul) == kinfo::COMM + kinfo::COMM_LEN);
    assert!(offset_of!(libc::kinfo_proc, ki_jid) == kinfo::JID);
    assert!(offset_of!(libc::kinfo_proc, ki_numthreads) == kinfo::NUMTHREADS);
};

/// The `kinfo_proc` of `pid`. `ESRCH`: no such process (or hidden by the caller's jail).
fn kinfo_proc(pid: i32) -> io::Result<BsdProc> {
    let mut buf = vec![0u8; kinfo::SIZE];
    let n = sysctl_mib(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PID, pid], &mut buf)?;
    if n == 0 {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    bsd_parse::parse_kinfo_proc(&buf[..n])
        .filter(|p| p.pid == pid)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable kinfo_proc"))
}

/// `kern.boottime` in µs since the epoch: the boot time as the wall clock says it now.
fn boottime_us() -> io::Result<u64> {
    let mut buf = [0u8; 16];
    let n = sysctl_mib(&[libc::CTL_KERN, libc::KERN_BOOTTIME], &mut buf)?;
    bsd_parse::timeval_us(&buf[..n]).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable kern.boottime"))
}

/// One read of `pid` with its start as µs since boot, the boot time read before and after the
/// record (a clock step in between: read again; three tries, then `EAGAIN`).
pub(super) fn read_proc(pid: i32) -> io::Result<Facts> {
    for _ in 0..3 {
        let before = boottime_us()?;
        let proc = kinfo_proc(pid)?;
        let after = boottime_us()?;
        if let Some(start) = bsd_parse::start_since_boot(proc.start_us, before, after) {
            return Ok(Facts { proc, start, unique: None });
        }
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// `kern.hostuuid`, as a token field; `None` when unset (all zeros) or unreadable. Cached only
/// once known.
pub fn machine_id() -> Option<&'static str> {
    static ID: OnceLock<String> = OnceLock::new();
    if let Some(id) = ID.get() {
        return Some(id);
    }
    let mut buf = [0u8; 128];
    let n = sysctl_name(c"kern.hostuuid", &mut buf).ok()?;
    let text = bsd_parse::sysctl_text(&buf[..n])?.trim();
    if text.is_empty() || text.bytes().all(|b| b == b'0' || b == b'-') {
        return None;
    }
    Some(ID.get_or_init(|| super::common::token_field(text)))
}

/// `kern.boot_id` (16 random bytes fixed for the boot, FreeBSD ≥ 13), hex. Not
/// `kern.boottime`: a clock step moves that without a reboot. Cached once read; `Err(errno)`
/// when it cannot be read (`ENOENT` on older kernels: then nothing is judged) — never a value,
/// never cached.
pub fn boot_id() -> Result<&'static str, i32> {
    static ID: OnceLock<String> = OnceLock::new();
    if let Some(id) = ID.get() {
        return Ok(id);
    }
    super::fault::check(super::fault::Call::MachineFact).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let mut buf = [0u8; 16];
    let n = sysctl_name(c"kern.boot_id", &mut buf).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    if n != 16 || buf == [0; 16] {
        return Err(libc::ENOENT);
    }
    Ok(ID.get_or_init(|| bsd_parse::hex(&buf)))
}

/// The caller's jail id (its `kinfo_proc`'s `ki_jid`; 0 outside any jail): the pid space its
/// pids mean something in. Read afresh each time (`jail_attach` moves a process).
pub fn pidns_ino() -> Result<u64, i32> {
    super::fault::check(super::fault::Call::MachineFact).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let me = kinfo_proc(super::unistd::getpid()).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    u64::try_from(me.jid).map_err(|_| libc::EIO)
}

/// Every pid visible to the caller (`KERN_PROC_PROC`).
pub fn list_pids() -> io::Result<Vec<i32>> {
    let mib = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC, 0];
    for _ in 0..3 {
        // Room for processes forked between the two calls.
        let mut buf = vec![0u8; sysctl_size(&mib)? + 64 * kinfo::SIZE];
        match sysctl_mib(&mib, &mut buf) {
            Ok(n) => {
                return bsd_parse::parse_kinfo_proc_list(&buf[..n]).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable KERN_PROC_PROC"));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// The argv of `pid` from `KERN_PROC_ARGS` (NUL-separated, as Linux's `cmdline`).
pub fn read_cmdline(pid: i32) -> io::Result<Vec<Vec<u8>>> {
    super::fault::check(super::fault::Call::ProcRead)?;
    let mut buf = vec![0u8; 256 << 10];
    let n = sysctl_mib(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_ARGS, pid], &mut buf)?;
    Ok(bsd_parse::split_nul_args(&buf[..n]))
}

/// The executable of `pid` (`KERN_PROC_PATHNAME`), when readable.
pub fn read_exe(pid: i32) -> Option<PathBuf> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    use std::os::unix::ffi::OsStrExt;
    let n = sysctl_mib(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PATHNAME, pid], &mut buf).ok()?;
    let path = &buf[..n];
    let path = &path[..path.iter().position(|&c| c == 0).unwrap_or(path.len())];
    (!path.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(path)))
}

/// The create time of a process that started `start_us` µs after boot: the boot time as the
/// wall clock says it now plus that (what `ki_start` says), in seconds.
pub fn create_time(start_us: u64) -> io::Result<f64> {
    Ok((boottime_us()? + start_us) as f64 / 1e6)
}
