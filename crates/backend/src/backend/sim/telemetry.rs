//! How the numbers move: GPU utilisation, power and temperature, fabric rates and storage.
//! Smooth random walks towards a target, so the sparklines look like a real cluster.

use super::catalog::PoolSpec;
use super::hardware::{F_HOT, F_IDLE, F_MIG, GpuSim};
use crate::model::protocol::GpuSample;
use crate::model::{FabricPort, Filesystem, PortState, StorageKind, Text};

/// Hot GPUs stay in this band whatever their load.
pub(super) const HOT_BAND: (f32, f32) = (88.0, 93.0);

/// Utilisation, power and temperature the GPU heads for.
fn targets(g: &GpuSim, spec: &PoolSpec, util: f32) -> (f32, f32) {
    let (idle_w, limit) = (f32::from(spec.idle_w), f32::from(spec.power_limit_w));
    let power = idle_w + (limit - idle_w) * util / 100.0;
    let hot = if g.flags & F_HOT != 0 { 18.0 } else { 0.0 };
    (power, 27.0 + 50.0 * power / limit + hot)
}

fn util_target(g: &GpuSim) -> (f32, f32) {
    if g.job != 0 && g.flags & F_IDLE != 0 {
        (1.0, 1.5)
    } else if g.job != 0 {
        (f32::from(g.target), 7.0)
    } else if g.flags & F_MIG != 0 {
        (30.0, 6.0)
    } else {
        (0.0, 0.0)
    }
}

fn clamp_util(g: &GpuSim, u: f32) -> f32 {
    if g.job != 0 && g.flags & F_IDLE != 0 {
        u.clamp(0.0, 3.0)
    } else if g.job != 0 {
        // A working job never dips under the idle threshold.
        u.clamp(15.0, 100.0)
    } else {
        u.clamp(0.0, 100.0)
    }
}

fn mem_of(g: &GpuSim, spec: &PoolSpec, jitter: f32) -> u32 {
    let total = spec.gpu_mem_mib as f32;
    let pct = if g.job != 0 {
        f32::from(g.mem_pct)
    } else if g.flags & F_MIG != 0 {
        35.0
    } else {
        return 0;
    };
    (total * pct / 100.0 * (1.0 + jitter * 0.02)).min(total) as u32
}

fn clamp_temp(g: &GpuSim, t: f32) -> f32 {
    if g.flags & F_HOT != 0 { t.clamp(HOT_BAND.0, HOT_BAND.1) } else { t.clamp(20.0, 84.0) }
}

/// Puts a GPU straight at its steady state (used when the cluster is built).
pub(super) fn warm(g: &mut GpuSim, spec: &PoolSpec, rng: &mut fastrand::Rng) {
    let (target, amp) = util_target(g);
    g.util = clamp_util(g, target + (rng.f32() - 0.5) * amp);
    let (power, temp) = targets(g, spec, g.util);
    g.power = power;
    g.temp = clamp_temp(g, temp);
    g.mem_mib = mem_of(g, spec, 0.0);
}

/// One tick of a GPU.
pub(super) fn step(g: &mut GpuSim, spec: &PoolSpec, rng: &mut fastrand::Rng) {
    let (target, amp) = util_target(g);
    let noise = rng.f32() - 0.5;
    g.util = clamp_util(g, g.util + (target - g.util) * 0.35 + noise * 2.0 * amp);
    let (power, temp) = targets(g, spec, g.util);
    let power = power * (0.95 + 0.05 * rng.f32());
    g.power += (power - g.power) * 0.6;
    g.temp = clamp_temp(g, g.temp + (temp - g.temp) * 0.2 + (rng.f32() - 0.5) * 0.8);
    g.mem_mib = mem_of(g, spec, noise);
}

/// The GPU's current readings as a sample (holder not included).
pub(super) fn sample_of(g: &GpuSim, index: u8) -> GpuSample {
    let util = g.util.round() as u8;
    GpuSample {
        index,
        util: Some(util),
        tensor_active: Some((u32::from(util) * u32::from(g.tensor_pct) / 100) as u8),
        temp_c: Some(g.temp.round() as u8),
        power_w: Some(g.power.round() as u16),
        mem_used_mib: Some(g.mem_mib),
        ..GpuSample::default()
    }
}

/// New rates (and the odd error) on a node's ports, for a node at `load` (0–1).
pub(super) fn step_ports(ports: &mut [FabricPort], load: f32, rng: &mut fastrand::Rng) {
    for p in ports {
        if p.state != PortState::Active {
            p.rx_gbps = 0.0;
            p.tx_gbps = 0.0;
            continue;
        }
        let rate = p.rate_gbps as f32;
        let base = 0.04 + 0.6 * load;
        p.rx_gbps = ((rate * base * (0.85 + 0.3 * rng.f32())).min(rate) * 10.0).round() / 10.0;
        p.tx_gbps = ((rate * base * (0.85 + 0.3 * rng.f32())).min(rate) * 10.0).round() / 10.0;
        if rng.u16(0..400) == 0 {
            p.symbol_errors += rng.u64(1..4);
        }
        if rng.u16(0..1000) == 0 {
            p.xmit_discards += 1;
        }
    }
}

