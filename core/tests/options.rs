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
            let mut opts = pidguard::StopOptions::default();
            if let Some(s) = case["schedule"].as_str() {
                opts.schedule = s.parse()?;
            }
            if let Some(t) = tolerance {
                opts.tolerance = t;
            }
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
