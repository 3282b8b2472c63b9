//! The floor plan of core/src: every `crate::`, `super::` and `self::` import runs down, between
//! files and between top-level modules (`scripts/layers.py --check` exits 1 on any circle).

use std::path::Path;
use std::process::Command;

#[test]
fn imports_in_core_src_form_no_circle() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = core.parent().expect("core/ sits in the repository");
    let out = Command::new("python3")
        .arg(repo.join("scripts/layers.py"))
        .arg(core.join("src"))
        .arg("--check")
        .output()
        .expect("python3 runs scripts/layers.py");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "core/src has an import circle (status {:?}):\n{text}{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("top-level modules"), "layers.py printed no summary:\n{text}");
}
