//! Blast-radius limits, checked at preflight: how many nodes of a cluster or a pool may be out
//! of service at once (a count or a share), how many drains an hour (counted from the audit
//! log, so every console on the same log shares the count), and never the last healthy node of
//! a pool. A plan past a limit names the limit and by how much; it runs only under
//! break-glass, and then its audit record names the limits it went past.

use crate::audit::Record;
use crate::model::{Node, NodeState};
use crate::state::ClusterState;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

use super::ActionKind;

/// How many of the audit log's last records are read to count the last hour's drains.
pub const RATE_RECORDS: usize = 5000;

/// The window of `max_drains_per_hour`.
pub const DRAIN_WINDOW_S: i64 = 3600;

/// Limits for one scope (a cluster, or one pool: a Slurm partition, a Kubernetes node pool).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// At most this many nodes out of service at once (drained, draining, cordoned, down…).
    pub max_out_nodes: Option<u32>,
    /// At most this share of the scope's nodes out of service at once, in percent.
    pub max_out_percent: Option<f64>,
    /// At most this many nodes drained in any hour (from the audit log).
    pub max_drains_per_hour: Option<u32>,
    /// Never take the last healthy node of a pool out of service (default: off; no `[limits]`
    /// section, no limits).
    pub keep_last_healthy: Option<bool>,
}

/// The `[limits]` section: the cluster's limits, each pool's, and a cluster's own by name
/// (`[limits.clusters.NAME]`, which replaces the section's for that cluster).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardConfig {
    pub max_out_nodes: Option<u32>,
    pub max_out_percent: Option<f64>,
    pub max_drains_per_hour: Option<u32>,
    pub keep_last_healthy: Option<bool>,
    pub pools: BTreeMap<String, Limits>,
    pub clusters: BTreeMap<String, Guard>,
}

/// The limits that apply to one cluster.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Guard {
    pub max_out_nodes: Option<u32>,
    pub max_out_percent: Option<f64>,
    pub max_drains_per_hour: Option<u32>,
    pub keep_last_healthy: Option<bool>,
    pub pools: BTreeMap<String, Limits>,
}

impl GuardConfig {
    /// The limits for `cluster`: its own section when there is one, else the common one.
    pub fn for_cluster(&self, cluster: &str) -> Guard {
        self.clusters.get(cluster).cloned().unwrap_or_else(|| Guard {
            max_out_nodes: self.max_out_nodes,
            max_out_percent: self.max_out_percent,
            max_drains_per_hour: self.max_drains_per_hour,
            keep_last_healthy: self.keep_last_healthy,
            pools: self.pools.clone(),
        })
    }

    /// Problems a reader should hear of (a share outside 0–100).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut pct = |scope: String, p: Option<f64>| {
            if let Some(p) = p.filter(|p| !(0.0..=100.0).contains(p) || p.is_nan()) {
                out.push(format!("config: {scope}max_out_percent = {p}: not a percentage; ignored"));
            }
        };
        pct("limits.".into(), self.max_out_percent);
        for (n, l) in &self.pools {
            pct(format!("limits.pools.{n}."), l.max_out_percent);
        }
        for (c, g) in &self.clusters {
            pct(format!("limits.clusters.{c}."), g.max_out_percent);
            for (n, l) in &g.pools {
                pct(format!("limits.clusters.{c}.pools.{n}."), l.max_out_percent);
            }
        }
        out
    }
}

impl Guard {
    /// Whether any drains-per-hour limit is set (only then is the audit log read).
    pub fn has_rate(&self) -> bool {
        self.max_drains_per_hour.is_some() || self.pools.values().any(|l| l.max_drains_per_hour.is_some())
    }

    fn cluster_limits(&self) -> Limits {
        Limits {
            max_out_nodes: self.max_out_nodes,
            max_out_percent: self.max_out_percent,
            max_drains_per_hour: self.max_drains_per_hour,
            keep_last_healthy: self.keep_last_healthy,
        }
    }

