//! Machine output of `gpuplane get` (`-o json`, `-o csv`, the extra columns of `-o wide`): one
//! ordered record per row, the same for every format.
//!
//! * Fields lead with identity (`cluster` when present, the fields that name the row, `state`),
//!   then the console's columns in their order, then the rest by name.
//! * Field names are the console's: each column names the field it shows ([`field_of`]).
//! * Times are RFC 3339 with the zone's offset (the console's zone; `--utc` gives `Z`), each
//!   followed by `<name>_unix`, the same instant in epoch seconds.
//! * Numbers stay numbers; enums are the strings the console shows (`"NV18"`, `"nvme"`).
//!
//! docs/get.md documents every field of every resource; `tests/hermetic/get_cli.rs` checks that every
//! field emitted is documented there.

use crate::tables::table::Column;
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

/// One row: its fields in output order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record(pub Vec<(String, Value)>);

impl serde::Serialize for Record {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The fields that name a row of `resource`, in order (after `cluster`, before `state`).
pub fn identity(resource: &str) -> &'static [&'static str] {
    match resource {
        "nodes" | "storage" | "queues" | "sources" => &["name"],
        "gpus" => &["node", "index", "uuid"],
        "fabric" => &["node", "port"],
        "fabric-nodes" => &["node"],
        "jobs" | "my-jobs" | "cost" => &["id", "name"],
        "quotas" | "cost-teams" => &["team"],
        "cost-by" => &["name"],
        "cost-causes" => &["cause"],
        "cost-waits" => &["team", "queue"],
        "incidents" => &["subject", "title"],
        "alerts" => &["fingerprint", "name"],
        "silences" => &["id"],
        "audit" => &["seq"],
        "timeline" => &["at", "kind", "subject"],
        _ => &["id", "name"],
    }
}

/// The field a console column of `resource` shows: its documented name where the header is an
/// abbreviation, else the header in lower case (`EST START` → `est_start`).
pub fn field_of(resource: &str, col: &Column) -> String {
    let named = match (resource, col.name) {
        (_, "ST") => "state",
        ("incidents" | "alerts", "SEV") => "severity",
        ("incidents", "SINCE") => "since",
        ("incidents", "COST/H") => "cost_per_hour",
        ("incidents", "WHAT") => "title",
        ("nodes", "GPU") => "gpu_alloc",
        ("nodes", "CPU") => "cpus_alloc",
        ("nodes", "MEM") => "mem_alloc_mib",
        ("gpus", "GPU") => "index",
        ("gpus", "TENS") => "tensor_active",
        ("gpus", "MEM") => "mem_used_mib",
        ("gpus", "TEMP") => "temp_c",
        ("gpus", "POWER") => "power_w",
        ("fabric", "TYPE") => "kind",
        ("fabric", "RATE") => "rate_gbps",
        ("fabric", "RX") => "rx_gbps",
        ("fabric", "TX") => "tx_gbps",
        ("fabric", "SYMERR") => "symbol_errors",
        ("fabric", "RCVERR") => "rcv_errors",
        ("fabric", "LNKDN") => "link_downed",
        ("storage", "USE") => "used_bytes",
        ("storage", "SIZE") => "capacity_bytes",
        ("storage", "READ") => "read_bps",
        ("storage", "WRITE") => "write_bps",
        ("storage", "CKPT-W") => "ckpt_write_s",
        ("storage", "CKPT-R") => "ckpt_restore_s",
        ("jobs" | "my-jobs", "WAIT") => "wait_s",
        ("jobs" | "my-jobs", "RUN") => "run_s",
        ("jobs" | "my-jobs", "POS") => "position",
        ("jobs" | "my-jobs", "EFF") => "eff_pct",
        ("jobs", "PRIO") => "priority",
        ("jobs", "REASON") => "pending_reason",
        ("queues", "QUEUE") => "name",
        ("queues", "PEND") => "pending",
        ("queues", "RUN") => "running",
        ("queues", "PGPU") => "pending_gpus",
        ("queues", "RGPU") => "running_gpus",
        ("queues", "WAIT50") => "wait_p50_s",
        ("queues", "WAIT90") => "wait_p90_s",
        ("queues", "OLDEST") => "oldest_submit",
        ("quotas", "QUOTA") => "gpu_quota",
        ("quotas", "USED") => "gpu_used",
        ("quotas", "BORROW") => "borrowed",
        ("quotas", "LEND") => "lendable",
        ("quotas", "PEND") => "gpu_pending",
        ("cost" | "cost-teams", "GPU-H") => "gpu_hours",
        ("cost" | "cost-teams", "IDLE $") => "idle_cost",
        ("cost", "TEAM") => "account",
        ("cost", "USEFUL") => "useful_pct",
        ("cost-teams", "USEFUL") => "useful_gpu_hours",
        ("cost-teams", "FAILED-H") => "failed_gpu_hours",
        ("cost-teams", "FAILED $") => "failed_cost",
        ("cost-by" | "cost-causes" | "cost-waits", "GPU-H" | "WAIT GPU-H") => "gpu_hours",
        ("cost-by", "USEFUL") => "useful_pct",
        ("cost-by", "IDLE $") => "idle_cost",
        ("cost-by", "FAILED $") => "failed_cost",
        ("cost-by", "SHARED $") => "shared_cost",
        ("cost-causes", "BILL") => "bill",
        ("cost-waits", "LONGEST") => "longest_s",
        ("sources", "SOURCE") => "name",
        ("sources", "LAST OK") => "ok_at",
        _ => "",
    };
    if !named.is_empty() {
        return named.into();
    }
    if !col.key.is_empty() {
        return col.key.replace('-', "_");
    }
    col.name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect::<String>()
        .trim_matches('_')
        .to_string()
}

