//! Pure parsers of the process records of macOS and FreeBSD: bytes in, fields out, no system
//! call. They compile on every system and are unit-tested on Linux with fixture bytes; the
//! byte offsets below are checked against the `libc` crate's own struct definitions at compile
//! time on each target (`offset_of!` assertions in `macos.rs` and `freebsd.rs`), so a wrong
//! offset fails the cross-check instead of reading the wrong field.
//!
//! Layouts are those of the 64-bit targets (`x86_64`/`aarch64`), little-endian; the integers
//! are read in native byte order, as the kernel writes them.

/// What pidguard needs of one process record (macOS `proc_bsdinfo`, FreeBSD `kinfo_proc`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BsdProc {
    /// The pid the record is about.
    pub(crate) pid: i32,
    /// The parent pid.
    pub(crate) ppid: i32,
    /// The process group.
    pub(crate) pgid: i32,
    /// The session (FreeBSD `ki_sid`); `None` where the record has none (macOS).
    pub(crate) sid: Option<i32>,
    /// The real uid.
    pub(crate) ruid: u32,
    /// The saved set-user-ID.
    pub(crate) svuid: u32,
    /// `p_stat`/`ki_stat` (`SIDL` 1, `SRUN` 2, `SSLEEP` 3, `SSTOP` 4, `SZOMB` 5, FreeBSD `SWAIT`
    /// 6, `SLOCK` 7).
    pub(crate) stat: u8,
    /// Start time in µs since the epoch, as the record gives it (FreeBSD: moved by clock steps,
    /// see [`start_since_boot`]).
    pub(crate) start_us: u64,
    /// The command name, up to its first NUL.
    pub(crate) comm: Vec<u8>,
    /// The jail (FreeBSD `ki_jid`); 0 on macOS.
    pub(crate) jid: i32,
    /// The thread count (FreeBSD `ki_numthreads`); `None` where the record has none (macOS).
    pub(crate) num_threads: Option<i64>,
}

/// One read of a process: its record, the start that identifies it (macOS: µs since the
/// epoch; FreeBSD: µs since boot) and its unique id where the system has one (macOS).
pub(crate) struct Facts {
    pub(crate) proc: BsdProc,
    pub(crate) start: u64,
    pub(crate) unique: Option<u64>,
}

/// `SZOMB` on both systems: the whole process has exited (BSD kernels have no Linux-style
/// zombie leader whose other threads still run).
pub(crate) const SZOMB: u8 = 5;

impl BsdProc {
    /// Whether the record is of a zombie (exited as a whole, not yet reaped).
    pub(crate) fn is_zombie(&self) -> bool {
        self.stat == SZOMB
    }
}

