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
//! batch was terminated and before any of its hooks is finalized. A directory that holds hooks
//! and no subdirectory is handed, with the descriptor it was listed through, to the cleanup's
//! visitor ([`Visit`]), which may finish its hooks there; the listings of such directories are
//! kept only when a directory above them holds hooks too.
//!
//! What a listing leaves out: the four files of every hook found in the cleanup (`<name>.pid`,
//! `.sh`, `.stdout.log`, `.stderr.log`: one hook's pidfile and logs are never another's output,
//! and leaving them all out makes the list the same whichever hook of the directory is
//! finalized first), and pidguard's own transient files (`*.pidguard-tmp`, `*.pidguard-retired`).

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One directory's entries, by name: the names one after another in one buffer (two
/// allocations per directory listed, not one per entry).
#[derive(Default)]
struct Entries {
    names: Vec<u8>,
    /// Where each name ends in `names`, and whether it is a directory; in the order read.
    ends: Vec<(usize, bool)>,
    /// `(dev, inode)` of the directory listed (`fstat` of the descriptor it was read through).
    id: Option<(u64, u64)>,
}

impl Entries {
    fn push(&mut self, name: &[u8], is_dir: bool) {
        if self.ends.capacity() == 0 {
            // A hook's directory holds its four files and a few more: one allocation each.
            self.names.reserve(256);
            self.ends.reserve(8);
        }
        self.names.extend_from_slice(name);
        self.ends.push((self.names.len(), is_dir));
    }

    /// Every entry: its name and whether it is a directory.
    fn all(&self) -> impl Iterator<Item = (&OsStr, bool)> + '_ {
        use std::os::unix::ffi::OsStrExt;
        let mut start = 0;
        self.ends.iter().map(move |&(end, is_dir)| {
            let name = OsStr::from_bytes(&self.names[start..end]);
            start = end;
            (name, is_dir)
        })
    }

    /// The entries that are not directories.
    fn files(&self) -> impl Iterator<Item = &OsStr> + '_ {
        self.all().filter(|(_, d)| !d).map(|(n, _)| n)
    }

    /// The subdirectories (not following symlinks).
    fn dirs(&self) -> impl Iterator<Item = &OsStr> + '_ {
        self.all().filter(|(_, d)| *d).map(|(n, _)| n)
    }

    fn has_dirs(&self) -> bool {
        self.ends.iter().any(|(_, d)| *d)
    }
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
    let (fd, mut e) = list(tree, dir)?;
    e.id = fd.id().ok();
    Ok(e)
}

/// Open one directory for reading (beneath the cleanup's root, no symlink on the way) and list
/// it through that very descriptor, which is handed back with the entries (their `id` unset).
fn list(tree: &crate::sys::Tree, dir: &Path) -> std::io::Result<(crate::sys::DirFd, Entries)> {
    let mut out = Entries::default();
    let fd = tree.listed_dir(dir)?;
    fd.for_each_entry(|name, is_dir| out.push(name, is_dir))?;
    Ok((fd, out))
}

/// What the walk is given for a directory that holds hooks and no subdirectory, while the
/// descriptor it was listed through is open: the directory, that descriptor, its hooks' paths
/// (sorted), their shared `output_files` (every file of the directory but the hooks' own and
/// pidguard's transient ones) and the cleanup's pool (see [`LazyPool`]). The visitor finishes
/// them there (their reports) or leaves them to the cleanup's batches (`None`).
pub(crate) type Visit<'v> =
    &'v (dyn Fn(&Path, crate::sys::DirFd, &[PathBuf], Arc<[String]>, &LazyPool<'_>) -> Result<Vec<super::HookReport>, crate::sys::DirFd> + Sync);

/// The cleanup's thread pool, made once, the first time a piece of work asks for one with at
/// least `min` items (a top directory with that many subdirectories or hooks, a directory with
/// that many hooks): `make(items)` may still decline (one core, no thread could be started).
pub(crate) struct LazyPool<'m> {
    cell: std::sync::OnceLock<Option<rayon::ThreadPool>>,
    make: &'m (dyn Fn(usize) -> Option<rayon::ThreadPool> + Sync),
    min: usize,
}

impl<'m> LazyPool<'m> {
    /// A pool not made yet.
    pub(crate) fn new(make: &'m (dyn Fn(usize) -> Option<rayon::ThreadPool> + Sync), min: usize) -> Self {
        LazyPool { cell: std::sync::OnceLock::new(), make, min }
    }

