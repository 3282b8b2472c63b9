//! The one text form of a file name in every report and record: plain data, below every
//! operation that names files (cleanup's listings and index records) and the report faces.

/// The one text form of a file name or path in every report (JSON, Python and Node strings, the
/// index's records): lossless, so that two different names never read the same.
///
/// A name that is valid UTF-8 and holds no backslash is itself. Otherwise each backslash is
/// written `\\` (two backslashes) and each byte that is not part of valid UTF-8 is written
/// `\xNN` (two lowercase hex digits): the name `a<0xff>b` reads `a\xffb`, the name `a\xffb`
/// (with a real backslash) reads `a\\xffb`. To get the bytes back: if the text holds no
/// backslash, it is the name; else replace `\\` by a backslash and `\xNN` by the byte NN,
/// left to right. Control characters are kept as they are here (JSON escapes them); human
/// output escapes them on top with [`printable`](crate::report::printable).
pub fn path_text(name: &std::ffi::OsStr) -> std::borrow::Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_bytes();
    if let Ok(s) = std::str::from_utf8(bytes) {
        if !s.contains('\\') {
            return std::borrow::Cow::Borrowed(s);
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    std::borrow::Cow::Owned(out)
}
