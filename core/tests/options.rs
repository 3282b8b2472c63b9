//! The Rust column of the option parity table (tests/operations/options.json): the tolerance,
//! the recorded command (a `.sh` file or an argv) and the schedule give the same answer or the
//! same error kind here as in C, Python, Node and the CLI, whose tests run the same table.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A `sleep 1000` leading its own process group; killed (group and all) and reaped on drop.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        let child = Command::new("sleep").arg("1000").process_group(0).spawn().expect("spawn sleep");
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(30);
        // Wait until the exec is done: the check compares the live argv.
        while std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default() != b"sleep\x001000\x00" {
            assert!(Instant::now() < deadline, "sleep never finished its exec");
            std::thread::sleep(Duration::from_millis(5));
        }
        Sleeper(child)
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        // Our own child, not yet reaped: its pid cannot have been reused.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// A token-less abx-dl pidfile for `pid`: its content, mtime = create time + `skew`.
fn write_tokenless(pid_file: &Path, pid: i32, skew: f64) {
    let ct = pidguard::lookup(pid).expect("lookup the sleeper").create_time + skew;
    std::fs::write(pid_file, pid.to_string()).unwrap();
    let secs = ct.floor();
    let ts = libc::timespec { tv_sec: secs as libc::time_t, tv_nsec: ((ct - secs) * 1e9) as libc::c_long };
    let c = std::ffi::CString::new(pid_file.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), [ts, ts].as_ptr(), 0) }, 0);
}

fn answer(r: Result<Value, pidguard::Error>) -> Value {
    match r {
        Ok(v) => v,
        Err(e) => serde_json::json!({ "error": e.kind().slug() }),
    }
}

fn run_case(case: &Value, dir: &Path) -> Value {
    // `null` and an absent key are both "not given" in Rust (`None`).
    let tolerance = case["tolerance"].as_f64();
    match case["op"].as_str().unwrap() {
        "check" => {
            let sleeper = Sleeper::start();
            let pid_file = dir.join("on_x.pid");
            write_tokenless(&pid_file, sleeper.0.id() as i32, case["skew"].as_f64().unwrap());
            let sh = dir.join("on_x.sh");
            let _ = std::fs::remove_file(&sh);
            let rec = &case["recorded"];
            let cmd_file = rec["sh"].as_str().map(|line| {
                std::fs::write(&sh, format!("#!/bin/bash\n{line}\n")).unwrap();
                sh.as_path()
            });
            let argv: Option<Vec<String>> =
                rec["argv"].as_array().map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect());
            answer(pidguard::CheckOptions::from_parts(cmd_file, argv.as_deref(), tolerance).map(|opts| {
                serde_json::json!({ "reason": pidguard::check_pid_file_with(&pid_file, &opts).reason.as_str() })
            }))
        }
        "stop" => answer((|| {
            let opts = pidguard::StopOptions::from_args(
                case["schedule"].as_str(),
                case["policy"].as_str(),
                None,
                tolerance,
                case["group"].as_bool(),
            )?;
            pidguard::stop_pid_file(&dir.join("absent.pid"), &opts)?;
            Ok(serde_json::json!({ "ok": true }))
        })()),
        op => panic!("unknown op {op}"),
    }
}

