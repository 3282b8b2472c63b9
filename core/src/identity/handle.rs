//! The pinned process handle (systemd's `PidRef` pattern): the one way pidguard looks at, judges,
//! signals, waits for and reaps a live process.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use super::process::{create_time, ProcessInfo};
use super::token::StartToken;
use super::liveness::thread_group_exited;
pub use super::delivery::{Delivery, GroupMode};

mod exit;
mod group;
mod scope_only;
pub use exit::ExitStatus;
use super::verdict::{compare_machine, compare_process, compare_tokens, machine_facts, Judgement, Machine, Policy, Reason, Verdict};
use crate::error::{Error, ErrorKind, Result};
use crate::protect::{refuse, Refusal, Target};
use crate::signo::Signal;
use crate::sys::{self, procfs, Stat, PIDFD_SIGNAL_PROCESS_GROUP};

/// How a handle reaches its process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinMode {
    /// Through a pidfd: a signal can never reach a process that reused the number.
    Pidfd,
    /// No pidfd could be opened (`ENOSYS` on Linux < 5.3, `EPERM` under old container seccomp
    /// profiles; always on macOS and FreeBSD, which have none): signals go through `kill(2)`
    /// with the start ticks (macOS: and the unique id) re-read right before each one. A small
    /// window remains between that read and the signal.
    Unpinned,
}

/// A process pinned by pid and identity: the only way pidguard signals, waits for or reaps a
/// process. There is no public "kill this number".
///
/// States and what each operation does in them:
/// - **running** (pinned by pidfd): `signal` and `signal_group` reach exactly this process and
///   the group it leads; `wait` blocks on pidfd readiness.
/// - **zombie** (exited, unreaped): `signal` is a no-op (`AlreadyGone`); `signal_group` still
///   reaches live members of the group it led, because the zombie pins the group number;
///   `wait` returns at once; `exit_status` is known only to its parent.
/// - **reaped**: every signal returns `AlreadyGone`; nothing reaches a successor of the number.
/// - **unpinned** (no pidfd on this system): the handle holds `/proc/<pid>` open instead; each
///   signal re-reads the start ticks through that directory right before `kill(2)` and sends
///   nothing once the process is reaped (the directory then answers `ESRCH`, even if the number
///   was reused within the same clock tick). Only the instant between that read and the
///   `kill(2)` remains open. `wait` polls every 10 ms; the exit status is `Unknown`.
/// - **scope-only** (`pin_pid_file` of a record whose first process is gone while its scope
///   still holds processes): no pidfd, no process; `signal` returns `AlreadyGone`,
///   `signal_group` and a termination reach every process of the scope, `has_exited` and `wait`
///   say exited at once, the exit status is `Unknown`.
#[derive(Debug)]
pub struct ProcessRef {
    pid: i32,
    pidfd: Option<OwnedFd>,
    /// The pidfs inode of `pidfd` (Linux ≥ 6.9).
    pidfs_ino: Option<u64>,
    /// `/proc/<pid>/stat` as read through the pin; `None` only inside pidguard, for a handle
    /// whose identity the pidfs inode decided without a procfs read (see [`Self::probe`]).
    stat: Option<Stat>,
    token: Option<StartToken>,
    /// This machine's facts (machine id, boot id, pid namespace) when the handle was opened.
    base: Machine<'static>,
    zombie_at_open: bool,
    judgement: Judgement,
    unpinned_because: Option<i32>,
    /// Unpinned only: the open `/proc/<pid>` directory, which stops answering once this process
    /// is reaped, so a successor of the number is never mistaken for it (macOS, FreeBSD: the
    /// pid with its identity, compared on every read; see `procfs::ProcDir`).
    procfd: Option<procfs::ProcDir>,
    /// When set, only processes whose real or saved uid is this one are signalled (a
    /// pidfile owned by that uid aimed this handle; see [`ProcessRef::restrict_to_uid`]).
    only_uid: Option<u32>,
    /// Group members left unsignalled because their uid is not [`Self::only_uid`], as met by
    /// [`Self::signal_group`] (for the report: a survivor nobody was allowed to signal is not
    /// "unkillable").
    skipped_for_uid: std::sync::Mutex<Vec<i32>>,
    /// The scope recorded with the process (a cgroup leaf, a supervisor's tree), when its
    /// pidfile had one: then [`Self::signal_group`] and a termination reach every process in
    /// it instead of the process group.
    scope: Option<Box<super::scope::Scope>>,
}

