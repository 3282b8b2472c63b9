//! `cleanup_background_hooks`: find every background hook's pidfile, stop
//! the hooks that are provably still themselves, drop the stale records, and finalize each.

mod cleanup;
mod finalize;
mod judge;
mod listing;
mod records;
pub(crate) mod outcome;

pub use cleanup::{cleanup_background_hooks, MAX_THREADS, PARALLEL_MIN_HOOKS};
pub use outcome::{CleanupOptions, HookOutcome, HookReport};
pub use finalize::{MAX_INDEX_LOG_BYTES, MAX_LOG_BYTES};
pub use records::new_id;
pub(crate) use finalize::Index;
pub(crate) use listing::glob_match;