#[test]
fn every_option_case_gives_the_tables_answer() {
    let table: Value = serde_json::from_str(include_str!("../../tests/operations/options.json")).expect("the table is JSON");
    let dir = std::env::temp_dir().join(format!("pidguard-options-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failed = Vec::new();
    let cases = table["cases"].as_array().unwrap();
    for case in cases {
        let got = run_case(case, &dir);
        if got != case["expect"] {
            failed.push(format!("{}: expected {}, got {got}", case["name"], case["expect"]));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failed.is_empty(), "option cases that disagree:\n{}", failed.join("\n"));
    assert!(cases.len() >= 20);
}

/// The option names of stop and cleanup in the parity table are core's, in core's order: a
/// field added to `StopOptions` or `CleanupOptions` without a row (and so without a column on
/// every surface) fails here (seen failing with `group` left out of `StopOptions::FIELDS`).
#[test]
fn the_tables_option_names_are_cores() {
    let table: Value = serde_json::from_str(include_str!("../../tests/operations/options.json")).expect("the table is JSON");
    for (op, fields) in [("stop", pidguard::StopOptions::FIELDS), ("cleanup", pidguard::CleanupOptions::FIELDS)] {
        let rows = table["fields"][op].as_object().unwrap_or_else(|| panic!("no fields.{op} in the table"));
        // serde_json's map is sorted: compare as sorted lists.
        let keys: Vec<&str> = rows.keys().map(String::as_str).collect();
        let mut core: Vec<&str> = fields.to_vec();
        core.sort_unstable();
        assert_eq!(keys, core, "fields.{op} of options.json and core's {op} options differ");
        for (name, row) in rows {
            assert_eq!(row["rust"], *name, "fields.{op}.{name}: the Rust spelling is the field's name");
            for surface in ["c", "python", "node", "cli"] {
                assert!(row[surface].is_string() || row["why"][surface].is_string(), "fields.{op}.{name}.{surface}: neither a name nor a why");
            }
        }
    }
    // Every field listed is a field of the struct: this literal stops compiling when one is
    // added or removed (and the list above then disagrees).
    let s = pidguard::StopOptions { schedule: Default::default(), policy: pidguard::Policy::Strict, cmd_file: None, tolerance: 5.0, group: true };
    let c = pidguard::CleanupOptions { index_path: None, is_tty: false, schedule: Default::default(), pattern: "on_*.pid".into(), tolerance: 5.0, no_finalize: false };
    assert_eq!((s.tolerance, c.tolerance), (5.0, 5.0));
}

#[test]
fn from_args_takes_each_language_value_and_validates() {
    let d = pidguard::StopOptions::from_args(None, None, None, None, None).unwrap();
    assert_eq!((d.schedule.to_string(), d.policy, d.tolerance, d.group), ("TERM/2/KILL/1".to_string(), pidguard::Policy::Strict, 5.0, true));
    let o = pidguard::StopOptions::from_args(Some("TERM/5/KILL/2"), Some("lenient"), Some("/x.sh".into()), Some(1.5), Some(false)).unwrap();
    assert_eq!((o.schedule.to_string(), o.policy, o.tolerance, o.group), ("TERM/5/KILL/2".to_string(), pidguard::Policy::Lenient, 1.5, false));
    for bad in [
        pidguard::StopOptions::from_args(Some("TERM/x"), None, None, None, None),
        pidguard::StopOptions::from_args(None, Some("loose"), None, None, None),
        pidguard::StopOptions::from_args(None, None, None, Some(-1.0), None),
        pidguard::StopOptions::from_args(None, None, None, Some(f64::NAN), None),
    ] {
        assert_eq!(bad.unwrap_err().kind(), pidguard::ErrorKind::InvalidArgument);
    }
    let c = pidguard::CleanupOptions::from_args(Some("/i.jsonl".into()), Some(true), Some("5"), Some("*.pid"), Some(2.0), Some(true)).unwrap();
    assert_eq!((c.is_tty, c.pattern.as_str(), c.tolerance, c.no_finalize), (true, "*.pid", 2.0, true));
    for bad in [
        pidguard::CleanupOptions::from_args(None, None, Some("BOGUS/1"), None, None, None),
        pidguard::CleanupOptions::from_args(None, None, None, Some("a/b"), None, None),
        pidguard::CleanupOptions::from_args(None, None, None, Some(""), None, None),
        pidguard::CleanupOptions::from_args(None, None, None, None, Some(f64::INFINITY), None),
    ] {
        assert_eq!(bad.unwrap_err().kind(), pidguard::ErrorKind::InvalidArgument);
    }
}

/// The library's stop checks the `.sh` beside the pidfile by default, as `pidguard stop` always
/// did: a live process whose argv is not the hook's recorded command is not stopped.
#[test]
fn stop_checks_the_sh_beside_the_pidfile_by_default() {
    let dir = std::env::temp_dir().join(format!("pidguard-options-sh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sleeper = Sleeper::start();
    let pid = sleeper.0.id() as i32;
    let pid_file = dir.join("on_x.pid");
    write_tokenless(&pid_file, pid, 0.0);
    std::fs::write(dir.join("on_x.sh"), "#!/bin/bash\nsleep 999\n").unwrap();
    let opts = pidguard::StopOptions::default();
    assert_eq!(opts.cmd_file_for(&pid_file), Some(dir.join("on_x.sh")));
    let r = pidguard::stop_pid_file(&pid_file, &opts).unwrap();
    assert_eq!(r.check.reason.as_str(), "cmd-mismatch", "the .sh beside was not read: {r:?}");
    assert!(pidguard::is_process_alive(pid as i64), "a process that is not the hook's command was stopped");
    // An explicit cmd_file wins over the one beside.
    let other = dir.join("other.sh");
    std::fs::write(&other, "#!/bin/bash\nsleep 1000\n").unwrap();
    assert_eq!(pidguard::StopOptions { cmd_file: Some(other.clone()), ..Default::default() }.cmd_file_for(&pid_file), Some(other));
    drop(sleeper);
    std::fs::remove_dir_all(&dir).unwrap();
}
