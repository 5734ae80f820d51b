//! `gpuplane silence create|expire`: Alertmanager silences through the same audit log as
//! every action. The road is the ops road's, for a target that is not a scheduler: refuse
//! under read-only and without a reason; show the plan (the matchers and the alerts they mute
//! now, or the silence to expire); confirm; write the **intent** (fail closed: no record, no
//! request); send; write the **outcome** (with the silence's id).

use super::audit_log;
use crate::audit::{Entry, Phase};
use crate::backend::alertmanager::{AmClient, AmConfig, snapshot};
use crate::cli::{SilenceCommand, SilenceWhy};
use crate::config::Config;
use crate::model::alert::{Alert, Matcher, SilenceState};
use crate::sanitize::sanitize;
use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

fn fail(e: &dyn std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("gpuplane: {e}");
    ExitCode::from(code)
}

pub fn run(cmd: &SilenceCommand, config: &Config) -> ExitCode {
    let Some(am) = &config.alertmanager else {
        return fail(&"no Alertmanager configured: pass --alertmanager URL (or [alertmanager] url)", 2);
    };
    let why = match cmd {
        SilenceCommand::Create { why, .. } | SilenceCommand::Expire { why, .. } => why,
    };
    if config.readonly {
        return fail(&"read-only mode: silence refused (nothing was sent)", 2);
    }
    if why.reason.trim().is_empty() {
        return fail(&"a reason is required", 2);
    }
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(&e, 1),
    };
    rt.block_on(async {
        match cmd {
            SilenceCommand::Create { matchers, duration, why } => {
                create(am, matchers, *duration, why, config).await
            }
            SilenceCommand::Expire { ids, why } => expire(am, ids, why, config).await,
        }
    })
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
pub fn comment(why: &SilenceWhy) -> String {
    match &why.ticket {
        Some(t) if !t.trim().is_empty() => format!("{}: {}", t.trim(), why.reason.trim()),
        _ => why.reason.trim().to_string(),
    }
}

/// Asks for `yes` on a terminal, unless `--yes` or `--dry-run`.
fn confirm(what: &str, why: &SilenceWhy) -> Result<(), ExitCode> {
    if why.yes || why.dry_run {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(fail(&format!("not a terminal: pass --yes to {what} without confirmation"), 2));
    }
    print!("type \"yes\" to {what}: ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() || line.trim() != "yes" {
        return Err(fail(&"not confirmed; nothing was done", 1));
    }
    Ok(())
}

