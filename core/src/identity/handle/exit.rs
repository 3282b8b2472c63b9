//! How a child ended ([`super::ProcessRef::exit_status`]).

/// How a child ended, when the caller is its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// `exit(code)`.
    Code(i32),
    /// Killed by this signal number.
    Signaled(i32),
    /// Still running.
    Running,
    /// Not the caller's child (or reaped by someone else): the status cannot be known. Never an
    /// invented 0.
    Unknown,
}

impl ExitStatus {
    /// The shell-style code: the exit code, or 128 + signal; `None` when unknown or running.
    pub fn code(self) -> Option<i32> {
        match self {
            ExitStatus::Code(c) => Some(c),
            ExitStatus::Signaled(s) => Some(128 + s),
            _ => None,
        }
    }

    /// The number of the signal that ended the process; `None` unless it was killed by one.
    pub fn signal(self) -> Option<i32> {
        match self {
            ExitStatus::Signaled(s) => Some(s),
            _ => None,
        }
    }
}
