//! macOS (compile-checked only): one process's record from `proc_pidinfo(2)` —
//! `PROC_PIDTBSDINFO` (start time in µs, parent, group, uids, zombie state) between two reads
//! of `PROC_PIDUNIQIDENTIFIERINFO`'s `p_uniqueid`, unique per process per boot — and the
//! machine's facts: `gethostuuid(2)` as the machine id, `kern.bootsessionuuid` as the boot id,
//! no pid namespace. argv from `KERN_PROCARGS2`, the executable from `proc_pidpath`.

use std::io;
use std::path::PathBuf;
use std::sync::OnceLock;

use super::bsd_parse::Facts;
use super::sysctl::{sysctl_mib, sysctl_name};
use super::bsd_parse::{self, bsdinfo, uniqinfo};

/// `PROC_PIDUNIQIDENTIFIERINFO` of `<sys/proc_info.h>` (not in the `libc` crate).
const PROC_PIDUNIQIDENTIFIERINFO: libc::c_int = 17;

// The offsets the pure parser reads (and its Linux tests use) are the `libc` crate's layout of
// `proc_bsdinfo`: a wrong one fails this build, not a run.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<libc::proc_bsdinfo>() == bsdinfo::SIZE);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_status) == bsdinfo::STATUS);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_pid) == bsdinfo::PID);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_ppid) == bsdinfo::PPID);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_ruid) == bsdinfo::RUID);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_svuid) == bsdinfo::SVUID);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_comm) == bsdinfo::COMM);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_name) == bsdinfo::COMM + bsdinfo::COMM_LEN);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_pgid) == bsdinfo::PGID);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_start_tvsec) == bsdinfo::START_TVSEC);
    assert!(offset_of!(libc::proc_bsdinfo, pbi_start_tvusec) == bsdinfo::START_TVUSEC);
};

/// `proc_pidinfo(pid, flavor)` into `N` bytes, which it must fill exactly. Errors: its errno
/// (`ESRCH`: no such process; `EPERM`), `EIO` for a short answer or no errno.
fn pidinfo<const N: usize>(pid: i32, flavor: libc::c_int) -> io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    // SAFETY: `buf` is valid for `N` bytes, the size passed.
    let n = unsafe { libc::proc_pidinfo(pid, flavor, 0, buf.as_mut_ptr().cast(), N as libc::c_int) };
    if n <= 0 {
        let e = io::Error::last_os_error();
        return Err(if e.raw_os_error().unwrap_or(0) == 0 { io::Error::from_raw_os_error(libc::EIO) } else { e });
    }
    if n as usize != N {
        return Err(io::Error::from_raw_os_error(libc::EIO));
    }
    Ok(buf)
}

fn unique_id(pid: i32) -> io::Result<Option<u64>> {
    pidinfo::<{ uniqinfo::SIZE }>(pid, PROC_PIDUNIQIDENTIFIERINFO).map(|b| bsd_parse::parse_uniqueid(&b))
}

/// One consistent read of `pid`: the unique id, the BSD record, the unique id again — equal
/// ids prove both reads were of one process (three tries, then `EAGAIN`). A zombie whose id
/// cannot be read keeps `unique: None`: its state alone says it has exited.
pub(super) fn read_proc(pid: i32) -> io::Result<Facts> {
    for _ in 0..3 {
        let before = unique_id(pid);
        let raw = pidinfo::<{ bsdinfo::SIZE }>(pid, libc::PROC_PIDTBSDINFO)?;
        let proc = bsd_parse::parse_proc_bsdinfo(&raw)
            .filter(|p| p.pid == pid)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable proc_bsdinfo"))?;
        let after = unique_id(pid);
        let unique = match (before, after) {
            (Ok(Some(a)), Ok(Some(b))) if a == b => Some(a),
            // Another process took the number between the reads.
            (Ok(Some(_)), Ok(Some(_))) => continue,
            _ if proc.is_zombie() => None,
            (Err(e), _) | (_, Err(e)) => return Err(e),
            _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "no p_uniqueid")),
        };
        return Ok(Facts { start: proc.start_us, unique, proc });
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// The host UUID from `gethostuuid(2)` (waiting at most 5 s), as a token field; `None` when it
/// cannot be had. Cached only once known.
pub fn machine_id() -> Option<&'static str> {
    static ID: OnceLock<String> = OnceLock::new();
    if let Some(id) = ID.get() {
        return Some(id);
    }
    let mut u = [0u8; 16];
    let wait = libc::timespec { tv_sec: 5, tv_nsec: 0 };
    // SAFETY: a 16-byte buffer, as gethostuuid requires, and a valid timeout.
    if unsafe { libc::gethostuuid(u.as_mut_ptr(), &wait) } != 0 || u == [0; 16] {
        return None;
    }
    Some(ID.get_or_init(|| bsd_parse::uuid_text(&u)))
}

