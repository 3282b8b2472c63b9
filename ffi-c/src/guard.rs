//! Guard pidfiles (core's `pidguard::guard`): the `pidguard_entry` record, the
//! `pidguard_guard_*` calls and the held-guard handle.

use std::ffi::{c_char, c_int, CString};
use std::os::unix::ffi::OsStrExt;

use pidguard_core::guard::{self, AcquireOptions, Entry, Guard, Verdict as GuardVerdict};
use pidguard_core::Error;

use crate::boundary::{bytes, get, obj, obj_mut, out, path as path_arg, text_out, utf8, FfiResult};
use crate::results::c_string;
use crate::last_error::last_held;
use crate::types::{pidguard_reason, pidguard_verdict};


/// A guard pidfile record: the holder's pid, its start token and the caller's own string
/// fields, in order (for example a session id, a socket path, pidguard_token_sha256() of a
/// secret; never a secret itself: the file is a plain file on disk).
///
/// Opaque. Made by pidguard_entry_new(), pidguard_entry_current(), pidguard_entry_clone(),
/// pidguard_entry_decode(), pidguard_guard_read(), pidguard_guard_check() or
/// pidguard_last_held(); the caller owns it and frees it with pidguard_entry_free(). Strings an
/// accessor gives out point into the entry and stay valid until the entry is next changed (a
/// pidguard_entry_set_* call) or freed. An entry may be read from several threads at once, but
/// must not be read while it is being changed or freed.
///
/// Every entry is valid by construction: pid > 0, a non-empty start token, field names
/// non-empty, unique and neither "pid" nor "start_token", at most 4096 bytes encoded. A setter
/// that would break a rule returns PIDGUARD_EINVALID_ARGUMENT and changes nothing.
#[allow(non_camel_case_types)]
pub struct pidguard_entry {
    entry: Entry,
    token: CString,
    fields: Vec<(CString, CString)>,
}

impl pidguard_entry {
    /// A valid entry's C form (core's rules decide what is valid).
    fn of(entry: Entry) -> FfiResult<pidguard_entry> {
        entry.validate()?;
        let token = c_string(&entry.start_token);
        let fields = entry.fields.iter().map(|(n, v)| (c_string(n), c_string(v))).collect();
        Ok(pidguard_entry { entry, token, fields })
    }

    fn boxed(entry: Entry) -> FfiResult<*mut pidguard_entry> {
        Ok(crate::boundary::boxed(pidguard_entry::of(entry)?))
    }

    /// Change the entry to `f(copy)` if the result is valid; otherwise leave it as it was.
    fn change(&mut self, f: impl FnOnce(&mut Entry)) -> FfiResult {
        let mut e = self.entry.clone();
        f(&mut e);
        *self = pidguard_entry::of(e)?;
        Ok(())
    }
}

fn entry_arg<'a>(p: *const pidguard_entry, what: &str) -> FfiResult<&'a Entry> {
    obj(p, what).map(|e| &e.entry)
}

/// A new guard record for `pid` with `start_token` and no fields, into `entry_out`.
///
/// - `pid`: the holder, > 0.
/// - `start_token`: its start token (from pidguard_start_token()), UTF-8, non-empty. Required.
///   pidguard_guard_check() judges it; a string that is not a pidguard start token is written
///   and read back, but checking it fails with PIDGUARD_EBAD_TOKEN.
/// - `entry_out`: receives a new entry, which the caller owns and frees with
///   pidguard_entry_free().
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument, pid <= 0, an empty or non-UTF-8
/// token.
#[no_mangle]
pub extern "C" fn pidguard_entry_new(pid: i32, start_token: *const c_char, entry_out: *mut *mut pidguard_entry) -> c_int {
    ffi!("pidguard_entry_new", {
        let token = utf8(start_token, "start_token")?;
        let entry_out = out(entry_out, "entry_out")?;
        entry_out.write(pidguard_entry::boxed(Entry::new(pid, token))?);
        Ok(())
    })
}

/// A new guard record naming the calling process (its pid and live start token), with no
/// fields, into `entry_out` (owned by the caller; free it with pidguard_entry_free()).
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `entry_out`; PIDGUARD_EIO when procfs cannot
/// be read.
#[no_mangle]
pub extern "C" fn pidguard_entry_current(entry_out: *mut *mut pidguard_entry) -> c_int {
    ffi!("pidguard_entry_current", {
        let entry_out = out(entry_out, "entry_out")?;
        entry_out.write(pidguard_entry::boxed(Entry::current()?)?);
        Ok(())
    })
}