fn gone(reason: Reason) -> Judgement {
    Judgement::new(Verdict::Gone, reason)
}

fn unreadable(e: &std::io::Error) -> Judgement {
    Judgement::new(Verdict::Unverifiable, Reason::LiveIdentityUnreadable(e.raw_os_error().unwrap_or(libc::EIO)))
}

impl ProcessRef {
    /// Pin `pid` and check it against `expected` under `policy`: the handle to signal with.
    ///
    /// Errors, with nothing sent:
    /// - `Refused` (see [`Error::refusal`]) for a protected target (pid ≤ 0, above 4194304 (`PID_MAX_LIMIT`),
    ///   1, our own pid, our parent unless `Match`) or a verdict the policy does not accept
    ///   (`Mismatch`; `Unverifiable` under `Strict`, or under either policy when `expected` is
    ///   given: `Lenient` relaxes only the absence of a recorded token);
    /// - `NoSuchProcess` when the process is gone (reaped, or a zombie);
    /// - `PermissionDenied` or `Io`, carrying the errno, when the live identity could not be
    ///   read (`/proc` mounted `hidepid`, `EMFILE`): a failure to read is never "gone".
    pub fn open(pid: i32, expected: Option<&StartToken>, policy: Policy) -> Result<ProcessRef> {
        if let Some(r) = refuse(Target::Process { pid: pid as i64, token_matched: true }) {
            return Err(refusal_error(pid, r));
        }
        let h = match ProcessRef::probe(pid, expected, true) {
            Ok(h) => h,
            Err(j) if j.verdict == Verdict::Mismatch => return Err(refusal_error(pid, Refusal::Mismatch)),
            Err(j) if j.verdict == Verdict::Unverifiable && j.reason.errno().is_none() => {
                return Err(refusal_error(pid, Refusal::Unverifiable))
            }
            Err(j) => return Err(super::process::unreadable(pid, j)),
        };
        match h.judgement.verdict {
            Verdict::Gone => Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {pid}: gone ({})", h.judgement.reason)).with_pid(pid)),
            Verdict::Mismatch => Err(refusal_error(pid, Refusal::Mismatch)),
            v if !policy.authorizes(v) || (expected.is_some() && v != Verdict::Match) => {
                Err(refusal_error(pid, Refusal::Unverifiable))
            }
            v => {
                if let Some(r) = refuse(Target::Process { pid: pid as i64, token_matched: v == Verdict::Match }) {
                    return Err(refusal_error(pid, r));
                }
                if v == Verdict::Unverifiable {
                    log::warn!("pid {pid}: identity unverifiable ({}); signalling under the lenient policy", h.judgement.reason);
                }
                Ok(h)
            }
        }
    }

    /// Pin the caller's own child `pid` — a process it spawned and has not reaped — for
    /// signalling, without a token: until the caller reaps it, nobody else can, so the number
    /// (and the process group it leads) cannot pass to another process. A child that has
    /// already exited but is not reaped yet (a zombie) is pinned too: its process group may
    /// still hold live members, and [`signal_group`](Self::signal_group) still reaches them.
    /// This is the handle a spawner keeps from spawn to cleanup (Python's `Popen`, asyncio's
    /// `Process`, Node's `ChildProcess` all leave the reaping to the caller).
    ///
    /// Errors: `Refused` for a protected target (pid ≤ 0, 1, our own pid); `NoSuchProcess` when
    /// there is no such process (it was reaped); `InvalidArgument` when the process is not the
    /// caller's child; `PermissionDenied`/`Io` with the errno when it cannot be read.
    pub fn open_child(pid: i32) -> Result<ProcessRef> {
        if let Some(r) = refuse(Target::Process { pid: pid as i64, token_matched: true }) {
            return Err(refusal_error(pid, r));
        }
        let h = ProcessRef::probe(pid, None, true).map_err(|j| super::process::unreadable(pid, j))?;
        match h.stat() {
            Some(st) if st.ppid == sys::getpid() => Ok(h),
            Some(st) => Err(Error::invalid(format!("pid {pid} is not a child of this process (its parent is {})", st.ppid)).with_pid(pid)),
            None => Err(super::process::unreadable(pid, Judgement::new(Verdict::Unverifiable, Reason::LiveIdentityUnreadable(libc::EIO)))),
        }
    }

