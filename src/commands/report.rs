//! `gpuplane report cost --from DATE [--to DATE] --by team|user|account -o csv|json|markdown`:
//! the chargeback of a window from the usage ledger, priced and split exactly as the Cost view
//! splits it (the same [`crate::cost::bill`]), so its TOTAL row equals the view's total.

use super::target_cluster;
use crate::cli::{ReportBy, ReportCommand, ReportCostArgs, ReportFailuresArgs, ReportOutput};
use crate::config::Config;
use crate::cost::bill::{Bill, Dimension, Share};
use crate::cost::{Basis, CostReport};
use crate::model::Epoch;
use crate::state::ClusterState;
use std::process::ExitCode;

pub fn run(cmd: &ReportCommand, config: &Config) -> ExitCode {
    match cmd {
        ReportCommand::Cost(a) => cost(a, config),
        ReportCommand::Failures(a) => failures(a, config),
        ReportCommand::Job { id, output } => job(*id, *output, config),
    }
}

/// The cluster a report is about, read once; an error is said on stderr and is the exit status.
fn read_cluster(config: &Config) -> Result<crate::state::ClusterState, ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
        eprintln!("gpuplane: {e}");
        ExitCode::FAILURE
    })?;
    rt.block_on(target_cluster(config)).map(|(s, _, _)| s).map_err(|e| {
        eprintln!("gpuplane: cannot read the cluster: {e}");
        ExitCode::from(2)
    })
}

