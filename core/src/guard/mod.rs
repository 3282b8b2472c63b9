//! Guard pidfiles: one JSON record per file, exactly one winner, removal by content
//! (after the shape of Go's pidfile packages: one JSON record, created by `link(2)`).
//!
//! A guard pidfile says "this process holds this name": a single-instance daemon, a watcher
//! serving one session, a supervisor's child. The file holds one [`Entry`] — the holder's pid,
//! its [`StartToken`], and the caller's own string fields — encoded by
//! [`encode`] as one JSON object and a newline:
//!
//! ```text
//! {"pid":4242,"start_token":"linux1:<machine>:<boot>:<pidns>:<ticks>:<pidfs>","session":"s1"}
//! ```
//!
//! - [`create`] writes it so that it appears fully written or not at all, and exactly one of any
//!   number of racing creators wins (unnamed file, `fsync`, `link(2)` → `EEXIST`). Mode `0600`,
//!   parent directory `0700`, whatever the umask.
//! - [`read`] refuses, each with its own [`ErrorKind`], a symlink, a
//!   directory, a FIFO/socket/device (without blocking), a second hard link, group or world
//!   permission bits, more than 4096 bytes, and content that is not one JSON object with a
//!   positive pid and a non-empty token. A refusal is an error, never "the holder is dead".
//! - [`remove`] unlinks only a file whose bytes are exactly `encode(entry)`, safely against a
//!   concurrent [`replace`]; [`replace`] retires a record by content and fails with
//!   `Superseded` when someone else replaced it first.
//! - [`check`] judges the holder with the identity rules of [`judge`]:
//!   `Match`, `Mismatch`, `Unverifiable` or `Gone`.
//! - [`acquire`] is the single-instance helper: create, or replace a holder proven `Gone` or
//!   `Mismatch`; a `Match` or `Unverifiable` holder is reported as a `Held` error carrying its
//!   record and verdict ([`Error::holder`](crate::Error::holder)), and is taken over only when
//!   [`AcquireOptions::takeover`] asks for it. The returned [`Guard`] removes our own record
//!   (and only it) when dropped.
//!
//! ## Which errors mean what
//! The refusals of [`read`] refine two families ([`ErrorKind::family`](crate::ErrorKind::family)):
//! `Untrusted` — `Symlink`, `IsDirectory`, `NotRegularFile`, `HardLinked`, `InsecureMode`,
//! `TooLarge` (the file itself is refused before its content is looked at) — and `Malformed` —
//! `InvalidJson`, `BadPid`, `BadToken` (the content breaks the format). One kind per rule lets
//! callers and tests tell exactly which rule fired without parsing messages; the family lets a
//! generic handler treat them alike.
//!
//! ## Containers and persistent volumes
//! A record on a persistent volume written by an earlier container (another PID namespace,
//! same boot) is `Unverifiable`: nothing visible from here proves that namespace dead, so
//! [`acquire`] reports it as held. Put guard pidfiles on `/run` (a tmpfs that a restart
//! empties), or pass [`AcquireOptions::takeover`] when the operator knows better. A record from
//! another machine (a shared NFS volume) is never removed, even with `takeover`. A record from
//! an earlier boot of this machine is `Mismatch` whatever runs at its pid now, and is replaced.
//!
//! ## Records written by someone else
//! A file that group or others may write is always refused by [`read`]. A file owned by another
//! user may be read and judged, but it aims signals only at that user's own processes
//! ([`Verdict::authorizes`], [`Verdict::open`]): a token proves which process a record names,
//! never who wrote the record, so root acting on a user's file never lends the user root's
//! reach.
//!
//! ## Example
//! ```
//! use pidguard::guard::{self, AcquireOptions, Entry};
//! # fn main() -> pidguard::Result<()> {
//! # let dir = std::env::temp_dir().join(format!("pidguard-doc-guard-{}", std::process::id()));
//! let path = dir.join("watchers/42.json");
//! let me = Entry::current()?
//!     .with_field("session", "s1")
//!     .with_field("token_sha256", guard::token_sha256("the secret"));
//! let held = guard::acquire(&path, &me, &AcquireOptions::default())?;
//! // A second instance is turned away, and told who holds the name and why.
//! let err = guard::acquire(&path, &Entry::current()?, &AcquireOptions::default()).unwrap_err();
//! assert_eq!(err.kind(), pidguard::ErrorKind::Held);
//! assert_eq!(err.holder().unwrap().entry.as_ref(), Some(&me));
//! drop(held); // removes our record, and only ours
//! assert!(!guard::check(&path)?.found);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(()) }
//! ```

