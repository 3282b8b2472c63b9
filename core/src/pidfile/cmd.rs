//! The hook's `.sh` command file (seed 000): `#!/bin/bash`, then the argv joined as Python's
//! `shlex.join` joins it, and the check of a live process's argv against it.

use std::fs;
use std::path::Path;

use super::atomic;
use crate::error::{Error, Result};

/// Largest command file read (the cmd check reads only its last non-blank line).
const MAX_CMD_FILE: u64 = 1 << 20;

/// Quote one argument exactly as Python's `shlex.quote` does: unchanged when it only holds
/// `[A-Za-z0-9_@%+=:,./-]`, `''` when empty, otherwise single-quoted with each `'` written as
/// `'"'"'`.
pub fn quote(arg: &str) -> String {
    if arg.is_empty() {
        return "''".to_string();
    }
    let safe = arg.bytes().all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if safe {
        return arg.to_string();
    }
    format!("'{}'", arg.replace('\'', "'\"'\"'"))
}

/// Join an argv as Python's `shlex.join` does.
pub fn join<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter().map(|a| quote(a.as_ref())).collect::<Vec<_>>().join(" ")
}

/// Write the command file as abx-dl's `write_cmd_file` writes it: `#!/bin/bash\n` +
/// [`join`]`(argv)` + `\n`, mode 0755 whatever the umask, through a temporary file and `rename`,
/// so a symlink at `path` is refused and nothing it points to is touched.
///
/// Like the original, an empty argv writes `#!/bin/bash\n\n` (a file with no recorded argv, which
/// the cmd rules skip), and an argument holding a line break is quoted the `shlex.join` way;
/// [`read_cmd_file`] reads such an argument back as one argument.
///
/// Errors: `InvalidArgument` for an argument holding a NUL (no file system or argv can hold
/// one); `Untrusted` when `path` is a symlink, FIFO or directory; `Io`/`PermissionDenied`/
/// `NotFound` from the file system.
pub fn write_cmd_file<S: AsRef<str>>(path: &Path, argv: &[S]) -> Result<()> {
    if argv.iter().any(|a| a.as_ref().contains('\0')) {
        return Err(Error::invalid(format!("{}: an argument holds a NUL byte", path.display())));
    }
    let text = format!("#!/bin/bash\n{}\n", join(argv));
    atomic::replace_file(path, text.as_bytes(), 0o755, |_| Ok(()))
}

/// The whole text of a command file and its recorded argv. `Ok(None)` when the file is missing.
///
/// The recorded argv is the last command of the file that holds a word, split as `shlex.split`
/// splits it: line breaks inside quotes belong to their argument (so every file
/// [`write_cmd_file`] writes reads back to the argv it was given), unquoted ones end a command.
/// When the file's quotes do not balance, the original's rule applies instead: the last
/// non-blank line, stripped, split; an unbalanced quote there gives no argv. An empty argv
/// (an empty file, only blank lines, an unbalanced last line) means "no recorded argv": the
/// cmd rules are then skipped, as in the original.
///
/// Errors: `Malformed` when the text is not UTF-8 (the original raises there, and answers
/// False); `Untrusted` when the file is not a regular file or too large; `HardLinked` (family
/// `Untrusted`) when the caller is privileged and the file has more than one link; `Io`
/// otherwise.
pub fn read_cmd_file(path: &Path) -> Result<Option<(String, Vec<String>)>> {
    read_cmd_opened(super::retire::open_strict(path), path).0
}

/// [`read_cmd_file`] of a file already opened with the strict opener (`pidfile::retire`), e.g.
/// from its directory's descriptor; `path` is its path, for messages. Also gives the uid owning
/// what was opened, when it was opened and examined (whatever it is: a planted FIFO too), so
/// that the caller can tell a file of the record's owner from one put there by another user.
pub(crate) fn read_cmd_opened(opened: std::io::Result<std::fs::File>, path: &Path) -> (CmdFileRead, Option<u32>) {
    use std::os::unix::fs::MetadataExt;
    let f = match opened {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return (Ok(None), None),
        Err(e) => return (Err(Error::io_at(path, "open", &e)), None),
    };
    let m = match f.metadata() {
        Ok(m) => m,
        Err(e) => return (Err(Error::io_at(path, "fstat", &e)), None),
    };
    if let Some(why) = super::refused_links(&m) {
        // Another name for it may be a root-only file linked into the user's tree: not read.
        return (Err(Error::at(crate::ErrorKind::HardLinked, path, why)), Some(m.uid()));
    }
    (read_examined(&f, &m, path), Some(m.uid()))
}