    /// The pool for `items` items of work: the one already made, or one made now when there are
    /// at least `min` of them; `None` to work on the calling thread.
    pub(crate) fn get(&self, items: usize) -> Option<&rayon::ThreadPool> {
        if let Some(p) = self.cell.get() {
            return p.as_ref();
        }
        if items < self.min {
            return None;
        }
        self.cell.get_or_init(|| (self.make)(items)).as_ref()
    }

    /// The pool, if one was made.
    pub(crate) fn into_inner(self) -> Option<rayon::ThreadPool> {
        self.cell.into_inner().flatten()
    }
}

/// The matches of `pattern` in one listed directory `dir`: handed to `visit` with `fd` when the
/// directory has no subdirectory and a visitor is given; otherwise (or when the visitor leaves
/// them, handing `fd` back) added to `found`, and the directory's `id` is taken from `fd` (the
/// batches compare it with the directory they judge in). Finished reports go to `done`, and the
/// finished hooks' paths to `finished` when it is given (a directory whose listing is kept for
/// the `output_files` of a hook above it: its hooks' own files are left out of those). Whether
/// the directory holds hooks left to the batches.
#[allow(clippy::too_many_arguments)]
fn matches_in(
    dir: &Path,
    fd: crate::sys::DirFd,
    e: &mut Entries,
    pattern: &str,
    visit: Option<Visit<'_>>,
    pool: &LazyPool<'_>,
    found: &mut Vec<PathBuf>,
    done: &mut Vec<super::HookReport>,
    finished: Option<&mut Vec<PathBuf>>,
) -> bool {
    let start = found.len();
    for name in e.files().chain(e.dirs()) {
        if glob_match(pattern.as_bytes(), name.as_encoded_bytes()) {
            found.push(super::outcome::joined(dir, name));
        }
    }
    if found.len() == start {
        return false;
    }
    let fd = match (visit, !e.has_dirs()) {
        (Some(v), true) => {
            found[start..].sort_unstable();
            let here = &found[start..];
            let mut stems: Vec<&[u8]> = here.iter().filter_map(|p| p.file_stem().map(|s| s.as_encoded_bytes())).collect();
            stems.sort_unstable();
            match v(dir, fd, here, leaf_output_files(e.files(), &stems), pool) {
                Ok(reports) => {
                    match finished {
                        Some(f) => f.extend(found.drain(start..)),
                        None => found.truncate(start),
                    }
                    done.extend(reports);
                    return false;
                }
                Err(fd) => fd,
            }
        }
        _ => fd,
    };
    e.id = fd.id().ok();
    true
}

/// The output list of a directory without subdirectories (see [`Listings::compute`]); `stems`
/// (sorted) are its hooks'. The shared empty list when there is nothing else in it.
fn leaf_output_files<'a>(files: impl Iterator<Item = &'a OsStr>, stems: &[&[u8]]) -> Arc<[String]> {
    use std::os::unix::ffi::OsStrExt;
    let mut out: Vec<String> = files
        .filter(|f| {
            let name = f.as_bytes();
            !(name.ends_with(b".pidguard-tmp") || name.ends_with(b".pidguard-retired") || hook_prefix(name).is_some_and(|p| stems.binary_search(&p).is_ok()))
        })
        .map(|f| crate::pathtext::path_text(f).into_owned())
        .collect();
    if out.is_empty() {
        return super::outcome::no_files();
    }
    out.sort();
    out.into()
}

/// Walk one subtree serially: the matching paths left to the batches (see [`matches_in`]), the
/// listings that their `output_files` need (of the directories that hold such hooks and of
/// everything below a directory that holds hooks: `under_hooks` for the subtree's top), the
/// reports of the hooks finished during the walk, and the paths of those of them whose
/// directory's listing is kept (their files are no output of a hook above them).
#[allow(clippy::type_complexity)]
fn walk_subtree(
    tree: &crate::sys::Tree,
    dir: PathBuf,
    pattern: &str,
    visit: Option<Visit<'_>>,
    pool: &LazyPool<'_>,
    under_hooks: bool,
) -> (Vec<PathBuf>, Vec<(PathBuf, Entries)>, Vec<super::HookReport>, Vec<PathBuf>) {
    let (mut found, mut lists, mut done, mut finished) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut stack = vec![(dir, under_hooks)];
    while let Some((dir, under)) = stack.pop() {
        let Ok((fd, mut e)) = list(tree, &dir) else { continue };
        // A directory with hooks and subdirectories is never finished during the walk: what is
        // below it is listed for its output_files.
        let pending = matches_in(&dir, fd, &mut e, pattern, visit, pool, &mut found, &mut done, under.then_some(&mut finished));
        for d in e.dirs() {
            stack.push((super::outcome::joined(&dir, d), under || pending));
        }
        if under || pending {
            lists.push((dir, e));
        }
    }
    (found, lists, done, finished)
}

