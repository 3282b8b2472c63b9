//! Property tests of the text parsers: the abx-dl pidfile content, start tokens and
//! cmd-file lines. Each asserts that arbitrary input never panics and that the documented
//! accept/reject rule holds, plus the round trips the formats promise. (The guard JSON has its
//! own in `guard.rs`; schedules and `/proc/<pid>/stat` lines have theirs elsewhere.)
//! The coverage-guided fuzz targets for the same parsers are in `fuzz/` (`scripts/fuzz.sh`).

use std::io::Write;
use std::process::{Command, Stdio};

use pidguard::pidfile::cmd::{join, parse_cmd_line, quote};
use pidguard::pidfile::mtime::parse_pid_content;
use pidguard::sys::procfs::pid_max;
use pidguard::{check_pid_file, CheckReason, StartToken};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

/// The rule of `parse_pid_content`'s docstring, written out independently: ASCII whitespace
/// (as `u8::is_ascii_whitespace` has it) around one non-empty run of ASCII digits whose value
/// (leading zeros allowed) is in `1..=pid_max`.
fn pid_rule(content: &[u8]) -> Option<i32> {
    // Python's `int(text.strip())` on the UTF-8 text, restricted to ASCII digits: the characters
    // `str.strip()` removes, as CPython 3.12 lists them (`[c for c in map(chr, range(0x110000))
    // if c.isspace()]`).
    const PY_SPACE: &[u32] = &[
        0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
        0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
    ];
    let text = std::str::from_utf8(content).ok()?;
    let t = text.trim_matches(|c: char| PY_SPACE.contains(&(c as u32))).as_bytes();
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let digits: Vec<u8> = t.iter().copied().skip_while(|&b| b == b'0').collect();
    if digits.len() > 10 {
        return None;
    }
    let v: u64 = if digits.is_empty() { 0 } else { std::str::from_utf8(&digits).unwrap().parse().unwrap() };
    (1..=pid_max() as u64).contains(&v).then_some(v as i32)
}

fn ascii_ws() -> impl Strategy<Value = String> {
    "[ \t\n\r\x0b\x0c\x1c-\x1f\u{85}\u{a0}\u{3000}\u{2028}]{0,4}"
}

/// Bytes biased towards the interesting ones for pidfile content.
fn pidish_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => b'0'..=b'9',
        2 => Just(b' '),
        1 => prop::sample::select(b"\t\n\r\x0b\x0c\0+-_.xe".to_vec()),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..24)
}

/// A start-token text field: printable ASCII without `:`.
fn token_field() -> impl Strategy<Value = String> {
    "[!-9;-~]{1,40}"
}

fn start_token() -> impl Strategy<Value = StartToken> {
    (token_field(), token_field(), any::<u64>(), any::<u64>(), any::<Option<u64>>()).prop_map(
        |(machine_id, boot_id, pidns_ino, start_ticks, pidfs_ino)| StartToken {
            os: pidguard::TokenOs::Linux,
            machine_id,
            boot_id,
            pidns_ino,
            start_ticks,
            pidfs_ino,
        },
    )
}

/// The token rule of `StartToken::from_str`'s docstring, written out independently.
fn token_rule(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    let text = |f: &str| !f.is_empty() && f.bytes().all(|b| (0x21..=0x7e).contains(&b));
    let num = |f: &str| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) && f.parse::<u64>().is_ok();
    let linux = (parts.len() == 5 || parts.len() == 6)
        && parts[0] == "linux1"
        && text(parts[1])
        && text(parts[2])
        && num(parts[3])
        && num(parts[4])
        && (parts.len() == 5 || parts[5] == "-" || num(parts[5]));
    // macOS: host, boot session, start µs, unique id (or `-`); FreeBSD: host, boot id, jail, start.
    let macos = parts.len() == 5 && parts[0] == "macos1" && text(parts[1]) && text(parts[2]) && num(parts[3]) && (parts[4] == "-" || num(parts[4]));
    let freebsd = parts.len() == 5 && parts[0] == "freebsd1" && text(parts[1]) && text(parts[2]) && num(parts[3]) && num(parts[4]);
    linux || macos || freebsd
}

/// Text that looks like a token often enough to reach every branch of the parser.
fn tokenish() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        4 => "[0-9]{1,3}",
        2 => "[a-f0-9-]{0,6}",
        1 => Just("-".to_string()),
        1 => Just(String::new()),
        1 => Just("18446744073709551616".to_string()), // u64::MAX + 1
        1 => "0{5,25}[1-9][0-9]{0,3}", // leading zeros: still decimal
        1 => "\\PC{0,3}",
        1 => "[\\x00-\\x20\\x7f]{1,2}",
    ];
    (prop::sample::select(vec!["linux1", "linux1", "linux1", "linux2", "", "LINUX1", "macos1", "freebsd1", "macos2"]), prop::collection::vec(field, 0..8))
        .prop_map(|(p, fields)| std::iter::once(p.to_string()).chain(fields).collect::<Vec<_>>().join(":"))
}

