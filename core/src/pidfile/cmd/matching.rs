//! The recorded command (a `.sh` file or an argv) and its match against a live process's argv,
//! by the rules of abx-dl's current release.

use std::fs;
use std::path::Path;

use super::file::read_cmd_file;
use crate::error::Result;

/// Where the recorded command of a hook comes from: the `.sh` file of abx-dl's releases up to
/// 1.12, or the argv list its current release keeps in memory
/// (`validate_pid_file(pid_file, expected_argv)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordedCommand<'a> {
    /// A command file written by [`write_cmd_file`](super::write_cmd_file); a missing file records nothing.
    File(&'a Path),
    /// The argv itself; an empty list records nothing.
    Argv(&'a [String]),
}

impl<'a> From<&'a Path> for RecordedCommand<'a> {
    fn from(p: &'a Path) -> Self {
        RecordedCommand::File(p)
    }
}

impl<'a> From<&'a [String]> for RecordedCommand<'a> {
    fn from(a: &'a [String]) -> Self {
        RecordedCommand::Argv(a)
    }
}

/// A recorded command, loaded: the text the `--remote-debugging-port` rule searches (the file's
/// whole text, or the argv joined with spaces) and the argv (empty: nothing recorded).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// The text searched for `--remote-debugging-port`.
    pub text: String,
    /// The recorded argv; empty when nothing is recorded (the argv rules are then skipped).
    pub argv: Vec<String>,
}

impl RecordedCommand<'_> {
    /// Load the record. `Ok(None)`: nothing is recorded (a missing file), so the cmd rules pass.
    ///
    /// Errors: those of [`read_cmd_file`] (an unreadable, non-regular or non-UTF-8 file).
    pub fn load(&self) -> Result<Option<Recorded>> {
        match self {
            RecordedCommand::File(p) => Ok(read_cmd_file(p)?.map(|(text, argv)| Recorded { text, argv })),
            RecordedCommand::Argv(a) => Ok(Some(Recorded { text: a.join(" "), argv: a.to_vec() })),
        }
    }
}

/// abx-dl's `_normalize_exec_name`: the lowercased basename, `python*` → `python`, `node*` →
/// `node` (`python3.11`, `nodejs` and `node22` fold; so does `pythonw`).
fn exec_name(s: &str) -> String {
    let name = basename(s).to_lowercase();
    if name.starts_with("python") {
        "python".into()
    } else if name.starts_with("node") {
        "node".into()
    } else {
        name
    }
}

/// `pathlib.Path(s).name`: the last non-empty component (`""` for `""` and `"/"`).
fn basename(s: &str) -> &str {
    s.trim_end_matches('/').rsplit('/').next().unwrap_or("")
}

/// Python's `os.path.realpath(p)` (non-strict) for an absolute `p`: symbolic links resolved
/// component by component; a component that cannot be examined (missing, unreadable) is kept as
/// written, and so is the rest after a symlink loop. `.` and `..` are resolved lexically after
/// the links before them, as posixpath does.
pub fn realpath(p: &str) -> String {
    fn join(path: &str, name: &str) -> String {
        if path.ends_with('/') { format!("{path}{name}") } else { format!("{path}/{name}") }
    }
    fn resolve(mut path: String, rest: &str, seen: &mut std::collections::HashMap<String, Option<String>>, depth: u32) -> (String, bool) {
        let mut rest = rest;
        if let Some(r) = rest.strip_prefix('/') {
            rest = r;
            path = "/".into();
        }
        while !rest.is_empty() {
            let (name, tail) = rest.split_once('/').unwrap_or((rest, ""));
            rest = tail;
            if name.is_empty() || name == "." {
                continue;
            }
            if name == ".." {
                // posixpath.split: the head keeps "/" at the root.
                match path.rfind('/') {
                    Some(0) => path.truncate(1),
                    Some(i) => path.truncate(i),
                    None => path.clear(),
                }
                continue;
            }
            let newpath = join(&path, name);
            let is_link = fs::symlink_metadata(&newpath).is_ok_and(|m| m.file_type().is_symlink());
            if !is_link {
                path = newpath;
                continue;
            }
            match seen.get(&newpath) {
                Some(Some(resolved)) => {
                    path = resolved.clone();
                    continue;
                }
                Some(None) => return (join(&newpath, rest), false),
                None => {}
            }
            let Ok(target) = fs::read_link(&newpath) else {
                path = newpath;
                continue;
            };
            if depth > 64 {
                return (join(&newpath, rest), false);
            }
            seen.insert(newpath.clone(), None);
            let (p, ok) = resolve(path, &target.to_string_lossy(), seen, depth + 1);
            if !ok {
                return (join(&p, rest), false);
            }
            seen.insert(newpath, Some(p.clone()));
            path = p;
        }
        (path, true)
    }
    let (out, _) = resolve(String::new(), p, &mut std::collections::HashMap::new(), 0);
    if out.is_empty() { "/".into() } else { out }
}

