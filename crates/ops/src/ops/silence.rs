//! Alertmanager silences on the actions road, shared by `gpuplane silence create|expire` and
//! the console's Alerts view: check, plan (the matchers and the alerts they mute now, or the
//! silences to expire), write the **intent** (fail closed: no record, no request), send, write
//! the **outcome** (with the silence's id). The caller shows the plan and confirms between
//! planning and [`send`]; the console runs all of it on the ops task, off the UI task.

use crate::audit::{AuditLog, Entry, Phase};
use crate::backend::alertmanager::{AmClient, AmConfig, snapshot};
use crate::model::alert::{Alert, Matcher, Silence, SilenceState};
use std::collections::BTreeMap;
use std::time::Duration;

/// The audit log's action names.
pub const CREATE_ACTION: &str = "silence-create";
pub const EXPIRE_ACTION: &str = "silence-expire";

/// Why, as the operator gave it: a reason (required), a ticket, and whether to send at all.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Why {
    pub reason: String,
    pub ticket: Option<String>,
    pub dry_run: bool,
}

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum SilenceOp {
    Create { matchers: Vec<Matcher>, duration: Duration },
    Expire { ids: Vec<String> },
}

/// One silence request as it travels to the ops task.
#[derive(Debug, Clone, PartialEq)]
pub struct SilenceReq {
    pub am: AmConfig,
    pub op: SilenceOp,
    pub why: Why,
    /// Who asks (the silence's `createdBy` and the record's identity).
    pub user: String,
}

/// A checked request with what it would do now.
#[derive(Debug, Clone)]
pub enum SilencePlan {
    Create {
        matchers: Vec<Matcher>,
        start: i64,
        end: i64,
        duration: Duration,
        /// The alerts firing or held now that it would mute.
        muted: Vec<Alert>,
    },
    Expire {
        silences: Vec<Silence>,
    },
}

/// What happened once sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// `ok`, `dry-run`, `partial` or `failed`, as recorded.
    pub result: String,
    /// The created silence's id.
    pub id: Option<String>,
    /// Per target: `Ok(target)` or `Err("target: error")`.
    pub failures: Vec<String>,
    /// Whether the outcome record could be written (`Err`: the change went out unrecorded).
    pub audited: Result<(), String>,
}

/// Whether `m` matches the alert (Alertmanager's rules: regexes are anchored; a missing label
/// is the empty string).
pub fn matches(m: &Matcher, a: &Alert) -> bool {
    let v = a.label(&m.name).unwrap_or("");
    let hit = if m.is_regex {
        regex::Regex::new(&format!("^(?:{})$", m.value)).is_ok_and(|re| re.is_match(v))
    } else {
        v == m.value
    };
    hit == m.is_equal
}

/// The silence's comment: `TICKET: reason` (Alertmanager wants one).
pub fn comment(why: &Why) -> String {
    match &why.ticket {
        Some(t) if !t.trim().is_empty() => format!("{}: {}", t.trim(), why.reason.trim()),
        _ => why.reason.trim().to_string(),
    }
}

/// The labels that name where an alert fires, in the order tried: the first one the alert
/// has joins `alertname` in the matchers of a silence made from it.
pub const WHERE_LABELS: &[&str] = &["node", "Hostname", "hostname", "instance", "host", "nodename"];

/// The matchers of a silence for one alert: its `alertname` and the label naming its node or
/// instance (exact values). `None` when the alert names no place (a silence of the alert name
/// alone would mute it fleet-wide; the CLI takes explicit matchers for that).
pub fn matchers_for(a: &Alert) -> Option<Vec<Matcher>> {
    let exact = |name: &str, value: &str| Matcher {
        name: name.to_string(),
        value: value.to_string(),
        is_regex: false,
        is_equal: true,
    };
    let place = WHERE_LABELS.iter().find_map(|l| a.label(l).filter(|v| !v.is_empty()).map(|v| (*l, v)))?;
    Some(vec![exact("alertname", &a.name), exact(place.0, place.1)])
}

/// The checks made before anything is asked of Alertmanager: read-only, a reason, matchers
/// that do not match everything, valid regexes, at least a minute.
pub fn check(op: &SilenceOp, why: &Why, readonly: bool) -> Result<(), String> {
    if readonly {
        return Err("read-only mode: silence refused (nothing was sent)".into());
    }
    if why.reason.trim().is_empty() {
        return Err("a reason is required".into());
    }
    match op {
        SilenceOp::Create { matchers, duration } => {
            if matchers.iter().all(|m| m.value.is_empty() || !m.is_equal) {
                return Err("at least one matcher must be name=value or name=~regex with a value (a silence that matches everything is refused)".into());
            }
            if let Some(bad) = matchers.iter().find(|m| m.is_regex && regex::Regex::new(&m.value).is_err()) {
                return Err(format!("bad regex in {bad}"));
            }
            if *duration < Duration::from_secs(60) {
                return Err("the duration must be at least 1m".into());
            }
        }
        SilenceOp::Expire { ids } => {
            if ids.is_empty() {
                return Err("no silence to expire".into());
            }
        }
    }
    Ok(())
}