/// The Linux-style state letter of a BSD `p_stat` (`R`, `S`, `T`, `Z`, `D`; `I` for a process
/// being created; `?` for a value this table does not know).
pub(crate) fn state_letter(stat: u8) -> u8 {
    match stat {
        1 => b'I',
        2 => b'R',
        3 => b'S',
        4 => b'T',
        5 => b'Z',
        6 | 7 => b'D',
        _ => b'?',
    }
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn i32_at(b: &[u8], off: usize) -> Option<i32> {
    Some(i32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

fn i64_at(b: &[u8], off: usize) -> Option<i64> {
    Some(i64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// A C string field of `len` bytes at `off`, up to its first NUL.
fn cstr_at(b: &[u8], off: usize, len: usize) -> Option<Vec<u8>> {
    let f = b.get(off..off + len)?;
    Some(f[..f.iter().position(|&c| c == 0).unwrap_or(len)].to_vec())
}

/// `sec` and `usec` of a `timeval` as µs; `None` for a negative or overflowing value.
fn micros(sec: i64, usec: i64) -> Option<u64> {
    if sec < 0 || !(0..1_000_000).contains(&usec) {
        return None;
    }
    (sec as u64).checked_mul(1_000_000)?.checked_add(usec as u64)
}

/// Offsets in macOS's `struct proc_bsdinfo` (`<sys/proc_info.h>`, `PROC_PIDTBSDINFO`).
pub(crate) mod bsdinfo {
    /// `sizeof(struct proc_bsdinfo)`.
    pub(crate) const SIZE: usize = 136;
    pub(crate) const STATUS: usize = 4;
    pub(crate) const PID: usize = 12;
    pub(crate) const PPID: usize = 16;
    pub(crate) const RUID: usize = 28;
    pub(crate) const SVUID: usize = 36;
    /// `pbi_comm[MAXCOMLEN]`, 16 bytes.
    pub(crate) const COMM: usize = 48;
    pub(crate) const COMM_LEN: usize = 16;
    pub(crate) const PGID: usize = 100;
    pub(crate) const START_TVSEC: usize = 120;
    pub(crate) const START_TVUSEC: usize = 128;
}

/// Offsets in macOS's `struct proc_uniqidentifierinfo` (`PROC_PIDUNIQIDENTIFIERINFO`, 17):
/// `p_uuid[16]`, `p_uniqueid`, `p_puniqueid`, `p_idversion`, reserved fields.
pub(crate) mod uniqinfo {
    /// `sizeof(struct proc_uniqidentifierinfo)`.
    pub(crate) const SIZE: usize = 56;
    pub(crate) const UNIQUEID: usize = 16;
}

/// Parse a macOS `proc_bsdinfo` (exactly [`bsdinfo::SIZE`] bytes); `None` for any other length
/// or an impossible start time. Has no session and no thread count.
pub(crate) fn parse_proc_bsdinfo(b: &[u8]) -> Option<BsdProc> {
    use bsdinfo::*;
    if b.len() != SIZE {
        return None;
    }
    let sec = u64_at(b, START_TVSEC)?;
    let usec = u64_at(b, START_TVUSEC)?;
    Some(BsdProc {
        pid: u32_at(b, PID)? as i32,
        ppid: u32_at(b, PPID)? as i32,
        pgid: u32_at(b, PGID)? as i32,
        sid: None,
        ruid: u32_at(b, RUID)?,
        svuid: u32_at(b, SVUID)?,
        stat: u8::try_from(u32_at(b, STATUS)?).ok()?,
        start_us: micros(i64::try_from(sec).ok()?, i64::try_from(usec).ok()?)?,
        comm: cstr_at(b, COMM, COMM_LEN)?,
        jid: 0,
        num_threads: None,
    })
}

/// `p_uniqueid` of a macOS `proc_uniqidentifierinfo` (exactly [`uniqinfo::SIZE`] bytes): a
/// 64-bit id that no other process gets until the next boot. `None` for another length or 0
/// (never a real id: the kernel counts from 1).
pub(crate) fn parse_uniqueid(b: &[u8]) -> Option<u64> {
    if b.len() != uniqinfo::SIZE {
        return None;
    }
    u64_at(b, uniqinfo::UNIQUEID).filter(|&u| u != 0)
}

/// The argv of a macOS `KERN_PROCARGS2` buffer: `int argc`, the executable path and its NUL
/// padding, then `argc` NUL-terminated strings (the environment follows; not read). The last
/// string may end at the buffer's end without a NUL. `None` for a buffer too short for `argc`,
/// a negative `argc`, or one that ends before the path does.
pub(crate) fn parse_procargs2(b: &[u8]) -> Option<Vec<Vec<u8>>> {
    let argc = usize::try_from(i32_at(b, 0)?).ok()?;
    let rest = &b[4..];
    // The executable path, then NUL padding up to the first argument.
    let path_end = rest.iter().position(|&c| c == 0)?;
    let mut i = path_end;
    while i < rest.len() && rest[i] == 0 {
        i += 1;
    }
    let mut argv = Vec::with_capacity(argc.min(256));
    while argv.len() < argc && i < rest.len() {
        let end = rest[i..].iter().position(|&c| c == 0).map_or(rest.len(), |n| i + n);
        argv.push(rest[i..end].to_vec());
        i = end + 1;
    }
    Some(argv)
}

/// Offsets in FreeBSD's `struct kinfo_proc` (`<sys/user.h>`, amd64/arm64; the same for the
/// FreeBSD 11–15 layouts `libc` knows: the 64-bit `ki_tdev` of 12+ took spare room).
pub(crate) mod kinfo {
    /// `KINFO_PROC_SIZE`: `sizeof(struct kinfo_proc)` and the value of its `ki_structsize`.
    pub(crate) const SIZE: usize = 1088;
    pub(crate) const STRUCTSIZE: usize = 0;
    pub(crate) const PID: usize = 72;
    pub(crate) const PPID: usize = 76;
    pub(crate) const PGID: usize = 80;
    pub(crate) const SID: usize = 88;
    pub(crate) const RUID: usize = 172;
    pub(crate) const SVUID: usize = 176;
    /// `ki_start`: a `struct timeval` of two 64-bit fields.
    pub(crate) const START: usize = 336;
    pub(crate) const STAT: usize = 388;
    /// `ki_comm[COMMLEN + 1]`, 20 bytes.
    pub(crate) const COMM: usize = 447;
    pub(crate) const COMM_LEN: usize = 20;
    pub(crate) const JID: usize = 592;
    pub(crate) const NUMTHREADS: usize = 596;
}

/// Parse one FreeBSD `kinfo_proc`: `b` starts with it and holds at least its `ki_structsize`
/// bytes, which must be [`kinfo::SIZE`] (another kernel ABI is refused, never guessed at).
pub(crate) fn parse_kinfo_proc(b: &[u8]) -> Option<BsdProc> {
    use kinfo::*;
    if usize::try_from(i32_at(b, STRUCTSIZE)?).ok()? != SIZE || b.len() < SIZE {
        return None;
    }
    let stat = b[STAT];
    let threads = i64::from(i32_at(b, NUMTHREADS)?);
    Some(BsdProc {
        pid: i32_at(b, PID)?,
        ppid: i32_at(b, PPID)?,
        pgid: i32_at(b, PGID)?,
        sid: Some(i32_at(b, SID)?),
        ruid: u32_at(b, RUID)?,
        svuid: u32_at(b, SVUID)?,
        stat,
        start_us: micros(i64_at(b, START)?, i64_at(b, START + 8)?)?,
        comm: cstr_at(b, COMM, COMM_LEN)?,
        jid: i32_at(b, JID)?,
        // A zombie is the whole process on FreeBSD: counted as one, the value of the one rule
        // (`thread_group_exited`) for "exited as a whole".
        num_threads: Some(if stat == SZOMB { 1 } else { threads }),
    })
}

/// The pids of a `KERN_PROC_PROC` answer: whole `kinfo_proc` records one after another. `None`
/// when any record is not one [`parse_kinfo_proc`] accepts (a partial list is never a list).
pub(crate) fn parse_kinfo_proc_list(b: &[u8]) -> Option<Vec<i32>> {
    if b.len() % kinfo::SIZE != 0 {
        return None;
    }
    b.chunks(kinfo::SIZE).map(|r| parse_kinfo_proc(r).map(|p| p.pid)).collect()
}

/// A FreeBSD process's start as µs since boot: `ki_start` (the boot time *now* plus the start's
/// uptime, so a clock step moves it) less `kern.boottime` (which the same step moves), both
/// read between two reads of the boot time. `None` when the two boot-time reads differ (the
/// clock was stepped meanwhile: read again) or the start is before the boot time.
pub(crate) fn start_since_boot(ki_start_us: u64, boottime_before_us: u64, boottime_after_us: u64) -> Option<u64> {
    if boottime_before_us != boottime_after_us {
        return None;
    }
    ki_start_us.checked_sub(boottime_before_us)
}

/// A 64-bit `struct timeval` (two 64-bit fields, as `kern.boottime` gives it) as µs since the
/// epoch; `None` for another length or an impossible value.
pub(crate) fn timeval_us(b: &[u8]) -> Option<u64> {
    if b.len() != 16 {
        return None;
    }
    micros(i64_at(b, 0)?, i64_at(b, 8)?)
}

/// NUL-separated strings (FreeBSD's `KERN_PROC_ARGS`, Linux's `cmdline`): the last NUL ends the
/// last string, not an empty one after it; an empty buffer is no strings.
pub(crate) fn split_nul_args(b: &[u8]) -> Vec<Vec<u8>> {
    let b = b.strip_suffix(&[0]).unwrap_or(b);
    if b.is_empty() {
        return Vec::new();
    }
    b.split(|&c| c == 0).map(<[u8]>::to_vec).collect()
}

/// A NUL-terminated string a sysctl wrote (the NUL and anything after it left out), when it is
/// UTF-8.
pub(crate) fn sysctl_text(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]).ok()
}

/// The FreeBSD extended-attribute name of a Linux-style `user.` xattr name: the `user`
/// namespace (`EXTATTR_NAMESPACE_USER`) and the name without its prefix. `None` for a name in
/// another namespace or an empty one (FreeBSD has no such user attribute).
pub(crate) fn extattr_user_name(name: &str) -> Option<&str> {
    name.strip_prefix("user.").filter(|n| !n.is_empty())
}

/// Lower-case hex of `bytes` (FreeBSD's binary `kern.boot_id`).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A 16-byte UUID in its canonical text form (`8-4-4-4-12` lower-case hex: macOS's
/// `gethostuuid`).
pub(crate) fn uuid_text(u: &[u8; 16]) -> String {
    let h = hex(u);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(b: &mut [u8], off: usize, v: &[u8]) {
        b[off..off + v.len()].copy_from_slice(v);
    }

    /// A `proc_bsdinfo` as macOS writes it for `sleep` (pid 4242, parent 1, group 4240, real
    /// uid 501, saved uid 0), started at 1700000000.123456.
    fn bsdinfo_fixture(status: u32) -> Vec<u8> {
        let mut b = vec![0u8; bsdinfo::SIZE];
        put(&mut b, bsdinfo::STATUS, &status.to_ne_bytes());
        put(&mut b, bsdinfo::PID, &4242u32.to_ne_bytes());
        put(&mut b, bsdinfo::PPID, &1u32.to_ne_bytes());
        put(&mut b, bsdinfo::RUID, &501u32.to_ne_bytes());
        put(&mut b, bsdinfo::SVUID, &0u32.to_ne_bytes());
        put(&mut b, bsdinfo::COMM, b"sleep");
        // pbi_name, right after pbi_comm: must not leak into the command name.
        put(&mut b, bsdinfo::COMM + bsdinfo::COMM_LEN, b"NAME");
        put(&mut b, bsdinfo::PGID, &4240u32.to_ne_bytes());
        put(&mut b, bsdinfo::START_TVSEC, &1_700_000_000u64.to_ne_bytes());
        put(&mut b, bsdinfo::START_TVUSEC, &123_456u64.to_ne_bytes());
        b
    }

    #[test]
    fn proc_bsdinfo_fields() {
        let p = parse_proc_bsdinfo(&bsdinfo_fixture(3)).unwrap();
        assert_eq!((p.pid, p.ppid, p.pgid, p.sid), (4242, 1, 4240, None));
        assert_eq!((p.ruid, p.svuid), (501, 0));
        assert_eq!(p.start_us, 1_700_000_000_123_456);
        assert_eq!(p.comm, b"sleep");
        assert_eq!((state_letter(p.stat), p.is_zombie()), (b'S', false));
        let z = parse_proc_bsdinfo(&bsdinfo_fixture(5)).unwrap();
        assert_eq!((state_letter(z.stat), z.is_zombie()), (b'Z', true));
        // A 16-byte name fills pbi_comm without a NUL: it ends at the field's end.
        let mut b = bsdinfo_fixture(2);
        put(&mut b, bsdinfo::COMM, b"0123456789abcdef");
        assert_eq!(parse_proc_bsdinfo(&b).unwrap().comm, b"0123456789abcdef");
    }

    #[test]
    fn proc_bsdinfo_refuses_other_lengths_and_impossible_times() {
        let b = bsdinfo_fixture(2);
        assert!(parse_proc_bsdinfo(&b[..bsdinfo::SIZE - 1]).is_none());
        assert!(parse_proc_bsdinfo(&[b.clone(), vec![0]].concat()).is_none());
        assert!(parse_proc_bsdinfo(&[]).is_none());
        let mut bad = b.clone();
        put(&mut bad, bsdinfo::START_TVUSEC, &1_000_000u64.to_ne_bytes());
        assert!(parse_proc_bsdinfo(&bad).is_none(), "µs out of range");
        let mut bad = b;
        put(&mut bad, bsdinfo::START_TVSEC, &u64::MAX.to_ne_bytes());
        assert!(parse_proc_bsdinfo(&bad).is_none(), "overflow");
    }

    #[test]
    fn unique_id() {
        let mut b = vec![0u8; uniqinfo::SIZE];
        put(&mut b, 0, &[0xab; 16]); // p_uuid: the executable's, not the process's
        put(&mut b, uniqinfo::UNIQUEID, &987_654_321u64.to_ne_bytes());
        put(&mut b, uniqinfo::UNIQUEID + 8, &5u64.to_ne_bytes()); // p_puniqueid
        assert_eq!(parse_uniqueid(&b), Some(987_654_321));
        assert_eq!(parse_uniqueid(&b[..uniqinfo::SIZE - 8]), None);
        put(&mut b, uniqinfo::UNIQUEID, &0u64.to_ne_bytes());
        assert_eq!(parse_uniqueid(&b), None, "0 is no id");
    }

    #[test]
    fn procargs2() {
        let mut b = 3i32.to_ne_bytes().to_vec();
        b.extend_from_slice(b"/bin/sleep\0\0\0\0sleep\0300\0--x y\0PATH=/bin\0HOME=/\0");
        assert_eq!(parse_procargs2(&b).unwrap(), vec![b"sleep".to_vec(), b"300".to_vec(), b"--x y".to_vec()]);
        // An empty argument is an argument.
        let mut b = 2i32.to_ne_bytes().to_vec();
        b.extend_from_slice(b"/bin/true\0true\0\0ENV=1\0");
        assert_eq!(parse_procargs2(&b).unwrap(), vec![b"true".to_vec(), Vec::new()]);
        // The last argument may end at the buffer's end.
        let mut b = 1i32.to_ne_bytes().to_vec();
        b.extend_from_slice(b"/x\0x");
        assert_eq!(parse_procargs2(&b).unwrap(), vec![b"x".to_vec()]);
        assert_eq!(parse_procargs2(&0i32.to_ne_bytes()), None, "no path");
        assert_eq!(parse_procargs2(&[1, 0]), None);
        let mut b = (-1i32).to_ne_bytes().to_vec();
        b.extend_from_slice(b"/x\0x\0");
        assert_eq!(parse_procargs2(&b), None);
    }

    /// A `kinfo_proc` as FreeBSD writes it for pid 777 in jail 3, started 42.000001 s after a
    /// boot at 1700000000.5.
    fn kinfo_fixture(stat: u8, threads: i32) -> Vec<u8> {
        let mut b = vec![0u8; kinfo::SIZE];
        put(&mut b, kinfo::STRUCTSIZE, &(kinfo::SIZE as i32).to_ne_bytes());
        put(&mut b, kinfo::PID, &777i32.to_ne_bytes());
        put(&mut b, kinfo::PPID, &700i32.to_ne_bytes());
        put(&mut b, kinfo::PGID, &777i32.to_ne_bytes());
        put(&mut b, kinfo::SID, &650i32.to_ne_bytes());
        put(&mut b, kinfo::RUID, &1001u32.to_ne_bytes());
        put(&mut b, kinfo::SVUID, &1002u32.to_ne_bytes());
        put(&mut b, kinfo::START, &1_700_000_042i64.to_ne_bytes());
        put(&mut b, kinfo::START + 8, &500_001i64.to_ne_bytes());
        b[kinfo::STAT] = stat;
        put(&mut b, kinfo::COMM, b"daemon");
        put(&mut b, kinfo::JID, &3i32.to_ne_bytes());
        put(&mut b, kinfo::NUMTHREADS, &threads.to_ne_bytes());
        b
    }

    #[test]
    fn kinfo_proc_fields() {
        let p = parse_kinfo_proc(&kinfo_fixture(3, 4)).unwrap();
        assert_eq!((p.pid, p.ppid, p.pgid, p.sid, p.jid), (777, 700, 777, Some(650), 3));
        assert_eq!((p.ruid, p.svuid), (1001, 1002));
        assert_eq!(p.start_us, 1_700_000_042_500_001);
        assert_eq!((p.comm.as_slice(), p.num_threads, p.is_zombie()), (&b"daemon"[..], Some(4), false));
        // A zombie counts as one thread whatever the record says: exited as a whole.
        let z = parse_kinfo_proc(&kinfo_fixture(5, 0)).unwrap();
        assert_eq!((z.is_zombie(), z.num_threads, state_letter(z.stat)), (true, Some(1), b'Z'));
    }

    #[test]
    fn kinfo_proc_refuses_another_abi() {
        let b = kinfo_fixture(2, 1);
        assert!(parse_kinfo_proc(&b[..kinfo::SIZE - 1]).is_none());
        let mut other = b.clone();
        put(&mut other, kinfo::STRUCTSIZE, &1096i32.to_ne_bytes());
        assert!(parse_kinfo_proc(&other).is_none(), "another ki_structsize is another layout");
        let two = [b.clone(), kinfo_fixture(5, 1)].concat();
        assert_eq!(parse_kinfo_proc_list(&two), Some(vec![777, 777]));
        assert_eq!(parse_kinfo_proc_list(&[]), Some(vec![]));
        assert_eq!(parse_kinfo_proc_list(&two[..two.len() - 1]), None);
        assert_eq!(parse_kinfo_proc_list(&[b, other].concat()), None, "a partial list is never a list");
    }

    #[test]
    fn start_since_boot_needs_one_boot_time() {
        let boot = 1_700_000_000_500_000;
        assert_eq!(start_since_boot(1_700_000_042_500_001, boot, boot), Some(42_000_001));
        // The clock was stepped between the reads: no answer (the caller reads again).
        assert_eq!(start_since_boot(1_700_000_042_500_001, boot, boot + 3_600_000_000), None);
        assert_eq!(start_since_boot(boot - 1, boot, boot), None);
        // A step moves ki_start and the boot time together: the same start since boot.
        let step = 86_400_000_000;
        assert_eq!(start_since_boot(1_700_000_042_500_001 + step, boot + step, boot + step), Some(42_000_001));
    }

    #[test]
    fn timevals_args_and_texts() {
        let mut tv = 1_700_000_000i64.to_ne_bytes().to_vec();
        tv.extend_from_slice(&500_000i64.to_ne_bytes());
        assert_eq!(timeval_us(&tv), Some(1_700_000_000_500_000));
        assert_eq!(timeval_us(&tv[..12]), None);
        assert_eq!(split_nul_args(b"sleep\0300\0"), vec![b"sleep".to_vec(), b"300".to_vec()]);
        assert_eq!(split_nul_args(b"a\0\0b\0"), vec![b"a".to_vec(), Vec::new(), b"b".to_vec()]);
        assert_eq!(split_nul_args(b""), Vec::<Vec<u8>>::new());
        assert_eq!(split_nul_args(b"\0"), Vec::<Vec<u8>>::new());
        assert_eq!(sysctl_text(b"1B2C-3D\0junk"), Some("1B2C-3D"));
        assert_eq!(sysctl_text(b"no-nul"), Some("no-nul"));
        assert_eq!(sysctl_text(b"\xff\0"), None);
    }

    #[test]
    fn names_and_ids() {
        assert_eq!(extattr_user_name("user.pidguard.token"), Some("pidguard.token"));
        assert_eq!(extattr_user_name("trusted.x"), None);
        assert_eq!(extattr_user_name("user."), None);
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
        let u = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
        assert_eq!(uuid_text(&u), "12345678-9abc-def0-0123-456789abcdef");
        assert_eq!(state_letter(6), b'D');
        assert_eq!(state_letter(99), b'?');
    }
}