/// What [`read_cmd_file`] gives: the text and argv, `None` when the file is missing.
pub(crate) type CmdFileRead = Result<Option<(String, Vec<String>)>>;

fn read_examined(f: &std::fs::File, m: &std::fs::Metadata, path: &Path) -> CmdFileRead {
    if !m.is_file() || m.len() > MAX_CMD_FILE {
        return Err(Error::at(crate::ErrorKind::Untrusted, path, "not a regular file of at most 1 MiB"));
    }
    // A procfs file (`--cmd-file /proc/<pid>/cmdline`-like) reports size 0 whatever it holds:
    // read_bounded then reads until end of file, and one byte more than the limit tells "too
    // large".
    let buf = super::read_bounded(f, m.len(), MAX_CMD_FILE + 1).map_err(|e| Error::io_at(path, "read", &e))?;
    if buf.len() as u64 > MAX_CMD_FILE {
        return Err(Error::at(crate::ErrorKind::Untrusted, path, "not a regular file of at most 1 MiB"));
    }
    let text = String::from_utf8(buf).map_err(|_| Error::at(crate::ErrorKind::Malformed, path, "not UTF-8"))?;
    let argv = recorded_argv(&text);
    Ok(Some((text, argv)))
}

/// Python's `str.isspace()`: Unicode White_Space plus the four separators `\x1c`–`\x1f`.
/// This is the set `str.strip()` removes.
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// A line boundary of Python's `str.splitlines()`.
fn py_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The recorded argv of a command file's text (see [`read_cmd_file`]); empty when none.
pub fn recorded_argv(text: &str) -> Vec<String> {
    // Cut the text into commands at line breaks outside quotes (shlex's quoting rules).
    let mut commands: Vec<&str> = Vec::new();
    let (mut start, mut quote, mut escaped) = (0usize, None::<char>, false);
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match quote {
            Some('\'') => {
                if c == '\'' {
                    quote = None;
                }
            }
            Some(_) => match c {
                '"' => quote = None,
                '\\' => escaped = true,
                _ => {}
            },
            None => match c {
                '\'' | '"' => quote = Some(c),
                '\\' => escaped = true,
                c if py_line_break(c) => {
                    commands.push(&text[start..i]);
                    start = i + c.len_utf8();
                }
                _ => {}
            },
        }
    }
    if quote.is_some() || escaped {
        // Unbalanced somewhere: the original's rule, the last non-blank line alone.
        let line = text.split(py_line_break).rev().map(|l| l.trim_matches(py_isspace)).find(|l| !l.is_empty());
        return line.and_then(parse_cmd_line).unwrap_or_default();
    }
    commands.push(&text[start..]);
    commands
        .iter()
        .rev()
        .map(|c| c.trim_matches(py_isspace))
        .find(|c| !c.is_empty())
        .and_then(parse_cmd_line)
        .unwrap_or_default()
}

/// Split one command line as Python's `shlex.split(line)` does (POSIX mode, no comments);
/// `None` when it holds no word or Python would raise (an unclosed quote, a trailing `\\`).
///
/// The rules, from CPython's `shlex.read_token`:
/// - words are separated by runs of space, tab, CR and LF; `#` is an ordinary character;
/// - outside quotes, `\\` takes the next character literally (whatever it is);
/// - inside `'…'` every character is literal;
/// - inside `"…"`, `\\` escapes only `"` and `\\` (before anything else it is kept, so `"\\$"`
///   is `\\$`, unlike a POSIX shell);
/// - quotes join with adjacent text (`a'b'"c"` is `abc`), and `''` is an empty word.
///
/// [`join`] output splits back to the argv it joined, for any argv.
pub fn parse_cmd_line(line: &str) -> Option<Vec<String>> {
    let words = shlex_split(line)?;
    (!words.is_empty()).then_some(words)
}

