//! Joining one Prometheus refresh into the state at fleet scale: 10,000 nodes × 8 GPUs, 8 IB
//! ports per node, from generated API answers shaped exactly like the backend's 20 queries
//! (dense families: one series per GPU or port; sparse families: the few non-zero series).
//!
//! `cargo bench --bench prom_join`. Target: parse + map + apply < 50 ms. Measured on the 2-core
//! dev machine: 68 MB of answers, parse ~190 ms, parse + map ~275 ms, + apply ~287 ms (median):
//! not met; the answer volume (dense per-port families above all) dominates.

use divan::Bencher;
use gpuplane::backend::prom::client::Body;
use gpuplane::backend::prom::map::{self, Memory};
use gpuplane::backend::prom::queries::{Family, REFRESH};
use gpuplane::backend::prom::{PromConfig, map_refresh};
use gpuplane::backend::{Delta, Inventory, Update};
use gpuplane::state::ClusterState;
use std::fmt::Write;

const NODES: usize = 10_000;
const GPUS: usize = 8;
const PORTS: usize = 8;
const TS: &str = "1795959344.452";

fn main() {
    divan::main();
}

fn host(n: usize) -> String {
    format!("gpu-{n:05}")
}

fn vector(series: impl Iterator<Item = (String, String)>) -> Vec<u8> {
    let mut s = String::from(r#"{"status":"success","data":{"resultType":"vector","result":["#);
    for (i, (labels, v)) in series.enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, r#"{{"metric":{{{labels}}},"value":[{TS},"{v}"]}}"#);
    }
    s.push_str("]}}");
    s.into_bytes()
}

fn gpus() -> impl Iterator<Item = (usize, usize)> {
    (0..NODES).flat_map(|n| (0..GPUS).map(move |g| (n, g)))
}

fn ports() -> impl Iterator<Item = (usize, usize)> {
    (0..NODES).flat_map(|n| (0..PORTS).map(move |p| (n, p)))
}

