//! The Prometheus answers of the join bench and the JSON crate comparison: what Prometheus
//! answers to the backend's queries (`queries::schedule`) at 10,000 nodes × 8 GPUs, 8 IB ports
//! per node, on a mostly healthy fleet (see the shape assumptions in `prom_join.rs`).
#![allow(dead_code)]

use gpuplane::backend::prom::queries::Family;
use std::fmt::Write;

pub const NODES: usize = 10_000;
pub const GPUS: usize = 8;
pub const PORTS: usize = 8;
const TS: &str = "1795959344.452";

pub fn host(n: usize) -> String {
    format!("gpu-{n:05}")
}

pub fn vector(series: impl Iterator<Item = (String, String)>) -> Vec<u8> {
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

pub fn gpus() -> impl Iterator<Item = (usize, usize)> {
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

/// The packed value of [`Family::Gpu`] (see `queries::unpack`).
fn packed(util: u64, tensor: u64, temp: u64, power: u64, fb: u64) -> u64 {
    util | tensor << 7 | temp << 14 | power << 22 | fb << 34
}

/// The answer to each query on a mostly healthy fleet (see the shape assumptions above).
pub fn answer(f: Family) -> Vec<u8> {
    let r = |n: usize, g: usize, m: usize| (n * 31 + g * 7) % m;
    match f {
        Family::Gpu => vector(gpus().map(|(n, g)| {
            let v = packed(
                (60 + r(n, g, 40)) as u64,
                (30 + r(n, g, 50)) as u64,
                (55 + r(n, g, 25)) as u64,
                (300 + r(n, g, 390)) as u64,
                (20000 + r(n, g, 60000)) as u64,
            );
            (gpu_labels(n, g), v.to_string())
        })),
        // 90 % of GPUs run a pod; free GPUs are not in the answer.
        Family::GpuAlloc => vector(gpus().filter(|(n, _)| n % 10 != 9).map(|(n, g)| {
            let labels = format!(
                r#""Hostname":"{}","gpu":"{g}","namespace":"team-{}","pod":"train-{}-worker-{}""#,
                host(n),
                n % 40,
                n / 4,
                n % 4
            );
            (labels, (60 + r(n, g, 40)).to_string())
        })),
        // Backfill only.
        Family::GpuUtil | Family::GpuTemp => vector(std::iter::empty()),
        // Sparse: 1 GPU in 1,000 with an XID or ECC errors.
        Family::XidLast
        | Family::XidCount
        | Family::EccSbe
        | Family::EccDbe
        | Family::NvlinkCrc
        | Family::NvlinkReplay
        | Family::PcieReplay => vector(
            gpus()
                .filter(|(n, g)| (n * GPUS + g) % 1000 == 7)
                .map(|(n, g)| (gpu_labels(n, g), "2".to_string())),
        ),
        // Sparse: 1 port in 1,000 not Active.
        Family::IbState => vector(
            ports()
                .filter(|(n, p)| (n * PORTS + p) % 1000 == 5)
                .map(|(n, p)| (port_labels(n, p), "1".to_string())),
        ),
        Family::IbRate => vector(ports().map(|(n, p)| (port_labels(n, p), "50000000000".to_string()))),
        Family::IbRx | Family::IbTx => {
            vector(ports().map(|(n, p)| (port_labels(n, p), (100_000 + r(n, p, 200_000)).to_string())))
        }
        // Sparse: 1 port in 200 with a growing error counter, 1 in 1,000 flapping.
        Family::IbSymbol | Family::IbRcvErrors | Family::IbXmitDiscards | Family::IbLinkDowned => vector(
            ports()
                .filter(|(n, p)| (n * PORTS + p) % 200 == 3)
                .map(|(n, p)| (port_labels(n, p), "12".to_string())),
        ),
        Family::IbFlaps => vector(
            ports()
                .filter(|(n, p)| (n * PORTS + p) % 1000 == 3)
                .map(|(n, p)| (port_labels(n, p), "4".to_string())),
        ),
        Family::FsSize | Family::FsAvail => vector(
            [(
                r#""device":"10.0.0.1@o2ib:/ckptfs","fstype":"lustre","mountpoint":"/mnt/checkpoints""#
                    .to_string(),
                "4503600000000000".to_string(),
            )]
            .into_iter(),
        ),
        // One NFS export, and the local disks of the 1 node in 1,000 whose /raid is nearly full.
        Family::FsRead | Family::FsWrite => vector(
            std::iter::once((r#""export":"10.0.0.20:/export/home""#.to_string(), "52428800".to_string()))
                .chain(
                    (0..NODES)
                        .filter(|n| n % 1000 == 7)
                        .map(|n| (format!(r#""instance":"{}""#, host(n)), "4194304000".to_string())),
                ),
        ),
    }
}