/// Python's `shlex.split(s)`: `None` where Python raises `ValueError`.
fn shlex_split(s: &str) -> Option<Vec<String>> {
    #[derive(PartialEq)]
    enum St {
        Between,
        Word,
        Single,
        Double,
    }
    let mut words = Vec::new();
    let mut word = String::new();
    let mut st = St::Between;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match st {
            St::Between | St::Word => match c {
                ' ' | '\t' | '\r' | '\n' => {
                    if st == St::Word {
                        words.push(std::mem::take(&mut word));
                    }
                    st = St::Between;
                }
                // A quote starts (or continues) a word, even an empty one: `''` is a word.
                '\'' => st = St::Single,
                '"' => st = St::Double,
                '\\' => {
                    word.push(chars.next()?);
                    st = St::Word;
                }
                _ => {
                    word.push(c);
                    st = St::Word;
                }
            },
            St::Single => match c {
                '\'' => st = St::Word,
                _ => word.push(c),
            },
            St::Double => match c {
                '"' => st = St::Word,
                '\\' => {
                    let n = chars.next()?;
                    if n != '"' && n != '\\' {
                        word.push('\\');
                    }
                    word.push(n);
                }
                _ => word.push(c),
            },
        }
    }
    match st {
        St::Single | St::Double => None,
        St::Word => {
            words.push(word);
            Some(words)
        }
        St::Between => Some(words),
    }
}

