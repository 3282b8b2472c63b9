//! `require('pidguard').guard`: guard pidfiles, one JSON record per file.
//!
//! Thin, like the rest of the addon: each function converts its arguments, makes one call into
//! `pidguard::guard` and converts the result or the error. Records are plain objects
//! `{ pid, startToken, fields }` with `fields` an object of strings whose key order is the wire
//! order. Everything that only touches a file is synchronous; `acquire` returns a `Promise`.

use indexmap::IndexMap;
use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;
use pidguard::guard as core;

use crate::convert::{self, call, js_error, task, CoreTask, PathArg};
pub use crate::records::{Entry, Verdict};
use crate::records::{entry, verdict};

/// A guard record as this module accepts it: `fields` may be left out (no members).
#[napi(object, namespace = "guard")]
pub struct EntryInit {
    /// The holder's pid: an integer in `1..=2^31-1` (`TypeError`/`RangeError` otherwise).
    pub pid: f64,
    /// The holder's start token; must be non-empty (`PIDGUARD_INVALID_ARGUMENT`).
    pub start_token: String,
    /// The caller's members, names non-empty, unique, neither `pid` nor `start_token`, values
    /// strings; written in the object's key order.
    #[napi(ts_type = "Record<string, string>")]
    pub fields: Option<IndexMap<String, String>>,
}

/// Options of `acquire`.
#[napi(object, namespace = "guard")]
pub struct AcquireOptions {
    /// Also replace a holder that is `'match'` or `'unverifiable'` (an operator who knows
    /// better). A record from another machine is never taken over. Default false.
    pub takeover: Option<bool>,
}

fn entry_arg(env: &Env, e: EntryInit, name: &str) -> Result<core::Entry> {
    let pid = convert::pid_number(env, e.pid, &format!("{name}.pid"))?;
    Ok(core::Entry { pid, start_token: e.start_token, fields: e.fields.unwrap_or_default().into_iter().collect() })
}

fn bytes(b: &PathArg) -> &[u8] {
    match b {
        Either::A(s) => s.as_bytes(),
        Either::B(b) => b,
    }
}

/// The exact text `create` writes for `entry`: one JSON object (`pid`, `start_token`, then the
/// fields in order) and `"\n"`. Throws `PIDGUARD_INVALID_ARGUMENT` when the record could not be
/// written (empty token, reserved or duplicate field name, more than 4096 bytes).
#[napi(namespace = "guard")]
pub fn encode(env: Env, entry: EntryInit) -> Result<String> {
    let e = entry_arg(&env, entry, "entry")?;
    e.validate().map_err(|x| js_error(&env, &x))?;
    Ok(String::from_utf8_lossy(&core::encode(&e)).into_owned())
}

/// Parse guard pidfile content (`string` or `Buffer`) into an entry, fields in file order.
/// Throws `PIDGUARD_INVALID_JSON` (not one JSON object of strings), `PIDGUARD_BAD_PID`,
/// `PIDGUARD_BAD_TOKEN` (all in the family `PIDGUARD_MALFORMED`).
#[napi(namespace = "guard", ts_args_type = "content: string | Buffer")]
pub fn decode(env: Env, content: PathArg) -> Result<Entry> {
    call(&env, || core::decode(bytes(&content))).map(entry)
}

/// Create the guard pidfile `path` holding `entry`: it appears fully written or not at all,
/// mode 0600 (parent directory made 0700 when missing), and of any number of racing creators
/// exactly one wins. Never deletes or changes an existing file.
///
/// Throws `PIDGUARD_ALREADY_EXISTS` when `path` exists (a file, a directory, a symlink);
/// `PIDGUARD_INVALID_ARGUMENT` for a record that cannot be written; `PIDGUARD_NOT_FOUND`,
/// `PIDGUARD_PERMISSION_DENIED`, `PIDGUARD_IO` from the file system.
#[napi(namespace = "guard", ts_args_type = "path: string | Buffer, entry: guard.EntryInit")]
pub fn create(env: Env, path: PathArg, entry: EntryInit) -> Result<()> {
    let e = entry_arg(&env, entry, "entry")?;
    call(&env, || core::create(&convert::path(&path), &e))
}

