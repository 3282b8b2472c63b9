//! Small, exact readers of the procfs files pidguard needs (proc(5)).
//!
//! On Linux, what this module says. On macOS and FreeBSD (compile-checked only) the same
//! functions answer from `proc_pidinfo`/`sysctl` (`bsd.rs`), so the layers above ask one set of
//! questions everywhere: the [`Stat`] of a pid, an unpinned [`ProcDir`], the machine's facts.
//! The pure parts (the `stat` and `status` parsers, the group scans, the exit rule) are common.

use std::collections::HashMap;
use std::io;
#[cfg(target_os = "linux")]
use std::fs;
#[cfg(target_os = "linux")]
use std::io::Read;
#[cfg(target_os = "linux")]
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::os::unix::fs::MetadataExt;
#[cfg(target_os = "linux")]
use std::path::PathBuf;
#[cfg(target_os = "linux")]
use std::sync::OnceLock;

#[cfg(target_os = "linux")]
use nix::fcntl::OFlag;

pub use super::common::Stat;
#[cfg(target_os = "linux")]
use super::common::token_field;
#[cfg(not(target_os = "linux"))]
pub use super::bsd::{
    boot_id, create_time, list_pids, machine_id, open_proc_dir, pidns_ino, read_cmdline, read_exe, read_stat, read_stat_at, read_uid, read_uids, read_uids_at,
    ProcDir,
};

/// Parse one `/proc/<pid>/stat` line. The command name is everything between the first `(` and
/// the **last** `)`, since it may itself contain spaces and `)`; the other fields follow the last
/// `)`. Returns `None` for anything that is not such a line.
pub fn parse_stat(buf: &[u8]) -> Option<Stat> {
    let open = buf.iter().position(|&b| b == b'(')?;
    let close = buf.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let comm = buf[open + 1..close].to_vec();
    let rest = std::str::from_utf8(&buf[close + 1..]).ok()?;
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?;
    if state.len() != 1 {
        return None;
    }
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    let session = f.next()?.parse().ok()?;
    // Fields 7..=19 are skipped (13 of them), then field 20 (`num_threads`), 21 skipped, 22.
    let num_threads = f.nth(13)?.parse().ok()?;
    let start_ticks = f.nth(1)?.parse().ok()?;
    Some(Stat { comm, state: state.as_bytes()[0], ppid, pgrp, session, num_threads, start_ticks })
}

