//! The acceptance road against the real Slurm 24.11 of the test command: the job is submitted
//! through the audited ops road to two chosen nodes, really runs under slurmd, and (these
//! machines have no GPUs) its command is a stand-in that prints the real sample output with the
//! job's own nodes as the hosts. The output is collected from the templated path, parsed,
//! recorded and judged.
//!
//! Behind the `live` feature (`cargo test --features live`, as scripts/test runs it): they need
//! the Slurm 24.11 test cluster (GPUPLANE_TEST_SLURM24_*), and without it they fail, never pass.

use crate::common;

use crate::slurm_support::{read, slurm24};
use gpuplane::acceptance::launch::{Origin, record, track};
use gpuplane::acceptance::{JudgeConfig, Mode, Store, Template, Verdict};
use gpuplane::audit::{AuditLog, Phase};
use gpuplane::model::NodeState;
use gpuplane::ops::{ActionKind, Executor, OpRequest, Ops, SlurmExecutor, plan};
use std::time::{Duration, Instant};

const SAMPLE: &str = include_str!("../fixtures/nccl/01_h100x16_2node_gcp_a3mega_allreduce.txt");

/// Prints the sample (rank 0 only) with its two hosts replaced by the job's nodes.
const STANDIN: &str = r#"#!/bin/sh
[ "${SLURM_PROCID:-0}" = 0 ] || exit 0
set -- $(scontrol show hostnames "$SLURM_JOB_NODELIST")
sed -e "s/ztan-mig-235z/$1/g" -e "s/ztan-mig-gq73/$2/g" /tmp/gpuplane-nccl-sample.txt
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_acceptance_runs_on_exactly_the_chosen_nodes_and_is_recorded() {
    let (c, _g) = slurm24().await;
    let root = c.chroot.clone().expect("24.11 runs in a chroot");
    let s = read(&c).await;
    let mut chosen: Vec<String> = s
        .nodes
        .iter()
        .rev()
        .filter(|n| n.state == NodeState::Idle && n.name.starts_with("h100"))
        .map(|n| n.name.to_string())
        .take(2)
        .collect();
    assert_eq!(chosen.len(), 2, "two idle h100 nodes");
    chosen.sort();
    for (name, text, mode) in
        [("gpuplane-nccl-sample.txt", SAMPLE, 0o644), ("gpuplane-nccl-standin.sh", STANDIN, 0o755)]
    {
        let p = format!("{root}/tmp/{name}");
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    }
    let template = Template {
        command: "/bin/sh /tmp/gpuplane-nccl-standin.sh {gpus}".into(),
        cwd: "/tmp".into(),
        read_output: format!("{root}/tmp/gpuplane-acceptance-{{job}}.out"),
        time_limit_min: 5,
        ..Template::default()
    };
    let mut exec = SlurmExecutor::new(&c.config(&c.jwt).client).unwrap().with_acceptance(template).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ops = Ops {
        audit: AuditLog::new(dir.path().join("audit.jsonl")),
        readonly: false,
        cluster: "slurm24".into(),
        break_glass: None,
    };
    let req = OpRequest {
        kind: ActionKind::Acceptance(Mode::All),
        targets: chosen.clone(),
        reason: "gpuplane acceptance test (ACC-1)".into(),
        ticket: Some("ACC-1".into()),
        dry_run: false,
    };
    let p = plan(&req, &s, &*exec.planner(), false).unwrap();
    assert_eq!(p.steps.len(), 1);
    assert!(
        p.steps[0].call.contains(&format!("nodelist={} gpus/node=8", chosen.join(","))),
        "{}",
        p.steps[0].call
    );

    let started = Instant::now();
    let out = ops.run(&req, &p, &mut exec, |_| {}).await.unwrap();
    assert!(out.results[0].ok, "{out:?}");
    let (job, sub) = &out.submitted[0];
    let launcher = exec.launcher().unwrap();
    let collected =
        track(launcher.as_ref(), job, sub, Duration::from_secs(120), Duration::from_millis(500), |_| {})
            .await;
    let round_trip = started.elapsed();
    assert_eq!(collected.state.as_deref(), Some("COMPLETED"), "{collected:?}");

    // Landed on exactly those nodes, as slurmrestd reports it.
    let id: u64 = sub.job_id.parse().unwrap();
    let j = c.admin_client().job(id).await.unwrap().expect("the job is known");
    let mut landed: Vec<String> = j.nodes.iter().map(|n| n.to_string()).collect();
    landed.sort();
    assert_eq!(landed, chosen);
    let sq = c.cli(&["scontrol", "-o", "show", "job", &sub.job_id]);
    assert!(sq.contains("ReqNodeList=") && sq.contains("JobState=COMPLETED"), "{sq}");

    // Collected, parsed, recorded, judged.
    let store = Store::new(dir.path().join("acceptance.jsonl"));
    let origin = Origin { op_id: Some(&out.op_id), backend: launcher.backend(), image: None, cluster: None };
    let rec = record(origin, job, sub, &collected, &[], &JudgeConfig::default());
    store.append(&rec).unwrap();
    assert!(rec.error.is_none(), "{:?}", rec.error);
    let parsed = rec.result.as_ref().unwrap();
    assert_eq!(parsed.hosts(), chosen.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(parsed.devices.len(), 16);
    assert_eq!(rec.busbw, Some(338.82));
    assert_eq!(rec.shape(), "2x8xH100");
    assert_eq!(rec.judgement.as_ref().unwrap().verdict, Verdict::Pass);
    assert_eq!(store.load().unwrap().runs, vec![rec.clone()]);

    // The audit log holds intent and outcome, with the job id.
    let recs = ops.audit.read_all().unwrap();
    assert_eq!(recs.iter().map(|r| r.phase).collect::<Vec<_>>(), vec![Phase::Intent, Phase::Outcome]);
    assert_eq!(recs[1].result.as_deref(), Some("ok"));
    assert_eq!(recs[1].params.get("jobs"), Some(&format!("{}={}", chosen.join(","), sub.job_id)));
    assert_eq!(recs[1].action, "acceptance");
    eprintln!("acceptance round trip on Slurm 24.11 (submit → COMPLETED → parsed): {round_trip:?}");
}

/// The same from the console: two idle nodes marked in the Fabric view, `:acceptance all`,
/// the reason typed; the ops task follows the job on the real Slurm to COMPLETED, records and
/// judges it, and the Fabric view shows the verdict on both nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_acceptance_from_the_console_is_followed_to_its_verdict() {
    use common::{render, typed};
    use gpuplane::ops::{AcceptanceSetup, OpEvent};
    use gpuplane::tui::app::{App, Mode, Msg};
    let (c, _g) = slurm24().await;
    let root = c.chroot.clone().expect("24.11 runs in a chroot");
    let s = read(&c).await;
    let mut chosen: Vec<String> = s
        .nodes
        .iter()
        .filter(|n| n.state == NodeState::Idle && n.name.starts_with("h100"))
        .map(|n| n.name.to_string())
        .take(2)
        .collect();
    assert_eq!(chosen.len(), 2, "two idle h100 nodes");
    chosen.sort();
    for (name, text, mode) in
        [("gpuplane-nccl-sample.txt", SAMPLE, 0o644), ("gpuplane-nccl-standin.sh", STANDIN, 0o755)]
    {
        let p = format!("{root}/tmp/{name}");
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    }
    let template = Template {
        command: "/bin/sh /tmp/gpuplane-nccl-standin.sh {gpus}".into(),
        cwd: "/tmp".into(),
        read_output: format!("{root}/tmp/gpuplane-acceptance-{{job}}.out"),
        time_limit_min: 5,
        ..Template::default()
    };
    let client = c.config(&c.jwt).client;
    let dir = tempfile::tempdir().unwrap();
    let ops = Ops {
        audit: AuditLog::new(dir.path().join("audit.jsonl")),
        readonly: false,
        cluster: "slurm24".into(),
        break_glass: None,
    };
    let store = Store::new(dir.path().join("acceptance.jsonl"));
    let setup = AcceptanceSetup {
        store: store.clone(),
        judge: JudgeConfig::default(),
        wait: Duration::from_secs(120),
        every: Duration::from_millis(500),
        cluster: None,
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
    let exec = SlurmExecutor::new(&client).unwrap().with_acceptance(template).unwrap();
    // One executor, owned by the ops task; the console plans with its planner.
    let planner = gpuplane::ops::start(ops.clone(), Box::new(exec), rx, ev_tx, Some(setup));
    let mut a = App::new(
        s,
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "researcher".into(),
    );
    a.planner = Some(planner);
    a.ops_tx = Some(tx);
    for n in &chosen {
        typed(&mut a, &format!(":fabric node=={n}\r "));
    }
    typed(&mut a, "\x1b:acceptance all\r");
    let Mode::Confirm(conf) = &a.ui.mode else { panic!("no confirmation: {:?}", a.ui.message) };
    let plan = conf.plan.lines();
    assert!(plan[0].contains(&format!("nodelist={} gpus/node=8", chosen.join(","))), "{plan:?}");
    typed(&mut a, "rerun after repair\r");
    assert_eq!(a.ui.mode.name(), "normal");
    let mut verdict = None;
    while verdict.is_none() || a.state().acceptance.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(180), ev_rx.recv()).await.expect("event").unwrap();
        if let OpEvent::AcceptanceResult { verdict: v, .. } = &ev {
            verdict = Some(*v);
        }
        a.update(Msg::Op(ev));
    }
    assert_eq!(verdict, Some(Verdict::Pass), "{:#?}", a.op_panel);
    let panel: Vec<&str> = a.op_panel.iter().map(|(l, _)| l.as_str()).collect();
    let target = chosen.join(",");
    assert!(
        panel
            .iter()
            .any(|l| l.starts_with(&format!("acceptance {target}: job ")) && l.ends_with("COMPLETED"))
    );
    assert!(panel.iter().any(|l| l.contains("PASS 338.8 GB/s")), "{panel:#?}");
    let runs = store.load().unwrap().runs;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].nodes, chosen);
    assert_eq!(runs[0].backend, "slurm");
    typed(&mut a, "\x1b:fabric\r");
    let screen = render(&mut a, 160, 48);
    for n in &chosen {
        let row =
            screen.lines().find(|l| l.contains(&format!("│{n} "))).unwrap_or_else(|| panic!("{screen}"));
        assert!(row.contains("pass      338.8"), "{row}");
    }
}
