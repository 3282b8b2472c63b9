//! The directories of one cleanup, each listed once: the pidfile walk and every hook's
//! `output_files` come from the same listings.
//!
//! The walk that finds the pidfiles reads every directory under the output directory anyway;
//! it keeps the entries of the directories that hold hooks (and of their subdirectories), and
//! each hook's `output_files` is computed from them, once per directory and shared between the
//! hooks of that directory (`Arc`): abx-dl gives each plugin its own directory, but several
//! background hooks of one plugin share it, and a 10,000-hook cleanup with 100 hooks to a
//! directory holds 100 lists, not 10,000. A directory whose hook was signalled (its process may
//! have written its last outputs while it was being stopped) is listed once more, after its
//! batch was terminated and before any of its hooks is finalized.
//!
//! What a listing leaves out: the four files of every hook found in the cleanup (`<name>.pid`,
//! `.sh`, `.stdout.log`, `.stderr.log`: one hook's pidfile and logs are never another's output,
//! and leaving them all out makes the list the same whichever hook of the directory is
//! finalized first), and pidguard's own transient files (`*.pidguard-tmp`, `*.pidguard-retired`).

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One directory's entries, by name.
#[derive(Default)]
struct Entries {
    files: Vec<OsString>,
    dirs: Vec<OsString>,
    /// `(dev, inode)` of the directory listed (`fstat` of the descriptor it was read through).
    id: Option<(u64, u64)>,
}

/// The listings of one cleanup.
pub(crate) struct Listings {
    entries: HashMap<PathBuf, Entries>,
    /// The `<name>` of every hook found (the prefix of its four own files), by directory.
    hooks: HashMap<PathBuf, HashSet<OsString>>,
    /// Hook directories already listed again after their hooks were signalled.
    relisted: HashSet<PathBuf>,
    /// `output_files` per hook directory, computed once, shared by its hooks.
    memo: HashMap<PathBuf, Arc<[String]>>,
}

/// The name stripped of one of a hook's own suffixes, when it has one.
fn hook_prefix(name: &[u8]) -> Option<&[u8]> {
    [&b".stdout.log"[..], b".stderr.log", b".pid", b".sh"].iter().find_map(|s| name.strip_suffix(*s))
}

/// Shell-style glob with `*` and `?` over bytes.
pub(crate) fn glob_match(pat: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n, mut star, mut mark) = (0, 0, None, 0);
    while n < name.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some(p);
            mark = n;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            n = mark;
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