fn job(id: u64, output: ReportOutput, config: &Config) -> ExitCode {
    let Some(dir) = &config.ledger_dir else {
        eprintln!("gpuplane: report job reads the usage ledger, and [ledger] enabled = false");
        return ExitCode::from(2);
    };
    let state = match read_cluster(config) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut tracker = crate::cost::track::Tracker::for_state(&state);
    let path = crate::store::ledger::path_for(dir, &tracker.ledger_name(&state));
    let found = crate::store::Ledger::open(&path).and_then(|mut l| {
        if let Some(o) = tracker.observe(&state) {
            l.record(&[o])?;
        }
        let job = l.job(id)?;
        Ok((l, job))
    });
    let (mut ledger, rec, intervals) = match found {
        Ok((l, Some((r, i)))) => (l, r, i),
        Ok((_, None)) => {
            eprintln!("gpuplane: job {id} is not in the ledger of {} ({})", state.cluster, path.display());
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("gpuplane: {e}");
            return ExitCode::from(2);
        }
    };
    let mut e = crate::cost::eff::job(&rec, &intervals, &config.efficiency);
    telemetry(&mut e, &rec, &intervals, &state, config);
    keep_or_restore(&mut e, &rec, &mut ledger, config);
    let text = match output {
        ReportOutput::Json => serde_json::to_value(&e)
            .map(|mut v| {
                super::machine::report_times(&mut v, &crate::clock::zone());
                v
            })
            .and_then(|v| crate::sanitize::json_pretty(&v))
            .map(|s| s + "\n")
            .map_err(|e| e.to_string()),
        ReportOutput::Markdown | ReportOutput::Csv => Ok(job_markdown(&e)),
        ReportOutput::Text => Ok(job_text(&e)),
    };
    match text {
        Ok(t) => {
            print!("{t}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Adds what Prometheus measured over the job's run (and, when its GPUs idled, the evidence on
/// its nodes), when one is configured; says why not otherwise (`telemetry_missing`).
fn telemetry(
    e: &mut crate::cost::eff::JobEfficiency,
    rec: &crate::store::JobRecord,
    intervals: &[crate::store::GpuInterval],
    state: &ClusterState,
    config: &Config,
) {
    use crate::backend::prom::PromClient;
    let Some(cfg) = &config.prometheus else {
        e.telemetry_missing = Some("no Prometheus configured ([prometheus] url)".into());
        return;
    };
    // The placement: GPUs the ledger saw it hold, and those it holds now.
    let mut gpus = crate::cost::summary::placement(intervals);
    for n in &state.nodes {
        gpus.extend(n.gpus.iter().filter(|g| g.job == Some(rec.id)).map(|g| (n.name.clone(), g.index)));
    }
    gpus.sort();
    gpus.dedup();
    let end = rec.end.unwrap_or(state.now);
    let (rules, prices) = (&config.efficiency, &config.prices);
    let Some(want) = crate::cost::summary::wanted(e, rec, gpus, end, rules, prices) else { return };
    let done = PromClient::new(cfg).map_err(|e| e.to_string()).and_then(|client| {
        let rt =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let f = rt.block_on(crate::backend::prom::figures::measure(&client, cfg, want));
        crate::cost::summary::apply(e, rec, f, rules, prices)
    });
    if let Err(err) = done {
        eprintln!("gpuplane: prometheus: {err}");
        if e.telemetry.is_none() && e.telemetry_missing.is_none() {
            e.telemetry_missing = Some(format!("prometheus: {err}"));
        }
    }
}

/// A finished job's Prometheus figures are kept in the ledger; when Prometheus has nothing
/// (forgotten, unreachable, not configured), the summary the ledger recorded answers instead.
fn keep_or_restore(
    e: &mut crate::cost::eff::JobEfficiency,
    rec: &crate::store::JobRecord,
    ledger: &mut crate::store::Ledger,
    config: &Config,
) {
    use crate::cost::eff::Summary;
    if rec.end.is_none() {
        return;
    }
    if let Some(s) = Summary::of(e) {
        match serde_json::to_string(&s) {
            Ok(json) => {
                let now = jiff::Timestamp::now().as_second();
                if let Err(err) = ledger.put_summary(rec.id, now, &json) {
                    eprintln!("gpuplane: {err}");
                }
            }
            Err(err) => eprintln!("gpuplane: job summary: {err}"),
        }
        return;
    }
    match ledger.summary(rec.id) {
        Ok(Some((at, json))) => match serde_json::from_str::<Summary>(&json) {
            Ok(s) => {
                let why = e.telemetry_missing.take();
                crate::cost::eff::from_ledger(e, rec, s, at, &config.efficiency);
                if let Some(why) = why {
                    eprintln!(
                        "gpuplane: {why}; the figures are the ledger's, recorded at {}",
                        crate::clock::stamp(at)
                    );
                }
            }
            Err(err) => eprintln!("gpuplane: the ledger's summary of job {}: {err}", rec.id),
        },
        Ok(None) => {}
        Err(err) => eprintln!("gpuplane: {err}"),
    }
}

/// A figure or `-` when it has no data.
fn fig(v: Option<f64>, unit: &str, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.decimals$}{unit}"))
}

/// A job's efficiency as plain text (the markdown's facts without its markup).
pub fn job_text(e: &crate::cost::eff::JobEfficiency) -> String {
    let md = job_markdown(e);
    let mut o = String::new();
    for line in md.lines() {
        let l = line.trim_start_matches("# ").trim_start_matches("## ").trim_start_matches("- ");
        if l.starts_with("|---") {
            continue;
        }
        let l = l.replace("**", "");
        let l = if l.starts_with('|') {
            l.trim_matches('|').split(" | ").map(str::trim).collect::<Vec<_>>().join("  ")
        } else {
            l
        };
        o.push_str(&l);
        o.push('\n');
    }
    o
}

/// A job's efficiency for people. Cluster text (names) is sanitised.
pub fn job_markdown(e: &crate::cost::eff::JobEfficiency) -> String {
    use crate::sanitize::sanitize;
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "# Job {} {} ({})\n", e.id, sanitize(&e.name), sanitize(&e.state));
    let _ = writeln!(o, "- user {} · account {}", sanitize(&e.user), sanitize(&e.account));
    let when = |t: Option<Epoch>| t.map_or_else(|| "-".to_string(), crate::clock::stamp);
    let _ = writeln!(o, "- ran {} to {} ({})", when(e.start), when(e.end), crate::clock::dur(e.run_s));
    let model = e.gpu_model.as_deref().map(sanitize).unwrap_or_default();
    let _ = writeln!(o, "- {} GPU(s) {model}, {:.2} GPU-hours", e.gpus, e.gpu_hours);
    let util = e.util.map_or_else(|| "not recorded".to_string(), |u| format!("{u:.1}%"));
    let _ = writeln!(o, "- GPU utilisation (weighted by GPU-hours, from the ledger): {util}");
    if let (Some(l), Some(p)) = (e.time_limit_s, e.time_limit_used) {
        let _ = writeln!(o, "- time limit {}: {p:.0}% used", crate::clock::dur(l));
    } else if let Some(l) = e.time_limit_s {
        let _ = writeln!(o, "- time limit {}", crate::clock::dur(l));
    }
    o.push('\n');
    let _ = writeln!(o, "| node | GPU | GPU-hours | util % |\n|---|---:|---:|---:|");
    for g in &e.per_gpu {
        let idx = g.gpu.map_or_else(|| format!("{} GPUs", g.gpus), |i| i.to_string());
        let u = g.util.map_or_else(|| "-".to_string(), |u| format!("{u:.1}"));
        let _ =
            writeln!(o, "| {} | {idx} | {:.2} | {u} |", sanitize(&g.node).replace('|', "\\|"), g.gpu_hours);
    }
    match (&e.telemetry, &e.telemetry_missing) {
        (Some(t), _) => {
            let origin = match t.recorded_at {
                Some(at) if t.source == "ledger" => {
                    format!(" (from the ledger, recorded at {})", crate::clock::stamp(at))
                }
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "\n## From Prometheus{origin}\n\n- {} to {}, GPUs selected by {}; idle stretches at {} s steps",
                when(Some(t.start)),
                when(Some(t.end)),
                sanitize(&t.selected_by),
                t.step_s
            );
            let _ = writeln!(
                o,
                "- GPU utilisation (weighted by GPU-hours): {} · SM {} · tensor {} · DRAM {}",
                fig(t.util, "%", 1),
                fig(t.sm_active, "%", 1),
                fig(t.tensor_active, "%", 1),
                fig(t.dram_active, "%", 1)
            );
            let gib = |m: Option<f64>| m.map(|m| m / 1024.0);
            let _ = writeln!(
                o,
                "- GPU memory peak {} of {} · energy {} · power mean {} peak {}",
                fig(gib(t.mem_peak_mib), " GiB", 1),
                fig(gib(t.mem_total_mib), " GiB", 1),
                fig(t.energy_kwh, " kWh", 2),
                fig(t.power_mean_w, " W", 0),
                fig(t.power_peak_w, " W", 0)
            );
            let idle = t.idle_longest_s.map_or_else(|| "-".to_string(), crate::clock::dur);
            let never = if t.never_ran.is_empty() { "none".to_string() } else { t.never_ran.join(", ") };
            let _ = writeln!(o, "- longest idle stretch {idle} · GPUs that never ran a process: {never}\n");
            let _ = writeln!(
                o,
                "| node | GPU | util % | field | SM % | tensor % | DRAM % | mem peak MiB | mem MiB | kWh | W mean | W peak | longest idle |"
            );
            let _ = writeln!(o, "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for g in &t.gpus {
                let gpu = match (&g.mig_instance, &g.mig_profile) {
                    (Some(i), Some(p)) => format!("{} slice {} ({})", g.gpu, i, p),
                    (Some(i), None) => format!("{} slice {i}", g.gpu),
                    _ => g.gpu.clone(),
                };
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    sanitize(&g.node).replace('|', "\\|"),
                    sanitize(&gpu).replace('|', "\\|"),
                    fig(g.util, "", 1),
                    sanitize(&g.util_field),
                    fig(g.sm_active, "", 1),
                    fig(g.tensor_active, "", 1),
                    fig(g.dram_active, "", 1),
                    fig(g.mem_peak_mib, "", 0),
                    fig(g.mem_total_mib, "", 0),
                    fig(g.energy_kwh, "", 3),
                    fig(g.power_mean_w, "", 0),
                    fig(g.power_peak_w, "", 0),
                    g.idle_longest_s.map_or_else(|| "-".to_string(), crate::clock::dur),
                );
            }
        }
        (None, Some(why)) => {
            let _ = writeln!(o, "\nNo Prometheus figures: {}.", sanitize(why));
        }
        (None, None) => {}
    }
    evidence_markdown(&mut o, e);
    if !e.notes.is_empty() {
        o.push_str("\n## Notes\n\n");
        for n in &e.notes {
            let tag = match n.level {
                crate::cost::eff::Level::Red => "RED",
                crate::cost::eff::Level::Warn => "WARN",
                crate::cost::eff::Level::Info => "INFO",
            };
            let _ = writeln!(o, "- **{tag}** {}", n.text);
        }
    }
    o
}

/// The evidence seen on the job's nodes while its GPUs idled: the findings, each node's
/// figures beside their ceilings, and what had no data.
fn evidence_markdown(o: &mut String, e: &crate::cost::eff::JobEfficiency) {
    use crate::sanitize::sanitize;
    use crate::tables::fmt::rate as rate_text;
    use std::fmt::Write;
    let Some(ev) = &e.evidence else {
        if let Some(why) = &e.evidence_missing {
            let _ = writeln!(o, "\nNo evidence from the nodes: {}.", sanitize(why));
        }
        return;
    };
    let c = &ev.ceilings;
    let _ = writeln!(
        o,
        "\n## Evidence on its nodes\n\n- {} to {}, sampled every {} s; ceilings: storage {}, disk {:.0}% busy, CPU {:.0}% busy (at {:.0}% of a ceiling for {} or more)",
        crate::clock::stamp(ev.start),
        crate::clock::stamp(ev.end),
        ev.step_s,
        rate_text(c.storage_bytes_s),
        100.0 * c.disk_busy,
        100.0 * c.cpu_busy,
        100.0 * c.near,
        crate::clock::dur(c.min_s)
    );
    if ev.findings.is_empty() {
        let _ = writeln!(o, "- nothing at a ceiling in what was measured");
    }
    for f in &ev.findings {
        let _ = writeln!(o, "- **{}**", sanitize(&f.text));
    }
    for m in &ev.no_data {
        let _ = writeln!(o, "- {}", sanitize(m));
    }
    let pct = |v: Option<f64>| fig(v.map(|v| 100.0 * v), "%", 0);
    let secs = |s: Option<i64>| s.map_or_else(|| "-".to_string(), crate::clock::dur);
    let _ = writeln!(
        o,
        "\n| node | storage mean | storage peak | at ceiling | disk busy mean | at ceiling | CPU busy mean | at ceiling | IB rcv errors | IB symbol errors | IB link downs |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in &ev.nodes {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            sanitize(&n.node).replace('|', "\\|"),
            n.storage.mean.map_or_else(|| "-".to_string(), rate_text),
            n.storage.peak.map_or_else(|| "-".to_string(), rate_text),
            secs(n.storage.at_ceiling_s),
            pct(n.disk.mean),
            secs(n.disk.at_ceiling_s),
            pct(n.cpu.mean),
            secs(n.cpu.at_ceiling_s),
            fig(n.ib_errors_received, "", 0),
            fig(n.ib_symbol_errors, "", 0),
            fig(n.ib_link_downed, "", 0),
        );
    }
}