/// Words rich in the characters that shell quoting cares about.
fn shellish_word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9_@%+=:,./-]{0,8}",
        3 => "[ a'\"\\\\#$`\t\r\n*?~!;&|<>(){}\\[\\]]{0,8}",
        2 => any::<String>(),
    ]
}

proptest! {
    // Default case count (256): these run in the normal suite and must stay fast.

    /// Arbitrary bytes: no panic, and exactly the documented rule accepts.
    #[test]
    fn pid_content_follows_the_rule(b in pidish_bytes()) {
        prop_assert_eq!(parse_pid_content(&b), pid_rule(&b));
    }

    /// Fully arbitrary bytes too (mostly refused).
    #[test]
    fn pid_content_any_bytes(b in prop::collection::vec(any::<u8>(), 0..64)) {
        prop_assert_eq!(parse_pid_content(&b), pid_rule(&b));
    }

    /// Every pid in range, padded with whitespace `str.strip()` removes and any number of leading zeros,
    /// is accepted with its value.
    #[test]
    fn pid_content_accepts_padded_pids(frac in 0.0f64..1.0, zeros in 0usize..15, pre in ascii_ws(), post in ascii_ws()) {
        let pid = 1 + ((pid_max() - 1) as f64 * frac) as i32;
        let text = format!("{pre}{}{pid}{post}", "0".repeat(zeros));
        prop_assert_eq!(parse_pid_content(text.as_bytes()), Some(pid));
    }

    /// A valid pid with a sign, underscore, second number, NUL or a control character that
    /// `str.strip()` keeps in it, or a value above pid_max, is refused.
    #[test]
    fn pid_content_refuses_near_misses(pid in 1..=9_999i32, junk in prop::sample::select(vec!["+", "-", "_", "\0", " 1 ", "\x01", "\x1b", "\u{200b}", ".0", "e0", "٣"]), front in any::<bool>(), over in 1i64..1_000_000_000_000) {
        let text = if front { format!("{junk}{pid}") } else { format!("{pid}{junk}") };
        prop_assert_eq!(parse_pid_content(text.as_bytes()), None, "{:?}", text);
        let above = pid_max() as i64 + over;
        prop_assert_eq!(parse_pid_content(above.to_string().as_bytes()), None);
    }

    /// Display → FromStr gives the same token, in exactly the documented shape.
    #[test]
    fn token_round_trip(t in start_token()) {
        let s = t.to_string();
        let tail = t.pidfs_ino.map_or("-".to_string(), |i| i.to_string());
        prop_assert_eq!(&s, &format!("linux1:{}:{}:{}:{}:{}", t.machine_id, t.boot_id, t.pidns_ino, t.start_ticks, tail));
        prop_assert_eq!(s.parse::<StartToken>().unwrap(), t.clone());
        // A reader accepts the pidfs field absent altogether.
        if t.pidfs_ino.is_none() {
            let short = s.strip_suffix(":-").unwrap();
            prop_assert_eq!(short.parse::<StartToken>().unwrap(), t);
        }
    }

    /// Numbers written with leading zeros (any count) are still decimal: same token.
    #[test]
    fn token_numbers_with_leading_zeros(t in start_token(), zeros in prop::collection::vec(0usize..30, 3)) {
        let pad = |n: u64, z: usize| format!("{}{n}", "0".repeat(z));
        let tail = t.pidfs_ino.map_or("-".to_string(), |i| pad(i, zeros[2]));
        let s = format!("linux1:{}:{}:{}:{}:{tail}", t.machine_id, t.boot_id, pad(t.pidns_ino, zeros[0]), pad(t.start_ticks, zeros[1]));
        prop_assert_eq!(s.parse::<StartToken>().unwrap(), t);
    }

    /// Arbitrary and near-token text: no panic, accepted exactly by the documented rule, and
    /// whatever is accepted re-serialises to a text that parses to the same token.
    #[test]
    fn token_parse_follows_the_rule(s in prop_oneof![tokenish(), any::<String>()]) {
        let got = s.parse::<StartToken>();
        prop_assert_eq!(got.is_ok(), token_rule(&s), "{:?}", s);
        match got {
            Ok(t) => prop_assert_eq!(t.to_string().parse::<StartToken>().unwrap(), t),
            Err(e) => prop_assert_eq!(e.kind(), pidguard::ErrorKind::InvalidArgument),
        }
    }

    /// One changed byte in a token's numeric field that makes it non-decimal is refused.
    #[test]
    fn token_refuses_bad_numbers(t in start_token(), field in 3usize..6, junk in "[^0-9:]") {
        let mut parts: Vec<String> = t.to_string().split(':').map(str::to_string).collect();
        parts[field].push_str(&junk);
        let s = parts.join(":");
        prop_assert!(s.parse::<StartToken>().is_err(), "{:?}", s);
    }

    /// `quote` is Python's `shlex.quote`: safe words unchanged, `''` for empty, otherwise one
    /// single-quoted word; and it always splits back to exactly the one argument.
    #[test]
    fn quote_follows_python(a in shellish_word()) {
        let q = quote(&a);
        let safe = !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
        if safe {
            prop_assert_eq!(&q, &a);
        } else {
            prop_assert_eq!(q.clone(), format!("'{}'", a.replace('\'', "'\"'\"'")));
        }
        prop_assert_eq!(parse_cmd_line(&q), Some(vec![a]));
    }

    /// join → split gives back any non-empty argv, and the joined line is one line unless an
    /// argument itself holds a line break.
    #[test]
    fn join_split_round_trip(argv in prop::collection::vec(shellish_word(), 1..6)) {
        let line = join(&argv);
        prop_assert_eq!(parse_cmd_line(&line), Some(argv.clone()));
        if !argv.iter().any(|a| a.contains('\n')) {
            prop_assert!(!line.contains('\n'));
        }
    }

    /// Arbitrary lines never panic; an accepted line has at least one word, and re-joining
    /// the words gives a line that splits to the same words.
    #[test]
    fn cmd_line_any_text(line in prop_oneof![
        "[ a'\"\\\\#$`\t\r]{0,16}",
        any::<String>(),
    ]) {
        if let Some(words) = parse_cmd_line(&line) {
            prop_assert!(!words.is_empty());
            prop_assert_eq!(parse_cmd_line(&join(&words)), Some(words));
        }
    }
}