    /// Pin `pid` and judge it against `expected`, reading no more than the verdict needs.
    ///
    /// `Err(judgement)` when there is nothing to pin: the process is gone (reaped; `pidfd_open`
    /// answered `ESRCH`, or `EINVAL`: the number is a thread of another process), the record is
    /// decided without looking (another boot, machine or namespace), or the live identity could
    /// not be read (`Unverifiable` with its errno). Otherwise the handle carries its
    /// [`judgement`](Self::judgement), which may be `Gone` (a zombie, still pinned: its group
    /// number is still held), `Mismatch`, `Unverifiable` or `Match`.
    ///
    /// The order is the cost order: `pidfd_open`, then the pidfd's pidfs inode (`fstat`) and
    /// whether it has exited (`poll`). When `expected` has a pidfs inode too, that decides, and
    /// no procfs file is read unless `with_stat` asks for the stat (pgid, ppid, start ticks).
    /// Otherwise `/proc/<pid>/stat` is read and confirmed afterwards through the pin. No
    /// protected-target refusal is applied here: judging pid 1 is harmless.
    pub(crate) fn probe(pid: i32, expected: Option<&StartToken>, with_stat: bool) -> std::result::Result<ProcessRef, Judgement> {
        // Without the machine's facts (no /proc) nothing can be judged: unknown, never a value.
        // A record from another boot, machine or namespace is decided here, before any look at
        // the process (`judge_record`'s rules, on the facts read once).
        let base = machine_facts()?;
        if let Some(exp) = expected {
            let j = compare_machine(exp, &base);
            if j.verdict != Verdict::Match {
                return Err(j);
            }
        }
        for _ in 0..3 {
            let fd = match sys::pidfd_open(pid) {
                Ok(fd) => fd,
                Err(e) => match e.raw_os_error() {
                    // ESRCH: no such process. EINVAL (Linux < 6.9) or ENOENT (later kernels) for a
                    // positive pid: it names a thread, not a thread-group leader, so no process
                    // has it (pidfd_open(2)).
                    Some(libc::ESRCH) | Some(libc::EINVAL) | Some(libc::ENOENT) => return Err(gone(Reason::NoSuchProcess)),
                    // No pidfd on this system (old kernel, seccomp): pin by /proc/<pid> instead.
                    Some(libc::ENOSYS) | Some(libc::EPERM) => return ProcessRef::probe_unpinned(pid, expected, e.raw_os_error(), base),
                    _ => return Err(unreadable(&e)),
                },
            };
            let pidfs_ino = sys::pidfs_ino(fd.as_fd()).map_err(|e| unreadable(&e))?;
            let exited = match sys::readable_now(fd.as_fd()) {
                Ok(r) => r,
                Err(e) => return Err(unreadable(&e)),
            };
            let mut h = ProcessRef {
                pid,
                pidfd: Some(fd),
                pidfs_ino,
                stat: None,
                token: None,
                base,
                zombie_at_open: exited,
                judgement: Judgement::new(Verdict::Unverifiable, Reason::NoRecordedToken),
                unpinned_because: None,
                procfd: None,
                only_uid: None,
                skipped_for_uid: Default::default(),
                scope: None,
            };
            if exited {
                // Exited: a zombie still holds its number (and its group's); a reaped process
                // answers ESRCH through its pidfd.
                // Unreachable: `h` was built just above with `pidfd: Some(fd)`.
                let fd = h.pidfd.as_ref().expect("pinned");
                if matches!(sys::pidfd_send_signal(fd.as_fd(), 0, 0), Err(e) if e.raw_os_error() == Some(libc::ESRCH)) {
                    return Err(gone(Reason::NoSuchProcess));
                }
                h.judgement = gone(Reason::Zombie);
                // The zombie's start time and pgid are still readable; a failure leaves them
                // unknown (a zombie is never a Match, whatever is read).
                let _ = h.read_stat();
                return Ok(h);
            }
            if let (Some(exp), Some(_)) = (expected, pidfs_ino) {
                if exp.pidfs_ino.is_some() && !with_stat {
                    // The machine's facts matched above: the rest of `compare_tokens` against
                    // `inode_token()`, without building it.
                    h.judgement = compare_process(exp, h.pidfs_ino, 0);
                    return Ok(h);
                }
            }
            match h.read_stat() {
                Ok(()) => {}
                Err(ReadStat::Reaped) => continue,
                Err(ReadStat::Gone) => return Err(gone(Reason::NoSuchProcess)),
                Err(ReadStat::Unreadable(j)) => return Err(j),
            }
            h.judge_against(expected);
            return Ok(h);
        }
        Err(gone(Reason::NoSuchProcess))
    }

