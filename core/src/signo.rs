//! pidguard's own signal number type: no dependency's type appears in the public API.

use std::fmt;

use crate::error::{Error, Result};

/// A signal number, with the names of signal(7). pidguard's own type: no dependency's type
/// appears in the public API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Signal(i32);

const NAMES: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("CHLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    #[cfg(target_os = "linux")]
    ("PWR", libc::SIGPWR),
    ("SYS", libc::SIGSYS),
    #[cfg(not(target_os = "linux"))]
    ("EMT", libc::SIGEMT),
    #[cfg(not(target_os = "linux"))]
    ("INFO", libc::SIGINFO),
];

/// The largest signal number: `SIGRTMAX` on Linux (glibc's, which reserves a few real-time
/// signals below the kernel's 64) and FreeBSD (126); 31 on macOS, which has no real-time
/// signals (`NSIG` is 32).
fn sigrtmax() -> i32 {
    #[cfg(target_os = "linux")]
    return libc::SIGRTMAX();
    #[cfg(target_os = "freebsd")]
    return 126;
    #[cfg(target_os = "macos")]
    return 31;
}

impl Signal {
    /// `SIGTERM` (15).
    pub const TERM: Signal = Signal(libc::SIGTERM);
    /// `SIGKILL` (9).
    pub const KILL: Signal = Signal(libc::SIGKILL);
    /// `SIGCONT` (18), sent after `SIGTERM` so that a stopped process can act on it.
    pub const CONT: Signal = Signal(libc::SIGCONT);
    /// `SIGSTOP` (19 on Linux): cannot be caught or ignored; a scope is held with it before a
    /// signal where there is no freezer (a stopped process cannot fork).
    pub const STOP: Signal = Signal(libc::SIGSTOP);
    /// `SIGINT` (2).
    pub const INT: Signal = Signal(libc::SIGINT);
    /// `SIGHUP` (1).
    pub const HUP: Signal = Signal(libc::SIGHUP);

    /// The signal with number `n`. Errors: `InvalidArgument` unless `1 <= n <= SIGRTMAX`
    /// (signal 0 is a probe, not a signal, and is refused; macOS, without real-time signals:
    /// `1 <= n <= 31`).
    pub fn from_number(n: i32) -> Result<Signal> {
        if (1..=sigrtmax()).contains(&n) {
            Ok(Signal(n))
        } else {
            Err(Error::invalid(format!("signal {n} is outside 1..={}", sigrtmax())))
        }
    }

    /// Parse `TERM`, `SIGTERM`, `term` or `15`. Errors: `InvalidArgument` for anything else.
    pub fn parse(s: &str) -> Result<Signal> {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse().map_err(|_| Error::invalid(format!("bad signal {s:?}"))).and_then(Signal::from_number);
        }
        let up = s.to_ascii_uppercase();
        let name = up.strip_prefix("SIG").unwrap_or(&up);
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| Signal(v))
            .ok_or_else(|| Error::invalid(format!("unknown signal name {s:?}")))
    }

    /// The signal number.
    pub const fn number(self) -> i32 {
        self.0
    }

    /// The name without `SIG` (`"TERM"`), or the number for real-time signals.
    pub fn name(self) -> String {
        NAMES.iter().find(|&&(_, v)| v == self.0).map(|(n, _)| n.to_string()).unwrap_or_else(|| self.0.to_string())
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match NAMES.iter().find(|&&(_, v)| v == self.0) {
            Some((n, _)) => write!(f, "SIG{n}"),
            None => write!(f, "signal {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_names_and_numbers() {
        assert_eq!(Signal::parse("TERM").unwrap(), Signal::TERM);
        assert_eq!(Signal::parse("sigkill").unwrap(), Signal::KILL);
        assert_eq!(Signal::parse("9").unwrap(), Signal::KILL);
        assert!(Signal::parse("0").is_err());
        assert!(Signal::parse("FOO").is_err());
        assert!(Signal::parse("").is_err());
        assert_eq!(Signal::TERM.to_string(), "SIGTERM");
    }
}
