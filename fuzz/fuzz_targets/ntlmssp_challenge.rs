//! Fuzzes benchlab's NTLMSSP CHALLENGE_MESSAGE parser
//! (`benchlab_smb2::auth::Challenge::decode`), the AV-pair walk that finds
//! the server's timestamp, and the AUTHENTICATE_MESSAGE built from what it
//! decoded: arbitrary bytes must be Ok or Err, never a panic.
#![no_main]

use benchlab_smb2::auth::{self, Credentials};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(ch) = auth::Challenge::decode(data) {
        assert!(ch.target_info.len() <= data.len());
        let _ = auth::av_timestamp(&ch.target_info);
        let user = Credentials::User {
            user: "u".into(),
            domain: String::new(),
            password: "p".into(),
        };
        let _ = auth::authenticate_message(&user, &ch, [1; 8], 0);
        let _ = auth::authenticate_message(&Credentials::Anonymous, &ch, [1; 8], 0);
    }
});
