//! `cleanup_background_hooks` (seed 000, SPEC §5): find every background hook's pidfile, stop
//! the hooks that are provably still themselves, drop the stale records, and finalize each.

pub(crate) mod cleanup;
mod finalize;

pub use cleanup::{cleanup_background_hooks, CleanupOptions, HookOutcome, HookReport};
pub use finalize::{new_id, MAX_LOG_BYTES};
pub(crate) use finalize::Index;
