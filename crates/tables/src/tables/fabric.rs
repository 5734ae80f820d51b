//! Fabric: per node the fabric ports in short and the last acceptance (NCCL all_reduce) result
//! with its busbw trend and drift badges; the suspect nodes ranked by evidence; and every
//! InfiniBand/RoCE/EFA port with its state, rate, errors and flaps.

use super::detail::{kv, section, spark_line};
use super::fmt::{safe, untrusted};
use super::table::TableId;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, col, pack, to_json, unpack};
use super::tone::{Cell, Line};
use crate::acceptance::judge::DriftKind;
use crate::acceptance::{NodeAcceptance, Verdict};
use crate::model::ObjKey;
use crate::model::{FabricPort, Node, PortState};
use crate::state::{ClusterState, Evidence};
use std::borrow::Cow;

pub struct PortsTable;

pub const PORTS: TableId = TableId("fabric");
pub const NODES: TableId = TableId("fabric-nodes");

static COLS: [Column; 11] = [
    col(
        "NODE",
        12,
        |cx, key| {
            let (n, _) = get(cx.s, key);
            SortKey::Str(&n.name)
        },
        |cx, key| {
            let (n, _) = get(cx.s, key);
            let t = cx.tones;
            untrusted(&n.name, t.text)
        },
    ),
    col(
        "PORT",
        9,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Str(&p.name)
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            untrusted(&p.name, t.text)
        },
    ),
    col(
        "TYPE",
        4,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Int(p.kind as i64)
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(p.kind.label(), t.dim)
        },
    )
    .drop(4),
    col(
        "STATE",
        7,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Int(p.state as i64)
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(p.state.label(), if p.state == PortState::Active { t.ok } else { t.crit })
        },
    )
    .exact(),
    col(
        "RATE",
        5,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Int(i64::from(p.rate_gbps))
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(format!("{}G", p.rate_gbps), t.text)
        },
    )
    .right(),
    col(
        "RX",
        6,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Float(f64::from(p.rx_gbps))
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(format!("{:.0}G", p.rx_gbps), t.dim)
        },
    )
    .right()
    .drop(3),
    col(
        "TX",
        6,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Float(f64::from(p.tx_gbps))
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(format!("{:.0}G", p.tx_gbps), t.dim)
        },
    )
    .right()
    .drop(3),
    col(
        "SYMERR",
        7,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Int(p.symbol_errors as i64)
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            let bad = |v: u64| if v > 0 { t.warn } else { t.dim };
            Cell::new(p.symbol_errors.to_string(), bad(p.symbol_errors))
        },
    )
    .right(),
    col(
        "RCVERR",
        7,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Int(p.rcv_errors as i64)
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            let bad = |v: u64| if v > 0 { t.warn } else { t.dim };
            Cell::new(p.rcv_errors.to_string(), bad(p.rcv_errors))
        },
    )
    .right()
    .drop(2),
    col(
        "LNKDN",
        5,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Int(p.link_downed as i64)
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            let bad = |v: u64| if v > 0 { t.warn } else { t.dim };
            Cell::new(p.link_downed.to_string(), bad(p.link_downed))
        },
    )
    .right()
    .drop(1),
    col(
        "FLAPS",
        5,
        |cx, key| {
            let (_, p) = get(cx.s, key);
            SortKey::Int(i64::from(p.flaps))
        },
        |cx, key| {
            let (_, p) = get(cx.s, key);
            let t = cx.tones;
            let bad = |v: u64| if v > 0 { t.warn } else { t.dim };
            Cell::new(
                p.flaps.to_string(),
                if p.flaps >= cx.s.thresholds.flap_count { t.crit } else { bad(u64::from(p.flaps)) },
            )
        },
    )
    .right(),
];

fn get(s: &ClusterState, key: RowKey) -> (&Node, &FabricPort) {
    let (n, p) = unpack(key);
    (&s.nodes[n], &s.nodes[n].ports[p])
}

