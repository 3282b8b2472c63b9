//! Builds the scope supervisor program `pidguard-scope` (core/src/bin/pidguard-scope.rs) for the
//! target the extension module is built for, and puts it beside the module's Python sources
//! (`python/pidguard/pidguard-scope`, mode 0755), where pyproject.toml's `include` puts it into
//! the wheel. So every wheel maturin builds carries the program — also the one pip builds from
//! the sdist or from `./py` (maturin's sdist cannot ship a second binary: PyO3/maturin#368), and
//! a supervisor-mode spawn execs it instead of keeping a fork of the whole interpreter.
//!
//! The program depends on nothing but `std`, so one `rustc` call builds it, with the compiler and
//! linker cargo uses for this build (`RUSTC`, `RUSTC_LINKER`: maturin's `--zig` linker wrapper
//! for a manylinux build). For a target whose std rustc cannot find (a `-Zbuild-std` cross build,
//! scripts/release.sh), the release builds the program itself and names it in
//! `PIDGUARD_SCOPE_PROGRAM`, which is then copied instead.
//!
//! Where the sources are: `python/` beside this crate (the repository: py/python), or beside the
//! workspace root (maturin's sdist moves `python-source` next to pyproject.toml at its root).
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src = manifest.join("../core/src/bin/pidguard-scope.rs");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed={}", src.display());
    println!("cargo::rerun-if-env-changed=PIDGUARD_SCOPE_PROGRAM");
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    if !target.contains("linux") {
        // A supervisor is Linux's (PR_SET_CHILD_SUBREAPER): elsewhere no program is shipped.
        return;
    }
    let pkg = [manifest.join("python/pidguard"), manifest.join("../python/pidguard")]
        .into_iter()
        .find(|d| d.join("__init__.py").is_file())
        .unwrap_or_else(|| panic!("pidguard-scope: no python/pidguard/__init__.py beside {} or above it", manifest.display()));
    let dest = pkg.join("pidguard-scope");
    let built = out.join("pidguard-scope");
    match std::env::var_os("PIDGUARD_SCOPE_PROGRAM") {
        Some(p) => {
            println!("cargo::rerun-if-changed={}", Path::new(&p).display());
            std::fs::copy(&p, &built).unwrap_or_else(|e| panic!("PIDGUARD_SCOPE_PROGRAM={}: {e}", Path::new(&p).display()));
        }
        None => {
            let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
            let mut cmd = Command::new(rustc);
            cmd.args(["--edition", "2021", "--crate-type", "bin", "--crate-name", "pidguard_scope"])
                .args(["-C", "opt-level=s", "-C", "panic=abort", "-C", "strip=symbols", "-C", "debuginfo=0"])
                .args(["--target", &target])
                .arg("-o")
                .arg(&built)
                .arg(&src);
            if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
                let mut a = std::ffi::OsString::from("linker=");
                a.push(linker);
                cmd.arg("-C").arg(a);
            }
            let status = cmd.status().unwrap_or_else(|e| panic!("pidguard-scope: cannot run rustc: {e}"));
            if !status.success() {
                panic!(
                    "pidguard-scope: rustc could not build {} for {target} ({status}); for a target without a \
                     prebuilt std, build it (scripts/release.sh does) and set PIDGUARD_SCOPE_PROGRAM to its path",
                    src.display()
                );
            }
        }
    }
    // Replaced, not written through: a running supervisor may be executing the old file.
    let tmp = pkg.join(".pidguard-scope.tmp");
    std::fs::copy(&built, &tmp).unwrap_or_else(|e| panic!("pidguard-scope: {}: {e}", tmp.display()));
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod pidguard-scope");
    }
    std::fs::rename(&tmp, &dest).unwrap_or_else(|e| panic!("pidguard-scope: {}: {e}", dest.display()));
}