// The record format itself lives with the abx-dl format under `pidfile/`.
use crate::pidfile::record::{entry, file};

use std::path::{Path, PathBuf};

pub use entry::{decode, encode, token_sha256, Entry, MAX_BYTES, PID_MEMBER, TOKEN_MEMBER};
pub use file::{create, read, remove, replace, DIR_MODE, FILE_MODE};

use crate::error::{Error, ErrorKind, Result};
use crate::identity::{judge, Judgement, Policy, ProcessRef, Reason, StartToken, Verdict as Identity};
use crate::pidfile::mtime::{CheckReason, PidFileCheck};
use crate::signal::Refusal;

impl Error {
    /// A `Held` error: the guard pidfile at `path` is held by `holder` (its record and verdict).
    pub fn held(path: &Path, holder: Verdict) -> Error {
        let what = match (&holder.entry, &holder.identity) {
            (Some(e), Some(j)) => format!("held by pid {} ({}: {})", e.pid, j.verdict, j.reason),
            _ => "held".to_string(),
        };
        let mut e = Error::at(ErrorKind::Held, path, what);
        if let Some(pid) = holder.entry.as_ref().map(|x| x.pid) {
            e = e.with_pid(pid);
        }
        e.set_detail(holder);
        e
    }

    /// For `Held` errors: who holds the guard pidfile, with the identity verdict that kept it
    /// from being taken over.
    pub fn holder(&self) -> Option<&Verdict> {
        self.detail::<Verdict>()
    }
}

/// The answer of [`check`]: is there a record, and is its holder still that process?
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Whether a file was found. `false` means there is no record at all.
    pub found: bool,
    /// The record, when found.
    pub entry: Option<Entry>,
    /// The identity verdict of the holder with its reason, when found.
    pub identity: Option<Judgement>,
    /// The uid that owns the file, when found.
    pub owner_uid: Option<u32>,
}

impl Verdict {
    fn missing() -> Verdict {
        Verdict { found: false, entry: None, identity: None, owner_uid: None }
    }

    /// Whether the record is proven stale: its holder is `Gone` (exited, maybe a zombie) or
    /// `Mismatch` (the pid now names another process, or the record is from an earlier boot).
    /// A stale record may be replaced; a missing one is not "stale" (there is nothing to
    /// replace).
    pub fn is_stale(&self) -> bool {
        matches!(self.identity.map(|j| j.verdict), Some(Identity::Gone) | Some(Identity::Mismatch))
    }

    /// The verdict as a [`PidFileCheck`], the answer [`check_pid_file`](crate::check_pid_file)
    /// gives for an abx-dl pidfile — what `pidguard status` prints and what
    /// [`stop_pid_file`](crate::stop_pid_file) reports for a guard record. The reason follows
    /// the holder's verdict: `Match` → `valid`; `Gone` → `gone` (`zombie` for a zombie);
    /// `Mismatch` → `mismatch`; `Unverifiable` → `foreign` for another machine's or PID
    /// namespace's record, else `unverifiable` (could not tell: never "not valid"). No record →
    /// `missing`. The owner is the file's uid with the guard file mode ([`FILE_MODE`], the only
    /// mode [`read`] accepts); `mtime` and `create_time` are not read for a guard record.
    pub fn to_check(&self) -> PidFileCheck {
        let mut check = PidFileCheck::new(CheckReason::Missing);
        let (Some(entry), Some(j)) = (&self.entry, self.identity) else { return check };
        check.pid = Some(entry.pid);
        check.judgement = Some(j);
        check.token = entry.start_token.parse().ok();
        // The scope of a command pidguard started (`launch::spawn` writes it as the `scope`
        // field); read only with a token that dates it.
        check.scope = check.token.as_ref().and_then(|_| entry.field("scope")).and_then(|s| s.parse().ok());
        check.owner = self.owner_uid.map(|u| (u, FILE_MODE));
        check.reason = match j.verdict {
            Identity::Match => CheckReason::Valid,
            Identity::Gone if j.reason == Reason::Zombie => CheckReason::Zombie,
            Identity::Gone => CheckReason::Gone,
            Identity::Mismatch => CheckReason::Mismatch,
            Identity::Unverifiable if j.reason.is_foreign() => CheckReason::Foreign,
            Identity::Unverifiable => CheckReason::Unverifiable,
        };
        check.valid = j.verdict == Identity::Match;
        check
    }