/// Read a procfs file with plain `read(2)`s into `buf`, `chunk` bytes at a time. procfs files
/// report size 0, so std's `read_to_end` first asks `statx` and `lseek` for a size hint; on the
/// hot path of `validate_pid_file` those two calls are measurable (BENCHMARKS.md).
#[cfg(target_os = "linux")]
fn read_chunked(path: &str, buf: &mut Vec<u8>, chunk: usize) -> io::Result<()> {
    buf.clear();
    let mut f = fs::File::open(path)?;
    loop {
        let len = buf.len();
        buf.resize(len + chunk, 0);
        match f.read(&mut buf[len..]) {
            Ok(0) => {
                buf.truncate(len);
                return Ok(());
            }
            Ok(n) => buf.truncate(len + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(len),
            Err(e) => {
                buf.truncate(len);
                return Err(e);
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn read_small(path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
    read_chunked(path, buf, 1024)
}

/// Read and parse `/proc/<pid>/stat`. `ENOENT`/`ESRCH` mean no such process.
#[cfg(target_os = "linux")]
pub fn read_stat(pid: i32) -> io::Result<Stat> {
    super::fault::check(super::fault::Call::ProcRead)?;
    let mut buf = Vec::with_capacity(512);
    read_small(&format!("/proc/{pid}/stat"), &mut buf)?;
    parse_stat(&buf).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable /proc/<pid>/stat"))
}

/// What an unpinned handle holds of its process instead of a pidfd. On Linux an open
/// `/proc/<pid>` directory: reads through it ([`read_stat_at`], [`read_uids_at`]) fail with
/// `ESRCH` once that process is reaped, even after the number is reused. (On macOS and FreeBSD:
/// the pid and its identity, re-read and compared on every read, and a kqueue watching its
/// exit.)
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct ProcDir {
    fd: OwnedFd,
}

#[cfg(target_os = "linux")]
impl ProcDir {
    /// The process's unique id where the system has one beside the pid (macOS `p_uniqueid`);
    /// `None` on Linux (the pidfs inode comes through a pidfd, which an unpinned handle lacks).
    pub fn unique_id(&self) -> Option<u64> {
        None
    }

    /// A descriptor that becomes readable when the process exits, where the system gives one
    /// without a pidfd (a kqueue on macOS and FreeBSD); `None` on Linux: the caller polls.
    pub fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
}

/// Open the directory `/proc/<pid>`. The descriptor stays tied to that very process: reads
/// through it ([`read_stat_at`]) fail with `ESRCH` once the process is reaped, even after the
/// number is reused. This pins a process on kernels (or under seccomp profiles) without
/// `pidfd_open`.
#[cfg(target_os = "linux")]
pub fn open_proc_dir(pid: i32) -> io::Result<ProcDir> {
    super::fault::check(super::fault::Call::ProcRead)?;
    let fd = super::open::open_direct(std::path::Path::new(&format!("/proc/{pid}")), (OFlag::O_RDONLY | OFlag::O_DIRECTORY).bits(), 0)?;
    Ok(ProcDir { fd })
}

/// Read and parse `stat` under an open `/proc/<pid>` directory. `ESRCH`/`ENOENT`: that process
/// is reaped.
#[cfg(target_os = "linux")]
pub fn read_stat_at(dir: &ProcDir) -> io::Result<Stat> {
    super::fault::check(super::fault::Call::ProcRead)?;
    let buf = super::open::read_at(dir.fd.as_fd(), "stat")?;
    parse_stat(&buf).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable /proc/<pid>/stat"))
}

/// The real and saved uids from `status` under an open `/proc/<pid>` directory (see
/// [`read_uids`]). `ESRCH`/`ENOENT`: that process is reaped.
#[cfg(target_os = "linux")]
pub fn read_uids_at(dir: &ProcDir) -> io::Result<(u32, u32)> {
    super::open::read_at(dir.fd.as_fd(), "status").and_then(|b| parse_uids(&b))
}

/// psutil's create time of a process that started `start_ticks` after boot: `btime +
/// start_ticks / CLK_TCK`, seconds since the epoch, with `btime` read afresh. Errors: those of
/// [`btime`].
#[cfg(target_os = "linux")]
pub fn create_time(start_ticks: u64) -> io::Result<f64> {
    let bt = btime()?;
    Ok(start_ticks as f64 / super::unistd::clk_tck() as f64 + bt as f64)
}

/// `/proc/<pid>/cmdline` split at NUL bytes. Empty for kernel threads and most zombies.
///
/// A leader whose main thread exited (`pthread_exit`) while other threads run has an empty
/// `cmdline` of its own; the argv is then read from the first of its other threads
/// (`/proc/<pid>/task/<tid>/cmdline`) that has one, so the process keeps its argv.
#[cfg(target_os = "linux")]
pub fn read_cmdline(pid: i32) -> io::Result<Vec<Vec<u8>>> {
    super::fault::check(super::fault::Call::ProcRead)?;
    let mut buf = Vec::with_capacity(256);
    read_small(&format!("/proc/{pid}/cmdline"), &mut buf)?;
    if buf.is_empty() {
        // Only when empty: a kernel thread or a zombie has one task, and this finds nothing.
        if let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                let name = t.file_name();
                let Some(tid) = name.to_str() else { continue };
                if tid == pid.to_string() {
                    continue;
                }
                if read_small(&format!("/proc/{pid}/task/{tid}/cmdline"), &mut buf).is_ok() && !buf.is_empty() {
                    break;
                }
                buf.clear();
            }
        }
    }
    if buf.last() == Some(&0) {
        buf.pop();
    }
    if buf.is_empty() {
        return Ok(Vec::new());
    }
    Ok(buf.split(|&b| b == 0).map(<[u8]>::to_vec).collect())
}

/// The real uid from the `Uid:` line of `/proc/<pid>/status`.
#[cfg(target_os = "linux")]
pub fn read_uid(pid: i32) -> io::Result<u32> {
    let s = fs::read_to_string(format!("/proc/{pid}/status"))?;
    s.lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_ascii_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Uid line"))
}

/// The real and saved uids from the `Uid:` line of `/proc/<pid>/status`: the two a signal's
/// sender must match (kill(2): the sender's real or effective uid equals the target's real or
/// saved set-user-ID; the target's effective uid does not count).
#[cfg(target_os = "linux")]
pub fn read_uids(pid: i32) -> io::Result<(u32, u32)> {
    super::fault::check(super::fault::Call::ProcRead)?;
    let mut buf = Vec::with_capacity(1024);
    read_chunked(&format!("/proc/{pid}/status"), &mut buf, 2048)?;
    parse_uids(&buf)
}

/// The effective uid of `/proc/<pid>/status` (the second number of its `Uid:` line), read by
/// number: the caller confirms through its pin that the process still holds the number.
#[cfg(target_os = "linux")]
pub fn read_euid(pid: i32) -> io::Result<u32> {
    super::fault::check(super::fault::Call::ProcRead)?;
    let mut buf = Vec::with_capacity(1024);
    read_chunked(&format!("/proc/{pid}/status"), &mut buf, 2048)?;
    std::str::from_utf8(&buf)
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("Uid:")))
        .and_then(|l| l.split_ascii_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Uid line"))
}

/// The real and saved uids of a `status` file's content.
pub fn parse_uids(status: &[u8]) -> io::Result<(u32, u32)> {
    parse_uids_opt(status).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Uid line"))
}

/// The first and third numbers of a `status` file's `Uid:` line (real, effective, saved, fs):
/// the real and the saved uid.
pub(crate) fn parse_uids_opt(status: &[u8]) -> Option<(u32, u32)> {
    let text = std::str::from_utf8(status).ok()?;
    let mut it = text.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_ascii_whitespace().map(|v| v.parse::<u32>());
    let real = it.next()?.ok()?;
    let _effective = it.next()?.ok()?;
    let saved = it.next()?.ok()?;
    Some((real, saved))
}


/// The target of `/proc/<pid>/exe`, when readable.
#[cfg(target_os = "linux")]
pub fn read_exe(pid: i32) -> Option<PathBuf> {
    fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// `btime` of `/proc/stat`: the boot time in whole seconds since the epoch, as the kernel
/// computes it now from the wall clock (it moves when the clock is stepped). Read afresh on
/// every call, as psutil does.
#[cfg(target_os = "linux")]
pub fn btime() -> io::Result<u64> {
    let mut buf = Vec::with_capacity(8192);
    read_chunked("/proc/stat", &mut buf, 8192)?;
    let s = String::from_utf8_lossy(&buf);
    s.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no btime in /proc/stat"))
}

/// The kernel's hard limit on pids, `PID_MAX_LIMIT` on 64-bit kernels
/// (include/linux/threads.h): no process can have a larger pid.
pub const PID_MAX_LIMIT: i32 = 4_194_304;

/// The largest well-formed pid: [`PID_MAX_LIMIT`], a constant. `kernel.pid_max` is not a bound
/// on live pids — it can be lowered while processes above it run (Qihoo360/phptrace#7) — so it
/// bounds nothing here; a pid up to the hard limit is judged by its identity.
pub fn pid_max() -> i32 {
    PID_MAX_LIMIT
}

/// `/proc/sys/kernel/pid_max` as the kernel says it now (informational only: see [`pid_max`]).
/// Errors: the read's, or `InvalidData`; never cached.
#[cfg(target_os = "linux")]
pub fn kernel_pid_max() -> io::Result<i32> {
    let s = fs::read_to_string("/proc/sys/kernel/pid_max")?;
    s.trim().parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "unparsable pid_max"))
}

/// The value a token field takes when a fact is unknown. Never equal to anything: see
/// [`crate::identity`]'s comparison, which treats it as unknown, not as a value.
pub const UNKNOWN: &str = "unknown";

/// `/etc/machine-id`, else the host name (`uname(2)`, no `/proc` needed), as a token field;
/// `None` when unknown: the file is empty or `uninitialized` (first boot, systemd's
/// machine-id(5)) or unreadable and no host name can be had. Cached only once known: a failed
/// read is never a value and is tried again next time.
#[cfg(target_os = "linux")]
pub fn machine_id() -> Option<&'static str> {
    static ID: OnceLock<String> = OnceLock::new();
    if let Some(id) = ID.get() {
        return Some(id);
    }
    let id = match fs::read_to_string("/etc/machine-id") {
        Ok(s) if s.trim().is_empty() || s.trim() == "uninitialized" => None,
        Ok(s) => Some(s),
        Err(_) => hostname(),
    }?;
    Some(ID.get_or_init(|| token_field(&id)))
}