/// A date (`2026-11-01`, midnight UTC) or an RFC 3339 time, as seconds since the epoch.
pub fn parse_time(s: &str) -> Result<Epoch, String> {
    let s = s.trim();
    if let Ok(d) = s.parse::<jiff::civil::Date>() {
        return d
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map(|z| z.timestamp().as_second())
            .map_err(|e| format!("{s:?}: {e}"));
    }
    s.parse::<jiff::Timestamp>().map(|t| t.as_second()).map_err(|_| {
        format!("{s:?} is neither a date (2026-11-01) nor an RFC 3339 time (2026-11-01T08:00:00Z)")
    })
}

fn dimension(by: ReportBy) -> Dimension {
    match by {
        ReportBy::Team => Dimension::Team,
        ReportBy::User => Dimension::User,
        ReportBy::Account => Dimension::Account,
        ReportBy::Cluster => Dimension::Cluster,
    }
}

fn cost(a: &ReportCostArgs, config: &Config) -> ExitCode {
    let mut r = match range_report(&a.from, a.to.as_deref(), config) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Some(d) = &config.prices.denominator {
        match denominator(d, r.bill.from, r.bill.to, config) {
            Ok(units) => r.bill.set_units(d.label(), units),
            Err(e) => {
                eprintln!("gpuplane: the unit cost's denominator ([prices.denominator]): {e}");
                return ExitCode::from(2);
            }
        }
    }
    let by = dimension(a.by);
    let out = match a.output {
        ReportOutput::Csv => csv(&r.bill, by),
        ReportOutput::Json => json(&r, by),
        ReportOutput::Markdown | ReportOutput::Text => markdown(&r.bill, by),
    };
    emit(out)
}