/// One filesystem and how it behaves.
#[derive(Debug, Clone)]
pub(super) struct FsSim {
    pub fs: Filesystem,
    /// Peak read and write rates (bytes/s) at full cluster load.
    read_peak: f64,
    write_peak: f64,
    /// Net growth per tick at full load, bytes.
    growth: f64,
    role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Plain,
    /// Checkpoint store: periodic write bursts, pruned back when it fills up.
    Checkpoints {
        burst_ticks: u64,
        period_ticks: u64,
    },
    /// Scratch: fills and empties with jobs.
    Scratch,
}

const TB: f64 = 1e12;
const GB: f64 = 1e9;
/// The checkpoint store is pruned down to this fill level once it passes `CKPT_HIGH`.
const CKPT_LOW: f64 = 0.912;
const CKPT_HIGH: f64 = 0.936;

#[allow(clippy::too_many_arguments)]
fn fs(
    name: &'static str,
    kind: StorageKind,
    mount: &'static str,
    purpose: &'static str,
    capacity: f64,
    used_frac: f64,
    read_peak: f64,
    write_peak: f64,
    growth: f64,
    role: Role,
) -> FsSim {
    FsSim {
        fs: Filesystem {
            name: Text::const_new(name),
            kind,
            mount: Text::const_new(mount),
            purpose: Text::const_new(purpose),
            capacity_bytes: capacity as u64,
            used_bytes: (capacity * used_frac) as u64,
            read_bps: 0.0,
            write_bps: 0.0,
            ckpt_write_s: None,
            ckpt_restore_s: None,
        },
        read_peak,
        write_peak,
        growth,
        role,
    }
}

/// The five filesystems of a cluster of `nodes` nodes; one (the checkpoint store) runs nearly full.
pub(super) fn storage(nodes: usize) -> Vec<FsSim> {
    let s = (nodes as f64 / 16.0).max(1.0).sqrt();
    let mut v = vec![
        fs(
            "lustre-datasets",
            StorageKind::Lustre,
            "/lustre/datasets",
            "datasets",
            2_000.0 * TB * s,
            0.71,
            60.0 * GB * s,
            6.0 * GB * s,
            2.0 * GB * s,
            Role::Plain,
        ),
        fs(
            "weka-ckpt",
            StorageKind::Weka,
            "/weka/checkpoints",
            "checkpoints",
            500.0 * TB * s,
            0.921,
            40.0 * GB * s,
            120.0 * GB * s,
            0.0,
            Role::Checkpoints { burst_ticks: 20, period_ticks: 150 },
        ),
        fs(
            "nfs-home",
            StorageKind::Nfs,
            "/home",
            "home directories",
            60.0 * TB * s,
            0.64,
            2.0 * GB * s,
            1.0 * GB * s,
            0.05 * GB * s,
            Role::Plain,
        ),
        fs(
            "nvme-scratch",
            StorageKind::LocalNvme,
            "/scratch",
            "scratch",
            30.0 * TB * nodes as f64,
            0.38,
            12.0 * GB * nodes as f64,
            6.0 * GB * nodes as f64,
            0.0,
            Role::Scratch,
        ),
        fs(
            "s3-weights",
            StorageKind::ObjectStore,
            "s3://gpuplane-weights",
            "weights",
            5_000.0 * TB * s,
            0.55,
            25.0 * GB * s,
            4.0 * GB * s,
            0.5 * GB * s,
            Role::Plain,
        ),
    ];
    v[1].fs.ckpt_write_s = Some(41.5);
    v[1].fs.ckpt_restore_s = Some(88.0);
    v
}

/// One tick of storage at cluster load `load` (0–1).
pub(super) fn step_storage(v: &mut [FsSim], tick: u64, load: f64, rng: &mut fastrand::Rng) {
    for f in v {
        let jitter = 0.85 + 0.3 * rng.f64();
        let busy = 0.25 + 0.75 * load;
        f.fs.read_bps = (f.read_peak * busy * jitter).round();
        f.fs.write_bps = (f.write_peak * 0.2 * busy * jitter).round();
        let cap = f.fs.capacity_bytes as f64;
        let mut used = f.fs.used_bytes as f64;
        match f.role {
            Role::Plain => used += f.growth * busy * (rng.f64() - 0.3),
            Role::Scratch => used += cap * 0.0004 * (rng.f64() - 0.5),
            Role::Checkpoints { burst_ticks, period_ticks } => {
                let phase = tick % period_ticks;
                if phase < burst_ticks {
                    // A big job writes its checkpoint.
                    f.fs.write_bps = (f.write_peak * busy * jitter).round();
                    used += f.fs.write_bps * 2.0 * 0.5;
                    if phase + 1 == burst_ticks {
                        f.fs.ckpt_write_s = Some(((35.0 + 25.0 * rng.f64()) * 10.0).round() as f32 / 10.0);
                    }
                }
                if phase == period_ticks / 2 && rng.u8(0..3) == 0 {
                    // A job restarted from its last checkpoint.
                    f.fs.ckpt_restore_s = Some(((70.0 + 45.0 * rng.f64()) * 10.0).round() as f32 / 10.0);
                    f.fs.read_bps = (f.read_peak * jitter).round();
                }
                if used > cap * CKPT_HIGH {
                    // The retention job prunes old checkpoints.
                    used = cap * (CKPT_LOW + 0.004 * rng.f64());
                }
            }
        }
        f.fs.used_bytes = used.clamp(0.0, cap) as u64;
    }
}