/// A copy of `entry`, into `entry_out` (owned by the caller; free it with pidguard_entry_free()).
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_entry_clone(entry: *const pidguard_entry, entry_out: *mut *mut pidguard_entry) -> c_int {
    ffi!("pidguard_entry_clone", {
        let e = entry_arg(entry, "entry")?;
        let entry_out = out(entry_out, "entry_out")?;
        entry_out.write(pidguard_entry::boxed(e.clone())?);
        Ok(())
    })
}

/// Free an entry and every string its accessors gave out. NULL is allowed and does nothing.
/// Freeing an entry twice, or using it afterwards, is undefined behaviour. Never free an entry
/// borrowed from a guard (pidguard_guard_entry()).
#[no_mangle]
pub extern "C" fn pidguard_entry_free(entry: *mut pidguard_entry) {
    crate::boundary::free(entry)
}

/// The holder's pid, into `pid_out`. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_entry_pid(entry: *const pidguard_entry, pid_out: *mut i32) -> c_int {
    get("pidguard_entry_pid", (entry, "entry"), (pid_out, "pid_out"), |e| Ok(e.entry.pid))
}

/// The holder's start token, into `token_out`: a NUL-terminated string owned by the entry
/// (valid until the entry is changed or freed). Returns 0; PIDGUARD_EINVALID_ARGUMENT for a
/// NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_entry_start_token(entry: *const pidguard_entry, token_out: *mut *const c_char) -> c_int {
    get("pidguard_entry_start_token", (entry, "entry"), (token_out, "token_out"), |e| Ok(e.token.as_ptr()))
}

/// Set the holder's pid (> 0). Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `entry` or
/// pid <= 0 (the entry is unchanged). Not thread-safe with other uses of the same entry.
#[no_mangle]
pub extern "C" fn pidguard_entry_set_pid(entry: *mut pidguard_entry, pid: i32) -> c_int {
    ffi!("pidguard_entry_set_pid", { obj_mut(entry, "entry")?.change(|e| e.pid = pid) })
}

/// Set the holder's start token (UTF-8, non-empty; copied). Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL argument or an empty or non-UTF-8 token (the entry is
/// unchanged). Strings given out earlier by this entry's accessors become invalid. Not
/// thread-safe with other uses of the same entry.
#[no_mangle]
pub extern "C" fn pidguard_entry_set_start_token(entry: *mut pidguard_entry, start_token: *const c_char) -> c_int {
    ffi!("pidguard_entry_set_start_token", {
        let e = obj_mut(entry, "entry")?;
        let token = utf8(start_token, "start_token")?;
        e.change(|e| e.start_token = token.to_string())
    })
}

/// Set field `name` to `value` (both UTF-8, copied): the value of an existing field is replaced
/// in place, a new field is appended (fields keep their order in the file).
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument, a string that is not UTF-8, an
/// empty name, the reserved names "pid" and "start_token", or a record that would encode to
/// more than 4096 bytes (the entry is unchanged). Strings given out earlier by this entry's
/// accessors become invalid. Not thread-safe with other uses of the same entry.
#[no_mangle]
pub extern "C" fn pidguard_entry_set_field(entry: *mut pidguard_entry, name: *const c_char, value: *const c_char) -> c_int {
    ffi!("pidguard_entry_set_field", {
        let e = obj_mut(entry, "entry")?;
        let name = utf8(name, "name")?;
        let value = utf8(value, "value")?;
        e.change(|e| match e.fields.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value.to_string(),
            None => e.fields.push((name.to_string(), value.to_string())),
        })
    })
}

/// The value of field `name`, into `value_out`: a string owned by the entry (valid until the
/// entry is changed or freed), or NULL when the entry has no such field. Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_entry_field(entry: *const pidguard_entry, name: *const c_char, value_out: *mut *const c_char) -> c_int {
    ffi!("pidguard_entry_field", {
        let e = obj(entry, "entry")?;
        let name = crate::boundary::cstr(name, "name")?;
        let value_out = out(value_out, "value_out")?;
        let v = e.entry.fields.iter().position(|(n, _)| n.as_bytes() == name.to_bytes()).map(|i| e.fields[i].1.as_ptr());
        value_out.write(v.unwrap_or(std::ptr::null()));
        Ok(())
    })
}