    /// No pidfd here: pin by an open `/proc/<pid>` and read the stat through it, so the stat and
    /// every later check describe this process and never a successor.
    fn probe_unpinned(pid: i32, expected: Option<&StartToken>, because: Option<i32>, base: Machine<'static>) -> std::result::Result<ProcessRef, Judgement> {
        let absent = |e: &std::io::Error| -> Judgement {
            // /proc/<pid> missing is proof of absence only if the kernel agrees: under
            // `hidepid` it is missing for a live process of another user.
            match sys::kill_probe(pid) {
                Err(k) if k.raw_os_error() == Some(libc::ESRCH) => gone(Reason::NoSuchProcess),
                _ => unreadable(e),
            }
        };
        let dir = match procfs::open_proc_dir(pid) {
            Ok(d) => d,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => return Err(absent(&e)),
            Err(e) => return Err(unreadable(&e)),
        };
        let stat = match procfs::read_stat_at(&dir) {
            Ok(s) => s,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => return Err(gone(Reason::NoSuchProcess)),
            Err(e) => return Err(unreadable(&e)),
        };
        let mut h = ProcessRef {
            pid,
            pidfd: None,
            // macOS: the unique id read with the identity, the pidfs inode's twin (None on Linux:
            // no pidfd, no pidfs inode).
            pidfs_ino: dir.unique_id(),
            zombie_at_open: thread_group_exited(&stat, None),
            stat: None,
            token: None,
            base,
            judgement: Judgement::new(Verdict::Unverifiable, Reason::NoRecordedToken),
            unpinned_because: because,
            procfd: Some(dir),
            only_uid: None,
            skipped_for_uid: Default::default(),
            scope: None,
        };
        h.set_stat(stat);
        h.judge_against(expected);
        Ok(h)
    }

    /// The token as far as the pidfd alone tells it (no start ticks): only for comparing pidfs
    /// inodes, which decide before ticks are looked at.
    fn inode_token(&self) -> StartToken {
        self.base.token(0, self.pidfs_ino)
    }

    fn set_stat(&mut self, stat: Stat) {
        self.token = Some(StartToken { start_ticks: stat.start_ticks, ..self.inode_token() });
        self.stat = Some(stat);
    }

    fn judge_against(&mut self, expected: Option<&StartToken>) {
        // The one rule (liveness.rs): pinned, the pidfd's readiness decides — a stat in `Z` is
        // re-checked against it (a leader whose main thread exited while others run is alive);
        // unpinned, `Z` counts only with a thread count of 1.
        let exited_now = |h: &Self| match (&h.pidfd, &h.stat) {
            (_, None) => false,
            (Some(fd), Some(st)) => {
                matches!(st.state, b'Z' | b'X')
                    && thread_group_exited(st, Some(matches!(sys::poll_readable(&[fd.as_fd()], Some(Duration::ZERO)).as_deref(), Ok([true]))))
            }
            (None, Some(st)) => thread_group_exited(st, None),
        };
        self.judgement = if self.zombie_at_open || exited_now(self) {
            self.zombie_at_open = true;
            gone(Reason::Zombie)
        } else {
            match (expected, &self.token) {
                (None, _) => Judgement::new(Verdict::Unverifiable, Reason::NoRecordedToken),
                (Some(r), Some(live)) => compare_tokens(r, live),
                (Some(r), None) => compare_tokens(r, &self.inode_token()),
            }
        };
    }

