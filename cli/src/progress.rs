//! The progress line of a long cleanup or stop: on stderr, only when stderr is a terminal and the
//! output is for humans, and only once the cleanup has taken longer than a second. It shows the
//! directory and the time elapsed; core's cleanup does not report hooks one by one while it
//! runs (its finalize callback would replace the default finalize), so no count is shown.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a cleanup runs before the line appears.
const DELAY: Duration = Duration::from_secs(1);

/// A spinner with the directory and the elapsed time.
pub struct Progress {
    bar: Option<ProgressBar>,
    done: Arc<AtomicBool>,
    shower: Option<thread::JoinHandle<()>>,
}

impl Progress {
    /// Start timing; `human` is false for `--json`. Nothing is drawn when stderr is not a
    /// terminal (a pipe, a file, CI) or before [`DELAY`] has passed.
    pub fn start(human: bool, dir: &Path) -> Progress {
        Progress::spinner(human, "cleanup", format!("stopping the hooks under {}", dir.display()))
    }

    /// The same line for `stop` while it waits out its schedule: "stop: stopping PIDFILE
    /// (schedule S)", drawn only on a terminal, for humans, after [`DELAY`].
    pub fn stop(human: bool, pidfile: &Path, schedule: &str) -> Progress {
        Progress::spinner(human, "stop", format!("stopping {} (schedule {schedule})", pidfile.display()))
    }

    /// A spinner "`{label}: {msg}, {elapsed} elapsed`"; see [`Progress::start`].
    fn spinner(human: bool, label: &str, msg: String) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        if !human || !std::io::stderr().is_terminal() {
            return Progress { bar: None, done, shower: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(&format!("{{spinner}} {label}: {{msg}}, {{elapsed}} elapsed"))
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(msg);
        let (b, d, t0) = (bar.clone(), done.clone(), Instant::now());
        // One thread of our own draws the line (indicatif's steady tick would start another,
        // and panic when it cannot). A thread that cannot be started — EAGAIN under a pids
        // limit (nubjs/nub PR #136) — means no spinner, never a panic: the cleanup runs anyway.
        let spawned = thread::Builder::new().name("pidguard-progress".into()).spawn(move || {
            while t0.elapsed() < DELAY {
                if d.load(Ordering::SeqCst) {
                    return;
                }
                thread::sleep(Duration::from_millis(20));
            }
            b.set_draw_target(ProgressDrawTarget::stderr());
            while !d.load(Ordering::SeqCst) {
                b.tick();
                thread::sleep(Duration::from_millis(120));
            }
        });
        let shower = match spawned {
            Ok(h) => h,
            Err(e) => {
                log::debug!("no progress line: its thread could not be started ({e})");
                return Progress { bar: None, done, shower: None };
            }
        };
        Progress { bar: Some(bar), done, shower: Some(shower) }
    }

    /// The cleanup or stop returned: clear the line.
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
