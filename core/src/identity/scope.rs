//! Scopes: a spawned command's whole tree — every descendant, `setsid` or not — held by a
//! cgroup v2 leaf of its own, or by a subreaper supervisor, and named by a record kept beside
//! the pidfile.
//!
//! A process group is a courtesy any descendant can leave (`setsid`, a daemon's double fork, a
//! browser's crash handler). A scope is not: an unprivileged process cannot move itself out of
//! its cgroup (the destination's `cgroup.procs` must be writable by it), and every orphan of a
//! subreaper's tree becomes the subreaper's child (`PR_SET_CHILD_SUBREAPER`, prctl(2)).
//!
//! Identity, as for processes: a cgroup is named by its id (the directory's inode on cgroup2,
//! 64-bit, never reused within a boot) and the boot it was made in; a supervisor by its pid
//! and start token. A recorded scope that no longer exists is gone; a cgroup path now held by
//! another id, or a supervisor whose token differs, is a mismatch and is never touched; a scope
//! that could not be read is unverifiable, and nothing is signalled on its strength.

use std::fmt;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::delivery::Delivery;
use super::token::StartToken;
use crate::error::{Error, ErrorKind, Result};
use crate::signo::Signal;
use crate::sys::{self, cgroup};

/// The extended attribute of an abx-dl pidfile that records its scope (a [`ScopeRecord`] as
/// text), beside the start token's `user.pidguard.token`.
pub const SCOPE_XATTR: &str = "user.pidguard.scope";

/// What holds a record's processes, as reports name it: `cgroup`, `supervisor`, or `group` (no
/// scope: the process group the recorded process leads, as for records written by abx-dl).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ScopeKind {
    /// The process group only.
    #[default]
    Group,
    /// A cgroup v2 leaf of its own.
    Cgroup,
    /// A subreaper supervisor process.
    Supervisor,
}

impl ScopeKind {
    /// `"group"`, `"cgroup"` or `"supervisor"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Group => "group",
            ScopeKind::Cgroup => "cgroup",
            ScopeKind::Supervisor => "supervisor",
        }
    }
}

impl fmt::Display for ScopeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A scope as recorded beside a pidfile.
///
/// Text forms (the [`SCOPE_XATTR`] value, a guard record's `scope` field):
/// `cgroup:<boot id>:<cgroup id>:<path below the cgroup2 mount, starting with />` and
/// `supervisor:<pid>:<start token>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScopeRecord {
    /// A cgroup v2 leaf.
    Cgroup {
        /// `/proc/sys/kernel/random/boot_id` when the leaf was made (as in a start token).
        boot_id: String,
        /// The cgroup id: the leaf directory's inode.
        id: u64,
        /// The leaf's path below the cgroup2 mount (`/pidguard/…`).
        path: String,
    },
    /// A subreaper supervisor.
    Supervisor {
        /// The supervisor's pid.
        pid: i32,
        /// The supervisor's start token.
        token: StartToken,
    },
}

impl ScopeRecord {
    /// Which kind of scope this is.
    pub fn kind(&self) -> ScopeKind {
        match self {
            ScopeRecord::Cgroup { .. } => ScopeKind::Cgroup,
            ScopeRecord::Supervisor { .. } => ScopeKind::Supervisor,
        }
    }
}

impl fmt::Display for ScopeRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeRecord::Cgroup { boot_id, id, path } => write!(f, "cgroup:{boot_id}:{id}:{path}"),
            ScopeRecord::Supervisor { pid, token } => write!(f, "supervisor:{pid}:{token}"),
        }
    }
}

impl FromStr for ScopeRecord {
    type Err = Error;

