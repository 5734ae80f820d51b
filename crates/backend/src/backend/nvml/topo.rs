//! The GPU↔GPU matrix as `nvidia-smi topo -m` prints it: PCIe distance from
//! `nvmlDeviceGetTopologyCommonAncestor`, overridden by `NV#` where NVLinks join the pair.

use crate::model::LinkKind;

/// PCIe distance between two GPUs, the C `nvmlGpuTopologyLevel_t` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Same board (0).
    Internal,
    /// One PCIe switch (10).
    Single,
    /// Several PCIe switches, no host bridge (20).
    Multiple,
    /// Same host bridge (30).
    HostBridge,
    /// Same NUMA node, different host bridges (40).
    Node,
    /// Across NUMA nodes (50).
    System,
}

impl Level {
    /// The `nvidia-smi topo -m` label for this distance. A same-board pair (dual-GPU boards such
    /// as the K80) sits behind the board's own PCIe switch, which `nvidia-smi` prints as PIX.
    pub fn link(self) -> LinkKind {
        match self {
            Self::Internal | Self::Single => LinkKind::Pix,
            Self::Multiple => LinkKind::Pxb,
            Self::HostBridge => LinkKind::Phb,
            Self::Node => LinkKind::Node,
            Self::System => LinkKind::Sys,
        }
    }
}

impl From<nvml_wrapper::enum_wrappers::device::TopologyLevel> for Level {
    fn from(l: nvml_wrapper::enum_wrappers::device::TopologyLevel) -> Self {
        use nvml_wrapper::enum_wrappers::device::TopologyLevel as T;
        match l {
            T::Internal => Self::Internal,
            T::Single => Self::Single,
            T::Multiple => Self::Multiple,
            T::HostBridge => Self::HostBridge,
            T::Node => Self::Node,
            T::System => Self::System,
        }
    }
}

/// Builds the matrix. `pcie(i, j)` is the common ancestor of GPUs i and j (`None` when NVML
/// cannot tell: shown as SYS, the farthest, so nothing looks closer than it is).
/// `nvlinks[i]` lists, per active NVLink of GPU i, the GPU index at its remote end (`None`
/// for an NVSwitch or anything that is not one of these GPUs).
#[allow(clippy::needless_range_loop)] // a symmetric matrix reads best by index pairs
pub fn matrix(
    n: usize,
    mut pcie: impl FnMut(usize, usize) -> Option<Level>,
    nvlinks: &[Vec<Option<usize>>],
) -> Vec<Vec<LinkKind>> {
    let mut m = vec![vec![LinkKind::Sys; n]; n];
    for i in 0..n {
        m[i][i] = LinkKind::X;
        for j in i + 1..n {
            let l = pcie(i, j).map_or(LinkKind::Sys, Level::link);
            m[i][j] = l;
            m[j][i] = l;
        }
    }
    // NV#: links from i to j, counted from both ends; the larger count wins (a link whose far
    // end cannot be read from one side is still seen from the other).
    for i in 0..n {
        for j in 0..n {
            if i == j {
                continue;
            }
            let count = |a: usize, b: usize| {
                nvlinks.get(a).map_or(0, |l| l.iter().filter(|r| **r == Some(b)).count())
            };
            let c = count(i, j).max(count(j, i));
            if c > 0 {
                m[i][j] = LinkKind::Nv(c.min(u8::MAX as usize) as u8);
            }
        }
    }
    m
}

/// A PCI bus id normalised for comparison: NVML prints `00000000:07:00.0` for a device and
/// sometimes `0000:07:00.0` or other case for a link's far end.
pub fn bus_key(bus_id: &str) -> Option<(u32, u8, u8, u8)> {
    let s = bus_id.trim();
    let (domain, rest) = match s.matches(':').count() {
        2 => s.split_once(':')?,
        1 => ("0", s),
        _ => return None,
    };
    let (bus, rest) = rest.split_once(':')?;
    let (dev, func) = rest.split_once('.')?;
    Some((
        u32::from_str_radix(domain, 16).ok()?,
        u8::from_str_radix(bus, 16).ok()?,
        u8::from_str_radix(dev, 16).ok()?,
        u8::from_str_radix(func, 16).ok()?,
    ))
}

