//! Opening a recorded scope: the identity checks (the cgroup's id and boot, the supervisor's
//! token through a pinned handle) that turn a [`ScopeRecord`] into a pinned [`Scope`].

use std::os::fd::AsFd;

use super::handle::ProcessRef;
use super::scope::{Inner, Scope, ScopeRecord, ScopeState};
use super::verdict::Policy;
use crate::error::ErrorKind;
use crate::sys::{self, cgroup, procfs};

fn errno_text(e: &std::io::Error) -> String {
    sys::errno_name(e.raw_os_error().unwrap_or(libc::EIO)).to_string()
}

impl Scope {
    /// Pin the scope `record` names and check its identity. A cgroup must be one of pidguard's
    /// leaves — a path `…/pidguard/run-<pid>-<16 hex digits>` with no child cgroup — else the
    /// scope is `Refused`, whatever the record's owner (see `leaf.rs`). `only_uid`: the pidfile's owner when
    /// it is not the caller's own (a privileged caller acting on another user's record): the
    /// leaf or supervisor must belong to that uid, and each member is checked against it right
    /// before its own signal.
    pub fn open(record: &ScopeRecord, only_uid: Option<u32>) -> ScopeState {
        match record {
            ScopeRecord::Cgroup { boot_id, id, path } => {
                // Only pidguard's own leaves are scopes: a record naming any other cgroup (a
                // slice, a service, a user's delegation root) is never opened, written to,
                // removed or killed, whoever owns the record.
                if !super::leaf::is_leaf_path(path) {
                    return ScopeState::Refused(format!("its cgroup {path} is not a pidguard leaf (…/pidguard/run-<pid>-<16 hex digits>): not touched"));
                }
                match procfs::boot_id() {
                    Err(e) => return ScopeState::Unverifiable(format!("boot id unreadable ({})", sys::errno_name(e))),
                    Ok(b) if b != boot_id => return ScopeState::Gone("its cgroup was made in another boot".into()),
                    Ok(_) => {}
                }
                let mount = match cgroup::cgroup2_mount() {
                    Ok(m) => m,
                    Err(e) => return ScopeState::Unverifiable(format!("no cgroup2 mount visible here ({})", errno_text(&e))),
                };
                // A missing leaf proves it gone only on the cgroup2 file system itself: under a
                // mount that covers the cgroup2 mount point, nothing can be told.
                let covered = || ScopeState::Unverifiable(format!("{} is not the cgroup2 file system here (another mount covers it)", mount.display()));
                match cgroup::open_dir(&mount).and_then(|d| cgroup::is_cgroup2(d.as_fd())) {
                    Ok(true) => {}
                    Ok(false) => return covered(),
                    Err(e) => return ScopeState::Unverifiable(format!("the cgroup2 mount {} cannot be examined ({})", mount.display(), errno_text(&e))),
                }
                let dir = match cgroup::open_dir(&mount.join(path.trim_start_matches('/'))) {
                    Ok(d) => d,
                    Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENODEV)) => {
                        return ScopeState::Gone(format!("its cgroup {path} no longer exists"))
                    }
                    Err(e) => return ScopeState::Unverifiable(format!("its cgroup {path} cannot be opened ({})", errno_text(&e))),
                };
                if !cgroup::is_cgroup2(dir.as_fd()).unwrap_or(false) {
                    return covered();
                }
                let (ino, uid) = match cgroup::ino_uid(dir.as_fd()) {
                    Ok(x) => x,
                    Err(e) => return ScopeState::Unverifiable(format!("its cgroup {path} cannot be examined ({})", errno_text(&e))),
                };
                if ino != *id {
                    return ScopeState::Mismatch(format!("{path} is now another cgroup (id {ino}, recorded {id})"));
                }
                match cgroup::child_cgroups(dir.as_fd()) {
                    Ok(c) if c.is_empty() => {}
                    Ok(c) => return ScopeState::Refused(format!("its cgroup {path} has child cgroups ({}): not a pidguard leaf, not touched", c.join(", "))),
                    Err(e) => return ScopeState::Unverifiable(format!("the child cgroups of {path} cannot be listed ({})", errno_text(&e))),
                }
                if let Some(owner) = only_uid {
                    if uid != owner {
                        return ScopeState::Refused(format!("its cgroup {path} is owned by uid {uid}, not by the pidfile's owner (uid {owner})"));
                    }
                }
                let events = match cgroup::open_at(dir.as_fd(), "cgroup.events", libc::O_RDONLY) {
                    Ok(f) => f,
                    Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return ScopeState::Gone(format!("its cgroup {path} was removed")),
                    Err(e) => return ScopeState::Unverifiable(format!("{path}/cgroup.events cannot be opened ({})", errno_text(&e))),
                };
                ScopeState::Open(Scope::new(record, Inner::Cgroup { dir, events, mount }, only_uid))
            }
            ScopeRecord::Supervisor { pid, token } => match ProcessRef::open(*pid, Some(token), Policy::Strict) {
                Ok(mut sup) => {
                    if let Some(owner) = only_uid {
                        match sup.uids() {
                            Ok((r, s)) if r == owner || s == owner => {}
                            Ok(_) if supervisor_runs_as(&sup, *pid, owner) => {}
                            Ok((r, _)) => return ScopeState::Refused(format!("its supervisor (pid {pid}) runs as uid {r}, not as the pidfile's owner (uid {owner})")),
                            Err(e) => return ScopeState::Unverifiable(format!("its supervisor's uid is unreadable ({})", e.message())),
                        }
                        sup.restrict_to_uid(owner);
                    }
                    if sup.has_exited() {
                        return ScopeState::Gone(format!("its supervisor (pid {pid}) has exited"));
                    }
                    match sup.pidfd().map(|fd| fd.try_clone_to_owned()) {
                        Some(Ok(pidfd)) => ScopeState::Open(Scope::new(record, Inner::Supervisor { pid: *pid, pidfd }, only_uid)),
                        // A supervisor pinned without a pidfd (no pidfds here) cannot be walked
                        // safely: its children could not be pinned either.
                        _ => ScopeState::Unverifiable(format!("its supervisor (pid {pid}) cannot be pinned (no pidfd)")),
                    }
                }
                Err(e) if e.kind() == ErrorKind::NoSuchProcess => ScopeState::Gone(format!("its supervisor (pid {pid}) has exited")),
                Err(e) if e.kind() == ErrorKind::Refused && e.refusal() == Some(crate::protect::Refusal::Mismatch) => {
                    ScopeState::Mismatch(format!("pid {pid} is no longer its supervisor"))
                }
                Err(e) => ScopeState::Unverifiable(format!("its supervisor (pid {pid}) could not be verified: {}", e.message())),
            },
        }
    }

}

/// Whether the pinned supervisor `sup` (pid `pid`) has `owner` as its effective uid: a
/// supervisor started by root that lowered only its effective uid (ids (0, U, 0): ArchiveBox's
/// image, spawning a hook as U) keeps those ids, so that the command, which runs as U, cannot
/// signal it and leave its scope; its record is U's (written with effective uid U). It counts
/// as U's supervisor. No privilege is lent by that: the supervisor itself stays under the uid
/// restriction (kill(2)'s rule, real or saved uid: it is never signalled for U), and each
/// member of its tree is checked for U right before its own signal — every signal goes to a
/// process U could have signalled itself. The read goes by number and is confirmed through the
/// pin afterwards.
fn supervisor_runs_as(sup: &ProcessRef, pid: i32, owner: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        crate::sys::procfs::read_euid(pid).is_ok_and(|e| e == owner) && sup.uids().is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (sup, pid, owner);
        false
    }
}