/// Read the guard pidfile `path` without following a symlink or blocking on a FIFO.
///
/// Throws, each its own code: `PIDGUARD_NOT_FOUND`; `PIDGUARD_SYMLINK`, `PIDGUARD_IS_DIRECTORY`,
/// `PIDGUARD_NOT_REGULAR_FILE`, `PIDGUARD_HARD_LINKED`, `PIDGUARD_INSECURE_MODE` (group or
/// others have any permission), `PIDGUARD_TOO_LARGE` (> 4096 bytes) — family
/// `PIDGUARD_UNTRUSTED`; `PIDGUARD_INVALID_JSON`, `PIDGUARD_BAD_PID`, `PIDGUARD_BAD_TOKEN` —
/// family `PIDGUARD_MALFORMED`; `PIDGUARD_PERMISSION_DENIED`, `PIDGUARD_IO`. A refusal never
/// means "the holder is dead".
#[napi(namespace = "guard", ts_args_type = "path: string | Buffer")]
pub fn read(env: Env, path: PathArg) -> Result<Entry> {
    call(&env, || core::read(&convert::path(&path))).map(entry)
}

/// Remove `path` only if its bytes are exactly `encode(entry)`, safely against a concurrent
/// `replace`. `true` when removed; `false`, with nothing changed, when the file is missing or
/// holds anything else. Throws `PIDGUARD_TIMED_OUT` (the directory lock stayed taken 10 s),
/// `PIDGUARD_PERMISSION_DENIED`, `PIDGUARD_IO`.
#[napi(namespace = "guard", ts_args_type = "path: string | Buffer, entry: guard.EntryInit")]
pub fn remove(env: Env, path: PathArg, entry: EntryInit) -> Result<bool> {
    let e = entry_arg(&env, entry, "entry")?;
    call(&env, || core::remove(&convert::path(&path), &e))
}

/// Retire `old` by content, then create `next` in its place. Throws `PIDGUARD_SUPERSEDED` (and
/// writes nothing) when the file no longer holds `old`; `PIDGUARD_ALREADY_EXISTS` when another
/// creator won the freed name; `PIDGUARD_INVALID_ARGUMENT` for a `next` that cannot be written
/// (checked first); file-system errors as `create` and `remove`. A file that vanished in
/// between is not an error.
#[napi(namespace = "guard", ts_args_type = "path: string | Buffer, old: guard.EntryInit, next: guard.EntryInit")]
pub fn replace(env: Env, path: PathArg, old: EntryInit, next: EntryInit) -> Result<()> {
    let o = entry_arg(&env, old, "old")?;
    let n = entry_arg(&env, next, "next")?;
    call(&env, || core::replace(&convert::path(&path), &o, &n))
}

/// Read `path` and judge its holder: `{ found: false }` when there is no file, else the record
/// with the holder's identity verdict. Throws every refusal of `read` (a file that cannot be
/// trusted or parsed is an error, not a "dead" verdict), `PIDGUARD_BAD_TOKEN` when the token is
/// not a pidguard start token, `PIDGUARD_IO`.
#[napi(namespace = "guard", ts_args_type = "path: string | Buffer")]
pub fn check(env: Env, path: PathArg) -> Result<Verdict> {
    call(&env, || core::check(&convert::path(&path))).map(verdict)
}

/// The lowercase hex SHA-256 of `secret` (a UTF-8 `string` or a `Buffer`): how a record names a
/// secret without storing it.
#[napi(namespace = "guard", ts_args_type = "secret: string | Buffer")]
pub fn token_sha256(secret: PathArg) -> String {
    core::token_sha256(bytes(&secret))
}

