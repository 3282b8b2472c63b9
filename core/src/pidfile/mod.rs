//! Pidfile formats: the abx-dl mtime format (SPEC §3.1) and its `.sh` command file.

pub(crate) mod atomic;
pub mod cmd;
pub mod mtime;
pub(crate) mod target;
