//! Starting a command as another user: which identity a spawn's `user`, `group` and
//! `extra_groups` name, and whether the caller may give it — decided before anything is made.
//!
//! The names and meaning are Python `subprocess`'s (`user=`, `group=`, `extra_groups=`), start-
//! stop-daemon's `--chuid USER[:GROUP]` and systemd's `User=`/`Group=`/`SupplementaryGroups=`:
//!
//! - `user`: the command's real, effective and saved uid. A name is looked up in the user
//!   database (`getpwnam`); a name that is all digits and names no user is that number.
//! - `group`: its real, effective and saved gid; names as for `user` (`getgrnam`). Absent with
//!   `user` given: the user's primary group from the user database (`pw_gid`; unlike
//!   `subprocess`, which would keep the caller's gid — root's, for a root caller). A user number
//!   with no entry and no `group` is `InvalidArgument`.
//! - `extra_groups`: exactly these supplementary groups (empty: none). Absent with `user` given:
//!   the user's groups as `initgroups(3)` gives them (`getgrouplist`: the groups that list the
//!   user, plus its gid), as `login`, `su`, start-stop-daemon's `--chuid` and systemd do; only
//!   the gid for a user number with no entry. The caller's own supplementary groups (root's
//!   `0`, `disk`, …) never pass to a command started as another user. Absent without `user`:
//!   unchanged.
//!
//! Who may ask (the kernel's rules for `setresuid`, `setresgid` and `setgroups`, applied before
//! anything is made, so that a refused spawn leaves no pidfile, no leaf and no process):
//! - a caller with `CAP_SETUID` and `CAP_SETGID` in its effective set (root): any identity;
//! - a caller with both in its permitted set and a real or saved uid of 0 — root that lowered
//!   only its effective uid (ArchiveBox's image: ids (0, 999, 0)): any identity; the command's
//!   child sets its effective uid back to 0 first (allowed: 0 is its real uid), which restores
//!   the capabilities the lowered effective uid had cleared, then drops every id;
//! - anyone else: only ids it already holds — a uid among its real, effective and saved uids, a
//!   gid among its gids, and supplementary groups equal to its own (which an unprivileged caller
//!   that names only `user` keeps: it cannot change them).
//! Anything else is `PermissionDenied`, naming the ids asked for and the caller's.

use std::fmt;

use crate::error::{Error, ErrorKind, Result};

/// A user or a group as a caller names it: a number, or a name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IdSpec {
    /// A uid or gid (0 to 4294967294; 4294967295 is `-1`, "unchanged", to the kernel).
    Id(u32),
    /// A name in the user or group database; one that is all ASCII digits and names nothing
    /// there is taken as that number (as `chown(1)` and start-stop-daemon do).
    Name(String),
}

impl std::str::FromStr for IdSpec {
    type Err = Error;
    /// Any non-empty text is a [`IdSpec::Name`] (looked up, with the digits rule, at the spawn).
    ///
    /// Errors: `InvalidArgument` for an empty name or one holding a NUL byte.
    fn from_str(s: &str) -> Result<IdSpec> {
        if s.is_empty() || s.contains('\0') {
            return Err(Error::invalid(format!("{s:?} is not a user or group name")));
        }
        Ok(IdSpec::Name(s.to_string()))
    }
}

impl fmt::Display for IdSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdSpec::Id(n) => write!(f, "{n}"),
            IdSpec::Name(s) => write!(f, "{s}"),
        }
    }
}

/// Parse start-stop-daemon's `--chuid` argument: `USER` or `USER:GROUP` (names or numbers).
///
/// Errors: `InvalidArgument` for an empty user or group.
pub fn parse_chuid(s: &str) -> Result<(IdSpec, Option<IdSpec>)> {
    match s.split_once(':') {
        Some((u, g)) => Ok((u.parse()?, Some(g.parse()?))),
        None => Ok((s.parse()?, None)),
    }
}

/// The identity a command was started as: what [`crate::launch::Spawned::run_as`] reports and
/// the record keeps. `None` fields were left as the spawner's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunAs {
    /// Real, effective and saved uid.
    pub uid: Option<u32>,
    /// Real, effective and saved gid.
    pub gid: Option<u32>,
    /// The supplementary groups, sorted, without duplicates.
    pub groups: Option<Vec<u32>>,
}

impl fmt::Display for RunAs {
    /// `uid=U gid=G groups=A,B` (the parts that were set, in that order; `groups=` with no
    /// number for none): the text of the record's `run_as`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(u) = self.uid {
            parts.push(format!("uid={u}"));
        }
        if let Some(g) = self.gid {
            parts.push(format!("gid={g}"));
        }
        if let Some(gs) = &self.groups {
            parts.push(format!("groups={}", gs.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(",")));
        }
        f.write_str(&parts.join(" "))
    }
}

/// A name or number as a uid: `Ok((uid, Some(entry's gid), Some(entry's name)))` when the user
/// database has it.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // spawn as another user is Linux's
fn user_of(spec: &IdSpec) -> Result<(u32, Option<(u32, String)>)> {
    use nix::unistd::{Uid, User};
    let lookup_err = |what: &str, e: nix::Error| Error::new(ErrorKind::Io, format!("spawn: look up the user {what}: {e}"));
    match spec {
        IdSpec::Id(n) => {
            check_id(*n, "user")?;
            let entry = User::from_uid(Uid::from_raw(*n)).map_err(|e| lookup_err(&n.to_string(), e))?;
            Ok((*n, entry.map(|u| (u.gid.as_raw(), u.name))))
        }
        IdSpec::Name(s) => match User::from_name(s).map_err(|e| lookup_err(s, e))? {
            Some(u) => Ok((u.uid.as_raw(), Some((u.gid.as_raw(), u.name)))),
            None => match s.bytes().all(|b| b.is_ascii_digit()).then(|| s.parse::<u32>().ok()).flatten() {
                Some(n) => user_of(&IdSpec::Id(n)),
                None => Err(Error::new(ErrorKind::NotFound, format!("spawn: no such user: {s:?}"))),
            },
        },
    }
}

