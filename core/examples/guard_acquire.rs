//! The guard-pidfile example of docs/rust.md, shown there whole (below these lines);
//! `core/tests/docs_examples.rs` checks that the docs show this file and runs it.

use pidguard::guard::{self, AcquireOptions, Entry};

fn main() -> pidguard::Result<()> {
    let dir = std::env::temp_dir().join(format!("pidguard-example-{}", std::process::id()));
    let path = dir.join("watchers/42.json");
    let me = Entry::current()?
        .with_field("session", "s1")
        .with_field("token_sha256", guard::token_sha256("the messaging secret"));
    let held = guard::acquire(&path, &me, &AcquireOptions::default())?;
    println!("{}", std::fs::read_to_string(&path).unwrap().trim_end());

    // A second instance is turned away and told who holds the guard, and why.
    let err = guard::acquire(&path, &Entry::current()?, &AcquireOptions::default()).unwrap_err();
    let holder = err.holder().unwrap();
    println!("{}: {:?}", err.kind(), holder.identity.unwrap().verdict); // held: Match

    drop(held); // removes our record, and only ours
    assert!(!guard::check(&path)?.found);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
