//! pidguard's own threads: work done beside the calling thread when a thread can be made, and
//! on the calling thread when it cannot.
//!
//! A stop, a cleanup, anything that signals, must never depend on making a thread: a seccomp
//! profile that answers `clone3` with `EPERM` (Docker's default before 20.10; glibc falls back to
//! `clone` only on `ENOSYS`) makes every `pthread_create` fail, as does a `pids.max` reached
//! (`EAGAIN`). `std::thread::scope`'s `spawn` panics then; [`both`] does the work in turn instead.

use std::sync::Mutex;

use super::fault::{self, Call};

/// Run `side` and `main` and return both results: `side` on a new (scoped) thread named `name`
/// while `main` runs on the calling thread, or, when no thread can be made (any error of
/// `std::thread::Builder::spawn_scoped`, e.g. `EPERM` under a seccomp filter, `EAGAIN` under a
/// pids limit; or [`Call::ThreadSpawn`] injected), `main` then `side`, both on the calling
/// thread — the same results, taking as long as the two together. The failure is logged at
/// debug level, not returned: it is no error of the work.
///
/// A panic in `side` is resumed on the calling thread (a bug must not pass silently).
pub(crate) fn both<RA, RB>(name: &str, side: impl FnOnce() -> RA + Send, main: impl FnOnce() -> RB) -> (RA, RB)
where
    RA: Send,
{
    // The closure is taken out of the slot by whichever thread runs it: a spawn that fails
    // drops only the borrowing closure, and `side` is still here to run inline.
    let slot = Mutex::new(Some(side));
    let take = || slot.lock().unwrap_or_else(|p| p.into_inner()).take();
    std::thread::scope(|s| {
        let spawned = match fault::check(Call::ThreadSpawn) {
            Ok(()) => std::thread::Builder::new().name(name.to_string()).spawn_scoped(s, || take().map(|f| f())),
            Err(e) => Err(e),
        };
        match spawned {
            Ok(t) => {
                let b = main();
                match t.join() {
                    // `Some`: the spawned thread is the only taker while it runs.
                    Ok(a) => (a.expect("the side work ran on its thread"), b),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            Err(e) => {
                log::debug!("no thread for {name} ({e}): its work runs on the calling thread after the rest");
                let b = main();
                let a = take().expect("the side work was not run: its thread was never made");
                (a(), b)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::both;

    /// Both results, in their places, with and without a thread; without one, both ran on the
    /// calling thread.
    #[test]
    fn both_runs_each_once_with_or_without_a_thread() {
        let me = std::thread::current().id();
        let (a, b) = both("t", move || (1, std::thread::current().id() != me), || 2);
        assert_eq!((a, b), ((1, true), 2));
        #[cfg(feature = "fault-injection")]
        {
            use crate::sys::fault::{self, Call};
            fault::inject(Call::ThreadSpawn, libc::EPERM);
            let (a, b) = both("t", move || (1, std::thread::current().id() == me), || 2);
            fault::clear();
            assert_eq!((a, b), ((1, true), 2));
        }
    }
}
