//! The committed `include/pidguard.h` is exactly what cbindgen generates from `ffi-c/src`, and
//! its `PIDGUARD_E*` statuses are exactly core's `ErrorKind` table (`-kind.code()`).

use std::path::PathBuf;

use pidguard_core::ErrorKind;

/// Written by build.rs on every build of this crate.
const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/pidguard.h"));

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../include/pidguard.h")
}

#[test]
fn committed_header_is_fresh() {
    let path = committed_path();
    if std::env::var_os("PIDGUARD_BLESS").is_some() {
        std::fs::write(&path, GENERATED).expect("write include/pidguard.h");
        eprintln!("wrote {}", path.display());
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != GENERATED {
        let first = committed.lines().zip(GENERATED.lines()).position(|(a, b)| a != b);
        panic!(
            "include/pidguard.h is stale: it differs from what cbindgen generates from ffi-c/src \
             (first differing line: {}; generated copy: {}/pidguard.h).\n\
             Fix: PIDGUARD_BLESS=1 cargo test -p pidguard-ffi-c --test header, then commit \
             include/pidguard.h. Never edit the header by hand: edit the doc comments in ffi-c/src.",
            first.map_or("(length differs)".to_string(), |i| (i + 1).to_string()),
            env!("OUT_DIR"),
        );
    }
}

/// `(name, value)` of every `PIDGUARD_E…` enumerator in a header.
fn statuses(header: &str) -> Vec<(String, i32)> {
    header
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',');
            let (name, value) = l.split_once(" = ")?;
            if !name.starts_with("PIDGUARD_E") || name.contains(' ') {
                return None;
            }
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

#[test]
fn status_enum_matches_core_error_kinds() {
    let mut expected: Vec<(String, i32)> = ErrorKind::ALL
        .iter()
        .map(|k| (format!("PIDGUARD_E{}", k.slug().to_ascii_uppercase().replace('-', "_")), -k.code()))
        .collect();
    expected.sort();
    for (what, header) in [("generated", GENERATED.to_string()), ("committed", std::fs::read_to_string(committed_path()).unwrap_or_default())] {
        let mut got = statuses(&header);
        got.sort();
        assert_eq!(
            got, expected,
            "the {what} header's PIDGUARD_E* statuses differ from core's ErrorKind table: add or fix the \
             variant in ffi-c/src/status.rs (name PIDGUARD_E + SLUG, value -code), then regenerate the header"
        );
        assert!(header.contains("PIDGUARD_OK = 0,"), "{what} header lacks PIDGUARD_OK");
    }
    assert!(expected.iter().any(|(n, v)| n == "PIDGUARD_EPANIC" && *v == -ErrorKind::Panic.code()));
}

#[test]
fn every_exported_function_is_documented() {
    // A prototype line starts with a return type and names a pidguard_ function; the line above
    // its first line must close a doc comment.
    let lines: Vec<&str> = GENERATED.lines().collect();
    let mut count = 0;
    for (i, l) in lines.iter().enumerate() {
        let starts_proto = (l.starts_with("int ") || l.starts_with("const char *") || l.starts_with("void ") || l.starts_with("size_t "))
            && l.contains("pidguard_")
            && l.contains('(');
        if starts_proto {
            count += 1;
            assert_eq!(lines[i - 1].trim(), "*/", "undocumented: {l}");
        }
    }
    assert!(count >= 30, "only {count} prototypes found");
    assert!(!GENERATED.contains("pidguard_internal"), "test-only symbols must stay out of the header");
}

/// The C column of the operations table (tests/operations/operations.json): every operation of
/// pidguard has a C function, declared in the header.
#[test]
fn every_operation_of_the_table_has_a_c_function() {
    let table = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/operations/operations.json"))
        .expect("read the operations table");
    let names: Vec<String> = table
        .lines()
        .filter_map(|l| l.split("\"c\": \"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .collect();
    let ops = table.matches("\"op\":").count();
    assert_eq!(names.len(), ops, "an operation without a C name");
    let missing: Vec<&String> = names.iter().filter(|n| !GENERATED.contains(&format!("int {n}("))).collect();
    assert!(missing.is_empty(), "operations without a C function in include/pidguard.h: {missing:?}");
}

/// The fields of `struct NAME { … }` in a header, in order.
fn struct_fields(header: &str, name: &str) -> Vec<String> {
    let start = header.find(&format!("typedef struct {name} {{")).or_else(|| header.find(&format!("struct {name} {{")));
    let body = &header[start.unwrap_or_else(|| panic!("no struct {name} in the header"))..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| l.ends_with(';') && !l.starts_with("/*") && !l.starts_with('*'))
        .map(|l| l.trim_end_matches(';').rsplit([' ', '*']).next().unwrap().to_string())
        .collect()
}

/// The C column of the option names in tests/operations/options.json: `pidguard_stop_options`
/// and `pidguard_cleanup_options` have exactly the fields the table names for C (seen failing
/// with `group` taken out of the struct).
#[test]
fn option_structs_have_the_tables_fields() {
    let table: serde_json::Value = serde_json::from_str(include_str!("../../tests/operations/options.json")).unwrap();
    for (op, st) in [("stop", "pidguard_stop_options"), ("cleanup", "pidguard_cleanup_options")] {
        let mut want: Vec<String> = table["fields"][op].as_object().unwrap().values().filter_map(|r| r["c"].as_str().map(String::from)).collect();
        let mut got = struct_fields(GENERATED, st);
        want.sort();
        got.sort();
        assert_eq!(got, want, "struct {st} and the table's C column for {op} differ");
    }
}
