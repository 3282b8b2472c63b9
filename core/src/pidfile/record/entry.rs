//! The guard record, its one encoding, and its strict decoder.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Result};

/// Largest guard pidfile, in bytes, that [`read`](crate::guard::read) accepts and
/// [`create`](crate::guard::create) writes.
pub const MAX_BYTES: usize = 4096;

/// The JSON member that holds the pid.
pub const PID_MEMBER: &str = "pid";
/// The JSON member that holds the start token.
pub const TOKEN_MEMBER: &str = "start_token";

/// One guard pidfile record: who holds the guard (pid and start token) and the caller's own
/// string fields, in the caller's order.
///
/// The wire form ([`encode`]) is one JSON object — `pid`, then `start_token`, then each field in
/// order — and a newline. Every member is always written, so a record re-encoded from the same
/// values is byte-identical to the file it wrote: [`remove`](crate::guard::remove) compares bytes.
///
/// A field may carry anything the caller needs to find the holder again (a session id, a
/// socket path, [`token_sha256`] of a secret); never a secret itself, since the file is a
/// plain file on disk.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The holder's pid (positive).
    pub pid: i32,
    /// The holder's start token: normally a [`crate::StartToken`] in its string form, which
    /// [`check`](crate::guard::check) parses and judges. [`read`](crate::guard::read) only requires it to be
    /// non-empty.
    pub start_token: String,
    /// The caller's own members, `(name, value)`, in wire order. Names are unique, non-empty,
    /// and neither `pid` nor `start_token`.
    pub fields: Vec<(String, String)>,
}

impl Entry {
    /// A record for `pid` with `start_token` and no fields.
    pub fn new(pid: i32, start_token: impl Into<String>) -> Entry {
        Entry { pid, start_token: start_token.into(), fields: Vec::new() }
    }

    /// A record naming the calling process: its pid and its live start token.
    ///
    /// Errors: those of [`crate::start_token`] (procfs unreadable).
    pub fn current() -> Result<Entry> {
        let pid = std::process::id() as i32;
        Ok(Entry::new(pid, crate::start_token(pid)?.to_string()))
    }

    /// This record with one more field `name` = `value` appended (builder style).
    pub fn with_field(mut self, name: impl Into<String>, value: impl Into<String>) -> Entry {
        self.fields.push((name.into(), value.into()));
        self
    }

