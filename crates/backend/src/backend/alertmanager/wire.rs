//! Alertmanager API v2 answers as they come (`api/v2/openapi.yaml`), read leniently: a missing
//! or unreadable field leaves its default, an alert without a fingerprint is dropped, and a
//! body that is not the expected JSON is an error.

use crate::model::alert::{Alert, AlertState, Matcher, Silence, SilenceState};
use crate::model::{Epoch, Text};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawAlert {
    fingerprint: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    starts_at: Option<String>,
    ends_at: Option<String>,
    #[serde(rename = "generatorURL")]
    generator_url: Option<String>,
    status: RawAlertStatus,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawAlertStatus {
    state: String,
    silenced_by: Vec<String>,
    inhibited_by: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawSilence {
    id: String,
    status: RawSilenceStatus,
    matchers: Vec<Matcher>,
    starts_at: Option<String>,
    ends_at: Option<String>,
    created_by: String,
    comment: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawSilenceStatus {
    state: String,
}

/// An RFC 3339 time as epoch seconds; Go's zero time (`0001-01-01T00:00:00Z`) and anything
/// unreadable are `None`.
pub fn epoch(t: Option<&str>) -> Option<Epoch> {
    let ts: jiff::Timestamp = t?.parse().ok()?;
    let s = ts.as_second();
    (s > 0).then_some(s)
}

/// `GET /api/v2/alerts`.
pub fn alerts(body: &[u8]) -> Result<Vec<Alert>, String> {
    let raw: Vec<RawAlert> = serde_json::from_slice(body).map_err(|e| format!("alerts: {e}"))?;
    let mut out: Vec<Alert> = raw
        .into_iter()
        .filter(|a| !a.fingerprint.is_empty())
        .map(|a| {
            let name = Text::from(a.labels.get("alertname").map_or("", String::as_str));
            Alert {
                fingerprint: a.fingerprint.into(),
                name,
                state: AlertState::parse(&a.status.state),
                silenced_by: a.status.silenced_by.into_iter().map(Text::from).collect(),
                inhibited_by: a.status.inhibited_by.into_iter().map(Text::from).collect(),
                labels: a.labels.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
                annotations: a.annotations.into_iter().map(|(k, v)| (k.into(), v)).collect(),
                starts_at: epoch(a.starts_at.as_deref()).unwrap_or(0),
                ends_at: epoch(a.ends_at.as_deref()),
                generator_url: a.generator_url.filter(|u| !u.is_empty()),
            }
        })
        .collect();
    // Alertmanager's order is its own; a stable one keeps the state's comparison cheap.
    out.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
    Ok(out)
}

/// `GET /api/v2/silences`.
pub fn silences(body: &[u8]) -> Result<Vec<Silence>, String> {
    let raw: Vec<RawSilence> = serde_json::from_slice(body).map_err(|e| format!("silences: {e}"))?;
    let mut out: Vec<Silence> = raw
        .into_iter()
        .filter(|s| !s.id.is_empty())
        .map(|s| Silence {
            id: s.id.into(),
            state: SilenceState::parse(&s.status.state),
            matchers: s.matchers,
            starts_at: epoch(s.starts_at.as_deref()).unwrap_or(0),
            ends_at: epoch(s.ends_at.as_deref()).unwrap_or(0),
            created_by: s.created_by,
            comment: s.comment,
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// `GET /api/v2/status` → `versionInfo.version`.
pub fn version(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let s = v.get("versionInfo")?.get("version")?.as_str()?;
    Some(crate::sanitize::sanitize(s).chars().take(40).collect())
}

fn rfc3339(t: Epoch) -> String {
    jiff::Timestamp::from_second(t).map(|t| t.to_string()).unwrap_or_default()
}

/// The body of `POST /api/v2/silences`.
pub fn new_silence(
    matchers: &[Matcher],
    starts_at: Epoch,
    ends_at: Epoch,
    created_by: &str,
    comment: &str,
) -> serde_json::Value {
    serde_json::json!({
        "matchers": matchers,
        "startsAt": rfc3339(starts_at),
        "endsAt": rfc3339(ends_at),
        "createdBy": created_by,
        "comment": comment,
    })
}

/// `{"silenceID": "…"}`, the answer to a create.
pub fn silence_id(body: &[u8]) -> Result<String, String> {
    #[derive(Deserialize)]
    struct Created {
        #[serde(rename = "silenceID")]
        silence_id: String,
    }
    let c: Created = serde_json::from_slice(body).map_err(|e| format!("silence created: {e}"))?;
    Ok(c.silence_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alert_is_read_with_its_state_and_times_and_junk_is_refused() {
        let body = br#"[{"annotations":{"summary":"hot"},"endsAt":"2025-01-02T03:09:05.123Z",
            "fingerprint":"ab12","receivers":[{"name":"null"}],"startsAt":"2025-01-02T03:04:05.5Z",
            "status":{"inhibitedBy":[],"silencedBy":["s-1"],"state":"suppressed"},
            "updatedAt":"2025-01-02T03:04:05Z","generatorURL":"http://p/graph",
            "labels":{"alertname":"GpuTooHot","Hostname":"gpu-004","gpu":"2","severity":"warning"}},
            {"labels":{"alertname":"NoFingerprint"}}]"#;
        let a = alerts(body).unwrap();
        assert_eq!(a.len(), 1);
        let a = &a[0];
        assert_eq!((a.name.as_str(), a.state, a.silenced()), ("GpuTooHot", AlertState::Suppressed, true));
        assert_eq!(a.starts_at, 1_735_787_045);
        assert_eq!(a.ends_at, Some(1_735_787_345));
        assert_eq!((a.host(), a.gpu(), a.summary()), (Some("gpu-004"), Some(2), "hot"));
        assert!(alerts(b"{\"not\":\"a list\"}").is_err());
        assert_eq!(epoch(Some("0001-01-01T00:00:00.000Z")), None);
    }

    #[test]
    fn a_silence_is_read_and_a_new_one_is_written_as_alertmanager_wants() {
        let body = br#"[{"id":"5d2f","status":{"state":"active"},"updatedAt":"2025-01-02T03:04:05Z",
            "comment":"INC-1: swap","createdBy":"oncall","endsAt":"2025-01-02T05:04:05Z",
            "matchers":[{"isEqual":true,"isRegex":false,"name":"Hostname","value":"gpu-004"}],
            "startsAt":"2025-01-02T03:04:05Z"}]"#;
        let s = silences(body).unwrap();
        assert_eq!(s[0].state, SilenceState::Active);
        assert_eq!(s[0].ends_at - s[0].starts_at, 7200);
        assert_eq!(s[0].matchers_text(), r#"{Hostname="gpu-004"}"#);
        let m = vec![Matcher::parse("alertname=~Gpu.*").unwrap()];
        let v = new_silence(&m, 1_735_787_045, 1_735_794_245, "oncall", "why");
        assert_eq!(v["startsAt"], "2025-01-02T03:04:05Z");
        assert_eq!(v["matchers"][0]["isRegex"], true);
        assert_eq!(v["matchers"][0]["isEqual"], true);
        assert_eq!(silence_id(br#"{"silenceID":"abc-1"}"#).unwrap(), "abc-1");
    }
}
