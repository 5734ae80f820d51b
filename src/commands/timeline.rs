//! `gpuplane timeline --since 2h [--until WHEN] [--node N] [-o table|markdown|json|csv]`: what
//! changed in a window, from the event journal the consoles on this data dir write, with the
//! audit log's actions (those taken from the command line with no console running too).
//! `-o markdown` is a postmortem skeleton: summary, what happened when, who did what, GPU-hours
//! lost (from the usage ledger; "unknown" where it has nothing), open questions.

use super::machine;
use crate::cli::{TimelineArgs, TimelineOutput};
use crate::config::Config;
use crate::model::Epoch;
use crate::model::timeline::{Event, EventKind};
use crate::store::timeline::{Journal, Query};
use crate::tables::table::TableSource;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

/// `2h`, `30m`, `1d` back from `now`; else a date or an RFC 3339 time.
pub fn parse_when(s: &str, now: Epoch) -> Result<Epoch, String> {
    let t = s.trim();
    if let Ok(d) = humantime::parse_duration(t) {
        return Ok(now - d.as_secs() as i64);
    }
    super::report::parse_time(t).map_err(|e| format!("{e}, nor a duration back from now (2h, 1d)"))
}

/// The window and filters `a` asks for, at `now`.
pub fn query(a: &TimelineArgs, now: Epoch) -> Result<Query, String> {
    let from = parse_when(&a.since, now).map_err(|e| format!("--since {e}"))?;
    let to = match &a.until {
        Some(u) => parse_when(u, now).map_err(|e| format!("--until {e}"))?,
        None => now,
    };
    if from > to {
        return Err(format!(
            "--since ({}) is after --until ({})",
            crate::clock::stamp(from),
            crate::clock::stamp(to)
        ));
    }
    let kind = match &a.kind {
        None => None,
        Some(k) => Some(EventKind::from_label(k).ok_or_else(|| {
            let all: Vec<&str> = EventKind::ALL.iter().map(|k| k.label()).collect();
            format!("--kind {k:?}: one of {}", all.join(", "))
        })?),
    };
    Ok(Query { from, to, node: a.node.clone(), job: a.job, team: a.team.clone(), kind, ..Default::default() })
}

/// The events of the window: the journal's, then the audit log's actions it does not hold.
pub fn events(config: &Config, q: &Query) -> Result<(Vec<Event>, Vec<String>), String> {
    let mut notes = Vec::new();
    let path = super::timeline_path(config);
    let mut out = if path.exists() {
        Journal::open(&path).and_then(|j| j.query(q)).map_err(|e| e.to_string())?
    } else {
        notes.push(format!(
            "no event journal at {} yet: a console records one while it runs (showing actions from the audit log only)",
            path.display()
        ));
        Vec::new()
    };
    match super::audit_log(config).read_all() {
        Ok(records) => {
            let have: HashSet<String> = out.iter().map(|e| e.dedupe.clone()).collect();
            let extra: Vec<Event> = crate::state::journal::from_audit(&records, &|c| Some(c.to_string()))
                .into_iter()
                .filter(|e| !have.contains(&e.dedupe) && q.matches(e))
                .collect();
            out.extend(extra);
        }
        Err(e) => notes.push(format!("audit log: {e}; actions are those the journal holds")),
    }
    out.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.dedupe.cmp(&b.dedupe)));
    crate::model::timeline::attribute_to_operators(&mut out);
    Ok((out, notes))
}