/// abx-dl's `_normalize_recorded_arg`: the realpath of an absolute argument, others as written.
fn normalize_arg(s: &str) -> String {
    if s.starts_with('/') { realpath(s) } else { s.to_string() }
}

/// The live side of the command check.
#[derive(Clone, Debug, Default)]
pub struct LiveCommand {
    /// `/proc/<pid>/cmdline` (empty for a process that cleared it).
    pub argv: Vec<String>,
    /// The process name (`comm`): stands in for `argv[0]` when the argv is empty.
    pub name: String,
}

/// Whether a live command matches the recorded one, by the rules of abx-dl's current release
/// (`process_utils.validate_pid_file`, 1.13.273). With `R` the recorded argv and `L` the live one:
/// - a record whose `text` holds `--remote-debugging-port` needs it in `L` joined with spaces;
/// - then an empty `R` records nothing: true;
/// - an absolute `R[0]`: the realpath of an absolute `L[0]` equals realpath(`R[0]`), or `L[1]`
///   (realpath when absolute) equals it — the kernel's shebang rewrite, `node /abs/hook.js` for
///   `/abs/hook.js` — otherwise false (a relative `L[0]` needs the shebang form);
/// - a relative `R[0]`: the lowercased basenames match, `python*` and `node*` folded (an empty
///   `L` compares the process name; an empty name on either side is not compared);
/// - unless the shebang rewrite applied, `R[1]` and `L[1]` (realpath when absolute) match when
///   both exist and are non-empty.
///
/// No rule looks at the words `chrome` or `chromium`: the oldest release's rule did, and
/// rejected every hook under `plugins/chrome/` and every URL naming Chrome.
pub fn command_matches(rec: &Recorded, live: &LiveCommand) -> bool {
    let (r, l) = (&rec.argv, &live.argv);
    if rec.text.contains("--remote-debugging-port") && !l.join(" ").contains("--remote-debugging-port") {
        return false;
    }
    if r.is_empty() {
        return true;
    }
    let mut shebang = false;
    if r[0].starts_with('/') {
        let recorded = realpath(&r[0]);
        let live_script = l.get(1).map(|a| normalize_arg(a)).unwrap_or_default();
        let exec_ok = l.first().is_some_and(|l0| l0.starts_with('/') && realpath(l0) == recorded);
        if !exec_ok {
            if !live_script.is_empty() && live_script == recorded {
                shebang = true;
            } else {
                return false;
            }
        }
    } else {
        let recorded = exec_name(&r[0]);
        let live_name = exec_name(l.first().map(String::as_str).unwrap_or(&live.name));
        if !recorded.is_empty() && !live_name.is_empty() && recorded != live_name {
            return false;
        }
    }
    if !shebang && r.len() > 1 && l.len() > 1 {
        let (a, b) = (normalize_arg(&r[1]), normalize_arg(&l[1]));
        if !a.is_empty() && !b.is_empty() && a != b {
            return false;
        }
    }
    true
}
