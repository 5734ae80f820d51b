//! `gpuplane get RESOURCE -o table|wide|json|csv [--filter F]`: the console's tables, read
//! once from the same backends, for scripts and tickets. Tables use the console's columns (text
//! already sanitised); JSON and CSV print machine records (`machine.rs`: identity first, the
//! console's field names, RFC 3339 times, plain numbers); `wide` adds their plain fields.

use super::machine::{self, Record};
use super::{audit_log, target_cluster};
use crate::cli::Output;
use crate::config::Config;
use crate::tables::fmt::Glyphs;
use crate::tables::table::{Cx, Marks, TableExt, TableState};
use crate::tables::{self as views, tone::TONES};
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

/// What `get` prints from: the cluster, or the fleet without the clusters that could not be
/// read (returned with why); only a fleet of which no cluster could be read fails.
type Read = (crate::state::ClusterState, String, Vec<(String, String)>);

async fn read_cluster(config: &Config) -> Result<Read, String> {
    if config.clusters.is_empty() {
        return target_cluster(config).await.map(|(s, _, label)| (s, label, Vec::new()));
    }
    let (state, failed) = super::fleet_state_partial(config).await;
    if failed.len() == config.clusters.len() {
        let why: Vec<String> = failed.iter().map(|(n, e)| format!("cluster {n}: {e}")).collect();
        return Err(why.join("; "));
    }
    Ok((state, "the fleet".into(), failed))
}

