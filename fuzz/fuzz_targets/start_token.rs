//! Start tokens: no panic; exactly the documented shape is accepted; what parses re-serialises
//! to a text that parses to the same token.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pidguard::StartToken;

fn rule(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    let text = |f: &str| !f.is_empty() && f.bytes().all(|b| (0x21..=0x7e).contains(&b));
    let num = |f: &str| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) && f.parse::<u64>().is_ok();
    let linux = (parts.len() == 5 || parts.len() == 6)
        && parts[0] == "linux1"
        && text(parts[1])
        && text(parts[2])
        && num(parts[3])
        && num(parts[4])
        && (parts.len() == 5 || parts[5] == "-" || num(parts[5]));
    // macOS: host, boot session, start µs, unique id (or `-`); FreeBSD: host, boot id, jail, start.
    let macos = parts.len() == 5 && parts[0] == "macos1" && text(parts[1]) && text(parts[2]) && num(parts[3]) && (parts[4] == "-" || num(parts[4]));
    let freebsd = parts.len() == 5 && parts[0] == "freebsd1" && text(parts[1]) && text(parts[2]) && num(parts[3]) && num(parts[4]);
    linux || macos || freebsd
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let got = s.parse::<StartToken>();
    assert_eq!(got.is_ok(), rule(s), "{s:?}");
    if let Ok(t) = got {
        let text = t.to_string();
        assert_eq!(text.parse::<StartToken>().unwrap(), t);
        assert_eq!(text.parse::<StartToken>().unwrap().to_string(), text);
    }
});