    /// Read `/proc/<pid>/stat` for a pinned handle, and confirm afterwards through the pidfd
    /// that the pinned process still holds the number (so the stat is its own).
    fn read_stat(&mut self) -> std::result::Result<(), ReadStat> {
        // Unreachable by construction: called only on handles built with a pidfd (probe's loop,
        // and `complete`, which returns first when there is none).
        let fd = self.pidfd.as_ref().expect("read_stat needs a pidfd");
        let read = procfs::read_stat(self.pid);
        let confirm = sys::pidfd_send_signal(fd.as_fd(), 0, 0);
        let reaped = matches!(&confirm, Err(e) if e.raw_os_error() == Some(libc::ESRCH));
        match read {
            Ok(st) if !reaped => {
                self.set_stat(st);
                Ok(())
            }
            // Reaped meanwhile: the stat may describe a successor.
            Ok(_) => Err(ReadStat::Reaped),
            Err(_) if reaped => Err(ReadStat::Gone),
            // The pinned process exists, yet its stat cannot be read: `hidepid` (ENOENT),
            // EACCES, EMFILE, … — a cause, never a fact about the process.
            Err(e) => Err(ReadStat::Unreadable(unreadable(&e))),
        }
    }

    /// Make sure the stat has been read (a handle the pidfs inode decided without it), before
    /// signalling: the process group and the parent come from it. `Err` with the judgement
    /// that stands instead: `Gone` once reaped, `Unverifiable` when unreadable.
    pub(crate) fn complete(&mut self) -> std::result::Result<(), Judgement> {
        if self.stat.is_some() || self.pidfd.is_none() {
            return Ok(());
        }
        match self.read_stat() {
            Ok(()) => Ok(()),
            Err(ReadStat::Reaped) | Err(ReadStat::Gone) => Err(gone(Reason::NoSuchProcess)),
            Err(ReadStat::Unreadable(j)) => Err(j),
        }
    }

    /// The stat read through the pin, if it has been read.
    pub(crate) fn stat(&self) -> Option<&Stat> {
        self.stat.as_ref()
    }

    /// Everything procfs says about the process now; the argv, executable and uid are read
    /// now by number, the rest is what the pin read. Errors: `Io` with the errno when the stat
    /// could not be read.
    pub fn info(&self) -> Result<ProcessInfo> {
        let (Some(st), Some(token)) = (&self.stat, &self.token) else {
            return Err(Error::new(ErrorKind::Io, format!("pid {}: the stat was not read", self.pid)).with_pid(self.pid));
        };
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Ok(ProcessInfo {
            pid: self.pid,
            ppid: st.ppid,
            pgid: st.pgrp,
            sid: st.session,
            uid: procfs::read_uid(self.pid).ok(),
            state: st.state as char,
            exited: self.zombie_at_open || self.judgement.reason == Reason::Zombie,
            start_ticks: st.start_ticks,
            token: token.clone(),
            create_time: create_time(st.start_ticks).unwrap_or(f64::NAN),
            name: lossy(&st.comm),
            argv: procfs::read_cmdline(self.pid).ok().map(|v| v.iter().map(|a| lossy(a)).collect()),
            exe: procfs::read_exe(self.pid),
        })
    }

    /// Signal, from now on, only processes that `uid` could signal itself — whose real or saved
    /// uid is `uid` (kill(2)'s rule; the target's effective uid does not count): the handle's
    /// own process and, for [`signal_group`](Self::signal_group), each member, checked right
    /// before each signal through the pin. Members of another uid are skipped (never signalled);
    /// the handle's own process of another uid makes every signal call fail with `Refused`
    /// (`untrusted-pidfile`).
    ///
    /// For a record written by someone else: a pidfile owned by uid `u` may only aim signals
    /// at processes `u` could have signalled itself, so a privileged caller never lends its
    /// privilege to whoever wrote the file. pidguard's own pidfile readers apply this
    /// themselves; call it when acting on a record of your own format.
    pub fn restrict_to_uid(&mut self, uid: u32) {
        self.only_uid = Some(uid);
    }