    /// The value of field `name`, if present.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Check that this record can be written and read back: pid positive, token non-empty,
    /// field names non-empty, unique and not `pid`/`start_token`, encoding at most
    /// [`MAX_BYTES`].
    ///
    /// Errors: `InvalidArgument` naming the broken rule.
    pub fn validate(&self) -> Result<()> {
        if self.pid <= 0 {
            return Err(Error::invalid(format!("guard entry: pid {} is not positive", self.pid)));
        }
        if self.start_token.is_empty() {
            return Err(Error::invalid("guard entry: the start token is empty"));
        }
        for (i, (name, _)) in self.fields.iter().enumerate() {
            if name.is_empty() || name == PID_MEMBER || name == TOKEN_MEMBER {
                return Err(Error::invalid(format!("guard entry: field name {name:?} is reserved or empty")));
            }
            if self.fields[..i].iter().any(|(n, _)| n == name) {
                return Err(Error::invalid(format!("guard entry: field {name:?} appears twice")));
            }
        }
        let n = encode(self).len();
        if n > MAX_BYTES {
            return Err(Error::invalid(format!("guard entry: encodes to {n} bytes, more than {MAX_BYTES}")));
        }
        Ok(())
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(String::from_utf8_lossy(&encode(self)).trim_end())
    }
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2 + self.fields.len()))?;
        m.serialize_entry(PID_MEMBER, &self.pid)?;
        m.serialize_entry(TOKEN_MEMBER, &self.start_token)?;
        for (k, v) in &self.fields {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The exact bytes [`create`](crate::guard::create) writes for `entry`: one compact JSON object with
/// `pid`, `start_token`, then the fields in order, and `\n`.
pub fn encode(entry: &Entry) -> Vec<u8> {
    // Unreachable: serialising strings, an integer and JSON values (string-keyed maps only) into
    // a Vec cannot fail.
    let mut out = serde_json::to_vec(entry).expect("a guard entry always serialises");
    out.push(b'\n');
    out
}

/// The JSON object's members in file order; a duplicate name is an error (which of two `pid`s
/// would count?).
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Members, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("one JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> std::result::Result<Members, A::Error> {
                let mut out: Vec<(String, Value)> = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, Value>()? {
                    if k.is_empty() {
                        return Err(de::Error::custom("a member has an empty name"));
                    }
                    if out.iter().any(|(n, _)| *n == k) {
                        return Err(de::Error::custom(format_args!("member {k:?} appears twice")));
                    }
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Parse guard pidfile content into an [`Entry`], keeping the fields in file order.
///
/// The content must be UTF-8 holding one JSON object (whitespace around it allowed) whose
/// members are `pid` (an integer in `1..=i32::MAX`), `start_token` (a non-empty string) and any
/// other members with string values, each name non-empty and present once: exactly what
/// [`Entry::validate`] lets [`create`](crate::guard::create) write. [`read`](crate::guard::read) additionally bounds
/// the size and the pid by 4194304 (`PID_MAX_LIMIT`).
///
/// Errors: `InvalidJson` (bad syntax, not UTF-8, not an object, an empty or duplicate member
/// name, a non-string field);
/// `BadPid` (missing, not an integer, ≤ 0, too large); `BadToken` (missing, not a string,
/// empty). The error has no path; `read` adds it.
pub fn decode(content: &[u8]) -> Result<Entry> {
    let Members(members) = serde_json::from_slice::<Members>(content)
        .map_err(|e| Error::new(ErrorKind::InvalidJson, format!("not a guard record: {e}")))?;
    let mut pid = None;
    let mut token = None;
    let mut fields = Vec::new();
    for (k, v) in members {
        match k.as_str() {
            PID_MEMBER => pid = Some(v),
            TOKEN_MEMBER => token = Some(v),
            _ => match v {
                Value::String(s) => fields.push((k, s)),
                other => {
                    return Err(Error::new(
                        ErrorKind::InvalidJson,
                        format!("member {k:?} is {}, not a string", kind_name(&other)),
                    ))
                }
            },
        }
    }
    let pid = match pid {
        None => return Err(Error::new(ErrorKind::BadPid, "no \"pid\" member")),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(p) if p > 0 && p <= i32::MAX as i64 => p as i32,
            _ => return Err(Error::new(ErrorKind::BadPid, format!("pid {n} is not a positive 32-bit integer"))),
        },
        Some(other) => return Err(Error::new(ErrorKind::BadPid, format!("pid is {}, not an integer", kind_name(&other)))),
    };
    let start_token = match token {
        None => return Err(Error::new(ErrorKind::BadToken, "no \"start_token\" member")),
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::String(_)) => return Err(Error::new(ErrorKind::BadToken, "the start token is empty")),
        Some(other) => {
            return Err(Error::new(ErrorKind::BadToken, format!("start_token is {}, not a string", kind_name(&other))))
        }
    };
    Ok(Entry { pid, start_token, fields })
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The lowercase hex SHA-256 of `secret` (64 characters): the form in which a record names a
/// secret (a messaging token, say) without storing it. A later caller hashes its own copy and
/// compares, to notice a rotated secret.
pub fn token_sha256(secret: impl AsRef<[u8]>) -> String {
    let digest = Sha256::digest(secret.as_ref());
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_in_fixed_order() {
        let e = Entry::new(42, "linux1:m:b:1:2:-").with_field("session", "s1").with_field("a", "x\"y");
        assert_eq!(
            String::from_utf8(encode(&e)).unwrap(),
            "{\"pid\":42,\"start_token\":\"linux1:m:b:1:2:-\",\"session\":\"s1\",\"a\":\"x\\\"y\"}\n"
        );
        assert_eq!(decode(&encode(&e)).unwrap(), e);
    }

    #[test]
    fn decode_keeps_file_order_and_accepts_other_layouts() {
        let e = decode(b" {\"z\":\"1\", \"start_token\":\"t\", \"a\":\"2\", \"pid\": 7}\n\n").unwrap();
        assert_eq!(e.pid, 7);
        assert_eq!(e.fields, vec![("z".into(), "1".into()), ("a".into(), "2".into())]);
    }

    #[test]
    fn decode_refusals_have_their_own_kinds() {
        let cases: &[(&[u8], ErrorKind)] = &[
            (b"", ErrorKind::InvalidJson),
            (b"\n", ErrorKind::InvalidJson),
            (b"42", ErrorKind::InvalidJson),
            (b"[1]", ErrorKind::InvalidJson),
            (b"{\"pid\":1,\"start_token\":\"t\"", ErrorKind::InvalidJson),
            (b"{\"pid\":1,\"start_token\":\"t\"}x", ErrorKind::InvalidJson),
            (b"{\"pid\":1,\"pid\":2,\"start_token\":\"t\"}", ErrorKind::InvalidJson),
            (b"{\"pid\":1,\"start_token\":\"t\",\"n\":3}", ErrorKind::InvalidJson),
            (b"{\"pid\":1,\"start_token\":\"t\",\"n\":null}", ErrorKind::InvalidJson),
            (b"{\"pid\":1,\"start_token\":\"t\",\"\":\"x\"}", ErrorKind::InvalidJson),
            (b"{\"pid\":1,\"start_token\":\"t\xff\"}", ErrorKind::InvalidJson),
            (b"{\"start_token\":\"t\"}", ErrorKind::BadPid),
            (b"{\"pid\":0,\"start_token\":\"t\"}", ErrorKind::BadPid),
            (b"{\"pid\":-5,\"start_token\":\"t\"}", ErrorKind::BadPid),
            (b"{\"pid\":5.0,\"start_token\":\"t\"}", ErrorKind::BadPid),
            (b"{\"pid\":\"5\",\"start_token\":\"t\"}", ErrorKind::BadPid),
            (b"{\"pid\":2147483648,\"start_token\":\"t\"}", ErrorKind::BadPid),
            (b"{\"pid\":1}", ErrorKind::BadToken),
            (b"{\"pid\":1,\"start_token\":\"\"}", ErrorKind::BadToken),
            (b"{\"pid\":1,\"start_token\":7}", ErrorKind::BadToken),
        ];
        for (input, kind) in cases {
            let e = decode(input).unwrap_err();
            assert_eq!(e.kind(), *kind, "{:?}: {e}", String::from_utf8_lossy(input));
            assert_eq!(e.kind().family(), ErrorKind::Malformed);
        }
    }

    #[test]
    fn validate_rules() {
        assert!(Entry::new(1, "t").validate().is_ok());
        assert_eq!(Entry::new(0, "t").validate().unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert!(Entry::new(1, "").validate().is_err());
        assert!(Entry::new(1, "t").with_field("pid", "x").validate().is_err());
        assert!(Entry::new(1, "t").with_field("", "x").validate().is_err());
        assert!(Entry::new(1, "t").with_field("a", "x").with_field("a", "y").validate().is_err());
        assert!(Entry::new(1, "t").with_field("a", "x".repeat(5000)).validate().is_err());
    }

    #[test]
    fn sha256_is_lowercase_hex() {
        assert_eq!(token_sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(token_sha256(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
