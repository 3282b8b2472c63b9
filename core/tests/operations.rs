//! The Rust column of the operations table (tests/operations/operations.json): every name is a
//! real item of the crate (this file only compiles if it is), and the table names no operation
//! this list lacks. The other surfaces check their own columns against the same table.

#[test]
fn every_operation_of_the_table_exists_in_rust() {
    // Each line fails to compile when the item is gone.
    let names: &[(&str, ())] = &[
        ("write_pid_file_with_mtime", { let _ = pidguard::write_pid_file_with_mtime; }),
        ("write_cmd_file", { let _ = pidguard::write_cmd_file::<String>; }),
        ("validate_pid_file", { let _ = pidguard::validate_pid_file; }),
        ("check_pid_file", { let _ = pidguard::check_pid_file; }),
        ("stop_pid_file", { let _ = pidguard::stop_pid_file; }),
        ("pin_pid_file", { let _ = pidguard::pin_pid_file; }),
        ("cleanup_background_hooks", { let _ = pidguard::cleanup_background_hooks; }),
        ("lookup", { let _ = pidguard::lookup; }),
        ("is_process_alive", { let _ = pidguard::is_process_alive; }),
        ("start_token", { let _ = pidguard::start_token; }),
        ("judge", { let _ = pidguard::judge; }),
        ("terminate_pid", { let _ = pidguard::terminate_pid; }),
        ("ProcessRef::open", { let _ = pidguard::ProcessRef::open; }),
        ("ProcessRef::open_child", { let _ = pidguard::ProcessRef::open_child; }),
        ("launch::spawn", { let _ = pidguard::launch::spawn::<String>; }),
        ("guard::create", { let _ = pidguard::guard::create; }),
        ("guard::read", { let _ = pidguard::guard::read; }),
        ("guard::remove", { let _ = pidguard::guard::remove; }),
        ("guard::replace", { let _ = pidguard::guard::replace; }),
        ("guard::check", { let _ = pidguard::guard::check; }),
        ("guard::acquire", { let _ = pidguard::guard::acquire; }),
        ("guard::encode", { let _ = pidguard::guard::encode; }),
        ("guard::decode", { let _ = pidguard::guard::decode; }),
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

/// tests/operations/reports.json, which every binding's test reads, is `pidguard::report::FIELDS`.
#[test]
fn the_reports_table_is_the_report_module_fields() {
    let table: serde_json::Value =
        serde_json::from_str(include_str!("../../tests/operations/reports.json")).expect("the table is JSON");
    let reports = table["reports"].as_object().expect("reports");
    assert_eq!(reports.len(), pidguard::report::FIELDS.len(), "reports.json and FIELDS name different reports");
    for (name, fields) in pidguard::report::FIELDS {
        let listed: Vec<&str> =
            reports.get(*name).unwrap_or_else(|| panic!("{name} is missing from reports.json")).as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(&listed, fields, "{name}: reports.json differs from pidguard::report::FIELDS");
    }
}