/// A held guard, as `acquire` resolves it. `release()` removes our record if — and only if —
/// the file still holds exactly our bytes. Unlike the Rust guard, dropping the last reference
/// does NOT release: a garbage collection must never free a single-instance name at a random
/// moment. A record never released outlives the process and is then stale (`'gone'`), so the
/// next `acquire` replaces it.
#[napi(namespace = "guard")]
pub struct Guard {
    inner: Option<core::Guard>,
    path: String,
    entry: core::Entry,
    replaced: Option<core::Verdict>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Collected without release(): leave the record (see the type's doc).
        if let Some(g) = self.inner.take() {
            g.keep();
        }
    }
}

#[napi(namespace = "guard")]
impl Guard {
    /// The pidfile's path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// Our record (this process's pid and start token, and the fields given to `acquire`).
    #[napi(getter)]
    pub fn entry(&self) -> Entry {
        entry(self.entry.clone())
    }

    /// The stale (or, with `takeover`, live) holder whose record was replaced; `null` when the
    /// name was free.
    #[napi(getter)]
    pub fn replaced(&self) -> Option<Verdict> {
        self.replaced.clone().map(verdict)
    }

    /// Whether the file still holds exactly our record (false after `release()`, `keep()`, a
    /// takeover, or when someone removed it).
    #[napi]
    pub fn is_held(&self) -> bool {
        self.inner.as_ref().is_some_and(core::Guard::is_held)
    }

    /// Remove our record now. `true` when removed; `false` when the file no longer held it or
    /// the guard was already released or kept. Throws `PIDGUARD_PERMISSION_DENIED`,
    /// `PIDGUARD_IO`, `PIDGUARD_TIMED_OUT` (the record is then still ours: call again).
    #[napi]
    pub fn release(&mut self, env: Env) -> Result<bool> {
        match self.inner.take() {
            None => Ok(false),
            Some(g) => call(&env, || g.release()),
        }
    }

    /// Stop managing the record without removing it (to hand it to a process that releases it
    /// itself), and return it. Later `release()` calls return `false`.
    #[napi]
    pub fn keep(&mut self) -> Entry {
        if let Some(g) = self.inner.take() {
            g.keep();
        }
        entry(self.entry.clone())
    }
}

/// Take the single-instance guard at `path` for this process (its pid and start token) with
/// `fields`, off the event loop: create the file; else replace a holder proven `'gone'` or
/// `'mismatch'`; a `'match'` or `'unverifiable'` holder is taken over only with
/// `{ takeover: true }` (never a record from another machine).
///
/// Resolves to a `guard.Guard`; call `release()` when done (dropping it does not release).
/// Rejects with `PIDGUARD_HELD` (errno `EEXIST`) whose `holder` is the holder's
/// `guard.Verdict` (`entry`, `verdict`, `reason`); `PIDGUARD_INVALID_ARGUMENT` for fields that
/// cannot be written; every refusal of `read` (an untrusted or malformed file is never taken
/// over); `PIDGUARD_SUPERSEDED` when the file kept changing; file-system errors.
///
/// A record written in another container on a persistent volume (another PID namespace) is
/// `'unverifiable'`, hence held: put guard pidfiles on `/run`, which a restart empties.
#[napi(
    namespace = "guard",
    ts_args_type = "path: string | Buffer, fields?: Record<string, string> | null, options?: guard.AcquireOptions | null",
    ts_return_type = "Promise<guard.Guard>"
)]
pub fn acquire(path: PathArg, fields: Option<IndexMap<String, String>>, options: Option<AcquireOptions>) -> AsyncTask<CoreTask<Guard>> {
    let mut opts = core::AcquireOptions::default();
    opts.takeover = options.and_then(|o| o.takeover).unwrap_or(opts.takeover);
    let path = convert::path(&path);
    let fields = fields.unwrap_or_default().into_iter().collect();
    task(move || {
        let g = core::acquire(&path, &core::Entry { fields, ..core::Entry::current()? }, &opts)?;
        Ok(Guard { path: g.path().to_string_lossy().into_owned(), entry: g.entry().clone(), replaced: g.replaced().cloned(), inner: Some(g) })
    })
}
