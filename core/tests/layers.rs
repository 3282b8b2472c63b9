//! The floor plan of core/src and of every shell crate's src (ffi-c, node, py, cli): every
//! `crate::`, `super::` and `self::` import, and every bare path into a child module
//! (`guard::register(m)` in lib.rs), runs down, between files and between top-level modules
//! (`scripts/layers.py --check` exits 1 on any circle). Seen failing on the shells of the
//! commit before this test: ffi-c `boundary <-> status <-> types`, node `convert <-> guard` and
//! `handle <-> lib`, py `guard <-> lib <-> process`.

use std::path::Path;
use std::process::Command;

fn no_circle_in(src: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("core/ sits in the repository");
    let out = Command::new("python3")
        .arg(repo.join("scripts/layers.py"))
        .arg(src)
        .arg("--check")
        .output()
        .expect("python3 runs scripts/layers.py");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{} has an import circle (status {:?}):\n{text}{}", src.display(), out.status, String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("top-level modules"), "layers.py printed no summary for {}:\n{text}", src.display());
}

#[test]
fn imports_in_core_src_form_no_circle() {
    no_circle_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

#[test]
fn imports_in_each_shell_form_no_circle() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("core/ sits in the repository");
    for shell in ["ffi-c", "node", "py", "cli"] {
        no_circle_in(&repo.join(shell).join("src"));
    }
}
