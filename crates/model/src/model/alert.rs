//! Alerts and silences, as an alert manager (Prometheus Alertmanager) reports them.

use super::{Epoch, Text};
use std::collections::BTreeMap;

/// The state of an alert: Alertmanager's `active` (firing, notified), `suppressed` (silenced or
/// inhibited), `unprocessed` (received, not yet grouped); and Prometheus's own `pending` (an
/// expression true for less than its `for:`), which never reaches Alertmanager and is only seen
/// where alerts are read from Prometheus itself ([`AlertOrigin::Prometheus`]).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AlertState {
    Active,
    Unprocessed,
    Suppressed,
    Pending,
}

impl AlertState {
    pub fn label(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Unprocessed => "unprocessed",
            Self::Suppressed => "suppressed",
            Self::Pending => "pending",
        }
    }

    /// Alertmanager's word for it; anything unknown reads as `unprocessed`.
    pub fn parse(s: &str) -> AlertState {
        match s {
            "active" => Self::Active,
            "suppressed" => Self::Suppressed,
            _ => Self::Unprocessed,
        }
    }
}

/// One alert.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Alert {
    /// Alertmanager's fingerprint of the label set: the alert's identity.
    pub fingerprint: Text,
    /// `alertname`.
    pub name: Text,
    pub state: AlertState,
    /// Silences (ids) that mute it.
    pub silenced_by: Vec<Text>,
    /// Alerts (fingerprints) that inhibit it.
    pub inhibited_by: Vec<Text>,
    pub labels: BTreeMap<Text, Text>,
    pub annotations: BTreeMap<Text, String>,
    /// When it started firing.
    pub starts_at: Epoch,
    /// When it resolves unless renewed.
    pub ends_at: Option<Epoch>,
    pub generator_url: Option<String>,
}

impl Alert {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name).map(|v| v.as_str())
    }

    /// The `severity` label, lowercased (`critical`, `warning`, `info`; empty when absent).
    pub fn severity(&self) -> String {
        self.label("severity").unwrap_or("").to_ascii_lowercase()
    }

    /// Firing and nobody has muted it: silenced or inhibited alerts are `suppressed`, and a
    /// Prometheus alert still `pending` has not fired yet.
    pub fn firing(&self) -> bool {
        matches!(self.state, AlertState::Active | AlertState::Unprocessed)
    }

    pub fn silenced(&self) -> bool {
        !self.silenced_by.is_empty()
    }

    /// `summary`, else `description`, else `message`, else the name.
    pub fn summary(&self) -> &str {
        ["summary", "description", "message"]
            .iter()
            .find_map(|k| self.annotations.get(*k).map(String::as_str))
            .unwrap_or(&self.name)
    }

    /// The host the alert names: `node`, `Hostname`, `nodename`, `hostname`, `host`, else
    /// `instance` without its port.
    pub fn host(&self) -> Option<&str> {
        for k in ["node", "Hostname", "nodename", "hostname", "host", "kubernetes_node"] {
            if let Some(v) = self.label(k).filter(|v| !v.is_empty()) {
                return Some(v);
            }
        }
        let inst = self.label("instance").filter(|v| !v.is_empty())?;
        // `host:port`, `[v6]:port`; a bare host stays as it is.
        Some(match inst.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h.trim_matches(['[', ']']),
            _ => inst,
        })
    }

    /// The GPU index the alert names (`gpu` label, as dcgm-exporter writes it).
    pub fn gpu(&self) -> Option<u8> {
        self.label("gpu")?.parse().ok()
    }

    /// The scheduler job the alert names (`hpc_job`, `slurm_job_id`, `job_id`; never the scrape
    /// `job` label).
    pub fn job(&self) -> Option<super::JobId> {
        ["hpc_job", "slurm_job_id", "job_id"].iter().find_map(|k| self.label(k)?.trim().parse().ok())
    }
}

/// Alertmanager's state of a silence.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum SilenceState {
    Active,
    Pending,
    Expired,
}

impl SilenceState {
    pub fn label(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Pending => "pending",
            Self::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> SilenceState {
        match s {
            "active" => Self::Active,
            "pending" => Self::Pending,
            _ => Self::Expired,
        }
    }
}

/// One matcher of a silence: `name=value`, `name!=value`, `name=~re`, `name!~re`.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct Matcher {
    pub name: String,
    pub value: String,
    #[serde(rename = "isRegex")]
    pub is_regex: bool,
    #[serde(rename = "isEqual", default = "yes")]
    pub is_equal: bool,
}

fn yes() -> bool {
    true
}

