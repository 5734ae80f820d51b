//! The nccl-tests output parser on arbitrary bytes (`gpuplane::fuzzing::nccl_output`): no
//! panic, kept text terminal-safe, figures finite, errors at a line of the input, CRLF = LF.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::nccl_output(data));
