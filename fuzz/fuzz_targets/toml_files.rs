//! The config, theme, keymap, plugin and hotkeys loaders on arbitrary TOML, each through its
//! public loading function and a real file (`gpuplane::fuzzing::toml_files`): the first byte
//! picks the loader, the rest is the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::LazyLock;

/// One scratch folder per fuzzing process.
static DIR: LazyLock<PathBuf> = LazyLock::new(|| {
    let d = std::env::temp_dir().join(format!("gpuplane-fuzz-toml-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
});

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::toml_files(&DIR, data));
