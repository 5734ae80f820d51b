//! `gpuplane get`: every resource in every format from the simulator, parsed back.

use crate::common;

fn get(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = common::gpuplane_cmd(dir.path()).arg("get").args(args).output().expect("run gpuplane");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Every table of every view (from the registry), as `get` offers them.
fn resources() -> Vec<&'static str> {
    gpuplane::tui::views::all_tables().map(|t| t.id().0).collect()
}

#[test]
fn every_resource_in_every_format_parses_back() {
    let all = resources();
    for r in ["nodes", "gpus", "jobs", "queues", "quotas", "cost", "fabric", "storage", "incidents", "audit"]
    {
        assert!(all.contains(&r), "{r} is still offered");
    }
    for r in &all {
        let json: serde_json::Value =
            serde_json::from_str(&get(&[r, "-o", "json"])).unwrap_or_else(|e| panic!("{r}: {e}"));
        let n = json.as_array().unwrap_or_else(|| panic!("{r}: an array")).len();
        let csv_text = get(&[r, "-o", "csv"]);
        let mut rd = csv::Reader::from_reader(csv_text.as_bytes());
        let header = rd.headers().unwrap().clone();
        let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
        assert_eq!(rows.len(), n, "{r}: csv and json list the same rows");
        assert!(rows.iter().all(|x| x.len() == header.len()), "{r}: rectangular csv");
        let table = get(&[r]);
        assert_eq!(table.lines().count(), n + 1, "{r}: a header and a line per row");
        let wide = get(&[r, "-o", "wide"]);
        assert!(
            wide.lines().next().unwrap().len() >= table.lines().next().unwrap().len(),
            "{r}: wide is wider"
        );
        // No Alertmanager behind the simulator: no alerts, no silences.
        if !["audit", "my-jobs", "alerts", "silences"].contains(r) {
            assert!(n > 0, "{r}: the simulator has some");
        }
    }
}

#[test]
fn filters_and_stable_json_fields() {
    let csv_text = get(&["jobs", "--filter", "user==researcher", "-o", "csv"]);
    let mut rd = csv::Reader::from_reader(csv_text.as_bytes());
    let user = rd.headers().unwrap().iter().position(|h| h == "user").unwrap();
    let rows: Vec<_> = rd.records().map(|x| x.unwrap()).collect();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|x| &x[user] == "researcher"));
    let jobs: serde_json::Value =
        serde_json::from_str(&get(&["jobs", "--filter", "user==researcher", "-o", "json"])).unwrap();
    let jobs = jobs.as_array().unwrap();
    assert_eq!(jobs.len(), rows.len());
    for j in jobs {
        for field in
            ["id", "name", "user", "account", "queue", "state", "gpus", "nodes", "position", "pending_reason"]
        {
            assert!(j.get(field).is_some(), "job field {field} in {j}");
        }
    }
    let nodes: serde_json::Value =
        serde_json::from_str(&get(&["nodes", "--filter", "state=down", "-o", "json"])).unwrap();
    assert!(nodes.as_array().unwrap().iter().all(|n| n["state"] == "down"));
}

fn run(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = common::gpuplane_cmd(dir.path()).args(args).output().expect("run gpuplane");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    for shell in ["bash", "zsh", "fish"] {
        let c = run(&["completions", shell]);
        for word in ["drain", "cordon", "get", "audit", "readonly", "slurm"] {
            assert!(c.contains(word), "{shell} completion lacks {word}");
        }
    }
    let man = run(&["man"]);
    assert!(man.starts_with(".ie") && man.contains(".TH gpuplane 1"), "roff");
    for word in ["drain", "audit", "\\-\\-readonly", "SIMULATED"] {
        assert!(man.contains(word), "man page lacks {word}");
    }
}

