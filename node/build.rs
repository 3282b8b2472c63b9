//! napi's link setup, and the type definitions of `index.d.ts`: napi-derive writes one JSON line
//! per exported item into `$NAPI_TYPE_DEF_TMP_FOLDER/pidguard-node` while it expands the macros.
//! Pointing it at `OUT_DIR` on every build keeps the file in step with the code without a second
//! build; `scripts/gen-node-dts.js` turns it into `index.d.ts`.
fn main() {
    napi_build::setup();
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo::rustc-env=NAPI_TYPE_DEF_TMP_FOLDER={out}");
}