/// The number of fields (not counting pid and start token), into `len_out`. Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_entry_fields_len(entry: *const pidguard_entry, len_out: *mut usize) -> c_int {
    get("pidguard_entry_fields_len", (entry, "entry"), (len_out, "len_out"), |e| Ok(e.fields.len()))
}

/// Field number `index` (0 to len - 1, in file order): its name into `name_out` and its value
/// into `value_out`, strings owned by the entry (valid until it is changed or freed). Returns
/// 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument or an index out of range.
#[no_mangle]
pub extern "C" fn pidguard_entry_field_at(
    entry: *const pidguard_entry,
    index: usize,
    name_out: *mut *const c_char,
    value_out: *mut *const c_char,
) -> c_int {
    ffi!("pidguard_entry_field_at", {
        let e = obj(entry, "entry")?;
        let name_out = out(name_out, "name_out")?;
        let value_out = out(value_out, "value_out")?;
        let (n, v) = e.fields.get(index).ok_or_else(|| {
            Error::invalid(format!("index {index} is out of range: the entry has {} fields", e.fields.len()))
        })?;
        name_out.write(n.as_ptr());
        value_out.write(v.as_ptr());
        Ok(())
    })
}

/// Copy the exact bytes a guard pidfile holds for `entry` into `buf`, like snprintf: one JSON
/// object (`pid`, `start_token`, then the fields in order) and a newline. The JSON holds no NUL
/// byte.
///
/// - `buf`: where to write, NUL-terminated; may be NULL when `buf_len` is 0.
/// - `buf_len`: size of `buf` in bytes, including the NUL.
/// - `len_out`: receives the full length, not counting the NUL (at most 4096). When it is >=
///   `buf_len`, `buf` holds a truncated copy.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `entry` or `len_out`, or a NULL `buf` with
/// `buf_len` > 0.
#[no_mangle]
pub extern "C" fn pidguard_entry_encode(
    entry: *const pidguard_entry,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
) -> c_int {
    ffi!("pidguard_entry_encode", {
        let e = entry_arg(entry, "entry")?;
        let buf = text_out(buf, buf_len, "buf")?;
        let len_out = out(len_out, "len_out")?;
        let bytes = guard::encode(e);
        // serde_json writes UTF-8.
        let text = String::from_utf8(bytes).map_err(|_| Error::invalid("encoded entry is not UTF-8"))?;
        len_out.write(buf.write(&text));
        Ok(())
    })
}

/// Parse guard pidfile content into a new entry, into `entry_out` (owned by the caller; free
/// it with pidguard_entry_free()).
///
/// - `content`: `content_len` bytes (no NUL needed); may be NULL when `content_len` is 0.
///
/// The content must be one JSON object with a positive integer `pid`, a non-empty string
/// `start_token` and only string members besides. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a
/// NULL argument; PIDGUARD_EINVALID_JSON, PIDGUARD_EBAD_PID or PIDGUARD_EBAD_TOKEN (family
/// PIDGUARD_EMALFORMED) for content that breaks the format.
#[no_mangle]
pub extern "C" fn pidguard_entry_decode(content: *const u8, content_len: usize, entry_out: *mut *mut pidguard_entry) -> c_int {
    ffi!("pidguard_entry_decode", {
        let content = bytes(content, content_len, "content")?;
        let entry_out = out(entry_out, "entry_out")?;
        entry_out.write(pidguard_entry::boxed(guard::decode(content)?)?);
        Ok(())
    })
}

/// The lowercase hex SHA-256 of a secret (64 characters), like snprintf: the form in which a
/// guard record names a secret without storing it.
///
/// - `secret`: `secret_len` bytes; may be NULL when `secret_len` is 0.
/// - `buf`: where to write, NUL-terminated; may be NULL when `buf_len` is 0. 65 bytes hold it.
/// - `len_out`: receives the full length, 64.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `len_out`, a NULL `secret` with
/// `secret_len` > 0, or a NULL `buf` with `buf_len` > 0. Thread-safe.
#[no_mangle]
pub extern "C" fn pidguard_token_sha256(
    secret: *const u8,
    secret_len: usize,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
) -> c_int {
    ffi!("pidguard_token_sha256", {
        let secret = bytes(secret, secret_len, "secret")?;
        let buf = text_out(buf, buf_len, "buf")?;
        let len_out = out(len_out, "len_out")?;
        len_out.write(buf.write(&guard::token_sha256(secret)));
        Ok(())
    })
}

