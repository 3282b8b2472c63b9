//! The Rust column of the operations table (tests/operations/operations.json): every name is a
//! real item of the crate (this file only compiles if it is), and the table names no operation
//! this list lacks. The other surfaces check their own columns against the same table.

#[test]
fn every_operation_of_the_table_exists_in_rust() {
    // Each line fails to compile when the item is gone.
    let names: &[(&str, usize)] = &[
        ("write_pid_file_with_mtime", pidguard::write_pid_file_with_mtime as usize),
        ("write_cmd_file", pidguard::write_cmd_file::<String> as usize),
        ("validate_pid_file", pidguard::validate_pid_file as usize),
        ("check_pid_file", pidguard::check_pid_file as usize),
        ("stop_pid_file", pidguard::stop_pid_file as usize),
        ("cleanup_background_hooks", pidguard::cleanup_background_hooks as usize),
        ("lookup", pidguard::lookup as usize),
        ("start_token", pidguard::start_token as usize),
        ("judge", pidguard::judge as usize),
        ("terminate_pid", pidguard::terminate_pid as usize),
        ("ProcessRef::open", pidguard::ProcessRef::open as usize),
        ("ProcessRef::open_child", pidguard::ProcessRef::open_child as usize),
        ("guard::create", pidguard::guard::create as usize),
        ("guard::read", pidguard::guard::read as usize),
        ("guard::remove", pidguard::guard::remove as usize),
        ("guard::replace", pidguard::guard::replace as usize),
        ("guard::check", pidguard::guard::check as usize),
        ("guard::acquire", pidguard::guard::acquire as usize),
        ("guard::encode", pidguard::guard::encode as usize),
        ("guard::decode", pidguard::guard::decode as usize),
    ];
    let table: serde_json::Value =
        serde_json::from_str(include_str!("../../tests/operations/operations.json")).expect("the table is JSON");
    let ops = table["operations"].as_array().expect("operations");
    let mut missing = Vec::new();
    for op in ops {
        for surface in ["rust", "c", "python", "node"] {
            assert!(op[surface].as_str().is_some_and(|s| !s.is_empty()), "{}: no {surface} name", op["op"]);
        }
        assert!(op["cli"].is_string() || op["cli_why"].is_string(), "{}: neither a CLI name nor why not", op["op"]);
        let name = op["rust"].as_str().unwrap();
        if !names.iter().any(|(n, _)| *n == name) {
            missing.push(name.to_string());
        }
    }
    assert!(missing.is_empty(), "in the table but not in Rust (add them to this list, or to the crate): {missing:?}");
    assert_eq!(ops.len(), names.len(), "this list names operations the table lacks");
}
