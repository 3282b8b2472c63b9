//! pidguard_spawn(): start a command inside a scope and record it (core's `launch::spawn`).
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;

use pidguard_core::launch::{self, RecordFormat, SpawnOptions, Spawned};
use pidguard_core::report::SpawnView;

use crate::boundary::{non_null, opt_path, out, path, utf8, FfiResult};
use crate::results::{write_result, Kept};
use crate::types::*;

/// The options of pidguard_spawn(). Zero-initialised (`pidguard_spawn_options o = {0};`) it
/// means: scope PIDGUARD_SCOPE_MODE_AUTO, the caller's working directory, the default log files,
/// an abx-dl pidfile.
#[repr(C)]
pub struct pidguard_spawn_options {
    /// A pidguard_scope_mode value: PIDGUARD_SCOPE_MODE_AUTO (0: a cgroup v2 leaf where one can be
    /// made, else a supervisor), _CGROUP, _SUPERVISOR or _GROUP (the process group only).
    pub scope: i32,
    /// The command's working directory, or NULL for the caller's.
    pub cwd: *const c_char,
    /// Where the command's stdout goes (truncated), or NULL for `<pid_file without .pid>.stdout.log`.
    pub stdout_path: *const c_char,
    /// Where the command's stderr goes (truncated), or NULL for `<pid_file without .pid>.stderr.log`.
    pub stderr_path: *const c_char,
    /// Write a guard record (one JSON object; exactly one of racing starters wins) instead of an
    /// abx-dl pidfile and its `.sh`.
    pub guard: bool,
    /// The command's whole environment: a NULL-terminated array of `NAME=value` strings (as
    /// execve()'s `envp`; a value may hold `=`, it ends at the first one of the name), or NULL
    /// for the caller's `environ`. Its `PATH` is where a program without `/` is looked up. The
    /// caller's own environment is never changed.
    pub env: *const *const c_char,
    /// Start the command as this user (start-stop-daemon's `--chuid`, Python subprocess's
    /// `user`): a name, or a decimal number (taken as a name first; all digits and no such
    /// name: that number); NULL for the caller's. Its real, effective and saved uid become
    /// exactly that, set in its own process before it execs (setgroups, setresgid, setresuid,
    /// then read back). The scope (leaf or supervisor), the pidfile and the logs stay the
    /// caller's. Who may ask: root; root that lowered only its effective uid (ids (0, U, 0));
    /// anyone, for ids it already holds — else PIDGUARD_EPERMISSION_DENIED before anything is
    /// made.
    pub user: *const c_char,
    /// Its real, effective and saved gid, as `user` (name or number); NULL: with `user`, the
    /// user's primary group, else unchanged.
    pub group: *const c_char,
    /// Exactly these supplementary groups: a NULL-terminated array of names or numbers (an
    /// array holding only NULL: none); NULL: with `user`, the user's groups as initgroups(3)
    /// gives them (never the caller's), else unchanged.
    pub extra_groups: *const *const c_char,
}

/// What pidguard_spawn() started. A plain struct the caller allocates; nothing in it needs
/// freeing. Its strings point to copies the library keeps for the calling thread until its next
/// pidguard_spawn().
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pidguard_spawn_result {
    /// The command's pid (the one in the pidfile).
    pub pid: i32,
    /// The pidfile written, NUL-terminated.
    pub pid_file: *const c_char,
    /// The `.sh` command file beside an abx-dl pidfile, NUL-terminated; NULL for a guard record.
    pub cmd_file: *const c_char,
    /// Where the command's stdout goes, NUL-terminated (`stdout` in the other bindings).
    pub stdout_path: *const c_char,
    /// Where the command's stderr goes, NUL-terminated (`stderr` in the other bindings).
    pub stderr_path: *const c_char,
    /// The scope the command runs in.
    pub scope: pidguard_scope,
    /// The scope as recorded beside the pidfile (`cgroup:<boot id>:<cgroup id>:<path>` or
    /// `supervisor:<pid>:<token>`), NUL-terminated; NULL for PIDGUARD_SCOPE_GROUP, or when it
    /// could not be recorded (see `note`).
    pub scope_record: *const c_char,
    /// The supervisor's pid for PIDGUARD_SCOPE_SUPERVISOR; 0 otherwise. The supervisor is the
    /// caller's child and exits with the command's status once the command's whole tree has
    /// exited.
    pub supervisor_pid: i32,
    /// Why the scope is weaker than asked for (no cgroup leaf could be made, the file system has
    /// no user xattrs to record it in), NUL-terminated; NULL when it is not.
    pub note: *const c_char,
    /// The identity the command was started as, `uid=U gid=G groups=A,B` (the parts asked
    /// for), NUL-terminated, as the record keeps it; NULL when it runs as the caller.
    pub run_as: *const c_char,
}