    fn keep_last_healthy(&self, pool: &str) -> bool {
        self.pools.get(pool).and_then(|l| l.keep_last_healthy).or(self.keep_last_healthy).unwrap_or(false)
    }
}

/// One limit a plan goes past.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Exceeded {
    /// `cluster gpuplane` or `pool a100`.
    pub scope: String,
    /// `max_out_nodes`, `max_out_percent`, `max_drains_per_hour`, `keep_last_healthy`.
    pub limit: &'static str,
    /// The whole sentence: which limit, what the plan would make, by how much.
    pub message: String,
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Out of service: takes no new work, or is down.
pub fn out_of_service(st: NodeState) -> bool {
    !st.schedulable()
}

/// Whether `kind` takes nodes out of service (and so counts against the limits).
pub fn takes_out(kind: ActionKind) -> bool {
    matches!(kind, ActionKind::Drain | ActionKind::Cordon)
}

/// Nodes drained on `cluster` within the window before `now` (seconds since the epoch), from
/// the audit log's records: every drain sent (its intent, not a dry run), each target once
/// per record, so a drain that failed half-way still counts (fail closed).
pub fn drains_in_window(records: &[Record], cluster: &str, now: i64) -> Vec<String> {
    let from = now - DRAIN_WINDOW_S;
    let mut out = Vec::new();
    for r in records {
        if r.action != "drain"
            || r.cluster != cluster
            || r.phase != crate::audit::Phase::Intent
            || r.params.get("dry_run").is_some_and(|d| d == "true")
        {
            continue;
        }
        let Ok(t) = r.ts.parse::<jiff::Timestamp>() else { continue };
        if t.as_second() > from && t.as_second() <= now + 60 {
            out.extend(r.targets.iter().cloned());
        }
    }
    out
}

/// The limits the plan to `kind` these `targets` goes past. `recent_drains`: the nodes drained
/// in the last hour (see [`drains_in_window`]).
pub fn check(
    kind: ActionKind,
    targets: &[String],
    s: &ClusterState,
    guard: &Guard,
    recent_drains: &[String],
) -> Vec<Exceeded> {
    check_in(kind, None, targets, s, guard, recent_drains)
}

/// [`check`] within one cluster of a fleet (`cluster`, as objects carry it): only its nodes
/// and pools count, and the scopes name it (`cluster prod-a`, `pool prod-a/a100`). `None`:
/// the one cluster of a single-cluster console.
pub fn check_in(
    kind: ActionKind,
    cluster: Option<&crate::model::Text>,
    targets: &[String],
    s: &ClusterState,
    guard: &Guard,
    recent_drains: &[String],
) -> Vec<Exceeded> {
    if !takes_out(kind) {
        return Vec::new();
    }
    let taking: BTreeSet<&str> = targets
        .iter()
        .map(String::as_str)
        .filter(|t| super::node_of(s, cluster, t).is_some_and(|n| !out_of_service(n.state)))
        .collect();
    let mut out = Vec::new();
    let all: Vec<&Node> = s.nodes.iter().filter(|n| cluster.is_none_or(|c| n.cluster == *c)).collect();
    let name = cluster.unwrap_or(&s.cluster);
    let cluster_scope = format!("cluster {name}");
    scope_limits(&mut out, &cluster_scope, &guard.cluster_limits(), &all, &taking);
    let mut pools: BTreeMap<&str, Vec<&Node>> = BTreeMap::new();
    for n in &all {
        pools.entry(n.pool.as_str()).or_default().push(n);
    }
    for (pool, nodes) in &pools {
        let scope = match cluster {
            Some(c) => format!("pool {c}/{pool}"),
            None => format!("pool {pool}"),
        };
        if let Some(l) = guard.pools.get(*pool) {
            scope_limits(&mut out, &scope, l, nodes, &taking);
        }
        // Never the last healthy node.
        let healthy: Vec<&&Node> = nodes.iter().filter(|n| !out_of_service(n.state)).collect();
        let left = healthy.iter().filter(|n| !taking.contains(n.name.as_str())).count();
        if guard.keep_last_healthy(pool) && !healthy.is_empty() && left == 0 {
            let names: Vec<&str> = healthy.iter().map(|n| n.name.as_str()).collect();
            out.push(Exceeded {
                scope: scope.clone(),
                limit: "keep_last_healthy",
                message: format!(
                    "{scope}: never the last healthy node — this would take out {} of its {} healthy node(s), leaving none",
                    names.len(),
                    healthy.len()
                ),
            });
        }
    }
    if kind == ActionKind::Drain {
        let draining: Vec<String> = targets.iter().filter(|t| taking.contains(t.as_str())).cloned().collect();
        let pool_of = |t: &str| super::node_of(s, cluster, t).map(|n| n.pool.to_string());
        out.extend(rate(guard, name, &draining, recent_drains, pool_of));
    }
    out
}

