//! Property tests of the two parsers every signalling decision rests on: the
//! `/proc/<pid>/stat` line (command names with spaces, `)`, `(`, newlines and non-UTF-8 bytes)
//! and start-stop-daemon `--retry` schedules.

use std::time::Duration;

use pidguard::sys::parse_stat;
use pidguard::{ErrorKind, Schedule, Signal, Step};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// /proc/<pid>/stat

#[derive(Debug, Clone)]
struct StatLine {
    pid: i32,
    comm: Vec<u8>,
    state: u8,
    ppid: i32,
    pgrp: i32,
    session: i32,
    start_ticks: u64,
    /// Fields 7..=21 and 23..=52: anything numeric, negative included (tpgid is -1).
    other: Vec<i64>,
}

impl StatLine {
    fn render(&self) -> Vec<u8> {
        let mut v = format!("{} (", self.pid).into_bytes();
        v.extend_from_slice(&self.comm);
        v.extend_from_slice(format!(") {} {} {} {}", self.state as char, self.ppid, self.pgrp, self.session).as_bytes());
        for x in &self.other[..15] {
            v.extend_from_slice(format!(" {x}").as_bytes());
        }
        v.extend_from_slice(format!(" {}", self.start_ticks).as_bytes());
        for x in &self.other[15..] {
            v.extend_from_slice(format!(" {x}").as_bytes());
        }
        v.push(b'\n');
        v
    }
}

/// Command names: any bytes but NUL, with the troublesome ones (space, parentheses, newline,
/// digits, state letters, invalid UTF-8) made frequent, and whole fake field runs.
fn comm() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => any::<u8>().prop_filter("no NUL", |b| *b != 0),
        1 => Just(b' '),
        1 => Just(b')'),
        1 => Just(b'('),
        1 => Just(b'\n'),
        1 => Just(0xff_u8),
        1 => prop::sample::select(b"0123456789ZRS-".to_vec()),
    ];
    let piece = prop_oneof![
        3 => prop::collection::vec(byte, 0..8),
        1 => Just(b") Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 999 ".to_vec()),
        1 => Just(b"(x) ".to_vec()),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
}

fn stat_line() -> impl Strategy<Value = StatLine> {
    (
        1..=i32::MAX,
        comm(),
        prop::sample::select(b"RSDZTtXxIPWK".to_vec()),
        (0..=i32::MAX, 0..=i32::MAX, 0..=i32::MAX),
        any::<u64>(),
        prop::collection::vec(any::<i64>(), 45),
    )
        .prop_map(|(pid, comm, state, (ppid, pgrp, session), start_ticks, other)| StatLine {
            pid,
            comm,
            state,
            ppid,
            pgrp,
            session,
            start_ticks,
            other,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn stat_fields_survive_any_command_name(line in stat_line()) {
        let st = parse_stat(&line.render()).expect("a well-formed line parses");
        prop_assert_eq!(&st.comm, &line.comm);
        prop_assert_eq!(st.state, line.state);
        prop_assert_eq!(st.ppid, line.ppid);
        prop_assert_eq!(st.pgrp, line.pgrp);
        prop_assert_eq!(st.session, line.session);
        prop_assert_eq!(st.start_ticks, line.start_ticks);
    }

    #[test]
    fn stat_cut_before_the_start_field_is_rejected(line in stat_line(), cut in 0.0f64..1.0) {
        let full = line.render();
        // Everything up to and including field 21 (the last byte before " <start_ticks>").
        let close = full.iter().rposition(|&b| b == b')').unwrap();
        let mut spaces = 0;
        let mut end = full.len();
        for (i, &b) in full.iter().enumerate().skip(close + 1) {
            if b == b' ' {
                spaces += 1;
                if spaces == 20 {
                    end = i;
                    break;
                }
            }
        }
        // Cut after the real last `)` (a cut inside a name holding `)` can look like a whole
        // line; the kernel never truncates one) and before field 22.
        let n = close + 1 + (((end - close - 1) as f64) * cut) as usize;
        prop_assert!(parse_stat(&full[..n]).is_none(), "prefix of {} bytes parsed", n);
    }

    #[test]
    fn stat_parser_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..700)) {
        let _ = parse_stat(&bytes);
    }
}

// ---------------------------------------------------------------------------------------------
// schedules

