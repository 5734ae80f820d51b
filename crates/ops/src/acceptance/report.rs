//! Text for people and scripts: `gpuplane acceptance parse FILE` and `gpuplane get acceptance`.

use super::judge::Verdict;
use super::parse::{NcclRun, ParseError};
use super::store::RunRecord;
use crate::sanitize::sanitize;
use std::fmt::Write;

/// `8589934592` → `8G`, `1024` → `1K`, `1000` → `1000`.
pub fn size_label(b: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(1 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (u, s) in UNITS {
        if b >= u && b.is_multiple_of(u) {
            return format!("{}{s}", b / u);
        }
    }
    b.to_string()
}

fn wrong(w: Option<u64>) -> String {
    w.map_or_else(|| "N/A".into(), |w| w.to_string())
}

/// The human report of a parse: versions, devices, per-size rows, summary, errors.
pub fn parse_text(r: &NcclRun) -> String {
    let mut o = String::new();
    let v = |x: &Option<String>| x.clone().unwrap_or_else(|| "-".into());
    let _ = writeln!(
        o,
        "collective {}  nccl-tests {}  NCCL {}",
        v(&r.collective),
        v(&r.tests_version),
        v(&r.nccl_version)
    );
    let _ = writeln!(o, "\ndevices: {}", r.devices.len());
    if !r.devices.is_empty() {
        let _ = writeln!(
            o,
            "{:>5} {:>5} {:>8}  {:<20} {:>3}  {:<14} MODEL",
            "RANK", "GROUP", "PID", "HOST", "DEV", "BUS"
        );
        for d in &r.devices {
            let g = d.group.map_or_else(|| "-".into(), |g| g.to_string());
            let _ = writeln!(
                o,
                "{:>5} {:>5} {:>8}  {:<20} {:>3}  {:<14} {}",
                d.rank, g, d.pid, d.host, d.device, d.bus_id, d.model
            );
        }
    }
    for (i, s) in r.sweeps.iter().enumerate() {
        let _ = writeln!(o, "\nsweep {} of {}: {} sizes", i + 1, r.sweeps.len(), s.rows.len());
        let _ = writeln!(
            o,
            "{:>6} {:>12} {:>6} {:>5}   {:>9} {:>8} {:>8} {:>6}   {:>9} {:>8} {:>8} {:>6}",
            "SIZE",
            "COUNT",
            "TYPE",
            "OP",
            "OOP-us",
            "ALGBW",
            "BUSBW",
            "WRONG",
            "IP-us",
            "ALGBW",
            "BUSBW",
            "WRONG"
        );
        for row in &s.rows {
            let (a, b) = (&row.out_of_place, &row.in_place);
            let _ = writeln!(
                o,
                "{:>6} {:>12} {:>6} {:>5}   {:>9.1} {:>8.2} {:>8.2} {:>6}   {:>9.1} {:>8.2} {:>8.2} {:>6}",
                size_label(row.size),
                row.count,
                row.dtype,
                row.redop.as_deref().unwrap_or("-"),
                a.time_us,
                a.algbw,
                a.busbw,
                wrong(a.wrong),
                b.time_us,
                b.algbw,
                b.busbw,
                wrong(b.wrong)
            );
        }
        let oob = s.out_of_bounds.map_or_else(|| "-".into(), |v| v.to_string());
        let avg = s.avg_busbw.map_or_else(|| "-".into(), |v| format!("{v:.3} GB/s"));
        let _ = writeln!(o, "out of bounds values {oob}; avg bus bandwidth {avg}");
    }
    let _ = writeln!(o);
    if let Some(p) = r.peak_busbw() {
        let _ = writeln!(o, "peak busbw      {p:.2} GB/s");
    }
    if let Some((size, bw)) = r.largest() {
        let _ = writeln!(o, "busbw at {:<6} {bw:.2} GB/s", size_label(size));
    }
    if let Some(a) = r.avg_busbw() {
        let _ = writeln!(o, "avg busbw       {a:.3} GB/s (all sizes)");
    }
    if r.errors.is_empty() && r.wrong() == 0 {
        let _ = writeln!(o, "errors          none");
    } else {
        let _ = writeln!(o, "errors          {} (wrong values: {})", r.errors.len(), r.wrong());
        for e in &r.errors {
            let _ = writeln!(o, "  {e}");
        }
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// What a failed parse says, with what it read.
pub fn parse_error_text(e: &ParseError) -> String {
    let mut o = format!("{e}\n");
    if e.partial.rows().next().is_some() || !e.partial.devices.is_empty() {
        o.push_str("\nread before the problem:\n");
        o.push_str(&parse_text(&e.partial));
    }
    o
}

/// Columns of `gpuplane get acceptance` (table: all but the wide-only ones).
pub const COLUMNS: [(&str, bool); 14] = [
    ("RUN", false),
    ("SUBMITTED", false),
    ("MODE", false),
    ("NODES", false),
    ("JOB", false),
    ("STATE", true),
    ("SHAPE", false),
    ("BUSBW", false),
    ("BASELINE", true),
    ("PCT", false),
    ("VERDICT", false),
    ("NCCL", true),
    ("DRIVER", true),
    ("WHY", true),
];

/// When a run was submitted, in the display zone, named (`2026-01-01 14:25:07 EST`).
fn time(at: i64) -> String {
    jiff::Timestamp::from_second(at).map(crate::clock::stamp_secs).unwrap_or_default()
}

/// One record as the columns' text (sanitised).
pub fn row_cells(r: &RunRecord) -> Vec<String> {
    let j = r.judgement.as_ref();
    let s = |x: &str| sanitize(x).into_owned();
    let opt = |x: &Option<String>| x.as_deref().map(s).unwrap_or_else(|| "-".into());
    let bw = |x: Option<f64>| x.map_or_else(|| "-".into(), |v| format!("{v:.1}"));
    vec![
        r.id.chars().take(8).collect(),
        time(r.submitted_at),
        r.mode.label().into(),
        s(&r.nodes.join(",")),
        opt(&r.job_id),
        opt(&r.job_state),
        s(&r.shape()),
        bw(r.busbw),
        bw(j.and_then(|j| j.baseline)),
        j.and_then(|j| j.pct).map_or_else(|| "-".into(), |p| format!("{p:.0}%")),
        j.map_or("pending", |j| j.verdict.label()).into(),
        opt(&r.nccl),
        opt(&r.driver),
        j.map_or_else(|| opt(&r.error), |j| s(&j.why)),
    ]
}

pub fn verdict_rank(v: Option<Verdict>) -> u8 {
    match v {
        Some(Verdict::Fail) => 3,
        Some(Verdict::Degraded) => 2,
        Some(Verdict::Pass) => 1,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size_label(8), "8");
        assert_eq!(size_label(1024), "1K");
        assert_eq!(size_label(8_589_934_592), "8G");
        assert_eq!(size_label(1000), "1000");
    }

    #[test]
    fn report_of_the_sample() {
        let r = super::super::parse::parse(include_bytes!(
            "../../../../tests/fixtures/nccl/01_h100x16_2node_gcp_a3mega_allreduce.txt"
        ))
        .unwrap();
        let t = parse_text(&r);
        assert!(t.contains("devices: 16"), "{t}");
        assert!(t.contains("ztan-mig-gq73"), "{t}");
        assert!(t.contains("peak busbw      338.82 GB/s"), "{t}");
        assert!(t.contains("busbw at 8G     338.82 GB/s"), "{t}");
        assert!(t.contains("avg busbw       70.742 GB/s"), "{t}");
        assert!(t.contains("errors          none"), "{t}");
        assert_eq!(
            t.lines()
                .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()) && l.contains("float"))
                .count(),
            31
        );
    }
}
