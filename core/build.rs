//! With the `node` feature, napi-derive writes the TypeScript shape of each `pidguard::report`
//! struct (one JSON line per item) into `$NAPI_TYPE_DEF_TMP_FOLDER/pidguard-core` while it
//! expands the macros; pointing it at `OUT_DIR` lets `node/scripts/gen-types.js` put those
//! interfaces into `index.d.ts` beside the addon's own. Without the feature this does nothing.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_NODE").is_some() {
        let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
        println!("cargo::rustc-env=NAPI_TYPE_DEF_TMP_FOLDER={out}");
    }
}
