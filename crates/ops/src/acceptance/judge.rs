//! Verdicts and drift.
//!
//! A run is judged on its busbw at the largest size against a baseline: the configured one for
//! its shape (`8xH100`), else the median of the latest run of every node set of that shape.
//! Any wrong value, error in the output, failed job or unreadable output is a fail.
//!
//! Drift: a node whose driver, CUDA, NCCL or image differs from what most nodes run, and a node
//! whose latest busbw fell more than `drop_pct` below the median of its own earlier runs.

use super::config::JudgeConfig;
use super::store::RunRecord;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

pub use crate::model::acceptance::{Drift, DriftKind, NodeAcceptance, Verdict};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: Verdict,
    /// GB/s expected at the largest size.
    pub baseline: Option<f64>,
    /// Where the baseline came from: `config 8xH100`, `fleet median of 4 node sets`.
    pub basis: Option<String>,
    /// busbw as a percentage of the baseline.
    pub pct: Option<f64>,
    /// One line for the operator.
    pub why: String,
}

fn fail(why: String) -> Judgement {
    Judgement { verdict: Verdict::Fail, baseline: None, basis: None, pct: None, why }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len().is_multiple_of(2) { (v[m - 1] + v[m]) / 2.0 } else { v[m] })
}

/// Whether a run produced a clean figure (usable for baselines and history).
fn clean(r: &RunRecord) -> Option<f64> {
    let res = r.result.as_ref()?;
    if r.error.is_some() || res.failed() {
        return None;
    }
    r.busbw.filter(|b| b.is_finite())
}

/// Judges `rec` against the configured baseline or the fleet (`history`: earlier runs; `rec`
/// itself may be among them).
pub fn judge(rec: &RunRecord, history: &[RunRecord], cfg: &JudgeConfig) -> Judgement {
    if let Some(e) = &rec.error {
        return fail(format!("no usable output: {e}"));
    }
    let Some(res) = &rec.result else { return fail("no output was collected".into()) };
    let wrong = res.wrong();
    if wrong > 0 {
        return fail(format!("{wrong} wrong value(s): data corruption"));
    }
    if let Some(e) = res.errors.first() {
        return fail(format!("the test reported errors: {e}"));
    }
    if let Some(st) = rec.job_state.as_deref().filter(|s| *s != "COMPLETED") {
        return fail(format!("the job ended {st}"));
    }
    let Some(bw) = rec.busbw else { return fail("no busbw at the largest size".into()) };
    let shape = rec.shape();
    let (baseline, basis) = match cfg.baseline.get(&shape) {
        Some(b) => (*b, format!("config {shape}")),
        None => {
            // The latest clean run of each node set of this shape, this run standing for its own.
            let mut latest: HashMap<&[String], (i64, f64)> = HashMap::new();
            for r in history.iter().filter(|r| r.id != rec.id && r.shape() == shape) {
                if let Some(b) = clean(r) {
                    let e = latest.entry(&r.nodes).or_insert((r.submitted_at, b));
                    if r.submitted_at >= e.0 {
                        *e = (r.submitted_at, b);
                    }
                }
            }
            latest.insert(&rec.nodes, (rec.submitted_at, bw));
            let mut v: Vec<f64> = latest.values().map(|x| x.1).collect();
            let n = v.len();
            match median(&mut v) {
                Some(m) if n > 1 => (m, format!("fleet median of {n} {shape} node sets")),
                _ => {
                    return Judgement {
                        verdict: Verdict::Pass,
                        baseline: None,
                        basis: None,
                        pct: None,
                        why: format!(
                            "{bw:.1} GB/s; first {shape} result: no baseline configured or measured yet"
                        ),
                    };
                }
            }
        }
    };
    let pct = if baseline > 0.0 { bw / baseline * 100.0 } else { 100.0 };
    let verdict = if pct < cfg.fail_pct {
        Verdict::Fail
    } else if pct < cfg.degraded_pct {
        Verdict::Degraded
    } else {
        Verdict::Pass
    };
    Judgement {
        verdict,
        baseline: Some(baseline),
        basis: Some(basis.clone()),
        pct: Some(pct),
        why: format!("{bw:.1} GB/s = {pct:.0}% of {baseline:.1} GB/s ({basis})"),
    }
}

