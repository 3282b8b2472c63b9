//! The Rust example of README.md and docs/rust.md, shown there whole (below these lines);
//! `core/tests/docs_examples.rs` checks that the docs show this file and runs it.

use std::os::unix::process::CommandExt;
use std::process::Command;

use pidguard::{terminate, Policy, ProcessRef, TerminateOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A worker leading its own process group; record its start token with its pid.
    let mut child = Command::new("sleep").arg("60").process_group(0).spawn()?;
    let pid = child.id() as i32;
    let token = pidguard::start_token(pid)?;

    // Later: stop it and its group (TERM/2/KILL/1), only if it is still the recorded process.
    let h = ProcessRef::open(pid, Some(&token), Policy::Strict)?;
    let report = terminate(vec![h], &TerminateOptions::default()).remove(0);
    println!("{}", report.outcome); // exited after SIGTERM
    child.wait()?;

    // The same record once the process is gone: an error, never a signal to a new owner of the pid.
    let err = ProcessRef::open(pid, Some(&token), Policy::Strict).unwrap_err();
    println!("{}", err.kind()); // no-such-process
    Ok(())
}
