//! Builds the C programs of `tests/c/` (and the README's C example) against the freshly built
//! `libpidguard.so` with `cc -std=c11 -Wall -Wextra -Werror -pedantic`, compiles the header as
//! C++ with `g++`, runs every program, then runs it again under
//! `valgrind --error-exitcode=1 --leak-check=full` when valgrind is installed (required when
//! `CI` is set).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Newest modification time of the files the library is built from.
fn newest_input() -> std::time::SystemTime {
    fn walk(p: &Path, newest: &mut std::time::SystemTime) {
        if let Ok(m) = std::fs::metadata(p) {
            if m.is_dir() {
                for e in std::fs::read_dir(p).unwrap().flatten() {
                    walk(&e.path(), newest);
                }
            } else if let Ok(t) = m.modified() {
                *newest = (*newest).max(t);
            }
        }
    }
    let mut newest = std::time::UNIX_EPOCH;
    for p in ["ffi-c/src", "ffi-c/build.rs", "ffi-c/Cargo.toml", "ffi-c/cbindgen.toml", "core/src", "core/Cargo.toml", "Cargo.lock"] {
        walk(&repo().join(p), &mut newest);
    }
    newest
}

/// The directory holding a `libpidguard.so` and `libpidguard.a` built from the current sources.
///
/// `cargo test` does not build a cdylib-only library target, so the one in `target/<profile>/`
/// is used only when it is newer than every source (as after `cargo build`, which
/// scripts/test.sh runs first) and was built as C users get it: `cargo build --workspace`
/// unifies core's `node` and `python` features (the report views as napi/pyo3 objects) into it,
/// and such a library needs the Node or Python runtime (undefined `napi_*`/`Py*` symbols).
/// Otherwise it is built here (`-p pidguard-ffi-c`, core's default features), into a target
/// directory of its own: the outer cargo holds the lock of the main one while tests run.
fn lib_build_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let profile_dir = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf();
        let so = profile_dir.join("libpidguard.so");
        let fresh = |so: &Path| {
            std::fs::metadata(so).and_then(|m| m.modified()).is_ok_and(|t| t >= newest_input())
                && so.with_extension("a").exists()
        };
        let alone = |so: &Path| {
            Command::new("nm").args(["-D", "--undefined-only"]).arg(so).output().is_ok_and(|o| {
                let text = String::from_utf8_lossy(&o.stdout);
                o.status.success() && !text.lines().any(|l| l.contains(" napi_") || l.contains(" Py"))
            })
        };
        if fresh(&so) && alone(&so) {
            return profile_dir;
        }
        let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-lib-target");
        eprintln!("{} is missing, stale or built with a binding's features: building the library into {}", so.display(), target.display());
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let out = Command::new(cargo)
            .args(["build", "-q", "-p", "pidguard-ffi-c", "--target-dir"])
            .arg(&target)
            .current_dir(repo())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", show("cargo build -p pidguard-ffi-c", &out));
        let dir = target.join("debug");
        let so = dir.join("libpidguard.so");
        assert!(fresh(&so) && alone(&so), "the library built in {} is not fresh or needs a binding's runtime", dir.display());
        dir
    })
}

/// Where the library to test lives (see [`lib_build_dir`]).
fn deps_dir() -> PathBuf {
    lib_build_dir().clone()
}

struct Env {
    root: PathBuf,
    lib: PathBuf,
}

/// A private copy of the library as `lib/libpidguard.so.0` (its soname) with the
/// `libpidguard.so` link the linker looks for, so programs load exactly this build.
fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("c-tests-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let lib = root.join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        let so = deps_dir().join("libpidguard.so");
        assert!(so.exists(), "{} not built", so.display());
        std::fs::copy(&so, lib.join("libpidguard.so.0")).unwrap();
        std::os::unix::fs::symlink("libpidguard.so.0", lib.join("libpidguard.so")).unwrap();
        Env { root, lib }
    })
}

fn show(what: &str, out: &Output) -> String {
    // valgrind 3.19 does not know pidfd_open and says so at every call: drop that noise.
    let noise = |l: &&str| {
        l.starts_with("--") && (l.contains("unhandled amd64-linux syscall") || l.contains("write your own handler") || l.contains("README_MISSING_SYSCALL") || l.contains("consider this a bug") || l.contains("bug_reports.html"))
    };
    let err = String::from_utf8_lossy(&out.stderr);
    let err: Vec<&str> = err.lines().filter(|l| !noise(l)).collect();
    format!("{what}: {}\n--- stdout\n{}--- stderr\n{}\n", out.status, String::from_utf8_lossy(&out.stdout), err.join("\n"))
}

