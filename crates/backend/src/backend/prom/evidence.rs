//! What a job's nodes were doing over a window (its run, or the detail pane's last hour), from
//! node_exporter's series: shared-storage client throughput (NFS mountstats, read + written)
//! against `[prometheus.evidence] storage_bytes_s`, the busiest local disk's busy fraction
//! (`io_time` rate) and the CPUs' busy fraction (1 − idle) against theirs, and InfiniBand
//! receive errors, symbol errors and link downs.
//!
//! Bounded like [`super::jobstats`]: fifteen instant queries evaluated at the window's end, one
//! value per node each, whatever the window's length. A load is sampled by a subquery
//! (`[window:step]`, the step chosen as jobstats chooses it, so at most
//! [`super::jobstats::MAX_POINTS`] samples); its mean, its peak, how many samples were at or above
//! `near` × the ceiling and their mean. A node or a figure without series is "no data",
//! never a clean bill.

use super::client::{Body, PromClient, PromError};
use super::config::PromConfig;
use super::focus::{host_regex, matchers, quoted};
use crate::model::Epoch;
use crate::model::evidence::{Ceilings, Evidence, EvidenceKind, Finding, Load, NodeEvidence};
use std::collections::BTreeMap;

/// One instant query's figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    /// A load's mean, peak, samples at the ceiling, and mean while there.
    Mean(EvidenceKind),
    Peak(EvidenceKind),
    HighCount(EvidenceKind),
    HighMean(EvidenceKind),
    IbReceived,
    IbSymbol,
    IbDowned,
}

const LOADS: [EvidenceKind; 3] = [EvidenceKind::Storage, EvidenceKind::Disk, EvidenceKind::Cpu];

/// Every figure asked, in order.
pub fn figures() -> Vec<Figure> {
    let mut v = Vec::with_capacity(15);
    for k in LOADS {
        v.extend([Figure::Mean(k), Figure::Peak(k), Figure::HighCount(k), Figure::HighMean(k)]);
    }
    v.extend([Figure::IbReceived, Figure::IbSymbol, Figure::IbDowned]);
    v
}

/// The labels a node's series are grouped by.
fn by(cfg: &PromConfig) -> String {
    cfg.labels.node_host.join(", ")
}

/// `func(metric{host=~re,extra}[w])` for each node host label, joined with `or`.
fn over(cfg: &PromConfig, func: &str, metric: &str, re: &str, extra: &str, w: i64) -> String {
    let host = format!("=~\"{}\"", quoted(re));
    let terms: Vec<String> = matchers(cfg, &cfg.labels.node_host, &host, extra)
        .iter()
        .map(|m| format!("{func}({metric}{{{m}}}[{w}s])"))
        .collect();
    terms.join(" or ")
}

/// The rate window of a load's samples: the configured one, or the step when coarser.
fn rate_window(cfg: &PromConfig, step: i64) -> i64 {
    (cfg.rate_window.as_secs() as i64).max(step)
}

/// A load per node, at one instant: bytes/s for storage, a busy fraction for disk and CPU.
pub fn load_expr(cfg: &PromConfig, kind: EvidenceKind, re: &str, step: i64) -> String {
    let m = &cfg.metrics;
    let r = rate_window(cfg, step);
    match kind {
        EvidenceKind::Storage => {
            // Read and written bytes are told apart by a label of their own: their rates
            // (names dropped) would otherwise be two series with one label set.
            let side = |metric: &str, dir: &str| {
                format!(
                    "label_replace({}, \"rw\", \"{dir}\", \"\", \"\")",
                    over(cfg, "rate", metric, re, "", r)
                )
            };
            format!("sum by ({}) ({} or {})", by(cfg), side(&m.nfs_read, "r"), side(&m.nfs_written, "w"))
        }
        EvidenceKind::Disk => {
            let dev = format!("device=~\"{}\"", quoted(&cfg.disk_devices));
            format!("max by ({}) ({})", by(cfg), over(cfg, "rate", &m.disk_io_time, re, &dev, r))
        }
        EvidenceKind::Cpu | EvidenceKind::Infiniband => {
            format!(
                "1 - avg by ({}) ({})",
                by(cfg),
                over(cfg, "rate", &m.cpu_seconds, re, "mode=\"idle\"", r)
            )
        }
    }
}