/// Create the guard pidfile `path` holding `entry`, failing if anything is there.
///
/// The file appears fully written or not at all, and of any number of racing creators exactly
/// one succeeds (the content is written to an unnamed file, fsync'ed, then linked to `path`,
/// which fails when the name is taken, by a file, directory or symlink alike: nothing there is
/// followed or touched). Mode 0600 whatever the umask; a missing parent directory is created
/// with mode 0700. Never deletes or changes an existing file.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument or an empty path;
/// PIDGUARD_EALREADY_EXISTS when `path` exists; PIDGUARD_ENOT_FOUND,
/// PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO from the file system.
#[no_mangle]
pub extern "C" fn pidguard_guard_create(path: *const c_char, entry: *const pidguard_entry) -> c_int {
    ffi!("pidguard_guard_create", {
        let p = path_arg(path, "path")?;
        let e = entry_arg(entry, "entry")?;
        guard::create(p, e)
    })
}

/// Read and check the guard pidfile `path`, into a new entry `entry_out` (owned by the caller;
/// free it with pidguard_entry_free()). The holder is not judged (see pidguard_guard_check()).
///
/// The file is opened without following a symlink or blocking on a FIFO, and must be a regular
/// file with one link, no permission bits for group or others, at most 4096 bytes, holding one
/// record with a pid no larger than pid_max. A refusal never means "the holder is dead".
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument; PIDGUARD_ENOT_FOUND when there
/// is no file; PIDGUARD_ESYMLINK, PIDGUARD_EIS_DIRECTORY, PIDGUARD_ENOT_REGULAR_FILE (FIFO,
/// socket, device), PIDGUARD_EHARD_LINKED, PIDGUARD_EINSECURE_MODE, PIDGUARD_ETOO_LARGE
/// (family PIDGUARD_EUNTRUSTED); PIDGUARD_EINVALID_JSON, PIDGUARD_EBAD_PID,
/// PIDGUARD_EBAD_TOKEN (family PIDGUARD_EMALFORMED); PIDGUARD_EPERMISSION_DENIED or
/// PIDGUARD_EIO from the file system.
#[no_mangle]
pub extern "C" fn pidguard_guard_read(path: *const c_char, entry_out: *mut *mut pidguard_entry) -> c_int {
    ffi!("pidguard_guard_read", {
        let p = path_arg(path, "path")?;
        let entry_out = out(entry_out, "entry_out")?;
        entry_out.write(pidguard_entry::boxed(guard::read(p)?)?);
        Ok(())
    })
}

/// Remove the guard pidfile `path` only if it holds exactly the bytes of `entry`
/// (pidguard_entry_encode()); `removed_out` receives whether it was removed.
///
/// Safe against a concurrent pidguard_guard_replace(): the file is compared, renamed aside,
/// re-checked and only then unlinked (put back if it changed). A missing file, other content or
/// something that is not a regular file is `false`, not an error, and nothing is changed.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument; PIDGUARD_ETIMED_OUT when another
/// remover keeps the directory lock for 10 s; PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO from
/// the rename or unlink.
#[no_mangle]
pub extern "C" fn pidguard_guard_remove(path: *const c_char, entry: *const pidguard_entry, removed_out: *mut bool) -> c_int {
    ffi!("pidguard_guard_remove", {
        let p = path_arg(path, "path")?;
        let e = entry_arg(entry, "entry")?;
        let removed_out = out(removed_out, "removed_out")?;
        removed_out.write(guard::remove(p, e)?);
        Ok(())
    })
}