/// A signal and one of the spellings start-stop-daemon accepts for it.
fn signal_item() -> impl Strategy<Value = (Signal, String)> {
    (1..=libc::SIGRTMAX(), 0..4u8).prop_map(|(n, form)| {
        let sig = Signal::from_number(n).unwrap();
        let name = sig.name();
        let named = !name.bytes().all(|b| b.is_ascii_digit());
        let text = match (named, form) {
            (true, 0) => name,
            (true, 1) => format!("SIG{name}"),
            (true, 2) => format!("-{}", name.to_ascii_lowercase()),
            // A number always needs its `-`, or it would be a wait.
            _ => format!("-{n}"),
        };
        (sig, text)
    })
}

/// A wait in whole milliseconds, written as decimal seconds.
fn wait_item() -> impl Strategy<Value = (Duration, String)> {
    (0u64..=86_400_000).prop_map(|ms| {
        let text = if ms % 1000 == 0 { format!("{}", ms / 1000) } else { format!("{}.{:03}", ms / 1000, ms % 1000) };
        (Duration::from_millis(ms), text)
    })
}

fn same_step(a: &Step, b: &Step) -> bool {
    match (a, b) {
        // Waits go through f64 seconds: equal to well under a microsecond.
        (Step::Wait(x), Step::Wait(y)) => x.abs_diff(*y) < Duration::from_micros(1),
        _ => a == b,
    }
}

fn schedule_text() -> impl Strategy<Value = (Vec<Step>, String)> {
    let item = prop_oneof![
        signal_item().prop_map(|(s, t)| (Step::Signal(s), t)),
        wait_item().prop_map(|(d, t)| (Step::Wait(d), t)),
    ];
    (signal_item(), prop::collection::vec(item, 1..8), any::<bool>()).prop_map(|(first, rest, forever)| {
        let mut steps = vec![Step::Signal(first.0)];
        let mut texts = vec![first.1];
        for (s, t) in rest {
            steps.push(s);
            texts.push(t);
        }
        if forever {
            steps.push(Step::Forever);
            texts.push("forever".into());
        }
        (steps, texts.join("/"))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn schedule_parses_every_spelling(case in schedule_text()) {
        let (steps, text) = case;
        let s: Schedule = text.parse().map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        prop_assert_eq!(s.steps().len(), steps.len());
        for (a, b) in s.steps().iter().zip(&steps) {
            prop_assert!(same_step(a, b), "{:?}: {:?} != {:?}", text, a, b);
        }
    }

    #[test]
    fn schedule_display_round_trips(case in schedule_text()) {
        let s: Schedule = case.1.parse().unwrap();
        let shown = s.to_string();
        let again: Schedule = shown.parse().map_err(|e| TestCaseError::fail(format!("{shown:?}: {e}")))?;
        prop_assert_eq!(again.steps().len(), s.steps().len(), "{:?} -> {:?}", case.1, shown);
        for (a, b) in again.steps().iter().zip(s.steps()) {
            prop_assert!(same_step(a, b), "{:?} -> {:?}: {:?} != {:?}", case.1, shown, a, b);
        }
    }

    #[test]
    fn bare_number_is_term_wait_kill_wait(w in wait_item()) {
        let s: Schedule = w.1.parse().unwrap();
        let st = s.steps();
        prop_assert_eq!(st.len(), 4);
        prop_assert_eq!(st[0], Step::Signal(Signal::TERM));
        prop_assert_eq!(st[2], Step::Signal(Signal::KILL));
        prop_assert!(same_step(&st[1], &Step::Wait(w.0)) && same_step(&st[3], &Step::Wait(w.0)));
    }

    #[test]
    fn any_text_is_a_schedule_or_an_invalid_argument(text in "[-A-Za-z0-9./ ]{0,40}|.{0,40}") {
        match text.parse::<Schedule>() {
            Ok(s) => {
                prop_assert!(s.steps().iter().any(|x| matches!(x, Step::Signal(_))));
                let again: Schedule = s.to_string().parse().unwrap();
                prop_assert_eq!(again.steps().len(), s.steps().len());
            }
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument),
        }
    }

    #[test]
    fn unknown_signal_names_are_rejected(name in "[A-Z]{2,8}") {
        let known = Signal::parse(&name).is_ok();
        let r = format!("{name}/1").parse::<Schedule>();
        prop_assert_eq!(r.is_ok(), known, "{}", name);
    }
}

#[test]
fn every_signal_name_round_trips() {
    for n in 1..=libc::SIGRTMAX() {
        let s = Signal::from_number(n).unwrap();
        assert_eq!(Signal::parse(&s.name()).unwrap(), s);
        assert_eq!(format!("-{n}/1").parse::<Schedule>().unwrap().steps()[0], Step::Signal(s));
    }
}
