//! A guard record made or contended where `/proc` is not mounted (a chroot, a minimal
//! container, a mount namespace that hides it): `guard::acquire` over a live holder gives the
//! holder's verdict (`Held`, unverifiable here), never a file-system error about the link, and
//! leaves the record as it was; `guard::create` of a free record works (the unnamed `O_TMPFILE`
//! file is named with `linkat(AT_EMPTY_PATH)` or, without that, through a named temporary —
//! `/proc/self/fd` is not there).
//!
//! The child runs in a private mount namespace (`unshare --mount`) with `/proc` unmounted, as
//! root; elsewhere the test prints why and passes.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{child_role, spawn_group, TempDir};
use pidguard::guard::{self, AcquireOptions, Entry};
use pidguard::ErrorKind;

const CHILD: &str = "without_proc_a_live_holder_is_held_and_a_free_record_is_created";

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

#[test]
fn without_proc_a_live_holder_is_held_and_a_free_record_is_created() {
    if let Some(role) = child_role() {
        if role != CHILD {
            return;
        }
        assert!(!std::path::Path::new("/proc/self").exists(), "/proc is still mounted");
        let dir = PathBuf::from(std::env::var("PIDGUARD_DIR").unwrap());
        let held = dir.join("g.json");
        let before = std::fs::read(&held).unwrap();
        let holder: Entry = guard::read(&held).unwrap();
        // Our own entry: any well-formed token (ours cannot be read without /proc).
        let me = Entry::new(holder.pid + 1, holder.start_token.clone()).with_field("who", "me");
        let e = guard::acquire(&held, &me, &AcquireOptions::default()).unwrap_err();
        println!("acquire over the live holder: {e} ({:?})", e.kind());
        assert_eq!(e.kind(), ErrorKind::Held, "{e}");
        assert_eq!(e.pid(), Some(holder.pid));
        assert!(!e.message().contains("link"), "{e}");
        assert_eq!(std::fs::read(&held).unwrap(), before, "the record is untouched");
        // A free record is created whole.
        let free = dir.join("free.json");
        guard::create(&free, &me).unwrap();
        assert_eq!(guard::read(&free).unwrap(), me);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names.len(), 2, "no temporary left: {names:?}");
        println!("no-proc-guard-child: ok");
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !have("unshare") {
        println!("SKIP: needs root and unshare");
        return;
    }
    let d = TempDir::new("guard-no-proc");
    let p = spawn_group("exec sleep infinity");
    let tok = pidguard::start_token(p.pid()).unwrap();
    guard::create(&d.path().join("g.json"), &Entry::new(p.pid(), tok.to_string())).unwrap();
    let before = std::fs::read(d.path().join("g.json")).unwrap();
    let exe = std::env::current_exe().unwrap();
    let script = format!("umount -l /proc && exec '{}' {CHILD} --exact --nocapture --test-threads=1", exe.display());
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("PIDGUARD_TEST_CHILD", CHILD)
        .env("PIDGUARD_DIR", d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("no-proc-guard-child: ok"), "{text}");
    assert_eq!(std::fs::read(d.path().join("g.json")).unwrap(), before);
    assert!(common::alive(p.pid()));
}
