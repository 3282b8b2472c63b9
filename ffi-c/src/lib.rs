//! The C ABI of pidguard: `libpidguard.so.0`, `libpidguard.a` and `include/pidguard.h`.
//!
//! This crate only converts: C arguments to core arguments, one call into `pidguard-core`, the
//! result to out-parameters and the error to a negative `PIDGUARD_E*` status. Every decision
//! lives in core.
//!
//! Rules every exported function follows (see `boundary.rs`):
//! - its body runs inside [`boundary::run`] (through the `ffi!` macro, or `boundary::get` for
//!   functions that read one value of an object), which catches panics (`PIDGUARD_EPANIC`) and
//!   turns a core error into `-kind.code()` plus the thread's last error message;
//! - every pointer goes through [`boundary::non_null`];
//! - all pointers are checked before anything happens, and outputs are written only on success;
//! - results are filled from core's report views (`pidguard_core::report`, `results.rs`); the
//!   only matches on core enums are the one `From` per C enum that gives its number (`types.rs`).
//!
//! The header is generated from the doc comments of this crate by cbindgen (`build.rs`), so
//! they are written for C programmers.
#![deny(missing_docs)]
#![allow(clippy::not_unsafe_ptr_arg_deref)]

#[macro_use]
mod boundary;
mod api;
mod guard;
mod last_error;
mod options;
mod probe;
mod process;
mod report;
mod results;
mod spawn;
mod status;
mod types;
mod version;

pub use api::*;
pub use guard::*;
pub use options::*;
pub use process::*;
pub use report::*;
pub use results::*;
pub use spawn::*;
pub use status::*;
pub use types::*;
pub use version::*;