/// Where the recorded command of a hook comes from: the `.sh` file of abx-dl's releases up to
/// 1.12, or the argv list its current release keeps in memory
/// (`validate_pid_file(pid_file, expected_argv)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordedCommand<'a> {
    /// A command file written by [`write_cmd_file`]; a missing file records nothing.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_python() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("abc-1.2/x"), "abc-1.2/x");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\"'\"'s'");
        assert_eq!(join(&["node", "/x/hook.js", "--url=https://e.com/?a=1&b"]), "node /x/hook.js '--url=https://e.com/?a=1&b'");
        let line = join(&["a b", "it's", "", "$HOME"]);
        assert_eq!(parse_cmd_line(&line).unwrap(), vec!["a b", "it's", "", "$HOME"]);
    }

    #[test]
    fn splits_like_python() {
        // Each expectation is what CPython 3.11's `shlex.split` returns (None: it raises).
        let cases: &[(&str, Option<&[&str]>)] = &[
            ("a #b", Some(&["a", "#b"])),
            ("#x y", Some(&["#x", "y"])),
            ("a\rb", Some(&["a", "b"])),
            ("\"\\$x\"", Some(&["\\$x"])),
            ("\"a\\b\"", Some(&["a\\b"])),
            ("\"a\\\"b\\\\\"", Some(&["a\"b\\"])),
            ("a\\ b", Some(&["a b"])),
            ("x \"\" ''", Some(&["x", "", ""])),
            ("a'b'\"c\"d", Some(&["abcd"])),
            ("'\\'", Some(&["\\"])),
            ("a\\", None),
            ("'a", None),
            ("\"a\\\"", None),
            ("", None),
            (" \t ", None),
        ];
        for (line, want) in cases {
            let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(parse_cmd_line(line), want, "{line:?}");
        }
    }

    fn live(argv: &[&str], name: &str) -> LiveCommand {
        LiveCommand { argv: argv.iter().map(|s| s.to_string()).collect(), name: name.into() }
    }

    fn rec(v: &[&str]) -> Recorded {
        let argv: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        Recorded { text: argv.join(" "), argv }
    }

    #[test]
    fn command_rules() {
        assert!(command_matches(&rec(&["python3.11", "x.py"]), &live(&["python", "x.py"], "python")));
        assert!(!command_matches(&rec(&["python3", "x.py"]), &live(&["python", "y.py"], "python")));
        assert!(command_matches(&rec(&["node22"]), &live(&["node", "a"], "node")));
        assert!(command_matches(&rec(&["NodeJS"]), &live(&["node"], "node")));
        assert!(!command_matches(&rec(&["bash"]), &live(&["sleep"], "sleep")));
        assert!(!command_matches(&rec(&["bash5"]), &live(&["bash"], "bash")));
        assert!(command_matches(&rec(&["/bin/sh", "-c", "x"]), &live(&["/bin/sh", "-c", "x"], "sh")));
        assert!(command_matches(&rec(&["/abs/hook.js"]), &live(&["node", "/abs/hook.js"], "node")));
        // A relative live argv[0] needs the shebang form when the record is absolute.
        assert!(!command_matches(&rec(&["/bin/sh"]), &live(&["sh", "-c"], "sh")));
        // No chrome rule, in the record or the URL.
        let url = "--url=https://www.google.com/chrome/";
        assert!(command_matches(
            &rec(&["/x/plugins/chrome/on_Snapshot__00_chrome_launch.daemon.bg.js", url]),
            &live(&["node", "/x/plugins/chrome/on_Snapshot__00_chrome_launch.daemon.bg.js", url], "node")
        ));
        assert!(command_matches(&rec(&["node", "chrome"]), &live(&["node", "chrome"], "node")));
        assert!(!command_matches(
            &Recorded { text: "x --remote-debugging-port=1".into(), argv: vec!["x".into()] },
            &live(&["x"], "x")
        ));
        assert!(command_matches(&rec(&["x", "--remote-debugging-port=1"]), &live(&["x", "--remote-debugging-port=1"], "x")));
        // An empty live argv compares the process name.
        assert!(command_matches(&rec(&["x"]), &live(&[], "x")));
        assert!(!command_matches(&rec(&["y"]), &live(&[], "x")));
        assert!(!command_matches(&rec(&["/x"]), &live(&[], "x")));
        // Nothing recorded: nothing to compare; an empty argv[0] is not compared.
        assert!(command_matches(&rec(&[]), &live(&["x"], "x")));
        assert!(command_matches(&rec(&["", "a"]), &live(&["x", "a"], "x")));
        // argv[1] is compared only when both sides have one.
        assert!(command_matches(&rec(&["sleep", "1"]), &live(&["sleep"], "sleep")));
    }

    #[test]
    fn reads_back_what_it_writes() {
        for argv in [vec!["node", "/x/hook.js", "--url=a\nb"], vec!["a\n\nb", "it's\n'"], vec!["x", "b\n'c'"]] {
            let text = format!("#!/bin/bash\n{}\n", join(&argv));
            assert_eq!(recorded_argv(&text), argv, "{text:?}");
        }
        // An empty argv's file: the shebang line is its last non-blank line, as in the original.
        assert_eq!(recorded_argv("#!/bin/bash\n\n"), vec!["#!/bin/bash"]);
        assert_eq!(recorded_argv(""), Vec::<String>::new());
        assert_eq!(recorded_argv("#!/bin/bash\ntail 1\nsleep 1000\n\n  \n"), vec!["sleep", "1000"]);
        // Unbalanced somewhere: the last non-blank line, as the original reads it.
        assert_eq!(recorded_argv("#!/bin/bash\n# it's\nsleep 1000\u{a0}\n"), vec!["sleep", "1000"]);
        assert_eq!(recorded_argv("#!/bin/bash\nsleep '1000\n"), Vec::<String>::new());
    }

    #[test]
    fn realpath_like_python() {
        let d = std::env::temp_dir().join(format!("pg-realpath-{}", std::process::id()));
        fs::create_dir_all(d.join("real")).unwrap();
        let _ = std::os::unix::fs::symlink(d.join("real"), d.join("link"));
        let ds = d.to_str().unwrap();
        assert_eq!(realpath(&format!("{ds}/link/missing/../f")), format!("{}/real/f", fs::canonicalize(&d).unwrap().display()));
        assert_eq!(realpath("/"), "/");
        assert_eq!(realpath("/.."), "/");
        assert_eq!(realpath("/nonexistent-pg/a/../b"), "/nonexistent-pg/b");
        fs::remove_dir_all(&d).unwrap();
    }
}