fn entry(config: &Config, am: &AmConfig, action: &str, targets: Vec<String>, why: &SilenceWhy) -> Entry {
    let mut params = BTreeMap::new();
    params.insert("backend".to_string(), "alertmanager".to_string());
    params.insert("dry_run".to_string(), why.dry_run.to_string());
    Entry {
        identity: Some(config.user.clone()),
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

/// Writes the outcome; exit 3 when it cannot be written, else `code`.
async fn outcome(config: &Config, e: &Entry, code: u8) -> ExitCode {
    match audit_log(config).append_async(Phase::Outcome, e).await {
        Ok(_) => ExitCode::from(code),
        Err(err) => fail(&format!("the change was sent but its outcome could not be audited: {err}"), 3),
    }
}

async fn create(
    am: &AmConfig,
    raw: &[String],
    duration: Duration,
    why: &SilenceWhy,
    config: &Config,
) -> ExitCode {
    let matchers: Vec<Matcher> = match raw.iter().map(|m| Matcher::parse(m)).collect() {
        Ok(m) => m,
        Err(e) => return fail(&format!("bad matcher {e}"), 2),
    };
    if matchers.iter().all(|m| m.value.is_empty() || !m.is_equal) {
        return fail(
            &"at least one matcher must be name=value or name=~regex with a value (a silence that matches everything is refused)",
            2,
        );
    }
    if let Some(bad) = matchers.iter().find(|m| m.is_regex && regex::Regex::new(&m.value).is_err()) {
        return fail(&format!("bad regex in {bad}"), 2);
    }
    if duration < Duration::from_secs(60) {
        return fail(&"--duration must be at least 1m", 2);
    }
    let client = match AmClient::new(am) {
        Ok(c) => c,
        Err(e) => return fail(&format!("alertmanager: {e}"), 2),
    };
    // The plan: what it would mute now.
    let snap = match snapshot(&client).await {
        Ok(s) => s,
        Err(e) => return fail(&format!("alertmanager: {e}"), 2),
    };
    let muted: Vec<&Alert> = snap.alerts.iter().filter(|a| matchers.iter().all(|m| matches(m, a))).collect();
    let start = jiff::Timestamp::now().as_second();
    let end = start + duration.as_secs() as i64;
    let text = format!("{{{}}}", matchers.iter().map(Matcher::to_string).collect::<Vec<_>>().join(", "));
    let comment = comment(why);
    println!("alertmanager {}", client.url());
    println!(
        "  silence {} for {} (until {})",
        sanitize(&text),
        humantime::format_duration(duration),
        crate::clock::stamp(end)
    );
    println!("  by {}: {}", sanitize(&config.user), sanitize(&comment));
    println!("  mutes {} alert(s) firing or held now", muted.len());
    for a in muted.iter().take(20) {
        println!("    {} {} {}", sanitize(&a.name), a.state.label(), sanitize(a.summary()));
    }
    if let Err(code) = confirm("create this silence", why) {
        return code;
    }
    let mut e = entry(config, am, "silence-create", matchers.iter().map(Matcher::to_string).collect(), why);
    e.params.insert("duration_s".into(), duration.as_secs().to_string());
    e.params.insert("ends_at".into(), end.to_string());
    e.params.insert("muted_now".into(), muted.len().to_string());
    if let Err(err) = audit_log(config).append_async(Phase::Intent, &e).await {
        return fail(&format!("refused: the audit record could not be written ({err}); nothing was sent"), 2);
    }
    if why.dry_run {
        e.result = Some("dry-run".into());
        println!("dry run: nothing was sent (recorded in {})", audit_log(config).path.display());
        return outcome(config, &e, 0).await;
    }
    match client.create_silence(&matchers, start, end, &config.user, &comment).await {
        Ok(id) => {
            println!("  ok   silence {} created, ends {}", sanitize(&id), crate::clock::stamp(end));
            e.result = Some("ok".into());
            e.params.insert("silence_id".into(), id);
            outcome(config, &e, 0).await
        }
        Err(err) => {
            println!("  FAIL {err}");
            e.result = Some("failed".into());
            e.error = Some(err.to_string());
            outcome(config, &e, 1).await
        }
    }
}

async fn expire(am: &AmConfig, ids: &[String], why: &SilenceWhy, config: &Config) -> ExitCode {
    let client = match AmClient::new(am) {
        Ok(c) => c,
        Err(e) => return fail(&format!("alertmanager: {e}"), 2),
    };
    let silences = match client.silences().await {
        Ok(s) => s,
        Err(e) => return fail(&format!("alertmanager: {e}"), 2),
    };
    println!("alertmanager {}", client.url());
    let mut targets = Vec::new();
    for id in ids {
        match silences.iter().find(|s| s.id == id.as_str()) {
            None => {
                return fail(
                    &format!("no silence {id:?} in Alertmanager (gpuplane get silences lists them)"),
                    2,
                );
            }
            Some(s) if s.state == SilenceState::Expired => {
                return fail(&format!("silence {id} has expired already"), 2);
            }
            Some(s) => {
                println!(
                    "  expire {} {} by {}: {}",
                    sanitize(&s.id),
                    sanitize(&s.matchers_text()),
                    sanitize(&s.created_by),
                    sanitize(&s.comment)
                );
                targets.push(s.id.to_string());
            }
        }
    }
    if let Err(code) = confirm("expire", why) {
        return code;
    }
    let mut e = entry(config, am, "silence-expire", targets.clone(), why);
    if let Err(err) = audit_log(config).append_async(Phase::Intent, &e).await {
        return fail(&format!("refused: the audit record could not be written ({err}); nothing was sent"), 2);
    }
    if why.dry_run {
        e.result = Some("dry-run".into());
        println!("dry run: nothing was sent (recorded in {})", audit_log(config).path.display());
        return outcome(config, &e, 0).await;
    }
    let mut failed = Vec::new();
    for id in &targets {
        match client.expire_silence(id).await {
            Ok(()) => println!("  ok   {} expired", sanitize(id)),
            Err(err) => {
                println!("  FAIL {}: {err}", sanitize(id));
                failed.push(format!("{id}: {err}"));
            }
        }
    }
    e.result = Some(
        match failed.len() {
            0 => "ok",
            n if n == targets.len() => "failed",
            _ => "partial",
        }
        .into(),
    );
    e.error = (!failed.is_empty()).then(|| failed.join("; "));
    outcome(config, &e, if failed.is_empty() { 0 } else { 1 }).await
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
        let w = |t: Option<&str>| SilenceWhy {
            reason: " GPU swap ".into(),
            ticket: t.map(Into::into),
            dry_run: false,
            yes: true,
        };
        assert_eq!(comment(&w(Some("INC-4242"))), "INC-4242: GPU swap");
        assert_eq!(comment(&w(None)), "GPU swap");
    }
}