    /// The members of this process's group that a signal call left unsignalled because their
    /// uid is not the [uid restriction](Self::restrict_to_uid)'s, in the order met.
    pub fn skipped_for_uid(&self) -> Vec<i32> {
        self.skipped_for_uid.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The uid restriction set by [`restrict_to_uid`](Self::restrict_to_uid), if any.
    pub fn uid_restriction(&self) -> Option<u32> {
        self.only_uid
    }

    /// The real and saved uids of the pinned process, read now — the uids a signal's sender
    /// must match (kill(2)). The read goes by number
    /// and is confirmed afterwards through the pin (the process still holds its number, alive
    /// or zombie), so it is never a successor's. Errors: `NoSuchProcess` once the process is
    /// reaped; `Io` (with its errno) when `/proc` cannot be read (`hidepid`, `EMFILE`).
    pub fn uids(&self) -> Result<(u32, u32)> {
        let read = match &self.procfd {
            Some(dir) => procfs::read_uids_at(dir),
            None => procfs::read_uids(self.pid),
        };
        let still_ours = match &self.pidfd {
            Some(fd) => !matches!(sys::pidfd_send_signal(fd.as_fd(), 0, 0), Err(e) if e.raw_os_error() == Some(libc::ESRCH)),
            None => self.procfd.is_some(),
        };
        if !still_ours {
            return Err(Error::new(ErrorKind::NoSuchProcess, format!("pid {}: reaped", self.pid)).with_pid(self.pid));
        }
        read.map_err(|e| Error::io_pid(self.pid, "read /proc/<pid>/status", &e))
    }

    /// Under a uid restriction: refuse unless the handle's own process has that uid.
    fn check_own_uid(&self) -> Result<()> {
        let Some(owner) = self.only_uid else { return Ok(()) };
        match self.uids() {
            Ok((r, saved)) if r == owner || saved == owner => Ok(()),
            Ok((r, _)) => Err(untrusted(self.pid, owner, &format!("target uid {r}"))),
            Err(e) if e.kind() == ErrorKind::NoSuchProcess => Ok(()),
            Err(e) => Err(untrusted(self.pid, owner, &format!("target uid unreadable: {}", e.message()))),
        }
    }

    /// The pidfd, for callers that wait on it with their own event loop (`poll`, `epoll`,
    /// asyncio's `add_reader`, libuv): it becomes readable when the process exits. `None` for
    /// an unpinned handle. The handle keeps owning it: do not close it.
    pub fn pidfd_raw(&self) -> Option<RawFd> {
        self.pidfd.as_ref().map(|f| f.as_raw_fd())
    }

    /// The pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }
    /// Whether signals go through a pidfd (see [`PinMode`]).
    pub fn is_pinned(&self) -> bool {
        self.pidfd.is_some()
    }
    /// How this handle reaches its process.
    pub fn pin_mode(&self) -> PinMode {
        if self.pidfd.is_some() { PinMode::Pidfd } else { PinMode::Unpinned }
    }
    /// The errno that kept the handle from being pinned (`ENOSYS`, `EPERM`), if any.
    pub fn unpinned_because(&self) -> Option<i32> {
        self.unpinned_because
    }
    /// The live start token read when the handle was opened.
    pub fn token(&self) -> &StartToken {
        // Unreachable: every public constructor (`open`, `open_child`, `lookup`) reads the
        // stat (probe with `with_stat`), which sets the token; only crate-internal judging
        // handles skip it, and they never reach a caller; a scope-only handle carries one with
        // start ticks 0.
        self.token.as_ref().expect("a public ProcessRef has read its stat")
    }
    /// The verdict against the expected token when the handle was opened.
    pub fn judgement(&self) -> Judgement {
        self.judgement
    }
    /// Whether the process led its own process group when opened.
    /// Whether [`Self::signal_group`] has a group to reach: the process leads its process group,
    /// or a scope is attached (see [`Self::scope_kind`]).
    pub fn leads_group(&self) -> bool {
        self.scope.is_some() || self.stat.as_ref().is_some_and(|s| s.pgrp == self.pid)
    }

    /// What [`Self::signal_group`] and a termination reach: `Group` (the process group it leads),
    /// or the scope recorded with its pidfile — `Cgroup` or `Supervisor`: every process of the
    /// command's tree, `setsid` or not (see [`crate::identity::Scope`]).
    pub fn scope_kind(&self) -> super::scope::ScopeKind {
        self.scope.as_ref().map_or(super::scope::ScopeKind::Group, |s| s.kind())
    }

    /// The attached scope.
    pub(crate) fn scope(&self) -> Option<&super::scope::Scope> {
        self.scope.as_deref()
    }

    /// Attach the scope recorded with this process's pidfile (pidguard's own readers do this
    /// for records pidguard started).
    pub(crate) fn attach_scope(&mut self, scope: super::scope::Scope) {
        self.scope = Some(Box::new(scope));
    }
    /// Whether the process was already a zombie when opened.
    pub fn was_zombie(&self) -> bool {
        self.zombie_at_open
    }
    /// Whether the process is the caller's own child (so its exit status can be read).
    pub fn is_child(&self) -> bool {
        self.stat.as_ref().is_some_and(|s| s.ppid == sys::getpid())
    }
    pub(crate) fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(|f| f.as_fd())
    }

