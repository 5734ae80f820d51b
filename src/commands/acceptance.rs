//! `gpuplane acceptance parse|run` and `gpuplane get acceptance`.

use crate::acceptance::report;
use crate::acceptance::store::Store;
use crate::cli::{AcceptanceCommand, Output};
use crate::config::Config;
use std::io::{Read, Write};
use std::process::ExitCode;

use crate::acceptance::MAX_OUTPUT;

/// The run store in use: `[acceptance] store`, else the XDG data dir.
pub fn store(config: &Config) -> Store {
    Store::new(config.acceptance.store.clone().unwrap_or_else(|| {
        Store::default_path().unwrap_or_else(|| std::path::PathBuf::from("gpuplane-acceptance.jsonl"))
    }))
}

pub fn run(cmd: &AcceptanceCommand, config: &Config) -> ExitCode {
    match cmd {
        AcceptanceCommand::Parse { file, output } => parse(file, *output),
        AcceptanceCommand::Run(a) => launch(a, config),
    }
}

/// `gpuplane acceptance run`: plan, confirm, audit, submit; then track, collect, record, judge.
fn launch(a: &crate::cli::AcceptanceRunArgs, config: &Config) -> ExitCode {
    use crate::ops::{ActionKind, OpRequest};
    let req = OpRequest {
        kind: ActionKind::Acceptance(a.mode),
        targets: a.nodes.clone(),
        reason: a.reason.clone(),
        ticket: a.ticket.clone(),
        dry_run: a.dry_run,
    };
    if !config.clusters.is_empty() {
        return fleet_launch(a, config, &req);
    }
    let mut p = match super::prepare(config, req, a.yes) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (ops, out) = p.run(config);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            return ExitCode::from(2);
        }
    };
    if out.dry_run {
        if let Some(w) = &out.audit_warning {
            eprintln!("gpuplane: {w}");
        }
        println!("dry run: nothing was submitted (recorded in {})", ops.audit.path.display());
        return ExitCode::SUCCESS;
    }
    let Some(launcher) = p.exec.launcher() else { return ExitCode::from(2) };
    let st = store(config);
    let worst = follow(&p.rt, launcher.as_ref(), &out, None, a, config, &st);
    println!("recorded in {}", st.path.display());
    ExitCode::from(worst)
}

/// `gpuplane acceptance run` in a fleet: each cluster's runs submitted through its own
/// executor (one op id for all), then each followed to its result through its own cluster's
/// launcher and recorded with the cluster's name. The worst cluster's exit code wins.
fn fleet_launch(a: &crate::cli::AcceptanceRunArgs, config: &Config, req: &crate::ops::OpRequest) -> ExitCode {
    let mut p = match super::fleet_prepare(config, req, crate::ops::fleet::Pick::Both, a.yes) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let runs = p.run(config);
    let st = store(config);
    let mut worst = 0u8;
    for r in &runs {
        let out = match &r.out {
            Ok(o) => o,
            Err(e) => {
                eprintln!("gpuplane: {}: {e}", r.cluster);
                worst = worst.max(2);
                continue;
            }
        };
        if out.dry_run {
            println!(
                "{}: dry run: nothing was submitted (recorded in {})",
                r.cluster,
                r.ops.audit.path.display()
            );
            continue;
        }
        let Some(launcher) = p.execs.get(&r.cluster).and_then(|e| e.launcher()) else {
            worst = worst.max(2);
            continue;
        };
        println!("on {}:", r.cluster);
        worst = worst.max(follow(&p.rt, launcher.as_ref(), out, Some(r.cluster.as_str()), a, config, &st));
    }
    if !runs.is_empty() && runs.iter().all(|r| r.out.as_ref().is_ok_and(|o| !o.dry_run)) {
        println!("recorded in {}", st.path.display());
    }
    ExitCode::from(worst)
}

/// Follows each job one submission sent (through `launcher`, its cluster's) to its end, then
/// records and judges the run (with its fleet cluster, when there is one). 0 when every run
/// passed, 1 when one is degraded or failed, 2 when a submission failed or a run could not be
/// recorded.
fn follow(
    rt: &tokio::runtime::Runtime,
    launcher: &dyn crate::acceptance::launch::Launcher,
    out: &crate::ops::Outcome,
    cluster: Option<&str>,
    a: &crate::cli::AcceptanceRunArgs,
    config: &Config,
    st: &Store,
) -> u8 {
    use crate::acceptance::launch::{Origin, record, track};
    if let Some(w) = &out.audit_warning {
        eprintln!("gpuplane: {w}");
    }
    let mut worst = 0u8;
    for (job, sub) in &out.submitted {
        let c = rt.block_on(track(launcher, job, sub, a.wait, std::time::Duration::from_secs(2), |p| {
            println!("  job {} ({}): {}", sub.job_id, job.target(), crate::sanitize::sanitize(&p.label()))
        }));
        let history = st.load().map(|l| l.runs).unwrap_or_default();
        let origin = Origin {
            op_id: Some(&out.op_id),
            backend: launcher.backend(),
            image: launcher.template().image.as_deref(),
            cluster,
        };
        let rec = record(origin, job, sub, &c, &history, &config.acceptance.judge);
        let j = rec.judgement.clone();
        if let Err(e) = st.append(&rec) {
            eprintln!("gpuplane: the run could not be recorded: {e}");
            worst = worst.max(2);
        }
        let (verdict, why) = j.map_or(("fail", String::new()), |j| (j.verdict.label(), j.why));
        println!("  {} job {} ({}): {} — {}", verdict.to_uppercase(), sub.job_id, job.target(), verdict, why);
        worst = worst.max(report::verdict_rank(rec.judgement.map(|j| j.verdict)).saturating_sub(1));
    }
    if out.results.iter().any(|r| !r.ok) || out.submitted.is_empty() {
        return 2;
    }
    worst.min(1)
}