/// Fields that hold a time: epoch seconds in the model, RFC 3339 (plus `_unix`) here.
pub const TIME_FIELDS: &[&str] = &[
    "since",
    "mismatch_since",
    "submit",
    "start",
    "end",
    "est_start",
    "ok_at",
    "at",
    "recorded_at",
    "oldest_submit",
    "starts_at",
    "ends_at",
    "updated_at",
];

/// A time as RFC 3339 with the offset of `zone` (`Z` in UTC).
pub fn rfc3339(at: i64, zone: &jiff::tz::TimeZone) -> Option<String> {
    let z = jiff::Timestamp::from_second(at).ok()?.to_zoned(zone.clone());
    if zone == &jiff::tz::TimeZone::UTC {
        return Some(z.timestamp().strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    }
    Some(z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string())
}

/// Every time field of `o` (and of the objects inside it) as RFC 3339, with `<name>_unix`;
/// fractions rounded to 4 decimals.
fn times(o: &mut Map<String, Value>, zone: &jiff::tz::TimeZone) {
    for v in o.values_mut() {
        nested_times(v, zone);
    }
    for &f in TIME_FIELDS {
        let Some(at) = o.get(f).and_then(Value::as_i64) else { continue };
        if let Some(s) = rfc3339(at, zone) {
            o.insert(f.into(), s.into());
            o.insert(format!("{f}_unix"), at.into());
        }
    }
    // A time that is not known is null in both.
    for &f in TIME_FIELDS {
        if o.get(f).is_some_and(Value::is_null) {
            o.insert(format!("{f}_unix"), Value::Null);
        }
    }
}

/// Every time field of a report's JSON (at any depth) as RFC 3339 with `<name>_unix`, and
/// fractions to 4 decimals, as `get` writes them.
pub fn report_times(v: &mut Value, zone: &jiff::tz::TimeZone) {
    nested_times(v, zone);
}

fn nested_times(v: &mut Value, zone: &jiff::tz::TimeZone) {
    match v {
        Value::Object(o) => times(o, zone),
        Value::Array(a) => a.iter_mut().for_each(|x| nested_times(x, zone)),
        // Fractions to 4 decimals: a rate read as f32 is not 276.1000061035156.
        Value::Number(n) if n.is_f64() => {
            if let Some(r) =
                n.as_f64().map(|f| (f * 1e4).round() / 1e4).and_then(serde_json::Number::from_f64)
            {
                *n = r;
            }
        }
        _ => {}
    }
}

/// A row's JSON (as its view gives it) as a machine record of `resource`.
pub fn record(resource: &str, cols: &[Column], v: Value, zone: &jiff::tz::TimeZone) -> Record {
    let mut o = match v {
        Value::Object(o) => o,
        other => return Record(vec![("value".into(), other)]),
    };
    times(&mut o, zone);
    let mut out = Vec::with_capacity(o.len());
    let mut take = |k: &str, o: &mut Map<String, Value>| {
        if let Some(x) = o.remove(k) {
            out.push((k.to_string(), x));
            let unix = format!("{k}_unix");
            if let Some(u) = o.remove(&unix) {
                out.push((unix, u));
            }
        }
    };
    take("cluster", &mut o);
    for k in identity(resource) {
        take(k, &mut o);
    }
    take("state", &mut o);
    for c in cols.iter().filter(|c| !c.name.is_empty()) {
        take(&field_of(resource, c), &mut o);
    }
    // The rest, by name (the map is sorted).
    out.extend(o);
    Record(out)
}

/// A value as one CSV field: numbers and strings as they are, `null` empty, arrays of plain
/// values joined with `;`, other arrays and objects as JSON text.
pub fn csv_field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(a) if a.iter().all(|x| !x.is_array() && !x.is_object()) => {
            a.iter().map(csv_field).collect::<Vec<_>>().join(";")
        }
        other => other.to_string(),
    }
}

