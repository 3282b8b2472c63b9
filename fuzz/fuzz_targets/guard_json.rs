//! Guard JSON records: no panic; every refusal is of the Malformed family; whatever decodes
//! re-encodes to one line that decodes to the same record (and encodes to the same bytes).
#![no_main]
use libfuzzer_sys::fuzz_target;
use pidguard::guard::{decode, encode};
use pidguard::ErrorKind;

fuzz_target!(|data: &[u8]| {
    match decode(data) {
        Ok(e) => {
            assert!(e.pid > 0 && !e.start_token.is_empty());
            let bytes = encode(&e);
            assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
            let again = decode(&bytes).expect("an encoded record decodes");
            assert_eq!(again, e);
            assert_eq!(encode(&again), bytes);
        }
        Err(err) => assert_eq!(err.kind().family(), ErrorKind::Malformed, "{err}"),
    }
});
