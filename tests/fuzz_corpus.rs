//! Every fuzz target's kept inputs as a regression test: the seeds and the crash cases committed
//! under `fuzz/corpus/<target>/` (`seed-*`, `crash-*`) run through the same check the fuzz
//! target runs (`gpuplane::fuzzing`), on the stable toolchain, in plain `cargo test`. Inputs a
//! local fuzz run added (git-ignored) are left out, so the test stays the same everywhere.

use std::path::Path;

fn kept(target: &str) -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("seed-") || name.starts_with("crash-")
        })
        .collect();
    files.sort();
    files
}

fn replay(target: &str) {
    let files = kept(target);
    assert!(!files.is_empty(), "no seeds for {target}");
    let scratch = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let ok = std::panic::catch_unwind(|| gpuplane::fuzzing::check(target, &data, scratch.path())).is_ok();
        if !ok {
            failed.push(f.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert!(failed.is_empty(), "{target}: {} of {} kept inputs fail: {failed:?}", failed.len(), files.len());
}

#[test]
fn every_target_has_a_corpus_and_a_test() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut known: Vec<String> = gpuplane::fuzzing::TARGETS.iter().map(|t| t.to_string()).collect();
    known.sort();
    assert_eq!(on_disk, known);
    let cargo =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml")).unwrap();
    for t in gpuplane::fuzzing::TARGETS {
        assert!(cargo.contains(&format!("name = \"{t}\"")), "fuzz/Cargo.toml has no target {t}");
    }
}

#[test]
fn slurm_jobs() {
    replay("slurm_jobs");
}

#[test]
fn prom_answer() {
    replay("prom_answer");
}

#[test]
fn nccl_output() {
    replay("nccl_output");
}

#[test]
fn sanitize() {
    replay("sanitize");
}

#[test]
fn toml_files() {
    replay("toml_files");
}