fn compile(compiler: &str, std: &str, src: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let e = env();
    let bin = e.root.join(name);
    let mut cmd = Command::new(compiler);
    cmd.args([std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-g", "-pthread"])
        .arg("-I")
        .arg(repo().join("include"))
        .arg("-I")
        .arg(repo().join("tests/c"))
        .arg("-o")
        .arg(&bin)
        .arg(src)
        .arg(format!("-L{}", e.lib.display()))
        .arg(format!("-Wl,-rpath,{}", e.lib.display()))
        .args(extra)
        .arg("-lpidguard")
        .arg("-lm");
    let out = cmd.output().unwrap_or_else(|err| panic!("cannot run {compiler}: {err}"));
    assert!(out.status.success(), "{}", show(&format!("{compiler} {}", src.display()), &out));
    bin
}

fn valgrind() -> bool {
    let found = Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "valgrind is required in CI (scripts/setup-c.sh installs it)");
        eprintln!("skipped: valgrind is not installed");
    }
    found
}

/// Run `bin WORKDIR` natively, then under valgrind; returns the native stdout.
fn run(bin: &Path, name: &str) -> String {
    let e = env();
    let mut native = String::new();
    for under_valgrind in [false, true] {
        if under_valgrind && !valgrind() {
            break;
        }
        let work = e.root.join(format!("work-{name}-{}", if under_valgrind { "valgrind" } else { "native" }));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let mut cmd = if under_valgrind {
            let mut c = Command::new("valgrind");
            c.args(["--error-exitcode=1", "--leak-check=full", "--errors-for-leak-kinds=definite,possible", "--quiet"]).arg(bin);
            c
        } else {
            Command::new(bin)
        };
        let out = cmd.arg(&work).current_dir(&work).env("RUST_BACKTRACE", "0").output().unwrap();
        let what = format!("{} {}", if under_valgrind { "valgrind" } else { "run" }, bin.display());
        assert!(out.status.success(), "{}", show(&what, &out));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!("{what}: {}", stdout.lines().last().unwrap_or(""));
        if !under_valgrind {
            native = stdout;
        }
    }
    native
}

#[test]
fn seed_functions_on_real_processes() {
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/seed.c"), "seed", &[]);
    assert!(run(&bin, "seed").contains("checks passed"));
}

#[test]
fn every_status_null_arguments_and_truncated_buffers() {
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/status.c"), "status", &[]);
    assert!(run(&bin, "status").contains("checks passed"));
}

#[test]
fn guard_pidfiles_on_real_files() {
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/guard.c"), "guard", &[]);
    assert!(run(&bin, "guard").contains("checks passed"));
}

#[test]
fn a_pidfile_carries_its_owners_authority_for_a_caller_with_real_uid_0() {
    // Natively only: under valgrind 3.19 the caller's own stop of its user's process was refused
    // (untrusted-pidfile) while the same binary passes natively; the rule is not about memory.
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/authority.c"), "authority", &[]);
    let work = env().root.join("work-authority-native");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let out = Command::new(&bin).arg(&work).current_dir(&work).output().unwrap();
    assert!(out.status.success(), "{}", show("run authority", &out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("checks passed"));
}

#[test]
fn process_handles_on_real_process_groups() {
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/process.c"), "process", &[]);
    assert!(run(&bin, "process").contains("checks passed"));
}

#[test]
fn at_the_edges_leader_thread_exited_machine_id_no_proc() {
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/edges.c"), "edges", &[]);
    run(&bin, "edges");
}

#[test]
fn spawn_stops_a_scoped_tree_whole_and_refuses_bad_input() {
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/spawn.c"), "spawn", &[]);
    let out = run(&bin, "spawn");
    assert!(out.contains("checks passed"), "{out}");
}

/// tests/c/spawn.c's `hidden` part, natively, in a mount namespace where every cgroup2 mount is
/// unmounted: an explicit cgroup scope fails cleanly, auto takes a supervisor.
#[test]
fn spawn_with_cgroup2_hidden_fails_cleanly_or_takes_a_supervisor() {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mounts: Vec<&str> = mountinfo
        .lines()
        .filter_map(|l| l.split_once(" - "))
        .filter(|(_, r)| r.split(' ').next() == Some("cgroup2"))
        .filter_map(|(l, _)| l.split(' ').nth(4))
        .collect();
    let can = Command::new("unshare").args(["--mount", "true"]).output().is_ok_and(|o| o.status.success());
    if mounts.is_empty() || !can {
        eprintln!("skipped: needs a cgroup2 mount to hide and a mount namespace (root)");
        return;
    }
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/spawn.c"), "spawn_hidden", &[]);
    let work = env().root.join("work-spawn-hidden");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let umounts: Vec<String> = mounts.iter().map(|m| format!("umount -l {m}")).collect();
    let out = Command::new("unshare")
        .args(["--mount", "sh", "-c", &format!("{}; exec \"$0\" \"$@\"", umounts.join("; "))])
        .arg(&bin)
        .arg(&work)
        .arg("hidden")
        .current_dir(&work)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show("spawn hidden", &out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("checks passed"));
}

#[test]
fn two_threads_keep_their_own_last_error() {
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/threads.c"), "threads", &[]);
    assert!(run(&bin, "threads").contains("checks passed"));
}

#[test]
fn header_compiles_as_cpp() {
    let bin = compile("g++", "-std=c++11", &repo().join("tests/c/header.cpp"), "header_cpp", &[]);
    assert!(run(&bin, "header_cpp").contains("checks passed"));
}

/// The first ```c block of the README's `## C` section.
fn readme_example() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut section = &readme[readme.find("\n## C\n").expect("README has a `## C` section") + 1..];
    section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let block = section.split("```c\n").nth(1).expect("a ```c block in the README's `## C`");
    block[..block.find("```").unwrap()].to_string()
}

