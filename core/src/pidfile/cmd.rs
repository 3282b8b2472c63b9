//! The hook's `.sh` command file (seed 000): `#!/bin/bash`, then the argv joined as Python's
//! `shlex.join` joins it, and the check of a live process's argv against it (SPEC §3.1).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

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

/// Write the command file: `#!/bin/bash\n` + [`join`]`(argv)` + `\n`, mode 0755 whatever the
/// umask, through a temporary file and `rename`, so a symlink at `path` is refused and nothing
/// it points to is touched.
///
/// Errors: `InvalidArgument` for an empty argv or an argument holding a NUL or newline (it could
/// not be read back as one line); `Untrusted` when `path` is a symlink, FIFO or directory;
/// `Io`/`PermissionDenied`/`NotFound` from the file system.
pub fn write_cmd_file<S: AsRef<str>>(path: &Path, argv: &[S]) -> Result<()> {
    if argv.is_empty() {
        return Err(Error::invalid(format!("{}: empty argv", path.display())));
    }
    if argv.iter().any(|a| a.as_ref().contains(['\0', '\n', '\r'])) {
        return Err(Error::invalid(format!("{}: an argument holds a NUL or line break", path.display())));
    }
    let text = format!("#!/bin/bash\n{}\n", join(argv));
    atomic::replace_file(path, text.as_bytes(), 0o755, |_| Ok(()))
}

/// The whole text of a command file and the argv of its last non-blank line, split as
/// `shlex.split` splits it. `Ok(None)` when the file is missing.
///
/// Errors: `Malformed` when the line cannot be split (unbalanced quotes) or is not UTF-8;
/// `Untrusted` when the file is not a regular file or too large; `Io` otherwise.
pub fn read_cmd_file(path: &Path) -> Result<Option<(String, Vec<String>)>> {
    let fd = match crate::sys::open_raw(path, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(Error::io_at(path, "open", &e)),
    };
    let mut f = fs::File::from(fd);
    let m = f.metadata().map_err(|e| Error::io_at(path, "fstat", &e))?;
    if !m.is_file() || m.len() > MAX_CMD_FILE {
        return Err(Error::at(crate::ErrorKind::Untrusted, path, "not a regular file of at most 1 MiB"));
    }
    let mut buf = Vec::new();
    f.by_ref().take(MAX_CMD_FILE).read_to_end(&mut buf).map_err(|e| Error::io_at(path, "read", &e))?;
    let text = String::from_utf8(buf).map_err(|_| Error::at(crate::ErrorKind::Malformed, path, "not UTF-8"))?;
    let line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let argv = parse_cmd_line(line).ok_or_else(|| Error::at(crate::ErrorKind::Malformed, path, "last line is not a shell command"))?;
    Ok(Some((text, argv)))
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

/// `python3.11` → `python`, `node22` → `node`: strip a trailing version from a basename.
fn fold_version(name: &str) -> &str {
    let t = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if t.is_empty() { name } else { t }
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

fn canonical(p: &str, cwd: Option<&Path>) -> Option<PathBuf> {
    let path = Path::new(p);
    if path.is_absolute() {
        fs::canonicalize(path).ok()
    } else if p.contains('/') {
        cwd.and_then(|c| fs::canonicalize(c.join(path)).ok())
    } else {
        None
    }
}

fn same_path(recorded: &str, live: &str, cwd: Option<&Path>) -> bool {
    if recorded == live {
        return true;
    }
    match (canonical(recorded, None), canonical(live, cwd)) {
        (Some(a), Some(b)) => a == b,
        (None, Some(b)) => Path::new(recorded) == b,
        _ => false,
    }
}

/// The live side of the command check.
#[derive(Clone, Debug, Default)]
pub struct LiveCommand {
    /// `/proc/<pid>/cmdline`.
    pub argv: Vec<String>,
    /// The process name (`comm`).
    pub name: String,
    /// `/proc/<pid>/exe`, when readable.
    pub exe: Option<PathBuf>,
    /// `/proc/<pid>/cwd`, when readable (to resolve a relative `argv[0]`).
    pub cwd: Option<PathBuf>,
}

/// Whether a live command matches the recorded one (SPEC §3.1, the seed's rules):
/// - an absolute recorded `argv[0]` equals the real path of the live `argv[0]`, or the live `argv[1]`
///   (a script started through its interpreter: `node /abs/hook.js`);
/// - otherwise basenames match, with a trailing version folded (`python3.11` → `python`);
/// - the recorded `argv[1]`, if any, equals the live `argv[1]` unless the interpreter case applied;
/// - a script text mentioning `chrome`/`chromium` needs a live name containing one of them;
/// - a script text with `--remote-debugging-port` needs it in the live argv too.
pub fn command_matches(script_text: &str, recorded: &[String], live: &LiveCommand) -> bool {
    let (Some(rec0), Some(live0)) = (recorded.first(), live.argv.first()) else {
        return false;
    };
    let cwd = live.cwd.as_deref();
    let mut interpreter = false;
    let argv0_ok = if rec0.starts_with('/') {
        if same_path(rec0, live0, cwd) || live.exe.as_deref().is_some_and(|e| canonical(rec0, None).as_deref() == Some(e)) {
            true
        } else if live.argv.get(1).is_some_and(|l1| same_path(rec0, l1, cwd)) {
            interpreter = true;
            true
        } else {
            false
        }
    } else {
        fold_version(basename(rec0)) == fold_version(basename(live0))
    };
    if !argv0_ok {
        return false;
    }
    if !interpreter {
        if let Some(r1) = recorded.get(1) {
            if live.argv.get(1) != Some(r1) {
                return false;
            }
        }
    }
    let lower = script_text.to_ascii_lowercase();
    if lower.contains("chrome") || lower.contains("chromium") {
        let names = [live.name.to_ascii_lowercase(), basename(live0).to_ascii_lowercase()];
        if !names.iter().any(|n| n.contains("chrome") || n.contains("chromium")) {
            return false;
        }
    }
    if script_text.contains("--remote-debugging-port") && !live.argv.iter().any(|a| a.starts_with("--remote-debugging-port")) {
        return false;
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
        LiveCommand { argv: argv.iter().map(|s| s.to_string()).collect(), name: name.into(), exe: None, cwd: None }
    }

    #[test]
    fn command_rules() {
        let rec = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(command_matches("", &rec(&["python3.11", "x.py"]), &live(&["python", "x.py"], "python")));
        assert!(!command_matches("", &rec(&["python3", "x.py"]), &live(&["python", "y.py"], "python")));
        assert!(command_matches("", &rec(&["node22"]), &live(&["node", "a"], "node")));
        assert!(!command_matches("", &rec(&["bash"]), &live(&["sleep"], "sleep")));
        assert!(command_matches("", &rec(&["/bin/sh", "-c", "x"]), &live(&["/bin/sh", "-c", "x"], "sh")));
        assert!(command_matches("", &rec(&["/abs/hook.js"]), &live(&["node", "/abs/hook.js"], "node")));
        assert!(!command_matches("chrome", &rec(&["node"]), &live(&["node"], "node")));
        assert!(command_matches("chromium", &rec(&["chromium"]), &live(&["chromium"], "chromium")));
        assert!(!command_matches("x --remote-debugging-port=1", &rec(&["x"]), &live(&["x"], "x")));
        assert!(!command_matches("", &rec(&["x"]), &live(&[], "x")));
    }
}