/// The header of a CSV (or the extra columns of `wide`) over `records`: every field, in the
/// order the records give them (a field missing in the first row is placed after the fields
/// it follows where it appears).
pub fn header(records: &[Record]) -> Vec<String> {
    let mut h: Vec<String> = Vec::new();
    for r in records {
        let mut at = 0;
        for (k, _) in &r.0 {
            match h.iter().position(|x| x == k) {
                Some(i) => at = i + 1,
                None => {
                    h.insert(at, k.clone());
                    at += 1;
                }
            }
        }
    }
    h
}

/// One record as the CSV fields of `header`.
pub fn csv_row(header: &[String], r: &Record) -> Vec<String> {
    header
        .iter()
        .map(|k| r.0.iter().find(|(n, _)| n == k).map(|(_, v)| csv_field(v)).unwrap_or_default())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_then_columns_then_the_rest_with_times_and_their_unix_seconds() {
        use crate::tables::table::TableSource;
        let cols = crate::tables::jobs::JobsTable.columns();
        let v = json!({"zeta": 1, "user": "u", "state": "pending", "name": "n", "id": 7,
                       "est_start": 1_767_225_600, "end": null, "position": 3, "cluster": "west"});
        let r = record("jobs", cols, v, &jiff::tz::TimeZone::UTC);
        let keys: Vec<&str> = r.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "cluster",
                "id",
                "name",
                "state",
                "user",
                "position",
                "est_start",
                "est_start_unix",
                "end",
                "end_unix",
                "zeta"
            ]
        );
        assert_eq!(r.0[6].1, "2026-01-01T00:00:00Z");
        assert_eq!(r.0[7].1, 1_767_225_600);
        let ist = jiff::tz::TimeZone::get("Asia/Kolkata").unwrap();
        assert_eq!(rfc3339(1_767_225_600, &ist).unwrap(), "2026-01-01T05:30:00+05:30");
        // Serialised in this order, not by name.
        assert!(
            serde_json::to_string(&r).unwrap().starts_with(r#"{"cluster":"west","id":7,"name":"n","state""#)
        );
    }

    #[test]
    fn csv_fields_are_plain() {
        assert_eq!(csv_field(&json!(2296.5)), "2296.5");
        let r = record("fabric", &[], json!({"rx_gbps": 276.1000061035156_f64}), &jiff::tz::TimeZone::UTC);
        assert_eq!(csv_field(&r.0[0].1), "276.1");
        assert_eq!(csv_field(&json!(null)), "");
        assert_eq!(csv_field(&json!(["a", "b"])), "a;b");
        assert_eq!(csv_field(&json!([{"a": 1}])), r#"[{"a":1}]"#);
        let a = Record(vec![("id".into(), json!(1)), ("z".into(), json!(2))]);
        let b = Record(vec![("id".into(), json!(2)), ("why".into(), json!("x")), ("z".into(), json!(3))]);
        let h = header(&[a.clone(), b]);
        assert_eq!(h, ["id", "why", "z"]);
        assert_eq!(csv_row(&h, &a), ["1", "", "2"]);
    }
}
