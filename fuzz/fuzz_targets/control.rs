//! Fuzzes the control protocol's decoders (benchlab-agent): arbitrary
//! bytes, as a controller or an agent could receive them, decoded as every
//! message and payload, must never panic, and a decoded message must
//! re-encode to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    benchlab_agent::proto::check_decoders(data);
});
