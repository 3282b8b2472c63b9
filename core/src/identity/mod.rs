//! Process identity: the start token, the four verdicts, policies and the pinned handle.

mod delivery;
mod handle;
mod liveness;
mod probe;
mod process;
mod scope;
mod scope_open;
mod scope_walk;
mod leaf;
mod token;
mod verdict;

pub use handle::{Delivery, ExitStatus, GroupMode, PinMode, ProcessRef};
pub use liveness::{is_process_alive, probe_alive, thread_group_exited};
pub use probe::{judge, lookup, start_token};
pub use process::ProcessInfo;
pub use scope::{Scope, ScopeKind, ScopeRecord, ScopeState, SCOPE_XATTR};
pub(crate) use leaf::{adopt_into_leaf, create_leaf};
pub(crate) use scope_walk::SentBeforeError;
pub(crate) use process::{check_pid_range, create_time};
pub use token::{StartToken, TokenOs, TOKEN_PREFIX};
pub use verdict::{compare_tokens, judge_record, Judgement, Policy, Reason, Verdict};