pub fn run(a: &TimelineArgs, config: &Config) -> ExitCode {
    let now = jiff::Timestamp::now().as_second();
    let q = match query(a, now) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            return ExitCode::from(2);
        }
    };
    let (events, notes) = match events(config, &q) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            return ExitCode::from(2);
        }
    };
    for n in &notes {
        eprintln!("gpuplane: {n}");
    }
    let text = match a.output {
        TimelineOutput::Markdown => markdown(&events, &q, &lost(config, &events, &q), now),
        TimelineOutput::Table => table(&events),
        TimelineOutput::Json => {
            let records = records(&events);
            match crate::sanitize::json_pretty(&records) {
                Ok(s) => s + "\n",
                Err(e) => {
                    eprintln!("gpuplane: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        TimelineOutput::Csv => csv(&records(&events)),
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The machine records (docs/get.md, `timeline`): the Timeline table's fields, times as RFC
/// 3339 in the display zone with `_unix` twins.
pub fn records(events: &[Event]) -> Vec<machine::Record> {
    let zone = crate::clock::zone();
    let cols = crate::tables::timeline::TimelineTable.columns();
    events
        .iter()
        .map(|e| machine::record("timeline", cols, crate::tables::table::to_json(e), &zone))
        .collect()
}

fn csv(records: &[machine::Record]) -> String {
    let fields = machine::header(records);
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(&fields);
    for r in records {
        let _ = w.write_record(machine::csv_row(&fields, r));
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

fn when(at: Epoch) -> String {
    jiff::Timestamp::from_second(at).map_or_else(|_| "-".into(), crate::clock::stamp_secs)
}

fn table(events: &[Event]) -> String {
    let rows: Vec<[String; 6]> = events
        .iter()
        .map(|e| {
            [
                when(e.at),
                e.cluster.clone(),
                e.kind.label().to_string(),
                e.subject.clone(),
                e.what.clone(),
                e.who.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let head = ["TIME", "CLUSTER", "KIND", "SUBJECT", "WHAT", "WHO"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| unicode_width::UnicodeWidthStr::width(r[i].as_str()))
            .max()
            .unwrap_or(0)
            .max(head[i].len())
    };
    let widths: Vec<usize> = (0..6).map(width).collect();
    let mut o = String::new();
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            l.push_str(c);
            if i + 1 < cells.len() {
                let pad = widths[i].saturating_sub(unicode_width::UnicodeWidthStr::width(*c)) + 2;
                l.extend(std::iter::repeat_n(' ', pad));
            }
        }
        o.push_str(l.trim_end());
        o.push('\n');
    };
    line(&head);
    for r in &rows {
        line(&r.iter().map(String::as_str).collect::<Vec<_>>());
    }
    o
}

/// GPU-hours lost in the window on one cluster, from its usage ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct Lost {
    pub cluster: String,
    /// GPUs drained (draining, drained, cordoned) and not held by a job, GPU-hours.
    pub drained_h: Option<f64>,
    /// GPUs down (down, not responding, unknown) and not held, GPU-hours.
    pub down_h: Option<f64>,
    /// GPU-hours of jobs that ended failed, timed out or with a node failure in the window.
    pub failed_h: Option<f64>,
    pub failed_jobs: usize,
    /// Where the figures come from, or why they are unknown.
    pub source: String,
}

/// What the usage ledger says each cluster of the events lost in the window.
pub fn lost(config: &Config, events: &[Event], q: &Query) -> Vec<Lost> {
    let mut clusters: BTreeSet<String> = events.iter().map(|e| e.cluster.clone()).collect();
    let Some(dir) = &config.ledger_dir else {
        return clusters
            .into_iter()
            .map(|cluster| Lost {
                cluster,
                drained_h: None,
                down_h: None,
                failed_h: None,
                failed_jobs: 0,
                source: "the usage ledger is off ([ledger] enabled = false)".into(),
            })
            .collect();
    };
    if clusters.is_empty() {
        // No events: the clusters the ledger has files for.
        if let Ok(rd) = std::fs::read_dir(dir) {
            clusters.extend(rd.flatten().filter_map(|f| {
                let p = f.path();
                let stem = p.file_stem()?.to_string_lossy().into_owned();
                (p.extension()? == "sqlite").then_some(stem)
            }));
        }
    }
    let failed = |s: &str| matches!(s, "FAILED" | "NODE_FAIL" | "TIMEOUT");
    clusters
        .into_iter()
        .map(|cluster| {
            let path = crate::store::ledger::path_for(dir, &cluster);
            let mut l = Lost {
                cluster: cluster.clone(),
                drained_h: None,
                down_h: None,
                failed_h: None,
                failed_jobs: 0,
                source: String::new(),
            };
            // A document meant for sharing names the ledger's file, not where it lies here.
            let file = path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
            if !path.exists() {
                l.source = format!("unknown: no usage ledger for {cluster} ({file})");
                return l;
            }
            let w = match crate::store::Ledger::open(&path).and_then(|led| led.window(q.from, q.to)) {
                Ok(w) => w,
                Err(e) => {
                    l.source =
                        format!("unknown: {}", e.to_string().replace(&path.display().to_string(), &file));
                    return l;
                }
            };
            if w.first_record.is_none() {
                l.source = format!("unknown: the usage ledger {file} is empty");
                return l;
            }
            let jobs: Vec<&crate::store::JobRecord> = w
                .jobs
                .iter()
                .filter(|j| failed(&j.state) && j.end.is_some_and(|e| e >= q.from && e <= q.to))
                .filter(|j| q.node.as_ref().is_none_or(|n| j.nodes.contains(n)))
                .filter(|j| q.team.as_ref().is_none_or(|t| &j.account == t))
                .filter(|j| q.job.is_none_or(|id| j.id == id))
                .collect();
            l.failed_jobs = jobs.len();
            l.failed_h = Some(
                jobs.iter()
                    .map(|j| {
                        crate::model::held_gpu_seconds(
                            j.gpus,
                            j.start,
                            j.end,
                            j.last_seen,
                            Epoch::MIN,
                            Epoch::MAX,
                        )
                    })
                    .sum::<f64>()
                    / 3_600.0,
            );
            if q.node.is_none() && q.job.is_none() && q.team.is_none() {
                l.drained_h = Some(w.capacity.iter().map(|c| c.drained_s).sum::<f64>() / 3_600.0);
                l.down_h = Some(w.capacity.iter().map(|c| c.down_s).sum::<f64>() / 3_600.0);
            }
            l.source = match w.data_since() {
                Some(f) => format!("usage ledger {file}, from {} only", crate::clock::stamp(f)),
                None => format!("usage ledger {file}"),
            };
            l
        })
        .collect()
}

/// A table cell: sanitised (no line breaks), `|` escaped.
fn cell(s: &str) -> String {
    crate::sanitize::sanitize(s).replace('|', "\\|")
}

fn hours(h: Option<f64>) -> String {
    h.map_or_else(|| "unknown".into(), |h| format!("{h:.1}"))
}

/// Failed and preempted jobs listed whatever node they ran on, up to this many.
const JOBS_LISTED: usize = 50;

/// The postmortem skeleton.
pub fn markdown(events: &[Event], q: &Query, lost: &[Lost], now: Epoch) -> String {
    let mut o = String::new();
    let clusters: BTreeSet<&str> = events.iter().map(|e| e.cluster.as_str()).collect();
    let scope = match (&q.node, clusters.is_empty()) {
        (Some(n), _) => format!("node {}", cell(n)),
        (None, true) => "no events".into(),
        (None, false) => clusters.iter().map(|c| cell(c)).collect::<Vec<_>>().join(", "),
    };
    let _ = writeln!(
        o,
        "# Postmortem draft: {scope}, {} to {}\n",
        crate::clock::stamp(q.from),
        crate::clock::stamp(q.to)
    );
    let _ = writeln!(
        o,
        "_Drafted by `gpuplane timeline` at {} from the event journal and the audit log. Times in {}; \
         fill in what the records cannot know._\n",
        crate::clock::stamp(now),
        crate::clock::stamp(now).rsplit(' ').next().unwrap_or("UTC"),
    );
    // Summary.
    let _ = writeln!(o, "## Summary\n");
    let _ =
        writeln!(o, "- Window: {} to {} ({})", when(q.from), when(q.to), crate::clock::dur(q.to - q.from));
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for e in events {
        *by_kind.entry(e.kind.label()).or_default() += 1;
    }
    if events.is_empty() {
        let _ = writeln!(o, "- Nothing was recorded in this window.");
    } else {
        let kinds: Vec<String> = by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = writeln!(o, "- {} events: {}", events.len(), kinds.join(", "));
        let mut nodes: BTreeMap<&str, usize> = BTreeMap::new();
        for e in events.iter().filter(|e| e.kind != EventKind::Action && e.kind != EventKind::Ack) {
            if let Some(n) = &e.node {
                *nodes.entry(n.as_str()).or_default() += 1;
            }
        }
        if !nodes.is_empty() {
            let mut v: Vec<(&str, usize)> = nodes.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let top: Vec<String> = v.iter().take(8).map(|(n, c)| format!("{} ({c})", cell(n))).collect();
            let more = if v.len() > 8 { format!(" and {} more", v.len() - 8) } else { String::new() };
            let _ = writeln!(o, "- Nodes affected: {}{more}", top.join(", "));
        }
        let first = &events[0];
        let _ = writeln!(
            o,
            "- First: {} {} {}: {}",
            when(first.at),
            first.kind.label(),
            cell(&first.subject),
            cell(&first.what)
        );
    }
    let _ = writeln!(o, "- Impact: _to be written_");
    let _ = writeln!(o, "- Root cause: _to be written_");
    let _ = writeln!(o, "- Resolution: _to be written_\n");
    // What happened when. On a big cluster jobs fail all day: beyond a few, only those on a
    // node something happened to are listed; the rest are counted.
    let _ = writeln!(o, "## What happened when\n");
    let is_job = |e: &Event| matches!(e.kind, EventKind::JobFailed | EventKind::JobPreempted);
    let hit: HashSet<&str> = events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::NodeState
                    | EventKind::Xid
                    | EventKind::Ecc
                    | EventKind::PortDown
                    | EventKind::PortFlap
            )
        })
        .filter_map(|e| e.node.as_deref())
        .collect();
    let jobs = events.iter().filter(|e| is_job(e)).count();
    let listed: Vec<&Event> = events
        .iter()
        .filter(|e| {
            jobs <= JOBS_LISTED
                || q.job.is_some()
                || !is_job(e)
                || e.node.as_deref().is_some_and(|n| hit.contains(n))
        })
        .collect();
    if events.is_empty() {
        let _ = writeln!(o, "No events.\n");
    } else {
        let _ = writeln!(o, "| time | cluster | kind | subject | what | who |");
        let _ = writeln!(o, "|---|---|---|---|---|---|");
        for e in &listed {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                when(e.at),
                cell(&e.cluster),
                e.kind.label(),
                cell(&e.subject),
                cell(&e.what),
                cell(e.who.as_deref().unwrap_or("-"))
            );
        }
        if listed.len() < events.len() {
            let _ = writeln!(
                o,
                "\n{} failed or preempted jobs on nodes nothing else happened to are counted, not listed \
                 (`gpuplane timeline --kind job-failed` lists them).",
                events.len() - listed.len()
            );
        }
        o.push('\n');
    }
    // Who did what.
    let _ = writeln!(o, "## Who did what\n");
    let people: Vec<&Event> =
        events.iter().filter(|e| matches!(e.kind, EventKind::Action | EventKind::Ack)).collect();
    let set_by: Vec<&Event> =
        events.iter().filter(|e| e.kind == EventKind::NodeState && e.who.is_some()).collect();
    if people.is_empty() && set_by.is_empty() {
        let _ = writeln!(o, "No action, ack or attributed state change was recorded in the window.\n");
    } else {
        let _ = writeln!(o, "| time | who | what |");
        let _ = writeln!(o, "|---|---|---|");
        let mut all: Vec<&Event> = people.into_iter().chain(set_by).collect();
        all.sort_by_key(|e| e.at);
        for e in all {
            let what = match e.kind {
                EventKind::NodeState => format!("set {} {}", cell(&e.subject), cell(&e.what)),
                _ => cell(&e.what),
            };
            let _ = writeln!(o, "| {} | {} | {what} |", when(e.at), cell(e.who.as_deref().unwrap_or("-")));
        }
        o.push('\n');
    }
    // GPU-hours lost.
    let _ = writeln!(o, "## GPU-hours lost\n");
    if lost.is_empty() {
        let _ = writeln!(o, "unknown: no cluster to look up in the usage ledger.\n");
    } else {
        let _ = writeln!(o, "| cluster | drained | down | failed jobs | source |");
        let _ = writeln!(o, "|---|---|---|---|---|");
        for l in lost {
            let failed = match l.failed_h {
                Some(h) => format!("{h:.1} ({} jobs)", l.failed_jobs),
                None => "unknown".into(),
            };
            let _ = writeln!(
                o,
                "| {} | {} | {} | {failed} | {} |",
                cell(&l.cluster),
                hours(l.drained_h),
                hours(l.down_h),
                cell(&l.source)
            );
        }
        if q.node.is_some() || q.job.is_some() || q.team.is_some() {
            let _ = writeln!(
                o,
                "\nDrained and down GPU-hours are unknown for one node, job or team: the ledger counts them per GPU model."
            );
        }
        o.push('\n');
    }
    // Open questions.
    let _ = writeln!(o, "## Open questions\n");
    let mut asked = BTreeSet::new();
    // One question per kind, naming its first subjects.
    let subjects = |kinds: &[EventKind]| {
        let mut v: Vec<String> = Vec::new();
        for e in events.iter().filter(|e| kinds.contains(&e.kind)) {
            if !v.contains(&e.subject) {
                v.push(e.subject.clone());
            }
        }
        let more = if v.len() > 5 { format!(" and {} more", v.len() - 5) } else { String::new() };
        (!v.is_empty()).then(|| v.iter().take(5).map(|x| cell(x)).collect::<Vec<_>>().join(", ") + &more)
    };
    if let Some(s) = subjects(&[EventKind::Xid, EventKind::Ecc]) {
        asked.insert(format!("What caused the GPU errors on {s}, and are those GPUs healthy now?"));
    }
    if let Some(s) = subjects(&[EventKind::PortDown, EventKind::PortFlap]) {
        asked.insert(format!("Why did {s} go down or flap (cable, transceiver, switch)?"));
    }
    if jobs > 0 {
        asked.insert(format!(
            "Did the owners of the {jobs} failed or preempted jobs resubmit, and what did they lose past their last checkpoint?"
        ));
    }
    if let Some(s) = subjects(&[EventKind::AlertFiring]) {
        asked.insert(format!("Did the alerts on {s} fire early enough to act on?"));
    }
    // Nodes whose last state in the window is out of service.
    let mut last: BTreeMap<&str, &Event> = BTreeMap::new();
    for e in events.iter().filter(|e| e.kind == EventKind::NodeState) {
        last.insert(e.subject.as_str(), e);
    }
    let out_states = ["draining", "drained", "down", "cordoned", "maint", "unknown"];
    let out: Vec<(&str, &str)> = last
        .into_iter()
        .filter_map(|(n, e)| {
            let state = e.what.split(':').next().unwrap_or("").rsplit(' ').next().unwrap_or("");
            out_states.contains(&state).then_some((n, state))
        })
        .collect();
    for (n, state) in out.iter().take(5) {
        asked.insert(format!("{} was last seen {state}: is it back in service, and who owns that?", cell(n)));
    }
    if out.len() > 5 {
        asked.insert(format!(
            "{} more nodes were last seen out of service: who owns bringing them back?",
            out.len() - 5
        ));
    }
    for qn in asked.iter().take(20) {
        let _ = writeln!(o, "- {qn}");
    }
    let _ = writeln!(o, "- What would have caught this sooner, and what prevents a recurrence?");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::timeline::SubjectKind;

    #[test]
    fn times_are_durations_back_or_dates() {
        let now = 1_767_225_600 + 86_400;
        assert_eq!(parse_when("2h", now), Ok(now - 7_200));
        assert_eq!(parse_when("1d", now), Ok(now - 86_400));
        assert_eq!(parse_when("2026-01-01", now), Ok(1_767_225_600));
        assert!(parse_when("yesterday-ish", now).unwrap_err().contains("duration"));
    }

    #[test]
    fn the_skeleton_has_its_sections_and_says_unknown() {
        let e = |at, kind, subject: &str, what: &str, who: Option<&str>| Event {
            cluster: "c1".into(),
            at,
            kind,
            subject_kind: SubjectKind::Node,
            subject: subject.into(),
            node: Some(subject.split('/').next().unwrap_or(subject).into()),
            job: None,
            team: None,
            what: what.into(),
            who: who.map(Into::into),
            gpus: 8,
            dedupe: format!("{at}"),
        };
        let events = vec![
            e(100, EventKind::Xid, "gpu-004/gpu3", "XID 79: GPU has fallen off the bus (1 in window)", None),
            e(
                200,
                EventKind::NodeState,
                "gpu-004",
                "mixed → draining: XID 79 | INC-4242 (by oncall)",
                Some("oncall"),
            ),
            e(210, EventKind::Action, "gpu-004", "drain gpu-004 ok [INC-4242]: XID 79", Some("oncall")),
        ];
        let q = Query { from: 0, to: 1_000, ..Default::default() };
        let lost = vec![Lost {
            cluster: "c1".into(),
            drained_h: None,
            down_h: None,
            failed_h: None,
            failed_jobs: 0,
            source: "unknown: no usage ledger for c1".into(),
        }];
        let md = markdown(&events, &q, &lost, 1_000);
        for h in [
            "# Postmortem draft",
            "## Summary",
            "## What happened when",
            "## Who did what",
            "## GPU-hours lost",
            "## Open questions",
        ] {
            assert!(md.contains(h), "{h} in {md}");
        }
        assert!(md.contains("XID 79 \\| INC-4242"), "a | in cluster text is escaped: {md}");
        assert!(
            md.contains("| c1 | unknown | unknown | unknown | unknown: no usage ledger for c1 |"),
            "{md}"
        );
        assert!(md.contains("gpu-004 was last seen draining"), "{md}");
        assert!(md.contains("| oncall | drain gpu-004 ok [INC-4242]: XID 79 |"), "{md}");
        // Many failed jobs: those on the affected node are listed, the others counted.
        let mut many = events.clone();
        for i in 0..60 {
            let node = if i == 0 { "gpu-004" } else { "gpu-100" };
            let mut j =
                e(300 + i, EventKind::JobFailed, &format!("{}", 1_000 + i), "train FAILED", Some("alice"));
            j.node = Some(node.into());
            many.push(j);
        }
        let md = markdown(&many, &q, &lost, 1_000);
        assert!(md.contains("| 1000 | train FAILED |") && !md.contains("| 1001 | train FAILED |"), "{md}");
        assert!(
            md.contains("59 failed or preempted jobs on nodes nothing else happened to are counted"),
            "{md}"
        );
        assert!(md.contains("owners of the 60 failed or preempted jobs"), "{md}");
    }
}
