//! `api::parse` against its serde path (`parse_serde`), and `api::for_each_series` against
//! iterating `parse`, on arbitrary bytes (see `api::check`).
#![no_main]

use gpuplane::backend::prom::api;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = api::check(data) {
        panic!("{e}\nbody: {:?}", String::from_utf8_lossy(data));
    }
});