    /// Whether a signal to the holder would be authorised now under `policy` and the owner
    /// rule: a record owned by a uid whose reach kill(2) exceeds for this caller (another uid
    /// than both of the caller's real and effective uids, or any non-root uid for a caller with
    /// a uid of 0 or `CAP_KILL`) may aim signals only at that uid's own processes, whatever its token says (anyone can compute any process's
    /// token, so a matching token proves nothing about who wrote the file). `false` when
    /// nothing was found. [`open`](Self::open) applies the same rules and pins the holder.
    pub fn authorizes(&self, policy: Policy) -> bool {
        let (Some(j), Some(e), Some(owner)) = (self.identity, &self.entry, self.owner_uid) else { return false };
        if !policy.authorizes(j.verdict) {
            return false;
        }
        match crate::signal::pidfile_authority(owner, 0o600) {
            Ok(crate::signal::Authority::Any) => true,
            Ok(crate::signal::Authority::OwnerOnly(o)) => {
                matches!(crate::sys::procfs::read_uids(e.pid), Ok((r, saved)) if r == o || saved == o)
            }
            Err(_) => false,
        }
    }

    /// Pin the holder for signalling: [`ProcessRef::open`] with the record's token under
    /// `policy`, restricted (see [`ProcessRef::restrict_to_uid`]) to the file owner's processes
    /// when the caller could reach more processes than the record's owner (the owner rule: a
    /// pidfile carries its owner's authority, never more).
    ///
    /// Errors: `NotFound` when no record was found; `BadToken` for a token that does not
    /// parse; those of [`ProcessRef::open`] (`NoSuchProcess`, `Refused` with the refusal);
    /// `Refused` (`untrusted-pidfile`, saying both uids) when the holder is not the owner's.
    pub fn open(&self, policy: Policy) -> Result<ProcessRef> {
        let (Some(e), Some(owner)) = (&self.entry, self.owner_uid) else {
            return Err(Error::new(ErrorKind::NotFound, "no guard record"));
        };
        let token: StartToken = e
            .start_token
            .parse()
            .map_err(|_| Error::new(ErrorKind::BadToken, format!("start_token {:?} is not a pidguard start token", e.start_token)))?;
        let mut h = ProcessRef::open(e.pid, Some(&token), policy)?;
        // `read` refused group and world bits already: only the owner is left to weigh.
        if let Ok(crate::signal::Authority::OwnerOnly(o)) = crate::signal::pidfile_authority(owner, 0o600) {
            h.restrict_to_uid(o);
            match h.uids() {
                Ok((r, saved)) if r == o || saved == o => {}
                Ok((r, _)) => {
                    return Err(Error::refused_because(e.pid, Refusal::UntrustedPidfile, format!("owned by uid {o}, target uid {r}")))
                }
                Err(x) => return Err(x),
            }
        }
        Ok(h)
    }
}

/// Read the guard pidfile at `path` and judge its holder.
///
/// A missing file is `Ok` with `found == false`. Otherwise the record's `start_token` must be
/// a pidguard [`StartToken`]; the holder is judged with [`judge`]: a record from
/// an earlier boot is `Mismatch` without looking at the process, one from another machine or
/// PID namespace is `Unverifiable`.
///
/// Errors: every refusal of [`read`] (a file that cannot be trusted or parsed is an error, not
/// a "dead" verdict: it could not be retired by content anyway); `BadToken` when the token is
/// not a pidguard start token; `Io` when procfs fails oddly.
pub fn check(path: &Path) -> Result<Verdict> {
    match file::read_raw(path) {
        Ok(raw) => judge_raw(path, &raw),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Verdict::missing()),
        Err(e) => Err(e),
    }
}

