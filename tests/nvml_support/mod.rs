//! Builds the fake libnvidia-ml.so (tests/fixtures/nvml/fake_nvml.c) with the machine's `cc`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Compiles the fake library once per variant; each variant is its own file, so each test
/// process loads it once and variants do not share state.
pub fn fake_lib(variant: &'static str, defines: &[&str]) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<&'static str, PathBuf>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    built
        .entry(variant)
        .or_insert_with(|| {
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvml/fake_nvml.c");
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-nvml");
            std::fs::create_dir_all(&dir).unwrap();
            let out = dir.join(format!("libnvidia-ml-{variant}-{}.so", std::process::id()));
            let status = std::process::Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
                .args(["-shared", "-fPIC", "-O1", "-Wall", "-o"])
                .arg(&out)
                .arg(&src)
                .args(defines)
                .status()
                .expect("a C compiler (cc) to build the fake libnvidia-ml.so");
            assert!(status.success(), "cc failed on {}", src.display());
            out
        })
        .clone()
}
