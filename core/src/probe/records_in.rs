//! "Is anything recorded in this directory still in use?": every record a layout names there,
//! whatever kind of file stands at its name, asked of the probe — for a sweep that must not
//! decide by itself which entries count (abx-plugins' `killZombieChrome`: a session is in use
//! while one of its hook records is).

use std::path::Path;

use crate::options::CheckOptions;
use crate::ops::Answer;
use crate::pathtext::path_text;

/// Which names in a directory are records of one kind: each given part must match (a name
/// that starts with `prefix`, holds `contains` and ends with `suffix`), and a name in `except`
/// never is one. Matched on the name's bytes; the file's type is not asked (a FIFO, directory
/// or symlink at a record's name is a record that cannot be used). abx-plugins' hook records
/// of a Chrome session are `{ prefix: "on_", contains: "chrome_", suffix: ".pid", except:
/// ["chrome.pid"] }`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "RecordNames"))]
pub struct RecordNames {
    /// The name starts with this (default: any).
    pub prefix: Option<String>,
    /// The name holds this (default: any).
    pub contains: Option<String>,
    /// The name ends with this (default: any).
    pub suffix: Option<String>,
    /// Names that are never records (default: none).
    pub except: Option<Vec<String>>,
}

impl RecordNames {
    /// Whether `name` (a file name's bytes) is one of these records.
    pub fn matches(&self, name: &[u8]) -> bool {
        let has = |part: &Option<String>, f: &dyn Fn(&[u8]) -> bool| part.as_ref().is_none_or(|p| f(p.as_bytes()));
        has(&self.prefix, &|p| name.starts_with(p))
            && has(&self.suffix, &|p| name.ends_with(p))
            && has(&self.contains, &|p| p.is_empty() || name.windows(p.len()).any(|w| w == p))
            && !self.except.as_ref().is_some_and(|e| e.iter().any(|x| x.as_bytes() == name))
    }
}

/// What [`records_in_use`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "node", napi_derive::napi(object, js_name = "RecordsInUse", object_from_js = false))]
pub struct RecordsInUse {
    /// Whether what the directory records is in use: true while any record in it is in use —
    /// its process runs, its scope still holds processes — or cannot be judged (unusable:
    /// not a regular file, unreadable, a bad token; undecided: an identity that cannot be
    /// read, another machine's record; a probe that failed), and when the directory itself
    /// could not be listed. False only when every record was proven not in use (or there is
    /// none).
    pub in_use: bool,
    /// How many records were found (names matched, whatever their file type).
    pub records: u32,
    /// One line per record that keeps the directory in use: `<name>: <answer> (<reason>)`, or
    /// `<name>: <error>`; the name in core's lossless text form (`path_text`).
    pub evidence: Vec<String>,
    /// Why the directory could not be listed (it then counts as in use), else `None`.
    pub error: Option<String>,
}

/// Probe every record `names` selects in `dir` ([`crate::probe_pid_file`], with the `.sh`
/// beside an abx-dl pidfile as its recorded command): never signals, removes or waits. The
/// directory is opened once (`O_NOFOLLOW`: a symlink at `dir` is an error; a privileged
/// caller's path walked with the no-unsafe-transition rule) and listed through that
/// descriptor; each entry whose name matches counts, whatever its type, so a record a user
/// replaced with a FIFO, a directory or a symlink — or made unreadable — keeps the directory
/// in use, as the decision table says of an unusable record. A record moved out of the
/// directory (or renamed to a name `names` does not select) is no evidence here: a sweep must
/// ask about the processes too (abx-plugins' hook processes, [`crate::probe::processes_running`]).
/// Never fails: what cannot be read is in use.
pub fn records_in_use(dir: &Path, names: &RecordNames) -> RecordsInUse {
    let mut out = RecordsInUse::default();
    let listed = crate::sys::DirFd::open_listed(dir, crate::protect::walk()).and_then(|d| {
        let mut found = Vec::new();
        d.for_each_entry(|name, _| {
            if names.matches(name) {
                found.push(name.to_vec());
            }
        })?;
        Ok(found)
    });
    let found = match listed {
        Ok(f) => f,
        Err(e) => {
            out.in_use = true;
            out.error = Some(format!("{}: cannot be listed: {e}", path_text(dir.as_os_str())));
            return out;
        }
    };
    out.records = found.len() as u32;
    for name in found {
        let name = std::ffi::OsString::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&name));
        let shown = path_text(&name).into_owned();
        let line = match crate::probe_pid_file(&dir.join(&name), &CheckOptions::default()) {
            Ok(p) if !p.in_use() => continue,
            Ok(p) => {
                let answer = match p.answer {
                    Answer::Running => "in use",
                    Answer::Undecided => "undecided",
                    Answer::Unusable => "unusable",
                    Answer::NotRunning => "not running",
                };
                format!("{shown}: {answer} ({})", p.check.reason)
            }
            Err(e) => format!("{shown}: {e}"),
        };
        out.in_use = true;
        out.evidence.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::RecordNames;

    #[test]
    fn abx_plugins_hook_record_names() {
        let n = RecordNames {
            prefix: Some("on_".into()),
            contains: Some("chrome_".into()),
            suffix: Some(".pid".into()),
            except: Some(vec!["chrome.pid".into()]),
        };
        assert!(n.matches(b"on_CrawlSetup__90_chrome_launch.daemon.bg.pid"));
        assert!(!n.matches(b"chrome.pid"));
        assert!(!n.matches(b"on_CrawlSetup__90_chrome_launch.daemon.bg.sh"));
        assert!(!n.matches(b"on_Snapshot__10_wget.pid"));
        assert!(RecordNames::default().matches(b"anything"));
    }
}
