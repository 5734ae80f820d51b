//! Building blocks of detail panes.

use super::table::Cx;
use super::tone::{Cell, Line};

/// `label   value`
pub fn kv<'a>(cx: &Cx<'a>, label: &str, value: Cell<'a>) -> Line<'a> {
    Line::from(vec![Cell::new(format!("{label:<9} "), cx.tones.dim), value])
}

/// A section heading.
pub fn section<'a>(cx: &Cx<'a>, title: &str) -> Line<'a> {
    Line::styled(format!("-- {title}"), cx.tones.title)
}

/// `label   ▁▂▅▇ 42%`: the label, the sparkline and its last value on one line of a pane
/// `width` columns wide (its borders included). When they would not fit, the oldest points give
/// way, never the value: it is not wrapped onto a line of its own.
pub fn spark_line<'a>(cx: &Cx<'a>, width: u16, label: &str, spark: String, last: Option<String>) -> Line<'a> {
    use unicode_width::UnicodeWidthStr;
    let label = format!("{label:<9} ");
    let last = last.unwrap_or_default();
    let room = (width as usize).saturating_sub(2 + label.width() + last.width());
    let n = spark.chars().count();
    let spark: String = if n > room { spark.chars().skip(n - room).collect() } else { spark };
    Line::from(vec![
        Cell::new(label, cx.tones.dim),
        Cell::new(spark, cx.tones.accent),
        Cell::new(last, cx.tones.text),
    ])
}

/// `values` squeezed into at most `width` columns: each column is the mean of the samples in
/// its span (`None` where there are none).
pub fn resample(values: &[Option<f32>], width: usize) -> Vec<Option<f32>> {
    if width == 0 || values.is_empty() {
        return Vec::new();
    }
    let cols = width.min(values.len());
    (0..cols)
        .map(|c| {
            let span = &values
                [c * values.len() / cols..((c + 1) * values.len() / cols).max(c * values.len() / cols + 1)];
            let present: Vec<f32> = span.iter().flatten().copied().collect();
            (!present.is_empty()).then(|| present.iter().sum::<f32>() / present.len() as f32)
        })
        .collect()
}

/// The detail pane's last hour from the history source, when it holds `focus`'s: one
/// sparkline per series (util, tensor and temperature on 0–100, power and NVLink throughput
/// scaled to their peaks).
pub fn focus_history<'a>(cx: &Cx<'a>, focus: &crate::model::protocol::Focus, width: u16) -> Vec<Line<'a>> {
    let Some(h) = cx.s.focus_history.as_ref().filter(|h| h.focus == *focus) else {
        return Vec::new();
    };
    let w = (width as usize).saturating_sub(20).clamp(8, 120);
    let mut out = vec![section(
        cx,
        &format!(
            "last {} min (Prometheus, {} s steps)",
            (h.series.first().map_or(0, |s| s.values.len().saturating_sub(1)) as u32 * h.step) / 60,
            h.step
        ),
    )];
    for s in &h.series {
        let cols = resample(&s.values, w);
        // NVLink GB/s charted in tenths, so a quiet link still shows its shape.
        let scale = if s.metric == "nvlink" { 10.0 } else { 1.0 };
        let ints: Vec<Option<u32>> =
            cols.iter().map(|v| v.map(|x| (x.max(0.0) * scale).round() as u32)).collect();
        let peak = ints.iter().flatten().copied().max().unwrap_or(1).max(1);
        let (max, unit) = match s.metric {
            "power" => (peak, "W"),
            "nvlink" => (peak, "GB/s"),
            "temp" => (100, "C"),
            _ => (100, "%"),
        };
        let last = s.values.iter().rev().find_map(|v| *v).map(|v| match unit {
            "W" => format!(" {}", super::fmt::power(f64::from(v))),
            "GB/s" if v >= 1000.0 => format!(" {:.1}TB/s", v / 1000.0),
            "GB/s" if v >= 10.0 => format!(" {v:.0}GB/s"),
            "GB/s" => format!(" {v:.1}GB/s"),
            _ => format!(" {v:.0}{unit}"),
        });
        out.push(spark_line(cx, width, s.metric, cx.glyphs.spark_gaps(&ints, max), last));
    }
    out
}