/// The drains-per-hour limits (the cluster's and each pool's): `draining` now, `recent` in the
/// last hour, `pool_of` a node's pool.
pub fn rate(
    guard: &Guard,
    cluster: &str,
    draining: &[String],
    recent: &[String],
    pool_of: impl Fn(&str) -> Option<String>,
) -> Vec<Exceeded> {
    let mut out = Vec::new();
    drain_rate(
        &mut out,
        &format!("cluster {cluster}"),
        guard.max_drains_per_hour,
        draining.len(),
        recent.len(),
    );
    for (pool, l) in &guard.pools {
        let in_pool = |t: &&String| pool_of(t).is_some_and(|p| p == *pool);
        let now = draining.iter().filter(in_pool).count();
        let before = recent.iter().filter(in_pool).count();
        drain_rate(&mut out, &format!("pool {pool}"), l.max_drains_per_hour, now, before);
    }
    out
}

fn drain_rate(out: &mut Vec<Exceeded>, scope: &str, max: Option<u32>, now: usize, before: usize) {
    let Some(max) = max else { return };
    let total = now + before;
    if now > 0 && total > max as usize {
        out.push(Exceeded {
            scope: scope.to_string(),
            limit: "max_drains_per_hour",
            message: format!(
                "{scope}: at most {max} drain(s) an hour — {before} in the last hour + {now} now = {total} ({} over)",
                total - max as usize
            ),
        });
    }
}

/// The out-of-service limits of one scope.
fn scope_limits(out: &mut Vec<Exceeded>, scope: &str, l: &Limits, nodes: &[&Node], taking: &BTreeSet<&str>) {
    let now_out = nodes.iter().filter(|n| out_of_service(n.state)).count();
    let add = nodes.iter().filter(|n| taking.contains(n.name.as_str())).count();
    if add == 0 {
        return;
    }
    let after = now_out + add;
    if let Some(max) = l.max_out_nodes
        && after > max as usize
    {
        out.push(Exceeded {
            scope: scope.to_string(),
            limit: "max_out_nodes",
            message: format!(
                "{scope}: at most {max} node(s) out of service at once — {now_out} out + {add} now = {after} ({} over)",
                after - max as usize
            ),
        });
    }
    if let Some(pct) = l.max_out_percent.filter(|p| (0.0..=100.0).contains(p))
        && !nodes.is_empty()
    {
        let total = nodes.len();
        // The most nodes the share allows, rounded down.
        let max = ((pct / 100.0) * total as f64 + 1e-9).floor() as usize;
        if after > max {
            out.push(Exceeded {
                scope: scope.to_string(),
                limit: "max_out_percent",
                message: format!(
                    "{scope}: at most {pct}% out of service ({max} of {total} nodes) — this would make {after} ({:.0}%, {} over)",
                    after as f64 * 100.0 / total as f64,
                    after - max
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests;
