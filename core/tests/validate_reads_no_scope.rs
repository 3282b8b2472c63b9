//! `validate_pid_file` answers whether the recorded process lives and is the one recorded; the
//! record's scope (`user.pidguard.scope`) says what a stop reaches, not who the process is, so
//! validate never reads it (one `fgetxattr` fewer per call). The full check still reads it: a
//! scope xattr that is not a scope record makes `check_pid_file` answer `bad-token`, and the
//! operations that act on the record refuse it, while validate of the same live, matching record
//! is true. A record that is not valid stays not valid whatever its scope says.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use pidguard::identity::SCOPE_XATTR;
use pidguard::{CheckOptions, CheckReason};

struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn set_xattr(path: &Path, name: &str, v: &[u8]) -> bool {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = CString::new(name).unwrap();
    // SAFETY: valid strings and a readable buffer of its length.
    unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), v.as_ptr().cast(), v.len(), 0) == 0 }
}

#[test]
fn a_malformed_scope_leaves_validate_to_the_token_and_the_check_says_bad_token() {
    let dir = Dir(std::env::temp_dir().join(format!("pidguard-validate-scope-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let child = Sleeper(Command::new("sleep").arg("1000").process_group(0).stdin(Stdio::null()).spawn().unwrap());
    let pid = child.0.id() as i32;
    let pf = dir.0.join("on_x.bg.pid");
    pidguard::write_pid_file_with_mtime(&pf, pid, pidguard::lookup(pid).unwrap().create_time).unwrap();
    let check = pidguard::check_pid_file(&pf, None, 5.0);
    if check.token.is_none() {
        println!("SKIP: no user xattrs under {}: no token, no scope", dir.0.display());
        return;
    }
    assert!(check.valid && pidguard::validate_pid_file(&pf, None, 5.0));

    assert!(set_xattr(&pf, SCOPE_XATTR, b"not a scope record"));
    let check = pidguard::check_pid_file(&pf, None, 5.0);
    assert_eq!(check.reason, CheckReason::BadToken, "the full check reads the scope: {check:?}");
    assert!(pidguard::validate_pid_file(&pf, None, 5.0), "validate is the token's answer; it does not read the scope");
    assert!(pidguard::validate_pid_file_with(&pf, &CheckOptions::default()));

    // Not valid stays not valid: the process gone, whatever the scope says.
    drop(child);
    assert!(!pidguard::validate_pid_file(&pf, None, 5.0));
    assert_eq!(pidguard::check_pid_file(&pf, None, 5.0).reason, CheckReason::BadToken);
}
