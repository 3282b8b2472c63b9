//! Writing the record of a process: [`record`] for one the caller has just spawned,
//! [`record_existing`] / [`record_existing_scoped`] for one already running (`pidguard write`,
//! `--adopt`), [`move_record`] for a record whose final path is known only after the spawn.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::vacant::{cmd_file_for, ensure_vacant, RecordFormat};
use crate::error::{Error, ErrorKind, Result};
use crate::guard::{self, AcquireOptions, Entry};
use crate::identity::lookup;
use crate::options::check_pid_file;
use crate::pidfile::cmd::write_cmd_file;
use crate::pidfile::mtime::{write_pid_file_with_mtime, CheckReason, DEFAULT_TOLERANCE};

/// Seconds since the epoch now, as `time.time()` gives it: the `start_time` to pass to
/// [`record`] right after spawning.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Write the pidfile for `pid`, a process the caller has just spawned at `start_time`
/// (seconds since the epoch, [`now`] right after the spawn) running `argv`.
///
/// - [`RecordFormat::AbxDl`]: `<name>.sh` with `argv` ([`write_cmd_file`]; skipped when `argv`
///   is empty), then the pidfile with [`write_pid_file_with_mtime`], which stores the start
///   token because the process was read within 5 s of `start_time`. The pidfile replaces
///   whatever was at the path: call [`ensure_vacant`] before spawning.
/// - [`RecordFormat::Guard`]: [`guard::acquire`] for an [`Entry`] of `pid`, its start token and
///   `fields`; a stale record is replaced by content. `argv` is not written.
///
/// Errors: `NoSuchProcess` when `pid` has already exited; `Held` (guard) when another live
/// holder won the race; the errors of the writers (`InvalidArgument`, `Untrusted`,
/// `PermissionDenied`, `Io`).
pub fn record<S: AsRef<str>>(
    pid_file: &Path,
    pid: i32,
    start_time: f64,
    argv: &[S],
    format: RecordFormat,
    fields: &[(String, String)],
) -> Result<()> {
    match format {
        RecordFormat::AbxDl => {
            if !argv.is_empty() {
                write_cmd_file(&cmd_file_for(pid_file), argv)?;
            }
            write_pid_file_with_mtime(pid_file, pid, start_time)
        }
        RecordFormat::Guard => acquire_record(pid_file, pid, crate::identity::start_token(pid)?, fields),
    }
}

/// The guard record of `pid` with `token` and `fields`, acquired ([`guard::acquire`]) and kept:
/// it belongs to the spawned process, not to the caller.
pub(super) fn acquire_record(pid_file: &Path, pid: i32, token: crate::identity::StartToken, fields: &[(String, String)]) -> Result<()> {
    let mut entry = Entry::new(pid, token.to_string());
    for (k, v) in fields {
        entry = entry.with_field(k.clone(), v.clone());
    }
    guard::acquire(pid_file, &entry, &AcquireOptions::default()).map(|g| {
        g.keep();
    })
}

/// Write the pidfile for `pid`, a process that is already running (`pidguard write`): its
/// start time is its create time read from procfs, and its argv (when readable) goes into the
/// `.sh` file of the abx-dl format, so that the record validates as if its spawner had
/// written it.
///
/// Errors: `Refused` (`init`) for pid 1, at once: no record of it could ever be acted on;
/// `NoSuchProcess` when `pid` does not exist or is a zombie (exited as a whole: a leader whose
/// main thread exited while others run is alive and recorded); `InvalidArgument` for a pid
/// outside 1 to 4194304; the errors of [`record`].
pub fn record_existing(pid_file: &Path, pid: i32, format: RecordFormat) -> Result<()> {
    if pid == 1 {
        let mut e = Error::refused(pid, crate::protect::Refusal::Init);
        e.set_message("pid 1: refused to record (init): no record of it could ever be acted on".to_string());
        return Err(e);
    }
    let info = lookup(pid)?;
    if info.is_zombie() {
        return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} has exited (zombie)")).with_pid(pid));
    }
    let argv = info.argv.clone().unwrap_or_default();
    record(pid_file, pid, info.create_time, &argv, format, &[])
}

