//! The flight recorder's reader on a valid recording mutated by the input (byte flips, cuts,
//! insertions, overwritten lengths), replayed and drawn: `gpuplane::fuzzing::record`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::LazyLock;

/// One scratch folder per fuzzing process.
static DIR: LazyLock<PathBuf> = LazyLock::new(|| {
    let d = std::env::temp_dir().join(format!("gpuplane-fuzz-recording-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
});

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::record::check(&DIR, data));
