//! abx-dl pidfile content: no panic, and exactly the documented rule accepts (ASCII whitespace
//! around one run of ASCII digits, leading zeros allowed, value in 1..=pid_max).
#![no_main]
use libfuzzer_sys::fuzz_target;
use pidguard::pidfile::mtime::parse_pid_content;
use pidguard::sys::procfs::pid_max;

fn rule(content: &[u8]) -> Option<i32> {
    let start = content.iter().position(|b| !b.is_ascii_whitespace())?;
    let end = content.iter().rposition(|b| !b.is_ascii_whitespace())? + 1;
    let t = &content[start..end];
    if !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let digits: Vec<u8> = t.iter().copied().skip_while(|&b| b == b'0').collect();
    if digits.len() > 10 {
        return None;
    }
    let v: u64 = if digits.is_empty() { 0 } else { std::str::from_utf8(&digits).unwrap().parse().unwrap() };
    (1..=pid_max() as u64).contains(&v).then_some(v as i32)
}

fuzz_target!(|data: &[u8]| {
    assert_eq!(parse_pid_content(data), rule(data), "{data:?}");
});