fn failures(a: &ReportFailuresArgs, config: &Config) -> ExitCode {
    let r = match range_report(&a.from, a.to.as_deref(), config) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let out = match a.output {
        ReportOutput::Csv => failures_csv(&r.bill),
        ReportOutput::Json => failures_json(&r),
        ReportOutput::Markdown | ReportOutput::Text => failures_markdown(&r.bill),
    };
    emit(out)
}

/// The units of `[prices.denominator]` over `[from, to]`: its PromQL, `$window` replaced by the
/// window's length, evaluated at `to`. Anything but one finite number, zero or more, is an
/// error: a missing `[prometheus]`, an unreachable server, a bad query, no series or several.
pub fn denominator(
    d: &crate::model::Denominator,
    from: Epoch,
    to: Epoch,
    config: &Config,
) -> Result<f64, String> {
    let Some(pc) = &config.prometheus else {
        return Err("it is a PromQL query and no Prometheus is configured ([prometheus] url)".into());
    };
    let client = crate::backend::prom::PromClient::new(pc).map_err(|e| e.to_string())?;
    let expr = d.expression(to - from);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let body = rt.block_on(client.query(&expr, Some(to as f64))).map_err(|e| format!("{expr}: {e}"))?;
    let answer = body.parse().map_err(|e| format!("{expr}: {e}"))?;
    let n = answer.results.len();
    match answer.results.scalar() {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Some(v) => Err(format!("{expr} returned {v}, not a count")),
        None => Err(format!(
            "{expr} returned {n} series at {}; it must return one number (wrap it in sum(...))",
            crate::clock::stamp(to)
        )),
    }
}

