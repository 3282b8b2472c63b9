//! Every ```rust block of README.md and docs/*.md is a whole file of core/examples/ (its code
//! after the leading `//!` lines), and every example shown runs and prints what its
//! `println!(…); // expected` comments say.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The ```rust blocks of a markdown file.
fn rust_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        match (&mut cur, line) {
            (None, "```rust") => cur = Some(String::new()),
            (Some(b), "```") => {
                out.push(std::mem::take(b));
                cur = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// An example's code as the docs show it: without its leading `//!` lines and the blank after.
fn shown(example: &str) -> String {
    let body: Vec<&str> = example.lines().skip_while(|l| l.starts_with("//!")).skip_while(|l| l.is_empty()).collect();
    body.join("\n") + "\n"
}

fn docs() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

fn run_example(name: &str) -> String {
    // cargo test builds the examples beside the test binaries' directory.
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("examples").join(name);
    if !bin.exists() {
        let st = Command::new(env!("CARGO")).args(["build", "-q", "-p", "pidguard-core", "--example", name]).status();
        assert!(st.unwrap().success());
    }
    let out = Command::new(&bin).output().unwrap();
    assert!(out.status.success(), "example {name}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_rust_block_of_the_docs_is_an_example_that_runs_and_prints_what_it_says() {
    let mut examples: Vec<(String, String)> = std::fs::read_dir(root().join("core/examples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), shown(&std::fs::read_to_string(&p).unwrap())))
        .collect();
    examples.sort();
    let mut seen = 0;
    for file in docs() {
        for block in rust_blocks(&std::fs::read_to_string(&file).unwrap()) {
            let Some((name, code)) = examples.iter().find(|(_, code)| *code == block) else {
                panic!("{}: a ```rust block that is no file of core/examples/ (show the whole file):\n{block}", file.display());
            };
            let expected: Vec<&str> = code
                .lines()
                .filter(|l| l.trim_start().starts_with("println!"))
                .filter_map(|l| l.split_once("; // ").map(|(_, c)| c.trim()))
                .collect();
            let out = run_example(name);
            let printed: Vec<&str> = out.lines().collect();
            let mut at = 0;
            for want in &expected {
                let Some(i) = printed[at..].iter().position(|l| l == want) else {
                    panic!("{}: example {name} did not print {want:?} (printed {printed:?})", file.display());
                };
                at += i + 1;
            }
            seen += 1;
        }
    }
    assert!(seen >= 2, "the README and docs/rust.md show the Rust examples ({seen} found)");
}