/// The simulator pinned to a fixed clock gives byte-identical output: snapshots of every
/// resource as a table and as CSV.
#[test]
fn get_output_snapshots() {
    let pinned = |args: &[&str]| -> String {
        let dir = tempfile::tempdir().unwrap();
        let out = common::gpuplane_cmd(dir.path())
            .arg("get")
            .args(args)
            .env("GPUPLANE_SIM_START", "1767225600")
            .env("USER", "researcher")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    for r in ["nodes", "gpus", "jobs", "queues", "quotas", "cost", "fabric", "storage", "incidents"] {
        let table = pinned(&[r]);
        assert_eq!(table, pinned(&[r]), "{r}: deterministic");
        insta::assert_snapshot!(format!("get_{r}_table"), table);
        insta::assert_snapshot!(format!("get_{r}_csv"), pinned(&[r, "-o", "csv"]));
    }
}

#[test]
fn an_unknown_resource_lists_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::gpuplane_cmd(dir.path()).args(["get", "bogus"]).output().expect("run gpuplane");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for r in resources() {
        assert!(err.contains(r), "{r} missing from: {err}");
    }
}

/// `get --filter` and the console's `/` are one language: on the same simulated cluster they keep
/// the same rows, and a bad filter is an error (exit 2) that lists the keys.
#[test]
fn get_and_the_console_agree_on_a_filter() {
    use gpuplane::backend::sim::{Sim, SimConfig};
    let start = 1_767_225_600;
    let filter = "st=PD gpus>4";
    let dir = tempfile::tempdir().unwrap();
    let out = common::gpuplane_cmd(dir.path())
        .args(["get", "jobs", "-o", "json", "--filter", filter])
        .env("GPUPLANE_SIM_START", start.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut from_get: Vec<u64> = rows.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    from_get.sort_unstable();
    // The console on the same cluster.
    let sim = Sim::new(SimConfig { start, tick_s: 2, ..SimConfig::default() });
    let mut state = gpuplane::state::ClusterState::new(Default::default(), Default::default());
    for u in sim.initial() {
        state.apply(u);
    }
    let mut a = gpuplane::tui::app::App::new(
        state,
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "researcher".into(),
    );
    common::typed(&mut a, &format!(":jobs {filter}\r"));
    a.prepare();
    let mut from_console: Vec<u64> = a.ui.tables[gpuplane::tui::views::jobs::TABLE]
        .rows
        .iter()
        .map(|&k| a.state().jobs[k as usize].id)
        .collect();
    from_console.sort_unstable();
    assert!(!from_get.is_empty(), "the filter keeps some jobs");
    assert_eq!(from_get, from_console);
    assert!(rows.iter().all(|r| r["state"] == "pending" && r["gpus"].as_u64().unwrap() > 4));
    // A bad key: exit 2, the keys listed, nothing printed on stdout.
    let out = common::gpuplane_cmd(dir.path()).args(["get", "jobs", "--filter", "stat=PD"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown key \"stat\"") && err.contains(" st ") && err.contains(" state "), "{err}");
    assert!(out.stdout.is_empty());
}

fn get_in(home: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> String {
    let mut cmd = common::gpuplane_cmd(home);
    cmd.arg("get").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run gpuplane");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Times are shown in the local zone from TZ, named, at its offset; `--utc`, GPUPLANE_UTC and
/// `utc = true` in the config force UTC. JSON has RFC 3339 and epoch seconds (`_unix`).
#[test]
fn times_are_local_and_named_and_utc_on_request() {
    use jiff::tz::TimeZone;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let json: serde_json::Value = serde_json::from_str(&get_in(home, &[], &["jobs", "-o", "json"])).unwrap();
    let ests: Vec<i64> =
        json.as_array().unwrap().iter().filter_map(|j| j["est_start_unix"].as_i64()).collect();
    assert!(!ests.is_empty(), "some pending jobs have an estimate");
    let shown = |tz: &TimeZone, at: i64| {
        jiff::Timestamp::from_second(at).unwrap().to_zoned(tz.clone()).strftime("%H:%M %Z").to_string()
    };
    for zone in ["America/New_York", "Asia/Kolkata"] {
        let tz = TimeZone::get(zone).unwrap();
        let table = get_in(home, &[("TZ", zone)], &["jobs", "-o", "wide"]);
        for &e in &ests {
            let want = shown(&tz, e);
            assert!(table.contains(&want), "{zone}: {want} in\n{table}");
        }
        let abbr = if zone == "Asia/Kolkata" { "IST" } else { "EST" };
        assert!(table.contains(&format!(" {abbr} (in ")), "{zone}: the zone is named\n{table}");
        assert!(!table.contains(" UTC "), "{zone}: no UTC times\n{table}");
        for forced in [
            get_in(home, &[("TZ", zone)], &["jobs", "-o", "wide", "--utc"]),
            get_in(home, &[("TZ", zone), ("GPUPLANE_UTC", "true")], &["jobs", "-o", "wide"]),
        ] {
            for &e in &ests {
                assert!(forced.contains(&shown(&TimeZone::UTC, e)), "{zone} --utc");
            }
            let body: String = forced.lines().skip(1).collect();
            assert!(!body.contains(&format!(" {abbr} ")), "{zone} --utc: no local time");
        }
    }
    let config = home.join("config/gpuplane");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "utc = true\n").unwrap();
    let table = get_in(home, &[("TZ", "Asia/Kolkata")], &["jobs", "-o", "wide"]);
    for &e in &ests {
        assert!(table.contains(&shown(&TimeZone::UTC, e)), "utc = true in the config");
    }
    assert!(!table.contains(" IST "));
}

/// `get incidents --fail-on`: exit 3 while unhandled incidents at that severity or worse are
/// open (the table is printed either way), 0 when the filter leaves none; JSON rows carry their
/// state (`open`, or `mitigated` on a node the simulator drained), since and action.
#[test]
fn incidents_fail_on_a_severity_and_say_their_state() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        common::gpuplane_cmd(dir.path())
            .arg("get")
            .arg("incidents")
            .args(args)
            .output()
            .expect("run gpuplane")
    };
    let json: serde_json::Value = serde_json::from_str(&get(&["incidents", "-o", "json"])).unwrap();
    let rows = json.as_array().unwrap();
    let open = |r: &&serde_json::Value| r["state"] == "open";
    let crit = rows.iter().filter(open).filter(|r| r["severity"] == "critical").count();
    let warn = rows.iter().filter(open).filter(|r| r["severity"] == "warning").count();
    assert!(crit > 0 && warn > 0, "the simulator has CRIT and WARN incidents: {crit} {warn}");
    for r in rows {
        assert!(r["state"] == "open" || r["state"] == "mitigated", "{r}");
        if r["state"] == "mitigated" {
            assert!(r["mitigation"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
        }
        assert!(r.get("since").is_some() && r["action"].as_str().is_some_and(|a| !a.is_empty()), "{r}");
    }

    let out = run(&["--fail-on", "crit"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("gpuplane: {crit} unhandled incident(s) at CRIT or worse")
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        rows.len() + 1,
        "the table is printed too"
    );
    let out = run(&["--fail-on", "warn", "-o", "json"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("{} unhandled incident(s) at WARN or worse", crit + warn))
    );
    // Only the incidents the filter keeps count: none CRIT among the WARN ones.
    let out = run(&["--fail-on", "critical", "--filter", "severity==WARN"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["--fail-on", "warning", "--filter", "severity==WARN"]);
    assert_eq!(out.status.code(), Some(3));
    // Another resource: a usage error.
    let out = common::gpuplane_cmd(dir.path()).args(["get", "nodes", "--fail-on", "crit"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fail-on applies to `get incidents` only"));
}

/// An ack in the shared ack store (as another console makes it) shows in `get incidents -o
/// json` as `acked` with who, ticket and note, and `--fail-on` no longer counts it.
#[test]
fn acked_incidents_carry_who_and_ticket_and_do_not_fail_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let rows = |args: &[&str]| -> (Option<i32>, Vec<serde_json::Value>) {
        let out = common::gpuplane_cmd(dir.path())
            .args(["get", "incidents", "-o", "json"])
            .args(args)
            .output()
            .expect("run gpuplane");
        (out.status.code(), serde_json::from_slice(&out.stdout).expect("json"))
    };
    let (code, before) = rows(&["--fail-on", "crit"]);
    assert_eq!(code, Some(3));
    let crit_open: Vec<&serde_json::Value> =
        before.iter().filter(|r| r["state"] == "open" && r["severity"] == "critical").collect();
    let target = crit_open[0].clone();
    for r in &before {
        assert!(r["playbook_step"].is_null() || r["playbook_step"]["text"].is_string(), "{r}");
        assert!(r["signal"].as_str().is_some_and(|s| !s.is_empty()), "{r}");
    }
    // Another console acks every open CRIT incident, through the store beside the audit log.
    let store = gpuplane::store::acks::AckStore::open(&dir.path().join("data/gpuplane/acks.sqlite")).unwrap();
    let now = jiff::Timestamp::now().as_second();
    for r in &crit_open {
        store
            .put(&gpuplane::model::Ack {
                cluster: "sim-16x8".into(),
                key: gpuplane::model::IncidentKey {
                    subject: r["subject"].as_str().unwrap().into(),
                    signal: r["signal"].as_str().unwrap().into(),
                },
                by: "bob".into(),
                at: now,
                note: "looking".into(),
                ticket: Some("INC-7".into()),
            })
            .unwrap();
    }
    let (code, after) = rows(&["--fail-on", "crit"]);
    assert_eq!(code, Some(0), "every CRIT incident is handled now");
    let acked = after
        .iter()
        .find(|r| r["subject"] == target["subject"] && r["signal"] == target["signal"])
        .expect("still listed");
    assert_eq!(acked["state"], "acked", "{acked}");
    assert_eq!(acked["acked_by"], "bob");
    assert_eq!(acked["ticket"], "INC-7");
    assert!(acked["handled"].as_str().unwrap().starts_with("acked by bob INC-7"), "{acked}");
    // Handled ones are listed after every unhandled one.
    let first_handled = after.iter().position(|r| r["state"] != "open").unwrap();
    assert!(after[first_handled..].iter().all(|r| r["state"] != "open"));
}

/// `get cost --window 7d --team X`: one team's jobs over the window, read back from the
/// ledger the command writes under its home; CSV and JSON carry numbers, not `$` or `%`.
#[test]
fn cost_window_and_team_with_numbers_for_machines() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = common::gpuplane_cmd(dir.path())
            .arg("get")
            .args(args)
            .env("GPUPLANE_SIM_START", "1767225600")
            .output()
            .expect("run gpuplane");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (csv_text, err) = run(&["cost", "--window", "7d", "--team", "vision", "-o", "csv"]);
    assert!(err.contains("capacity since") && err.contains("lower bound"), "a new ledger says so: {err}");
    let mut rd = csv::Reader::from_reader(csv_text.as_bytes());
    let h = rd.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|x| x == name).unwrap_or_else(|| panic!("{name} in {h:?}"));
    let (team, cost, useful) = (col("account"), col("cost"), col("useful_pct"));
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    assert!(!rows.is_empty());
    let mut total = 0.0;
    for r in &rows {
        assert_eq!(&r[team], "vision");
        total += r[cost].parse::<f64>().unwrap_or_else(|e| panic!("COST {:?}: {e}", &r[cost]));
        assert!(r[useful].is_empty() || r[useful].parse::<f64>().is_ok(), "USEFUL {:?}", &r[useful]);
        assert!(!r.iter().any(|f| f.contains('$') || f.ends_with('%')), "{r:?}");
    }
    // The teams table's row for the team is the sum of its jobs.
    let (json, _) = run(&["cost-teams", "--window", "7d", "--team", "vision", "-o", "json"]);
    let teams: serde_json::Value = serde_json::from_str(&json).unwrap();
    let teams = teams.as_array().unwrap();
    assert_eq!(teams.len(), 1);
    let t = teams[0]["cost"].as_f64().expect("a number");
    assert!((t - total).abs() < 0.01 * rows.len() as f64, "team {t} vs jobs {total}");
    // The ledger file is where the data dir says, and a shorter window holds no more.
    assert!(dir.path().join("data/gpuplane/ledger").read_dir().unwrap().next().is_some());
    let (day, _) = run(&["cost-teams", "--window", "1h", "--team", "vision", "-o", "json"]);
    let day: serde_json::Value = serde_json::from_str(&day).unwrap();
    let d = day[0]["cost"].as_f64().unwrap_or(0.0);
    assert!(d <= t, "1h {d} ≤ 7d {t}");
    // --window is the cost tables' only.
    let out = common::gpuplane_cmd(dir.path()).args(["get", "nodes", "--window", "7d"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The field names of each row of `get -o json` in the order printed (the pretty printer puts
/// a row's fields at an indent of 4).
fn key_order(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in text.lines() {
        if line == "  {" {
            rows.push(Vec::new());
        } else if let Some(rest) = line.strip_prefix("    \"")
            && let Some(row) = rows.last_mut()
        {
            row.push(rest.split('"').next().unwrap().to_string());
        }
    }
    rows
}

fn get_json(args: &[&str]) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let v: serde_json::Value = serde_json::from_str(&get(args)).unwrap();
    v.as_array().unwrap().iter().map(|r| r.as_object().expect("an object").clone()).collect()
}

/// JSON and CSV lead with identity, then the console's columns under their field names; enums
/// are the console's strings, times RFC 3339 with `_unix`, numbers plain; `wide` shows every
/// plain field JSON has.
#[test]
fn machine_output_leads_with_identity_in_the_consoles_names() {
    let jobs = get_json(&["jobs", "-o", "json"]);
    let order = key_order(&get(&["jobs", "-o", "json"]));
    assert_eq!(order.len(), jobs.len());
    let keys: Vec<&str> = order[0].iter().map(String::as_str).collect();
    assert_eq!(
        keys[..14],
        [
            "cluster",
            "id",
            "name",
            "state",
            "user",
            "account",
            "queue",
            "gpus",
            "nodes",
            "wait_s",
            "run_s",
            "eff_pct",
            "position",
            "est_start"
        ],
        "{keys:?}"
    );
    // One cluster, named in every row (as the header names it), so rows read from two clusters
    // never look alike.
    let cluster = jobs[0]["cluster"].as_str().expect("the cluster's name").to_string();
    assert!(!cluster.is_empty() && jobs.iter().all(|j| j["cluster"] == cluster.as_str()), "{cluster}");
    // EFF: a number for jobs that ran on GPUs with utilisation, null for pending ones.
    assert!(jobs.iter().any(|j| j["eff_pct"].as_f64().is_some_and(|p| (0.0..=100.0).contains(&p))));
    assert!(jobs.iter().filter(|j| j["state"] == "pending").all(|j| j["eff_pct"].is_null()));
    assert!(jobs.iter().all(|j| !j.contains_key("rank")), "POS is position, once");
    assert!(jobs.iter().any(|j| j["position"].as_u64().is_some()), "pending jobs have a position");
    for j in &jobs {
        let at = j["submit"].as_str().expect("a time as text");
        let t: jiff::Timestamp = at.parse().unwrap_or_else(|e| panic!("{at}: {e}"));
        assert!(at.ends_with('Z'), "TZ=UTC: {at}");
        assert_eq!(j["submit_unix"].as_i64(), Some(t.as_second()));
    }
    let nodes = get(&["nodes", "-o", "json"]);
    let head: Vec<&str> = nodes.lines().take(5).map(str::trim).collect();
    assert_eq!(head[2], format!("\"cluster\": \"{cluster}\","), "{head:?}");
    assert!(head[3].starts_with("\"name\": \"gpu-") && head[4].starts_with("\"state\""), "{head:?}");
    assert!(nodes.contains("\"NV18\"") && nodes.contains("\"PIX\""), "link kinds as nvidia-smi prints them");
    assert!(!nodes.contains("\"Nv\"") && !nodes.contains("\"Pix\""));
    let storage = get_json(&["storage", "-o", "json"]);
    assert!(
        storage
            .iter()
            .all(|f| ["lustre", "nfs", "weka", "nvme", "s3", "pvc"].contains(&f["kind"].as_str().unwrap()))
    );
    let gpus = key_order(&get(&["gpus", "-o", "json"]));
    let keys: Vec<&str> = gpus[0].iter().map(String::as_str).take(4).collect();
    assert_eq!(keys, ["cluster", "node", "index", "uuid"]);
    // CSV: the same fields in the same order, plain numbers.
    for r in ["jobs", "cost", "cost-teams", "storage", "quotas", "queues", "fabric"] {
        let json = get_json(&[r, "-o", "json"]);
        let first = &key_order(&get(&[r, "-o", "json"]))[0];
        let text = get(&[r, "-o", "csv"]);
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let h: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        let n = first.len().min(5);
        assert_eq!(h[..n], first[..n], "{r}");
        for rec in rd.records().map(|x| x.unwrap()) {
            for (name, f) in h.iter().zip(rec.iter()) {
                let is_num = json[0].get(name).is_some_and(|v| v.is_number());
                if is_num && !f.is_empty() {
                    assert!(f.parse::<f64>().is_ok(), "{r}.{name}: {f:?} is a number");
                }
            }
        }
    }
    // wide: every console column, then every plain JSON field the columns do not show.
    let wide = get(&["jobs", "-o", "wide"]);
    let header = wide.lines().next().unwrap();
    for f in ["EST START", "POS", "SUBMIT", "GPU_MODEL", "RETRIES", "USEFUL_GPU_SECONDS"] {
        assert!(header.contains(f), "{f} in {header}");
    }
}

/// Every field the binary prints for every resource is documented in docs/get.md.
#[test]
fn every_field_printed_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/get.md")).unwrap();
    // `## `jobs` and `my-jobs``: the backticked names in each table's first cell.
    let mut documented: std::collections::HashMap<String, std::collections::HashSet<String>> =
        Default::default();
    let mut current: Vec<String> = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = h.split('`').skip(1).step_by(2).map(String::from).collect();
            // The fields of every record are documented once, under "Records".
            if h.starts_with("Records") {
                current = vec!["*".to_string()];
            }
        } else if line.starts_with("| `") {
            let cell = line.split('|').nth(1).unwrap();
            for name in cell.split('`').skip(1).step_by(2) {
                for r in &current {
                    documented.entry(r.clone()).or_default().insert(name.to_string());
                }
            }
        }
    }
    fn walk(v: &serde_json::Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(o) if path.ends_with("labels") => {
                let _ = o;
                out.insert(format!("{path}.*"));
            }
            serde_json::Value::Object(o) => {
                out.insert(path.to_string());
                for (k, x) in o {
                    walk(x, &if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, out);
                }
            }
            serde_json::Value::Array(a) if a.iter().any(|x| x.is_object() || x.is_array()) => {
                out.insert(path.to_string());
                for x in a {
                    walk(x, &format!("{path}[]"), out);
                }
            }
            _ => {
                out.insert(path.to_string());
            }
        }
    }
    let mut checked = 0;
    for r in resources() {
        let rows = get_json(&[r, "-o", "json"]);
        let mut paths = std::collections::BTreeSet::new();
        for row in &rows {
            walk(&serde_json::Value::Object(row.clone()), "", &mut paths);
        }
        paths.remove("");
        let doc = documented.get(r);
        let common = documented.get("*");
        let missing: Vec<&String> = paths
            .iter()
            .filter(|p| !common.is_some_and(|c| c.contains(p.as_str())))
            // An object or array documented by its members is documented.
            .filter(|p| {
                !doc.is_some_and(|d| {
                    d.contains(*p)
                        || d.iter()
                            .any(|x| x.starts_with(&format!("{p}.")) || x.starts_with(&format!("{p}[]")))
                })
            })
            .collect();
        assert!(missing.is_empty(), "{r}: not in docs/get.md: {missing:?}");
        checked += paths.len();
    }
    assert!(checked > 150, "the simulator prints many fields: {checked}");
}

/// `report cost`: CSV and JSON hold plain numbers; the TOTAL row is the rows' sum and equals
/// JSON's totals; the same ledger answers both; `--by` names what it accepts.
#[test]
fn report_failures_splits_the_failed_part_by_cause() {
    let dir = tempfile::tempdir().unwrap();
    let run =
        |args: &[&str]| common::gpuplane_cmd(dir.path()).args(["report"]).args(args).output().expect("run");
    let out = run(&["failures", "--from", "2020-01-01", "-o", "csv"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('$') && !text.contains('%'), "{text}");
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let h = rd.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|x| x == name).unwrap_or_else(|| panic!("no {name} in {h:?}"));
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let num = |r: &csv::StringRecord, c: &str| r[col(c)].parse::<f64>().unwrap_or(0.0);
    let causes: Vec<&csv::StringRecord> = rows.iter().filter(|r| &r[0] == "cause").collect();
    let (total, causes) = causes.split_last().expect("cause rows");
    assert_eq!(&total[col("cause")], "TOTAL");
    assert_eq!(causes.len(), 6, "every cause has a row: {text}");
    let failed: f64 = causes.iter().filter(|r| &r[col("in_failed")] == "true").map(|r| num(r, "cost")).sum();
    assert!((failed - num(total, "cost")).abs() < 1e-3, "{failed} vs {text}");
    assert!(num(total, "cost") > 0.0, "the simulator has failed jobs: {text}");
    // The failed TOTAL is report cost's failed part.
    let out = run(&["cost", "--from", "2020-01-01", "-o", "json"]);
    let cost: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let part = cost["totals"]["failed"].as_f64().expect("failed part");
    assert!((part - num(total, "cost")).abs() < 1e-3, "{part} vs {}", num(total, "cost"));
    // Burners most expensive first; queue waits per team and queue.
    let burners: Vec<f64> = rows.iter().filter(|r| &r[0] == "burner").map(|r| num(r, "cost")).collect();
    assert!(!burners.is_empty() && burners.windows(2).all(|w| w[0] >= w[1]), "{text}");
    assert!(rows.iter().any(|r| &r[0] == "wait" && num(r, "gpu_hours") > 0.0), "{text}");
    let out = run(&["failures", "--from", "2020-01-01", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["causes"].as_array().map(Vec::len), Some(6), "{v}");
    assert!((v["failed"]["cost"].as_f64().unwrap() - part).abs() < 1e-3);
    let out = run(&["failures", "--from", "2020-01-01"]);
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("| node-failure |") && md.contains("## Queue wait"), "{md}");
}

#[test]
fn report_cost_prints_a_chargeback_that_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        common::gpuplane_cmd(dir.path()).args(["report", "cost"]).args(args).output().expect("run gpuplane")
    };
    let out = run(&["--from", "2020-01-01", "-o", "csv", "--by", "user"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('$') && !text.contains('%'), "{text}");
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    assert_eq!(&rd.headers().unwrap()[0], "user");
    // The parts run from `useful` to `overhead`, then `total` (then `useful_pct`, a ratio).
    let last = rd.headers().unwrap().iter().position(|h| h == "total").expect("a total column");
    assert_eq!(&rd.headers().unwrap()[3], "useful");
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let (total, rest) = rows.split_last().expect("rows");
    assert_eq!(&total[0], "TOTAL");
    assert!(rest.len() > 1, "the simulator has several users: {text}");
    let num =
        |r: &csv::StringRecord, i: usize| r[i].parse::<f64>().unwrap_or_else(|e| panic!("{:?}: {e}", &r[i]));
    let sum: f64 = rest.iter().map(|r| num(r, last)).sum();
    assert!((sum - num(total, last)).abs() < 1e-3 * rest.len() as f64, "{sum} vs {}", num(total, last));
    // Each row's parts add up to its total.
    for r in &rows {
        let parts: f64 = (3..last).map(|i| num(r, i)).sum();
        assert!((parts - num(r, last)).abs() < 1e-3 * 8.0, "{r:?}");
    }
    let out = run(&["--from", "2020-01-01", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["totals"]["total"].is_f64(), "{v}");
    assert!((v["totals"]["total"].as_f64().unwrap() - num(total, last)).abs() < 1e-3);
    assert_eq!(v["by"], "team");
    // By cluster: one row outside fleet mode, its total the window's.
    let out = run(&["--from", "2020-01-01", "--by", "cluster", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = c["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{c}");
    assert!(rows[0]["cluster"].as_str().is_some_and(|n| !n.is_empty()), "{c}");
    assert!((rows[0]["total"].as_f64().unwrap() - num(total, last)).abs() < 1e-3, "{c}");
    let out = run(&["--from", "2020-01-01", "--by", "queue"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("team") && err.contains("user") && err.contains("cluster"), "{err}");
    let out = run(&["--from", "2020-01-01", "--to", "2019-01-01"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--to must be after --from"));
}

/// `report job`: a simulated job the ledger recorded, its utilisation weighted by GPU-hours
/// equal to its GPUs' figures weighted by hand; an unknown job is exit 2.
#[test]
fn report_job_weighs_utilisation_by_gpu_hours() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        common::gpuplane_cmd(dir.path()).args(["report", "job"]).args(args).output().expect("run gpuplane")
    };
    // The simulator's running jobs: find one through `get jobs`.
    let out = common::gpuplane_cmd(dir.path()).args(["get", "jobs", "-o", "json"]).output().unwrap();
    let jobs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["state"] == "running" && j["gpus"].as_u64() > Some(0))
        .and_then(|j| j["id"].as_u64())
        .unwrap_or_else(|| panic!("a running GPU job: {jobs}"));
    let out = run(&[&id.to_string(), "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["id"].as_u64(), Some(id));
    let per: &Vec<serde_json::Value> = e["per_gpu"].as_array().unwrap();
    let (mut w, mut h) = (0.0, 0.0);
    for g in per {
        if let Some(u) = g["util"].as_f64() {
            w += u * g["gpu_hours"].as_f64().unwrap();
            h += g["gpu_hours"].as_f64().unwrap();
        }
    }
    assert!(h > 0.0, "the simulator's GPUs report utilisation: {e}");
    assert!((e["util"].as_f64().unwrap() - w / h).abs() < 1e-6, "{e}");
    assert_eq!(
        e["gpus"],
        serde_json::json!(per.iter().map(|g| g["gpus"].as_u64().unwrap()).sum::<u64>()),
        "{e}"
    );
    let md = run(&[&id.to_string()]);
    assert!(String::from_utf8_lossy(&md.stdout).contains(&format!("# Job {id}")));
    let out = run(&["999999999"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in the ledger"));
}

/// `get sources` lists gpuplane's own files after the sources: a ledger dir, an audit log (and
/// the ack store and journal beside it) under a path whose parent is a plain file, and a syslog
/// witness nobody listens on (the oracle: a datagram sent there fails) are each failing, with
/// their path and the fix; healthy ones are ok with their path. Nothing is sent to the socket.
#[test]
fn get_sources_lists_each_store_and_witness_failing_with_its_fix() {
    let home = tempfile::tempdir().unwrap();
    let blocker = home.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let gone = home.path().join("no-syslog.sock");
    let sent = std::os::unix::net::UnixDatagram::unbound().unwrap().send_to(b"x", &gone);
    assert!(sent.is_err(), "the oracle: a head sent there fails");
    let ledger = blocker.join("ledger");
    common::write_config(
        home.path(),
        &format!(
            "[ledger]\ndir = {:?}\n[audit]\nsyslog_socket = {:?}\n",
            ledger.to_str().unwrap(),
            gone.to_str().unwrap()
        ),
    );
    let log = blocker.join("audit.jsonl");
    let run = |log: &std::path::Path| {
        let out = common::gpuplane_cmd(home.path())
            .args(["get", "sources", "-o", "json", "--audit-log", log.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_array().unwrap().clone()
    };
    let rows = run(&log);
    let store = |rows: &[serde_json::Value], name: &str| {
        rows.iter()
            .find(|r| r["kind"] == "store" && r["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {rows:?}"))
            .clone()
    };
    assert!(rows.iter().any(|r| r["kind"] == "source" && r["name"] == "sim"), "{rows:?}");
    for (name, file, setting) in [
        ("ledger", ledger.join("sim-16x8.sqlite"), "[ledger] dir"),
        ("acks", blocker.join("acks.sqlite"), "--audit-log"),
        ("timeline", blocker.join("timeline.sqlite"), "[timeline] path"),
        ("audit", log.clone(), "--audit-log"),
    ] {
        let r = store(&rows, name);
        assert_eq!(r["state"], "failing", "{r}");
        assert_eq!(r["path"], file.to_str().unwrap(), "{r}");
        assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{r}");
        assert!(r["fix"].as_str().unwrap().contains(setting), "{name}: {r}");
    }
    let w = store(&rows, "witness/syslog");
    assert_eq!((w["state"].as_str(), w["path"].as_str()), (Some("failing"), gone.to_str()), "{w}");
    assert!(w["fix"].as_str().unwrap().contains("syslog = false"), "{w}");

    // Where the files can be written, they are ok (read, or probed), with their paths.
    let listening = std::os::unix::net::UnixDatagram::bind(&gone).unwrap();
    listening.set_nonblocking(true).unwrap();
    let fine = home.path().join("data/audit.jsonl");
    let rows = run(&fine);
    for name in ["acks", "timeline", "witness/syslog"] {
        let r = store(&rows, name);
        assert_eq!(r["state"], "ok", "{r}");
        assert!(r["ok_at"].is_string() && r["fix"].is_null(), "{r}");
    }
    // No record yet: the log is not created by looking at it.
    let a = store(&rows, "audit");
    assert_eq!((a["state"].as_str(), a["path"].as_str()), (Some("never"), fine.to_str()), "{a}");
    assert!(!fine.exists());
    assert!(listening.recv(&mut [0u8; 64]).is_err(), "nothing was sent to syslog");
}