/// [`record_existing`], and with `adopt` the process is first moved into a cgroup v2 leaf of
/// its own, recorded as its scope beside the pidfile (the abx-dl format's
/// [`crate::identity::SCOPE_XATTR`], a guard record's `scope` field): from then on every
/// descendant it forks stays in the leaf, and a stop or cleanup reaches them all, `setsid` or
/// not. The opt-in scope for processes pidguard did not start (abx-dl spawns its hooks
/// itself). Children forked *before* the move stay outside the leaf: record the process as
/// early as possible, or start it with [`spawn`](super::spawn), which has no such window.
///
/// Returns the recorded scope (`None` without `adopt`, or when the file system has no user
/// xattrs to record it in: the process stays in its leaf, and a stop reaches its group only).
///
/// The whole adoption goes through a pidfd pin: the process's argv, create time and start
/// token are proven its own by the pin, the token is checked again after the move, and when
/// the record cannot be written (the `.sh`, the pidfile, a guard record held by another) the
/// process is put back into the cgroup it came from and the leaf removed — nothing runs on in
/// an unrecorded leaf.
///
/// Errors: those of [`record_existing`]; `NoSuchProcess` when the process exits (or its pid is
/// reused) while it is read or moved; `Io` with the step when the leaf cannot be made or the
/// process cannot be moved (nothing recorded then, no leaf left); the writers' errors, after
/// the process was put back (the message says if it could not be).
pub fn record_existing_scoped(pid_file: &Path, pid: i32, format: RecordFormat, adopt: bool) -> Result<Option<crate::identity::ScopeRecord>> {
    use std::os::fd::AsFd;
    if !adopt || pid == 1 {
        return record_existing(pid_file, pid, format).map(|()| None);
    }
    // Pinned first, and every fact recorded is the pinned process's: the number written to
    // cgroup.procs, its argv, create time and start token are read by number and proven its own
    // by the pin staying alive afterwards (a live process keeps its number).
    let fd = crate::sys::pidfd_open(pid).map_err(|e| Error::io_pid(pid, "pidfd_open", &e))?;
    let exited = || !matches!(crate::sys::poll_readable(&[fd.as_fd()], Some(std::time::Duration::ZERO)).as_deref(), Ok([false]));
    let gone = |when: &str| Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} exited {when}: not recorded")).with_pid(pid);
    let info = lookup(pid)?;
    if info.is_zombie() {
        return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid} has exited (zombie)")).with_pid(pid));
    }
    let token = crate::identity::start_token(pid)?;
    if exited() {
        return Err(gone("while it was being read"));
    }
    let adopted = crate::identity::adopt_into_leaf(pid, fd.as_fd()).map_err(|why| Error::new(ErrorKind::Io, why).with_pid(pid))?;
    crate::sys::fault::point(crate::sys::fault::Point::AfterAdoptMove);
    // Verified after the move: still the pinned process, still the token read before it.
    if exited() || crate::identity::start_token(pid).ok().as_ref() != Some(&token) {
        let _ = adopted.undo(pid, fd.as_fd());
        return Err(gone("while it was being moved into its cgroup leaf"));
    }
    let rec = adopted.record.clone();
    let text = rec.to_string();
    let argv = info.argv.clone().unwrap_or_default();
    let written = match format {
        RecordFormat::AbxDl => (|| {
            if !argv.is_empty() {
                write_cmd_file(&cmd_file_for(pid_file), &argv)?;
            }
            crate::pidfile::mtime::write_pid_file_scoped(pid_file, pid, info.create_time, Some(token), Some(&text), false)
        })(),
        RecordFormat::Guard => acquire_record(pid_file, pid, token, &[("scope".to_string(), text)]).map(|()| true),
    };
    match written {
        Ok(recorded) => Ok(recorded.then_some(rec)),
        // Never left running in an unrecorded leaf: put back where it was.
        Err(mut e) => {
            let back = adopted.undo(pid, fd.as_fd());
            let msg = match back {
                Ok(()) => format!("{} (pid {pid} was put back into its cgroup)", e.message()),
                Err(why) => format!("{} (pid {pid}: {why})", e.message()),
            };
            e.set_message(msg);
            Err(e)
        }
    }
}

