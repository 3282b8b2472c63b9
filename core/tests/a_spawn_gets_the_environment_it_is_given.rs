//! `launch::spawn` with `SpawnOptions::env`: the command gets exactly the environment given
//! (nothing of the caller's), in every scope mode; its `PATH` is where a bare program name is
//! looked up; the caller's own environment is never touched (abx-dl's hook runner passes each
//! hook's environment; without this option its patch had to swap `os.environ` under a lock,
//! which other threads could see). Bad names and values are refused before anything is made.

mod common;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;

use common::TempDir;
use pidguard::launch::{self, ScopeMode, SpawnOptions};
use pidguard::ErrorKind;

fn reap(pid: i32) -> i32 {
    let mut st = 0;
    // SAFETY: `pid` is our own child (the command or the supervisor); `st` is writable.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    st
}

fn pairs(p: &[(&str, &str)]) -> Option<Vec<(OsString, OsString)>> {
    Some(p.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect())
}

/// Run `argv` with `env` in `scope`, wait for it, and return its stdout.
fn output(dir: &TempDir, name: &str, argv: &[&str], env: Option<Vec<(OsString, OsString)>>, scope: ScopeMode) -> pidguard::Result<String> {
    let pid_file = dir.path().join(format!("{name}.pid"));
    let s = launch::spawn(&pid_file, argv, &SpawnOptions { scope, env, ..Default::default() })?;
    let st = reap(s.supervisor_pid.unwrap_or(s.pid));
    assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0, "{argv:?} failed: status {st:#x}");
    let _ = pidguard::stop_pid_file(&pid_file, &pidguard::StopOptions::default());
    Ok(std::fs::read_to_string(&s.stdout).expect("read the command's stdout"))
}

#[test]
fn the_command_gets_exactly_the_environment_given() {
    let dir = TempDir::new("spawn-env");
    let before: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for scope in [ScopeMode::Group, ScopeMode::Supervisor, ScopeMode::Auto] {
        let out = output(&dir, &format!("env-{scope:?}"), &["/usr/bin/env"], pairs(&[("HOOK_A", "1"), ("EMPTY", ""), ("SPACES", "a b=c")]), scope).expect("spawn");
        assert_eq!(out, "HOOK_A=1\nEMPTY=\nSPACES=a b=c\n", "{scope:?}: the command's environment");
        // An empty environment is an environment too (not "the caller's").
        let out = output(&dir, &format!("none-{scope:?}"), &["/usr/bin/env"], Some(Vec::new()), scope).expect("spawn");
        assert_eq!(out, "", "{scope:?}: an empty environment");
    }
    // Without the option, the caller's.
    let out = output(&dir, "inherit", &["/usr/bin/env"], None, ScopeMode::Group).expect("spawn");
    let path = std::env::var("PATH").expect("PATH");
    assert!(out.lines().any(|l| l == format!("PATH={path}")), "the caller's environment was not inherited: {out}");
    assert_eq!(std::env::vars_os().collect::<Vec<_>>(), before, "spawn changed the caller's environment");
}

#[test]
fn a_bare_program_name_is_looked_up_in_the_given_path() {
    let dir = TempDir::new("spawn-env-path");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let prog = bin.join("pidguard-env-probe");
    std::fs::write(&prog, "#!/bin/sh\necho ran from the given PATH\n").unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = output(&dir, "found", &["pidguard-env-probe"], pairs(&[("PATH", &path)]), ScopeMode::Group).expect("spawn");
    assert_eq!(out, "ran from the given PATH\n");
    // Not in the caller's PATH: without the option it is not found, and nothing is created.
    let e = launch::spawn(&dir.path().join("missing.pid"), &["pidguard-env-probe"], &SpawnOptions::default()).expect_err("found without the PATH");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(!dir.path().join("missing.pid").exists());
}

#[test]
fn a_bad_name_or_value_is_refused_before_anything_is_made() {
    let dir = TempDir::new("spawn-env-bad");
    let bad: [(OsString, OsString); 4] = [
        ("".into(), "x".into()),
        ("A=B".into(), "x".into()),
        (OsString::from("A\0B"), "x".into()),
        ("A".into(), OsString::from("x\0y")),
    ];
    for (i, pair) in bad.into_iter().enumerate() {
        let pid_file = dir.path().join(format!("bad{i}.pid"));
        let e = launch::spawn(&pid_file, &["/bin/true"], &SpawnOptions { env: Some(vec![pair.clone()]), ..Default::default() })
            .expect_err(&format!("{pair:?} accepted"));
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{pair:?}: {e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{pair:?}: a file was made");
    }
}
