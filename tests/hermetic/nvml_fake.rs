//! The NVML backend through nvml-wrapper's real FFI path, without a GPU: a fake
//! `libnvidia-ml.so` (tests/fixtures/nvml/fake_nvml.c, compiled here with the machine's `cc`)
//! scripts an 8-GPU node, and the model built from it must equal the script.

use crate::common;
use gpuplane::backend::nvml::{self, LOST_XID, NvmlConfig, Owner, Qos, Reader, Unavailable};
use gpuplane::model::protocol::Update;
use gpuplane::model::{EccCounts, LinkKind};

use crate::nvml_support::fake_lib;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A /proc with the three scripted GPU processes and an /etc/passwd naming their users.
fn fake_proc() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let procs = [
        (
            4242,
            "python3",
            1000,
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8f6a1c2e_3b4d_4e5f_9a0b_1c2d3e4f5a6b.slice/cri-containerd-4f1c0a9d2b7e6f3a5c8d1e0b9a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f.scope\n",
        ),
        (4343, "torchrun", 1001, "0::/system.slice/slurmstepd.scope/job_4343/step_0/user/task_0\n"),
        (4444, "vllm", 0, "0::/user.slice/user-0.slice/session-1.scope\n"),
    ];
    for (pid, comm, uid, cgroup) in procs {
        let p = dir.path().join("proc").join(pid.to_string());
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("comm"), format!("{comm}\n")).unwrap();
        std::fs::write(p.join("status"), format!("Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"))
            .unwrap();
        std::fs::write(p.join("cgroup"), cgroup).unwrap();
    }
    std::fs::write(
        dir.path().join("passwd"),
        "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n",
    )
    .unwrap();
    dir
}

fn config(lib: PathBuf, root: &Path) -> NvmlConfig {
    NvmlConfig {
        lib_path: Some(lib),
        explicit: true,
        node_name: Some("gpu-node-07".into()),
        proc_root: root.join("proc"),
        passwd: root.join("passwd"),
        // No NICs in the scripted node: never the host's own /sys.
        sys_root: root.join("sys"),
        interval: Duration::from_millis(20),
        ..Default::default()
    }
}

/// The state after NVML's inventory of one node.
fn state_of(at: i64, node: gpuplane::model::Node) -> gpuplane::state::ClusterState {
    let mut state = gpuplane::state::ClusterState::default();
    state.apply(Update::Inventory {
        at,
        inventory: Box::new(gpuplane::model::protocol::Inventory {
            nodes: Some(vec![node]),
            ..Default::default()
        }),
    });
    state
}

/// A headless console on `state`, as user alice.
fn console(state: gpuplane::state::ClusterState) -> gpuplane::tui::app::App {
    gpuplane::tui::app::App::new(
        state,
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "alice".into(),
    )
}

/// `nvidia-smi topo -m` as the fake's script lays the node out (see fake_nvml.c).
const TOPO: [[&str; 8]; 8] = [
    ["X", "NV4", "PXB", "NV2", "NODE", "SYS", "SYS", "SYS"],
    ["NV4", "X", "NV2", "PHB", "SYS", "NODE", "SYS", "SYS"],
    ["PXB", "NV2", "X", "NV2", "SYS", "SYS", "NODE", "SYS"],
    ["NV2", "PHB", "NV2", "X", "SYS", "SYS", "SYS", "NODE"],
    ["NODE", "SYS", "SYS", "SYS", "X", "NV2", "PIX", "NV2"],
    ["SYS", "NODE", "SYS", "SYS", "NV2", "X", "NV2", "PIX"],
    ["SYS", "SYS", "NODE", "SYS", "PIX", "NV2", "X", "NV2"],
    ["SYS", "SYS", "SYS", "NODE", "NV2", "PIX", "NV2", "X"],
];