/// `0-3,8,10-11` from a CPU bitmask (64-bit words, CPU 0 in bit 0 of word 0).
pub fn cpu_list(words: &[u64]) -> String {
    let mut out = String::new();
    let mut run: Option<(usize, usize)> = None;
    let flush = |r: (usize, usize), out: &mut String| {
        if !out.is_empty() {
            out.push(',');
        }
        if r.0 == r.1 {
            out.push_str(&r.0.to_string());
        } else {
            out.push_str(&format!("{}-{}", r.0, r.1));
        }
    };
    for (w, word) in words.iter().enumerate() {
        for b in 0..64 {
            let cpu = w * 64 + b;
            if word >> b & 1 == 1 {
                run = match run {
                    Some((s, e)) if e + 1 == cpu => Some((s, cpu)),
                    Some(r) => {
                        flush(r, &mut out);
                        Some((cpu, cpu))
                    }
                    None => Some((cpu, cpu)),
                };
            }
        }
    }
    if let Some(r) = run {
        flush(r, &mut out);
    }
    out
}

/// The PCI path of a device under `<sys>/devices` (`["pci0000:17", "0000:17:00.0", …]`) and its
/// NUMA node, following the sysfs links.
fn pci_path(dev: &std::path::Path) -> Option<(Vec<String>, Option<i32>)> {
    let real = std::fs::canonicalize(dev).ok()?;
    let comps: Vec<String> =
        real.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let start = comps.iter().position(|c| c.starts_with("pci"))?;
    let numa = std::fs::read_to_string(real.join("numa_node")).ok().and_then(|s| s.trim().parse().ok());
    Some((comps[start..].to_vec(), numa))
}

/// The NUMA node sysfs gives the PCI device with this (NVML) bus id; `None` where it says -1.
pub fn sysfs_numa(sys: &std::path::Path, bus_id: &str) -> Option<u8> {
    let dev = sys.join("bus/pci/devices").join(sysfs_bus_id(bus_id));
    pci_path(&dev).and_then(|(_, numa)| numa).and_then(|n| u8::try_from(n).ok())
}

/// `00000000:18:00.0` (NVML) → `0000:18:00.0` (sysfs).
fn sysfs_bus_id(bus_id: &str) -> String {
    let lower = bus_id.to_ascii_lowercase();
    match lower.split_once(':') {
        Some((dom, rest)) if dom.len() > 4 => format!("{}:{rest}", &dom[dom.len() - 4..]),
        _ => lower,
    }
}

/// How a NIC reaches a GPU through the PCI tree, in `nvidia-smi topo -m` terms: the same
/// bridge → PIX, more bridges under one host bridge → PXB, only the host bridge in common →
/// PHB, another host bridge on the same NUMA node → NODE, another NUMA node → SYS.
fn pci_link(a: &(Vec<String>, Option<i32>), b: &(Vec<String>, Option<i32>)) -> LinkKind {
    let common = a.0.iter().zip(&b.0).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return if a.1.is_some() && a.1 == b.1 { LinkKind::Node } else { LinkKind::Sys };
    }
    // Components past the root complex that both share: the bridges in common.
    match common {
        1 => LinkKind::Phb,
        _ if a.0.len() == common + 1 && b.0.len() == common + 1 => LinkKind::Pix,
        _ => LinkKind::Pxb,
    }
}

/// The InfiniBand/RoCE adapters under `<sys>/class/infiniband` and their link to each GPU.
pub fn nics_from_sysfs(sys: &std::path::Path, gpu_bus_ids: &[crate::model::Text]) -> Vec<crate::model::Nic> {
    let Ok(dir) = std::fs::read_dir(sys.join("class/infiniband")) else { return Vec::new() };
    let gpus: Vec<Option<(Vec<String>, Option<i32>)>> =
        gpu_bus_ids.iter().map(|b| pci_path(&sys.join("bus/pci/devices").join(sysfs_bus_id(b)))).collect();
    let mut nics: Vec<crate::model::Nic> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let nic = pci_path(&e.path().join("device"))?;
            let to_gpu =
                gpus.iter().map(|g| g.as_ref().map_or(LinkKind::Sys, |g| pci_link(&nic, g))).collect();
            Some(crate::model::Nic { name: crate::model::Text::from(name), to_gpu })
        })
        .collect();
    nics.sort_by(|a, b| a.name.cmp(&b.name));
    nics
}

#[cfg(test)]
mod tests {
    use super::*;
    use LinkKind::*;

