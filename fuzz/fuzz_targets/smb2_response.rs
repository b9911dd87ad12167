//! Fuzzes benchlab's SMB2 response decoders (`benchlab_smb2::decode_any`:
//! the header, every command's body, SPNEGO and NTLMSSP's CHALLENGE, a
//! directory listing), a sealed message's TRANSFORM header and the frame length: arbitrary bytes must be Ok or
//! Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = benchlab_smb2::decode_any(data);
    let _ = benchlab_smb2::auth::spnego_response_token(data);
    let _ = benchlab_smb2::auth::Challenge::decode(data);
    let keys = benchlab_smb2::seal::Keys::derive(0x0311, benchlab_smb2::seal::AES_128_GCM, &[1; 16], &[0; 64]);
    let _ = benchlab_smb2::seal::decrypt(&keys, data);
    if let Some(p) = data.get(..4) {
        let _ = benchlab_smb2::frame::length([p[0], p[1], p[2], p[3]]);
    }
});
