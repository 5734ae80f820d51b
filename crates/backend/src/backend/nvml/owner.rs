//! Who owns a GPU process: the Kubernetes pod or Slurm job/step, read from the process's
//! cgroup path (`/proc/<pid>/cgroup`), for cgroup v1 and v2, cgroupfs and systemd drivers.

use crate::model::Text;
use std::path::Path;

/// Kubernetes QoS class, as the kubelet names its cgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Qos {
    Guaranteed,
    Burstable,
    BestEffort,
}

/// The owner of a process, from its cgroup.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Owner {
    /// A Kubernetes pod (UID in its canonical dashed form) and the container id, when the
    /// process sits in a container cgroup (`cri-containerd-`, `crio-`, `docker-` or a bare id).
    Pod { uid: Text, qos: Qos, container: Option<Text> },
    /// A Slurm job and step (`0`, `batch`, `extern`, `interactive`), when in a step.
    Slurm { job: u64, step: Option<Text> },
    /// Some other cgroup (a systemd service, a user session): the path as read.
    Other(Text),
    /// No cgroup could be read (the process ended, or /proc is not ours to read).
    Unknown,
}

impl Owner {
    /// Short form for a table cell: `pod 8f6a1c2e…`, `slurm 4242.0`, the cgroup's last part.
    pub fn label(&self) -> String {
        match self {
            Self::Pod { uid, .. } => format!("pod {}", uid.get(..8).unwrap_or(uid)),
            Self::Slurm { job, step: Some(s) } => format!("slurm {job}.{s}"),
            Self::Slurm { job, step: None } => format!("slurm {job}"),
            Self::Other(p) => p.rsplit('/').find(|s| !s.is_empty()).unwrap_or("/").to_string(),
            Self::Unknown => "-".into(),
        }
    }
}

/// The owner named by the text of a `/proc/<pid>/cgroup` file (one `id:controllers:path` line
/// per hierarchy; cgroup v2 has the single line `0::path`). The first line that names a pod
/// or a Slurm job wins; otherwise the v2 (or first) path is returned as [`Owner::Other`].
pub fn parse_cgroup(text: &str) -> Owner {
    let mut other: Option<&str> = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(_ctl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if let Some(o) = parse_path(path) {
            return o;
        }
        if id == "0" || other.is_none() {
            other = Some(path);
        }
    }
    match other {
        Some(p) if !p.is_empty() => Owner::Other(Text::from(p)),
        _ => Owner::Unknown,
    }
}

/// A pod or Slurm owner from one cgroup path, or `None`.
pub fn parse_path(path: &str) -> Option<Owner> {
    if path.contains("kubepods")
        && let Some(o) = kube(path)
    {
        return Some(o);
    }
    if path.contains("slurm") {
        return slurm(path);
    }
    None
}

fn slurm(path: &str) -> Option<Owner> {
    let mut segs = path.split('/');
    while let Some(s) = segs.next() {
        let Some(id) = s.strip_prefix("job_") else { continue };
        let job = id.parse().ok()?;
        let step = segs.next().and_then(|s| s.strip_prefix("step_")).map(Text::from);
        return Some(Owner::Slurm { job, step });
    }
    None
}

fn kube(path: &str) -> Option<Owner> {
    // Segments, with the systemd `slice:prefix:name` form (containerd's systemd cgroup driver
    // under cgroup v1) split into its parts.
    let segs: Vec<&str> = path.split(['/', ':']).filter(|s| !s.is_empty()).collect();
    let mut qos = Qos::Guaranteed;
    for (k, s) in segs.iter().enumerate() {
        match *s {
            "burstable" | "kubepods-burstable.slice" => qos = Qos::Burstable,
            "besteffort" | "kubepods-besteffort.slice" => qos = Qos::BestEffort,
            _ => {}
        }
        let raw = if let Some(slice) = s.strip_suffix(".slice") {
            // kubepods-pod<uid>.slice, kubepods-<qos>-pod<uid>.slice (dashes as underscores).
            let Some((head, uid)) = slice.rsplit_once("-pod") else { continue };
            if head.ends_with("-burstable") {
                qos = Qos::Burstable;
            } else if head.ends_with("-besteffort") {
                qos = Qos::BestEffort;
            }
            uid
        } else if let Some(uid) = s.strip_prefix("pod") {
            uid
        } else {
            continue;
        };
        let Some(uid) = pod_uid(raw) else { continue };
        let container = segs[k + 1..].iter().rev().find_map(|c| container_id(c));
        return Some(Owner::Pod { uid, qos, container });
    }
    None
}

/// A pod UID: 36 characters with dashes (underscores in systemd slice names), or the 32 hex
/// digits of a static pod's config hash.
fn pod_uid(raw: &str) -> Option<Text> {
    let uid = raw.replace('_', "-");
    let ok = match uid.len() {
        36 => uid
            .chars()
            .enumerate()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() }),
        32 => uid.chars().all(|c| c.is_ascii_hexdigit()),
        _ => false,
    };
    ok.then(|| Text::from(uid.to_ascii_lowercase()))
}

/// The container id of a cgroup segment: `cri-containerd-<id>.scope`, `crio-<id>.scope`,
/// `docker-<id>.scope`, the bare 64-hex id (cgroupfs driver) or `cri-containerd` / `<id>` as
/// separate parts of the `slice:prefix:id` form.
fn container_id(seg: &str) -> Option<Text> {
    let s = seg.strip_suffix(".scope").unwrap_or(seg);
    let id = ["cri-containerd-", "crio-conmon-", "crio-", "docker-", "containerd-"]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .unwrap_or(s);
    (id.len() >= 12 && id.chars().all(|c| c.is_ascii_hexdigit())).then(|| Text::from(id))
}

/// What `/proc` says about a process: command, user id and owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub comm: Option<Text>,
    pub uid: Option<u32>,
    pub owner: Owner,
}

/// Reads `<proc_root>/<pid>/{comm,status,cgroup}`. A vanished or unreadable process gives
/// `None` fields and [`Owner::Unknown`]; nothing here fails.
pub fn read_proc(proc_root: &Path, pid: u32) -> ProcInfo {
    let dir = proc_root.join(pid.to_string());
    let comm = std::fs::read_to_string(dir.join("comm")).ok().map(|s| Text::from(s.trim_end()));
    let uid = std::fs::read_to_string(dir.join("status")).ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|u| u.parse().ok())
    });
    let owner = std::fs::read_to_string(dir.join("cgroup")).map_or(Owner::Unknown, |s| parse_cgroup(&s));
    ProcInfo { comm, uid, owner }
}

/// User names by uid from an `/etc/passwd`-format text.
pub fn passwd_names(text: &str) -> std::collections::HashMap<u32, Text> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let uid = f.nth(1)?.parse().ok()?;
            Some((uid, Text::from(name)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_and_unknown() {
        assert_eq!(
            parse_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n").label(),
            "session-3.scope"
        );
        assert_eq!(parse_cgroup(""), Owner::Unknown);
        assert_eq!(parse_cgroup("garbage"), Owner::Unknown);
        // A `pod` that is not a UID is not a pod.
        assert!(matches!(parse_cgroup("0::/kubepods/podcast/x\n"), Owner::Other(_)));
    }

    #[test]
    fn passwd() {
        let m = passwd_names("root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n");
        assert_eq!(m.get(&1000).map(|s| s.as_str()), Some("alice"));
        assert_eq!(m.get(&0).map(|s| s.as_str()), Some("root"));
    }
}
