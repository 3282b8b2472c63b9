//! The progress line of a long cleanup: on stderr, only when stderr is a terminal and the
//! output is for humans, and only once the cleanup has taken longer than a second.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pidguard::HookReport;

/// How long a cleanup runs before the line appears.
const DELAY: Duration = Duration::from_secs(1);

/// A spinner with the number of hooks finished so far and the elapsed time.
pub struct Progress {
    bar: Option<ProgressBar>,
    done: Arc<AtomicBool>,
    count: Arc<AtomicUsize>,
    shower: Option<thread::JoinHandle<()>>,
}

impl Progress {
    /// Start timing; `human` is false for `--json`. Nothing is drawn when stderr is not a
    /// terminal (a pipe, a file, CI) or before [`DELAY`] has passed.
    pub fn start(human: bool) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        if !human || !std::io::stderr().is_terminal() {
            return Progress { bar: None, done, count, shower: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{spinner} cleanup: {msg}, {elapsed} elapsed").unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message("stopping hooks");
        let (b, d, t0) = (bar.clone(), done.clone(), Instant::now());
        let shower = thread::spawn(move || {
            while t0.elapsed() < DELAY {
                if d.load(Ordering::SeqCst) {
                    return;
                }
                thread::sleep(Duration::from_millis(20));
            }
            if !d.load(Ordering::SeqCst) {
                b.set_draw_target(ProgressDrawTarget::stderr());
                b.enable_steady_tick(Duration::from_millis(120));
            }
        });
        Progress { bar: Some(bar), done, count, shower: Some(shower) }
    }

    /// One hook was stopped (or judged stale) and is being finalized.
    pub fn hook_done(&self, r: &HookReport) {
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(b) = &self.bar {
            b.set_message(format!("{n} hooks finished (last: {} {})", r.name, r.outcome));
        }
    }

    /// The cleanup returned: clear the line.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(h) = self.shower.take() {
            let _ = h.join();
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
