//! The scope-only handle: a record whose first process is gone while its scope still holds
//! processes (a launcher that exits once the browser is up).

use super::ProcessRef;
use crate::identity::scope::Scope;
use crate::identity::verdict::{machine_facts, Judgement, Reason, Verdict};

impl ProcessRef {
    /// A handle for the recorded `pid`, which is gone (reaped: never signalled, never waited
    /// on), that reaches the record's `scope`: [`Self::signal_group`] and a termination reach
    /// every process of the scope and nothing else (each member pinned and proven inside it,
    /// checked against the scope's uid restriction); [`Self::signal`] answers `AlreadyGone`;
    /// [`Self::has_exited`] and [`Self::wait`] say exited at once; it has no pidfd
    /// ([`Self::pidfd_raw`] is `None`, [`Self::is_pinned`] false) and its
    /// [`judgement`](Self::judgement) is `Gone`. Making it sends nothing.
    ///
    /// `None` when this machine's facts cannot be read (no `/proc`): nothing can be judged.
    pub(crate) fn scope_only(pid: i32, scope: Scope) -> Option<ProcessRef> {
        let base = machine_facts().ok()?;
        // No process to read: the token says only this machine and boot (start ticks 0, which
        // no process has), so that nothing reads it as the recorded process's.
        let token = Some(base.token(0, None));
        Some(ProcessRef {
            pid,
            pidfd: None,
            pidfs_ino: None,
            stat: None,
            token,
            base,
            zombie_at_open: false,
            judgement: Judgement::new(Verdict::Gone, Reason::NoSuchProcess),
            unpinned_because: None,
            procfd: None,
            only_uid: None,
            skipped_for_uid: Default::default(),
            scope: Some(Box::new(scope)),
        })
    }
}