/// `parse_cmd_line` against CPython's own `shlex.split`, on 300 generated lines in one
/// `python3` run. Skipped (with the reason printed) where no python3 is installed.
#[test]
fn cmd_line_matches_python_shlex() {
    let mut runner = TestRunner::new(Config { cases: 300, ..Config::default() });
    let strategy = prop_oneof![
        4 => "[ ab'\"\\\\#$`\t\r]{0,14}",
        1 => prop::collection::vec(shellish_word(), 1..4).prop_map(|v| join(&v)),
    ];
    let lines: Vec<String> =
        (0..300).map(|_| strategy.new_tree(&mut runner).unwrap().current()).filter(|l| !l.contains('\0')).collect();
    let script = r#"
import json, shlex, sys
out = []
for line in json.load(sys.stdin):
    try:
        out.append(shlex.split(line))
    except ValueError:
        out.append(None)
json.dump(out, sys.stdout)
"#;
    let child = Command::new("python3").arg("-c").arg(script).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
    let Ok(mut child) = child else {
        eprintln!("skipped: no python3 to compare shlex.split with");
        return;
    };
    child.stdin.take().unwrap().write_all(serde_json::to_string(&lines).unwrap().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python3 failed");
    let python: Vec<Option<Vec<String>>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(python.len(), lines.len());
    for (line, want) in lines.iter().zip(python) {
        // parse_cmd_line refuses a line without words, where Python returns [].
        let want = want.filter(|w| !w.is_empty());
        assert_eq!(parse_cmd_line(line), want, "line {line:?}");
    }
}

/// Content longer than the 4096 bytes read is malformed, not truncated to a prefix that would
/// parse (10 MB of digits); the same pid with 100 leading zeros is read as the pid.
#[test]
fn long_pidfile_content_is_malformed() {
    let dir = std::env::temp_dir().join(format!("pidguard-parsers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.pid");
    let me = std::process::id();
    std::fs::write(&path, format!("{}{me}", "0".repeat(5000))).unwrap();
    let c = check_pid_file(&path, None, 5.0);
    assert_eq!((c.reason, c.pid), (CheckReason::Malformed, None));
    std::fs::write(&path, format!("{}{me}\n", "0".repeat(100))).unwrap();
    let c = check_pid_file(&path, None, 5.0);
    assert_eq!(c.pid, Some(me as i32));
    std::fs::remove_dir_all(&dir).unwrap();
}
