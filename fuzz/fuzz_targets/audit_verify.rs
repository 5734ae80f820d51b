//! `audit verify` on a valid log mutated by the input (byte flips, cuts, lines deleted, copied,
//! swapped, bytes inserted): `gpuplane::fuzzing::audit`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::LazyLock;

/// One scratch folder per fuzzing process.
static DIR: LazyLock<PathBuf> = LazyLock::new(|| {
    let d = std::env::temp_dir().join(format!("gpuplane-fuzz-audit-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
});

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::audit::check(&DIR, data));
