//! Every acceptance run, kept as one JSON line in `acceptance.jsonl` under the XDG data dir
//! (beside the audit log; configurable). Appends take an exclusive lock; reading skips lines
//! it cannot understand (a half-written tail, a newer format) and says how many.

use super::judge::Judgement;
use super::parse::NcclRun;
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// Which nodes one job tests.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One job per node: its GPUs and NVLink/NVSwitch.
    PerNode,
    /// One job per two nodes: the fabric between them.
    Pairs,
    /// One job on every selected node.
    All,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::PerNode => "per-node",
            Mode::Pairs => "pairs",
            Mode::All => "all",
        }
    }
}

/// One run: what was asked, what the cluster said, what the output said, and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    /// The audited operation that launched it.
    pub op_id: Option<String>,
    pub mode: Mode,
    pub nodes: Vec<String>,
    /// `slurm`, `sim`, `kube`.
    pub backend: String,
    /// The fleet cluster it ran on (a `[[cluster]]` name); absent for a single-cluster console's
    /// runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    pub job_id: Option<String>,
    /// The scheduler's final state of the job (`COMPLETED`, `FAILED`, `TIMEOUT`, ...).
    pub job_state: Option<String>,
    pub gpus_per_node: u32,
    pub gpu_model: Option<String>,
    pub driver: Option<String>,
    pub cuda: Option<String>,
    pub nccl: Option<String>,
    pub image: Option<String>,
    pub command: String,
    pub submitted_at: i64,
    pub finished_at: Option<i64>,
    /// Where the output was read from.
    pub output_path: Option<String>,
    pub result: Option<NcclRun>,
    /// Why there is no (complete) result: collection or parse failure.
    pub error: Option<String>,
    /// busbw (GB/s) at the largest size: the figure judged.
    pub busbw: Option<f64>,
    pub judgement: Option<Judgement>,
}

impl RunRecord {
    /// How the per-node picture names node `n` of this run: `cluster/node` for a fleet
    /// cluster's run, the node's name otherwise.
    pub fn node_key(&self, n: &str) -> String {
        match &self.cluster {
            Some(c) => format!("{c}/{n}"),
            None => n.to_string(),
        }
    }

    /// `8xH100` for one node, `2x8xH100` for several.
    pub fn shape(&self) -> String {
        shape(self.nodes.len(), self.gpus_per_node, self.gpu_model.as_deref())
    }
}

/// The short GPU name of a model string, upper-cased so that every source agrees:
/// `NVIDIA H100 80GB HBM3` → `H100`, `NVIDIA A100-SXM4-80GB` → `A100`, Slurm's gres type `h100`
/// → `H100`.
pub fn short_model(model: &str) -> String {
    let m = model.trim();
    let m = m.strip_prefix("NVIDIA").unwrap_or(m).trim();
    let tok = m
        .split_whitespace()
        .find(|t| t.bytes().any(|b| b.is_ascii_digit()))
        .or_else(|| m.split_whitespace().next());
    tok.map(|t| t.split('-').next().unwrap_or(t).to_uppercase()).unwrap_or_else(|| "GPU".into())
}

pub fn shape(nodes: usize, gpus: u32, model: Option<&str>) -> String {
    let m = model.map(short_model).unwrap_or_else(|| "GPU".into());
    if nodes <= 1 { format!("{gpus}x{m}") } else { format!("{nodes}x{gpus}x{m}") }
}

/// Whether the file's last byte is not a newline (an interrupted write).
fn ends_cut(f: &mut std::fs::File) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    if f.metadata()?.len() == 0 {
        return Ok(false);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut b = [0u8; 1];
    f.read_exact(&mut b)?;
    Ok(b[0] != b'\n')
}

#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct StoreError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The run store.
#[derive(Debug, Clone, PartialEq)]
pub struct Store {
    pub path: PathBuf,
}

/// What a read found.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub runs: Vec<RunRecord>,
    /// Lines that were not a run record.
    pub skipped: usize,
}