/// The host name from `gethostname(2)` (`uname`, no `/proc`), when it has one.
#[cfg(target_os = "linux")]
fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname NUL-terminates within it
    // when the name fits, and the last byte is never written (len - 1).
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if r != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let h = String::from_utf8_lossy(&buf[..end]).into_owned();
    (!h.trim().is_empty()).then_some(h)
}

/// `/proc/sys/kernel/random/boot_id`, a fresh UUID every boot, as a token field. Cached once
/// read; `Err(errno)` when it cannot be read (no `/proc`: a chroot, a minimal container) —
/// never a value, never cached.
#[cfg(target_os = "linux")]
pub fn boot_id() -> Result<&'static str, i32> {
    static ID: OnceLock<String> = OnceLock::new();
    if let Some(id) = ID.get() {
        return Ok(id);
    }
    super::fault::check(super::fault::Call::MachineFact).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let raw = fs::read_to_string("/proc/sys/kernel/random/boot_id").map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    if raw.trim().is_empty() {
        return Err(libc::ENODATA);
    }
    Ok(ID.get_or_init(|| token_field(&raw)))
}

/// The inode of `/proc/self/ns/pid`: which PID namespace our pids mean something in;
/// `Err(errno)` when it cannot be read (no `/proc`), or `EXDEV` when the `/proc` mount is of
/// another PID namespace (its `/proc/self` is not our pid) — never a value, never cached.
///
/// A process's PID namespace is fixed when it is created and never changes (pid_namespaces(7);
/// `setns`/`unshare` only move its future children), so the value is cached — keyed by our pid,
/// because a child forked after `unshare(CLONE_NEWPID)` inherits the cache but lives in the new
/// namespace.
#[cfg(target_os = "linux")]
pub fn pidns_ino() -> Result<u64, i32> {
    use std::sync::Mutex;
    static CACHE: Mutex<Option<(u64, u64)>> = Mutex::new(None);
    // Keyed by the fork generation rather than the pid: no system call on the hot path.
    let gen = super::unistd::fork_generation();
    let mut c = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    match *c {
        Some((g, ino)) if g == gen => Ok(ino),
        _ => {
            super::fault::check(super::fault::Call::MachineFact).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
            proc_is_ours()?;
            let ino = fs::metadata("/proc/self/ns/pid").map(|m| m.ino()).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
            *c = Some((gen, ino));
            Ok(ino)
        }
    }
}

