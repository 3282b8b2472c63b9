//! Cgroup v2 leaves pidguard makes, and the only cgroups it treats as scopes.
//!
//! - **Name**: `…/pidguard/run-<pid of the spawner>-<16 random hex digits>`, a leaf (no child
//!   cgroup). [`Scope::open`](super::Scope::open) refuses any other cgroup a record names: a
//!   scope's `SIGKILL` is one write to its `cgroup.kill`, which kills a whole subtree, so a
//!   record (even a root-owned one: a restored archive, a FUSE or NFS file) never aims it at a
//!   slice or a service.
//! - **Place**: below the spawner's own cgroup; for a privileged spawner (a real or effective
//!   uid of 0, or `CAP_KILL`: [`Caller::privileged`]) below the deepest cgroup on the path from
//!   the root to its own whose every level — the directory and its `cgroup.procs` — is owned by
//!   root or the spawner's effective uid and writable by no group or other. Never below a
//!   cgroup another uid can write: that uid could move root's processes out of the leaf, freeze
//!   or limit them.
//! - **Removal**: a spawn removes the empty leaves (`populated 0` in `cgroup.events`, no child
//!   cgroup) that its effective uid made in the same `pidguard` directory and whose spawner is
//!   gone or, for its own, whose spawn has returned (a spawn in flight may be about to start its
//!   command in one); each is removed only if its
//!   path still has the id it was examined under. A record naming a removed leaf finds its scope
//!   gone, as it would find the empty leaf: no process is in it.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use super::scope::ScopeRecord;
use crate::protect::Caller;
use crate::sys::{self, cgroup, procfs};

fn errno_text(e: &std::io::Error) -> String {
    sys::errno_name(e.raw_os_error().unwrap_or(libc::EIO)).to_string()
}

/// The directory every leaf is made in, below the chosen cgroup.
pub(crate) const LEAVES_DIR: &str = "pidguard";

/// Whether `name` is a leaf's name: `run-<decimal pid>-<16 lowercase hex digits>`.
pub(crate) fn is_leaf_name(name: &str) -> bool {
    let Some((pid, hex)) = name.strip_prefix("run-").and_then(|r| r.split_once('-')) else { return false };
    (1..=10).contains(&pid.len())
        && pid.bytes().all(|b| b.is_ascii_digit())
        && hex.len() == 16
        && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether a recorded cgroup path (below the cgroup2 mount, starting with `/`) has a leaf's
/// form: `…/pidguard/run-<pid>-<16 hex digits>`.
pub(crate) fn is_leaf_path(path: &str) -> bool {
    let mut it = path.rsplit('/');
    matches!((it.next(), it.next()), (Some(name), Some(LEAVES_DIR)) if is_leaf_name(name))
}

/// Why the cgroup directory `dir` can be written by a uid other than root and `euid` (its owner
/// or its `cgroup.procs`' owner is another uid, or either is group- or world-writable); `None`
/// when it cannot.
fn writable_by_others(dir: BorrowedFd<'_>, euid: u32) -> std::io::Result<Option<String>> {
    let ok = |(uid, mode): (u32, u32)| (uid == 0 || uid == euid) && mode & 0o022 == 0;
    let d = cgroup::owner_mode(dir)?;
    if !ok(d) {
        return Ok(Some(format!("the directory is owned by uid {} with mode {:04o}", d.0, d.1)));
    }
    let p = cgroup::owner_mode_at(dir, "cgroup.procs")?;
    Ok((!ok(p)).then(|| format!("its cgroup.procs is owned by uid {} with mode {:04o}", p.0, p.1)))
}

/// The cgroup the leaves of a privileged spawner go below: the deepest on the path from the
/// root (`root`, the cgroup2 mount) to `own` whose every level no other uid can write (see the
/// module docs). (its descriptor, its path starting with `/` or empty for the root).
fn trusted_base(root: &OwnedFd, own: &str, euid: u32) -> std::result::Result<(OwnedFd, String), String> {
    let step = |what: &str, e: std::io::Error| format!("{what}: {}", errno_text(&e));
    if let Some(why) = writable_by_others(root.as_fd(), euid).map_err(|e| step("examine the cgroup2 root", e))? {
        return Err(format!("the cgroup2 root can be written by another uid ({why})"));
    }
    let mut cur = root.try_clone().map_err(|e| step("dup the cgroup2 root", e))?;
    let mut path = String::new();
    for comp in own.split('/').filter(|c| !c.is_empty()) {
        let next = cgroup::open_at(cur.as_fd(), comp, libc::O_RDONLY | libc::O_DIRECTORY).map_err(|e| step(&format!("open the cgroup {path}/{comp}"), e))?;
        if writable_by_others(next.as_fd(), euid).map_err(|e| step(&format!("examine the cgroup {path}/{comp}"), e))?.is_some() {
            break;
        }
        cur = next;
        path.push('/');
        path.push_str(comp);
    }
    Ok((cur, path))
}

/// The names of the leaves this process made whose command may not have joined yet (from
/// [`create_leaf`] until its [`NewLeaf`] is dropped): [`sweep`] never removes them.
static IN_FLIGHT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn in_flight() -> std::sync::MutexGuard<'static, Vec<String>> {
    IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner())
}

