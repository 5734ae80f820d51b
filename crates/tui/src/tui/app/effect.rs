//! Effects: what the console asks of the world. Handlers never send; they push an [`Effect`]
//! (to the ops task, to a store's thread, to the Kubernetes backend), and [`App::carry`] — the
//! one place that does I/O on the console's behalf — carries them out. The loop takes them after
//! each message and tick ([`App::step`], [`App::take_effects`]); a test can read them before
//! they are carried.

use super::*;

/// Which ops task an [`Effect::Ops`] goes to.
#[derive(Debug, Clone, PartialEq)]
pub enum To {
    /// The console's own (a single cluster's).
    Console,
    /// A fleet cluster's, by name (the console's own when the console has no routes).
    Cluster(Text),
    /// Every ops task (break-glass starts and ends are recorded by each).
    All,
}

/// One thing the console asks to be done.
#[derive(Debug)]
pub enum Effect {
    /// A message to an ops task: a plan to run, an ack or a silence to audit and send, an
    /// audited event, break-glass.
    Ops(To, OpMsg),
    /// A request to the usage ledger's thread.
    Ledger(crate::store::ledger::Request),
    /// A request to the ack store's thread.
    Acks(crate::store::acks::Request),
    /// A request to the event journal's thread.
    Timeline(crate::store::timeline::Request),
    /// Switch the Kubernetes backend to this context.
    SwitchContext(String),
    /// Ask the polling backends for a refresh now.
    Refresh,
    /// Hand freed heap back to the system (off this task).
    TrimHeap,
}

impl App {
    /// Queues an effect (carried out after the message that caused it).
    pub fn emit(&mut self, e: Effect) {
        self.fx.push(e);
    }

    /// Queues several effects.
    pub fn emit_all(&mut self, fx: impl IntoIterator<Item = Effect>) {
        self.fx.extend(fx);
    }

    /// The effects queued since they were last taken.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.fx)
    }

    /// Handles a message without carrying out its effects: whether to redraw, and what it asks.
    pub fn step(&mut self, msg: Msg) -> (bool, Vec<Effect>) {
        let redraw = self.handle(msg);
        (redraw, self.take_effects())
    }

    /// Handles a message and carries out what it asks; returns whether the screen must be
    /// redrawn.
    pub fn update(&mut self, msg: Msg) -> bool {
        let (redraw, fx) = self.step(msg);
        self.carry(fx);
        redraw
    }

    /// Carries out the effects queued by ticks (the ledger, the acks, the journal), which run
    /// outside [`App::update`].
    pub fn flush(&mut self) {
        let fx = self.take_effects();
        self.carry(fx);
    }

    /// Carries out `fx` through the channels the console was started with. A channel that is
    /// gone is said on screen, never ignored where it loses an operator's action.
    pub fn carry(&mut self, fx: Vec<Effect>) {
        for e in fx {
            match e {
                Effect::Ops(to, msg) => self.send_ops(to, msg),
                Effect::Ledger(r) => {
                    if let Some(l) = &self.ledger {
                        l.writer.send(r);
                    }
                }
                Effect::Acks(r) => {
                    if let Some(l) = &self.acks {
                        l.worker.send(r);
                    }
                }
                Effect::Timeline(r) => {
                    if let Some(l) = &self.timeline {
                        l.writer.send(r);
                    }
                }
                Effect::SwitchContext(name) => {
                    if let Some(k) = &self.kube_ctx
                        && k.tx.send(name).is_err()
                    {
                        self.ui.message = Some(("the Kubernetes backend has stopped".into(), true));
                    }
                }
                Effect::Refresh => self.refresh_now.iter().for_each(|n| n.notify_one()),
                Effect::TrimHeap => {
                    tokio::task::spawn_blocking(|| {
                        let t = std::time::Instant::now();
                        crate::memory::release_free();
                        tracing::debug!(
                            ms = t.elapsed().as_secs_f64() * 1e3,
                            "freed heap handed back to the system"
                        );
                    });
                }
            }
        }
    }

    /// Every ops task: the one, or each fleet cluster's.
    pub(crate) fn ops_txs(&self) -> Vec<&tokio::sync::mpsc::UnboundedSender<OpMsg>> {
        self.ops_tx.iter().chain(self.routes.values().filter_map(|r| r.tx.as_ref())).collect()
    }

    fn send_ops(&mut self, to: To, msg: OpMsg) {
        let run = matches!(msg, OpMsg::Run(_));
        let (sent, cluster) = match to {
            To::All => {
                let txs = self.ops_txs();
                let sent = !txs.is_empty();
                for tx in txs {
                    let _ = tx.send(msg.clone());
                }
                (sent, None)
            }
            To::Console => (self.ops_tx.as_ref().is_some_and(|tx| tx.send(msg).is_ok()), None),
            To::Cluster(c) => {
                let tx = if self.routes.is_empty() {
                    self.ops_tx.as_ref()
                } else {
                    self.routes.get(&c).and_then(|r| r.tx.as_ref())
                };
                (tx.is_some_and(|tx| tx.send(msg).is_ok()), Some(c))
            }
        };
        if !sent && run {
            // A plan that did not leave: nothing was done, and the panel says where.
            let line = match cluster {
                Some(c) if !self.routes.is_empty() => {
                    format!(
                        "{}: its ops task is not running: nothing was sent there",
                        crate::sanitize::sanitize(&c)
                    )
                }
                _ => "the ops task stopped: nothing was done".into(),
            };
            if self.routes.is_empty() {
                self.op_panel = vec![(line, true)];
            } else {
                self.op_panel.push((line, true));
            }
        }
    }
}
