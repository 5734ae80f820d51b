//! The console's side of the event journal: it hands the journal's thread what the state saw
//! change and the actions of the audit log, and asks it every few seconds for the window the
//! Timeline view shows (answers come back as [`Msg::Timeline`](super::app::Msg::Timeline)).
//! No journal I/O runs on the console's task.

use super::app::App;
use super::app::Effect;
use crate::model::protocol::Update;
use crate::model::timeline::TimelineLoad;
use crate::store::timeline::{Answer, JournalError, Query, Request, Writer};

/// How often the console reads the journal again while the Timeline is shown (events other
/// consoles recorded show within it), and while it is not.
pub const REFRESH: std::time::Duration = std::time::Duration::from_secs(5);
pub const REFRESH_HIDDEN: std::time::Duration = std::time::Duration::from_secs(60);

/// How far back the Timeline view reads (at most [`crate::state::journal::SHOWN_MAX`] events).
pub const SHOWN_S: i64 = 7 * 86_400;

pub struct TimelineLink {
    pub writer: Writer,
    asked: Option<std::time::Instant>,
    /// The newest audit record handed to the journal.
    audit_seq: u64,
    /// The last failure, until the journal works again.
    pub failure: Option<JournalError>,
}

impl TimelineLink {
    pub fn new(writer: Writer) -> TimelineLink {
        TimelineLink { writer, asked: None, audit_seq: 0, failure: None }
    }
}

/// Hands the journal what changed (the state's new events, new audit outcomes) and asks for
/// the shown window again when it is due.
pub fn tick(app: &mut App) {
    let Some(l) = app.timeline.as_mut() else { return };
    let s = &mut app.live;
    let mut fx = Vec::new();
    let (mut events, seq) = s.timeline.take_unsent();
    // The audit log's new actions on this console's clusters.
    let fresh: Vec<crate::audit::Record> =
        app.audit.iter().filter(|r| r.seq > l.audit_seq).cloned().collect();
    if let Some(max) = fresh.iter().map(|r| r.seq).max() {
        l.audit_seq = max;
        let names: Vec<String> = s.clusters().iter().map(|c| s.cluster_of(c).to_string()).collect();
        let (main, label) = (s.cluster.to_string(), app.audit_cluster.clone());
        let map = |c: &str| {
            if names.iter().any(|n| n == c) {
                Some(c.to_string())
            } else {
                (label.as_deref() == Some(c) || c == main).then(|| main.clone())
            }
        };
        events.extend(crate::state::journal::from_audit(&fresh, &map));
    }
    if !events.is_empty() {
        fx.push(Effect::Timeline(Request::Record(events)));
    }
    let every = if app.ui.view == super::views::timeline::ID { REFRESH } else { REFRESH_HIDDEN };
    if l.asked.is_none_or(|t| t.elapsed() >= every) && !s.cluster.is_empty() {
        l.asked = Some(std::time::Instant::now());
        let mut clusters: Vec<String> = s.clusters().iter().map(|c| s.cluster_of(c).to_string()).collect();
        clusters.dedup();
        let now = app.wall_now.max(s.now);
        let query = Query {
            from: now - SHOWN_S,
            to: now + 3_600,
            clusters,
            limit: crate::state::journal::SHOWN_MAX,
            ..Default::default()
        };
        fx.push(Effect::Timeline(Request::Load { query, seq }));
    }
    app.emit_all(fx);
}

/// An answer from the journal's thread; returns whether the screen changes.
pub fn on_answer(app: &mut App, a: Answer) -> bool {
    let a = match a {
        Answer::Store(s) => return app.on_store(s),
        a => a,
    };
    let Some(l) = app.timeline.as_mut() else { return false };
    match a {
        Answer::Store(_) => false,
        Answer::Events { seq, events } => {
            app.feed_one(Update::Timeline(Box::new(TimelineLoad { seq, events })))
                && !app.ui.paused
                && app.ui.view == super::views::timeline::ID
        }
        Answer::Failed(e) => {
            app.ui.message = Some((e.to_string(), true));
            l.failure = Some(e);
            true
        }
        Answer::Recovered => {
            l.failure = None;
            false
        }
    }
}

/// The console is going: what it saw last is written before the thread stops.
pub fn finish(app: &mut App) -> Option<Writer> {
    tick(app);
    app.timeline.take().map(|l| l.writer)
}
