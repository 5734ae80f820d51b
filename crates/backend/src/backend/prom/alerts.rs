//! Prometheus's own alerts (`GET /api/v1/alerts`): the alerting rules' alerts, firing and
//! pending, read where no Alertmanager is configured so that the Alerts view and the incident
//! list still see what Prometheus is firing. Read-only: Prometheus has no silences.
//!
//! An alert there has no fingerprint; its identity is a hash of its label set (Alertmanager's
//! fingerprint is one too), so the same alert keeps its key from one refresh to the next.

use crate::model::Text;
use crate::model::alert::{Alert, AlertState};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Envelope {
    status: String,
    error: String,
    data: Data,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Data {
    alerts: Vec<RawAlert>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawAlert {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    state: String,
    active_at: Option<String>,
}

/// The identity of a label set: the first 16 hex digits of SHA-256 over `name=value` lines in
/// label order.
pub fn fingerprint(labels: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    for (k, v) in labels {
        h.update(k.as_bytes());
        h.update([0xff]);
        h.update(v.as_bytes());
        h.update([0xfe]);
    }
    hex::encode(&h.finalize()[..8])
}

/// `GET /api/v1/alerts`: firing alerts are `active`, pending ones `pending`; `inactive` ones
/// (and anything else) are left out. Sorted by fingerprint.
pub fn parse(body: &[u8]) -> Result<Vec<Alert>, String> {
    let env: Envelope = serde_json::from_slice(body).map_err(|e| format!("alerts: {e}"))?;
    if env.status != "success" {
        return Err(format!("alerts: {}", crate::sanitize::sanitize(&env.error)));
    }
    let mut out: Vec<Alert> = env
        .data
        .alerts
        .into_iter()
        .filter_map(|a| {
            let state = match a.state.as_str() {
                "firing" => AlertState::Active,
                "pending" => AlertState::Pending,
                _ => return None,
            };
            Some(Alert {
                fingerprint: fingerprint(&a.labels).into(),
                name: Text::from(a.labels.get("alertname").map_or("", String::as_str)),
                state,
                silenced_by: vec![],
                inhibited_by: vec![],
                starts_at: a
                    .active_at
                    .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                    .map_or(0, |t| t.as_second().max(0)),
                labels: a.labels.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
                annotations: a.annotations.into_iter().map(|(k, v)| (k.into(), v)).collect(),
                ends_at: None,
                generator_url: None,
            })
        })
        .collect();
    out.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
    out.dedup_by(|a, b| a.fingerprint == b.fingerprint);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firing_and_pending_alerts_are_read_and_inactive_ones_and_junk_are_not() {
        let body = br#"{"status":"success","data":{"alerts":[
            {"labels":{"alertname":"GpuXidError","Hostname":"gpu-011","gpu":"6","severity":"critical"},
             "annotations":{"summary":"XID 94 on gpu-011 GPU 6"},"state":"firing",
             "activeAt":"2025-01-02T03:04:05.003322686Z","value":"9.4e+01"},
            {"labels":{"alertname":"GpuHot","Hostname":"gpu-002"},"state":"pending",
             "activeAt":"2025-01-02T03:05:05Z"},
            {"labels":{"alertname":"Gone"},"state":"inactive"}]}}"#;
        let a = parse(body).unwrap();
        assert_eq!(a.len(), 2);
        let xid = a.iter().find(|a| a.name == "GpuXidError").unwrap();
        assert_eq!((xid.state, xid.firing(), xid.starts_at), (AlertState::Active, true, 1_735_787_045));
        assert_eq!(
            (xid.host(), xid.gpu(), xid.summary()),
            (Some("gpu-011"), Some(6), "XID 94 on gpu-011 GPU 6")
        );
        let hot = a.iter().find(|a| a.name == "GpuHot").unwrap();
        assert_eq!((hot.state, hot.firing()), (AlertState::Pending, false));
        // The same labels, the same identity; other labels, another.
        assert_eq!(parse(body).unwrap()[0].fingerprint, a[0].fingerprint);
        assert_ne!(a[0].fingerprint, a[1].fingerprint);
        assert!(parse(br#"{"status":"error","error":"x"}"#).is_err());
        assert!(parse(b"[]").is_err());
    }
}