#[test]
fn the_model_equals_the_script() {
    let root = fake_proc();
    let mut r = Reader::open(&config(fake_lib("plain", &[]), root.path())).expect("fake NVML opens");
    assert_eq!(r.gpu_count(), 8);
    let s = r.read();
    assert_eq!(s.host, "gpu-node-07");
    assert_eq!(s.driver.as_deref(), Some("550.54.15"));
    assert_eq!(s.cuda.as_deref(), Some("12.4"));

    // Topology: the matrix, NVLink islands, CPU affinity and NUMA.
    let labels: Vec<Vec<String>> =
        s.topology.matrix.iter().map(|r| r.iter().map(|l| l.label()).collect()).collect();
    assert_eq!(labels, TOPO.map(|r| r.map(String::from).to_vec()).to_vec());
    assert_eq!(s.topology.nvlink_islands(), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(s.topology.cpu_affinity[0], "0-55,112-167");
    assert_eq!(s.topology.cpu_affinity[7], "56-111,168-223");
    assert_eq!(s.topology.numa, vec![0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(s.link(0, 1), Some(LinkKind::Nv(4)));

    for g in &s.gpus {
        let i = g.index;
        assert_eq!(g.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(g.uuid, format!("GPU-{i:08}-0000-0000-0000-000000000000"));
        assert_eq!(g.mem_total_mib, 80 * 1024);
        assert_eq!(g.mem_used_mib, Some((u32::from(i) + 1) * 1024));
        assert_eq!(g.util, Some(10 * i));
        assert_eq!(g.mem_util, Some(5 * i));
        assert_eq!(g.temp_c, Some(40 + i));
        assert_eq!(g.power_w, Some(300 + u16::from(i)));
        assert_eq!(g.power_limit_w, Some(700));
        assert_eq!(
            (g.clock_graphics_mhz, g.clock_sm_mhz, g.clock_mem_mhz),
            (Some(1980), Some(1980), Some(2619))
        );
        assert_eq!(g.enc_util, Some(if i == 6 { 30 } else { 0 }));
        assert_eq!(g.dec_util, None, "no decoder entry point in the fake: absent, not an error");
        assert_eq!(g.lost, None);
        let ecc = if i == 5 { EccCounts { sbe: 7, dbe: 2 } } else { EccCounts::default() };
        assert_eq!(g.ecc, Some(ecc));
        assert_eq!(g.retired_dbe, Some(u32::from(i == 5)));
        assert_eq!(g.retired_sbe, Some(0));
        assert_eq!(
            g.remapped.map(|r| (r.correctable, r.uncorrectable)),
            Some(if i == 5 { (3, 1) } else { (0, 0) })
        );
        assert_eq!(g.mig_enabled, Some(i == 2));
        let active: Vec<bool> = g.nvlinks.iter().map(|l| l.active).collect();
        let n_links = [6, 6, 4, 4, 4, 4, 4, 5][usize::from(i)];
        assert_eq!(active.len(), n_links, "GPU {i} links");
        assert_eq!(active.iter().filter(|a| !**a).count(), usize::from(i == 7));
    }
    assert_eq!(nvml::throttle_names(s.gpus[4].throttle.unwrap()), vec!["sw_power_cap", "sw_thermal"]);
    // NVLink far ends resolve to local GPUs, also from GPU 3's short bus-id spelling.
    let g3: Vec<Option<u8>> = s.gpus[3].nvlinks.iter().map(|l| l.remote_gpu).collect();
    assert_eq!(g3, vec![Some(2), Some(2), Some(0), Some(0)]);
    assert_eq!(s.gpus[3].nvlinks[2].remote_bus_id.as_deref(), Some("0000:18:00.0"));
    assert_eq!(s.gpus[1].nvlinks[0].replay, Some(12));
    assert_eq!(s.gpus[1].nvlinks[1].replay, Some(0));
    // PCIe replays since boot; errors that grew while gpuplane watched: none yet.
    let pcie: Vec<Option<u64>> = s.gpus.iter().map(|g| g.pcie_replay).collect();
    assert_eq!(pcie, [0, 0, 0, 0, 0, 0, 40, 0].map(Some).to_vec());
    assert!(
        s.gpus.iter().all(|g| g.link_errors == Some(Default::default())),
        "the first read is the baseline"
    );

    // MIG instances on GPU 2.
    let mig: Vec<&str> = s.gpus[2].mig.iter().map(|m| m.profile.as_str()).collect();
    assert_eq!(mig, vec!["3g.40gb", "1g.10gb"]);

    // Processes and owners.
    let procs = s.processes();
    type Row<'a> = (u8, u32, Option<u64>, Option<&'a str>, Option<&'a str>, &'a Owner);
    let got: Vec<Row> = procs
        .iter()
        .map(|p| (p.gpu, p.pid, p.used_mib, p.comm.as_deref(), p.user.as_deref(), &p.owner))
        .collect();
    let pod = Owner::Pod {
        uid: "8f6a1c2e-3b4d-4e5f-9a0b-1c2d3e4f5a6b".into(),
        qos: Qos::Burstable,
        container: Some("4f1c0a9d2b7e6f3a5c8d1e0b9a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f".into()),
    };
    let job = Owner::Slurm { job: 4343, step: Some("0".into()) };
    let other = Owner::Other("/user.slice/user-0.slice/session-1.scope".into());
    assert_eq!(
        got,
        vec![
            (0, 4242, Some(2048), Some("python3"), Some("alice"), &pod),
            (2, 4444, Some(512), Some("vllm"), Some("root"), &other),
            (5, 4343, Some(1024), Some("torchrun"), Some("bob"), &job),
        ]
    );
    assert_eq!(procs[1].gpu_instance, Some(1));

    // The model's node.
    let node = nvml::node_of(&s);
    assert_eq!(node.name, "gpu-node-07");
    assert_eq!(node.gpus.len(), 8);
    assert_eq!((node.gpu_slots, node.gpu_alloc), (8, 3));
    assert_eq!(node.gpu_model(), "NVIDIA H100 80GB HBM3");
    assert_eq!(node.driver.as_deref(), Some("550.54.15"));
    assert_eq!(node.topology.as_deref(), Some(&*s.topology));
    assert!(node.gpus[5].is_failed(), "double-bit ECC errors mark GPU 5 failed");
    assert_eq!(node.gpus.iter().filter(|g| g.is_failed()).count(), 1);
    let mig: Vec<&str> = node.gpus[2].mig.iter().map(|m| m.profile.as_str()).collect();
    assert_eq!(mig, vec!["3g.40gb", "1g.10gb"]);
    assert_eq!(node.gpus[3].power_limit_w, 700);
    // The owners reach the model, per GPU, and the node's detail pane shows them.
    let owners: Vec<(u8, u32, &str)> =
        node.gpus.iter().flat_map(|g| &g.processes).map(|p| (p.gpu, p.pid, p.owner.as_str())).collect();
    assert_eq!(
        owners,
        vec![(0, 4242, "pod 8f6a1c2e"), (2, 4444, "session-1.scope"), (5, 4343, "slurm 4343.0")]
    );
    let pod_uid = node.gpus[0].processes[0].pod_uid.clone().expect("the pod's UID is kept");
    assert!(pod_uid.starts_with("8f6a1c2e"), "{pod_uid}");
    let state = state_of(s.at, node);
    let mut app = console(state);
    app.run_command("nodes");
    app.prepare();
    app.ui.detail = true;
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 60)).unwrap();
    let now = s.at;
    term.draw(|f| gpuplane::tui::draw::draw(f, &mut app, now)).unwrap();
    let screen: String = term.backend().buffer().content().iter().map(|c| c.symbol()).collect();
    assert!(screen.contains("GPU processes and their owners"), "detail pane");
    assert!(
        screen.contains("slurm 4343.0") && screen.contains("pod 8f6a1c2e") && screen.contains("torchrun")
    );
    // With the Kubernetes backend connected, the pod is named.
    app.update(gpuplane::tui::app::Msg::Update(gpuplane::model::protocol::Update::PodNames(
        [(pod_uid, "team-a/train-llm-0-h5t8r".into())].into_iter().collect(),
    )));
    app.prepare();
    term.draw(|f| gpuplane::tui::draw::draw(f, &mut app, now)).unwrap();
    let screen: String = term.backend().buffer().content().iter().map(|c| c.symbol()).collect();
    let rows: Vec<String> = term
        .backend()
        .buffer()
        .content()
        .chunks(160)
        .map(|r| r.iter().map(|c| c.symbol()).collect::<String>())
        .filter(|l| l.contains("4242"))
        .collect();
    assert!(screen.contains("team-a/train-llm-0-h5t8r"), "the pod's name in the owners: {rows:#?}");
}

#[test]
fn a_gpu_lost_mid_run_is_marked_and_polling_continues() {
    let root = fake_proc();
    // GPU 3 answers two utilisation reads, then NVML_ERROR_GPU_IS_LOST.
    let lib = fake_lib("lost-reader", &["-DFAKE_NVML_LOST_DEFAULT=\"3:2\""]);
    let mut r = Reader::open(&config(lib, root.path())).expect("fake NVML opens");
    for _ in 0..2 {
        assert!(r.read().gpus.iter().all(|g| g.lost.is_none()));
    }
    for _ in 0..3 {
        let s = r.read();
        let lost: Vec<u8> = s.gpus.iter().filter(|g| g.lost.is_some()).map(|g| g.index).collect();
        assert_eq!(lost, vec![3]);
        let g3 = &s.gpus[3];
        assert!(g3.lost.as_deref().unwrap().contains("fell off the bus"), "{:?}", g3.lost);
        assert_eq!((g3.util, g3.temp_c, g3.mem_used_mib), (None, None, None));
        assert_eq!(s.gpus[4].util, Some(40), "the other GPUs keep reporting");
        let sample = nvml::sample_of(&s);
        assert_eq!(sample.gpus[3].xid.map(|x| x.code), Some(LOST_XID));
        assert_eq!(sample.gpus[3].util, None);
        assert_eq!(sample.gpus[2].xid, None);
        assert!(nvml::node_of(&s).gpus[3].is_failed());
    }
}

#[test]
fn a_critical_xid_event_reaches_the_model_and_becomes_an_incident() {
    let root = fake_proc();
    // GPU 6's event set delivers one XID 79 event.
    let lib = fake_lib("xid-event", &["-DFAKE_NVML_XID_DEFAULT=\"6:79\""]);
    let mut r = Reader::open(&config(lib, root.path())).expect("fake NVML opens");
    let s = r.read();
    assert_eq!(s.gpus[6].xid.map(|x| (x.0, x.2)), Some((79, 1)));
    assert!(s.gpus.iter().enumerate().all(|(i, g)| i == 6 || g.xid.is_none()));
    // The event is taken once; later reads keep the GPU's newest XID.
    let s = r.read();
    assert_eq!(s.gpus[6].xid.map(|x| (x.0, x.2)), Some((79, 1)));
    let sample = nvml::sample_of(&s);
    assert_eq!(sample.gpus[6].xid.map(|x| x.code), Some(79));
    let node = nvml::node_of(&s);
    assert!(node.gpus[6].is_failed(), "XID 79 is fatal");
    let state = state_of(s.at, node);
    assert!(
        state.incidents.iter().any(|i| i.title.starts_with("XID 79") && i.subject.ends_with("/gpu6")),
        "{:?}",
        state.incidents
    );
}

#[tokio::test]
async fn the_task_announces_the_node_then_streams_deltas_and_reports_a_lost_gpu() {
    let root = fake_proc();
    let lib = fake_lib("lost-task", &["-DFAKE_NVML_LOST_DEFAULT=\"3:2\""]);
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(nvml::run(config(lib, root.path()), tx, cancel.clone()));
    let mut seen_inventory = false;
    let mut lost_status = None;
    let mut deltas = 0;
    while lost_status.is_none() || deltas < 3 {
        let u =
            tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("an update").expect("open");
        match u {
            Update::PodNames(_) => panic!("NVML names no pods"),
            Update::Status(s) if s.error.is_none() => {
                assert_eq!(s.name, "nvml");
                assert!(!s.simulated);
                assert_eq!(s.detail.as_deref(), Some("driver 550.54.15 · 8 GPUs"));
            }
            Update::Status(s) => lost_status = s.error,
            Update::Acceptance(_) => panic!("nvml sends no acceptance results"),
            Update::History(_) => panic!("nvml sends no range history"),
            Update::Alerts(_) => panic!("nvml sends no alerts"),
            Update::Timeline(_) => panic!("nvml sends no timeline"),
            Update::Store(_) => panic!("nvml reports no store of gpuplane's"),
            Update::Handling(_) => panic!("nvml sends no acks or actions"),
            Update::JobFigures(_) => panic!("nvml sends no job figures"),
            Update::Cluster { .. } => panic!("a backend sends its own updates unwrapped"),
            Update::Inventory { inventory, .. } => {
                assert_eq!(inventory.source, "nvml");
                let nodes = inventory.nodes.expect("nodes");
                assert_eq!(nodes.len(), 1);
                assert_eq!(nodes[0].name, "gpu-node-07");
                assert!(nodes[0].topology.is_some());
                seen_inventory = true;
            }
            Update::Delta(d) => {
                assert!(seen_inventory, "the inventory comes first");
                assert_eq!(d.nodes.len(), 1);
                deltas += 1;
            }
        }
    }
    let err = lost_status.unwrap();
    assert!(err.contains("GPU 3 (00000000:5D:00.0, GPU-00000003-0000-0000-0000-000000000000)"), "{err}");
    assert!(nvml::processes().iter().any(|p| p.pid == 4242), "latest() is published");
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(5), task).await.expect("stops on cancel").unwrap();
}