fn read_limited(r: impl Read) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.take(MAX_OUTPUT + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_OUTPUT {
        return Err(std::io::Error::other(format!("larger than {} MiB", MAX_OUTPUT >> 20)));
    }
    Ok(buf)
}

fn parse(file: &std::path::Path, output: Output) -> ExitCode {
    let bytes = if file.as_os_str() == "-" {
        read_limited(std::io::stdin().lock())
    } else {
        std::fs::File::open(file).and_then(read_limited)
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            eprintln!("gpuplane: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let parsed = crate::acceptance::parse::parse(&bytes);
    let mut out = std::io::stdout().lock();
    let json = output == Output::Json;
    let (text, code) = match &parsed {
        Ok(r) if json => (crate::sanitize::json_pretty(r).unwrap_or_default(), u8::from(r.failed())),
        Ok(r) => (report::parse_text(r), u8::from(r.failed())),
        Err(e) if json => {
            let v = serde_json::json!({"error": e.to_string(), "kind": e.kind, "line": e.line, "partial": e.partial});
            (crate::sanitize::json_pretty(&v).unwrap_or_default(), 2)
        }
        Err(e) => {
            eprintln!("gpuplane: {}: {e}", file.display());
            (report::parse_error_text(e), 2)
        }
    };
    match writeln!(out, "{}", text.trim_end()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::from(code),
    }
}

/// `gpuplane get acceptance`: every recorded run, newest last; `--filter` keeps the rows
/// whose text contains it (case-insensitive; `!text` drops them).
pub fn get(output: Output, filter: &str, config: &Config) -> ExitCode {
    let st = store(config);
    let loaded = match st.load() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            return ExitCode::from(2);
        }
    };
    if loaded.skipped > 0 {
        eprintln!("gpuplane: warning: {}: {} unreadable line(s) skipped", st.path.display(), loaded.skipped);
    }
    let (neg, needle) = match filter.strip_prefix('!') {
        Some(f) => (true, f.to_lowercase()),
        None => (false, filter.to_lowercase()),
    };
    let runs: Vec<_> = loaded
        .runs
        .iter()
        .map(|r| (r, report::row_cells(r)))
        .filter(|(_, cells)| needle.is_empty() || cells.join(" ").to_lowercase().contains(&needle) != neg)
        .collect();
    let cols: Vec<usize> =
        (0..report::COLUMNS.len()).filter(|&i| output != Output::Table || !report::COLUMNS[i].1).collect();
    let mut out = std::io::stdout().lock();
    let written = match output {
        Output::Json => {
            let v: Vec<_> = runs.iter().map(|(r, _)| *r).collect();
            crate::sanitize::json_pretty_to(&mut out, &v)
                .map_err(std::io::Error::other)
                .and_then(|_| writeln!(out))
        }
        Output::Csv => {
            let mut w = csv::Writer::from_writer(out);
            let r = w
                .write_record(cols.iter().map(|&i| report::COLUMNS[i].0))
                .and_then(|_| runs.iter().try_for_each(|(_, c)| w.write_record(cols.iter().map(|&i| &c[i]))))
                .and_then(|_| w.flush().map_err(csv::Error::from));
            r.map_err(std::io::Error::other)
        }
        Output::Table | Output::Wide => {
            let width = |i: usize| {
                runs.iter()
                    .map(|(_, c)| unicode_width::UnicodeWidthStr::width(c[i].as_str()))
                    .max()
                    .unwrap_or(0)
                    .max(report::COLUMNS[i].0.len())
            };
            let widths: Vec<usize> = cols.iter().map(|&i| width(i)).collect();
            let line = |cells: Vec<&str>| {
                let mut l = String::new();
                for (n, c) in cells.iter().enumerate() {
                    l.push_str(c);
                    l.push_str(
                        &" ".repeat(widths[n].saturating_sub(unicode_width::UnicodeWidthStr::width(*c)) + 2),
                    );
                }
                l.trim_end().to_string()
            };
            let mut r = writeln!(out, "{}", line(cols.iter().map(|&i| report::COLUMNS[i].0).collect()));
            for (_, c) in &runs {
                if r.is_ok() {
                    r = writeln!(out, "{}", line(cols.iter().map(|&i| c[i].as_str()).collect()));
                }
            }
            r
        }
    };
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}
