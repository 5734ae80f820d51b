//! The sanitiser on arbitrary text (`gpuplane::fuzzing::sanitize_bytes`): its output never holds
//! a C0/C1 control character (so no escape sequence) or a bidi control, and is a fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::sanitize_bytes(data));
