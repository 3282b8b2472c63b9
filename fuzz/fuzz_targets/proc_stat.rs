//! `/proc/<pid>/stat` lines: no panic; what parses has the comm between the first `(` and the
//! last `)`. Half of the inputs are used as a command name (any bytes: spaces, `)`, newlines,
//! non-UTF-8) inside an otherwise well-formed line, which must parse back exactly.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pidguard::sys::procfs::parse_stat;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 0 {
        if let Some(st) = parse_stat(rest) {
            let open = rest.iter().position(|&b| b == b'(').unwrap();
            let close = rest.iter().rposition(|&b| b == b')').unwrap();
            assert_eq!(st.comm, &rest[open + 1..close]);
        }
    } else {
        // The kernel caps comm at 15 bytes, but the parser must not care.
        let mut line = b"4242 (".to_vec();
        line.extend_from_slice(rest);
        line.extend_from_slice(b") S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 18446744073709551615\n");
        let st = parse_stat(&line).expect("a well-formed line parses");
        assert_eq!(st.comm, rest);
        assert_eq!((st.state, st.ppid, st.pgrp, st.session, st.start_ticks), (b'S', 1, 4242, 4242, 98765));
    }
});