/// Reads Alertmanager for the plan: what a new silence would mute now, or the silences to
/// expire (each must exist and not have expired).
pub async fn plan(client: &AmClient, op: &SilenceOp, now: i64) -> Result<SilencePlan, String> {
    match op {
        SilenceOp::Create { matchers, duration } => {
            let snap = snapshot(client).await.map_err(|e| format!("alertmanager: {e}"))?;
            let muted = snap
                .alerts
                .into_iter()
                .filter(|a| matchers.iter().all(|m| matches(m, a)))
                .collect::<Vec<_>>();
            Ok(SilencePlan::Create {
                matchers: matchers.clone(),
                start: now,
                end: now + duration.as_secs() as i64,
                duration: *duration,
                muted,
            })
        }
        SilenceOp::Expire { ids } => {
            let all = client.silences().await.map_err(|e| format!("alertmanager: {e}"))?;
            let mut silences = Vec::new();
            for id in ids {
                match all.iter().find(|s| s.id == id.as_str()) {
                    None => {
                        return Err(format!(
                            "no silence {id:?} in Alertmanager (gpuplane get silences lists them)"
                        ));
                    }
                    Some(s) if s.state == SilenceState::Expired => {
                        return Err(format!("silence {id} has expired already"));
                    }
                    Some(s) => silences.push(s.clone()),
                }
            }
            Ok(SilencePlan::Expire { silences })
        }
    }
}

/// The record of a silence action (the same for the CLI and the console).
pub fn entry(identity: &str, am: &AmConfig, plan: &SilencePlan, why: &Why) -> Entry {
    let mut params = BTreeMap::new();
    params.insert("backend".to_string(), "alertmanager".to_string());
    params.insert("dry_run".to_string(), why.dry_run.to_string());
    let (action, targets) = match plan {
        SilencePlan::Create { matchers, end, duration, muted, .. } => {
            params.insert("duration_s".into(), duration.as_secs().to_string());
            params.insert("ends_at".into(), end.to_string());
            params.insert("muted_now".into(), muted.len().to_string());
            (CREATE_ACTION, matchers.iter().map(Matcher::to_string).collect())
        }
        SilencePlan::Expire { silences } => {
            (EXPIRE_ACTION, silences.iter().map(|s| s.id.to_string()).collect())
        }
    };
    Entry {
        identity: Some(identity.to_string()),
        cluster: am.url.clone(),
        action: action.to_string(),
        targets,
        reason: Some(why.reason.clone()),
        ticket: why.ticket.clone(),
        params,
        result: None,
        error: None,
        break_glass: None,
        op_id: uuid::Uuid::new_v4().to_string(),
    }
}

/// Writes the intent (fail closed: `Err` and nothing sent when it cannot), sends unless a dry
/// run, and writes the outcome.
pub async fn send(
    client: &AmClient,
    audit: &AuditLog,
    am: &AmConfig,
    identity: &str,
    plan: &SilencePlan,
    why: &Why,
) -> Result<Sent, String> {
    let mut e = entry(identity, am, plan, why);
    audit
        .append_async(Phase::Intent, &e)
        .await
        .map_err(|err| format!("refused: the audit record could not be written ({err}); nothing was sent"))?;
    let mut sent = Sent { result: String::new(), id: None, failures: Vec::new(), audited: Ok(()) };
    if why.dry_run {
        sent.result = "dry-run".into();
    } else {
        match plan {
            SilencePlan::Create { matchers, start, end, .. } => {
                match client.create_silence(matchers, *start, *end, identity, &comment(why)).await {
                    Ok(id) => {
                        sent.result = "ok".into();
                        e.params.insert("silence_id".into(), id.clone());
                        sent.id = Some(id);
                    }
                    Err(err) => {
                        sent.result = "failed".into();
                        sent.failures.push(err.to_string());
                    }
                }
            }
            SilencePlan::Expire { silences } => {
                for s in silences {
                    if let Err(err) = client.expire_silence(&s.id).await {
                        sent.failures.push(format!("{}: {err}", s.id));
                    }
                }
                sent.result = match sent.failures.len() {
                    0 => "ok",
                    n if n == silences.len() => "failed",
                    _ => "partial",
                }
                .into();
            }
        }
    }
    e.result = Some(sent.result.clone());
    e.error = (!sent.failures.is_empty()).then(|| sent.failures.join("; "));
    sent.audited = audit
        .append_async(Phase::Outcome, &e)
        .await
        .map(|_| ())
        .map_err(|err| format!("the change was sent but its outcome could not be audited: {err}"));
    Ok(sent)
}

