//! JSON written byte by byte, as serde_json writes it (compact): the index records of a cleanup
//! (`hooks::records`) and the CLI's report of one (`report::hooks::write_hook_json`), thousands
//! of lines where serde's machinery and the allocations of a view were a measurable part of the
//! cost. A leaf: it imports nothing of the crate. Tests compare its bytes with serde_json's.

/// The JSON of a string as serde_json writes it (compact): `"`, the bytes with `"` and `\\`
/// escaped, `\b \t \n \f \r` for those controls, `\u00xx` (lowercase hex) for the other bytes
/// below 0x20, everything else (UTF-8 included) as it is, `"`.
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        let short = match c {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0a => b'n',
            0x0c => b'f',
            0x0d => b'r',
            0..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&b[start..i]);
        start = i + 1;
        if short == b'u' {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// A list of strings as JSON.
pub(crate) fn put_strs(out: &mut Vec<u8>, list: &[String]) {
    out.push(b'[');
    for (i, s) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put_str(out, s);
    }
    out.push(b']');
}

/// An integer in decimal, as serde_json (itoa) writes it.
pub(crate) fn put_int(out: &mut Vec<u8>, n: i32) {
    let mut digits = [0u8; 11];
    let mut i = digits.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        digits[i] = b'-';
    }
    out.extend_from_slice(&digits[i..]);
}

/// `,"key":` (or `"key":` first in an object).
pub(crate) fn put_key(out: &mut Vec<u8>, key: &str) {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}
