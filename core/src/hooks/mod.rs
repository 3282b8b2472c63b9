//! `cleanup_background_hooks` (seed 000, SPEC §5): find every background hook's pidfile, stop
//! the hooks that are provably still themselves, drop the stale records, and finalize each.

pub(crate) mod cleanup;
mod finalize;

pub use cleanup::{cleanup_background_hooks, CleanupOptions, HookOutcome, HookReport};
pub use finalize::{default_finalize, new_id};