fn emit(out: Result<String, String>) -> ExitCode {
    match out {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The report of `[from, to)` from the ledger, what it does not cover said on stderr.
fn range_report(from: &str, to: Option<&str>, config: &Config) -> Result<CostReport, ExitCode> {
    let from = match parse_time(from) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gpuplane: bad --from: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let to = match to.map(parse_time) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            eprintln!("gpuplane: bad --to: {e}");
            return Err(ExitCode::from(2));
        }
    };
    if to.is_some_and(|t| t <= from) {
        eprintln!("gpuplane: --to must be after --from");
        return Err(ExitCode::from(2));
    }
    let state = read_cluster(config)?;
    let to = to.unwrap_or(state.now);
    if from >= state.now {
        eprintln!("gpuplane: --from {} is not in the past", crate::clock::stamp(from));
        return Err(ExitCode::from(2));
    }
    if to > state.now {
        eprintln!(
            "gpuplane: --to is in the future; the report ends now ({})",
            crate::clock::stamp(state.now)
        );
    }
    let r = cost_report(&state, from, to, config);
    if let Some(since) = r.data_since {
        eprintln!("gpuplane: {}", crate::cost::capacity_note(since, r.until));
    }
    if let Basis::Console = r.basis {
        eprintln!("gpuplane: no ledger ([ledger] enabled = false): only the jobs read now are counted");
    }
    Ok(r)
}

/// The window from the ledger (the current look recorded first, as `get cost` does).
fn cost_report(state: &ClusterState, from: Epoch, to: Epoch, config: &Config) -> CostReport {
    let Some(dir) = &config.ledger_dir else {
        return crate::cost::report_console_range(state, from, to, Basis::Console);
    };
    match super::ledger_windows(state, dir, from, to.min(state.now)) {
        Ok(w) => super::ledger_report(state, from, to, &w),
        Err(e) => {
            eprintln!("gpuplane: {e}; cost from what was read now");
            crate::cost::report_console_range(state, from, to, Basis::Unavailable { why: e.to_string() })
        }
    }
}

