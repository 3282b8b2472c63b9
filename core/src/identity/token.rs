//! The start token: what makes (pid, token) name one process for the whole life of a boot.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The identity of one process incarnation, compared field by field, exactly, and never
/// converted to wall-clock time. Each system writes its own format, named by its prefix
/// ([`TokenOs`]); a token of another system is foreign (`Unverifiable`, never a match).
///
/// On Linux (run-tested), serialised as one printable ASCII string:
/// `linux1:<machine_id>:<boot_id>:<pidns_ino>:<start_ticks>:<pidfs_ino or ->`, for example
/// `linux1:4f0c…:9b1e…-…:4026531836:123456:4123`.
///
/// - `machine_id`: `/etc/machine-id` (the host name when missing), non-printable or `:` bytes
///   hex-encoded;
/// - `boot_id`: `/proc/sys/kernel/random/boot_id`;
/// - `pidns_ino`: inode of the writer's `/proc/self/ns/pid`;
/// - `start_ticks`: field 22 of `/proc/<pid>/stat`, clock ticks since boot (`CLK_TCK` = 100, so
///   10 ms resolution). Shifted by the reader's time namespace (Linux ≥ 5.6): tokens compare only
///   within one time namespace;
/// - `pidfs_ino`: `fstat(pidfd).st_ino` on pidfs (Linux ≥ 6.9), unique per process for the
///   boot; `-` when the kernel has no pidfs. A reader accepts the field absent altogether.
///
/// On macOS (compile-checked only): `macos1:<host uuid>:<boot session uuid>:<start µs>:<unique
/// id or ->` — `gethostuuid()`, `kern.bootsessionuuid`, the start time of `proc_pidinfo`'s
/// `proc_bsdinfo` in µs since the epoch (`start_ticks`), and `p_uniqueid`, unique per process
/// per boot (`pidfs_ino`, the pidfs inode's twin); no pid namespace (`pidns_ino` 0).
///
/// On FreeBSD (compile-checked only): `freebsd1:<kern.hostuuid>:<kern.boot_id, hex>:<jail
/// id>:<start µs since boot>` — `kinfo_proc`'s `ki_start` less `kern.boottime`, both read
/// together (`start_ticks`); the writer's jail (`pidns_ino`); no per-process unique id
/// (`pidfs_ino` `None`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StartToken {
    /// The system the token was written on (its prefix).
    pub os: TokenOs,
    /// The machine id (macOS: the host UUID; FreeBSD: `kern.hostuuid`).
    pub machine_id: String,
    /// The boot id (macOS: `kern.bootsessionuuid`; FreeBSD: `kern.boot_id`, hex).
    pub boot_id: String,
    /// The inode of the PID namespace the pid was read in (macOS: 0; FreeBSD: the jail id).
    pub pidns_ino: u64,
    /// Start time in clock ticks since boot (macOS: µs since the epoch; FreeBSD: µs since boot).
    pub start_ticks: u64,
    /// The pidfs inode, when the kernel has pidfs (macOS: `p_uniqueid`; FreeBSD: always `None`).
    pub pidfs_ino: Option<u64>,
}

/// The version prefix of the Linux token (`linux1`). Each system's prefix: [`TokenOs::prefix`].
pub const TOKEN_PREFIX: &str = "linux1";

/// The system a [`StartToken`] was written on, named by its prefix. A token of another system
/// than the reader's is foreign: `Unverifiable` (`foreign-machine`), never a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenOs {
    /// `linux1` (run-tested).
    Linux,
    /// `macos1` (compile-checked only).
    MacOs,
    /// `freebsd1` (compile-checked only).
    FreeBsd,
}

impl TokenOs {
    /// The system this build of pidguard runs on: the kind of token it writes.
    pub const fn here() -> TokenOs {
        if cfg!(target_os = "macos") {
            TokenOs::MacOs
        } else if cfg!(target_os = "freebsd") {
            TokenOs::FreeBsd
        } else {
            TokenOs::Linux
        }
    }

    /// The token prefix: `"linux1"`, `"macos1"` or `"freebsd1"`.
    pub const fn prefix(self) -> &'static str {
        match self {
            TokenOs::Linux => TOKEN_PREFIX,
            TokenOs::MacOs => "macos1",
            TokenOs::FreeBsd => "freebsd1",
        }
    }

    fn from_prefix(p: &str) -> Option<TokenOs> {
        [TokenOs::Linux, TokenOs::MacOs, TokenOs::FreeBsd].into_iter().find(|o| o.prefix() == p)
    }
}

impl fmt::Display for StartToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = self.os.prefix();
        match self.os {
            TokenOs::Linux => write!(f, "{prefix}:{}:{}:{}:{}:", self.machine_id, self.boot_id, self.pidns_ino, self.start_ticks)?,
            // No pid namespace on macOS: the field is not written.
            TokenOs::MacOs => write!(f, "{prefix}:{}:{}:{}:", self.machine_id, self.boot_id, self.start_ticks)?,
            // No per-process unique id on FreeBSD: the last field is the start.
            TokenOs::FreeBsd => return write!(f, "{prefix}:{}:{}:{}:{}", self.machine_id, self.boot_id, self.pidns_ino, self.start_ticks),
        }
        match self.pidfs_ino {
            Some(i) => write!(f, "{i}"),
            None => f.write_str("-"),
        }
    }
}

fn field_ok(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && b != b':')
}

