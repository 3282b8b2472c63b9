//! The start token: what makes (pid, token) name one process for the whole life of a boot.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The identity of one process incarnation on Linux, compared field by field,
/// exactly, and never converted to wall-clock time.
///
/// Serialised as one printable ASCII string:
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
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StartToken {
    /// The machine id.
    pub machine_id: String,
    /// The boot id.
    pub boot_id: String,
    /// The inode of the PID namespace the pid was read in.
    pub pidns_ino: u64,
    /// Start time in clock ticks since boot.
    pub start_ticks: u64,
    /// The pidfs inode, when the kernel has pidfs.
    pub pidfs_ino: Option<u64>,
}

/// The version prefix of the serialised token.
pub const TOKEN_PREFIX: &str = "linux1";

impl fmt::Display for StartToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{TOKEN_PREFIX}:{}:{}:{}:{}:", self.machine_id, self.boot_id, self.pidns_ino, self.start_ticks)?;
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

    /// Parse a serialised token. Errors: `InvalidArgument` when it is not exactly the format
    /// above (unknown version, empty or non-printable fields, numbers that are not all ASCII
    /// digits or do not fit in `u64`; leading zeros are accepted).
    fn from_str(s: &str) -> Result<StartToken> {
        let bad = || Error::invalid(format!("not a pidguard start token: {:?}", truncate(s)));
        let parts: Vec<&str> = s.split(':').collect();
        if !(parts.len() == 5 || parts.len() == 6) || parts[0] != TOKEN_PREFIX {
            return Err(bad());
        }
        if !field_ok(parts[1]) || !field_ok(parts[2]) {
            return Err(bad());
        }
        let pidns_ino = decimal(parts[3]).ok_or_else(bad)?;
        let start_ticks = decimal(parts[4]).ok_or_else(bad)?;
        let pidfs_ino = match parts.get(5) {
            None | Some(&"-") => None,
            Some(v) => Some(decimal(v).ok_or_else(bad)?),
        };
        Ok(StartToken {
            machine_id: parts[1].to_string(),
            boot_id: parts[2].to_string(),
            pidns_ino,
            start_ticks,
            pidfs_ino,
        })
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
        for s in ["", "linux2:a:b:1:2:-", "linux1:a:b:x:2:-", "linux1::b:1:2:-", "linux1:a:b:1:2:3:4", "linux1:a:b:1:+2:-"] {
            assert!(s.parse::<StartToken>().is_err(), "{s}");
        }
    }
}
