//! The Rust runner of the shared conformance vectors (`tests/vectors/*.json`; schema in
//! `tests/vectors/README.md`). The cases are set up on real processes by the shared fixture
//! (`core/examples/vector_fixture.rs`, built by `cargo test` with the other examples); this
//! runner makes each call through the core crate, normalises the answer as every runner does,
//! and compares it with the case's `expect`. Prints `vectors (rust): N passed, N failed, N
//! skipped`.
//!
//! Where a private PID namespace can be made (`unshare --pid --fork --mount-proc`), the runner
//! re-runs itself inside one, so the pid-reuse cases (a bystander forced onto a recorded pid
//! with `ns_last_pid`) run without touching anything outside.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use pidguard::{guard, CleanupOptions, ErrorKind, Policy, ProcessRef, Schedule, StartToken, TerminateOptions};
use serde_json::{json, Map, Value};

const IN_NS: &str = "PIDGUARD_VECTORS_IN_NS";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The fixture binary: the one `cargo test` built with the other examples, or (when only this
/// test target was built, `cargo test --test vectors`) one built here into a target directory of
/// its own (the outer cargo holds the lock of the main one).
fn fixture_path() -> PathBuf {
    if let Some(p) = std::env::var_os("PIDGUARD_VECTOR_FIXTURE") {
        return PathBuf::from(p);
    }
    // target/<profile>/deps/vectors-… → target/<profile>/examples/vector_fixture
    let exe = std::env::current_exe().unwrap();
    let built = exe.parent().unwrap().parent().unwrap().join("examples").join("vector_fixture");
    if built.exists() {
        return built;
    }
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vector-fixture-target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let st = Command::new(cargo)
        .args(["build", "-q", "-p", "pidguard-core", "--example", "vector_fixture", "--target-dir"])
        .arg(&target)
        .current_dir(repo())
        .status()
        .unwrap();
    assert!(st.success(), "cannot build the vector fixture");
    target.join("debug/examples/vector_fixture")
}

#[test]
fn vectors() {
    if std::env::var_os(IN_NS).is_none() {
        // Once more, inside a private PID namespace when one can be made (the script says so).
        let status = Command::new("sh")
            .arg(repo().join("tests/vectors/in-pidns.sh"))
            .arg(std::env::current_exe().unwrap())
            .args(["vectors", "--exact", "--nocapture", "--test-threads=1"])
            .env(IN_NS, "1")
            .env("PIDGUARD_VECTOR_FIXTURE", fixture_path())
            .status()
            .unwrap();
        assert!(status.success(), "vector cases failed (see above)");
        return;
    }
    run();
}

struct Fixture {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Fixture {
    fn ask(&mut self, req: &str) -> Value {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{req}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("fixture said {line:?}: {e}"))
    }
}

fn run() {
    let fx = fixture_path();
    let mut child = Command::new(&fx)
        .args(["serve", "--vectors"])
        .arg(repo().join("tests/vectors"))
        .args(["--caller", &std::process::id().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut f = Fixture { child, out };
    let names: Vec<String> = f.ask("list")["cases"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for name in &names {
        let s = f.ask(&format!("setup {name}"));
        if let Some(reason) = s["skip"].as_str() {
            f.ask(&format!("finish {name}"));
            skipped += 1;
            println!("skip {name}: {reason}");
            continue;
        }
        // A panic in core is an answer too (the C and Python boundaries turn it into `panic`).
        let mut actual = std::panic::catch_unwind(|| call(&s)).unwrap_or_else(|_| {
            let mut m = Map::new();
            m.insert("error".into(), json!("panic"));
            m
        });
        if let Some(p) = f.ask(&format!("finish {name}"))["post"].as_object() {
            actual.extend(p.clone());
        }
        let bad = compare(&s["expect"], &actual);
        if bad.is_empty() {
            passed += 1;
        } else {
            failed += 1;
            println!("FAIL {name}: {}  (answer {})", bad.join("; "), Value::Object(actual));
        }
    }
    drop(f.child.stdin.take());
    let _ = f.child.wait();
    println!("vectors (rust): {passed} passed, {failed} failed, {skipped} skipped");
    assert_eq!(failed, 0, "{failed} vector cases failed");
}

fn path(v: &Value) -> Option<PathBuf> {
    v.as_str().map(PathBuf::from)
}

fn err(e: &pidguard::Error) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("error".into(), json!(e.kind().slug()));
    m
}

fn judged(verdict: Option<pidguard::Judgement>) -> (Value, Value) {
    match verdict {
        Some(j) => (json!(j.verdict.as_str()), json!(j.reason.as_str())),
        None => (Value::Null, Value::Null),
    }
}

/// Make the case's call through the core crate and normalise the answer.
fn call(s: &Value) -> Map<String, Value> {
    let pid_file = path(&s["pid_file"]).unwrap();
    let cmd_file = path(&s["cmd_file"]);
    let tolerance = s["tolerance"].as_f64().unwrap();
    let pid = s["pid"].as_i64().map(|p| p as i32);
    let policy = if s["policy"] == "lenient" { Policy::Lenient } else { Policy::Strict };
    let old_umask = s["umask"].as_u64().map(|m| {
        // SAFETY: umask(2) has no preconditions; this test binary runs one test.
        unsafe { libc::umask(m as libc::mode_t) }
    });
    let mut m = Map::new();
    match s["call"].as_str().unwrap() {
        "validate" => {
            m.insert("valid".into(), json!(pidguard::validate_pid_file(&pid_file, cmd_file.as_deref(), tolerance)));
        }
        "check" => {
            let c = pidguard::check_pid_file(&pid_file, cmd_file.as_deref(), tolerance);
            let (v, r) = judged(c.judgement);
            m.insert("valid".into(), json!(c.valid));
            m.insert("reason".into(), json!(c.reason.as_str()));
            m.insert("pid".into(), json!(c.pid));
            m.insert("verdict".into(), v);
            m.insert("verdict_reason".into(), r);
        }
        "guard_read" => match guard::read(&pid_file) {
            Ok(e) => {
                m.insert("pid".into(), json!(e.pid));
                m.insert("start_token".into(), json!(e.start_token));
            }
            Err(e) => m = err(&e),
        },
        "guard_check" => match guard::check(&pid_file) {
            Ok(v) => {
                let (vv, r) = judged(v.identity);
                m.insert("found".into(), json!(v.found));
                m.insert("pid".into(), json!(v.entry.map(|e| e.pid)));
                m.insert("verdict".into(), vv);
                m.insert("verdict_reason".into(), r);
            }
            Err(e) => m = err(&e),
        },
        "guard_create" => {
            let e = guard::Entry::new(pid.unwrap(), s["token"].as_str().unwrap_or(""));
            m.insert("error".into(), json!(guard::create(&pid_file, &e).err().map(|e| e.kind().slug())));
        }
        "write" => {
            let t: f64 = s["start_time"].as_str().unwrap().parse().unwrap();
            let r = pidguard::write_pid_file_with_mtime(&pid_file, pid.unwrap(), t);
            m.insert("error".into(), json!(r.err().map(|e| e.kind().slug())));
        }
        "terminate" => m = terminate(s, pid.unwrap(), policy),
        "cleanup" => {
            let opts = CleanupOptions {
                is_tty: true,
                schedule: s["schedule"].as_str().unwrap().parse().unwrap(),
                tolerance,
                ..CleanupOptions::default()
            };
            match pidguard::cleanup_background_hooks(Path::new(s["dir"].as_str().unwrap()), &opts, None) {
                Ok(reports) => match reports.iter().find(|r| r.pid_file == pid_file) {
                    Some(r) => {
                        m.insert("outcome".into(), json!(r.outcome.as_str()));
                        m.insert("reason".into(), json!(r.reason.as_str()));
                        m.insert("pid_file_removed".into(), json!(r.pid_file_removed));
                        m.insert(
                            "refusal".into(),
                            json!(match &r.outcome {
                                pidguard::HookOutcome::Refused(x) => Some(x.as_str()),
                                _ => None,
                            }),
                        );
                    }
                    None => {
                        m.insert("outcome".into(), json!("not-reported"));
                    }
                },
                Err(e) => m = err(&e),
            }
        }
        other => panic!("unknown call {other}"),
    }
    if let Some(old) = old_umask {
        // SAFETY: as above.
        unsafe { libc::umask(old) };
    }
    m
}

fn terminate(s: &Value, pid: i32, policy: Policy) -> Map<String, Value> {
    let mut m = Map::new();
    let token = match s["token"].as_str().map(str::parse::<StartToken>).transpose() {
        Ok(t) => t,
        Err(e) => return err(&e),
    };
    let schedule: Schedule = match s["schedule"].as_str().unwrap().parse() {
        Ok(x) => x,
        Err(e) => return err(&e),
    };
    let t0 = Instant::now();
    let h = match ProcessRef::open(pid, token.as_ref(), policy) {
        Ok(h) => h,
        Err(e) if e.kind() == ErrorKind::NoSuchProcess => {
            m.insert("outcome".into(), json!("already-gone"));
            return m;
        }
        Err(e) if e.kind() == ErrorKind::Refused => {
            m.insert("outcome".into(), json!("refused"));
            m.insert("refusal".into(), json!(e.refusal().map(|r| r.as_str())));
            return m;
        }
        Err(e) => return err(&e),
    };
    let opts = TerminateOptions { schedule, group: true, reap: false };
    let r = pidguard::terminate(vec![h], &opts).pop().unwrap();
    m.insert("outcome".into(), json!(r.outcome.as_str()));
    match &r.outcome {
        pidguard::Outcome::Exited { after } => {
            m.insert("after".into(), json!(after.name()));
        }
        pidguard::Outcome::Refused(x) => {
            m.insert("refusal".into(), json!(x.as_str()));
        }
        _ => {}
    }
    m.insert("elapsed".into(), json!(t0.elapsed().as_secs_f64()));
    m
}

/// The mismatches between `expect` and `actual`: each expected key must be equal, or one of
/// the values of an expected array; `elapsed_below` bounds `actual.elapsed` (seconds).
fn compare(expect: &Value, actual: &Map<String, Value>) -> Vec<String> {
    let mut bad = Vec::new();
    for (k, want) in expect.as_object().into_iter().flatten() {
        if k == "elapsed_below" {
            let e = actual.get("elapsed").and_then(Value::as_f64);
            if !e.is_some_and(|e| e < want.as_f64().unwrap()) {
                bad.push(format!("elapsed: want < {want}, got {e:?}"));
            }
            continue;
        }
        let got = actual.get(k).unwrap_or(&Value::Null);
        let eq = |w: &Value| match (w.as_f64(), got.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => w == got,
        };
        let ok = match want {
            Value::Array(any) => any.iter().any(eq),
            w => eq(w),
        };
        if !ok {
            bad.push(format!("{k}: want {want}, got {got}"));
        }
    }
    bad
}