impl TableSource for PortsTable {
    fn id(&self) -> TableId {
        PORTS
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let (n, p) = unpack(key);
        let node = &cx.s.nodes[n];
        // One flat object per port: its node, then the port's fields (`name` is the port).
        let mut v = to_json(&node.ports[p]);
        if let Some(o) = v.as_object_mut()
            && let Some(name) = o.remove("name")
        {
            o.insert("port".into(), name);
        }
        super::table::with_field("node", node.name.as_str(), v)
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        let (ni, pi) = unpack(key);
        let port = cx.s.nodes.get(ni)?.ports.get(pi)?;
        Some(ObjKey::Port(cx.s.node_key(ni)?, port.name.clone()))
    }

    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let ObjKey::Port(node, port) = id else { return None };
        let ni = cx.s.node_at(node)?;
        let pi = cx.s.nodes[ni].ports.iter().position(|p| p.name == *port)?;
        Some(pack(ni, pi))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        let s = cx.s;
        for (i, n) in s.nodes.iter().enumerate() {
            out.extend((0..n.ports.len()).map(|p| pack(i, p)));
        }
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let (n, p) = get(cx.s, key);
        vec![n.name.as_str().into(), p.name.as_str().into(), p.state.label().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let (n, p) = get(cx.s, key);
        Some(match name {
            "node" => n.name.as_str().into(),
            "port" => p.name.as_str().into(),
            "state" => p.state.label().into(),
            "type" | "kind" => p.kind.label().into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["node", "port", "state", "type", "kind"]
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
    let t = cx.tones;
    let mut out = vec![
        kv(cx, "port", Cell::new(format!("{}/{}", safe(&n.name), safe(&p.name)), t.accent)),
        kv(cx, "type", Cell::new(p.kind.label(), t.text)),
        kv(cx, "state", Cell::new(p.state.label(), if p.state == PortState::Active { t.ok } else { t.crit })),
        kv(cx, "rate", Cell::new(format!("{} Gb/s", p.rate_gbps), t.text)),
        kv(cx, "traffic", Cell::new(format!("rx {:.1} Gb/s  tx {:.1} Gb/s", p.rx_gbps, p.tx_gbps), t.text)),
        kv(
            cx,
            "errors",
            Cell::new(
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
            Cell::new(
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
        out.push(spark_line(cx, width, "errors", cx.glyphs.spark(errs.into_iter(), max), last));
    }
    out
}

/// Per node: the fabric ports in short, and the last acceptance result, its trend and drift.
pub struct NodesTable;

static NODE_COLS: [Column; 9] = [
    col(
        "NODE",
        12,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            SortKey::Str(&n.name)
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let t = cx.tones;
            untrusted(&n.name, t.text)
        },
    ),
    col(
        "VERDICT",
        8,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            let a = acceptance(cx.s, n);
            SortKey::Int(verdict_rank(a.and_then(|a| a.last_verdict)))
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let a = acceptance(cx.s, n);
            verdict_span(cx, a.and_then(|a| a.last_verdict))
        },
    )
    .exact(),
    col(
        "BUSBW",
        6,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            let a = acceptance(cx.s, n);
            SortKey::Float(a.and_then(|a| a.last_busbw).unwrap_or(-1.0))
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let t = cx.tones;
            let a = acceptance(cx.s, n);
            let dash = || Cell::new("-", t.dim);
            a.and_then(|a| a.last_busbw).map_or_else(dash, |b| Cell::new(format!("{b:.1}"), t.text))
        },
    )
    .right(),
    col(
        "BASE%",
        5,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            let a = acceptance(cx.s, n);
            SortKey::Float(a.and_then(|a| a.last_pct).unwrap_or(-1.0))
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let t = cx.tones;
            let a = acceptance(cx.s, n);
            let dash = || Cell::new("-", t.dim);
            a.and_then(|a| a.last_pct)
                .map_or_else(dash, |p| Cell::new(format!("{p:.0}%"), if p < 90.0 { t.warn } else { t.dim }))
        },
    )
    .right()
    .drop(3),
    col(
        "TREND",
        12,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            let a = acceptance(cx.s, n);
            SortKey::Float(a.and_then(|a| a.last_busbw).unwrap_or(-1.0))
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let t = cx.tones;
            let a = acceptance(cx.s, n);
            Cell::new(a.map(|a| busbw_spark(cx.glyphs, &a.history, 12)).unwrap_or_default(), t.accent)
        },
    )
    .drop(2),
    col(
        "DRIFT",
        14,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            let a = acceptance(cx.s, n);
            SortKey::Int(a.map_or(0, |a| a.drift.len() as i64))
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let t = cx.tones;
            let a = acceptance(cx.s, n);
            Cell::new(a.map(|a| drift_badges(cx.glyphs, a)).unwrap_or_default(), t.warn)
        },
    )
    .drop(1),
    col(
        "PORTS",
        5,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            let (up, _, _) = port_sums(n);
            SortKey::Int(up as i64)
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let t = cx.tones;
            let (up, _, _) = port_sums(n);
            Cell::new(format!("{up}/{}", n.ports.len()), if up < n.ports.len() { t.crit } else { t.dim })
        },
    )
    .right()
    .drop(4),
    col(
        "ERRS",
        6,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            let (_, errs, _) = port_sums(n);
            SortKey::Int(errs as i64)
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let t = cx.tones;
            let (_, errs, _) = port_sums(n);
            let bad_ports = n.ports.iter().any(|p| crate::state::port_flagged(p, &cx.s.thresholds));
            Cell::new(errs.to_string(), if bad_ports && errs > 0 { t.warn } else { t.dim })
        },
    )
    .right(),
    col(
        "FLAPS",
        5,
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return SortKey::Int(0) };
            let (_, _, flaps) = port_sums(n);
            SortKey::Int(i64::from(flaps))
        },
        |cx, key| {
            let Some(n) = cx.s.nodes.get(key as usize) else { return Cell::raw("") };
            let t = cx.tones;
            let (_, _, flaps) = port_sums(n);
            Cell::new(
                flaps.to_string(),
                if flaps >= cx.s.thresholds.flap_count {
                    t.crit
                } else if flaps > 0 {
                    t.warn
                } else {
                    t.dim
                },
            )
        },
    )
    .right(),
];