/// The `n`th (from 0) ```c block of docs/c.md.
fn docs_c_block(n: usize) -> String {
    let page = std::fs::read_to_string(repo().join("docs/c.md")).unwrap();
    let mut blocks = page.split("```c\n").skip(1);
    let block = blocks.nth(n).unwrap_or_else(|| panic!("no ```c block number {n} in docs/c.md"));
    block[..block.find("```").unwrap()].to_string()
}

#[test]
fn readme_c_example_runs() {
    let src = env().root.join("readme_example.c");
    std::fs::write(&src, readme_example()).unwrap();
    let bin = compile("cc", "-std=c11", &src, "readme_example", &[]);
    let out = run(&bin, "readme_example");
    assert!(out.contains("stopped: yes"), "{out}");
}

#[test]
fn docs_c_example_runs() {
    let src = env().root.join("docs_example.c");
    std::fs::write(&src, docs_c_block(0)).unwrap();
    let bin = compile("cc", "-std=c11", &src, "docs_example", &[]);
    let out = run(&bin, "docs_example");
    assert!(out.contains("worker.pid valid: yes"), "{out}");
    assert!(out.contains("stopped"), "{out}");
}

#[test]
fn docs_c_guard_example_runs() {
    let src = env().root.join("readme_guard.c");
    std::fs::write(&src, docs_c_block(1)).unwrap();
    let bin = compile("cc", "-std=c11", &src, "readme_guard", &[]);
    let out = run(&bin, "readme_guard");
    assert!(out.contains("guard taken"), "{out}");
}

#[test]
fn docs_c_process_example_runs() {
    let src = env().root.join("readme_process.c");
    std::fs::write(&src, docs_c_block(2)).unwrap();
    let bin = compile("cc", "-std=c11", &src, "readme_process", &[]);
    let out = run(&bin, "readme_process");
    assert!(out.contains("group stopped after signal 15"), "{out}");
}

/// Natively only: a scope is stopped through pidfds, which valgrind 3.19 does not give
/// (tests/c/spawn.c runs the rest under valgrind).
#[test]
fn docs_c_spawn_example_runs() {
    let src = env().root.join("docs_spawn.c");
    std::fs::write(&src, docs_c_block(3)).unwrap();
    let bin = compile("cc", "-std=c11", &src, "docs_spawn", &[]);
    let work = env().root.join("work-docs-spawn");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let o = Command::new(&bin).current_dir(&work).output().unwrap();
    assert!(o.status.success(), "{}", show("docs spawn example", &o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("stopped: the whole tree"), "{out}");
    assert!(out.contains("killed by signal 15"), "{out}");
}

/// The version check of docs/c.md ("Versions and the ABI"): the library's run-time version is
/// the header's.
#[test]
fn docs_c_version_example_runs() {
    let src = env().root.join("docs_version.c");
    std::fs::write(&src, docs_c_block(4)).unwrap();
    let bin = compile("cc", "-std=c11", &src, "docs_version", &[]);
    let out = run(&bin, "docs_version");
    assert_eq!(out.trim(), concat!("libpidguard ", env!("CARGO_PKG_VERSION")), "{out}");
}

#[test]
fn shared_library_has_its_soname() {
    let out = Command::new("readelf").arg("-d").arg(deps_dir().join("libpidguard.so")).output();
    let Ok(out) = out else {
        eprintln!("skipped: readelf is not installed");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Library soname: [libpidguard.so.0]"), "{text}");
    // And programs record that name, so they load libpidguard.so.0.
    let bin = compile("cc", "-std=c11", &repo().join("tests/c/threads.c"), "threads_soname", &[]);
    let out = Command::new("readelf").arg("-d").arg(&bin).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Shared library: [libpidguard.so.0]"));
}

#[test]
fn static_library_links() {
    let e = env();
    let src = e.root.join("readme_example_static.c");
    std::fs::write(&src, readme_example()).unwrap();
    let bin = e.root.join("readme_example_static");
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(repo().join("include"))
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .arg(deps_dir().join("libpidguard.a"))
        .args(["-lpthread", "-ldl", "-lm", "-lgcc_s", "-lrt", "-lutil"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show("cc (static)", &out));
    let work = e.root.join("work-static");
    std::fs::create_dir_all(&work).unwrap();
    let out = Command::new(&bin).current_dir(&work).output().unwrap();
    assert!(out.status.success(), "{}", show("static example", &out));
}
