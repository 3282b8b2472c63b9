//! Small, exact readers of the procfs files pidguard needs (proc(5)).

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use nix::fcntl::OFlag;

/// The fields of `/proc/<pid>/stat` that pidguard uses.
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
    /// Field 22, `starttime`, in clock ticks since boot.
    pub start_ticks: u64,
}

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
    // Fields 7..=21 are skipped: 15 of them; field 22 is the 20th after the `)`.
    let start_ticks = f.nth(15)?.parse().ok()?;
    Some(Stat { comm, state: state.as_bytes()[0], ppid, pgrp, session, start_ticks })
}

/// Read a procfs file with plain `read(2)`s into `buf`, `chunk` bytes at a time. procfs files
/// report size 0, so std's `read_to_end` first asks `statx` and `lseek` for a size hint; on the
/// hot path of `validate_pid_file` those two calls are measurable (BENCHMARKS.md).
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

fn read_small(path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
    read_chunked(path, buf, 1024)
}

/// Read and parse `/proc/<pid>/stat`. `ENOENT`/`ESRCH` mean no such process.
pub fn read_stat(pid: i32) -> io::Result<Stat> {
    super::fault::check(super::Call::ProcRead)?;
    let mut buf = Vec::with_capacity(512);
    read_small(&format!("/proc/{pid}/stat"), &mut buf)?;
    parse_stat(&buf).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable /proc/<pid>/stat"))
}

/// Open the directory `/proc/<pid>`. The descriptor stays tied to that very process: reads
/// through it ([`read_stat_at`]) fail with `ESRCH` once the process is reaped, even after the
/// number is reused. This pins a process on kernels (or under seccomp profiles) without
/// `pidfd_open`.
pub fn open_proc_dir(pid: i32) -> io::Result<std::os::fd::OwnedFd> {
    super::fault::check(super::Call::ProcRead)?;
    super::open_direct(std::path::Path::new(&format!("/proc/{pid}")), (OFlag::O_RDONLY | OFlag::O_DIRECTORY).bits(), 0)
}

/// Read and parse `stat` under an open `/proc/<pid>` directory. `ESRCH`/`ENOENT`: that process
/// is reaped.
pub fn read_stat_at(dir: std::os::fd::BorrowedFd<'_>) -> io::Result<Stat> {
    super::fault::check(super::Call::ProcRead)?;
    let buf = super::read_at(dir, "stat")?;
    parse_stat(&buf).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable /proc/<pid>/stat"))
}

/// `/proc/<pid>/cmdline` split at NUL bytes. Empty for kernel threads and most zombies.
pub fn read_cmdline(pid: i32) -> io::Result<Vec<Vec<u8>>> {
    super::fault::check(super::Call::ProcRead)?;
    let mut buf = Vec::with_capacity(256);
    read_small(&format!("/proc/{pid}/cmdline"), &mut buf)?;
    if buf.last() == Some(&0) {
        buf.pop();
    }
    if buf.is_empty() {
        return Ok(Vec::new());
    }
    Ok(buf.split(|&b| b == 0).map(<[u8]>::to_vec).collect())
}

/// The real uid from the `Uid:` line of `/proc/<pid>/status`.
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
pub fn read_uids(pid: i32) -> io::Result<(u32, u32)> {
    super::fault::check(super::Call::ProcRead)?;
    let mut buf = Vec::with_capacity(1024);
    read_chunked(&format!("/proc/{pid}/status"), &mut buf, 2048)?;
    parse_uids(&buf)
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
pub fn read_exe(pid: i32) -> Option<PathBuf> {
    fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// `btime` of `/proc/stat`: the boot time in whole seconds since the epoch, as the kernel
/// computes it now from the wall clock (it moves when the clock is stepped). Read afresh on
/// every call, as psutil does.
pub fn btime() -> io::Result<u64> {
    let mut buf = Vec::with_capacity(8192);
    read_chunked("/proc/stat", &mut buf, 8192)?;
    let s = String::from_utf8_lossy(&buf);
    s.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no btime in /proc/stat"))
}

/// `/proc/sys/kernel/pid_max` (default 4194304 on 64-bit since systemd raises it; 32768 by the
/// kernel's own default). Cached for the life of the process.
pub fn pid_max() -> i32 {
    static PID_MAX: OnceLock<i32> = OnceLock::new();
    *PID_MAX.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            // PID_MAX_LIMIT on 64-bit kernels (include/linux/threads.h).
            .unwrap_or(4_194_304)
    })
}

/// Make a string safe as one field of a start token: printable ASCII without `:`.
fn token_field(raw: &str) -> String {
    let t = raw.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_') {
        t.to_string()
    } else {
        t.bytes().map(|b| format!("{b:02x}")).collect()
    }
}

/// `/etc/machine-id`, else the host name, as a token field. Cached.
pub fn machine_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let id = fs::read_to_string("/etc/machine-id").ok().filter(|s| !s.trim().is_empty());
        let id = id.or_else(|| fs::read_to_string("/proc/sys/kernel/hostname").ok());
        token_field(id.as_deref().unwrap_or("unknown"))
    })
}

/// `/proc/sys/kernel/random/boot_id`, a fresh UUID every boot. Cached.
pub fn boot_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        token_field(fs::read_to_string("/proc/sys/kernel/random/boot_id").as_deref().unwrap_or("unknown"))
    })
}

/// The inode of `/proc/self/ns/pid`: which PID namespace our pids mean something in.
///
/// A process's PID namespace is fixed when it is created and never changes (pid_namespaces(7);
/// `setns`/`unshare` only move its future children), so the value is cached — keyed by our pid,
/// because a child forked after `unshare(CLONE_NEWPID)` inherits the cache but lives in the new
/// namespace.
pub fn pidns_ino() -> u64 {
    use std::sync::Mutex;
    static CACHE: Mutex<Option<(u64, u64)>> = Mutex::new(None);
    // Keyed by the fork generation rather than the pid: no system call on the hot path.
    let gen = super::fork_generation();
    let mut c = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    match *c {
        Some((g, ino)) if g == gen => ino,
        _ => {
            let ino = fs::metadata("/proc/self/ns/pid").map(|m| m.ino()).unwrap_or(0);
            if ino != 0 {
                *c = Some((gen, ino));
            }
            ino
        }
    }
}

/// Every numeric entry of `/proc`: the pids visible in our `/proc` mount.
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

/// Members of process group `pgid` that are not zombies, as `(pid, stat)`.
pub fn group_members(pgid: i32) -> io::Result<Vec<(i32, Stat)>> {
    let mut out = Vec::new();
    for pid in list_pids()? {
        if let Ok(st) = read_stat(pid) {
            if st.pgrp == pgid && st.state != b'Z' && st.state != b'X' {
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
            if st.state != b'Z' && st.state != b'X' {
                out.entry(st.pgrp).or_default().push(pid);
            }
        }
    }
    Ok(out)
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