impl Store {
    pub fn new(path: PathBuf) -> Store {
        Store { path }
    }

    pub fn default_path() -> Option<PathBuf> {
        directories::ProjectDirs::from("io", "gpuplane", "gpuplane")
            .map(|d| d.data_dir().join("acceptance.jsonl"))
    }

    fn err(&self, source: std::io::Error) -> StoreError {
        StoreError { path: self.path.clone(), source }
    }

    pub fn append(&self, r: &RunRecord) -> Result<(), StoreError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| self.err(e))?;
        }
        let mut line = serde_json::to_string(r).map_err(|e| self.err(std::io::Error::other(e)))?;
        line.push('\n');
        let mut f = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(|e| self.err(e))?;
        f.lock().map_err(|e| self.err(e))?;
        // A tail cut short by a crash stays its own (skipped) line.
        let w = ends_cut(&mut f)
            .and_then(|cut| if cut { f.write_all(b"\n") } else { Ok(()) })
            .and_then(|_| f.write_all(line.as_bytes()))
            .and_then(|_| f.sync_data());
        let _ = f.unlock();
        w.map_err(|e| self.err(e))
    }

    /// Every run, oldest first. A missing file is an empty store.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let f = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
            Err(e) => return Err(self.err(e)),
        };
        let mut out = Loaded::default();
        for line in std::io::BufReader::new(f).split(b'\n') {
            let line = line.map_err(|e| self.err(e))?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RunRecord>(&line) {
                Ok(r) => out.runs.push(r),
                Err(_) => out.skipped += 1,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn record(id: &str, nodes: &[&str], busbw: Option<f64>) -> RunRecord {
        RunRecord {
            id: id.into(),
            op_id: None,
            mode: if nodes.len() == 1 { Mode::PerNode } else { Mode::All },
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            backend: "sim".into(),
            cluster: None,
            job_id: Some(format!("job-{id}")),
            job_state: Some("COMPLETED".into()),
            gpus_per_node: 8,
            gpu_model: Some("NVIDIA H100 80GB HBM3".into()),
            driver: Some("550.54.15".into()),
            cuda: Some("12.4".into()),
            nccl: Some("2.21.5".into()),
            image: None,
            command: "all_reduce_perf -b 8 -e 8G -f 2 -g 8".into(),
            submitted_at: 1_800_000_000,
            finished_at: Some(1_800_000_060),
            output_path: None,
            result: None,
            error: None,
            busbw,
            judgement: None,
        }
    }

    #[test]
    fn shapes_and_models() {
        assert_eq!(short_model("NVIDIA H100 80GB HBM3"), "H100");
        assert_eq!(short_model("NVIDIA A100-SXM4-80GB"), "A100");
        assert_eq!(short_model("NVIDIA L40S"), "L40S");
        assert_eq!(short_model("h100"), "H100");
        assert_eq!(short_model(""), "GPU");
        assert_eq!(record("a", &["n1"], None).shape(), "8xH100");
        assert_eq!(record("a", &["n1", "n2"], None).shape(), "2x8xH100");
    }

    #[test]
    fn append_and_load_round_trip_skipping_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("sub").join("acceptance.jsonl"));
        assert!(store.load().unwrap().runs.is_empty());
        let mut a = record("a", &["n1"], Some(350.0));
        a.result = Some(
            crate::acceptance::parse::parse(include_bytes!(
                "../../../../tests/fixtures/nccl/02_h100x16_2node_nebius_k8s_ib_allreduce_excerpt.txt"
            ))
            .unwrap(),
        );
        store.append(&a).unwrap();
        std::fs::OpenOptions::new().append(true).open(&store.path).unwrap().write_all(b"{\"half\":").unwrap();
        let b = record("b", &["n2"], None);
        store.append(&b).unwrap();
        let l = store.load().unwrap();
        assert_eq!(l.runs, vec![a, b]);
        assert_eq!(l.skipped, 1);
    }
}
