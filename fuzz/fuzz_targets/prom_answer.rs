//! `api::parse` against its serde path (`parse_serde`), and `api::for_each_series` against
//! iterating `parse`, on arbitrary bytes (`gpuplane::fuzzing::prom_answer`, see `api::check`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::prom_answer(data));
