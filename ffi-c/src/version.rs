//! The library's version, at compile time (`PIDGUARD_VERSION_*` in the header) and at run time
//! (`pidguard_version`, in api.rs, and `pidguard_version_number`): a program built against one header can ask
//! which library the loader gave it. docs/c.md, "Versions", says what each number promises.

use std::ffi::c_uint;

/// The major version of the header this program was compiled with (the `0` of 0.1.0).
pub const PIDGUARD_VERSION_MAJOR: u32 = 0;
/// The minor version of the header this program was compiled with (the `1` of 0.1.0). The ABI
/// is the soname's (`libpidguard.so.0`), not this number's: docs/c.md, "Versions".
pub const PIDGUARD_VERSION_MINOR: u32 = 1;
/// The patch version of the header this program was compiled with (the last `0` of 0.1.0).
pub const PIDGUARD_VERSION_PATCH: u32 = 0;
/// The header's version as one number, `MAJOR * 10000 + MINOR * 100 + PATCH` (0.1.0 is 100):
/// compare it with `pidguard_version_number()` to learn whether the library loaded at run time
/// is at least as new as the header, e.g.
/// `if (pidguard_version_number() < PIDGUARD_VERSION_NUMBER) ...`.
pub const PIDGUARD_VERSION_NUMBER: u32 = 100;

/// The version of the library loaded at run time as one number, `MAJOR * 10000 + MINOR * 100 +
/// PATCH` (0.1.0 is 100), to compare with the header's `PIDGUARD_VERSION_NUMBER`.
///
/// Returns the number; thread-safe, never fails.
#[no_mangle]
pub extern "C" fn pidguard_version_number() -> c_uint {
    PIDGUARD_VERSION_NUMBER
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header's literals (cbindgen copies only literals) are the crate's version.
    #[test]
    fn the_header_constants_are_the_package_version() {
        let v = |s: &str| s.parse::<u32>().unwrap();
        assert_eq!(PIDGUARD_VERSION_MAJOR, v(env!("CARGO_PKG_VERSION_MAJOR")));
        assert_eq!(PIDGUARD_VERSION_MINOR, v(env!("CARGO_PKG_VERSION_MINOR")));
        assert_eq!(PIDGUARD_VERSION_PATCH, v(env!("CARGO_PKG_VERSION_PATCH")));
        assert_eq!(PIDGUARD_VERSION_NUMBER, PIDGUARD_VERSION_MAJOR * 10000 + PIDGUARD_VERSION_MINOR * 100 + PIDGUARD_VERSION_PATCH);
        // SAFETY: pidguard_version returns a NUL-terminated static string.
        let text = unsafe { std::ffi::CStr::from_ptr(crate::pidguard_version()) };
        assert_eq!(text.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(pidguard_version_number(), PIDGUARD_VERSION_NUMBER);
    }
}
