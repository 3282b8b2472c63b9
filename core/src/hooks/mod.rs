//! `cleanup_background_hooks`: find every background hook's pidfile, stop
//! the hooks that are provably still themselves, drop the stale records, and finalize each.

pub(crate) mod cleanup;
mod finalize;
mod listing;

pub use cleanup::{cleanup_background_hooks, CleanupOptions, HookOutcome, HookReport, MAX_THREADS, PARALLEL_MIN_HOOKS};
pub use finalize::{new_id, MAX_INDEX_LOG_BYTES, MAX_LOG_BYTES};
pub(crate) use finalize::Index;