impl Listings {
    /// Walk the tree from its root recursively (each directory opened beneath the tree), listing each directory once: returns every path whose name
    /// matches `pattern` (a directory where a pidfile should be is returned too: it is reported
    /// as not a regular file, not skipped silently), sorted, and the listings of the directories
    /// that hold one (with their subdirectories), for [`Self::output_files`] (only for the paths
    /// left to the batches: see `visit`). Once `root` is
    /// read, `pool` is asked for a pool for the number of its subdirectories (or of its own
    /// hooks, when more), on which the subtrees are walked; the pool made, if any, is handed
    /// back for the rest of the cleanup.
    ///
    /// With `visit`, each directory that holds hooks and no subdirectory is given to it while
    /// the descriptor it was listed through is open (see [`Visit`]): the hooks it finishes are
    /// not among the returned paths, and their reports are returned (in no particular order, in
    /// several vectors).
    ///
    /// Errors: reading `root` itself. Unreadable subdirectories are skipped, as `Path.glob`
    /// does.
    #[allow(clippy::type_complexity)]
    pub(crate) fn walk(
        tree: &crate::sys::Tree,
        pattern: &str,
        pool: LazyPool<'_>,
        visit: Option<Visit<'_>>,
    ) -> std::io::Result<(Vec<PathBuf>, Listings, Option<rayon::ThreadPool>, Vec<Vec<super::HookReport>>)> {
        let root = tree.path();
        let (fd, mut top) = list(tree, root)?;
        let subdirs: Vec<PathBuf> = top.dirs().map(|d| super::outcome::joined(root, d)).collect();
        let (mut found, mut done) = (Vec::new(), Vec::new());
        // Nothing is above the root: its finished hooks are no one's output.
        let root_pending = matches_in(root, fd, &mut top, pattern, visit, &pool, &mut found, &mut done, None);
        let mut entries = HashMap::new();
        if root_pending {
            entries.insert(root.to_path_buf(), top);
        }
        let walk_one = |d: PathBuf| walk_subtree(tree, d, pattern, visit, &pool, root_pending);
        let parts: Vec<(Vec<PathBuf>, Vec<(PathBuf, Entries)>, Vec<super::HookReport>, Vec<PathBuf>)> = match pool.get(subdirs.len()) {
            Some(p) if subdirs.len() > 1 => {
                use rayon::prelude::*;
                // One subtree per piece of work (see `cleanup::par_map`).
                p.install(|| subdirs.into_par_iter().with_max_len(1).map(walk_one).collect())
            }
            _ => subdirs.into_iter().map(walk_one).collect(),
        };
        // The reports stay in the subtrees' vectors (10,000 reports of ~300 bytes moved into
        // one growing vector were 3 % of a cleanup of stale records): they are moved once, into
        // the cleanup's sorted result.
        let mut done = vec![done];
        let mut finished = Vec::new();
        for (f, e, d, fin) in parts {
            found.extend(f);
            entries.extend(e);
            if !d.is_empty() {
                done.push(d);
            }
            finished.extend(fin);
        }
        // Paths are unique: an unstable sort gives the same order.
        found.sort_unstable();
        // Every hook found, finished during the walk or not, keeps its four files out of the
        // lists of the directories above it (of those listings kept: see `walk_subtree`). The
        // finished ones are named by the paths the walk finished, not by their reports: with an
        // index, a finished hook's report waits in the cleanup's batch of index records until
        // after the walk. (Without a kept listing, as for every directory finished during the
        // walk below no other hook, there is nothing to keep them out of.)
        let mut hooks: HashMap<PathBuf, HashSet<OsString>> = HashMap::new();
        if !entries.is_empty() {
            for p in found.iter().chain(&finished) {
                if let (Some(d), Some(stem)) = (p.parent(), p.file_stem()) {
                    if entries.contains_key(d) {
                        hooks.entry(d.to_path_buf()).or_default().insert(stem.to_os_string());
                    }
                }
            }
        }
        let listings = Listings { entries, hooks, relisted: HashSet::new(), memo: HashMap::new() };
        Ok((found, listings, pool.into_inner(), done))
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
            for s in e.dirs() {
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
            for f in e.files() {
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
            for s in e.dirs() {
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