/// Read one directory (not following symlinks: a symlinked directory is an entry like a file),
/// and say which directory it was (its `(dev, inode)`). The cleanup's root is opened through the
/// tree's descriptor (`sys::Tree`), never by its name again.
fn read_entries(tree: &crate::sys::Tree, dir: &Path) -> std::io::Result<Entries> {
    use std::os::fd::AsFd;
    let mut out = Entries::default();
    // Opened as the sys layer opens (beneath the cleanup's root, no symlink on the way), then
    // listed through that very descriptor.
    let fd = tree.open_path(dir, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    out.id = crate::sys::fd_id(fd.as_fd()).ok();
    for (name, is_dir) in crate::sys::read_dir_fd(fd.as_fd())? {
        if is_dir {
            out.dirs.push(name);
        } else {
            out.files.push(name);
        }
    }
    Ok(out)
}

/// Walk one subtree serially: the matching paths and the listings of its directories.
fn walk_subtree(tree: &crate::sys::Tree, dir: PathBuf, pattern: &str) -> (Vec<PathBuf>, Vec<(PathBuf, Entries)>) {
    let (mut found, mut lists) = (Vec::new(), Vec::new());
    let mut stack = vec![dir];
    while let Some(dir) = stack.pop() {
        let Ok(e) = read_entries(tree, &dir) else { continue };
        for name in e.files.iter().chain(&e.dirs) {
            if glob_match(pattern.as_bytes(), name.as_encoded_bytes()) {
                found.push(dir.join(name));
            }
        }
        for d in &e.dirs {
            stack.push(dir.join(d));
        }
        lists.push((dir, e));
    }
    (found, lists)
}

impl Listings {
    /// Walk the tree from its root recursively (each directory opened beneath the tree), listing each directory once: returns every path whose name
    /// matches `pattern` (a directory where a pidfile should be is returned too: it is reported
    /// as not a regular file, not skipped silently), sorted, and the listings of the directories
    /// that hold one (with their subdirectories), for [`Self::output_files`]. Once `root` is
    /// read, `pool_for(number of its subdirectories)` may give a pool, on which the subtrees are
    /// walked; it is handed back for the rest of the cleanup.
    ///
    /// Errors: reading `root` itself. Unreadable subdirectories are skipped, as `Path.glob`
    /// does.
    #[allow(clippy::type_complexity)]
    pub(crate) fn walk(
        tree: &crate::sys::Tree,
        pattern: &str,
        pool_for: impl FnOnce(usize) -> Option<rayon::ThreadPool>,
    ) -> std::io::Result<(Vec<PathBuf>, Listings, Option<rayon::ThreadPool>)> {
        let root = tree.path();
        let top = read_entries(tree, root)?;
        let mut found = Vec::new();
        let mut entries = HashMap::new();
        for name in top.files.iter().chain(&top.dirs) {
            if glob_match(pattern.as_bytes(), name.as_encoded_bytes()) {
                found.push(root.join(name));
            }
        }
        let subdirs: Vec<PathBuf> = top.dirs.iter().map(|d| root.join(d)).collect();
        let pool = pool_for(subdirs.len());
        entries.insert(root.to_path_buf(), top);
        let walk_one = |d: PathBuf| walk_subtree(tree, d, pattern);
        let parts: Vec<(Vec<PathBuf>, Vec<(PathBuf, Entries)>)> = match &pool {
            Some(p) if subdirs.len() > 1 => {
                use rayon::prelude::*;
                p.install(|| subdirs.into_par_iter().map(walk_one).collect())
            }
            _ => subdirs.into_iter().map(walk_one).collect(),
        };
        for (f, e) in parts {
            found.extend(f);
            entries.extend(e);
        }
        // Paths are unique: an unstable sort gives the same order.
        found.sort_unstable();
        let mut hooks: HashMap<PathBuf, HashSet<OsString>> = HashMap::new();
        for p in &found {
            if let (Some(d), Some(stem)) = (p.parent(), p.file_stem()) {
                hooks.entry(d.to_path_buf()).or_default().insert(stem.to_os_string());
            }
        }
        // Keep only what some hook's output_files can reach: its directory and everything below.
        // Every listed directory is `root` or below it, and the path of one below it is longer
        // than root's: its ancestors are looked at only down to that length.
        if !hooks.contains_key(root) {
            let floor = root.as_os_str().len();
            entries.retain(|d, _| d.ancestors().take_while(|a| a.as_os_str().len() >= floor).any(|a| hooks.contains_key(a)));
        }
        let listings = Listings { entries, hooks, relisted: HashSet::new(), memo: HashMap::new() };
        Ok((found, listings, pool))
    }

    /// List `dir` and everything below it again (once per cleanup): its hook was signalled and
    /// may have written its last outputs meanwhile.
    pub(crate) fn relist(&mut self, tree: &crate::sys::Tree, dir: &Path) {
        if !self.relisted.insert(dir.to_path_buf()) {
            return;
        }
        self.entries.retain(|d, _| !d.starts_with(dir));
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(e) = read_entries(tree, &d) else { continue };
            for s in &e.dirs {
                stack.push(d.join(s));
            }
            self.entries.insert(d, e);
        }
        // A memoised list of this directory, or of one above it, may be out of date.
        self.memo.retain(|d, _| !dir.starts_with(d) && !d.starts_with(dir));
    }

    /// `(dev, inode)` of `dir` when it was last listed (by the walk, or again by [`Self::relist`]):
    /// its `output_files` describe that directory, and no other that holds its name later.
    pub(crate) fn dir_id(&self, dir: &Path) -> Option<(u64, u64)> {
        self.entries.get(dir).and_then(|e| e.id)
    }

    /// Files under `dir`, relative to it, sorted, without any hook's own four files or
    /// pidguard's transient files; one shared list per directory.
    pub(crate) fn output_files(&mut self, dir: &Path) -> Arc<[String]> {
        if let Some(l) = self.memo.get(dir) {
            return l.clone();
        }
        let list = self.compute(dir);
        self.memo.insert(dir.to_path_buf(), list.clone());
        list
    }

    /// The output lists of `dirs` not yet computed, computed with `map` (a parallel map of the
    /// cleanup's pool: the lists of 10,000 directories are independent of each other).
    pub(crate) fn prepare<'a>(&mut self, dirs: impl Iterator<Item = &'a Path>, map: impl FnOnce(&Self, Vec<PathBuf>) -> Vec<Arc<[String]>>) {
        let mut seen = HashSet::new();
        let todo: Vec<PathBuf> = dirs.filter(|d| !self.memo.contains_key(*d) && seen.insert(*d)).map(Path::to_path_buf).collect();
        let lists = map(self, todo.clone());
        self.memo.extend(todo.into_iter().zip(lists));
    }

    /// The output list of `dir` from the listings (see [`Self::output_files`]).
    pub(crate) fn compute(&self, dir: &Path) -> Arc<[String]> {
        let mut out = Vec::new();
        let mut stack = vec![(dir.to_path_buf(), String::new())];
        while let Some((d, prefix)) = stack.pop() {
            let Some(e) = self.entries.get(&d) else { continue };
            let stems = self.hooks.get(&d);
            for f in &e.files {
                use std::os::unix::ffi::OsStrExt;
                let name = f.as_bytes();
                if name.ends_with(b".pidguard-tmp") || name.ends_with(b".pidguard-retired") {
                    continue;
                }
                // By the bytes of the names: a hook whose name is not UTF-8 keeps its own files
                // out of the list too.
                if hook_prefix(name).is_some_and(|p| stems.is_some_and(|s| s.contains(std::ffi::OsStr::from_bytes(p)))) {
                    continue;
                }
                out.push(format!("{prefix}{}", crate::pathtext::path_text(f)));
            }
            for s in &e.dirs {
                stack.push((d.join(s), format!("{prefix}{}/", crate::pathtext::path_text(s))));
            }
        }
        out.sort();
        out.into()
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;
    #[test]
    fn globs() {
        assert!(glob_match(b"on_*.pid", b"on_Snapshot__20_x.bg.pid"));
        assert!(!glob_match(b"on_*.pid", b"on_x.pid.tmp"));
        assert!(!glob_match(b"on_*.pid", b"xon_a.pid"));
        assert!(glob_match(b"a?c", b"abc"));
        assert!(glob_match(b"*", b""));
    }
}
