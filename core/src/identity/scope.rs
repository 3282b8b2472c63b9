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
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use super::delivery::{member_has_uid, Delivery};
use super::token::StartToken;
use crate::error::{Error, ErrorKind, Result};
use crate::protect::{refuse, Target};
use crate::signo::Signal;
use crate::sys::{self, cgroup, procfs};

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
    only_uid: Option<u32>,
    skipped_for_uid: std::sync::Mutex<Vec<i32>>,
}

fn errno_text(e: &std::io::Error) -> String {
    sys::errno_name(e.raw_os_error().unwrap_or(libc::EIO)).to_string()
}

impl Scope {
    pub(super) fn new(record: &ScopeRecord, inner: Inner, only_uid: Option<u32>) -> Scope {
        Scope { record: record.clone(), inner, only_uid, skipped_for_uid: std::sync::Mutex::new(Vec::new()) }
    }

    /// Which kind of scope this is.
    pub fn kind(&self) -> ScopeKind {
        self.record.kind()
    }

    /// The record this scope was opened from.
    pub fn record(&self) -> &ScopeRecord {
        &self.record
    }

    /// Members left unsignalled because their uid is not the restriction's.
    pub fn skipped_for_uid(&self) -> Vec<i32> {
        self.skipped_for_uid.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The live members, each pinned by a pidfd and proven inside the scope after pinning (see
    /// the type's docs). Protected targets (pid 1, our own pid, our parent) are left out.
    /// Errors: the errno of reading `cgroup.procs` or `/proc`.
    pub fn members(&self) -> std::io::Result<Vec<(i32, OwnedFd)>> {
        match &self.inner {
            Inner::Cgroup { dir, .. } => {
                let read = || -> std::io::Result<Vec<i32>> {
                    let f = cgroup::open_at(dir.as_fd(), "cgroup.procs", libc::O_RDONLY)?;
                    Ok(cgroup::parse_procs(&cgroup::read_file(f.as_fd())?))
                };
                let listed = read()?;
                let mut pinned: Vec<(i32, OwnedFd)> = Vec::new();
                for p in listed {
                    if refuse(Target::Process { pid: p as i64, token_matched: false }).is_some() {
                        continue;
                    }
                    sys::fault::point(sys::fault::Point::BeforeScopePin);
                    if let Ok(fd) = sys::pidfd_open(p) {
                        pinned.push((p, fd));
                    }
                }
                // A pid listed again after pinning names the pinned process (a pinned pid
                // cannot be reused), and a process is in exactly one cgroup.
                let again = read()?;
                pinned.retain(|(p, _)| again.contains(p));
                Ok(pinned)
            }
            Inner::Supervisor { pid, pidfd } => {
                let sfd = pidfd.as_fd();
                let mut out: Vec<(i32, OwnedFd)> = Vec::new();
                let mut frontier: Vec<(i32, Option<usize>)> = vec![(*pid, None)];
                while let Some((parent, idx)) = frontier.pop() {
                    for c in procfs::children(parent)? {
                        if refuse(Target::Process { pid: c as i64, token_matched: false }).is_some() || out.iter().any(|(p, _)| *p == c) {
                            continue;
                        }
                        sys::fault::point(sys::fault::Point::BeforeScopePin);
                        let Ok(fd) = sys::pidfd_open(c) else { continue };
                        // After pinning: its parent must still be the pinned process it was
                        // found under, and that parent must still be alive (not reaped, so its
                        // pid is still its own).
                        let ppid_ok = matches!(procfs::read_stat(c), Ok(st) if st.ppid == parent);
                        let pfd = match idx {
                            None => sfd,
                            Some(i) => out[i].1.as_fd(),
                        };
                        let parent_alive = matches!(sys::poll_readable(&[pfd], Some(Duration::ZERO)).as_deref(), Ok([false]));
                        if ppid_ok && parent_alive {
                            out.push((c, fd));
                            frontier.push((c, Some(out.len() - 1)));
                        }
                    }
                }
                Ok(out)
            }
        }
    }

    /// Whether `pid` is a member now (see [`Self::members`]).
    pub fn contains(&self, pid: i32) -> bool {
        self.members().is_ok_and(|m| m.iter().any(|(p, _)| *p == pid))
    }

    /// Whether `pid` is proven not to be a member now: the members were read and it is not
    /// among them. False when they cannot be read (a supervisor pinned without a pidfd, an
    /// unreadable `cgroup.procs`): a failed read proves nothing.
    pub fn lacks(&self, pid: i32) -> bool {
        self.members().is_ok_and(|m| !m.iter().any(|(p, _)| *p == pid))
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
    /// without it (< 5.14) the leaf is frozen, each member signalled, and thawed. Members are
    /// rescanned until no new one appears.
    ///
    /// Returns `AlreadyGone` when nothing was left to signal. Errors: `PermissionDenied` when
    /// the kernel refused every signal; `Io` when the members cannot be read.
    pub fn signal(&self, sig: Signal) -> Result<Delivery> {
        if let (Inner::Cgroup { dir, .. }, Signal::KILL, None) = (&self.inner, sig, self.only_uid) {
            match cgroup::open_at(dir.as_fd(), "cgroup.kill", libc::O_WRONLY).and_then(|f| cgroup::write_file(f.as_fd(), b"1")) {
                Ok(()) => return Ok(Delivery::Sent(None)),
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Ok(Delivery::AlreadyGone),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    let freeze = cgroup::open_at(dir.as_fd(), "cgroup.freeze", libc::O_WRONLY).ok();
                    if let Some(f) = &freeze {
                        let _ = cgroup::write_file(f.as_fd(), b"1");
                    }
                    let r = self.signal_members(sig);
                    if let Some(f) = &freeze {
                        let _ = cgroup::write_file(f.as_fd(), b"0");
                    }
                    return r;
                }
                Err(e) => return Err(Error::new(ErrorKind::Io, format!("write cgroup.kill: {e}"))),
            }
        }
        self.signal_members(sig)
    }

    fn signal_members(&self, sig: Signal) -> Result<Delivery> {
        let mut done: Vec<i32> = Vec::new();
        let mut sent = false;
        let mut denied = None;
        for _round in 0..16 {
            let members = self.members().map_err(|e| Error::new(ErrorKind::Io, format!("read the scope's members: {e}")))?;
            let fresh: Vec<&(i32, OwnedFd)> = members.iter().filter(|(p, _)| !done.contains(p)).collect();
            if fresh.is_empty() {
                break;
            }
            for (p, fd) in fresh {
                done.push(*p);
                if let Some(owner) = self.only_uid {
                    // Checked immediately before its own signal (see ProcessRef::signal_group).
                    if !member_has_uid(*p, fd.as_fd(), owner) {
                        log::warn!("pid {p} in scope {}: not signalled, its uid is not the pidfile owner's ({owner})", self.record);
                        let mut s = self.skipped_for_uid.lock().unwrap_or_else(|x| x.into_inner());
                        if !s.contains(p) {
                            s.push(*p);
                        }
                        continue;
                    }
                }
                match sys::pidfd_send_signal(fd.as_fd(), sig.number(), 0) {
                    Ok(()) => sent = true,
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => denied = Some(e),
                    Err(_) => {}
                }
            }
        }
        match (sent, denied) {
            (true, _) => Ok(Delivery::Sent(None)),
            (false, Some(e)) => Err(Error::new(ErrorKind::PermissionDenied, format!("send {sig} to the scope {}: {e}", self.record))),
            (false, None) => Ok(Delivery::AlreadyGone),
        }
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
        let Ok(pdir) = cgroup::open_dir(&parent) else { return false };
        match cgroup::child_ino(pdir.as_fd(), name) {
            Ok(ino) if ino == *id => cgroup::rmdir_at(pdir.as_fd(), name).is_ok(),
            Ok(_) => false,
            Err(e) => e.raw_os_error() == Some(libc::ENOENT),
        }
    }
}

/// A cgroup leaf just made for a command that is about to start (see [`create_leaf`]).
#[derive(Debug)]
pub(crate) struct NewLeaf {
    /// `cgroup.procs` of the leaf, opened for writing: the child writes `0` to it before it execs.
    pub(crate) procs: OwnedFd,
    /// What the pidfile records.
    pub(crate) record: ScopeRecord,
    dir: OwnedFd,
    parent: OwnedFd,
    name: String,
}

impl NewLeaf {
    /// Undo a leaf whose command could not be started or recorded: kill whatever joined it
    /// (`cgroup.kill`, else each member through a pidfd), wait up to 2 s for it to empty
    /// (`poll` on `cgroup.events`), and remove it. Whether it is gone.
    pub(crate) fn discard(&self) -> bool {
        if let Ok(f) = cgroup::open_at(self.dir.as_fd(), "cgroup.kill", libc::O_WRONLY) {
            let _ = cgroup::write_file(f.as_fd(), b"1");
        } else if let Ok(f) = cgroup::open_at(self.dir.as_fd(), "cgroup.procs", libc::O_RDONLY) {
            for p in cgroup::read_file(f.as_fd()).map(|t| cgroup::parse_procs(&t)).unwrap_or_default() {
                if let Ok(fd) = sys::pidfd_open(p) {
                    let _ = sys::pidfd_send_signal(fd.as_fd(), libc::SIGKILL, 0);
                }
            }
        }
        if let Ok(ev) = cgroup::open_at(self.dir.as_fd(), "cgroup.events", libc::O_RDONLY) {
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            while cgroup::read_file(ev.as_fd()).is_ok_and(|t| cgroup::parse_populated(&t) == Some(true)) {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                let _ = cgroup::poll_any(&[(ev.as_fd(), libc::POLLPRI)], left.min(Duration::from_millis(100)));
            }
        }
        cgroup::rmdir_at(self.parent.as_fd(), &self.name).is_ok()
    }
}

/// Move the running process `pid`, pinned by `pidfd`, into a new cgroup leaf ([`create_leaf`])
/// and return the leaf's record: the opt-in scope of a record pidguard did not start.
///
/// `cgroup.procs` takes a number, so the move is proven afterwards: the pinned process must
/// still be alive (a live process keeps its number, so the number written named it) and must
/// be listed in the leaf; else the leaf is emptied and removed again and nothing is recorded.
/// Only `pid` moves: its threads with it, but children it forked before the move stay where
/// they are (the window a spawner that cannot start the command inside a scope accepts).
///
/// Errors, with the leaf removed: the leaf could not be made (see [`create_leaf`]); the write
/// was refused (`EACCES` without delegation, `EBUSY`); the process exited meanwhile.
pub(crate) fn adopt_into_leaf(pid: i32, pidfd: BorrowedFd<'_>) -> std::result::Result<ScopeRecord, String> {
    let leaf = create_leaf()?;
    let moved = cgroup::write_file(leaf.procs.as_fd(), pid.to_string().as_bytes());
    let alive = matches!(sys::poll_readable(&[pidfd], Some(Duration::ZERO)).as_deref(), Ok([false]));
    let listed = cgroup::open_at(leaf.dir.as_fd(), "cgroup.procs", libc::O_RDONLY)
        .and_then(|f| cgroup::read_file(f.as_fd()))
        .is_ok_and(|t| cgroup::parse_procs(&t).contains(&pid));
    match moved {
        Ok(()) if alive && listed => Ok(leaf.record.clone()),
        Ok(()) => {
            // Not proven ours: whatever joined is not killed, only moved back out is not
            // possible without a target, so the leaf is removed only when empty.
            let _ = cgroup::rmdir_at(leaf.parent.as_fd(), &leaf.name);
            Err(format!("pid {pid} exited while it was being moved into its cgroup leaf"))
        }
        Err(e) => {
            let _ = cgroup::rmdir_at(leaf.parent.as_fd(), &leaf.name);
            Err(format!("pid {pid} could not be moved into a cgroup leaf: {}", errno_text(&e)))
        }
    }
}

/// Why a mkdir in the cgroup directory `dir` (open as `fd`) was refused, for a person: whose
/// directory it is and what permission creating a cgroup needs; empty unless `e` is EACCES or
/// EPERM. The owner and mode are read with fstat on the open directory (a failed read says so).
fn denied_why(fd: BorrowedFd<'_>, dir: &Path, e: &std::io::Error) -> String {
    if !matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) {
        return String::new();
    }
    let owner = match nix::sys::stat::fstat(fd) {
        Ok(st) => format!("{} belongs to uid {} (mode {:o})", dir.display(), st.st_uid, st.st_mode & 0o7777),
        Err(e) => format!("the owner of {} could not be read ({e})", dir.display()),
    };
    format!(
        " — {owner}, and this process runs as uid {} (effective {}): creating a cgroup needs write \
         permission on that directory, which its owner has or a delegation gives (run as root, or \
         in a cgroup delegated to this user, e.g. `systemd-run --user --scope -p Delegate=yes`); \
         or start it under the supervisor scope instead",
        nix::unistd::getuid(),
        nix::unistd::geteuid()
    )
}

/// Make a cgroup v2 leaf for one command: `pidguard/<name>` below our own cgroup (the `0::`
/// line of `/proc/self/cgroup`) on the cgroup2 mount found in `/proc/self/mountinfo`, where
/// `<name>` is `run-<our pid>-<16 random hex digits>`. The `pidguard` directory is made when
/// missing (mode 0755) and left in place; the leaf's id is its inode.
///
/// Errors, each with the step: no cgroup2 mount visible (`ENOENT`); `EACCES`/`EPERM` when the
/// caller may not create cgroups there (no delegation); `EROFS` for a read-only mount; the
/// errno of any other step. Nothing is left behind on error.
pub(crate) fn create_leaf() -> std::result::Result<NewLeaf, String> {
    let step = |what: &str, e: std::io::Error| format!("{what}: {}", errno_text(&e));
    let boot_id = procfs::boot_id().map_err(|e| format!("boot id unreadable ({})", sys::errno_name(e)))?.to_string();
    let mount = cgroup::cgroup2_mount().map_err(|e| step("no cgroup2 mount visible in /proc/self/mountinfo", e))?;
    let own = cgroup::own_cgroup().map_err(|e| step("no cgroup2 line in /proc/self/cgroup", e))?;
    let covered = || format!("{} is not the cgroup2 file system here: another mount covers the cgroup2 mount point", mount.display());
    let root = cgroup::open_dir(&mount).map_err(|e| step("open the cgroup2 mount", e))?;
    if !cgroup::is_cgroup2(root.as_fd()).map_err(|e| step("fstatfs the cgroup2 mount", e))? {
        return Err(covered());
    }
    let own_dir = cgroup::open_dir(&mount.join(own.trim_start_matches('/'))).map_err(|e| step("open our own cgroup", e))?;
    if !cgroup::is_cgroup2(own_dir.as_fd()).map_err(|e| step("fstatfs our own cgroup", e))? {
        return Err(covered());
    }
    let own_path = mount.join(own.trim_start_matches('/'));
    match cgroup::mkdir_at(own_dir.as_fd(), "pidguard") {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
        Err(e) => {
            let why = denied_why(own_dir.as_fd(), &own_path, &e);
            return Err(step(&format!("create {}/pidguard", own_path.display()), e) + &why);
        }
    }
    let parent = cgroup::open_at(own_dir.as_fd(), "pidguard", libc::O_RDONLY | libc::O_DIRECTORY).map_err(|e| step("open the pidguard cgroup", e))?;
    let mut rnd = [0u8; 8];
    sys::getrandom(&mut rnd).map_err(|e| step("getrandom", e))?;
    let name = format!("run-{}-{}", sys::getpid(), rnd.iter().map(|b| format!("{b:02x}")).collect::<String>());
    cgroup::mkdir_at(parent.as_fd(), &name).map_err(|e| {
        let dir = own_path.join("pidguard");
        let why = denied_why(parent.as_fd(), &dir, &e);
        step(&format!("create a cgroup leaf in {}", dir.display()), e) + &why
    })?;
    let opened = (|| {
        let dir = cgroup::open_at(parent.as_fd(), &name, libc::O_RDONLY | libc::O_DIRECTORY)?;
        let (id, _) = cgroup::ino_uid(dir.as_fd())?;
        let procs = cgroup::open_at(dir.as_fd(), "cgroup.procs", libc::O_WRONLY)?;
        Ok::<_, std::io::Error>((dir, id, procs))
    })();
    match opened {
        Ok((dir, id, procs)) => {
            let base = if own == "/" { String::new() } else { own.trim_end_matches('/').to_string() };
            let path = format!("{base}/pidguard/{name}");
            Ok(NewLeaf { procs, record: ScopeRecord::Cgroup { boot_id, id, path }, dir, parent, name })
        }
        Err(e) => {
            let _ = cgroup::rmdir_at(parent.as_fd(), &name);
            Err(step("open the new cgroup leaf", e))
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
