//! Efficiency notes name a GPU that held memory and did nothing (issue 30, finding 11): jobstats
//! names a GPU at 0 % for the whole run while a process held 16 GiB ("did not use 2 of 4");
//! gpuplane's notes only named GPUs that never ran a process. The figures here are the job's
//! per-GPU telemetry as the ledger's summary keeps it (what Prometheus measured at the job's
//! end); the expected note is worked out from them in the test.

use crate::common;

use gpuplane::store::{Ledger, Observation};
use serde_json::json;

const T0: i64 = 1_800_000_000;

#[test]
fn a_gpu_that_held_memory_and_did_nothing_is_named() {
    let home = tempfile::tempdir().expect("tempdir");
    let config = home.path().join("config.toml");
    let dir = home.path().join("ledger").display().to_string();
    std::fs::write(&config, format!("[ledger]\ndir = {dir:?}\n")).expect("config");
    let run = |args: &[&str]| {
        common::gpuplane_cmd(home.path())
            .args(["--config", config.to_str().expect("utf-8"), "report", "job"])
            .args(args)
            .output()
            .expect("run gpuplane")
    };
    let path = common::ledger_path_of(&run(&["1"]));
    let (start, end) = (T0 - 3600, T0);
    let job = common::finished_job(5151, "train", 4, "NVIDIA H100 80GB HBM3", "node-1", (start, end));
    let mut l = Ledger::open(&path).expect("ledger");
    l.record(&[Observation {
        cluster: "c1".into(),
        at: end,
        jobs: vec![job],
        intervals: vec![],
        capacity: vec![],
    }])
    .expect("record");
    // GPU 0 and 3 busy; GPU 1 at 0 % all run with 16 GiB held; GPU 2 never ran a process.
    let gpus = [
        ("0", 55.0, 90.0, 30_000.0),
        ("1", 0.0, 0.0, 16_384.0),
        ("2", 0.0, 0.0, 0.0),
        ("3", 60.0, 95.0, 31_000.0),
    ];
    let per_gpu: Vec<_> = gpus
        .iter()
        .map(|(g, util, peak, mem)| {
            json!({"node": "node-1", "gpu": g, "util": util, "util_field": "DCGM_FI_DEV_GPU_UTIL",
                   "util_peak": peak, "sm_active": null, "tensor_active": null, "dram_active": null,
                   "mem_peak_mib": mem, "mem_total_mib": 81_559.0, "power_mean_w": null,
                   "power_peak_w": null, "energy_kwh": null, "energy_from": null, "idle_longest_s": null,
                   "never_ran": *peak < 1.0 && *mem <= 300.0})
        })
        .collect();
    let summary = json!({
        "telemetry": {"source": "prometheus", "selected_by": "placement", "start": start, "end": end,
                      "step_s": 60, "util": 28.75, "mem_peak_mib": 31_000.0, "mem_total_mib": 81_559.0,
                      "never_ran": ["node-1:2"], "gpus": per_gpu},
        "evidence": null,
        "evidence_missing": null,
    });
    l.put_summary(5151, end + 60, &summary.to_string()).expect("summary");
    drop(l);
    let out = run(&["5151", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let notes: Vec<String> = e["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .map(|n| n["text"].as_str().unwrap_or("").to_string())
        .collect();
    // The oracle: GPUs whose utilisation never rose above 1 % with more than a process's worth
    // of memory (300 MiB), and every GPU the job did not use (those and the never-ran ones).
    let held: Vec<(&str, f64)> = gpus
        .iter()
        .filter(|(_, _, peak, mem)| *peak < 1.0 && *mem > 300.0)
        .map(|(g, _, _, m)| (*g, *m))
        .collect();
    let unused = gpus.iter().filter(|(_, _, peak, _)| *peak < 1.0).count();
    assert_eq!(held.len(), 1);
    for (g, mib) in held {
        let name = format!("GPU node-1:{g} held {:.1} GiB and did nothing", mib / 1024.0);
        let of = format!("did not use {unused} of {} GPUs", gpus.len());
        assert!(
            notes.iter().any(|n| n.contains(&name) && n.contains(&of)),
            "a note names {name:?} and says {of:?}: {notes:#?}"
        );
    }
    // The GPU that never ran a process keeps its own note.
    assert!(notes.iter().any(|n| n.contains("never ran a process") && n.ends_with("node-1:2")), "{notes:#?}");
    let text = run(&["5151"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("held 16.0 GiB and did nothing"));
}