fn acceptance<'a>(s: &'a ClusterState, n: &Node) -> Option<&'a NodeAcceptance> {
    s.acceptance_of(n)
}

/// The verdict's label and theme style.
pub fn verdict_span<'a>(cx: &Cx<'a>, v: Option<Verdict>) -> Cell<'a> {
    let t = cx.tones;
    match v {
        Some(Verdict::Pass) => Cell::new("pass", t.ok),
        Some(Verdict::Degraded) => Cell::new("degraded", t.warn),
        Some(Verdict::Fail) => Cell::new("fail", t.crit),
        None => Cell::new("-", t.dim),
    }
}

fn verdict_rank(v: Option<Verdict>) -> i64 {
    match v {
        None => 0,
        Some(Verdict::Pass) => 1,
        Some(Verdict::Degraded) => 2,
        Some(Verdict::Fail) => 3,
    }
}

/// A busbw sparkline, `width` points at most: scaled from just under the lowest value to the
/// highest, so a drop of a few percent shows.
pub fn busbw_spark(g: super::fmt::Glyphs, history: &[f64], width: usize) -> String {
    let pts: Vec<f64> =
        history[history.len().saturating_sub(width)..].iter().copied().filter(|v| v.is_finite()).collect();
    let hi = pts.iter().copied().fold(f64::MIN, f64::max);
    let lo = pts.iter().copied().fold(f64::MAX, f64::min) * 0.9;
    if pts.is_empty() || hi <= 0.0 {
        return String::new();
    }
    let span = (hi - lo).max(1e-9);
    g.spark(pts.iter().map(|v| ((v - lo) / span * 100.0).clamp(1.0, 100.0) as u32), 100)
}

/// Short drift badges: `drv cuda nccl img bw▼`.
pub fn drift_badges(g: super::fmt::Glyphs, a: &NodeAcceptance) -> String {
    let mut out: Vec<String> = a
        .drift
        .iter()
        .map(|d| match d.kind {
            DriftKind::Driver => "drv".to_string(),
            DriftKind::Cuda => "cuda".into(),
            DriftKind::Nccl => "nccl".into(),
            DriftKind::Image => "img".into(),
            DriftKind::Busbw => format!("bw{}", g.down()),
        })
        .collect();
    out.dedup();
    out.join(" ")
}

fn port_sums(n: &Node) -> (usize, u64, u32) {
    let up = n.ports.iter().filter(|p| p.state == PortState::Active).count();
    let errs = n.ports.iter().map(|p| p.symbol_errors + p.rcv_errors).sum();
    let flaps = n.ports.iter().map(|p| p.flaps).sum();
    (up, errs, flaps)
}

impl TableSource for NodesTable {
    fn id(&self) -> TableId {
        NODES
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        node_detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let node = &cx.s.nodes[key as usize];
        serde_json::json!({"node": node.name, "ports": node.ports,
                           "acceptance": cx.s.acceptance_of(node)})
    }

