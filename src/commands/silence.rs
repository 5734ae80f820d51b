//! `gpuplane silence create|expire`: Alertmanager silences through the same audit log as
//! every action, on the road the console's Alerts view takes too ([`crate::ops::silence`]):
//! refuse under read-only and without a reason; show the plan (the matchers and the alerts they
//! mute now, or the silence to expire); confirm; write the **intent** (fail closed: no record,
//! no request); send; write the **outcome** (with the silence's id).

use super::audit_log;
use crate::backend::alertmanager::AmClient;
use crate::cli::{SilenceCommand, SilenceWhy};
use crate::config::Config;
use crate::model::alert::Matcher;
use crate::ops::silence::{self as road, SilenceOp, SilencePlan, Why};
use crate::sanitize::sanitize;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use super::fail;

pub fn run(cmd: &SilenceCommand, config: &Config) -> ExitCode {
    let Some(am) = &config.alertmanager else {
        return fail(&"no Alertmanager configured: pass --alertmanager URL (or [alertmanager] url)", 2);
    };
    let (op, why) = match cmd {
        SilenceCommand::Create { matchers, duration, why } => {
            let matchers: Vec<Matcher> = match matchers.iter().map(|m| Matcher::parse(m)).collect() {
                Ok(m) => m,
                Err(e) => return fail(&format!("bad matcher {e}"), 2),
            };
            (SilenceOp::Create { matchers, duration: *duration }, why)
        }
        SilenceCommand::Expire { ids, why } => (SilenceOp::Expire { ids: ids.clone() }, why),
    };
    let road_why = Why { reason: why.reason.clone(), ticket: why.ticket.clone(), dry_run: why.dry_run };
    if let Err(e) = road::check(&op, &road_why, config.readonly) {
        return fail(&e, 2);
    }
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(&e, 1),
    };
    rt.block_on(async {
        let client = match AmClient::new(am) {
            Ok(c) => c,
            Err(e) => return fail(&format!("alertmanager: {e}"), 2),
        };
        let plan = match road::plan(&client, &op, jiff::Timestamp::now().as_second()).await {
            Ok(p) => p,
            Err(e) => return fail(&e, 2),
        };
        println!("alertmanager {}", client.url());
        let what = show(&plan, &road_why, config);
        if let Err(code) = confirm(what, why) {
            return code;
        }
        let sent = match road::send(&client, &audit_log(config), am, &config.user, &plan, &road_why).await {
            Ok(s) => s,
            Err(e) => return fail(&e, 2),
        };
        if why.dry_run {
            println!("dry run: nothing was sent (recorded in {})", audit_log(config).path.display());
        } else {
            match &plan {
                SilencePlan::Create { end, .. } => match (&sent.id, sent.failures.first()) {
                    (Some(id), _) => {
                        println!(
                            "  ok   silence {} created, ends {}",
                            sanitize(id),
                            crate::clock::stamp(*end)
                        )
                    }
                    (None, Some(err)) => println!("  FAIL {err}"),
                    (None, None) => {}
                },
                SilencePlan::Expire { silences } => {
                    for s in silences {
                        match sent.failures.iter().find(|f| f.starts_with(&format!("{}: ", s.id))) {
                            Some(f) => println!("  FAIL {}", sanitize(f)),
                            None => println!("  ok   {} expired", sanitize(&s.id)),
                        }
                    }
                }
            }
        }
        if let Err(e) = &sent.audited {
            return fail(e, 3);
        }
        ExitCode::from(if sent.failures.is_empty() { 0 } else { 1 })
    })
}

/// Prints the plan; returns what the confirmation asks for.
fn show(plan: &SilencePlan, why: &Why, config: &Config) -> &'static str {
    match plan {
        SilencePlan::Create { matchers, end, duration, muted, .. } => {
            let text =
                format!("{{{}}}", matchers.iter().map(Matcher::to_string).collect::<Vec<_>>().join(", "));
            println!(
                "  silence {} for {} (until {})",
                sanitize(&text),
                humantime::format_duration(*duration),
                crate::clock::stamp(*end)
            );
            println!("  by {}: {}", sanitize(&config.user), sanitize(&road::comment(why)));
            println!("  mutes {} alert(s) firing or held now", muted.len());
            for a in muted.iter().take(20) {
                println!("    {} {} {}", sanitize(&a.name), a.state.label(), sanitize(a.summary()));
            }
            "create this silence"
        }
        SilencePlan::Expire { silences } => {
            for s in silences {
                println!(
                    "  expire {} {} by {}: {}",
                    sanitize(&s.id),
                    sanitize(&s.matchers_text()),
                    sanitize(&s.created_by),
                    sanitize(&s.comment)
                );
            }
            "expire"
        }
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