/// Digits only (leading zeros allowed, however many), value within `u64`.
fn decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl FromStr for StartToken {
    type Err = Error;

    /// Parse a serialised token of any system (see [`StartToken`]): `linux1` with 5 or 6 parts
    /// (the last, the pidfs inode, optional, `-` for none), `macos1` with exactly 5 (the last,
    /// the unique id, `-` for none), `freebsd1` with exactly 5. Errors: `InvalidArgument` when it
    /// is not exactly one of these formats (unknown prefix or version, empty or non-printable
    /// fields, numbers that are not all ASCII digits or do not fit in `u64`; leading zeros are
    /// accepted).
    fn from_str(s: &str) -> Result<StartToken> {
        let bad = || Error::invalid(format!("not a pidguard start token: {:?}", truncate(s)));
        // At most 6 parts (linux1's), on the stack: one token is parsed per validate.
        let mut fields = [""; 6];
        let mut n = 0;
        for f in s.split(':') {
            if n == fields.len() {
                return Err(bad());
            }
            fields[n] = f;
            n += 1;
        }
        let parts = &fields[..n];
        let os = TokenOs::from_prefix(parts[0]).ok_or_else(bad)?;
        let shape_ok = match os {
            TokenOs::Linux => parts.len() == 5 || parts.len() == 6,
            TokenOs::MacOs | TokenOs::FreeBsd => parts.len() == 5,
        };
        if !shape_ok || !field_ok(parts[1]) || !field_ok(parts[2]) {
            return Err(bad());
        }
        let optional = |v: Option<&&str>| -> Result<Option<u64>> {
            match v {
                None | Some(&"-") => Ok(None),
                Some(v) => Ok(Some(decimal(v).ok_or_else(bad)?)),
            }
        };
        let (pidns_ino, start_ticks, pidfs_ino) = match os {
            TokenOs::Linux => (decimal(parts[3]).ok_or_else(bad)?, decimal(parts[4]).ok_or_else(bad)?, optional(parts.get(5))?),
            TokenOs::MacOs => (0, decimal(parts[3]).ok_or_else(bad)?, optional(parts.get(4))?),
            TokenOs::FreeBsd => (decimal(parts[3]).ok_or_else(bad)?, decimal(parts[4]).ok_or_else(bad)?, None),
        };
        Ok(StartToken { os, machine_id: parts[1].to_string(), boot_id: parts[2].to_string(), pidns_ino, start_ticks, pidfs_ino })
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let t = StartToken {
            os: TokenOs::Linux,
            machine_id: "abc".into(),
            boot_id: "1-2-3".into(),
            pidns_ino: 4026531836,
            start_ticks: 42,
            pidfs_ino: Some(7),
        };
        assert_eq!(t.to_string(), "linux1:abc:1-2-3:4026531836:42:7");
        assert_eq!(t.to_string().parse::<StartToken>().unwrap(), t);
        let u = StartToken { pidfs_ino: None, ..t };
        assert_eq!(u.to_string().parse::<StartToken>().unwrap(), u);
        assert_eq!("linux1:abc:1-2-3:4026531836:42".parse::<StartToken>().unwrap(), u);
    }

    #[test]
    fn leading_zeros_are_decimal() {
        // Found by the `start_token` fuzz target: 25 digits with a value that fits in u64 were
        // refused by a length check the docs did not mention.
        let t: StartToken = "linux1:a:b:0000008423466642951906620:416:0007".parse().unwrap();
        assert_eq!((t.pidns_ino, t.start_ticks, t.pidfs_ino), (8423466642951906620, 416, Some(7)));
        assert_eq!(t.to_string(), "linux1:a:b:8423466642951906620:416:7");
        assert!("linux1:a:b:18446744073709551616:1:-".parse::<StartToken>().is_err());
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "linux2:a:b:1:2:-", "macos2:a:b:1:2", "macos1:a:b:1", "macos1:a:b:1:2:3", "macos1:a:b:x:2", "freebsd1:a:b:1:2:3", "freebsd1:a:b:1:-", "freebsd1:a:b:1", "linux1:a:b:x:2:-", "linux1::b:1:2:-", "linux1:a:b:1:2:3:4", "linux1:a:b:1:+2:-"] {
            assert!(s.parse::<StartToken>().is_err(), "{s}");
        }
    }

    #[test]
    fn each_system_has_its_own_format_and_prefix() {
        let mac = StartToken { os: TokenOs::MacOs, machine_id: "H".into(), boot_id: "B".into(), pidns_ino: 0, start_ticks: 1_700_000_000_123_456, pidfs_ino: Some(98765) };
        assert_eq!(mac.to_string(), "macos1:H:B:1700000000123456:98765");
        assert_eq!(mac.to_string().parse::<StartToken>().unwrap(), mac);
        let mac_no_id = StartToken { pidfs_ino: None, ..mac.clone() };
        assert_eq!(mac_no_id.to_string(), "macos1:H:B:1700000000123456:-");
        assert_eq!(mac_no_id.to_string().parse::<StartToken>().unwrap(), mac_no_id);
        let bsd = StartToken { os: TokenOs::FreeBsd, machine_id: "H".into(), boot_id: "0a1b".into(), pidns_ino: 3, start_ticks: 42_000_001, pidfs_ino: None };
        assert_eq!(bsd.to_string(), "freebsd1:H:0a1b:3:42000001");
        assert_eq!(bsd.to_string().parse::<StartToken>().unwrap(), bsd);
        // The same fields under another prefix are another token.
        let lin: StartToken = "linux1:H:B:0:1700000000123456:98765".parse().unwrap();
        assert_eq!(lin.os, TokenOs::Linux);
        assert_ne!(lin, mac);
        assert_eq!(TokenOs::here(), TokenOs::Linux, "these tests run on Linux");
        for os in [TokenOs::Linux, TokenOs::MacOs, TokenOs::FreeBsd] {
            assert_eq!(TokenOs::from_prefix(os.prefix()), Some(os));
        }
    }
}