/// `gpuplane get`. In a fleet, a cluster that cannot be read leaves out its rows and is named
/// on stderr while the others print; the exit code is then 2 with `strict`, or with `fail_on`
/// (a check that cannot see a cluster must not pass).
pub fn run(
    resource: &str,
    output: Output,
    filter: &str,
    fail_on: Option<crate::cli::FailOn>,
    cost_args: &CostArgs,
    config: &Config,
    strict: bool,
) -> ExitCode {
    if resource == ACCEPTANCE {
        return super::acceptance::get(output, filter, config);
    }
    let Some(src) = views::all().find(|t| t.id().0 == resource) else {
        eprintln!("gpuplane: unknown resource {resource:?}; one of: {}", resources().join(", "));
        return ExitCode::from(2);
    };
    if fail_on.is_some() && src.id() != views::overview::INCIDENTS {
        eprintln!("gpuplane: --fail-on applies to `get incidents` only");
        return ExitCode::from(2);
    }
    let is_cost =
        [views::cost::JOBS, views::cost::TEAMS, views::cost::BY, views::cost::CAUSES, views::cost::WAITS]
            .contains(&src.id());
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
    if let Err(e) = crate::tables::filter::Filter::parse(filter) {
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
    let (state, label, unread) = match rt.block_on(read_cluster(config)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gpuplane: cannot read the cluster: {e}");
            return ExitCode::from(2);
        }
    };
    let mut state = state;
    if src.id() == views::overview::INCIDENTS {
        // Acks (the ack store) and audited drains make the incidents' lifecycle.
        let now = state.now.max(jiff::Timestamp::now().as_second());
        let h = super::load_handling(config, &state.cluster, &label, now);
        state.apply(crate::model::protocol::Update::Handling(Box::new(h)));
    }
    if src.id() == views::sources::TABLE {
        for st in super::store_statuses(config, &state) {
            state.apply(crate::model::protocol::Update::Store(st));
        }
    }
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
            "gpuplane: {} ({} window)",
            crate::cost::capacity_note(since, state.now),
            crate::clock::dur(window)
        );
    }
    let marks = Marks::default();
    let cx = Cx {
        s: &state,
        cost: &cost,
        tones: &TONES,
        glyphs: Glyphs::ASCII,
        user: &config.user,
        audit: &audit,
        marked: &marks,
        rules: &config.efficiency,
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
        .chain((0..cols.len()).filter(|&i| !cols[i].fleet && cols[i].shown_for(&state)))
        .filter(|&i| {
            !cols[i].name.is_empty() && (output != Output::Table || cols[i].drop <= 2 || cols[i].fleet)
        })
        .collect();
    // Machine records (identity, the console's columns, the rest; times in RFC 3339): what
    // JSON and CSV print and what `wide` adds after the columns.
    let zone = crate::clock::zone();
    let records: Vec<Record> = if output == Output::Table {
        Vec::new()
    } else {
        st.rows
            .iter()
            .map(|&k| {
                // A column's plain number (`num`) stands in for a field the row's JSON lacks.
                let mut v = src.json(&cx, k);
                if let Some(o) = v.as_object_mut() {
                    // Identity leads: the cluster of a single-cluster console too (its objects
                    // carry none; the scheduler names it), so that rows of two runs against two
                    // clusters never read alike.
                    if !state.cluster.is_empty() {
                        o.entry("cluster").or_insert_with(|| state.cluster.as_str().into());
                    }
                    for c in cols {
                        if let Some(num) = c.num {
                            o.entry(machine::field_of(resource, c)).or_insert_with(|| num(&cx, k).into());
                        }
                    }
                }
                machine::record(resource, cols, v, &zone)
            })
            .collect()
    };
    let fields = machine::header(&records);
    // `wide`: every plain field the columns do not show, after them.
    let shown_fields: Vec<String> = shown.iter().map(|&i| machine::field_of(resource, &cols[i])).collect();
    let extra: Vec<&String> = if output == Output::Wide {
        fields
            .iter()
            .filter(|f| !shown_fields.contains(f) && !f.ends_with("_unix"))
            .filter(|f| {
                records.iter().all(|r| {
                    r.0.iter().find(|(k, _)| k == *f).is_none_or(|(_, v)| !v.is_array() && !v.is_object())
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let rows: Vec<Vec<String>> = st
        .rows
        .iter()
        .enumerate()
        .map(|(n, &k)| {
            let cells = src.cells(&cx, k);
            let mut row: Vec<String> =
                shown.iter().map(|&i| cells.get(i).map(|c| c.text.to_string()).unwrap_or_default()).collect();
            if let Some(r) = records.get(n) {
                row.extend(extra.iter().map(|f| {
                    r.0.iter()
                        .find(|(k, _)| k == *f)
                        .map(|(_, v)| crate::sanitize::sanitize(&machine::csv_field(v)).into_owned())
                        .unwrap_or_default()
                }));
            }
            row
        })
        .collect();
    let mut names: Vec<String> = shown.iter().map(|&i| cols[i].name.to_string()).collect();
    names.extend(extra.iter().map(|f| f.to_ascii_uppercase()));
    let right: Vec<bool> = shown.iter().map(|&i| cols[i].right).chain(extra.iter().map(|_| false)).collect();
    let mut out = std::io::stdout().lock();
    let written = match output {
        // Cluster text is untrusted: C1 and bidi characters leave as escapes, not raw.
        Output::Json => crate::sanitize::json_pretty_to(&mut out, &records)
            .map_err(|e| std::io::Error::new(e.io_error_kind().unwrap_or(std::io::ErrorKind::Other), e))
            .and_then(|_| writeln!(out)),
        Output::Csv => {
            let mut w = csv::Writer::from_writer(out);
            let r = w
                .write_record(&fields)
                .and_then(|_| records.iter().try_for_each(|r| w.write_record(machine::csv_row(&fields, r))))
                .and_then(|_| w.flush().map_err(csv::Error::from));
            r.map_err(|e| match e.into_kind() {
                csv::ErrorKind::Io(io) => io,
                other => std::io::Error::other(format!("{other:?}")),
            })
        }
        Output::Table | Output::Wide => {
            let widths: Vec<usize> = names
                .iter()
                .enumerate()
                .map(|(n, _)| {
                    rows.iter()
                        .map(|r| unicode_width::UnicodeWidthStr::width(r[n].as_str()))
                        .max()
                        .unwrap_or(0)
                        .max(names[n].len())
                })
                .collect();
            let line = |cells: Vec<&str>| {
                let mut l = String::new();
                for (n, c) in cells.iter().enumerate() {
                    let pad = widths[n].saturating_sub(unicode_width::UnicodeWidthStr::width(*c));
                    if right[n] {
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
            let mut r = writeln!(out, "{}", line(names.iter().map(String::as_str).collect()));
            for row in &rows {
                if r.is_ok() {
                    r = writeln!(out, "{}", line(row.iter().map(String::as_str).collect()));
                }
            }
            r
        }
    };
    // The check: unhandled incidents (open: not acked, mitigated or resolved; those the filter
    // kept) at the threshold or worse.
    let failing = fail_on.map(|f| {
        let least = match f {
            crate::cli::FailOn::Crit => crate::state::Severity::Critical,
            crate::cli::FailOn::Warn => crate::state::Severity::Warning,
        };
        let n = st
            .rows
            .iter()
            .filter_map(|&k| state.incidents.get(k as usize))
            .filter(|i| i.severity >= least && !i.lifecycle.handled())
            .count();
        (n, least)
    });
    for (name, e) in &unread {
        eprintln!("gpuplane: cluster {name} could not be read (its rows are left out): {e}");
    }
    let verdict = match failing {
        Some((n, least)) if n > 0 => {
            eprintln!("gpuplane: {n} unhandled incident(s) at {} or worse", least.label());
            ExitCode::from(FAIL_ON_EXIT)
        }
        _ if !unread.is_empty() && (strict || fail_on.is_some()) => ExitCode::from(2),
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

/// The cost report `get` prints: the current look recorded into the ledger first (so a
/// scheduler's accounting history is kept), then the window read back from it. Without a
/// ledger, or when it fails (said on stderr), what was read now.
fn cost_report(state: &crate::state::ClusterState, window: i64, config: &Config) -> crate::cost::CostReport {
    let Some(dir) = &config.ledger_dir else { return crate::cost::report(state, window) };
    let (from, to) = (state.now - window, state.now);
    match super::ledger_windows(state, dir, from, to) {
        Ok(w) => super::ledger_report(state, from, to, &w),
        Err(e) => {
            eprintln!("gpuplane: {e}; cost from what was read now");
            crate::cost::report_unavailable(state, window, e.to_string())
        }
    }
}