fn judge_raw(path: &Path, raw: &file::Raw) -> Result<Verdict> {
    let token: StartToken = raw.entry.start_token.parse().map_err(|_| {
        Error::at(
            ErrorKind::BadToken,
            path,
            format_args!("start_token {:?} is not a pidguard start token", raw.entry.start_token),
        )
    })?;
    let identity = judge(raw.entry.pid, Some(&token)).map_err(|e| Error::at(e.kind(), path, e.message()))?;
    Ok(Verdict { found: true, entry: Some(raw.entry.clone()), identity: Some(identity), owner_uid: Some(raw.owner_uid) })
}

/// Options of [`acquire`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AcquireOptions {
    /// Also replace a holder that is `Match` (alive, the very process) or `Unverifiable`
    /// (nothing proves it either way), for an operator who knows better. A record from another
    /// machine is never taken over. The displaced holder keeps running; its own release later
    /// finds another record and removes nothing. Default `false`.
    pub takeover: bool,
}

/// How many times [`acquire`] goes round (create, judge, replace) before giving up: each
/// round that does not finish means another caller changed the file in between.
const MAX_ROUNDS: usize = 64;

/// Take the single-instance guard at `path` for `entry` (usually [`Entry::current`] plus the
/// caller's fields).
///
/// 1. [`create`]; if the name is free, it is ours.
/// 2. Otherwise [`check`] the holder: `Gone` or `Mismatch` → [`replace`] it by content;
///    the caller itself with a `Match` token → that record is handed back as the caller's guard
///    (see below); another `Match` or an `Unverifiable` holder → a `Held` error carrying the
///    holder's record and verdict, unless `options.takeover`. An `Unverifiable` holder is never
///    replaced without `takeover`: a failure to read its identity is not proof that it died.
/// 3. A race lost in between (the file changed or vanished) goes back to 1.
///
/// Of any number of racing callers, at most one holds the guard at a time, and a stale holder
/// never blocks forever.
///
/// **Re-exec.** A daemon that replaces itself with `execv` keeps its pid and start token. To
/// keep its guard across the exec: `acquire(...)`, then [`Guard::keep`] (so the record is not
/// removed), `execv`, and in the new image `acquire` again with the same path: the record
/// naming the caller itself with a `Match` token, held by no live `Guard` of this process, is
/// handed back as the caller's guard — its [`entry`](Guard::entry) is the record as found (the
/// fields of the first image), and it releases that record when dropped. While a `Guard` of
/// this process holds the record, a second `acquire` of it is `Held`, as for anyone else.
///
/// Errors: `InvalidArgument` when `entry` fails [`Entry::validate`]; `Held` (see
/// [`Error::holder`](crate::Error::holder)); every refusal of [`read`] and `BadToken` from
/// [`check`] for a file that is not a trustworthy record (it is never taken over); `Superseded`
/// when the file kept changing for 64 rounds; file-system errors as in [`create`].
pub fn acquire(path: &Path, entry: &Entry, options: &AcquireOptions) -> Result<Guard> {
    entry.validate()?;
    // Threads of one process acquire one at a time, so that a record this process has just
    // created is registered as held here before another thread can read it and take it for a
    // record left by an earlier image of this process (see "Re-exec"). Processes still race
    // through link(2) as before.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mine = encode(entry);
    for _ in 0..MAX_ROUNDS {
        match file::create_bytes(path, &mine) {
            Ok(()) => return Ok(Guard::new(path, entry, mine, None)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let raw = match file::read_raw(path) {
            Ok(r) => r,
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let holder = judge_raw(path, &raw)?;
        // Unreachable: `judge_raw` of a record that was read always judges it (`identity` is
        // `None` only for a missing file, which `NotFound` above has already skipped).
        let j = holder.identity.expect("found");
        // A record naming the caller itself with a matching token, that no live Guard of this
        // process holds, is its own: a daemon that re-executed itself (`execv` keeps the pid and
        // the start token) after `keep()`. A record a live Guard here holds stays held: two
        // guards of one record would each remove it.
        if j.verdict == Identity::Match && raw.entry.pid == crate::sys::getpid() && !held_here(path) {
            return Ok(Guard::new(path, &raw.entry, raw.bytes.clone(), None));
        }
        let take = holder.is_stale() || (options.takeover && j.reason != Reason::ForeignMachine);
        if !take {
            return Err(Error::held(path, holder));
        }
        match file::replace_bytes(path, &raw.bytes, &mine) {
            Ok(()) => return Ok(Guard::new(path, entry, mine, Some(holder))),
            Err(e) if matches!(e.kind(), ErrorKind::Superseded | ErrorKind::AlreadyExists) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::at(ErrorKind::Superseded, path, format_args!("kept changing during {MAX_ROUNDS} attempts to acquire it")))
}

/// A held guard pidfile: our record is at [`path`](Guard::path). Dropping the guard removes
/// the record if — and only if — the file still holds exactly our bytes (someone who took over
/// keeps theirs). Errors on drop are ignored; call [`release`](Guard::release) to see them.
///
/// Only the process that acquired the guard releases it: a copy inherited by a `fork(2)` child
/// (Python's `os.fork`, a pre-exec hook) removes nothing when it is dropped or released there.
#[derive(Debug)]
pub struct Guard {
    path: PathBuf,
    entry: Entry,
    bytes: Vec<u8>,
    replaced: Option<Verdict>,
    armed: bool,
    owner_pid: u32,
}

/// The paths of the records that live, armed `Guard`s of this process hold.
fn held_registry() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    static HELD: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    HELD.lock().unwrap_or_else(|p| p.into_inner())
}

fn held_here(path: &Path) -> bool {
    held_registry().iter().any(|p| p == path)
}

impl Guard {
    fn new(path: &Path, entry: &Entry, bytes: Vec<u8>, replaced: Option<Verdict>) -> Guard {
        held_registry().push(path.to_path_buf());
        Guard { path: path.to_path_buf(), entry: entry.clone(), bytes, replaced, armed: true, owner_pid: std::process::id() }
    }

    /// Forget this guard in the registry of records held by this process.
    fn disarm(&mut self) {
        if self.armed {
            self.armed = false;
            let mut held = held_registry();
            if let Some(i) = held.iter().position(|p| *p == self.path) {
                held.swap_remove(i);
            }
        }
    }

    /// The pidfile's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Our record.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// The stale (or, with `takeover`, live) holder whose record was replaced to take the
    /// guard; `None` when the name was free.
    pub fn replaced(&self) -> Option<&Verdict> {
        self.replaced.as_ref()
    }

    /// Whether the file still holds exactly our record (`false` after a takeover, or when
    /// someone removed it).
    pub fn is_held(&self) -> bool {
        file::read_raw(&self.path).is_ok_and(|r| r.bytes == self.bytes)
    }

    /// Remove our record now. `Ok(true)` when it was removed, `Ok(false)` when the file no
    /// longer held it, or when called in a forked child of the acquiring process (nothing
    /// changed). Errors: `PermissionDenied` or `Io` from the file system.
    pub fn release(mut self) -> Result<bool> {
        self.disarm();
        if self.owner_pid != std::process::id() {
            return Ok(false);
        }
        file::remove_bytes(&self.path, &self.bytes)
    }

    /// Give up the guard without removing the record (for example when handing it to a
    /// process that will release it itself) and return our record.
    pub fn keep(mut self) -> Entry {
        self.disarm();
        std::mem::replace(&mut self.entry, Entry::new(1, "-"))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // A fork child's copy is not the holder: the record is its parent's.
        if self.armed && self.owner_pid == std::process::id() {
            if let Err(e) = file::remove_bytes(&self.path, &self.bytes) {
                log::warn!("{}: could not release the guard: {e}", self.path.display());
            }
        }
        self.disarm();
    }
}