/// A name or number as a gid.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // spawn as another user is Linux's
fn group_of(spec: &IdSpec) -> Result<u32> {
    use nix::unistd::Group;
    match spec {
        IdSpec::Id(n) => check_id(*n, "group").map(|()| *n),
        IdSpec::Name(s) => match Group::from_name(s).map_err(|e| Error::new(ErrorKind::Io, format!("spawn: look up the group {s}: {e}")))? {
            Some(g) => Ok(g.gid.as_raw()),
            None => match s.bytes().all(|b| b.is_ascii_digit()).then(|| s.parse::<u32>().ok()).flatten() {
                Some(n) => group_of(&IdSpec::Id(n)),
                None => Err(Error::new(ErrorKind::NotFound, format!("spawn: no such group: {s:?}"))),
            },
        },
    }
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // spawn as another user is Linux's
fn check_id(n: u32, what: &str) -> Result<()> {
    if n == u32::MAX {
        return Err(Error::invalid(format!("spawn: {n} is not a {what} id (it means -1, 'unchanged')")));
    }
    Ok(())
}

/// Resolve `user`, `group` and `extra_groups` (see the module's doc) and check that this
/// process may give a command that identity. `Ok(None)` when none is given.
///
/// Errors (before anything is made): `NotFound` for a name with no entry; `InvalidArgument` for
/// the id 4294967295, or a user number with no entry and no `group`; `PermissionDenied` when
/// this process may not take the identity; `Unsupported` outside Linux; `Io` when the user or
/// group database cannot be read.
pub(crate) fn resolve(
    user: Option<&IdSpec>,
    group: Option<&IdSpec>,
    extra_groups: Option<&[IdSpec]>,
) -> Result<Option<(RunAs, crate::sys::spawn::ChildIds)>> {
    if user.is_none() && group.is_none() && extra_groups.is_none() {
        return Ok(None);
    }
    #[cfg(not(target_os = "linux"))]
    {
        return Err(Error::new(ErrorKind::Unsupported, "spawn: starting a command as another user is built for Linux only"));
    }
    #[cfg(target_os = "linux")]
    {
        let ([ru, eu, su], [rg, eg, sg]) = crate::sys::resids();
        let (effective, permitted) = crate::sys::id_caps();
        let regain = !effective && permitted && eu != 0 && (ru == 0 || su == 0);
        let privileged = effective || regain;
        let user = user.map(user_of).transpose()?;
        let uid = user.as_ref().map(|(u, _)| *u);
        let gid = match (group, &user) {
            (Some(g), _) => Some(group_of(g)?),
            (None, Some((_, Some((g, _))))) => Some(*g),
            (None, Some((u, None))) => {
                return Err(Error::invalid(format!("spawn: user {u} has no entry in the user database: give its group too")))
            }
            (None, None) => None,
        };
        let mut groups = match (extra_groups, &user) {
            (Some(list), _) => Some(list.iter().map(group_of).collect::<Result<Vec<u32>>>()?),
            // An unprivileged caller that names a user keeps its own groups: it cannot change them.
            (None, Some(_)) if !privileged => None,
            (None, Some((_, Some((g, name))))) => {
                let name = std::ffi::CString::new(name.as_bytes()).map_err(|_| Error::invalid("spawn: a NUL byte in a user name"))?;
                let list = nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(gid.unwrap_or(*g)))
                    .map_err(|e| Error::new(ErrorKind::Io, format!("spawn: the groups of user {}: {e}", name.to_string_lossy())))?;
                Some(list.into_iter().map(|g| g.as_raw()).collect())
            }
            (None, Some((_, None))) => gid.map(|g| vec![g]),
            (None, None) => None,
        };
        if let Some(gs) = &mut groups {
            gs.sort_unstable();
            gs.dedup();
        }
        let run_as = RunAs { uid, gid, groups };
        if !privileged {
            let mine = crate::sys::groups().map_err(|e| Error::new(ErrorKind::Io, format!("spawn: getgroups: {e}")))?;
            let mut mine_sorted = mine.clone();
            mine_sorted.sort_unstable();
            mine_sorted.dedup();
            let uid_ok = uid.is_none_or(|u| [ru, eu, su].contains(&u));
            let gid_ok = gid.is_none_or(|g| [rg, eg, sg].contains(&g));
            let groups_ok = run_as.groups.as_ref().is_none_or(|g| *g == mine_sorted);
            if !(uid_ok && gid_ok && groups_ok) {
                return Err(Error::new(
                    ErrorKind::PermissionDenied,
                    format!(
                        "spawn as {run_as}: this process (uids {ru}/{eu}/{su}, gids {rg}/{eg}/{sg}, without CAP_SETUID and CAP_SETGID) may not take that identity: nothing was started"
                    ),
                ));
            }
        }
        // setgroups only when it changes something: an unprivileged caller may not call it.
        let change_groups = match &run_as.groups {
            Some(g) if privileged => Some(g.clone()),
            _ => None,
        };
        let scratch = std::cell::UnsafeCell::new(vec![0; change_groups.as_ref().map_or(0, |g| g.len() + 1)]);
        let ids = crate::sys::spawn::ChildIds { regain, euid: eu, groups: change_groups, gid, uid, scratch };
        Ok(Some((run_as, ids)))
    }
}