/// The ceiling of a load in its unit.
pub fn ceiling(c: &Ceilings, kind: EvidenceKind) -> f64 {
    match kind {
        EvidenceKind::Storage => c.storage_bytes_s,
        EvidenceKind::Disk => c.disk_busy,
        _ => c.cpu_busy,
    }
}

/// The instant query (evaluated at the window's end) of one figure over `span` seconds.
pub fn query(cfg: &PromConfig, f: Figure, re: &str, span: i64, step: i64) -> String {
    let sub = |e: String| format!("({e})[{}s:{step}s]", span.max(1));
    let thr = |k| cfg.evidence.near * ceiling(&cfg.evidence, k);
    let ib = |metric: &str| {
        format!("sum by ({}) ({})", by(cfg), over(cfg, "increase", metric, re, "", span.max(1)))
    };
    match f {
        Figure::Mean(k) => format!("avg_over_time({})", sub(load_expr(cfg, k, re, step))),
        Figure::Peak(k) => format!("max_over_time({})", sub(load_expr(cfg, k, re, step))),
        Figure::HighCount(k) => {
            format!("count_over_time({})", sub(format!("{} >= {}", load_expr(cfg, k, re, step), thr(k))))
        }
        Figure::HighMean(k) => {
            format!("avg_over_time({})", sub(format!("{} >= {}", load_expr(cfg, k, re, step), thr(k))))
        }
        Figure::IbReceived => ib(&cfg.metrics.ib_rcv_errors),
        Figure::IbSymbol => ib(&cfg.metrics.ib_symbol_errors),
        Figure::IbDowned => ib(&cfg.metrics.ib_link_downed),
    }
}

/// One value per node from an instant answer (NaN and infinities are no data).
pub fn values(cfg: &PromConfig, body: &Body) -> Result<BTreeMap<String, f64>, PromError> {
    let r = body.parse()?;
    let mut out = BTreeMap::new();
    for s in r.results.iter() {
        let (Some(h), Some(p)) = (s.first_label(&cfg.labels.node_host), s.last()) else { continue };
        if p.v.is_finite() {
            let node = crate::sanitize::sanitize(&cfg.host_map.map(h)).into_owned();
            out.insert(node, p.v);
        }
    }
    Ok(out)
}

/// Assembles the answers for `nodes` into per-node figures, findings and what had no data.
/// `window` names the window in the findings ("the run", "the last hour").
pub fn assemble(
    nodes: &[String],
    answers: &BTreeMap<Figure, BTreeMap<String, f64>>,
    c: &Ceilings,
    (start, end, step): (Epoch, Epoch, i64),
    window: &str,
    names: [&str; 4],
) -> Evidence {
    let get = |f: Figure, n: &str| answers.get(&f).and_then(|m| m.get(n)).copied();
    let load = |k: EvidenceKind, n: &str| {
        let mean = get(Figure::Mean(k), n);
        Load {
            mean,
            peak: get(Figure::Peak(k), n),
            // Measured and never at the ceiling: no sample passed the filter, so 0 s.
            at_ceiling_s: mean.map(|_| get(Figure::HighCount(k), n).map_or(0, |c| c.round() as i64 * step)),
            at_ceiling_mean: get(Figure::HighMean(k), n),
        }
    };
    let mut ev = Evidence { start, end, step_s: step, ceilings: c.clone(), ..Default::default() };
    for n in nodes {
        ev.nodes.push(NodeEvidence {
            node: n.clone(),
            storage: load(EvidenceKind::Storage, n),
            disk: load(EvidenceKind::Disk, n),
            cpu: load(EvidenceKind::Cpu, n),
            ib_errors_received: get(Figure::IbReceived, n),
            ib_symbol_errors: get(Figure::IbSymbol, n),
            ib_link_downed: get(Figure::IbDowned, n),
        });
    }
    for (k, what) in LOADS.into_iter().zip(&names[..3]) {
        let pick = |e: &NodeEvidence| match k {
            EvidenceKind::Storage => e.storage.clone(),
            EvidenceKind::Disk => e.disk.clone(),
            _ => e.cpu.clone(),
        };
        let missing: Vec<&str> =
            ev.nodes.iter().filter(|e| !pick(e).measured()).map(|e| e.node.as_str()).collect();
        say_missing(&mut ev.no_data, k.label(), what, &missing, nodes.len());
    }
    let missing: Vec<&str> = ev
        .nodes
        .iter()
        .filter(|e| e.ib_errors_received.is_none() && e.ib_link_downed.is_none())
        .map(|e| e.node.as_str())
        .collect();
    say_missing(&mut ev.no_data, "InfiniBand port counters", names[3], &missing, nodes.len());
    ev.findings = findings(&ev.nodes, c, window);
    ev
}

