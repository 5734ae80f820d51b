//! History for what is on screen: when the console's detail pane shows a node, a GPU or a job,
//! the backend asks Prometheus for that one thing's last hour with `query_range` (four
//! queries, aggregated server-side to one series each; for a job, also the evidence on its
//! nodes over the hour, fifteen instant queries, [`super::evidence`]; NVLink throughput is read only here,
//! since per GPU for the whole fleet it would be the largest answer of a refresh) and sends it as an
//! [`Update::History`](crate::model::protocol::Update::History). Nothing else is range-queried after
//! start-up, so the cost follows what a person looks at, not the cluster's size.

use super::api::ResultType;
use super::client::{Body, PromError};
use super::config::PromConfig;
use crate::model::Epoch;
use crate::model::protocol::{Focus, FocusHistory, HistorySeries};
use std::collections::BTreeMap;

/// How far back the detail pane's history goes, and its resolution.
pub const WINDOW_S: i64 = 3600;
pub const STEP_S: u32 = 30;
/// Jobs spanning more nodes are charted over their first this many nodes.
pub const MAX_JOB_NODES: usize = 256;

/// A PromQL double-quoted string's content.
pub(super) fn quoted(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A regex (anchored by PromQL) matching the host label values that map to one of `nodes`:
/// the name, with a `:port` or a domain after it, and any `[host_map.names]` entry naming it.
/// `None` when a custom `host_map.regex` makes the mapping impossible to invert.
pub(super) fn host_regex(cfg: &PromConfig, nodes: &[&str]) -> Option<String> {
    if cfg.host_map.regex.is_some() {
        return None;
    }
    let mut alts: Vec<String> = nodes.iter().map(|n| regex::escape(n)).collect();
    alts.sort();
    alts.dedup();
    let mut re = format!("({})([.:].*)?", alts.join("|"));
    let renamed: Vec<String> = cfg
        .host_map
        .names
        .iter()
        .filter(|(_, node)| nodes.contains(&node.as_str()))
        .map(|(host, _)| regex::escape(host))
        .collect();
    if !renamed.is_empty() {
        re = format!("{re}|{}", renamed.join("|"));
    }
    Some(re)
}

/// `metric{<host label matcher>,extra}` for each host label, joined with `or` (the first
/// present wins, as in the refresh queries). `host` is `=~"re"` for a set of hosts, `!=""` for
/// all of them.
fn select_hosts(cfg: &PromConfig, metric: &str, host: &str, extra: &str) -> String {
    let terms: Vec<String> =
        matchers(cfg, &cfg.labels.gpu_host, host, extra).iter().map(|m| format!("{metric}{{{m}}}")).collect();
    terms.join(" or ")
}

/// The matchers inside `{}` for each of the host `labels` (`host`: `=~"re"`, `!=""`), with the
/// configured selector and `extra`.
pub(super) fn matchers(cfg: &PromConfig, labels: &[String], host: &str, extra: &str) -> Vec<String> {
    labels
        .iter()
        .map(|h| {
            let parts: Vec<String> = [cfg.selector.clone(), format!("{h}{host}"), extra.to_string()]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect();
            parts.join(",")
        })
        .collect()
}

/// [`select_hosts`] for the hosts matching the regex `re`.
fn select(cfg: &PromConfig, metric: &str, re: &str, extra: &str) -> String {
    select_hosts(cfg, metric, &format!("=~\"{}\"", quoted(re)), extra)
}

/// The GPUs of a job as `(host regex, gpu regex)` terms: nodes holding the same GPU indices
/// share a term, so a job on whole nodes is one term.
pub(super) fn job_terms(
    cfg: &PromConfig,
    gpus: &[(crate::model::Text, u8)],
) -> Option<Vec<(String, String)>> {
    let mut by_node: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    for (n, g) in gpus {
        by_node.entry(n.as_str()).or_default().push(*g);
    }
    let mut by_set: BTreeMap<Vec<u8>, Vec<&str>> = BTreeMap::new();
    for (n, mut set) in by_node.into_iter().take(MAX_JOB_NODES) {
        set.sort_unstable();
        set.dedup();
        by_set.entry(set).or_default().push(n);
    }
    by_set
        .into_iter()
        .map(|(set, nodes)| {
            let g: Vec<String> = set.iter().map(u8::to_string).collect();
            host_regex(cfg, &nodes).map(|re| (re, g.join("|")))
        })
        .collect()
}

/// The range queries for a focus: `(metric, PromQL)`, each aggregated to one series. Empty
/// when the focus cannot be selected (custom host regex, a job without GPUs).
pub fn queries(cfg: &PromConfig, focus: &Focus) -> Vec<(&'static str, String)> {
    let m = &cfg.metrics;
    let g = &cfg.labels.gpu;
    let dedup = |q: String| {
        let mut by: Vec<&str> = cfg.labels.gpu_host.iter().map(String::as_str).collect();
        by.push(g);
        format!("max by ({}) ({q})", by.join(", "))
    };
    match focus {
        Focus::Node(n) => {
            let Some(re) = host_regex(cfg, &[n.as_str()]) else { return Vec::new() };
            vec![
                ("util", format!("avg({})", dedup(select(cfg, &m.gpu_util, &re, "")))),
                ("temp", format!("max({})", select(cfg, &m.gpu_temp, &re, ""))),
                ("power", format!("sum({})", dedup(select(cfg, &m.power, &re, "")))),
                ("nvlink", format!("sum({}) / 1000", dedup(select(cfg, &m.nvlink_bw, &re, "")))),
            ]
        }
        Focus::Gpu(n, i) => {
            let Some(re) = host_regex(cfg, &[n.as_str()]) else { return Vec::new() };
            let gpu = format!("{g}=\"{i}\"");
            vec![
                ("util", format!("max({})", select(cfg, &m.gpu_util, &re, &gpu))),
                ("temp", format!("max({})", select(cfg, &m.gpu_temp, &re, &gpu))),
                ("power", format!("max({})", select(cfg, &m.power, &re, &gpu))),
                ("nvlink", format!("max({}) / 1000", select(cfg, &m.nvlink_bw, &re, &gpu))),
            ]
        }
        Focus::Fleet => {
            let all = |metric: &str| dedup(select_hosts(cfg, metric, "!=\"\"", ""));
            vec![("util", format!("avg({})", all(&m.gpu_util))), ("power", format!("sum({})", all(&m.power)))]
        }
        Focus::Job(_, gpus) => {
            let Some(terms) = job_terms(cfg, gpus).filter(|t| !t.is_empty()) else { return Vec::new() };
            let pick = |metric: &str| {
                let parts: Vec<String> =
                    terms.iter().map(|(re, gs)| select(cfg, metric, re, &format!("{g}=~\"{gs}\""))).collect();
                dedup(parts.join(" or "))
            };
            vec![
                ("util", format!("avg({})", pick(&m.gpu_util))),
                ("tensor", format!("round(100 * avg({}))", pick(&m.tensor_active))),
                ("power", format!("sum({})", pick(&m.power))),
                ("nvlink", format!("sum({}) / 1000", pick(&m.nvlink_bw))),
            ]
        }
    }
}

/// The answers of [`queries`] → a history aligned on `start + k·step`, `n` points.
pub fn assemble(
    focus: &Focus,
    start: Epoch,
    step: u32,
    n: usize,
    answers: &[(&'static str, Body)],
    at: Epoch,
) -> Result<FocusHistory, PromError> {
    let mut series = Vec::with_capacity(answers.len());
    for (metric, body) in answers {
        let r = body.parse()?;
        let mut values = vec![None; n];
        if r.results.result_type == ResultType::Matrix {
            // One series after aggregation; should there be more, the first wins per point.
            for s in r.results.iter() {
                for p in s.points {
                    let k = ((p.t - start as f64) / f64::from(step)).round();
                    if k >= 0.0 && (k as usize) < n && p.v.is_finite() && values[k as usize].is_none() {
                        values[k as usize] = Some(p.v as f32);
                    }
                }
            }
        }
        series.push(HistorySeries { metric, values });
    }
    Ok(FocusHistory { focus: focus.clone(), start, step, series, at, evidence: None })
}

/// Fetches the history of `focus` ending at `end` (`None`: nothing to ask for this focus).
pub async fn fetch(
    client: &super::PromClient,
    cfg: &PromConfig,
    focus: &Focus,
    end: Epoch,
) -> Result<Option<FocusHistory>, PromError> {
    let qs = queries(cfg, focus);
    if qs.is_empty() {
        return Ok(None);
    }
    let step = STEP_S;
    // Aligned to the step so that consecutive fetches share their points.
    let end = end - end.rem_euclid(i64::from(step));
    let start = end - WINDOW_S;
    let n = (WINDOW_S / i64::from(step)) as usize + 1;
    let futures = qs.iter().map(|(metric, q)| async move {
        client.query_range(q, start as f64, end as f64, f64::from(step)).await.map(|b| (*metric, b))
    });
    let answers: Vec<(&'static str, Body)> =
        futures::future::join_all(futures).await.into_iter().collect::<Result<_, _>>()?;
    // A job's nodes over the same hour: the evidence shown beside its idle figures. Its
    // failure leaves the history as it is.
    let evidence = match focus {
        Focus::Job(_, gpus) => {
            let nodes: Vec<String> = gpus.iter().map(|(n, _)| n.to_string()).collect();
            match super::evidence::fetch(client, cfg, &nodes, start, end, "the last hour").await {
                Ok(ev) => ev.map(Box::new),
                Err(e) => {
                    tracing::warn!("prometheus: evidence for the detail pane: {e}");
                    None
                }
            }
        }
        _ => None,
    };
    let focus = focus.clone();
    let at = end;
    let mut h = tokio::task::spawn_blocking(move || assemble(&focus, start, step, n, &answers, at))
        .await
        .map_err(|e| PromError::Decode { url: client.url().into(), detail: e.to_string() })??;
    h.evidence = evidence;
    Ok(Some(h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Text;

    #[test]
    fn node_gpu_and_job_queries_select_only_the_focus() {
        let c = PromConfig::new("http://x");
        let q = queries(&c, &Focus::Node(Text::from("gpu-01")));
        let names: Vec<&str> = q.iter().map(|(m, _)| *m).collect();
        assert_eq!(names, ["util", "temp", "power", "nvlink"]);
        // NVLink throughput: MB/s per GPU, summed over the node, in GB/s.
        assert!(
            q[3].1.starts_with("sum(max by (Hostname, hostname, gpu) (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{"),
            "{}",
            q[3].1
        );
        assert!(q[3].1.ends_with(") / 1000"), "{}", q[3].1);
        assert_eq!(
            q[0].1,
            "avg(max by (Hostname, hostname, gpu) (DCGM_FI_DEV_GPU_UTIL{Hostname=~\"(gpu\\\\-01)([.:].*)?\"} \
             or DCGM_FI_DEV_GPU_UTIL{hostname=~\"(gpu\\\\-01)([.:].*)?\"}))"
        );
        let q = queries(&c, &Focus::Gpu(Text::from("gpu-01"), 3));
        assert!(q.iter().all(|(_, q)| q.contains("gpu=\"3\"")), "{q:?}");
        // A job on two whole nodes and part of a third: two terms.
        let gpus: Vec<(Text, u8)> = (0..8)
            .flat_map(|g| [(Text::from("a"), g), (Text::from("b"), g)])
            .chain([(Text::from("c"), 2), (Text::from("c"), 3)])
            .collect();
        let q = queries(&c, &Focus::Job(7, gpus));
        assert_eq!(q[0].0, "util");
        assert!(
            q[0].1.contains("\"(a|b)([.:].*)?\"") && q[0].1.contains("gpu=~\"0|1|2|3|4|5|6|7\""),
            "{}",
            q[0].1
        );
        assert!(q[0].1.contains("\"(c)([.:].*)?\"") && q[0].1.contains("gpu=~\"2|3\""), "{}", q[0].1);
        assert!(queries(&c, &Focus::Job(8, Vec::new())).is_empty());
        // The fleet: two series for the whole cluster.
        let q = queries(&c, &Focus::Fleet);
        assert_eq!(q.len(), 2);
        assert_eq!(
            q[0].1,
            "avg(max by (Hostname, hostname, gpu) (DCGM_FI_DEV_GPU_UTIL{Hostname!=\"\"} or DCGM_FI_DEV_GPU_UTIL{hostname!=\"\"}))"
        );
    }

    #[test]
    fn hostile_node_names_stay_inside_the_string_and_custom_maps_opt_out() {
        let mut c = PromConfig::new("http://x");
        let q = queries(&c, &Focus::Node(Text::from("n\"}) or up{x=\"")));
        // The quote is escaped for PromQL: the selector cannot be closed from a node name.
        assert!(q[0].1.contains(r#"{Hostname=~"(n\"\\}\\) or up\\{x=\")([.:].*)?"}"#), "{}", q[0].1);
        c.host_map.names.insert("ip-10-0-0-1".into(), "gpu-01".into());
        let q = queries(&c, &Focus::Node(Text::from("gpu-01")));
        assert!(q[0].1.contains("|ip\\\\-10\\\\-0\\\\-0\\\\-1\""), "{}", q[0].1);
        c.host_map.regex = Some(regex::Regex::new("^(.*)-mgmt$").unwrap());
        assert!(queries(&c, &Focus::Node(Text::from("gpu-01"))).is_empty());
    }

    #[test]
    fn answers_are_aligned_on_the_step_with_gaps() {
        let body = Body(
            br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},
            "values":[[1000,"50"],[1060,"70"],[1090,"NaN"]]}]}}"#
                .to_vec(),
        );
        let h = assemble(&Focus::Node(Text::from("n")), 1000, 30, 5, &[("util", body)], 1120).unwrap();
        assert_eq!(h.series("util").unwrap(), &[Some(50.0), None, Some(70.0), None, None]);
        assert!(h.series("temp").is_none());
        let bad = Body(b"{".to_vec());
        assert!(assemble(&Focus::Node(Text::from("n")), 0, 30, 5, &[("util", bad)], 0).is_err());
    }
}
