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

pub fn run(
    resource: &str,
    output: Output,
    filter: &str,
    fail_on: Option<crate::cli::FailOn>,
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
    let cost = crate::cost::report(&state, 86_400);
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
    let shown: Vec<usize> = (0..cols.len())
        .filter(|&i| !cols[i].name.is_empty() && (output != Output::Table || cols[i].drop <= 2))
        .collect();
    let rows: Vec<Vec<String>> = st
        .rows
        .iter()
        .map(|&k| {
            let cells = src.cells(&cx, k);
            shown.iter().map(|&i| cells.get(i).map(|c| c.content.to_string()).unwrap_or_default()).collect()
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