fn say_missing(out: &mut Vec<String>, label: &str, metric: &str, missing: &[&str], all: usize) {
    if missing.is_empty() {
        return;
    }
    if missing.len() == all {
        out.push(format!("no data for {label} ({metric})"));
    } else {
        out.push(format!("no data for {label} on {}", missing.join(", ")));
    }
}

/// The findings the figures support: a load at its ceiling for at least `min_s`, a link that
/// went down, port errors past `ib_errors`.
pub fn findings(nodes: &[NodeEvidence], c: &Ceilings, window: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for n in nodes {
        for (k, l) in
            [(EvidenceKind::Storage, &n.storage), (EvidenceKind::Disk, &n.disk), (EvidenceKind::Cpu, &n.cpu)]
        {
            let (Some(secs), Some(v)) = (l.at_ceiling_s, l.at_ceiling_mean) else { continue };
            if secs < c.min_s.max(1) {
                continue;
            }
            let ceil = ceiling(c, k);
            let pct = if ceil > 0.0 { 100.0 * v / ceil } else { 0.0 };
            let dur = crate::clock::dur(secs);
            let node = crate::sanitize::sanitize(&n.node);
            let text = match k {
                EvidenceKind::Storage => format!(
                    "storage at {pct:.0}% of its {:.1} GB/s ceiling for {dur} of {window} on {node}",
                    ceil / 1e9
                ),
                EvidenceKind::Disk => format!(
                    "local disk {:.0}% busy (ceiling {:.0}%) for {dur} of {window} on {node}",
                    100.0 * v,
                    100.0 * ceil
                ),
                _ => format!(
                    "CPU {:.0}% busy (ceiling {:.0}%) for {dur} of {window} on {node}: data loading may be CPU-bound",
                    100.0 * v,
                    100.0 * ceil
                ),
            };
            out.push(Finding {
                kind: k,
                node: n.node.clone(),
                value: v,
                ceiling: Some(ceil),
                seconds: Some(secs),
                text,
            });
        }
        let node = crate::sanitize::sanitize(&n.node);
        if let Some(d) = n.ib_link_downed.map(f64::round).filter(|d| *d >= 1.0) {
            out.push(Finding {
                kind: EvidenceKind::Infiniband,
                node: n.node.clone(),
                value: d,
                ceiling: None,
                seconds: None,
                text: format!("InfiniBand link went down {d:.0} time(s) during {window} on {node}"),
            });
        }
        let errs = n.ib_errors_received.unwrap_or(0.0) + n.ib_symbol_errors.unwrap_or(0.0);
        if (n.ib_errors_received.is_some() || n.ib_symbol_errors.is_some()) && errs >= c.ib_errors {
            out.push(Finding {
                kind: EvidenceKind::Infiniband,
                node: n.node.clone(),
                value: errs.round(),
                ceiling: Some(c.ib_errors),
                seconds: None,
                text: format!(
                    "{:.0} InfiniBand receive errors and {:.0} symbol errors during {window} on {node}",
                    n.ib_errors_received.unwrap_or(0.0).round(),
                    n.ib_symbol_errors.unwrap_or(0.0).round()
                ),
            });
        }
    }
    out
}

