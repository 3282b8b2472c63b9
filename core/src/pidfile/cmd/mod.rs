//! The hook's recorded command, as abx-dl writes it: the `.sh` file — `#!/bin/bash`, then the argv joined
//! as Python's `shlex.join` joins it — or the argv itself, and the check of a live process's
//! argv against it. One job per file: `shlex.rs` (Python's text rules), `file.rs` (the `.sh`
//! file), `matching.rs` (the recorded command and abx-dl's match rules).

mod file;
mod matching;
mod shlex;

pub use file::{read_cmd_file, write_cmd_file};
pub(crate) use file::read_cmd_opened;
pub use matching::{command_matches, realpath, LiveCommand, Recorded, RecordedCommand};
pub use shlex::{join, parse_cmd_line, py_isspace, quote, recorded_argv};

#[cfg(test)]
mod tests {
    use std::fs;

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