/// Retire `old_entry` from the guard pidfile `path` by content, then create `new_entry` there.
///
/// If the file no longer holds exactly `old_entry` (someone replaced it first), nothing is
/// written and PIDGUARD_ESUPERSEDED is returned: check the new holder. A file that vanished in
/// between is not an error (`new_entry` is created). Of racing replacers exactly one succeeds.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument; PIDGUARD_ESUPERSEDED;
/// PIDGUARD_EALREADY_EXISTS when another creator took the freed name first; the file-system
/// statuses of pidguard_guard_create() and pidguard_guard_remove().
#[no_mangle]
pub extern "C" fn pidguard_guard_replace(
    path: *const c_char,
    old_entry: *const pidguard_entry,
    new_entry: *const pidguard_entry,
) -> c_int {
    ffi!("pidguard_guard_replace", {
        let p = path_arg(path, "path")?;
        let old = entry_arg(old_entry, "old_entry")?;
        let new = entry_arg(new_entry, "new_entry")?;
        guard::replace(p, old, new)
    })
}

/// What pidguard_guard_check() (or pidguard_last_held(), pidguard_guard_replaced()) says about
/// a guard pidfile's holder. A plain struct the caller allocates; nothing in it needs freeing
/// (the holder's record comes through a separate `holder_out`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(non_camel_case_types)]
pub struct pidguard_guard_verdict {
    /// Whether there is a record. false: no file (every other member is "none").
    pub found: bool,
    /// The identity verdict of the holder; PIDGUARD_VERDICT_NONE when not found.
    pub verdict: pidguard_verdict,
    /// Why; PIDGUARD_REASON_NONE when not found.
    pub reason: pidguard_reason,
    /// The holder's pid; 0 when not found.
    pub pid: i32,
    /// The uid that owns the file; -1 when not found.
    pub owner_uid: i64,
    /// Whether the record is proven stale (holder GONE or MISMATCH) and may be replaced.
    pub stale: bool,
}

impl pidguard_guard_verdict {
    fn of(v: &GuardVerdict) -> Self {
        pidguard_guard_verdict {
            found: v.found,
            verdict: v.identity.map(|j| j.verdict).into(),
            reason: v.identity.map(|j| j.reason).into(),
            pid: v.entry.as_ref().map_or(0, |e| e.pid),
            owner_uid: v.owner_uid.map_or(-1, i64::from),
            stale: v.is_stale(),
        }
    }
}

/// Write a verdict and, when wanted, a copy of its record (NULL when there is none).
fn write_verdict(v: &GuardVerdict, verdict_out: *mut pidguard_guard_verdict, holder_out: *mut *mut pidguard_entry) -> FfiResult {
    let verdict_out = out(verdict_out, "verdict_out")?;
    let holder = match (&v.entry, holder_out.is_null()) {
        (Some(e), false) => pidguard_entry::boxed(e.clone())?,
        _ => std::ptr::null_mut(),
    };
    verdict_out.write(pidguard_guard_verdict::of(v));
    if !holder_out.is_null() {
        out(holder_out, "holder_out")?.write(holder);
    }
    Ok(())
}

/// Read the guard pidfile `path` and judge its holder.
///
/// - `verdict_out`: receives the verdict; `found` is false when there is no file. A record from
///   an earlier boot is MISMATCH; one from another machine or PID namespace UNVERIFIABLE (a
///   container's record on a persistent volume: put guard pidfiles on /run).
/// - `holder_out`: may be NULL (not wanted); else receives a new entry with the record (owned by
///   the caller; free it with pidguard_entry_free()), or NULL when there is no file.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `path` or `verdict_out`; every refusal of
/// pidguard_guard_read() (a file that cannot be trusted or parsed is an error, never "dead");
/// PIDGUARD_EBAD_TOKEN when the token is not a pidguard start token; PIDGUARD_EIO when procfs
/// fails oddly.
#[no_mangle]
pub extern "C" fn pidguard_guard_check(
    path: *const c_char,
    verdict_out: *mut pidguard_guard_verdict,
    holder_out: *mut *mut pidguard_entry,
) -> c_int {
    ffi!("pidguard_guard_check", {
        let p = path_arg(path, "path")?;
        out(verdict_out, "verdict_out")?;
        let v = guard::check(p)?;
        write_verdict(&v, verdict_out, holder_out)
    })
}

/// pidguard_guard_acquire() flag: also take over a holder that is MATCH (alive, the very
/// process) or UNVERIFIABLE, for an operator who knows better. A record from another machine
/// is never taken over. The displaced holder keeps running; its own release later finds another
/// record and removes nothing.
pub const PIDGUARD_ACQUIRE_TAKEOVER: u32 = 1;

