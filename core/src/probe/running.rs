//! Which processes run a given program: a sweep's "is a hook of this kind running, and where?",
//! asked of core so that no shell reads `/proc` itself.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::sys::procfs;

/// A live process whose command line names one of the strings asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "python", pyo3::pyclass(frozen, eq, get_all, name = "RunningProcess", module = "pidguard._pidguard"))]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "RunningProcess", object_from_js = false))]
pub struct RunningProcess {
    /// The pid, as read when listed (not pinned: an answer, never a target to signal).
    pub pid: i32,
    /// Its working directory (`/proc/<pid>/cwd`), when it could be read; `None` for another
    /// user's process or where there is no `/proc` — its directory is then unknown.
    pub cwd: Option<String>,
}

/// The live processes (not exited, not the caller) whose command line — its arguments joined
/// with NUL bytes — contains one of `needles` (byte substrings, e.g. a hook script's name).
/// Nothing is signalled: an answer, read from `/proc` (`kinfo_proc` on macOS and FreeBSD). A
/// process that exits while it is read is left out; one whose command line cannot be read
/// (another user's, under `hidepid`) is left out too — callers that must not miss a hook treat
/// an error, not an empty list, as "could not tell".
///
/// Errors: `PermissionDenied` or `Io` (with the errno) when the process list cannot be read.
pub fn processes_running(needles: &[&str]) -> Result<Vec<RunningProcess>> {
    let pids = procfs::list_pids().map_err(|e| Error::io_at(Path::new("/proc"), "list processes", &e))?;
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    for pid in pids {
        if pid <= 0 || pid == me {
            continue;
        }
        let Ok(args) = procfs::read_cmdline(pid) else { continue };
        let line = args.join(&0u8);
        if !needles.iter().any(|n| !n.is_empty() && contains(&line, n.as_bytes())) {
            continue;
        }
        if !crate::identity::is_process_alive(i64::from(pid)) {
            continue;
        }
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok().map(|p: PathBuf| p.to_string_lossy().into_owned());
        out.push(RunningProcess { pid, cwd });
    }
    Ok(out)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