/// The evidence on `nodes` over `[start, end]`; `None` when the nodes cannot be selected by
/// name (a custom `host_map.regex`) or there are none.
pub async fn fetch(
    client: &PromClient,
    cfg: &PromConfig,
    nodes: &[String],
    start: Epoch,
    end: Epoch,
    window: &str,
) -> Result<Option<Evidence>, PromError> {
    let mut nodes: Vec<String> = nodes.to_vec();
    nodes.sort();
    nodes.dedup();
    nodes.truncate(super::focus::MAX_JOB_NODES);
    let refs: Vec<&str> = nodes.iter().map(String::as_str).collect();
    let Some(re) = host_regex(cfg, &refs).filter(|_| !nodes.is_empty()) else { return Ok(None) };
    let span = (end - start).max(1);
    let step = super::jobstats::step_for(span);
    let fs = figures();
    let futures = fs.iter().map(|f| {
        let q = query(cfg, *f, &re, span, step);
        async move { (*f, client.query(&q, Some(end as f64)).await) }
    });
    let mut answers = BTreeMap::new();
    for (f, body) in futures::future::join_all(futures).await {
        answers.insert(f, values(cfg, &body?)?);
    }
    let m = &cfg.metrics;
    let storage = format!("{}, {}", m.nfs_read, m.nfs_written);
    let ib = format!("{}, {}", m.ib_rcv_errors, m.ib_link_downed);
    let mut ev = assemble(
        &nodes,
        &answers,
        &cfg.evidence,
        (start, end, step),
        window,
        [&storage, &m.disk_io_time, &m.cpu_seconds, &ib],
    );
    ev.queries = fs.len();
    Ok(Some(ev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_sample_each_node_over_the_window_and_filter_at_the_ceiling() {
        let c = PromConfig::new("http://x");
        let re = host_regex(&c, &["gpu-016"]).unwrap();
        let q = query(&c, Figure::Mean(EvidenceKind::Storage), &re, 3600, 60);
        assert_eq!(
            q,
            "avg_over_time((sum by (instance) (\
             label_replace(rate(node_mountstats_nfs_total_read_bytes_total{instance=~\"(gpu\\\\-016)([.:].*)?\"}[120s]), \"rw\", \"r\", \"\", \"\") or \
             label_replace(rate(node_mountstats_nfs_total_write_bytes_total{instance=~\"(gpu\\\\-016)([.:].*)?\"}[120s]), \"rw\", \"w\", \"\", \"\")\
             ))[3600s:60s])"
        );
        let q = query(&c, Figure::HighCount(EvidenceKind::Storage), &re, 3600, 60);
        assert!(q.starts_with("count_over_time((") && q.ends_with(" >= 1800000000)[3600s:60s])"), "{q}");
        let q = query(&c, Figure::HighMean(EvidenceKind::Cpu), &re, 600, 60);
        assert!(
            q.contains("1 - avg by (instance) (rate(node_cpu_seconds_total{") && q.contains("mode=\"idle\""),
            "{q}"
        );
        assert!(q.contains(" >= 0.81)[600s:60s]"), "{q}");
        let q = query(&c, Figure::Peak(EvidenceKind::Disk), &re, 3600, 60);
        assert!(
            q.contains("max by (instance) (rate(node_disk_io_time_seconds_total{")
                && q.contains("device=~\"nvme"),
            "{q}"
        );
        let q = query(&c, Figure::IbDowned, &re, 3600, 60);
        assert!(
            q.starts_with("sum by (instance) (increase(node_infiniband_link_downed_total{")
                && q.ends_with("[3600s]))")
        );
        // A long run keeps the subquery bounded: its step grows.
        assert_eq!(figures().len(), 15);
        let week = 7 * 86_400;
        let step = super::super::jobstats::step_for(week);
        assert!(
            query(&c, Figure::Mean(EvidenceKind::Cpu), &re, week, step)
                .contains(&format!("[{week}s:{step}s]"))
        );
        // The rate window is never finer than the step.
        assert!(load_expr(&c, EvidenceKind::Cpu, &re, 300).contains("[300s]"));
    }

    fn answers(rows: &[(Figure, &str, f64)]) -> BTreeMap<Figure, BTreeMap<String, f64>> {
        let mut m: BTreeMap<Figure, BTreeMap<String, f64>> = BTreeMap::new();
        for (f, n, v) in rows {
            m.entry(*f).or_default().insert(n.to_string(), *v);
        }
        m
    }

    #[test]
    fn a_load_at_its_ceiling_long_enough_is_a_finding_with_its_figure_ceiling_and_time() {
        let s = EvidenceKind::Storage;
        let a = answers(&[
            (Figure::Mean(s), "a", 1.5e9),
            (Figure::Peak(s), "a", 1.99e9),
            (Figure::HighCount(s), "a", 41.0),
            (Figure::HighMean(s), "a", 1.96e9),
            // b: measured, never near the ceiling: no finding, 0 s.
            (Figure::Mean(s), "b", 2.0e6),
            (Figure::Peak(s), "b", 3.0e6),
            // b's CPU at the ceiling for 4 min only: under min_s.
            (Figure::Mean(EvidenceKind::Cpu), "b", 0.5),
            (Figure::HighCount(EvidenceKind::Cpu), "b", 4.0),
            (Figure::HighMean(EvidenceKind::Cpu), "b", 0.95),
            (Figure::IbDowned, "b", 2.0),
            (Figure::IbReceived, "b", 30.0),
            (Figure::IbSymbol, "b", 500.0),
            (Figure::IbReceived, "a", 0.0),
        ]);
        let nodes = vec!["a".to_string(), "b".to_string()];
        let ev =
            assemble(&nodes, &a, &Ceilings::default(), (0, 3600, 60), "the run", ["nfs", "io", "cpu", "ib"]);
        assert_eq!(ev.nodes[0].storage.at_ceiling_s, Some(41 * 60));
        assert_eq!(ev.nodes[1].storage.at_ceiling_s, Some(0));
        assert_eq!(ev.nodes[0].cpu.at_ceiling_s, None, "no data is not 0 s");
        let texts: Vec<&str> = ev.findings.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "storage at 98% of its 2.0 GB/s ceiling for 41m00s of the run on a",
                "InfiniBand link went down 2 time(s) during the run on b",
                "30 InfiniBand receive errors and 500 symbol errors during the run on b",
            ]
        );
        assert_eq!(ev.findings[0].value, 1.96e9);
        assert_eq!(ev.no_data, ["no data for local disk (io)", "no data for CPU on a"]);
        // Nothing measured at all: every figure says so; no finding claims health.
        let ev = assemble(
            &nodes,
            &BTreeMap::new(),
            &Ceilings::default(),
            (0, 3600, 60),
            "the run",
            ["nfs", "io", "cpu", "ib"],
        );
        assert!(ev.findings.is_empty());
        assert_eq!(ev.no_data.len(), 4, "{:?}", ev.no_data);
        assert_eq!(ev.no_data[3], "no data for InfiniBand port counters (ib)");
        assert!(ev.no_data[0].starts_with("no data for storage throughput (nfs)"), "{:?}", ev.no_data);
    }

    #[test]
    fn configured_ceilings_change_the_threshold() {
        let mut c = PromConfig::new("http://x");
        c.evidence.storage_bytes_s = 1.0e9;
        c.evidence.near = 0.5;
        let q = query(&c, Figure::HighCount(EvidenceKind::Storage), "a", 60, 60);
        assert!(q.contains(" >= 500000000)"), "{q}");
    }
}
