//! Generates the C header with cbindgen into `$OUT_DIR/pidguard.h` (never into the source tree:
//! the committed `include/pidguard.h` is compared with it by `tests/header.rs`), and gives the
//! shared library its soname.

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("pidguard.h");

    // The whole src directory, not one file: any module may export something.
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");
    // `ld.so` loads `libpidguard.so.0`; programs linked against it record that name. ELF only
    // (Linux, FreeBSD): Apple's linker has no `-soname` (macOS builds are compile-checked only).
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("macos") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpidguard.so.0");
    }

    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("ffi-c/cbindgen.toml");
    match cbindgen::Builder::new().with_crate(&crate_dir).with_config(config).generate() {
        Ok(bindings) => {
            bindings.write_to_file(&out);
        }
        Err(e) => panic!("cbindgen could not generate pidguard.h: {e}"),
    }
}
