//! What a record allows: one table. Every operation on a pidfile — `check`, `validate`,
//! `status`, `probe`, `stop`, `pin` and the cleanup's judge — decides what a checked record
//! ([`CheckReason`](crate::CheckReason)) lets it do here, in one exhaustive `match` per operation with no catch-all:
//! a new reason does not compile until each operation has decided it. The operations themselves
//! (`crate::stop`, `crate::hooks::judge`, [`crate::probe`]) ask this module and act on the answer;
//! docs/design.md prints the table ([`markdown_table`]) and a test keeps the two equal.
//!
//! The rules the table follows: a failed read is never a fact about a process (`unverifiable`
//! keeps the record and sends nothing); only proof retires a record (`gone`, `mismatch`, and for
//! the abx-dl shapes abx-dl's own rejections); another machine's record is left alone; a probe
//! never acts.

mod rules;
mod table;

pub use rules::*;
pub use table::markdown_table;