fn gpu_labels(n: usize, g: usize) -> String {
    format!(r#""Hostname":"{}","gpu":"{g}""#, host(n))
}

fn port_labels(n: usize, p: usize) -> String {
    format!(r#""device":"mlx5_{p}","instance":"{}:9100","port":"1""#, host(n))
}

/// The answer to each refresh query on a mostly healthy fleet.
fn answer(f: Family) -> Vec<u8> {
    let r = |n: usize, g: usize, m: usize| (n * 31 + g * 7) % m;
    match f {
        Family::GpuUtil => vector(gpus().map(|(n, g)| {
            // 90 % of GPUs run a pod (allocation labels), the rest are free.
            let labels = if n % 10 != 9 {
                format!(
                    r#""Hostname":"{}","gpu":"{g}","namespace":"team-{}","pod":"train-{}-worker-{}""#,
                    host(n),
                    n % 40,
                    n / 4,
                    n % 4
                )
            } else {
                gpu_labels(n, g)
            };
            (labels, (60 + r(n, g, 40)).to_string())
        })),
        Family::TensorActive => {
            vector(gpus().map(|(n, g)| (gpu_labels(n, g), (30 + r(n, g, 50)).to_string())))
        }
        Family::GpuTemp => vector(gpus().map(|(n, g)| (gpu_labels(n, g), (55 + r(n, g, 25)).to_string()))),
        Family::Power => vector(gpus().map(|(n, g)| (gpu_labels(n, g), (300 + r(n, g, 390)).to_string()))),
        Family::FbUsed => {
            vector(gpus().map(|(n, g)| (gpu_labels(n, g), (20000 + r(n, g, 60000)).to_string())))
        }
        // Sparse: 1 GPU in 1,000 with an XID or ECC errors.
        Family::XidLast | Family::XidCount | Family::EccSbe | Family::EccDbe => vector(
            gpus()
                .filter(|(n, g)| (n * GPUS + g) % 1000 == 7)
                .map(|(n, g)| (gpu_labels(n, g), "2".to_string())),
        ),
        Family::IbState => vector(ports().map(|(n, p)| (port_labels(n, p), "4".to_string()))),
        Family::IbRate => vector(ports().map(|(n, p)| (port_labels(n, p), "50000000000".to_string()))),
        Family::IbRx | Family::IbTx => {
            vector(ports().map(|(n, p)| (port_labels(n, p), (100_000 + r(n, p, 200_000)).to_string())))
        }
        // Sparse: 1 port in 200 with errors.
        Family::IbSymbol
        | Family::IbRcvErrors
        | Family::IbXmitDiscards
        | Family::IbLinkDowned
        | Family::IbFlaps => vector(
            ports()
                .filter(|(n, p)| (n * PORTS + p) % 200 == 3)
                .map(|(n, p)| (port_labels(n, p), "12".to_string())),
        ),
        Family::FsSize | Family::FsAvail => vector(
            [(
                r#""device":"10.0.0.1@o2ib:/ckptfs","fstype":"lustre","mountpoint":"/mnt/checkpoints""#
                    .to_string(),
                "4503600000000000".to_string(),
            )]
            .into_iter(),
        ),
    }
}

struct Fixture {
    cfg: PromConfig,
    bodies: Vec<(Family, Result<Body, gpuplane::backend::prom::PromError>)>,
    state: ClusterState,
}

fn fixture() -> Fixture {
    let cfg = PromConfig::new("http://bench");
    let bodies: Vec<_> = REFRESH.iter().map(|f| (*f, Ok(Body(answer(*f))))).collect();
    let bytes: usize = bodies.iter().map(|(_, b)| b.as_ref().map_or(0, |b| b.0.len())).sum();
    eprintln!("one refresh: {} queries, {:.1} MB of answers", REFRESH.len(), bytes as f64 / 1e6);
    // The discovered inventory (as Prometheus-only mode builds it), then a warm-up refresh.
    let disc = vector(gpus().map(|(n, g)| {
        (
            format!(
                r#""Hostname":"{}","UUID":"GPU-{n}-{g}","gpu":"{g}","modelName":"NVIDIA H100 80GB HBM3""#,
                host(n)
            ),
            "81559".into(),
        )
    }));
    let resp = gpuplane::backend::prom::api::parse(&disc).unwrap();
    let nodes = map::discover(&cfg, &resp.results);
    assert_eq!(nodes.len(), NODES);
    let mut state = ClusterState::new(Default::default(), Default::default());
    state.apply(Update::Inventory {
        at: 1_795_959_000,
        inventory: Box::new(Inventory { source: "prom".into(), nodes: Some(nodes), ..Inventory::default() }),
    });
    let mut f = Fixture { cfg, bodies, state };
    let mut mem = Memory::default();
    for k in 0..3 {
        let d = delta(&f, 1_795_959_015 + 15 * k, &mut mem);
        f.state.apply(d);
    }
    f
}

fn delta(f: &Fixture, at: i64, mem: &mut Memory) -> Update {
    let out = map_refresh(&f.cfg, &f.bodies, at, mem);
    assert!(out.failed.is_empty());
    Update::Delta(Box::new(Delta {
        source: "prom".into(),
        at,
        nodes: out.mapped.samples,
        jobs_upsert: out.mapped.jobs_upsert,
        jobs_remove: out.mapped.jobs_remove,
        quotas: None,
        storage: out.mapped.storage,
    }))
}

/// Parse + map + apply: one whole refresh into the state.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn refresh_10k_nodes_parse_map_apply(b: Bencher) {
    let mut f = fixture();
    let mut mem = Memory::default();
    let mut at = 1_795_960_000;
    let mut state = std::mem::take(&mut f.state);
    b.bench_local(|| {
        at += 15;
        let d = delta(&f, at, &mut mem);
        state.apply(d)
    });
    assert_eq!(state.nodes[5].gpus[3].util, Some(60 + ((5 * 31 + 3 * 7) % 40) as u8));
}

/// Parse + map only (what runs on the backend's blocking thread).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn refresh_10k_nodes_parse_map(b: Bencher) {
    let f = fixture();
    let mut mem = Memory::default();
    b.bench_local(|| map_refresh(&f.cfg, &f.bodies, 1_795_960_000, &mut mem).mapped.samples.len());
}

/// Parse only.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn refresh_10k_nodes_parse(b: Bencher) {
    let f = fixture();
    b.bench_local(|| {
        f.bodies
            .iter()
            .map(|(_, b)| gpuplane::backend::prom::api::parse(&b.as_ref().unwrap().0).unwrap().results.len())
            .sum::<usize>()
    });
}
