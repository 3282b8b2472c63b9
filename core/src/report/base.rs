//! What every report shares: its paths ([`ReportPath`]), the escaping of human output
//! ([`printable`]), times as seconds and slugs. A leaf of `report/`: the views stand on it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Serialize, Serializer};

use crate::pathtext::path_text;

/// `text` (a name, a path, a message or a note that came from files) as human output shows it:
/// every control character — C0 (`\0`–`\x1f`), DEL and C1 (U+0080–U+009F) — escaped, so that
/// no escape sequence reaches the terminal and a newline in a name cannot forge a report line.
/// `\n`, `\r` and `\t` are written so; ESC is `\x1b`, and the others `\xNN` (C0, DEL) or
/// `\u{NN}` (C1). Everything else is unchanged (a name already in the [`path_text`] form stays
/// lossless: its backslashes are doubled there).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let is_control = |c: char| c.is_control();
    if !text.chars().any(is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A file name or path as human output shows it: its lossless [`path_text`] form (bytes that
/// are not UTF-8 as `\xNN`, backslashes doubled), then [`printable`] (control characters
/// escaped). The one form of a path in every human line: the CLI's reports, and the log lines
/// of the Python and Node shells (`pidguard.printable_path`, `printablePath`), which must not
/// escape by themselves.
pub fn printable_path(name: &std::ffi::OsStr) -> String {
    printable(&path_text(name)).into_owned()
}

/// A path in a report. Rust sees a [`Path`] (it derefs to one) and C its bytes; Python gets it
/// as pyo3 converts a `PathBuf` (a `pathlib.Path`, lossless: bytes that are not UTF-8 are
/// surrogate-escaped, `os.fsencode` gives them back); JSON and JavaScript get its
/// [`path_text`] form, lossless too (a path given as a Node `Buffer` may hold any byte but
/// NUL, and napi's own `PathBuf` conversion throws on those bytes, which would lose the whole
/// report).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ReportPath(pub PathBuf);

impl std::ops::Deref for ReportPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ReportPath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl From<PathBuf> for ReportPath {
    fn from(p: PathBuf) -> Self {
        ReportPath(p)
    }
}

impl From<&Path> for ReportPath {
    fn from(p: &Path) -> Self {
        ReportPath(p.to_path_buf())
    }
}

impl From<&str> for ReportPath {
    fn from(p: &str) -> Self {
        ReportPath(p.into())
    }
}

impl Serialize for ReportPath {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&path_text(self.0.as_os_str()))
    }
}

/// Seconds since the epoch of a system time (negative before 1970).
pub(crate) fn epoch_secs(t: SystemTime) -> f64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

pub(super) fn slug(s: &impl ToString) -> String {
    s.to_string()
}
