//! `gpuplane get RESOURCE -o table|wide|json|csv [--filter F]`: the console's tables, read
//! once from the same backends, for scripts and tickets. Tables and CSV use the console's
//! columns (text already sanitised); JSON uses the model's field names.

use super::{audit_log, target_cluster};
use crate::cli::Output;
use crate::config::Config;
use crate::tui::theme::Theme;
use crate::tui::views;
use crate::tui::widgets::Glyphs;
use crate::tui::widgets::table::{Cx, Marks, TableExt, TableState};
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;

use crate::cli::{ACCEPTANCE, resources};

/// Exit status of `get incidents --fail-on` when such incidents are open.
pub const FAIL_ON_EXIT: u8 = 3;

/// `--window` and `--team`, which only the cost tables take.
#[derive(Debug, Clone, Default)]
pub struct CostArgs {
    pub window: Option<String>,
    pub team: Option<String>,
}

pub fn run(
    resource: &str,
    output: Output,
    filter: &str,
    fail_on: Option<crate::cli::FailOn>,
    cost_args: &CostArgs,
    config: &Config,
) -> ExitCode {
    if resource == ACCEPTANCE {
        return super::acceptance::get(output, filter, config);
    }
    let Some(src) = views::all_tables().find(|t| t.id().0 == resource) else {
        eprintln!("gpuplane: unknown resource {resource:?}; one of: {}", resources().join(", "));
        return ExitCode::from(2);
    };
    if fail_on.is_some() && src.id() != views::overview::INCIDENTS {
        eprintln!("gpuplane: --fail-on applies to `get incidents` only");
        return ExitCode::from(2);
    }
    let is_cost = src.id() == views::cost::JOBS || src.id() == views::cost::TEAMS;
    if !is_cost && (cost_args.window.is_some() || cost_args.team.is_some()) {
        eprintln!("gpuplane: --window and --team are for cost and cost-teams only");
        return ExitCode::from(2);
    }
    let window = match cost_args.window.as_deref().map(crate::cost::parse_window) {
        None => 86_400,
        Some(Ok(w)) => w,
        Some(Err(e)) => {
            eprintln!("gpuplane: bad --window: {e}");
            return ExitCode::from(2);
        }
    };
    // --team is the filter `team==NAME` beside any other filter.
    let filter = match &cost_args.team {
        Some(t) => format!("team=={} {filter}", shlex::try_quote(t).unwrap_or_default()),
        None => filter.to_string(),
    };
    let filter = filter.as_str();
    if let Err(e) = crate::tui::widgets::filter::Filter::parse(filter) {
        eprintln!("gpuplane: bad --filter: {e}");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (state, _, _) = match rt.block_on(target_cluster(config)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gpuplane: cannot read the cluster: {e}");
            return ExitCode::from(2);
        }
    };
    let audit = if src.id() == views::audit::TABLE {
        match audit_log(config).tail(crate::ops::AUDIT_VIEW_RECORDS) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("gpuplane: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        Vec::new()
    };
    let cost =
        if is_cost { cost_report(&state, window, config) } else { crate::cost::report(&state, window) };
    if is_cost && let Some(since) = cost.data_since {
        // Scripts read stdout; the coverage note goes beside it.
        eprintln!(
            "gpuplane: the ledger has data since {} ({} of the {} window)",
            crate::clock::stamp(since),
            crate::clock::dur(state.now - since),
            crate::clock::dur(window)
        );
    }
    let theme = Theme::builtin("monochrome");
    let marks = Marks::default();
    let cx = Cx {
        s: &state,
        cost: &cost,
        theme: &theme,
        glyphs: Glyphs::ASCII,
        user: &config.user,
        audit: &audit,
        marked: &marks,
    };
    let mut st = TableState::default();
    st.set_filter(filter);
    st.refresh(src, &cx);
    if let Some(e) = st.filter_error() {
        eprintln!("gpuplane: bad --filter: {e}");
        return ExitCode::from(2);
    }
    let cols = src.columns();
    // CLUSTER (a fleet's) first; otherwise not at all.
    let shown: Vec<usize> = (0..cols.len())
        .filter(|&i| cols[i].fleet && state.is_fleet())
        .chain((0..cols.len()).filter(|&i| !cols[i].fleet))
        .filter(|&i| {
            !cols[i].name.is_empty() && (output != Output::Table || cols[i].drop <= 2 || cols[i].fleet)
        })
        .collect();
    let rows: Vec<Vec<String>> = st
        .rows
        .iter()
        .map(|&k| {
            let cells = src.cells(&cx, k);
            shown
                .iter()
                .map(|&i| match cols[i].num {
                    // Machine output: the number itself (no currency, %, separators).
                    Some(num) if output == Output::Csv => num(&cx, k).map(plain).unwrap_or_default(),
                    _ => cells.get(i).map(|c| c.content.to_string()).unwrap_or_default(),
                })
                .collect()
        })
        .collect();
    let mut out = std::io::stdout().lock();
    let written = match output {
        Output::Json => {
            let v: Vec<Value> = st.rows.iter().map(|&k| src.json(&cx, k)).collect();
            serde_json::to_writer_pretty(&mut out, &v)
                .map_err(|e| std::io::Error::new(e.io_error_kind().unwrap_or(std::io::ErrorKind::Other), e))
                .and_then(|_| writeln!(out))
        }
        Output::Csv => {
            let mut w = csv::Writer::from_writer(out);
            let r = w
                .write_record(shown.iter().map(|&i| cols[i].name))
                .and_then(|_| rows.iter().try_for_each(|r| w.write_record(r)))
                .and_then(|_| w.flush().map_err(csv::Error::from));
            r.map_err(|e| match e.into_kind() {
                csv::ErrorKind::Io(io) => io,
                other => std::io::Error::other(format!("{other:?}")),
            })
        }
        Output::Table | Output::Wide => {
            let widths: Vec<usize> = shown
                .iter()
                .enumerate()
                .map(|(n, &i)| {
                    rows.iter()
                        .map(|r| unicode_width::UnicodeWidthStr::width(r[n].as_str()))
                        .max()
                        .unwrap_or(0)
                        .max(cols[i].name.len())
                })
                .collect();
            let line = |cells: Vec<&str>| {
                let mut l = String::new();
                for (n, c) in cells.iter().enumerate() {
                    let pad = widths[n].saturating_sub(unicode_width::UnicodeWidthStr::width(*c));
                    if cols[shown[n]].right {
                        l.push_str(&" ".repeat(pad));
                        l.push_str(c);
                    } else {
                        l.push_str(c);
                        l.push_str(&" ".repeat(pad));
                    }
                    l.push_str("  ");
                }
                l.trim_end().to_string()
            };
            let mut r = writeln!(out, "{}", line(shown.iter().map(|&i| cols[i].name).collect()));
            for row in &rows {
                if r.is_ok() {
                    r = writeln!(out, "{}", line(row.iter().map(String::as_str).collect()));
                }
            }
            r
        }
    };
    // The check: open incidents (those the filter kept) at the threshold or worse.
    let failing = fail_on.map(|f| {
        let least = match f {
            crate::cli::FailOn::Crit => crate::state::Severity::Critical,
            crate::cli::FailOn::Warn => crate::state::Severity::Warning,
        };
        let n = st
            .rows
            .iter()
            .filter_map(|&k| state.incidents.get(k as usize))
            .filter(|i| i.severity >= least)
            .count();
        (n, least)
    });
    let verdict = match failing {
        Some((n, least)) if n > 0 => {
            eprintln!("gpuplane: {n} open incident(s) at {} or worse", least.label());
            ExitCode::from(FAIL_ON_EXIT)
        }
        _ => ExitCode::SUCCESS,
    };
    match written {
        Ok(()) => verdict,
        // A closed pipe (`| head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => verdict,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A number for CSV: at most 4 decimals, no trailing zeros, no exponent.
fn plain(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let s = format!("{:.4}", (v * 1e4).round() / 1e4);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

/// The cost report `get` prints: the current look recorded into the ledger first (so a
/// scheduler's accounting history is kept), then the window read back from it. Without a
/// ledger, or when it fails (said on stderr), what was read now.
fn cost_report(state: &crate::state::ClusterState, window: i64, config: &Config) -> crate::cost::CostReport {
    let Some(dir) = &config.ledger_dir else { return crate::cost::report(state, window) };
    let path = crate::store::ledger::path_for(dir, &state.cluster);
    let read = crate::store::Ledger::open(&path).and_then(|mut l| {
        if let Some(o) = crate::cost::track::Tracker::default().observe(state) {
            l.record(&[o])?;
        }
        l.window(state.now - window, state.now)
    });
    match read {
        Ok(w) => crate::cost::report_ledger(state, window, &w),
        Err(e) => {
            eprintln!("gpuplane: {e}; cost from what was read now");
            crate::cost::report_unavailable(state, window, e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plain_numbers() {
        assert_eq!(super::plain(2296.13333), "2296.1333");
        assert_eq!(super::plain(95.0), "95");
        assert_eq!(super::plain(0.5), "0.5");
        assert_eq!(super::plain(-0.00001), "0");
        assert_eq!(super::plain(f64::NAN), "");
    }
}