/// The whole road without a confirmation step between plan and send: for the console, whose
/// command line (`:silence 2h INC-42 reason`) is the confirmation. Returns the operator's line.
pub async fn run(req: &SilenceReq, audit: &AuditLog, readonly: bool) -> Result<String, String> {
    check(&req.op, &req.why, readonly)?;
    let client = AmClient::new(&req.am).map_err(|e| format!("alertmanager: {e}"))?;
    let plan = plan(&client, &req.op, jiff::Timestamp::now().as_second()).await?;
    let sent = send(&client, audit, &req.am, &req.user, &plan, &req.why).await?;
    sent.audited.clone()?;
    if !sent.failures.is_empty() {
        return Err(format!("silence {}: {}", sent.result, sent.failures.join("; ")));
    }
    Ok(match (&plan, &sent.id) {
        (_, None) if req.why.dry_run => "silence: dry run, nothing was sent (audited)".into(),
        (SilencePlan::Create { muted, end, .. }, id) => format!(
            "silence {} created, ends {}; mutes {} alert(s) now (audited)",
            id.as_deref().unwrap_or("?"),
            crate::clock::stamp(*end),
            muted.len()
        ),
        (SilencePlan::Expire { silences }, _) => format!(
            "silence {} expired (audited)",
            silences.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::alert::AlertState;

    fn alert(labels: &[(&str, &str)]) -> Alert {
        Alert {
            fingerprint: "f".into(),
            name: "X".into(),
            state: AlertState::Active,
            silenced_by: vec![],
            inhibited_by: vec![],
            labels: labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            annotations: BTreeMap::new(),
            starts_at: 0,
            ends_at: None,
            generator_url: None,
        }
    }

    #[test]
    fn matchers_match_as_alertmanager_does() {
        let a = alert(&[("Hostname", "gpu-004"), ("gpu", "2")]);
        let m = |s: &str| Matcher::parse(s).unwrap();
        assert!(matches(&m("Hostname=gpu-004"), &a));
        assert!(!matches(&m("Hostname=gpu-00"), &a));
        // Regexes are anchored.
        assert!(matches(&m("Hostname=~gpu-00[0-4]"), &a));
        assert!(!matches(&m("Hostname=~gpu"), &a));
        assert!(matches(&m("Hostname!~gpu-1.*"), &a));
        assert!(matches(&m("gpu!=3"), &a));
        // A missing label is empty.
        assert!(matches(&m("team!=vision"), &a));
        assert!(matches(&m("team="), &a));
    }

    #[test]
    fn the_comment_carries_the_ticket() {
        let w =
            |t: Option<&str>| Why { reason: " GPU swap ".into(), ticket: t.map(Into::into), dry_run: false };
        assert_eq!(comment(&w(Some("INC-4242"))), "INC-4242: GPU swap");
        assert_eq!(comment(&w(None)), "GPU swap");
    }

    #[test]
    fn an_alert_is_silenced_by_its_name_and_place() {
        let m = matchers_for(&alert(&[("instance", "gpu-004:9400"), ("Hostname", "gpu-004")])).unwrap();
        let text: Vec<String> = m.iter().map(Matcher::to_string).collect();
        assert_eq!(text, ["alertname=\"X\"", "Hostname=\"gpu-004\""]);
        assert_eq!(matchers_for(&alert(&[("team", "vision")])), None);
    }

    #[test]
    fn checks_refuse_before_anything_is_asked() {
        let why = Why { reason: "swap".into(), ..Default::default() };
        let op = SilenceOp::Create {
            matchers: vec![Matcher::parse("alertname=X").unwrap()],
            duration: Duration::from_secs(3600),
        };
        assert_eq!(check(&op, &why, false), Ok(()));
        assert!(check(&op, &why, true).unwrap_err().contains("read-only"));
        assert!(check(&op, &Why::default(), false).unwrap_err().contains("reason"));
        let all = SilenceOp::Create {
            matchers: vec![Matcher::parse("a!=b").unwrap()],
            duration: Duration::from_secs(3600),
        };
        assert!(check(&all, &why, false).is_err());
        let short = SilenceOp::Create {
            matchers: vec![Matcher::parse("alertname=X").unwrap()],
            duration: Duration::from_secs(30),
        };
        assert!(check(&short, &why, false).is_err());
    }
}