/// Per node: the latest run, its history and its drift. `runs` oldest first. A fleet
/// cluster's runs name their nodes `cluster/node` ([`RunRecord::node_key`]): two clusters'
/// nodes of one name stay apart.
pub fn by_node(runs: &[RunRecord], cfg: &JudgeConfig) -> BTreeMap<String, NodeAcceptance> {
    let mut latest: BTreeMap<String, &RunRecord> = BTreeMap::new();
    for r in runs {
        for n in &r.nodes {
            let e = latest.entry(r.node_key(n)).or_insert(r);
            if r.submitted_at >= e.submitted_at {
                *e = r;
            }
        }
    }
    let mut out: BTreeMap<String, NodeAcceptance> = latest
        .iter()
        .map(|(node, r)| {
            let shape = r.shape();
            let history: Vec<f64> = runs
                .iter()
                .filter(|x| x.nodes.iter().any(|n| x.node_key(n) == *node) && x.shape() == shape)
                .filter_map(clean)
                .collect();
            let na = NodeAcceptance {
                node: node.to_string(),
                last_run: r.id.clone(),
                last_verdict: r.judgement.as_ref().map(|j| j.verdict),
                last_busbw: r.busbw,
                last_at: r.submitted_at,
                last_baseline: r.judgement.as_ref().and_then(|j| j.baseline),
                last_pct: r.judgement.as_ref().and_then(|j| j.pct),
                last_why: r.judgement.as_ref().map(|j| j.why.clone()).unwrap_or_default(),
                history,
                drift: Vec::new(),
            };
            (node.to_string(), na)
        })
        .collect();
    for d in drift(&latest, runs, cfg) {
        if let Some(n) = out.get_mut(&d.node) {
            n.drift.push(d);
        }
    }
    out
}

fn drift(latest: &BTreeMap<String, &RunRecord>, runs: &[RunRecord], cfg: &JudgeConfig) -> Vec<Drift> {
    let mut out = Vec::new();
    type Field = fn(&RunRecord) -> Option<&str>;
    let fields: [(DriftKind, Field); 4] = [
        (DriftKind::Driver, |r| r.driver.as_deref()),
        (DriftKind::Cuda, |r| r.cuda.as_deref()),
        (DriftKind::Nccl, |r| r.nccl.as_deref()),
        (DriftKind::Image, |r| r.image.as_deref()),
    ];
    for (kind, get) in fields {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for r in latest.values() {
            if let Some(v) = get(r) {
                *count.entry(v).or_default() += 1;
            }
        }
        let mut ranked: Vec<(&str, usize)> = count.into_iter().collect();
        ranked.sort_by_key(|b| std::cmp::Reverse(b.1));
        // Only a clear majority says what is expected.
        let majority = match ranked.as_slice() {
            [(v, _)] => *v,
            [(v, a), (_, b), ..] if a > b => *v,
            _ => continue,
        };
        for (node, r) in latest {
            if let Some(v) = get(r).filter(|v| *v != majority) {
                out.push(Drift { node: node.to_string(), kind, found: v.into(), expected: majority.into() });
            }
        }
    }
    // Own history: the latest clean run against the median of the earlier ones.
    for (node, last) in latest {
        let Some(now) = clean(last) else { continue };
        let shape = last.shape();
        let mut before: Vec<f64> = runs
            .iter()
            .filter(|x| {
                x.id != last.id
                    && x.submitted_at <= last.submitted_at
                    && x.nodes.iter().any(|n| x.node_key(n) == *node)
                    && x.shape() == shape
            })
            .filter_map(clean)
            .collect();
        if let Some(m) = median(&mut before)
            && now < m * (1.0 - cfg.drop_pct / 100.0)
        {
            out.push(Drift {
                node: node.to_string(),
                kind: DriftKind::Busbw,
                found: format!("{now:.1} GB/s"),
                expected: format!("{m:.1} GB/s (own median)"),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests;
