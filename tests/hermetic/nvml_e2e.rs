//! `gpuplane --local` end to end: the real binary in a pseudo-terminal, with no NVML library
//! (the notice, no crash) and with the fake libnvidia-ml.so.1 found through LD_LIBRARY_PATH
//! (the scripted node in the Topology view).

use crate::nvml_support;

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Console {
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _home: tempfile::TempDir,
}

fn spawn(lib_dir: &str, args: &[&str]) -> Console {
    let pair = native_pty_system()
        .openpty(PtySize { rows: 40, cols: 160, pixel_width: 0, pixel_height: 0 })
        .expect("openpty");
    let home = tempfile::tempdir().unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_gpuplane"));
    cmd.env_clear();
    cmd.env("HOME", home.path());
    cmd.env("XDG_CONFIG_HOME", home.path().join("config"));
    cmd.env("XDG_STATE_HOME", home.path().join("state"));
    cmd.env("TERM", "xterm-256color");
    cmd.env("LANG", "C.UTF-8");
    cmd.env("PATH", "/usr/bin:/bin");
    cmd.env("LD_LIBRARY_PATH", lib_dir);
    cmd.args(args);
    let child = pair.slave.spawn_command(cmd).expect("spawn gpuplane");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let writer = pair.master.take_writer().unwrap();
    let parser = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(40).unwrap(),
        std::num::NonZeroU16::new(160).unwrap(),
        0,
    )));
    let p = parser.clone();
    let master = pair.master;
    std::thread::spawn(move || {
        let _master = master;
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            p.lock().unwrap().process(&buf[..n]);
        }
    });
    Console { parser, writer, child, _home: home }
}

impl Console {
    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.screen().contains(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("timed out waiting for {text:?}; screen:\n{}", self.screen());
    }

    fn quit(&mut self) {
        self.writer.write_all(b"q").unwrap();
        self.writer.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit status {status:?}");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("gpuplane did not exit; screen:\n{}", self.screen());
    }
}

#[test]
fn local_without_a_driver_says_so_and_quits_cleanly() {
    let mut c = spawn("/nonexistent", &["--local"]);
    c.wait_for("no NVIDIA driver on this host");
    c.quit();
}

#[test]
fn local_with_the_fake_driver_shows_the_scripted_topology() {
    let lib = nvml_support::fake_lib("e2e", &[]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&lib, dir.path().join("libnvidia-ml.so.1")).unwrap();
    let mut c = spawn(dir.path().to_str().unwrap(), &["--local", "--view", "topology"]);
    c.wait_for("NV4");
    c.wait_for("PXB");
    c.quit();
}

/// `gpuplane --local get …` with `libnvidia-ml.so.1` found through `LD_LIBRARY_PATH`.
fn get_local(lib_dir: &str, args: &[&str]) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_gpuplane"))
        .env_clear()
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("PATH", "/usr/bin:/bin")
        .env("LD_LIBRARY_PATH", lib_dir)
        .args(["--local", "get"])
        .args(args)
        .output()
        .expect("run gpuplane")
}

#[test]
fn local_get_reads_this_hosts_gpus_not_the_simulator() {
    let lib = nvml_support::fake_lib("e2e-get", &[]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&lib, dir.path().join("libnvidia-ml.so.1")).unwrap();
    let out = get_local(dir.path().to_str().unwrap(), &["gpus", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rows.len(), 8, "the scripted node's eight GPUs");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["uuid"], format!("GPU-{i:08}-0000-0000-0000-000000000000"));
        assert_eq!(r["model"], "NVIDIA H100 80GB HBM3");
    }
    let host = rows[0]["node"].as_str().unwrap().to_string();
    assert!(rows.iter().all(|r| r["node"] == host.as_str()), "one host");
    assert!(!host.starts_with("gpu-0"), "not a simulated node: {host}");
    // The table names the same host, and the node's topology came along.
    let nodes = get_local(dir.path().to_str().unwrap(), &["nodes", "-o", "json"]);
    let nodes: Vec<serde_json::Value> = serde_json::from_slice(&nodes.stdout).expect("json");
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0]["name"], host.as_str());
    assert_eq!(nodes[0]["pool"], "local");
}

#[test]
fn local_get_without_a_driver_fails_plainly() {
    let out = get_local("/nonexistent", &["gpus"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no NVIDIA driver on this host"), "{err}");
    assert!(out.stdout.is_empty(), "no simulated rows instead: {}", String::from_utf8_lossy(&out.stdout));
}