impl Matcher {
    /// Parses `name=value`, `name!=value`, `name=~re`, `name!~re` (the value may be quoted).
    pub fn parse(s: &str) -> Result<Matcher, String> {
        let ops = [("!~", true, false), ("=~", true, true), ("!=", false, false), ("=", false, true)];
        for (op, is_regex, is_equal) in ops {
            if let Some((n, v)) = s.split_once(op) {
                let name = n.trim();
                let valid = !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !name.starts_with(|c: char| c.is_ascii_digit());
                if !valid {
                    return Err(format!("{s:?}: {name:?} is not a label name"));
                }
                let v = v.trim();
                let value = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
                return Ok(Matcher { name: name.into(), value: value.into(), is_regex, is_equal });
            }
        }
        Err(format!("{s:?}: expected name=value, name!=value, name=~regex or name!~regex"))
    }

    pub fn op(&self) -> &'static str {
        match (self.is_regex, self.is_equal) {
            (false, true) => "=",
            (false, false) => "!=",
            (true, true) => "=~",
            (true, false) => "!~",
        }
    }
}

impl std::fmt::Display for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}{:?}", self.name, self.op(), self.value)
    }
}

/// One silence.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Silence {
    pub id: Text,
    pub state: SilenceState,
    pub matchers: Vec<Matcher>,
    pub starts_at: Epoch,
    pub ends_at: Epoch,
    pub created_by: String,
    pub comment: String,
}

impl Silence {
    /// The matchers as Alertmanager's `{a="b", c=~"d"}`.
    pub fn matchers_text(&self) -> String {
        let m: Vec<String> = self.matchers.iter().map(Matcher::to_string).collect();
        format!("{{{}}}", m.join(", "))
    }
}

/// Where the alerts come from: Alertmanager (its API v2: alerts, silences, and silences can be
/// made), or, where no Alertmanager is configured, Prometheus's own `/api/v1/alerts` (the
/// alerting rules' alerts, firing and pending; read-only: Prometheus has no silences).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AlertOrigin {
    #[default]
    Alertmanager,
    Prometheus,
}

impl AlertOrigin {
    /// The origin of a snapshot from the source named `source` (`prom` is Prometheus's source
    /// name; every other alert source is an Alertmanager).
    pub fn of(source: &str) -> AlertOrigin {
        if source == "prom" { Self::Prometheus } else { Self::Alertmanager }
    }

    pub fn title(self) -> &'static str {
        match self {
            Self::Alertmanager => "Alertmanager",
            Self::Prometheus => "Prometheus",
        }
    }

    /// Whether alerts from here can be silenced (only Alertmanager holds silences).
    pub fn can_silence(self) -> bool {
        self == Self::Alertmanager
    }
}

/// Everything an alert manager reports, replacing what it reported before.
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct AlertSnapshot {
    /// The source's name (as in its status).
    pub source: Text,
    /// When it was read.
    pub at: Epoch,
    pub alerts: Vec<Alert>,
    pub silences: Vec<Silence>,
}

impl AlertSnapshot {
    pub fn origin(&self) -> AlertOrigin {
        AlertOrigin::of(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_parse_every_operator_and_refuse_nonsense() {
        let m = Matcher::parse("Hostname=gpu-004").unwrap();
        assert_eq!(
            (m.name.as_str(), m.value.as_str(), m.is_regex, m.is_equal),
            ("Hostname", "gpu-004", false, true)
        );
        assert_eq!(Matcher::parse("a!=b").unwrap().op(), "!=");
        assert_eq!(Matcher::parse("a=~gpu-00[1-4]").unwrap().op(), "=~");
        assert_eq!(Matcher::parse("a!~x").unwrap().op(), "!~");
        assert_eq!(Matcher::parse("alertname=\"Gpu Xid\"").unwrap().value, "Gpu Xid");
        assert_eq!(Matcher::parse("a=b").unwrap().to_string(), "a=\"b\"");
        assert!(Matcher::parse("nothing").is_err());
        assert!(Matcher::parse("=x").is_err());
        assert!(Matcher::parse("1a=x").is_err());
    }

    #[test]
    fn an_alert_names_its_host_gpu_and_job() {
        let mut a = Alert {
            fingerprint: "f".into(),
            name: "X".into(),
            state: AlertState::Active,
            silenced_by: vec![],
            inhibited_by: vec![],
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            starts_at: 0,
            ends_at: None,
            generator_url: None,
        };
        assert_eq!(a.host(), None);
        a.labels.insert("instance".into(), "gpu-003:9100".into());
        assert_eq!(a.host(), Some("gpu-003"));
        a.labels.insert("instance".into(), "[::1]:9100".into());
        assert_eq!(a.host(), Some("::1"));
        a.labels.insert("Hostname".into(), "gpu-004".into());
        assert_eq!(a.host(), Some("gpu-004"));
        a.labels.insert("gpu".into(), "5".into());
        a.labels.insert("job".into(), "dcgm-exporter".into());
        assert_eq!((a.gpu(), a.job()), (Some(5), None));
        a.labels.insert("hpc_job".into(), "4242".into());
        assert_eq!(a.job(), Some(4242));
        assert_eq!(a.summary(), "X");
        a.annotations.insert("summary".into(), "hot".into());
        assert_eq!(a.summary(), "hot");
    }
}