    /// Errors: `Malformed` for text that is not one of the two forms.
    fn from_str(s: &str) -> Result<ScopeRecord> {
        let bad = || Error::new(ErrorKind::Malformed, format!("not a pidguard scope record: {s:?}"));
        if let Some(rest) = s.strip_prefix("cgroup:") {
            let mut it = rest.splitn(3, ':');
            let (Some(boot), Some(id), Some(path)) = (it.next(), it.next(), it.next()) else { return Err(bad()) };
            let id: u64 = id.parse().map_err(|_| bad())?;
            let ok_path = path.starts_with('/') && !path.split('/').any(|c| c == ".." || c == ".") && !path.contains('\0');
            if boot.is_empty() || !boot.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)) || !ok_path || path == "/" {
                return Err(bad());
            }
            return Ok(ScopeRecord::Cgroup { boot_id: boot.to_string(), id, path: path.to_string() });
        }
        if let Some(rest) = s.strip_prefix("supervisor:") {
            let (pid, token) = rest.split_once(':').ok_or_else(bad)?;
            let pid: i32 = pid.parse().map_err(|_| bad())?;
            if pid <= 1 {
                return Err(bad());
            }
            let token: StartToken = token.parse().map_err(|_| bad())?;
            return Ok(ScopeRecord::Supervisor { pid, token });
        }
        Err(bad())
    }
}

/// What [`Scope::open`] found.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // made once per record, matched at once: not worth a box
pub enum ScopeState {
    /// The recorded scope, pinned: its leaf's directory descriptor, or the supervisor's pidfd.
    Open(Scope),
    /// Proven gone (the leaf no longer exists, another boot, the supervisor reaped): why.
    Gone(String),
    /// The path or pid now names something else (another cgroup id, another token): why.
    /// Never touched.
    Mismatch(String),
    /// Could not tell (cgroup2 not visible here, a read failed): why. Nothing may be signalled.
    Unverifiable(String),
    /// The scope is not the pidfile owner's to stop (privilege is never lent): why.
    Refused(String),
}

#[derive(Debug)]
pub(super) enum Inner {
    Cgroup { dir: OwnedFd, events: OwnedFd, mount: PathBuf },
    /// The supervisor's pid and pidfd, pinned and its token matched (see `scope_open.rs`).
    Supervisor { pid: i32, pidfd: OwnedFd },
}

/// A scope pinned for stopping: every signal reaches only processes proven inside it.
///
/// - **cgroup**: members are read from `cgroup.procs` through the leaf's descriptor, each pinned
///   by a pidfd and kept only if it is still listed after pinning; `SIGKILL` goes through
///   `cgroup.kill` (Linux ≥ 5.14: every member, forks in flight included) unless a uid
///   restriction asks for each member to be checked; emptiness is `cgroup.events`'
///   `populated 0`, awaited with `poll(POLLPRI)`.
/// - **supervisor**: members are found by walking `/proc/<pid>/task/*/children` down from the
///   supervisor, each child pinned by a pidfd and kept only if, after pinning, its parent is
///   still the pinned process it was found under; the supervisor itself is never signalled (it
///   blocks what it can; killing it would orphan the tree to init) and exits on its own once its
///   tree is empty, which its pidfd's readiness tells.
#[derive(Debug)]
pub struct Scope {
    record: ScopeRecord,
    pub(super) inner: Inner,
    pub(super) only_uid: Option<u32>,
    pub(super) skipped_for_uid: std::sync::Mutex<Vec<i32>>,
    /// The child cgroups a member made below a cgroup leaf, found when it was opened (part of
    /// the scope: see [`Scope::open_anchored`]).
    pub(super) nested: Vec<String>,
}

impl Scope {
    pub(super) fn new(record: &ScopeRecord, inner: Inner, only_uid: Option<u32>) -> Scope {
        Scope { record: record.clone(), inner, only_uid, skipped_for_uid: std::sync::Mutex::new(Vec::new()), nested: Vec::new() }
    }

    /// Which kind of scope this is.
    pub fn kind(&self) -> ScopeKind {
        self.record.kind()
    }

    /// The record this scope was opened from.
    pub fn record(&self) -> &ScopeRecord {
        &self.record
    }

    /// For a cgroup leaf in which a member made child cgroups: what a report says about it
    /// (`its cgroup … has child cgroups (inner) made inside it: stopped as part of its scope`).
    pub fn nested_note(&self) -> Option<String> {
        if self.nested.is_empty() {
            return None;
        }
        let path = match &self.record {
            ScopeRecord::Cgroup { path, .. } => path.as_str(),
            ScopeRecord::Supervisor { .. } => "",
        };
        Some(format!(
            "its cgroup {path} has child cgroups made inside it ({}): their processes were stopped as part of its scope",
            self.nested.join(", ")
        ))
    }

