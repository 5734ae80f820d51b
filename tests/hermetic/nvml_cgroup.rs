//! The GPU-process owner parser on the cgroup shapes in tests/fixtures/cgroup (see its README).

use gpuplane::backend::nvml::owner::{Owner, Qos, parse_cgroup, read_proc};
use gpuplane::model::Text;
use std::path::Path;

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cgroup").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn pod(uid: &str, qos: Qos, container: &str) -> Owner {
    Owner::Pod { uid: uid.into(), qos, container: Some(container.into()) }
}

fn slurm(job: u64, step: &str) -> Owner {
    Owner::Slurm { job, step: Some(step.into()) }
}

const U1: &str = "8f6a1c2e-3b4d-4e5f-9a0b-1c2d3e4f5a6b";
const C1: &str = "4f1c0a9d2b7e6f3a5c8d1e0b9a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f";
const U2: &str = "0b4d6e8f-1a2c-4e3d-8f7a-9b0c1d2e3f4a";
const C2: &str = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d";
const U3: &str = "3c5e7a9b-2d4f-4a6c-8e0b-1f3a5c7e9b2d";
const C3: &str = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b";

#[test]
fn every_fixture_resolves_to_its_owner() {
    let cases: Vec<(&str, Owner)> = vec![
        ("k8s-v1-cgroupfs-burstable-containerd.txt", pod(U1, Qos::Burstable, C1)),
        ("k8s-v1-cgroupfs-besteffort-docker.txt", pod(U2, Qos::BestEffort, C2)),
        ("k8s-v1-cgroupfs-guaranteed.txt", pod(U3, Qos::Guaranteed, C3)),
        ("k8s-v1-systemd-besteffort-docker.txt", pod(U2, Qos::BestEffort, C2)),
        ("k8s-v2-systemd-burstable-containerd.txt", pod(U1, Qos::Burstable, C1)),
        ("k8s-v2-systemd-besteffort-crio.txt", pod(U2, Qos::BestEffort, C2)),
        ("k8s-v2-systemd-guaranteed-containerd.txt", pod(U3, Qos::Guaranteed, C3)),
        ("k8s-v2-cgroupfs-besteffort-kind.txt", pod(U2, Qos::BestEffort, C2)),
        ("k8s-v2-systemd-static-pod.txt", pod("d41d8cd98f00b204e9800998ecf8427e", Qos::Burstable, C1)),
        ("slurm-v1-step.txt", slurm(4242, "0")),
        ("slurm-v1-multiple-slurmd.txt", slurm(88, "interactive")),
        ("slurm-v2-batch.txt", slurm(4343, "batch")),
        ("slurm-v2-extern.txt", slurm(77, "extern")),
        ("slurm-v2-step.txt", slurm(123456, "3")),
        ("other-v2-user-session.txt", Owner::Other("/user.slice/user-1000.slice/session-3.scope".into())),
        ("other-v2-docker.txt", Owner::Other(Text::from(format!("/system.slice/docker-{C1}.scope")))),
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cgroup");
    let on_disk = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "txt"));
    assert_eq!(on_disk.count(), cases.len(), "every fixture has a case");
    for (file, want) in cases {
        assert_eq!(parse_cgroup(&fixture(file)), want, "{file}");
    }
}

#[test]
fn v1_lines_without_an_owner_before_the_one_with_it() {
    let text = format!(
        "8:cpu,cpuacct:/user.slice\n1:name=systemd:/system.slice/slurmd.service\n{}",
        fixture("slurm-v1-step.txt")
    );
    assert_eq!(parse_cgroup(&text), slurm(4242, "0"));
    // A job without a step (the job's own cgroup).
    assert_eq!(
        parse_cgroup("0::/system.slice/slurmstepd.scope/job_9\n"),
        Owner::Slurm { job: 9, step: None }
    );
}

#[test]
fn labels() {
    assert_eq!(pod(U1, Qos::Burstable, C1).label(), "pod 8f6a1c2e");
    assert_eq!(slurm(4242, "0").label(), "slurm 4242.0");
    assert_eq!(Owner::Unknown.label(), "-");
}

#[test]
fn proc_reading_tolerates_vanished_processes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("77");
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("comm"), "python3\n").unwrap();
    std::fs::write(p.join("status"), "Name:\tpython3\nUid:\t1000\t1000\t1000\t1000\n").unwrap();
    std::fs::write(p.join("cgroup"), fixture("slurm-v2-step.txt")).unwrap();
    let info = read_proc(dir.path(), 77);
    assert_eq!(info.comm.as_deref(), Some("python3"));
    assert_eq!(info.uid, Some(1000));
    assert_eq!(info.owner, slurm(123456, "3"));
    let gone = read_proc(dir.path(), 78);
    assert_eq!((gone.comm, gone.uid, gone.owner), (None, None, Owner::Unknown));
}