/// The job detail's "Efficiency" section: GPU utilisation weighted by GPU-hours, GPUs idle
/// now, time-limit use, and the `[efficiency]` notes these figures support; the full report
/// (Prometheus figures over the run) is `gpuplane report job ID`.
pub fn efficiency<'a>(cx: &Cx<'a>, j: &crate::model::Job) -> Vec<Line<'a>> {
    use crate::model::JobState;
    let s = cx.s;
    let t = cx.tones;
    if j.start.is_none() || j.gpus == 0 {
        return Vec::new();
    }
    let rules = cx.rules;
    let mut out = vec![section(cx, "Efficiency")];
    let util = super::jobs::eff(j);
    out.push(kv(
        cx,
        "GPU util",
        match util {
            Some(p) => Cell::new(
                format!("{p:.0}% (weighted by GPU-hours, {:.1} GPU-h)", j.gpu_seconds / 3600.0),
                super::jobs::eff_style(cx, p),
            ),
            None => Cell::new("- (no utilisation reported)", t.dim),
        },
    ));
    if j.state == JobState::Running {
        let held: Vec<(&str, u8, Option<u8>)> = j
            .nodes
            .iter()
            .filter_map(|n| s.node_in(&j.cluster, n))
            .flat_map(|n| {
                n.gpus.iter().filter(|g| g.job == Some(j.id)).map(move |g| (n.name.as_str(), g.index, g.util))
            })
            .collect();
        let idle: Vec<String> = held
            .iter()
            .filter(|(_, _, u)| u.is_some_and(|u| f64::from(u) < rules.idle_gpu))
            .map(|(n, i, _)| format!("{}:{i}", crate::sanitize::sanitize(n)))
            .collect();
        if !held.is_empty() {
            let text = if idle.is_empty() {
                format!("none of {} GPUs", held.len())
            } else {
                format!("{} of {}: {}", idle.len(), held.len(), idle.join(", "))
            };
            out.push(kv(cx, "idle now", Cell::new(text, if idle.is_empty() { t.text } else { t.warn })));
        }
    }
    if let Some(limit) = j.time_limit.filter(|l| *l > 0) {
        let ran = j.elapsed(s.now).unwrap_or(0);
        let pct = 100.0 * ran as f64 / limit as f64;
        let low = j.end.is_some() && pct < rules.time_limit_low;
        out.push(kv(
            cx,
            "time",
            Cell::new(
                format!("{} of {} limit ({pct:.0}%)", crate::clock::dur(ran), crate::clock::dur(limit)),
                if low { t.warn } else { t.text },
            ),
        ));
    }
    let run = j.elapsed(s.now).unwrap_or(0);
    if run >= rules.min_run_s
        && let Some(p) = util
    {
        if p < rules.util_red {
            out.push(kv(cx, "note", Cell::new("low GPU use: fewer GPUs, or a MIG slice", t.crit)));
        } else if p < rules.util_warn {
            out.push(kv(cx, "note", Cell::new("check the data loader and batch size", t.warn)));
        }
    }
    out.push(kv(cx, "report", Cell::new(format!("gpuplane report job {}", j.id), t.dim)));
    out
}

/// Beside the job's idle figures: what its nodes were doing over the detail pane's last hour
/// (the history source's evidence, when it holds this job's). Each finding with its figure,
/// ceiling and time; a figure without data says so; a node with nothing at a ceiling shows its
/// figures, so a clean line is a measurement, never an assumption.
pub fn evidence<'a>(cx: &Cx<'a>, j: &crate::model::Job) -> Vec<Line<'a>> {
    use super::fmt::rate;
    use crate::model::protocol::Focus;
    use crate::sanitize::sanitize;
    let t = cx.tones;
    let Some(ev) =
        cx.s.focus_history
            .as_ref()
            .filter(|h| matches!(h.focus, Focus::Job(id, _) if id == j.id))
            .and_then(|h| h.evidence.as_deref())
    else {
        return Vec::new();
    };
    let mins = (ev.end - ev.start) / 60;
    let mut out = vec![section(cx, &format!("Evidence on its nodes (last {mins} min, Prometheus)"))];
    for f in &ev.findings {
        out.push(kv(cx, "finding", Cell::new(sanitize(&f.text).into_owned(), t.warn)));
    }
    let quiet: Vec<&crate::model::evidence::NodeEvidence> =
        ev.nodes.iter().filter(|n| !ev.findings.iter().any(|f| f.node == n.node)).collect();
    for n in quiet.iter().take(4) {
        let pct =
            |v: Option<f64>| v.map_or_else(|| "no data".to_string(), |v| format!("{:.0}% busy", 100.0 * v));
        let errs = match (n.ib_errors_received, n.ib_link_downed) {
            (None, None) => "no data".to_string(),
            (e, d) => format!("{:.0} errors, {:.0} downs", e.unwrap_or(0.0), d.unwrap_or(0.0)),
        };
        let text = format!(
            "{}: nothing at a ceiling; storage {}, disk {}, CPU {}, IB {errs}",
            sanitize(&n.node),
            n.storage.mean.map_or_else(|| "no data".to_string(), rate),
            pct(n.disk.mean),
            pct(n.cpu.mean),
        );
        out.push(kv(cx, "measured", Cell::new(text, t.text)));
    }
    if quiet.len() > 4 {
        out.push(kv(cx, "", Cell::new(format!("and {} more nodes", quiet.len() - 4), t.dim)));
    }
    for m in &ev.no_data {
        out.push(kv(cx, "no data", Cell::new(sanitize(m).into_owned(), t.dim)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::resample;

    #[test]
    fn resampling_averages_spans_and_keeps_gaps() {
        let v = [Some(10.0), Some(30.0), None, None, Some(50.0), None];
        assert_eq!(resample(&v, 3), vec![Some(20.0), None, Some(50.0)]);
        assert_eq!(resample(&v, 10), v.to_vec(), "never stretched");
        assert!(resample(&v, 0).is_empty());
        assert!(resample(&[], 5).is_empty());
    }
}