/// `kern.bootsessionuuid`, a fresh UUID every boot, as a token field. Cached once read;
/// `Err(errno)` when it cannot be read — never a value, never cached.
pub fn boot_id() -> Result<&'static str, i32> {
    static ID: OnceLock<String> = OnceLock::new();
    if let Some(id) = ID.get() {
        return Ok(id);
    }
    super::fault::check(super::fault::Call::MachineFact).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let mut buf = [0u8; 128];
    let n = sysctl_name(c"kern.bootsessionuuid", &mut buf).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let text = bsd_parse::sysctl_text(&buf[..n]).ok_or(libc::EIO)?;
    if text.trim().is_empty() {
        return Err(libc::ENOENT);
    }
    Ok(ID.get_or_init(|| super::common::token_field(text)))
}

/// macOS has no pid namespaces: every pid means the same process to every reader (0).
pub fn pidns_ino() -> Result<u64, i32> {
    super::fault::check(super::fault::Call::MachineFact).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    Ok(0)
}

/// Every pid (`proc_listallpids`).
pub fn list_pids() -> io::Result<Vec<i32>> {
    // SAFETY: a NULL buffer asks for the count.
    let n = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // Room for processes forked meanwhile.
    let mut buf = vec![0 as libc::pid_t; n as usize + 64];
    let bytes = (buf.len() * std::mem::size_of::<libc::pid_t>()) as libc::c_int;
    // SAFETY: `buf` is valid for `bytes` bytes.
    let got = unsafe { libc::proc_listallpids(buf.as_mut_ptr().cast(), bytes) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate((got as usize).min(buf.len()));
    buf.retain(|&p| p > 0);
    Ok(buf)
}

/// The argv of `pid` from `KERN_PROCARGS2` (see [`bsd_parse::parse_procargs2`]). Errors: the
/// sysctl's errno (`EINVAL` for a zombie or a process of another user), `InvalidData`.
pub fn read_cmdline(pid: i32) -> io::Result<Vec<Vec<u8>>> {
    super::fault::check(super::fault::Call::ProcRead)?;
    let mut argmax = [0u8; 4];
    sysctl_mib(&[libc::CTL_KERN, libc::KERN_ARGMAX], &mut argmax)?;
    let size = usize::try_from(i32::from_ne_bytes(argmax)).unwrap_or(0).clamp(4096, 16 << 20);
    let mut buf = vec![0u8; size];
    let n = sysctl_mib(&[libc::CTL_KERN, libc::KERN_PROCARGS2, pid], &mut buf)?;
    bsd_parse::parse_procargs2(&buf[..n]).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable KERN_PROCARGS2"))
}

/// The executable of `pid` (`proc_pidpath`), when readable.
pub fn read_exe(pid: i32) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; libc::PROC_PIDPATHINFO_MAXSIZE as usize];
    // SAFETY: `buf` is valid for its length.
    let n = unsafe { libc::proc_pidpath(pid, buf.as_mut_ptr().cast(), buf.len() as u32) };
    (n > 0).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(&buf[..n as usize])))
}

/// The create time of a process whose start is `start_us` (µs since the epoch, as macOS
/// records it at fork: a later clock step does not move it), in seconds.
pub fn create_time(start_us: u64) -> io::Result<f64> {
    Ok(start_us as f64 / 1e6)
}