impl pidguard_spawn_result {
    /// The C form of core's answer, its strings kept in `kept`.
    fn of(s: &Spawned, kept: &mut Kept) -> Self {
        let v = SpawnView::from(s);
        pidguard_spawn_result {
            pid: v.pid,
            pid_file: kept.str(Some(v.pid_file.as_os_str().as_bytes())),
            cmd_file: kept.str(v.cmd_file.as_deref().map(|p| p.as_os_str().as_bytes())),
            stdout_path: kept.str(Some(v.stdout.as_os_str().as_bytes())),
            stderr_path: kept.str(Some(v.stderr.as_os_str().as_bytes())),
            scope: (&s.scope).into(),
            scope_record: kept.str(v.scope_record),
            supervisor_pid: v.supervisor_pid.unwrap_or(0),
            note: kept.str(v.note),
            run_as: kept.str(v.run_as.as_deref()),
        }
    }
}

/// `argc` UTF-8 strings at `argv` (none for a NULL `argv` with `argc` 0).
fn words(argv: *const *const c_char, argc: usize) -> FfiResult<Vec<String>> {
    if argv.is_null() && argc == 0 {
        return Ok(Vec::new());
    }
    let argv = non_null(argv, "argv")?;
    (0..argc)
        .map(|i| {
            // SAFETY: the caller gives `argc` readable pointers at `argv`.
            let a = unsafe { *argv.as_ptr().add(i) };
            utf8(a, &format!("argv[{i}]")).map(str::to_string)
        })
        .collect()
}

/// `env` of pidguard_spawn_options as core's pairs: each `NAME=value` split at its first `=`
/// (the checks of names and values are core's). NULL: `None`, the caller's environment.
fn environment(env: *const *const c_char) -> FfiResult<Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>> {
    use std::os::unix::ffi::OsStrExt;
    if env.is_null() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for i in 0.. {
        // SAFETY: the caller gives a NULL-terminated array of NUL-terminated strings.
        let e = unsafe { *env.add(i) };
        if e.is_null() {
            break;
        }
        // SAFETY: as above: `e` is a NUL-terminated string the caller owns.
        let b = unsafe { std::ffi::CStr::from_ptr(e) }.to_bytes();
        let Some(eq) = b.iter().position(|&c| c == b'=') else {
            return Err(pidguard_core::Error::invalid(format!("env[{i}] is not NAME=value: {:?}", String::from_utf8_lossy(b))).into());
        };
        out.push((std::ffi::OsStr::from_bytes(&b[..eq]).to_os_string(), std::ffi::OsStr::from_bytes(&b[eq + 1..]).to_os_string()));
    }
    Ok(Some(out))
}

/// A user or group name or number of pidguard_spawn_options (NULL: not given).
fn id_spec(p: *const c_char, what: &str) -> FfiResult<Option<launch::IdSpec>> {
    if p.is_null() {
        return Ok(None);
    }
    Ok(Some(utf8(p, what)?.parse()?))
}

/// `extra_groups` of pidguard_spawn_options: a NULL-terminated array (NULL: not given).
fn id_list(list: *const *const c_char) -> FfiResult<Option<Vec<launch::IdSpec>>> {
    if list.is_null() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for i in 0.. {
        // SAFETY: the caller gives a NULL-terminated array of NUL-terminated strings.
        let e = unsafe { *list.add(i) };
        if e.is_null() {
            break;
        }
        out.push(utf8(e, &format!("extra_groups[{i}]"))?.parse()?);
    }
    Ok(Some(out))
}

