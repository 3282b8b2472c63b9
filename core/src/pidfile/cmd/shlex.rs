//! Python's text rules that the command file follows, byte for byte: `shlex.quote`,
//! `shlex.join`, `shlex.split` (POSIX mode, no comments), `str.isspace()` and the line breaks of
//! `str.splitlines()`, and the recorded argv of a command file's text.

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

/// Python's `str.isspace()`: Unicode White_Space plus the four separators `\x1c`–`\x1f`.
/// This is the set `str.strip()` removes.
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// A line boundary of Python's `str.splitlines()`.
fn py_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The recorded argv of a command file's text (see [`read_cmd_file`](super::read_cmd_file)); empty when none.
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