    fn columns(&self) -> &'static [Column] {
        &NODE_COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.node_key(key as usize).map(ObjKey::Node)
    }

    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let ObjKey::Node(n) = id else { return None };
        cx.s.node_at(n).map(|i| i as RowKey)
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        // Every node: one without port telemetry (a scheduler alone) can still be tested.
        out.extend((0..cx.s.nodes.len()).map(|i| i as RowKey));
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let Some(n) = cx.s.nodes.get(key as usize) else { return vec![] };
        let v = acceptance(cx.s, n).and_then(|a| a.last_verdict).map_or("-", Verdict::label);
        vec![n.name.as_str().into(), v.into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let n = cx.s.nodes.get(key as usize)?;
        let a = acceptance(cx.s, n);
        Some(match name {
            "node" => n.name.as_str().into(),
            "verdict" => a.and_then(|a| a.last_verdict).map_or("-", Verdict::label).into(),
            "drift" => a
                .map(|a| a.drift.iter().map(|d| d.kind.label()).collect::<Vec<_>>().join(","))
                .unwrap_or_default()
                .into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["node", "verdict", "drift"]
    }

    fn marked(&self, cx: &Cx<'_>, key: RowKey) -> bool {
        cx.s.nodes.get(key as usize).is_some_and(|n| cx.marked.node(cx, n))
    }
}

/// The detail of a node's fabric and acceptance results.
pub fn node_detail<'a>(cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
    let s = cx.s;
    let Some(n) = s.nodes.get(key as usize) else { return vec![] };
    let t = cx.tones;
    let (up, errs, flaps) = port_sums(n);
    let mut out = vec![
        kv(cx, "node", Cell::new(safe(&n.name).into_owned(), t.accent)),
        kv(
            cx,
            "ports",
            Cell::new(format!("{up}/{} up, {errs} errors, {flaps} flaps", n.ports.len()), t.text),
        ),
    ];
    let Some(a) = acceptance(s, n) else {
        out.push(kv(cx, "accept.", Cell::new("no acceptance run recorded yet", t.dim)));
        return out;
    };
    out.push(section(cx, "last acceptance run"));
    out.push(kv(cx, "verdict", verdict_span(cx, a.last_verdict)));
    out.push(kv(cx, "why", Cell::new(safe(&a.last_why).into_owned(), t.text)));
    if let Some(b) = a.last_baseline {
        out.push(kv(cx, "baseline", Cell::new(format!("{b:.1} GB/s"), t.text)));
    }
    out.push(kv(cx, "at", Cell::new(super::fmt::stamp_rel(cx.s.now, a.last_at), t.text)));
    out.push(kv(cx, "run", Cell::new(safe(&a.last_run).into_owned(), t.dim)));
    let w = (width as usize).saturating_sub(14).clamp(1, 120);
    if !a.history.is_empty() {
        let last = a.history.last().map(|v| format!(" {v:.1} GB/s"));
        out.push(spark_line(cx, width, "busbw", busbw_spark(cx.glyphs, &a.history, w), last));
    }
    if !a.drift.is_empty() {
        out.push(section(cx, "drift"));
        for d in crate::state::suspects::drift_phrases(a) {
            out.push(Line::styled(safe(&d).into_owned(), t.warn));
        }
    }
    out
}

/// The suspect nodes, worst first: one line each, the node, its evidence and the reason.
pub fn suspect_lines<'a>(cx: &Cx<'a>, width: u16, max: usize) -> Vec<Line<'a>> {
    let t = cx.tones;
    let list = crate::state::suspects(cx.s);
    if list.is_empty() {
        return vec![Line::styled("none: no failed, degraded or drifting node, no bad port", t.dim)];
    }
    let total = list.len();
    let room = if total > max { max.saturating_sub(1) } else { max };
    let mut out: Vec<Line> = list
        .into_iter()
        .take(room)
        .enumerate()
        .map(|(i, x)| {
            let style = match x.evidence {
                Evidence::Fail => t.crit,
                Evidence::Degraded | Evidence::Drift => t.warn,
                Evidence::Fabric => t.info,
            };
            let head = format!("{:>2} {:<12} ", i + 1, safe(&x.node));
            let tag = format!("{:<8} ", x.evidence.label());
            let room = (width as usize).saturating_sub(head.len() + tag.len());
            let reason = safe(&x.reason);
            let reason: String = if reason.chars().count() > room {
                let cut: String = reason.chars().take(room.saturating_sub(1)).collect();
                format!("{cut}{}", if cx.glyphs.unicode { "…" } else { "~" })
            } else {
                reason.into_owned()
            };
            Line::from(vec![Cell::new(head, t.text), Cell::new(tag, style), Cell::new(reason, t.dim)])
        })
        .collect();
    if total > room {
        out.push(Line::styled(format!("   … {} more", total - room), t.dim));
    }
    out
}