#[tokio::test]
async fn joined_to_a_scheduler_it_sends_only_deltas_for_this_host() {
    let root = fake_proc();
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let cancel = CancellationToken::new();
    let cfg = NvmlConfig { join: true, explicit: false, ..config(fake_lib("plain", &[]), root.path()) };
    let task = tokio::spawn(nvml::run(cfg, tx, cancel.clone()));
    let mut deltas = 0;
    while deltas < 2 {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap() {
            Update::PodNames(_) => panic!("NVML names no pods"),
            Update::Status(s) => assert_eq!(s.error, None),
            Update::Inventory { .. } => panic!("joined: no inventory"),
            Update::Acceptance(_) => panic!("nvml sends no acceptance results"),
            Update::History(_) => panic!("nvml sends no range history"),
            Update::Alerts(_) => panic!("nvml sends no alerts"),
            Update::Timeline(_) => panic!("nvml sends no timeline"),
            Update::Store(_) => panic!("nvml reports no store of gpuplane's"),
            Update::Handling(_) => panic!("nvml sends no acks or actions"),
            Update::JobFigures(_) => panic!("nvml sends no job figures"),
            Update::Cluster { .. } => panic!("a backend sends its own updates unwrapped"),
            Update::Delta(d) => {
                assert_eq!(d.source, "nvml");
                assert_eq!(d.nodes[0].node, "gpu-node-07");
                assert_eq!(d.nodes[0].gpus.len(), 8);
                assert_eq!(d.nodes[0].gpus[5].ecc, Some(EccCounts { sbe: 7, dbe: 2 }));
                // The topology joins the scheduler's node, which has none of its own.
                let t = d.nodes[0].topology.as_ref().expect("topology in joined mode");
                assert_eq!(t.matrix.len(), 8);
                deltas += 1;
            }
        }
    }
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn without_the_library_asked_for_it_says_so_once_and_waits_quietly() {
    let missing = PathBuf::from("/nonexistent/libnvidia-ml.so.1");
    let err =
        Reader::open(&NvmlConfig { lib_path: Some(missing.clone()), ..Default::default() }).unwrap_err();
    assert!(matches!(err, Unavailable::NoLibrary(_)));

    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let cfg = NvmlConfig { lib_path: Some(missing.clone()), explicit: true, ..Default::default() };
    let cancel = CancellationToken::new();
    let task = tokio::spawn(nvml::run(cfg, tx, cancel.clone()));
    let Some(Update::Status(s)) = rx.recv().await else { panic!("a status") };
    assert_eq!(s.name, "nvml");
    assert_eq!(
        s.error.as_deref(),
        Some("nvml: no NVIDIA driver on this host (/nonexistent/libnvidia-ml.so.1 not found)")
    );
    // One notice, then quiet (the channel stays open so the console keeps reading keys).
    assert!(tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_err());
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
    assert!(rx.recv().await.is_none());

    // Not asked for: nothing at all.
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let cfg = NvmlConfig { lib_path: Some(missing), ..Default::default() };
    let cancel = CancellationToken::new();
    cancel.cancel();
    nvml::run(cfg, tx, cancel).await;
    assert!(rx.recv().await.is_none());
}

#[test]
fn the_default_library_name_is_in_the_notice() {
    let e = Unavailable::NoLibrary("libnvidia-ml.so.1".into());
    assert_eq!(e.to_string(), "nvml: no NVIDIA driver on this host (libnvidia-ml.so.1 not found)");
}

/// What one poll costs gpuplane itself (nvml-wrapper calls into the fake, model building and
/// /proc reads for three processes); a real driver adds its own ioctl time per call.
#[test]
fn read_cost_per_tick() {
    let root = fake_proc();
    let mut r = Reader::open(&config(fake_lib("plain", &[]), root.path())).unwrap();
    let mut us: Vec<u64> = (0..200).map(|_| r.read().read_us).collect();
    us.sort_unstable();
    let (p50, p99) = (us[us.len() / 2], us[us.len() * 99 / 100]);
    eprintln!("nvml read of 8 fake GPUs: p50 {p50} µs, p99 {p99} µs");
    assert!(p50 < 50_000, "a poll should cost well under its 1 s period: p50 {p50} µs");
}

#[test]
fn link_errors_that_grow_while_watched_become_incidents() {
    let root = fake_proc();
    // GPU 1's NVLink replays grow by 5 per read, GPU 6's PCIe replays by 60.
    let lib = fake_lib("link-growth", &["-DFAKE_NVML_LINK_GROWTH=5"]);
    let mut r = Reader::open(&config(lib, root.path())).expect("fake NVML opens");
    let first = r.read();
    assert!(first.gpus.iter().all(|g| g.link_errors == Some(Default::default())));
    r.read();
    let s = r.read();
    let e1 = s.gpus[1].link_errors.expect("counters read");
    assert_eq!((e1.nvlink_replay, e1.nvlink_crc, e1.pcie_replay), (10, 0, 0));
    assert_eq!(s.gpus[6].link_errors.map(|e| e.pcie_replay), Some(120));
    assert!(s.gpus.iter().enumerate().all(|(i, g)| i == 1 || i == 6 || !g.link_errors.unwrap().any()));
    // The same figures in the model, through the delta as through the inventory.
    let sample = nvml::sample_of(&s);
    assert_eq!(sample.gpus[1].links.map(|l| l.nvlink_replay), Some(10));
    let node = nvml::node_of(&s);
    assert_eq!(node.gpus[6].links.pcie_replay, 120);
    let state = state_of(s.at, node);
    let on = |gpu: &str| state.incidents.iter().filter(move |i| i.subject.ends_with(gpu)).count();
    assert_eq!(on("/gpu1"), 1, "NVLink errors on GPU 1: {:?}", state.incidents);
    assert_eq!(on("/gpu6"), 1, "a PCIe replay storm on GPU 6: {:?}", state.incidents);
}

#[test]
fn the_gpu_detail_shows_what_only_nvml_reads() {
    let root = fake_proc();
    let mut r = Reader::open(&config(fake_lib("plain", &[]), root.path())).expect("fake NVML opens");
    let s = r.read();
    let node = nvml::node_of(&s);
    let l = node.gpus[5].local.as_deref().expect("local readings");
    assert_eq!((l.clock_sm_mhz, l.clock_mem_mhz), (Some(1980), Some(2619)));
    assert_eq!((l.remap_correctable, l.remap_uncorrectable, l.remap_pending), (Some(3), Some(1), true));
    assert_eq!((l.mem_util, l.enc_util, l.dec_util), (Some(25), Some(0), None));
    let l7 = node.gpus[7].local.as_deref().expect("local readings");
    assert_eq!((l7.nvlinks_active, l7.nvlinks), (4, 5), "GPU 7's link 4 is down");
    let state = state_of(s.at, node);
    let mut app = console(state);
    app.run_command("gpus");
    common::render(&mut app, 160, 48);
    // GPU 4: throttled by the power cap and heat.
    common::typed(&mut app, "jjjj\r");
    let screen = common::render(&mut app, 160, 48);
    assert!(screen.contains("gpu-node-07/gpu4"), "{screen}");
    assert!(screen.contains("clocks    SM 1980 MHz, memory 2619 MHz"), "{screen}");
    assert!(screen.contains("throttle  sw_power_cap, sw_thermal"), "{screen}");
    assert!(screen.contains("engines   memory 20%, encoder 0%, decoder -"), "{screen}");
    assert!(screen.contains("nvlink    4/4 links up"), "{screen}");
    // GPU 5: rows remapped after its uncorrectable error, waiting for a reset.
    common::typed(&mut app, "\x1bj\r");
    let screen = common::render(&mut app, 160, 48);
    assert!(screen.contains("gpu-node-07/gpu5"), "{screen}");
    assert!(screen.contains("rows      3 correctable, 1 uncorrectable remapped; reset pending"), "{screen}");
    // GPU 7: one link down.
    common::typed(&mut app, "\x1bjj\r");
    let screen = common::render(&mut app, 160, 48);
    assert!(screen.contains("nvlink    4/5 links up"), "{screen}");
    // At 80×24 the rows are there too (cut at the pane's edge, never wrapped into others).
    let small = common::render(&mut app, 80, 24);
    assert!(small.contains("nvlink"), "{small}");
}
