//! The hook's `.sh` command file: written atomically as abx-dl writes it, read through the
//! strict opener (regular files of at most 1 MiB, UTF-8).

use std::path::Path;

use super::shlex::{join, recorded_argv};
use crate::error::{Error, Result};
use crate::pidfile::atomic;

/// Largest command file read (the cmd check reads only its last non-blank line).
const MAX_CMD_FILE: u64 = 1 << 20;

/// Write the command file as abx-dl's `write_cmd_file` writes it: `#!/bin/bash\n` +
/// [`join`]`(argv)` + `\n`, mode 0755 whatever the umask, through a temporary file and `rename`,
/// so a symlink at `path` is refused and nothing it points to is touched.
///
/// Like the original, an empty argv writes `#!/bin/bash\n\n` (a file with no recorded argv, which
/// the cmd rules skip), and an argument holding a line break is quoted the `shlex.join` way;
/// [`read_cmd_file`] reads such an argument back as one argument.
///
/// Errors: `InvalidArgument` for an argument holding a NUL (no file system or argv can hold
/// one); `Untrusted` when `path` is a symlink, FIFO or directory; `Io`/`PermissionDenied`/
/// `NotFound` from the file system.
pub fn write_cmd_file<S: AsRef<str>>(path: &Path, argv: &[S]) -> Result<()> {
    if argv.iter().any(|a| a.as_ref().contains('\0')) {
        return Err(Error::invalid(format!("{}: an argument holds a NUL byte", path.display())));
    }
    let text = format!("#!/bin/bash\n{}\n", join(argv));
    atomic::replace_file(path, text.as_bytes(), 0o755, |_| Ok(()))
}

/// The whole text of a command file and its recorded argv. `Ok(None)` when the file is missing.
///
/// The recorded argv is the last command of the file that holds a word, split as `shlex.split`
/// splits it: line breaks inside quotes belong to their argument (so every file
/// [`write_cmd_file`] writes reads back to the argv it was given), unquoted ones end a command.
/// When the file's quotes do not balance, the original's rule applies instead: the last
/// non-blank line, stripped, split; an unbalanced quote there gives no argv. An empty argv
/// (an empty file, only blank lines, an unbalanced last line) means "no recorded argv": the
/// cmd rules are then skipped, as in the original.
///
/// Errors: `Malformed` when the text is not UTF-8 (the original raises there, and answers
/// False); `Untrusted` when the file is not a regular file or too large; `HardLinked` (family
/// `Untrusted`) when the caller is privileged and the file has more than one link; `Io`
/// otherwise.
pub fn read_cmd_file(path: &Path) -> Result<Option<(String, Vec<String>)>> {
    read_cmd_opened(crate::pidfile::retire::open_strict(path), path).0
}

/// [`read_cmd_file`] of a file already opened with the strict opener (`pidfile::retire`), e.g.
/// from its directory's descriptor; `path` is its path, for messages. Also gives the uid owning
/// what was opened, when it was opened and examined (whatever it is: a planted FIFO too), so
/// that the caller can tell a file of the record's owner from one put there by another user.
pub(crate) fn read_cmd_opened(opened: std::io::Result<std::fs::File>, path: &Path) -> (CmdFileRead, Option<u32>) {
    use std::os::unix::fs::MetadataExt;
    let f = match opened {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return (Ok(None), None),
        Err(e) => return (Err(Error::io_at(path, "open", &e)), None),
    };
    let m = match f.metadata() {
        Ok(m) => m,
        Err(e) => return (Err(Error::io_at(path, "fstat", &e)), None),
    };
    if let Some(why) = crate::pidfile::refused_links(&m) {
        // Another name for it may be a root-only file linked into the user's tree: not read.
        return (Err(Error::at(crate::ErrorKind::HardLinked, path, why)), Some(m.uid()));
    }
    (read_examined(&f, &m, path), Some(m.uid()))
}

/// What [`read_cmd_file`] gives: the text and argv, `None` when the file is missing.
pub(crate) type CmdFileRead = Result<Option<(String, Vec<String>)>>;

fn read_examined(f: &std::fs::File, m: &std::fs::Metadata, path: &Path) -> CmdFileRead {
    if !m.is_file() || m.len() > MAX_CMD_FILE {
        return Err(Error::at(crate::ErrorKind::Untrusted, path, "not a regular file of at most 1 MiB"));
    }
    // A procfs file (`--cmd-file /proc/<pid>/cmdline`-like) reports size 0 whatever it holds:
    // read_bounded then reads until end of file, and one byte more than the limit tells "too
    // large".
    let buf = crate::pidfile::read_bounded(f, m.len(), MAX_CMD_FILE + 1).map_err(|e| Error::io_at(path, "read", &e))?;
    if buf.len() as u64 > MAX_CMD_FILE {
        return Err(Error::at(crate::ErrorKind::Untrusted, path, "not a regular file of at most 1 MiB"));
    }
    let text = String::from_utf8(buf).map_err(|_| Error::at(crate::ErrorKind::Malformed, path, "not UTF-8"))?;
    let argv = recorded_argv(&text);
    Ok(Some((text, argv)))
}