    #[test]
    fn legend_mapping_and_nvlink_override() {
        let levels = [Level::Single, Level::Multiple, Level::HostBridge, Level::Node, Level::System];
        // 3 GPUs: 0-1 PIX, 0-2 SYS, 1-2 NODE; two links 0↔1 seen from 0 only.
        let pcie = |i: usize, j: usize| match (i, j) {
            (0, 1) => Some(levels[0]),
            (0, 2) => None,
            _ => Some(levels[3]),
        };
        let links = vec![vec![Some(1), Some(1), None], vec![], vec![]];
        let m = matrix(3, pcie, &links);
        assert_eq!(m, vec![vec![X, Nv(2), Sys], vec![Nv(2), X, Node], vec![Sys, Node, X]]);
        assert_eq!(Level::Internal.link(), Pix);
        assert_eq!(Level::HostBridge.link(), Phb);
        assert_eq!(Level::Multiple.link(), Pxb);
    }

    #[test]
    fn bus_ids_compare_across_spellings() {
        assert_eq!(bus_key("00000000:07:00.0"), bus_key("0000:07:00.0"));
        assert_eq!(bus_key("00000000:B7:00.0"), bus_key("0000:b7:00.0"));
        assert_eq!(bus_key("07:00.0"), Some((0, 7, 0, 0)));
        assert_eq!(bus_key("garbage"), None);
    }

    #[test]
    fn nic_affinity_from_a_sysfs_tree() {
        let sys = tempfile::tempdir().unwrap();
        let root = sys.path();
        // Two root complexes on two NUMA nodes; GPU0 and mlx5_0 behind one switch, GPU1 behind
        // another switch of the same root complex, GPU2 on the other socket.
        let devices = [
            ("pci0000:17/0000:17:00.0/0000:18:00.0", 0),
            ("pci0000:17/0000:17:00.0/0000:19:00.0", 0),
            ("pci0000:17/0000:17:01.0/0000:1a:00.0/0000:1b:00.0", 0),
            ("pci0000:97/0000:97:00.0/0000:98:00.0", 1),
        ];
        for (p, numa) in devices {
            let d = root.join("devices").join(p);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("numa_node"), format!("{numa}\n")).unwrap();
        }
        let link = |target: &str, at: std::path::PathBuf| {
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(root.join("devices").join(target), at).unwrap();
        };
        link("pci0000:17/0000:17:00.0/0000:18:00.0", root.join("bus/pci/devices/0000:18:00.0"));
        link("pci0000:17/0000:17:01.0/0000:1a:00.0/0000:1b:00.0", root.join("bus/pci/devices/0000:1b:00.0"));
        link("pci0000:97/0000:97:00.0/0000:98:00.0", root.join("bus/pci/devices/0000:98:00.0"));
        std::fs::create_dir_all(root.join("class/infiniband/mlx5_0")).unwrap();
        link("pci0000:17/0000:17:00.0/0000:19:00.0", root.join("class/infiniband/mlx5_0/device"));
        let gpus = [
            "00000000:18:00.0".into(),
            "00000000:1B:00.0".into(),
            "00000000:98:00.0".into(),
            "00000000:ff:00.0".into(),
        ];
        let nics = nics_from_sysfs(root, &gpus);
        assert_eq!(nics.len(), 1);
        assert_eq!(nics[0].name, "mlx5_0");
        assert_eq!(nics[0].to_gpu, vec![LinkKind::Pix, LinkKind::Phb, LinkKind::Sys, LinkKind::Sys]);
        assert!(nics_from_sysfs(&root.join("nowhere"), &gpus).is_empty());
        // The NUMA fallback reads the same tree: NVML's spelling, either case.
        assert_eq!(sysfs_numa(root, "00000000:1B:00.0"), Some(0));
        assert_eq!(sysfs_numa(root, "00000000:98:00.0"), Some(1));
        assert_eq!(sysfs_numa(root, "00000000:ff:00.0"), None, "no such device");
        // A VM's "-1" (no NUMA information) is no node.
        std::fs::write(root.join("devices/pci0000:97/0000:97:00.0/0000:98:00.0/numa_node"), "-1\n").unwrap();
        assert_eq!(sysfs_numa(root, "00000000:98:00.0"), None);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list(&[0b1111]), "0-3");
        assert_eq!(cpu_list(&[0b1_0000_0101]), "0,2,8");
        assert_eq!(cpu_list(&[u64::MAX, 1]), "0-64");
        assert_eq!(cpu_list(&[0]), "");
    }
}
