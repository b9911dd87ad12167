//! Fuzzes benchlab's SPNEGO reader (`benchlab_smb2::auth::spnego_response_token`,
//! the bounded DER walk over a SESSION_SETUP's security buffer) and the
//! NTLMSSP CHALLENGE it hands on: arbitrary bytes must be Ok or Err, never
//! a panic, and a token is never longer than its input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(token) = benchlab_smb2::auth::spnego_response_token(data) {
        assert!(token.len() <= data.len());
        let _ = benchlab_smb2::auth::Challenge::decode(&token);
    }
});
