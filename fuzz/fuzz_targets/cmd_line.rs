//! Cmd-file lines: no panic; an accepted line has words and re-joins to a line that splits to
//! the same words. Inputs with a NUL are also read as an argv (split at NUL): join → split must
//! give it back.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pidguard::pidfile::cmd::{join, parse_cmd_line, quote};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Some(words) = parse_cmd_line(s) {
        assert!(!words.is_empty());
        assert_eq!(parse_cmd_line(&join(&words)).as_ref(), Some(&words), "{s:?}");
    }
    if s.contains('\0') {
        let argv: Vec<&str> = s.split('\0').collect();
        let line = join(&argv);
        let back = parse_cmd_line(&line).expect("a joined argv splits");
        assert_eq!(back, argv, "{line:?}");
    } else {
        assert_eq!(parse_cmd_line(&quote(s)), Some(vec![s.to_string()]));
    }
});
