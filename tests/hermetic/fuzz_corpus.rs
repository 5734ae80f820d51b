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

#[test]
fn slurm_responses() {
    replay("slurm_responses");
}

#[test]
fn kube_objects() {
    replay("kube_objects");
}

#[test]
fn filter() {
    replay("filter");
}

#[test]
fn audit_verify() {
    replay("audit_verify");
}

/// The `audit_verify` target mutates this log, so it must be what the writer writes: intact
/// under the full check (witness and key), with every record witnessed (a cut at a line end is
/// then caught) and its checkpoints verified.
#[test]
fn the_audit_targets_log_is_intact_and_fully_witnessed() {
    use gpuplane::audit::{VerifyOptions as Options, verify_full};
    use gpuplane::audit::{sign, witness};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit");
    let heads = witness::parse_heads(&std::fs::read_to_string(dir.join("base.jsonl.witness")).unwrap());
    let key = sign::parse_public(std::fs::read_to_string(dir.join("base.pub")).unwrap().trim()).unwrap();
    let lines =
        gpuplane::fuzzing::audit::base().split(|&b| b == b'\n').filter(|l| !l.is_empty()).count() as u64;
    let r =
        verify_full(&dir.join("base.jsonl"), &Options { heads: heads.clone(), pubkey: Some(key), now: 0 })
            .unwrap();
    assert!(r.intact(), "{r:?}");
    assert_eq!(r.records, lines);
    assert_eq!(r.witness.last, Some(lines - 1), "the last record is witnessed");
    let (checkpoints, through) = r.signed.unwrap();
    assert!(checkpoints >= 2 && through.is_some(), "{r:?}");
    // A mutation with no effect (XOR with 0) leaves it as it is.
    let base = gpuplane::fuzzing::audit::base();
    assert_eq!(gpuplane::fuzzing::audit::mutate(base, &[0, 0, 0, 0]), base);
}

#[test]
fn recording() {
    replay("recording");
}
