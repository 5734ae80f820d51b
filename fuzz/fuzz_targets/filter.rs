//! The filter language parsed, bound and matched against the console's tables, with its
//! properties (quoting back, negation, conjunction) checked (`gpuplane::fuzzing::filter`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::filter::check(data));