/// A held guard pidfile (pidguard_guard_acquire()): our record is in the file.
///
/// Opaque; the caller owns it. pidguard_guard_release() removes our record (only if the file
/// still holds exactly it) and frees the handle; pidguard_guard_free() does the same ignoring
/// errors; pidguard_guard_keep() frees the handle and leaves the record. After fork(), the
/// child's copy is not the holder: releasing or freeing it there removes nothing. A guard may be
/// read from several threads at once, but must not be read while it is being released or freed.
#[allow(non_camel_case_types)]
pub struct pidguard_guard {
    guard: Option<Guard>,
    entry: pidguard_entry,
    path: CString,
}

fn guard_arg<'a>(p: *const pidguard_guard) -> FfiResult<&'a pidguard_guard> {
    obj(p, "guard")
}

/// Take the single-instance guard pidfile `path` for `entry` (usually pidguard_entry_current()
/// plus the caller's fields).
///
/// 1. Create the file; if the name was free, it is ours.
/// 2. Otherwise judge the holder: GONE or MISMATCH (proven stale) → replace it by content;
///    MATCH or UNVERIFIABLE → PIDGUARD_EHELD, unless `flags` has PIDGUARD_ACQUIRE_TAKEOVER.
/// 3. A race lost in between goes back to 1.
///
/// Of any number of racing callers, at most one holds the guard at a time, and a stale holder
/// never blocks forever.
///
/// - `flags`: 0 or PIDGUARD_ACQUIRE_TAKEOVER.
/// - `guard_out`: receives a new guard handle, which the caller owns (see pidguard_guard).
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument or an unknown flag;
/// PIDGUARD_EHELD when a live or unverifiable process holds it: pidguard_last_held() then gives
/// the holder's record and verdict; every refusal of pidguard_guard_read() and
/// PIDGUARD_EBAD_TOKEN for a file that is not a trustworthy record (never taken over);
/// PIDGUARD_ESUPERSEDED when the file kept changing for 64 rounds; file-system statuses as in
/// pidguard_guard_create().
#[no_mangle]
pub extern "C" fn pidguard_guard_acquire(
    path: *const c_char,
    entry: *const pidguard_entry,
    flags: u32,
    guard_out: *mut *mut pidguard_guard,
) -> c_int {
    ffi!("pidguard_guard_acquire", {
        let p = path_arg(path, "path")?;
        let e = entry_arg(entry, "entry")?;
        let guard_out = out(guard_out, "guard_out")?;
        if flags & !PIDGUARD_ACQUIRE_TAKEOVER != 0 {
            return Err(Error::invalid(format!("unknown flags {flags:#x} (only PIDGUARD_ACQUIRE_TAKEOVER = 1)")));
        }
        let opts = AcquireOptions { takeover: flags & PIDGUARD_ACQUIRE_TAKEOVER != 0 };
        let g = guard::acquire(p, e, &opts)?;
        let entry = pidguard_entry::of(g.entry().clone())?;
        let path = c_string(g.path().as_os_str().as_bytes());
        guard_out.write(crate::boundary::boxed(pidguard_guard { guard: Some(g), entry, path }));
        Ok(())
    })
}

/// Who holds the guard pidfile, when the calling thread's last failure was PIDGUARD_EHELD
/// (from pidguard_guard_acquire()).
///
/// - `verdict_out`: receives the holder's verdict (MATCH or UNVERIFIABLE, with the reason).
/// - `holder_out`: may be NULL; else receives a new entry with the holder's record (owned by
///   the caller; free it with pidguard_entry_free()).
///
/// Kept per thread with the last error message: it stays available through calls that succeed
/// and is forgotten by the next failure. Returns 0; PIDGUARD_ENOT_FOUND when the thread's last
/// failure was not PIDGUARD_EHELD (or nothing failed yet); PIDGUARD_EINVALID_ARGUMENT for a NULL
/// `verdict_out` (like every failure, these replace the thread's last error).
#[no_mangle]
pub extern "C" fn pidguard_last_held(verdict_out: *mut pidguard_guard_verdict, holder_out: *mut *mut pidguard_entry) -> c_int {
    // The holder is read before the boundary, which records any failure of this call.
    let held = last_held();
    ffi!("pidguard_last_held", {
        out(verdict_out, "verdict_out")?;
        let v = held.ok_or_else(|| {
            Error::new(pidguard_core::ErrorKind::NotFound, "the last failure on this thread was not PIDGUARD_EHELD")
        })?;
        write_verdict(&v, verdict_out, holder_out)
    })
}