/// The report's rows: the shares along `by`, then the totals row.
pub fn rows(b: &Bill, by: Dimension) -> Vec<Share> {
    let mut v = b.shares(by).to_vec();
    v.push(b.totals());
    v
}

const COLUMNS: [&str; 10] = [
    "jobs",
    "gpu_hours",
    "useful",
    "allocated_idle",
    "unmeasured",
    "unallocated",
    "unhealthy",
    "failed",
    "overhead",
    "total",
];

/// USEFUL of a row ([`crate::cost::bill::Parts::useful_pct`]), after the money columns.
const USEFUL_PCT: &str = "useful_pct";

fn values(s: &Share) -> [f64; 10] {
    let p = &s.parts;
    [
        f64::from(s.jobs),
        s.gpu_hours,
        p.useful,
        p.allocated_idle,
        p.unmeasured,
        p.unallocated,
        p.unhealthy,
        p.failed,
        p.overhead,
        s.total,
    ]
}

/// A number for machine formats: at most 4 decimals, no exponent, no currency sign.
fn plain(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let s = format!("{:.4}", (v * 1e4).round() / 1e4);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

pub fn csv(b: &Bill, by: Dimension) -> Result<String, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = std::iter::once(by.label()).chain(COLUMNS).chain([USEFUL_PCT]);
    w.write_record(header).map_err(|e| e.to_string())?;
    for s in rows(b, by) {
        let name = crate::sanitize::sanitize(&s.name);
        let vals = values(&s).map(plain);
        let useful = s.useful_pct().map(plain).unwrap_or_default();
        w.write_record(
            std::iter::once(name.as_ref()).chain(vals.iter().map(String::as_str)).chain([useful.as_str()]),
        )
        .map_err(|e| e.to_string())?;
    }
    String::from_utf8(w.into_inner().map_err(|e| e.to_string())?).map_err(|e| e.to_string())
}

pub fn json(r: &CostReport, by: Dimension) -> Result<String, String> {
    let b = &r.bill;
    let row = |s: &Share| {
        let mut m = serde_json::Map::new();
        m.insert(by.label().into(), s.name.clone().into());
        for (k, v) in COLUMNS.iter().zip(values(s)) {
            m.insert((*k).into(), serde_json::json!((v * 1e4).round() / 1e4));
        }
        m.insert(USEFUL_PCT.into(), serde_json::json!(s.useful_pct().map(|v| (v * 1e4).round() / 1e4)));
        serde_json::Value::Object(m)
    };
    let ts = |t: Epoch| jiff::Timestamp::from_second(t).map(|t| t.to_string()).unwrap_or_default();
    let v = serde_json::json!({
        "from": ts(b.from),
        "to": ts(b.to),
        "by": by.label(),
        "currency": b.currency,
        "data_since": r.data_since.map(ts),
        // The GPUs no job held are counted only since the ledger began: the total is at least.
        "capacity_since": r.data_since.map(ts),
        "total_is_lower_bound": r.data_since.is_some(),
        "basis": r.basis,
        "rows": b.shares(by).iter().map(row).collect::<Vec<_>>(),
        "totals": row(&b.totals()),
        "gpu_hours": b.gpu_hours,
        "overhead_lines": b.overhead_lines.iter().map(|(k, v)| serde_json::json!({"line": k, "cost": v})).collect::<Vec<_>>(),
        "committed": b.committed,
        "rates": b.rates,
        "unit": b.unit_label(),
        "units": b.units,
        "unit_cost": b.unit_cost,
        "budgets": b.budgets.iter().map(|u| serde_json::json!({
            "team": u.team,
            "monthly": u.monthly,
            "spent": u.spent,
            "burn_per_day": u.burn_per_day,
            "runs_out": u.runs_out.map(ts),
        })).collect::<Vec<_>>(),
    });
    crate::sanitize::json_pretty(&v).map(|s| s + "\n").map_err(|e| e.to_string())
}