    /// For an unpinned handle: is our process still there (alive or zombie, so the number and
    /// the group it leads are still its own)? Read through the open `/proc/<pid>`, which fails
    /// once our process is reaped, whatever holds the number then.
    fn unpinned_still_ours(&self) -> bool {
        let Some(dir) = &self.procfd else { return false };
        matches!((procfs::read_stat_at(dir), &self.stat), (Ok(st), Some(mine)) if st.start_ticks == mine.start_ticks)
    }

    /// Whether the process group this handle's process led is provably still that group *now*,
    /// so that any process seen with that pgid before this call belongs to it.
    ///
    /// True while the leader is not reaped (alive or zombie: the kernel keeps its number
    /// allocated, so no other group can have it). After the leader is reaped, only a pinned
    /// handle on Linux ≥ 6.9 can tell: a null signal with `PIDFD_SIGNAL_PROCESS_GROUP` reaches
    /// the remaining members of this very group and fails with `ESRCH` when none is left
    /// (members keep the number allocated, so it cannot have passed to a new group meanwhile).
    pub(crate) fn group_still_ours(&self) -> bool {
        let alive = |r: std::io::Result<()>| match r {
            Ok(()) => true,
            Err(e) => e.raw_os_error() == Some(libc::EPERM),
        };
        match &self.pidfd {
            Some(fd) => {
                alive(sys::pidfd_send_signal(fd.as_fd(), 0, 0))
                    || (self.leads_group() && alive(sys::pidfd_send_signal(fd.as_fd(), 0, PIDFD_SIGNAL_PROCESS_GROUP)))
            }
            None => self.unpinned_still_ours(),
        }
    }

    /// Send `sig` to the process alone.
    ///
    /// Returns `AlreadyGone` when it has exited (or, unpinned, when the number now names another
    /// process). Errors: `PermissionDenied` for `EPERM`; `Io` otherwise.
    pub fn signal(&self, sig: Signal) -> Result<Delivery> {
        self.check_own_uid()?;
        let r = match &self.pidfd {
            Some(fd) => sys::pidfd_send_signal(fd.as_fd(), sig.number(), 0),
            None => {
                if !self.unpinned_still_ours() {
                    return Ok(Delivery::AlreadyGone);
                }
                sys::kill(self.pid, sig.number())
            }
        };
        match r {
            Ok(()) => Ok(Delivery::Sent(None)),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(Delivery::AlreadyGone),
            Err(e) => Err(Error::io_pid(self.pid, &format!("send {sig}"), &e)),
        }
    }

    /// Whether the process has exited (it may still be an unreaped zombie).
    pub fn has_exited(&self) -> bool {
        match &self.pidfd {
            Some(fd) => matches!(sys::poll_readable(&[fd.as_fd()], Some(Duration::ZERO)).as_deref(), Ok([true])),
            None => {
                let Some(dir) = &self.procfd else { return true };
                match procfs::read_stat_at(dir) {
                    Ok(st) => !self.stat.as_ref().is_some_and(|m| m.start_ticks == st.start_ticks) || thread_group_exited(&st, None),
                    // Reaped. Any other error (EACCES, …) is not proof of death: EPERM-like
                    // answers never mean "dead".
                    Err(e) => matches!(e.raw_os_error(), Some(libc::ESRCH) | Some(libc::ENOENT)),
                }
            }
        }
    }