    /// Members left unsignalled because their uid is not the restriction's.
    pub fn skipped_for_uid(&self) -> Vec<i32> {
        self.skipped_for_uid.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The live members, each pinned by a pidfd and proven inside the scope after pinning (see
    /// the type's docs). Protected targets (pid 1, our own pid, our parent) are left out.
    /// Errors: the errno of reading `cgroup.procs` or `/proc`.
    pub fn members(&self) -> std::io::Result<Vec<(i32, OwnedFd)>> {
        let mut out = Vec::new();
        let mut dup_failed = None;
        self.walk(&mut |p, _, fd| match fd.try_clone_to_owned() {
            Ok(fd) => out.push((p, fd)),
            Err(e) => dup_failed = Some(e),
        })?;
        match dup_failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// The pids of the live members now, each proven a member as [`Self::members`] says but
    /// pinned only while it is checked (a bounded number of descriptors at once, see
    /// `scope_walk.rs`). Errors: the errno of reading `cgroup.procs` or `/proc`, or
    /// `EMFILE`/`ENFILE` when not even one more pidfd can be had.
    pub fn member_pids(&self) -> std::io::Result<Vec<i32>> {
        let mut out = Vec::new();
        self.walk(&mut |p, _, _| out.push(p))?;
        Ok(out)
    }

    /// How many live members the scope has now (see [`Self::member_pids`]).
    pub fn member_count(&self) -> std::io::Result<usize> {
        self.member_pids().map(|m| m.len())
    }

    /// The members that have not exited (state other than zombie `Z` or dead `X`): a
    /// supervisor's exited children stay listed until it reaps them, and no signal is needed
    /// for them (see [`Self::member_pids`] for the errors).
    pub fn live_member_pids(&self) -> std::io::Result<Vec<(i32, u8)>> {
        let mut out = Vec::new();
        self.walk(&mut |p, st, _| {
            if st.state != b'Z' && st.state != b'X' {
                out.push((p, st.state));
            }
        })?;
        Ok(out)
    }

    /// Whether `pid` is a member now (see [`Self::members`]).
    pub fn contains(&self, pid: i32) -> bool {
        self.member_pids().is_ok_and(|m| m.contains(&pid))
    }

    /// Whether `pid` is proven not to be a member now: the members were read and it is not
    /// among them. False when they cannot be read (a supervisor pinned without a pidfd, an
    /// unreadable `cgroup.procs`): a failed read proves nothing.
    pub fn lacks(&self, pid: i32) -> bool {
        self.member_pids().is_ok_and(|m| !m.contains(&pid))
    }

    /// Whether the scope is empty now: `populated 0` (or the leaf is gone: only an empty cgroup
    /// can be removed); the supervisor exited (it exits only when it has no child left).
    /// A read that fails is not "empty".
    pub fn is_empty(&self) -> bool {
        match &self.inner {
            Inner::Cgroup { events, .. } => match cgroup::read_file(events.as_fd()) {
                Ok(t) => cgroup::parse_populated(&t) == Some(false),
                Err(e) => e.raw_os_error() == Some(libc::ENODEV),
            },
            Inner::Supervisor { pidfd, .. } => matches!(sys::poll_readable(&[pidfd.as_fd()], Some(Duration::ZERO)).as_deref(), Ok([true])),
        }
    }

    /// The descriptor to wait on, with the `poll` events that say the scope may have changed:
    /// `cgroup.events` with `POLLPRI`, the supervisor's pidfd with `POLLIN`; `None` for a
    /// supervisor pinned without a pidfd (the caller re-checks on a short timer instead).
    pub fn wait_fd(&self) -> Option<(BorrowedFd<'_>, i16)> {
        match &self.inner {
            Inner::Cgroup { events, .. } => Some((events.as_fd(), libc::POLLPRI)),
            Inner::Supervisor { pidfd, .. } => Some((pidfd.as_fd(), libc::POLLIN)),
        }
    }

    /// Send `sig` to every member. `SIGKILL` to an unrestricted cgroup goes through
    /// `cgroup.kill` (one write: members forking meanwhile are reached too); on a kernel
    /// without it (< 5.14) the leaf is frozen, each member signalled, and thawed. Any other
    /// signal but `SIGSTOP` and `SIGCONT` is sent to a held scope: a frozen cgroup, or, where
    /// there is no freezer, members stopped with `SIGSTOP` first and continued after (a stopped
    /// process cannot fork). Members are pinned a bounded number at a time and rescanned until no
    /// new one appears (see `scope_walk.rs`).
    ///
    /// Returns `AlreadyGone` when nothing was left to signal. Errors: `PermissionDenied` when
    /// the kernel refused every signal; `Io` when the members cannot be read.
    pub fn signal(&self, sig: Signal) -> Result<Delivery> {
        if let (Inner::Cgroup { dir, .. }, Signal::KILL, None) = (&self.inner, sig, self.only_uid) {
            match cgroup::open_at(dir.as_fd(), "cgroup.kill", libc::O_WRONLY).and_then(|f| cgroup::write_file(f.as_fd(), b"1")) {
                Ok(()) => return Ok(Delivery::Sent(None)),
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Ok(Delivery::AlreadyGone),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    let thaw = self.freeze();
                    let r = self.signal_members(sig);
                    if let Some(t) = thaw {
                        t.release();
                    }
                    return r;
                }
                Err(e) => return Err(Error::new(ErrorKind::Io, format!("write cgroup.kill: {e}"))),
            }
        }
        self.signal_members(sig)
    }

    /// Remove an empty cgroup leaf (after a stop, or when its record is found stale): only if
    /// the path still names this very cgroup (same id) and it is empty (the kernel refuses a
    /// populated one with `EBUSY`). Whether it is gone now. A supervisor needs nothing: it
    /// exits by itself once its tree is empty.
    pub fn release(&self) -> bool {
        let Inner::Cgroup { mount, .. } = &self.inner else { return true };
        let ScopeRecord::Cgroup { id, path, .. } = &self.record else { return true };
        let rel = path.trim_start_matches('/');
        let (parent, name) = match rel.rsplit_once('/') {
            Some((p, n)) => (mount.join(p), n),
            None => (mount.clone(), rel),
        };
        // Child cgroups made inside the leaf (emptied with it) go first: a cgroup with
        // children cannot be removed.
        if let Inner::Cgroup { dir, .. } = &self.inner {
            cgroup::remove_empty_below(dir.as_fd());
        }
        let Ok(pdir) = cgroup::open_dir(&parent) else { return false };
        match cgroup::child_ino(pdir.as_fd(), name) {
            Ok(ino) if ino == *id => cgroup::rmdir_at(pdir.as_fd(), name).is_ok(),
            Ok(_) => false,
            Err(e) => e.raw_os_error() == Some(libc::ENOENT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_bad_text_is_malformed() {
        let c: ScopeRecord = "cgroup:0123abcd:4242:/pidguard/run-1".parse().unwrap();
        assert_eq!(c, ScopeRecord::Cgroup { boot_id: "0123abcd".into(), id: 4242, path: "/pidguard/run-1".into() });
        assert_eq!(c.to_string(), "cgroup:0123abcd:4242:/pidguard/run-1");
        // A path with colons stays whole (it is the last field).
        let odd: ScopeRecord = "cgroup:ab:1:/a:b".parse().unwrap();
        assert!(matches!(odd, ScopeRecord::Cgroup { ref path, .. } if path == "/a:b"));
        for bad in ["", "cgroup:", "cgroup:ab:x:/p", "cgroup:ab:1:rel", "cgroup:ab:1:/", "cgroup:ab:1:/a/../b", "cgroup:a b:1:/p", "supervisor:1:x", "supervisor:0:x", "pgroup:1"] {
            assert!(bad.parse::<ScopeRecord>().is_err(), "{bad}");
        }
    }
}