/// Start a command in a new session inside a scope, with its output in files, and record it in
/// `pid_file` (what `pidguard run` does). Returns once the command has exec'd and is recorded;
/// never waits for the command.
///
/// 1. Checked before anything is created: the program (looked up in `$PATH` as execvp() does,
///    relative to `cwd`), `cwd`, the directories of the pidfile and the logs, and that
///    `pid_file` does not still name a live process.
/// 2. The scope: a cgroup v2 leaf of its own (the command joins it before it execs, so not even
///    its first fork escapes), or a supervisor — a child of the caller that is a child subreaper,
///    starts the command and exits with its status once the whole tree has exited.
/// 3. stdin is /dev/null, stdout and stderr go to the log files; the environment is the caller's,
///    or `options->env`.
/// 4. The pidfile (abx-dl format with the start token and the scope in extended attributes, plus
///    the `.sh`; or a guard record with a `scope` field). If it cannot be written, everything
///    started is killed and reaped: nothing runs unrecorded.
///
/// pidguard_stop_pid_file() and pidguard_cleanup_background_hooks() then stop every process of
/// the scope, setsid() or not, and nothing else.
///
/// The caller's own child is `supervisor_pid` when it is not 0, else `pid`: reap it with
/// waitpid() once it is stopped or has ended (its status is the command's). Until then it keeps
/// its pid, and the process group `pid` leads, provably the command's, so a later stop can still
/// reach them. A SIGCHLD handler that reaps every child (waitpid(-1, ...)) reaps it too.
///
/// - `pid_file`: the pidfile to write. Required.
/// - `argv`: `argc` NUL-terminated UTF-8 strings, the command first (looked up in `$PATH` when
///   it has no `/`); `argc` must be at least 1.
/// - `options`: see pidguard_spawn_options, or NULL for the defaults.
/// - `result_out`: receives what was started.
///
/// Returns 0; PIDGUARD_EINVALID_ARGUMENT for a NULL `pid_file` or `result_out`, an empty argv,
/// a NULL or non-UTF-8 string in `argv`, an unknown scope, or an `env` entry without `=`, with
/// an empty name or (never, from C) a NUL, an empty or non-UTF-8 user or group, or a user number
/// with no entry and no `group`; PIDGUARD_EPERMISSION_DENIED when the caller may not start a
/// command as the identity asked for; PIDGUARD_ENOT_FOUND for a user or group name with no
/// entry; PIDGUARD_ENOT_FOUND or PIDGUARD_EPERMISSION_DENIED when the program or `cwd`
/// cannot be used; PIDGUARD_EHELD when `pid_file` still names a live process;
/// PIDGUARD_EUNTRUSTED (or a refinement) for a symlink or non-regular file at the pidfile or a
/// log — all before anything is created; PIDGUARD_EIO when PIDGUARD_SCOPE_MODE_CGROUP was asked
/// and no leaf can be made, or when the fork, the cgroup join or the exec fails (the thread's
/// last error message names the step). On any error nothing is left running and no leaf is
/// left.
#[no_mangle]
pub extern "C" fn pidguard_spawn(
    pid_file: *const c_char,
    argv: *const *const c_char,
    argc: usize,
    options: *const pidguard_spawn_options,
    result_out: *mut pidguard_spawn_result,
) -> c_int {
    ffi!("pidguard_spawn", {
        let pid_file = path(pid_file, "pid_file")?;
        let argv = words(argv, argc)?;
        let result_out = out(result_out, "result_out")?;
        let mut opts = SpawnOptions::default();
        // SAFETY: a non-NULL `options` points at a pidguard_spawn_options the caller owns.
        if let Some(o) = unsafe { options.as_ref() } {
            opts.scope = pidguard_scope_mode::parse(o.scope)?;
            opts.cwd = opt_path(o.cwd, "cwd")?.map(|p| p.to_path_buf());
            opts.stdout = opt_path(o.stdout_path, "stdout_path")?.map(|p| p.to_path_buf());
            opts.stderr = opt_path(o.stderr_path, "stderr_path")?.map(|p| p.to_path_buf());
            if o.guard {
                opts.format = RecordFormat::Guard;
            }
            opts.env = environment(o.env)?;
            opts.user = id_spec(o.user, "user")?;
            opts.group = id_spec(o.group, "group")?;
            opts.extra_groups = id_list(o.extra_groups)?;
        }
        let s = launch::spawn(pid_file, &argv, &opts)?;
        write_result(result_out, |kept| Ok(pidguard_spawn_result::of(&s, kept)))
    })
}