/// Release a guard: remove our record if the file still holds exactly it, then free the handle.
///
/// - `guard`: from pidguard_guard_acquire(). Freed in every case, also when an error is
///   returned: do not use it afterwards.
/// - `removed_out`: may be NULL; else receives whether our record was removed (false when
///   someone took over or removed it, or when called in a forked child of the acquiring
///   process).
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `guard`; PIDGUARD_ETIMED_OUT,
/// PIDGUARD_EPERMISSION_DENIED or PIDGUARD_EIO from the file system (the record may still be
/// there).
#[no_mangle]
pub extern "C" fn pidguard_guard_release(guard: *mut pidguard_guard, removed_out: *mut bool) -> c_int {
    ffi!("pidguard_guard_release", {
        let mut g = crate::boundary::take(guard, "guard")?;
        let removed_out = crate::boundary::opt_out(removed_out, "removed_out")?;
        let removed = match g.guard.take() {
            Some(held) => held.release()?,
            None => false,
        };
        if let Some(o) = removed_out {
            o.write(removed);
        }
        Ok(())
    })
}

/// Free a guard handle without removing our record (for example when handing the guard to a
/// process that will release it itself). Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL
/// `guard`. Do not use the guard afterwards.
#[no_mangle]
pub extern "C" fn pidguard_guard_keep(guard: *mut pidguard_guard) -> c_int {
    ffi!("pidguard_guard_keep", {
        if let Some(held) = crate::boundary::take(guard, "guard")?.guard.take() {
            held.keep();
        }
        Ok(())
    })
}

/// Free a guard handle, releasing the guard as pidguard_guard_release() does but ignoring
/// errors (for cleanup paths). NULL is allowed and does nothing. Freeing twice, or using the
/// guard afterwards, is undefined behaviour.
#[no_mangle]
pub extern "C" fn pidguard_guard_free(guard: *mut pidguard_guard) {
    // Dropping the core Guard releases it.
    crate::boundary::free(guard)
}

/// Our record, into `entry_out`: borrowed from the guard (never free it), valid until the guard
/// is released, kept or freed. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_guard_entry(guard: *const pidguard_guard, entry_out: *mut *const pidguard_entry) -> c_int {
    get("pidguard_guard_entry", (guard, "guard"), (entry_out, "entry_out"), |g| Ok(&g.entry as *const pidguard_entry))
}

/// The guard pidfile's path, into `path_out`: a string owned by the guard, valid until it is
/// released, kept or freed. Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_guard_path(guard: *const pidguard_guard, path_out: *mut *const c_char) -> c_int {
    get("pidguard_guard_path", (guard, "guard"), (path_out, "path_out"), |g| Ok(g.path.as_ptr()))
}

/// Whether the file still holds exactly our record, into `held_out` (false after a takeover,
/// or when someone removed it). Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub extern "C" fn pidguard_guard_is_held(guard: *const pidguard_guard, held_out: *mut bool) -> c_int {
    get("pidguard_guard_is_held", (guard, "guard"), (held_out, "held_out"), |g| Ok(g.guard.as_ref().is_some_and(Guard::is_held)))
}

/// The holder whose record pidguard_guard_acquire() replaced to take the guard (stale, or live
/// with PIDGUARD_ACQUIRE_TAKEOVER): its verdict into `verdict_out` (`found` false when the name
/// was free) and, when `holder_out` is not NULL, a new entry with its record that the caller
/// frees with pidguard_entry_free() (NULL when the name was free). Returns 0;
/// PIDGUARD_EINVALID_ARGUMENT for a NULL `guard` or `verdict_out`.
#[no_mangle]
pub extern "C" fn pidguard_guard_replaced(
    guard: *const pidguard_guard,
    verdict_out: *mut pidguard_guard_verdict,
    holder_out: *mut *mut pidguard_entry,
) -> c_int {
    ffi!("pidguard_guard_replaced", {
        let g = guard_arg(guard)?;
        out(verdict_out, "verdict_out")?;
        let none = GuardVerdict { found: false, entry: None, identity: None, owner_uid: None };
        let v = g.guard.as_ref().and_then(Guard::replaced).unwrap_or(&none);
        write_verdict(v, verdict_out, holder_out)
    })
}
