//! Fabric: every InfiniBand/RoCE/EFA port with its state, rate, errors and flaps.

use super::super::widgets::table::{Column, Cx, RowKey, SortKey, TableSource, col, pack, unpack};
use super::super::widgets::{safe, untrusted};
use super::detail::{kv, section, spark_line};
use crate::model::{FabricPort, Node, PortState};
use crate::state::ClusterState;
use ratatui::text::{Line, Span};
use std::borrow::Cow;

pub struct PortsTable;

static COLS: [Column; 11] = [
    col("NODE", 12),
    col("PORT", 9),
    col("TYPE", 4).drop(4),
    col("STATE", 7),
    col("RATE", 5).right(),
    col("RX", 6).right().drop(3),
    col("TX", 6).right().drop(3),
    col("SYMERR", 7).right(),
    col("RCVERR", 7).right().drop(2),
    col("LNKDN", 5).right().drop(1),
    col("FLAPS", 5).right(),
];

fn get(s: &ClusterState, key: RowKey) -> (&Node, &FabricPort) {
    let (n, p) = unpack(key);
    (&s.nodes[n], &s.nodes[n].ports[p])
}

impl TableSource for PortsTable {
    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        let s = cx.s;
        for (i, n) in s.nodes.iter().enumerate() {
            out.extend((0..n.ports.len()).map(|p| pack(i, p)));
        }
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let s = cx.s;
        let (n, p) = get(s, key);
        vec![n.name.as_str().into(), p.name.as_str().into(), p.state.label().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let s = cx.s;
        let (n, p) = get(s, key);
        Some(match name {
            "node" => n.name.as_str().into(),
            "port" => p.name.as_str().into(),
            "state" => p.state.label().into(),
            "type" | "kind" => p.kind.label().into(),
            _ => return None,
        })
    }

    fn sort_key<'a>(&self, cx: &Cx<'a>, key: RowKey, c: usize) -> SortKey<'a> {
        let s = cx.s;
        let (n, p) = get(s, key);
        match c {
            0 => SortKey::Str(&n.name),
            1 => SortKey::Str(&p.name),
            2 => SortKey::Int(p.kind as i64),
            3 => SortKey::Int(p.state as i64),
            4 => SortKey::Int(i64::from(p.rate_gbps)),
            5 => SortKey::Float(f64::from(p.rx_gbps)),
            6 => SortKey::Float(f64::from(p.tx_gbps)),
            7 => SortKey::Int(p.symbol_errors as i64),
            8 => SortKey::Int(p.rcv_errors as i64),
            9 => SortKey::Int(p.link_downed as i64),
            _ => SortKey::Int(i64::from(p.flaps)),
        }
    }

    fn cells<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Span<'a>> {
        let (n, p) = get(cx.s, key);
        let t = cx.theme;
        let bad = |v: u64| if v > 0 { t.warn } else { t.dim };
        vec![
            untrusted(&n.name, t.text),
            untrusted(&p.name, t.text),
            Span::styled(p.kind.label(), t.dim),
            Span::styled(p.state.label(), if p.state == PortState::Active { t.ok } else { t.crit }),
            Span::styled(format!("{}G", p.rate_gbps), t.text),
            Span::styled(format!("{:.0}G", p.rx_gbps), t.dim),
            Span::styled(format!("{:.0}G", p.tx_gbps), t.dim),
            Span::styled(p.symbol_errors.to_string(), bad(p.symbol_errors)),
            Span::styled(p.rcv_errors.to_string(), bad(p.rcv_errors)),
            Span::styled(p.link_downed.to_string(), bad(p.link_downed)),
            Span::styled(
                p.flaps.to_string(),
                if p.flaps >= cx.s.thresholds.flap_count { t.crit } else { bad(u64::from(p.flaps)) },
            ),
        ]
    }

    fn default_sort(&self) -> (usize, bool) {
        (0, false)
    }
}

pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
    let (ni, pi) = unpack(key);
    let s = cx.s;
    let Some(n) = s.nodes.get(ni) else { return vec![] };
    let Some(p) = n.ports.get(pi) else { return vec![] };
    let t = cx.theme;
    let mut out = vec![
        kv(cx, "port", Span::styled(format!("{}/{}", safe(&n.name), safe(&p.name)), t.accent)),
        kv(cx, "type", Span::styled(p.kind.label(), t.text)),
        kv(
            cx,
            "state",
            Span::styled(p.state.label(), if p.state == PortState::Active { t.ok } else { t.crit }),
        ),
        kv(cx, "rate", Span::styled(format!("{} Gb/s", p.rate_gbps), t.text)),
        kv(
            cx,
            "traffic",
            Span::styled(format!("rx {:.1} Gb/s  tx {:.1} Gb/s", p.rx_gbps, p.tx_gbps), t.text),
        ),
        kv(
            cx,
            "errors",
            Span::styled(
                format!(
                    "symbol {}  receive {}  xmit discards {}",
                    p.symbol_errors, p.rcv_errors, p.xmit_discards
                ),
                t.text,
            ),
        ),
        kv(
            cx,
            "link down",
            Span::styled(
                format!("{} (flaps in window: {})", p.link_downed, p.flaps),
                if p.flaps > 0 { t.warn } else { t.text },
            ),
        ),
    ];
    let w = (width as usize).saturating_sub(14).min(120);
    let errs = s.node_port_error_history(ni, w);
    if !errs.is_empty() {
        out.push(section(cx, "node port errors (all ports)"));
        let max = errs.iter().copied().max().unwrap_or(1);
        let last = errs.last().map(|v| format!(" {v}"));
        out.push(spark_line(cx, "errors", cx.glyphs.spark(errs.into_iter(), max), last));
    }
    out
}