/// `Ok` when the `/proc` mount is of our own PID namespace: its `/proc/self` names our pid.
///
/// A process in a new PID namespace whose mount namespace still shows the parent's procfs
/// (`unshare --pid --fork` without `--mount-proc`, a container given the host's `/proc`) reads,
/// at `/proc/<n>`, whichever process has the number n *in the mount's namespace*: another
/// process's uids, stat and command line. A pidfd still pins the right process, so such reads
/// would judge one process by another's facts. `Err(EXDEV)` then, and every machine fact is
/// unknown (`machine-identity-unreadable: EXDEV`): nothing is judged, signalled or removed.
#[cfg(target_os = "linux")]
fn proc_is_ours() -> Result<(), i32> {
    let link = fs::read_link("/proc/self").map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    match link.to_str().and_then(|s| s.parse::<u32>().ok()) {
        Some(pid) if pid == std::process::id() => Ok(()),
        _ => Err(libc::EXDEV),
    }
}

/// The children of `pid`, from `/proc/<pid>/task/*/children` (Linux ≥ 4.2 with
/// `CONFIG_PROC_CHILDREN`; a child is listed under the thread that forked it). Empty when `pid`
/// is gone (`ENOENT`/`ESRCH`: it has no children then; its orphans moved to their reaper).
/// Errors: any other errno (`EACCES` under `hidepid`): not "no children".
#[cfg(target_os = "linux")]
pub fn children(pid: i32) -> io::Result<Vec<i32>> {
    let gone = |e: &io::Error| matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH));
    let tasks = match fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(t) => t,
        Err(e) if gone(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for t in tasks {
        let t = t?;
        let mut p = t.path();
        p.push("children");
        match fs::read(&p) {
            Ok(text) => out.extend(text.split(|b| b.is_ascii_whitespace()).filter_map(|w| std::str::from_utf8(w).ok()?.parse::<i32>().ok())),
            Err(e) if gone(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The children of `pid`: not ported outside Linux (only a subreaper supervisor's tree walk asks,
/// and supervisors are Linux's: `sys::spawn::spawn_supervised` fails with `ENOSYS` there).
#[cfg(not(target_os = "linux"))]
pub fn children(_pid: i32) -> io::Result<Vec<i32>> {
    Err(super::unported("the children of a process (a subreaper supervisor's tree)"))
}

/// Every numeric entry of `/proc`: the pids visible in our `/proc` mount.
#[cfg(target_os = "linux")]
pub fn list_pids() -> io::Result<Vec<i32>> {
    let mut out = Vec::with_capacity(512);
    for e in fs::read_dir("/proc")? {
        let e = e?;
        if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) {
            out.push(pid);
        }
    }
    Ok(out)
}

/// Members of process group `pgid` that have not exited, as `(pid, stat)`: a zombie is left out,
/// a leader in `Z` whose other threads run is a member ([`thread_group_exited`]).
pub fn group_members(pgid: i32) -> io::Result<Vec<(i32, Stat)>> {
    let mut out = Vec::new();
    for pid in list_pids()? {
        if let Ok(st) = read_stat(pid) {
            if st.pgrp == pgid && !thread_group_exited(&st, None) {
                out.push((pid, st));
            }
        }
    }
    Ok(out)
}

/// Members of every process group that are not zombies, from one pass over `/proc`:
/// `pgid → pids`, each list in `/proc` order (the order [`group_members`] gives). For callers
/// that need the members of many groups at one moment (one scan instead of one per group).
pub fn group_table() -> io::Result<HashMap<i32, Vec<i32>>> {
    let mut out: HashMap<i32, Vec<i32>> = HashMap::new();
    for pid in list_pids()? {
        if let Ok(st) = read_stat(pid) {
            if !thread_group_exited(&st, None) {
                out.entry(st.pgrp).or_default().push(pid);
            }
        }
    }
    Ok(out)
}

/// Whether the process whose stat is `stat` has exited as a whole (a zombie: the whole thread
/// group is dead, only the leader's entry waits to be reaped).
///
/// `pidfd_exited` is the readiness of a pidfd for the process when the caller has one (`poll`
/// with zero timeout: readable once the whole thread group has exited); it decides alone, the
/// stat is then not consulted. Without one (`None`), the stat decides: state `Z` or `X` with a
/// thread count of 1 (a leader in `Z` whose other threads run counts them; a count that could
/// not be read, 0, does not prove exit either). A pure function: no system call. The one rule for "has this process exited?" (see
/// `identity::liveness`), here beside the stat it reads so that this layer's group scans use it.
pub fn thread_group_exited(stat: &Stat, pidfd_exited: Option<bool>) -> bool {
    match pidfd_exited {
        Some(exited) => exited,
        None => matches!(stat.state, b'Z' | b'X') && stat.num_threads == 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parens() {
        let line = b"123 (a) b (c)) S 1 123 123 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 18446744073709551615";
        let st = parse_stat(line).unwrap();
        assert_eq!(st.comm, b"a) b (c)");
        assert_eq!(st.state, b'S');
        assert_eq!((st.ppid, st.pgrp, st.session), (1, 123, 123));
        assert_eq!(st.start_ticks, 98765);
    }

    #[test]
    fn rejects_truncated_lines() {
        assert!(parse_stat(b"1 (x) S 1 1 1").is_none());
        assert!(parse_stat(b"").is_none());
        assert!(parse_stat(b") (").is_none());
    }

    #[test]
    fn group_table_lists_our_group() {
        let me = read_stat(std::process::id() as i32).unwrap();
        let table = group_table().unwrap();
        let ours = table.get(&me.pgrp).cloned().unwrap_or_default();
        assert!(ours.contains(&(std::process::id() as i32)));
    }

    #[test]
    fn reads_own_stat() {
        let st = read_stat(std::process::id() as i32).unwrap();
        assert!(matches!(st.state, b'R' | b'S'));
        assert!(st.start_ticks > 0);
    }
}