pub fn markdown(b: &Bill, by: Dimension) -> Result<String, String> {
    use std::fmt::Write;
    let mut o = String::new();
    let cur = &b.currency;
    let _ = writeln!(o, "# GPU cost {} to {}\n", crate::clock::stamp(b.from), crate::clock::stamp(b.to));
    let _ = writeln!(o, "| {} | {} | {USEFUL_PCT} |", by.label(), COLUMNS.join(" | "));
    let _ = writeln!(o, "|---|{}", "---:|".repeat(COLUMNS.len() + 1));
    for s in rows(b, by) {
        let v = values(&s);
        let name = crate::sanitize::sanitize(&s.name).replace('|', "\\|");
        let name = if s.name == crate::cost::bill::TOTAL { format!("**{name}**") } else { name };
        let _ = write!(o, "| {name} | {} | {:.1} |", v[0], v[1]);
        for x in &v[2..] {
            let _ = write!(o, " {x:.2} |");
        }
        let _ = write!(o, " {} |", s.useful_pct().map_or_else(|| "-".to_string(), |p| format!("{p:.1}")));
        o.push('\n');
    }
    let _ = writeln!(
        o,
        "\nMoney in {cur}. Every part is defined in `gpuplane report cost --help` and docs/cost.md."
    );
    if let Some(u) = b.unit_cost {
        let _ =
            writeln!(o, "Effective unit cost: {u:.2} {cur} per {} ({} of them).", b.unit_label(), b.units);
    } else {
        let _ = writeln!(o, "Effective unit cost: none ({} count 0).", b.unit_label());
    }
    for u in &b.budgets {
        let out = u.runs_out.map_or_else(
            || "lasts the month".to_string(),
            |t| format!("runs out {}", crate::clock::stamp(t)),
        );
        let _ = writeln!(
            o,
            "Budget {}: {:.2} {cur}/month, spent {:.2}, burning {:.2} {cur}/day: {out}.",
            crate::sanitize::sanitize(&u.team),
            u.monthly,
            u.spent,
            u.burn_per_day
        );
    }
    if b.committed > 0.0 {
        let _ = writeln!(o, "Reserved commitments for the window: {:.2} {cur} (paid in full).", b.committed);
    }
    Ok(o)
}

const FAILURE_COLUMNS: [&str; 11] = [
    "section",
    "cause",
    "team",
    "queue",
    "job",
    "jobs",
    "gpu_hours",
    "cost",
    "in_failed",
    "longest_wait_s",
    "detail",
];

/// `report failures -o csv`: one table, its `section` column saying what a row is: `cause`
/// (every cause, then a `TOTAL` of the failed ones, which equals `report cost`'s failed part),
/// `burner` (the top burners) or `wait` (queue wait per team and queue).
pub fn failures_csv(b: &Bill) -> Result<String, String> {
    use crate::sanitize::sanitize;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(FAILURE_COLUMNS).map_err(|e| e.to_string())?;
    let mut rows: Vec<[String; 11]> = Vec::new();
    let e = String::new;
    for c in &b.causes {
        rows.push([
            "cause".into(),
            c.cause.label().into(),
            e(),
            e(),
            e(),
            c.jobs.to_string(),
            plain(c.gpu_hours),
            plain(c.cost),
            c.failed.to_string(),
            e(),
            e(),
        ]);
    }
    rows.push([
        "cause".into(),
        crate::cost::bill::TOTAL.into(),
        e(),
        e(),
        e(),
        b.causes.iter().filter(|c| c.failed).map(|c| c.jobs).sum::<u32>().to_string(),
        plain(b.gpu_hours.failed),
        plain(b.parts.failed),
        "true".into(),
        e(),
        e(),
    ]);
    for x in &b.burners {
        rows.push([
            "burner".into(),
            x.cause.label().into(),
            sanitize(&x.team).into_owned(),
            e(),
            x.id.to_string(),
            "1".into(),
            plain(x.gpu_hours),
            plain(x.cost),
            x.cause.is_failure().to_string(),
            e(),
            sanitize(&x.detail).into_owned(),
        ]);
    }
    for x in &b.waits {
        rows.push([
            "wait".into(),
            e(),
            sanitize(&x.team).into_owned(),
            sanitize(&x.queue).into_owned(),
            e(),
            x.jobs.to_string(),
            plain(x.gpu_hours),
            e(),
            e(),
            x.longest_s.to_string(),
            e(),
        ]);
    }
    for r in rows {
        w.write_record(&r).map_err(|e| e.to_string())?;
    }
    String::from_utf8(w.into_inner().map_err(|e| e.to_string())?).map_err(|e| e.to_string())
}