impl Drop for NewLeaf {
    fn drop(&mut self) {
        in_flight().retain(|n| *n != self.name);
    }
}

/// Remove the empty leaves `euid` left in the `pidguard` directory `parent` whose spawner is
/// gone (see the module docs); at most 256 entries are looked at per call, so one spawn's cost
/// stays bounded. Nothing is reported: a leaf that cannot be examined or removed stays.
fn sweep(parent: BorrowedFd<'_>, euid: u32) {
    let Ok(names) = cgroup::child_cgroups(parent) else { return };
    for name in names.iter().filter(|n| is_leaf_name(n)).take(256) {
        let spawner: i32 = name["run-".len()..].split('-').next().and_then(|p| p.parse().ok()).unwrap_or(0);
        // A live spawner (or one we cannot tell about) may be about to start its command there;
        // this process knows its own leaves in flight.
        let busy = match spawner == sys::getpid() {
            true => in_flight().contains(name),
            false => spawner <= 0 || !matches!(sys::kill_probe(spawner), Err(e) if e.raw_os_error() == Some(libc::ESRCH)),
        };
        if busy {
            continue;
        }
        let Ok(leaf) = cgroup::open_at(parent, name, libc::O_RDONLY | libc::O_DIRECTORY) else { continue };
        let Ok((id, uid)) = cgroup::ino_uid(leaf.as_fd()) else { continue };
        if uid != euid || !cgroup::child_cgroups(leaf.as_fd()).is_ok_and(|c| c.is_empty()) {
            continue;
        }
        let empty = cgroup::open_at(leaf.as_fd(), "cgroup.events", libc::O_RDONLY)
            .and_then(|f| cgroup::read_file(f.as_fd()))
            .is_ok_and(|t| cgroup::parse_populated(&t) == Some(false));
        // Only the very cgroup examined: its path must still have its id.
        if empty && cgroup::child_ino(parent, name).is_ok_and(|ino| ino == id) {
            let _ = cgroup::rmdir_at(parent, name);
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
    /// (`cgroup.procs`, the leaf's directory) as raw descriptors, for a spawn that starts its
    /// command in the leaf ([`crate::sys::spawn::Command`]'s `join` and `join_dir`); valid while
    /// this leaf lives.
    pub(crate) fn join_fds(&self) -> (std::os::fd::RawFd, std::os::fd::RawFd) {
        use std::os::fd::AsRawFd;
        (self.procs.as_raw_fd(), self.dir.as_raw_fd())
    }

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

/// A process moved into a leaf of its own by [`adopt_into_leaf`]: the leaf's record, and the
/// way back to the cgroup it came from while its record is not written yet.
#[derive(Debug)]
pub(crate) struct Adopted {
    /// The leaf's record, for the pidfile.
    pub(crate) record: ScopeRecord,
    leaf: NewLeaf,
    /// `cgroup.procs` of the cgroup the process was in before the move, opened for writing
    /// before it; `None` when it could not be opened (the process then cannot be put back).
    back: Option<OwnedFd>,
    /// That cgroup's path below the cgroup2 mount, for messages.
    from: String,
}

impl Adopted {
    /// Put the process back into the cgroup it was moved from (its record could not be
    /// written: it must not run on in an unrecorded leaf) and remove the leaf once empty. Only
    /// while the pin (`pidfd`) says the process is alive: then `pid` is still its number. Why it
    /// could not be put back, if it could not.
    pub(crate) fn undo(self, pid: i32, pidfd: BorrowedFd<'_>) -> std::result::Result<(), String> {
        let alive = matches!(sys::poll_readable(&[pidfd], Some(Duration::ZERO)).as_deref(), Ok([false]));
        let r = match (&self.back, alive) {
            (_, false) => Ok(()),
            (None, true) => Err(format!("its cgroup {} could not be opened: it stays in {}", self.from, leaf_path(&self.record))),
            (Some(f), true) => cgroup::write_file(f.as_fd(), pid.to_string().as_bytes())
                .map_err(|e| format!("it could not be moved back to {} ({}): it stays in {}", self.from, errno_text(&e), leaf_path(&self.record))),
        };
        let _ = cgroup::rmdir_at(self.leaf.parent.as_fd(), &self.leaf.name);
        r
    }
}

fn leaf_path(r: &ScopeRecord) -> &str {
    match r {
        ScopeRecord::Cgroup { path, .. } => path,
        ScopeRecord::Supervisor { .. } => "",
    }
}

/// Move the running process `pid`, pinned by `pidfd`, into a new cgroup leaf ([`create_leaf`]):
/// the opt-in scope of a record pidguard did not start. The cgroup it was in is read first
/// (`/proc/<pid>/cgroup`, proven to be the pinned process's by the pin staying alive) and its
/// `cgroup.procs` opened, so that [`Adopted::undo`] can put it back if its record cannot be
/// written.
///
/// `cgroup.procs` takes a number, so the move is proven afterwards: the pinned process must
/// still be alive (a live process keeps its number, so the number written named it) and must
/// be listed in the leaf; else the leaf is removed again (when empty) and nothing is recorded.
/// Only `pid` moves: its threads with it, but children it forked before the move stay where
/// they are (the window a spawner that cannot start the command inside a scope accepts).
///
/// Errors, with the leaf removed: the leaf could not be made (see [`create_leaf`]); the write
/// was refused (`EACCES` without delegation, `EBUSY`); the process exited meanwhile.
pub(crate) fn adopt_into_leaf(pid: i32, pidfd: BorrowedFd<'_>) -> std::result::Result<Adopted, String> {
    let alive = || matches!(sys::poll_readable(&[pidfd], Some(Duration::ZERO)).as_deref(), Ok([false]));
    let from = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("0::")).map(|p| p.trim_end().to_string()));
    if !alive() {
        return Err(format!("pid {pid} exited before it could be moved into a cgroup leaf"));
    }
    let from = from.unwrap_or_default();
    let back = cgroup::cgroup2_mount()
        .and_then(|m| cgroup::open_dir(&m.join(from.trim_start_matches('/'))))
        .and_then(|d| cgroup::open_at(d.as_fd(), "cgroup.procs", libc::O_WRONLY))
        .ok()
        .filter(|_| !from.is_empty());
    let leaf = create_leaf()?;
    let moved = cgroup::write_file(leaf.procs.as_fd(), pid.to_string().as_bytes());
    let listed = cgroup::open_at(leaf.dir.as_fd(), "cgroup.procs", libc::O_RDONLY)
        .and_then(|f| cgroup::read_file(f.as_fd()))
        .is_ok_and(|t| cgroup::parse_procs(&t).contains(&pid));
    match moved {
        Ok(()) if alive() && listed => Ok(Adopted { record: leaf.record.clone(), leaf, back, from }),
        Ok(()) => {
            // Not proven ours: whatever joined is not killed, only removed with the leaf once
            // empty.
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
fn denied_why(fd: BorrowedFd<'_>, dir: &str, e: &std::io::Error) -> String {
    if !matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) {
        return String::new();
    }
    let owner = match nix::sys::stat::fstat(fd) {
        Ok(st) => format!("{dir} belongs to uid {} (mode {:o})", st.st_uid, st.st_mode & 0o7777),
        Err(e) => format!("the owner of {dir} could not be read ({e})"),
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

/// Make a cgroup v2 leaf for one command: `pidguard/run-<our pid>-<16 random hex digits>` on
/// the cgroup2 mount found in `/proc/self/mountinfo`, below our own cgroup (the `0::` line of
/// `/proc/self/cgroup`) or, for a privileged caller, below the deepest cgroup on that path no
/// other uid can write (see the module docs). The `pidguard` directory is made when missing
/// (mode 0755) and left in place; the empty leaves our uid left there are removed first; the
/// leaf's id is its inode.
///
/// Errors, each with the step: no cgroup2 mount visible (`ENOENT`); `EACCES`/`EPERM` when the
/// caller may not create cgroups there (no delegation); `EROFS` for a read-only mount; for a
/// privileged caller, a `pidguard` directory (or the cgroup2 root) another uid can write; the
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
    let caller = Caller::current();
    let (base_dir, base) = if caller.privileged() {
        trusted_base(&root, &own, caller.euid)?
    } else {
        let d = cgroup::open_dir(&mount.join(own.trim_start_matches('/'))).map_err(|e| step("open our own cgroup", e))?;
        (d, if own == "/" { String::new() } else { own.trim_end_matches('/').to_string() })
    };
    if !cgroup::is_cgroup2(base_dir.as_fd()).map_err(|e| step("fstatfs our own cgroup", e))? {
        return Err(covered());
    }
    let shown = || format!("{}{base}/{LEAVES_DIR}", mount.display());
    match cgroup::mkdir_at(base_dir.as_fd(), LEAVES_DIR) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
        Err(e) => {
            let why = denied_why(base_dir.as_fd(), &format!("{}{base}", mount.display()), &e);
            return Err(step(&format!("create {}", shown()), e) + &why);
        }
    }
    let parent = cgroup::open_at(base_dir.as_fd(), LEAVES_DIR, libc::O_RDONLY | libc::O_DIRECTORY).map_err(|e| step("open the pidguard cgroup", e))?;
    if caller.privileged() {
        match writable_by_others(parent.as_fd(), caller.euid) {
            Ok(None) => {}
            Ok(Some(why)) => return Err(format!("{} can be written by another uid ({why}): no leaf is made there", shown())),
            Err(e) => return Err(step(&format!("examine {}", shown()), e)),
        }
    }
    sweep(parent.as_fd(), caller.euid);
    let mut rnd = [0u8; 8];
    sys::getrandom(&mut rnd).map_err(|e| step("getrandom", e))?;
    let name = format!("run-{}-{}", sys::getpid(), rnd.iter().map(|b| format!("{b:02x}")).collect::<String>());
    in_flight().push(name.clone());
    if let Err(e) = cgroup::mkdir_at(parent.as_fd(), &name) {
        in_flight().retain(|n| *n != name);
        let why = denied_why(parent.as_fd(), &shown(), &e);
        return Err(step(&format!("create a cgroup leaf in {}", shown()), e) + &why);
    }
    let opened = (|| {
        let dir = cgroup::open_at(parent.as_fd(), &name, libc::O_RDONLY | libc::O_DIRECTORY)?;
        let (id, _) = cgroup::ino_uid(dir.as_fd())?;
        let procs = cgroup::open_at(dir.as_fd(), "cgroup.procs", libc::O_WRONLY)?;
        Ok::<_, std::io::Error>((dir, id, procs))
    })();
    match opened {
        Ok((dir, id, procs)) => {
            let path = format!("{base}/{LEAVES_DIR}/{name}");
            Ok(NewLeaf { procs, record: ScopeRecord::Cgroup { boot_id, id, path }, dir, parent, name })
        }
        Err(e) => {
            let _ = cgroup::rmdir_at(parent.as_fd(), &name);
            in_flight().retain(|n| *n != name);
            Err(step("open the new cgroup leaf", e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pidguards_leaf_names_are_leaves() {
        assert!(is_leaf_path("/pidguard/run-12-0123456789abcdef"));
        assert!(is_leaf_path("/user.slice/x/pidguard/run-1-ffffffffffffffff"));
        for bad in ["/system.slice", "/pidguard", "/pidguard/run-12", "/pidguard/run-12-0123456789ABCDEF", "/pidguard/run-x-0123456789abcdef",
            "/pidguard/run-12-0123456789abcde", "/other/run-12-0123456789abcdef", "/pidguard/run-12-0123456789abcdef/child", "run-12-0123456789abcdef"] {
            assert!(!is_leaf_path(bad), "{bad}");
        }
    }
}