/// Move the record of `pid` that [`spawn`](super::spawn) just wrote at `from` to `to`, for a spawner that
/// learns the record's final path only after the spawn (abx-plugins' `launchChromium` names
/// `chrome.pid` once the browser runs): spawn with a temporary pidfile (in a private
/// directory), then move it.
///
/// 1. `from` is judged ([`check_pid_file`], no command rules: its token decides): it must name
///    `pid`, carry a start token, and be `Valid` (`pid` alive and matching its token) or
///    `Zombie` (exited, not yet reaped by the spawner: its scope may still hold its tree).
/// 2. `to` must be free ([`ensure_vacant`]: a record of a live process is never overwritten).
/// 3. `to` is written as [`write_pid_file_with_mtime`] writes it — the pid, mtime `start_time`
///    (seconds since the epoch; the token is kept only within 5 s of the process's create
///    time, so pass the time taken right after the spawn) — with `from`'s token and its scope
///    ([`crate::identity::SCOPE_XATTR`]), read back, not re-read from the process.
/// 4. Only when `to` now holds the same token and scope (the file system keeps user xattrs),
///    `from` is removed by content (if it still holds what was judged), and so is its `.sh`
///    (if it still holds the bytes read before the move). The `.sh` is not carried to `to`.
///
/// Returns `true` when the whole record moved; `false` when `to` was written without the
/// token or scope (no user xattrs there, or `start_time` too far from the process's start):
/// `from` is then kept, still recording the scope, and `to` is a plain record.
///
/// Errors (nothing written): `InvalidArgument` when `from` and `to` are the same path, when
/// `from` names another pid or none (malformed, missing: `NotFound`), has no token, or cannot
/// be judged valid (the reason is named); `NoSuchProcess` when `pid` is gone (reaped);
/// `Untrusted` when `from` is not the caller's own claim (owned by another user, group- or
/// world-writable, hard-linked for a privileged caller); `Held`/`Untrusted`/… from
/// [`ensure_vacant`] of `to`; the writer's errors.
pub fn move_record(from: &Path, to: &Path, pid: i32, start_time: f64) -> Result<bool> {
    if from == to {
        return Err(Error::at(ErrorKind::InvalidArgument, to, "move_record: from and to are the same path"));
    }
    let c = check_pid_file(from, None, DEFAULT_TOLERANCE);
    match (c.reason, c.pid) {
        (CheckReason::Missing, _) => return Err(Error::at(ErrorKind::NotFound, from, "no record to move")),
        (CheckReason::Gone, Some(p)) if p == pid => {
            return Err(Error::at(ErrorKind::NoSuchProcess, from, format_args!("pid {pid} is gone: not moved")).with_pid(pid))
        }
        (CheckReason::Valid | CheckReason::Zombie, Some(p)) if p == pid => {}
        (_, Some(p)) if p != pid => {
            return Err(Error::at(ErrorKind::InvalidArgument, from, format_args!("records pid {p}, not {pid}: not moved")))
        }
        (r, _) => return Err(Error::at(ErrorKind::InvalidArgument, from, format_args!("cannot be moved ({r})"))),
    }
    let Some(token) = c.token.clone() else {
        return Err(Error::at(ErrorKind::InvalidArgument, from, "has no start token: not moved"));
    };
    // The moved record is written by the caller, so it must already be the caller's own claim:
    // a record another user could have written (their token and scope xattrs included) is never
    // laundered into one of the caller's (privilege is never lent).
    if let Some(linked) = &c.linked {
        return Err(Error::at(ErrorKind::Untrusted, from, format_args!("{linked}: not moved")));
    }
    match c.owner.map(|(uid, mode)| crate::protect::pidfile_authority(uid, mode)) {
        Some(Ok(crate::protect::Authority::Any)) => {}
        Some(Ok(_)) => return Err(Error::at(ErrorKind::Untrusted, from, "is owned by another user: not moved")),
        Some(Err((_, why))) => return Err(Error::at(ErrorKind::Untrusted, from, format_args!("{why}: not moved"))),
        None => return Err(Error::at(ErrorKind::Untrusted, from, "its owner is unknown: not moved")),
    }
    ensure_vacant(to, RecordFormat::AbxDl)?;
    let sh = cmd_file_for(from);
    let sh_bytes = crate::pidfile::retire::open_strict(&sh).ok().and_then(|f| {
        let len = f.metadata().ok()?.len();
        crate::pidfile::read_bounded(&f, len, 1 << 20).ok()
    });
    let scope_text = c.scope.as_ref().map(|s| s.to_string());
    crate::pidfile::mtime::write_pid_file_scoped(to, pid, start_time, Some(token), scope_text.as_deref(), false)?;
    let moved = check_pid_file(to, None, DEFAULT_TOLERANCE);
    if moved.token != c.token || moved.scope != c.scope {
        return Ok(false);
    }
    let walk = crate::protect::walk();
    if let Ok((dir, name)) = crate::sys::DirFd::parent_of(from, walk) {
        crate::pidfile::unchanged::remove_if_unchanged_in(&dir, name, from, &c);
        if let (Some(bytes), Some(sh_name)) = (sh_bytes, sh.file_name()) {
            let same = |f: &std::fs::File| {
                use std::os::unix::fs::MetadataExt;
                let m = f.metadata().ok()?;
                let now = crate::pidfile::read_bounded(f, m.len(), 1 << 20).ok()?;
                (m.is_file() && now == bytes).then_some((m.dev(), m.ino()))
            };
            let _ = crate::pidfile::retire::remove_by_content(&dir, sh_name, &sh, same, false);
        }
    }
    Ok(true)
}