pub fn failures_json(r: &CostReport) -> Result<String, String> {
    let b = &r.bill;
    let ts = |t: Epoch| jiff::Timestamp::from_second(t).map(|t| t.to_string()).unwrap_or_default();
    let round = |v: f64| (v * 1e4).round() / 1e4;
    let v = serde_json::json!({
        "from": ts(b.from),
        "to": ts(b.to),
        "currency": b.currency,
        "data_since": r.data_since.map(ts),
        "basis": r.basis,
        "causes": b.causes.iter().map(|c| serde_json::json!({
            "cause": c.cause, "in_failed": c.failed, "jobs": c.jobs,
            "gpu_hours": round(c.gpu_hours), "cost": round(c.cost),
        })).collect::<Vec<_>>(),
        "failed": {"gpu_hours": round(b.gpu_hours.failed), "cost": round(b.parts.failed)},
        "burners": b.burners.iter().map(|x| serde_json::json!({
            "job": x.id, "name": x.name, "user": x.user, "team": x.team, "cluster": x.cluster,
            "cause": x.cause, "detail": x.detail, "gpu_hours": round(x.gpu_hours), "cost": round(x.cost),
        })).collect::<Vec<_>>(),
        "waits": b.waits.iter().map(|x| serde_json::json!({
            "team": x.team, "queue": x.queue, "jobs": x.jobs,
            "gpu_hours": round(x.gpu_hours), "longest_s": x.longest_s,
        })).collect::<Vec<_>>(),
    });
    crate::sanitize::json_pretty(&v).map(|s| s + "\n").map_err(|e| e.to_string())
}

pub fn failures_markdown(b: &Bill) -> Result<String, String> {
    use crate::sanitize::sanitize;
    use std::fmt::Write;
    let cell = |s: &str| sanitize(s).replace('|', "\\|");
    let cur = &b.currency;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Failures and waits {} to {}\n",
        crate::clock::stamp(b.from),
        crate::clock::stamp(b.to)
    );
    let _ = writeln!(o, "| cause | runs | GPU-hours | cost | in failed |\n|---|---:|---:|---:|---|");
    for c in &b.causes {
        let _ = writeln!(
            o,
            "| {} | {} | {:.1} | {:.2} | {} |",
            c.cause.label(),
            c.jobs,
            c.gpu_hours,
            c.cost,
            if c.failed { "yes" } else { "no" }
        );
    }
    let _ = writeln!(o, "| **failed** | | {:.1} | {:.2} | |", b.gpu_hours.failed, b.parts.failed);
    let _ = writeln!(o, "\nMoney in {cur}. Preemption and user cancel are not in the failed part.");
    if !b.burners.is_empty() {
        let _ = writeln!(o, "\n## Top burners\n\n| job | name | user | cause | GPU-hours | cost | detail |");
        let _ = writeln!(o, "|---:|---|---|---|---:|---:|---|");
        for x in &b.burners {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {:.1} | {:.2} | {} |",
                x.id,
                cell(&x.name),
                cell(&x.user),
                x.cause.label(),
                x.gpu_hours,
                x.cost,
                cell(&x.detail)
            );
        }
    }
    let _ = writeln!(o, "\n## Queue wait (requested GPUs × wait inside the window)\n");
    let _ = writeln!(o, "| team | queue | jobs | GPU-hours | longest |\n|---|---|---:|---:|---:|");
    for x in &b.waits {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.1} | {} |",
            cell(&x.team),
            cell(&x.queue),
            x.jobs,
            x.gpu_hours,
            crate::clock::dur(x.longest_s)
        );
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times() {
        assert_eq!(parse_time("1970-01-02"), Ok(86_400));
        assert_eq!(parse_time("1970-01-01T01:00:00Z"), Ok(3600));
        assert!(parse_time("yesterday").unwrap_err().contains("neither a date"));
    }
}
