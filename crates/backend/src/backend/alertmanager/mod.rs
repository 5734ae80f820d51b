//! Alertmanager: what is firing, what is silenced, read from its API v2 (`/api/v2/alerts`,
//! `/api/v2/silences`), and the two writes an operator makes there (create a silence, expire
//! one) for the command line's audited `gpuplane silence`.
//!
//! The backend is a tokio task that sends, each refresh (default 15 s, jittered ±10 %), one
//! [`Update::Alerts`] with every alert and silence (replacing the previous ones) and an
//! [`Update::Status`] (`source: "am"`) so the header and the Sources view show it. Failures
//! keep the last alerts on screen, say what is wrong with the age of the last answer, and
//! retry with exponential backoff and jitter ([`crate::backend::retry`]).

pub mod client;
pub mod wire;

pub use client::{AmClient, AmConfig, AmError};

use crate::backend::retry::{Backoff, jitter};
use crate::model::alert::AlertSnapshot;
use crate::model::protocol::{SourceStatus, Update};
use crate::model::{Epoch, Text};
use std::time::Duration;
use tokio::sync::mpsc::Sender;
use tokio_util::sync::CancellationToken;

/// The source name in the header.
pub const SOURCE: &str = "am";

fn now() -> Epoch {
    jiff::Timestamp::now().as_second()
}

/// The waits after consecutive failures: twice the refresh period (at least 1 s), doubling up
/// to five minutes, ±10 % jitter.
pub fn backoff(refresh: Duration) -> Backoff {
    Backoff::new(refresh.max(Duration::from_secs(1)).saturating_mul(2), Duration::from_secs(300), 0.1)
}

/// Reads alerts and silences once.
pub async fn snapshot(client: &AmClient) -> Result<AlertSnapshot, AmError> {
    let (alerts, silences) = tokio::try_join!(client.alerts(), client.silences())?;
    Ok(AlertSnapshot { source: Text::const_new(SOURCE), at: now(), alerts, silences })
}

fn status(error: Option<String>, ok_at: Option<Epoch>, detail: Option<Text>) -> Update {
    Update::Status(SourceStatus {
        cluster: Default::default(),
        name: Text::const_new(SOURCE),
        simulated: false,
        ok_at,
        error,
        detail,
    })
}

/// The error as the header and the Sources view show it.
pub fn failure_text(e: &AmError, ok_at: Option<Epoch>, now: Epoch) -> String {
    let age = match ok_at {
        Some(t) => format!("last data {} s ago", (now - t).max(0)),
        None => "no data yet".into(),
    };
    format!("alertmanager: {e} ({age})")
}

/// The backend task: runs until `cancel` (or the receiver goes).
pub async fn run(cfg: AmConfig, tx: Sender<Update>, cancel: CancellationToken) {
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = main(cfg, tx) => {}
    }
}

async fn main(cfg: AmConfig, tx: Sender<Update>) {
    let client = match AmClient::new(&cfg) {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(status(Some(failure_text(&e, None, now())), None, None)).await;
            return;
        }
    };
    if tx.send(status(None, None, None)).await.is_err() {
        return;
    }
    let mut retry = backoff(cfg.refresh);
    let mut version: Option<Text> = None;
    let mut ok_at: Option<Epoch> = None;
    loop {
        if version.is_none() {
            version = client.version().await.map(Text::from);
        }
        let wait = match snapshot(&client).await {
            Ok(snap) => {
                ok_at = Some(snap.at);
                let at = snap.at;
                if tx.send(Update::Alerts(Box::new(snap))).await.is_err()
                    || tx.send(status(None, Some(at), version.clone())).await.is_err()
                {
                    return;
                }
                retry.reset();
                jitter(cfg.refresh, 0.1)
            }
            Err(e) => {
                let msg = failure_text(&e, ok_at, now());
                tracing::warn!("{msg}");
                if tx.send(status(Some(msg), None, version.clone())).await.is_err() {
                    return;
                }
                retry.next_delay()
            }
        };
        tokio::time::sleep(wait).await;
    }
}