    /// Wait until the process exits or `timeout` passes (`None`: forever). Returns whether it
    /// exited. Pinned: blocks on pidfd readiness, no polling loop. Unpinned: checks every 10 ms
    /// (macOS and FreeBSD: blocks on a kqueue's `EVFILT_PROC`/`NOTE_EXIT` when one could be
    /// registered).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        match &self.pidfd {
            Some(fd) => sys::poll_readable(&[fd.as_fd()], timeout)
                .map(|r| r[0])
                .map_err(|e| Error::io_pid(self.pid, "poll pidfd", &e)),
            None => {
                // The kqueue was registered before the identity was read and confirmed, so it
                // watches this very process (never on Linux: there the loop below polls).
                if let Some(fd) = self.procfd.as_ref().and_then(|d| d.exit_fd()) {
                    if self.has_exited() {
                        return Ok(true);
                    }
                    return sys::poll_readable(&[fd], timeout).map(|r| r[0]).map_err(|e| Error::io_pid(self.pid, "poll kqueue", &e));
                }
                let start = std::time::Instant::now();
                loop {
                    if self.has_exited() {
                        return Ok(true);
                    }
                    if timeout.is_some_and(|t| start.elapsed() >= t) {
                        return Ok(false);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    /// The exit status, when the process is the caller's own child and has exited. With
    /// `reap`, the child is reaped (`waitid(P_PIDFD)`, Linux ≥ 5.4); without, it is left
    /// waitable (`WNOWAIT`) for the code that spawned it (Python's `Popen`, Node's
    /// `ChildProcess`). `Unknown` for anybody else's process: never an invented 0.
    ///
    /// Unpinned (no pidfd): the status is read by number with `WNOWAIT` only while the open
    /// `/proc/<pid>` still answers for this very process, before and after the read (so the
    /// status read is its own, not a successor's), and the child is **never reaped**, even with
    /// `reap`: a `waitid(P_PID)` that reaps could take the status of a successor child of the
    /// caller if another thread of the caller reaped ours first and the number was reused.
    /// Reap it with the caller's own `waitpid` (its spawner knows whether anything else reaps).
    pub fn exit_status(&self, reap: bool) -> ExitStatus {
        let Some(fd) = &self.pidfd else {
            if !self.unpinned_still_ours() {
                return ExitStatus::Unknown;
            }
            let st = sys::waitid_pid_peek(self.pid);
            if !self.unpinned_still_ours() {
                return ExitStatus::Unknown;
            }
            return match st {
                Ok(Some(sys::ChildExit::Code(c))) => ExitStatus::Code(c),
                Ok(Some(sys::ChildExit::Signal(s))) => ExitStatus::Signaled(s),
                Ok(None) => ExitStatus::Running,
                Err(_) => ExitStatus::Unknown,
            };
        };
        match sys::waitid_pidfd(fd.as_fd(), !reap) {
            Ok(Some(sys::ChildExit::Code(c))) => ExitStatus::Code(c),
            Ok(Some(sys::ChildExit::Signal(s))) => ExitStatus::Signaled(s),
            Ok(None) => ExitStatus::Running,
            Err(_) => ExitStatus::Unknown,
        }
    }
}

/// Why [`ProcessRef::read_stat`] did not read a stat.
enum ReadStat {
    /// The pinned process was reaped while the stat was read: try again from `pidfd_open`.
    Reaped,
    /// The pinned process was reaped and the stat was not there.
    Gone,
    /// The pinned process exists but its stat cannot be read.
    Unreadable(Judgement),
}


pub(crate) fn refusal_error(pid: i32, r: Refusal) -> Error {
    Error::refused(pid, r)
}

/// The `untrusted-pidfile` refusal of a uid-restricted handle, saying why.
fn untrusted(pid: i32, owner: u32, why: &str) -> Error {
    Error::refused_because(pid, Refusal::UntrustedPidfile, format!("owned by uid {owner}, {why}"))
}
