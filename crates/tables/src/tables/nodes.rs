//! Nodes: one row per node with its scheduling state, GPU allocation and health.

use super::detail::{kv, section, spark_line};
use super::fmt::{ago, bytes, opt, power, untrusted};
use super::table::TableId;
use super::table::to_json;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col};
use super::tone::{Cell, Line, Tone};
use crate::model::ObjKey;
use crate::model::{Node, NodeState};
use crate::state::ClusterState;
use std::borrow::Cow;

pub struct NodesTable;

pub const TABLE: TableId = TableId("nodes");

static COLS: [Column; 13] = [
    col(
        "NAME",
        12,
        |cx, k| SortKey::Str(&node(cx.s, k).name),
        |cx, k| untrusted(&node(cx.s, k).name, cx.tones.text),
    ),
    col(
        "STATE",
        8,
        |cx, k| SortKey::Int(node(cx.s, k).state as i64),
        |cx, k| {
            let st = node(cx.s, k).state;
            Cell::new(st.label(), state_style(cx, st))
        },
    )
    .exact(),
    // One host, two schedulers: the other scheduler's state of a paired host (`!`: they
    // disagree). Only when some host is paired.
    col(
        "OTHER SCHED",
        13,
        |cx, k| SortKey::Int(twin_order(cx.s, k as usize)),
        |cx, k| match cx.s.twin(k as usize) {
            Some(t) => {
                let bang = if t.mismatch_since.is_some() { "!" } else { "" };
                let cell = Cell::new(
                    format!("{bang}{} {}", t.other.short(), t.node.state.label()),
                    if t.mismatch_since.is_some() { cx.tones.warn } else { state_style(cx, t.node.state) },
                );
                if t.mismatch_since.is_some() { cell.strong() } else { cell }
            }
            None => Cell::raw(""),
        },
    )
    .only_if(ClusterState::has_twins)
    .drop(1),
    col(
        "POOL",
        8,
        |cx, k| SortKey::Str(&node(cx.s, k).pool),
        |cx, k| untrusted(&node(cx.s, k).pool, cx.tones.dim),
    )
    .drop(3),
    col(
        "GPU",
        5,
        |cx, k| SortKey::Int(i64::from(node(cx.s, k).gpu_alloc)),
        |cx, k| {
            let n = node(cx.s, k);
            let failed = n.gpus.iter().any(|g| g.is_failed());
            Cell::new(
                format!("{}/{}", n.gpu_alloc, n.gpu_slots),
                if failed { cx.tones.crit } else { cx.tones.text },
            )
        },
    )
    .right(),
    col(
        "UTIL",
        4,
        |cx, k| SortKey::Float(f64::from(node(cx.s, k).mean_util().unwrap_or(-1.0))),
        |cx, k| {
            Cell::new(node(cx.s, k).mean_util().map_or("-".into(), |u| format!("{u:.0}%")), cx.tones.text)
        },
    )
    .right(),
    col(
        "TEMP",
        4,
        |cx, k| SortKey::Int(i64::from(node(cx.s, k).max_temp().unwrap_or(0))),
        |cx, k| {
            let temp = node(cx.s, k).max_temp();
            Cell::new(
                opt(temp.map(|c| format!("{c}C"))),
                cx.tones.level(u32::from(temp.unwrap_or(0)), 80, 88),
            )
        },
    )
    .right(),
    col(
        "POWER",
        6,
        |cx, k| SortKey::Int(i64::from(node(cx.s, k).power_w())),
        |cx, k| {
            let n = node(cx.s, k);
            // No GPU reported its power (a down node): unknown, not 0 W.
            let known = n.gpus.iter().any(|g| g.power_w.is_some());
            Cell::new(if known { power(f64::from(n.power_w())) } else { "-".into() }, cx.tones.text)
        },
    )
    .right()
    .drop(2),
    col(
        "CPU",
        7,
        |cx, k| SortKey::Int(i64::from(node(cx.s, k).cpus_alloc)),
        |cx, k| {
            let n = node(cx.s, k);
            Cell::new(format!("{}/{}", n.cpus_alloc, n.cpus_total), cx.tones.dim)
        },
    )
    .right()
    .drop(4),
    col(
        "MEM",
        11,
        |cx, k| SortKey::Int(node(cx.s, k).mem_alloc_mib as i64),
        |cx, k| {
            let n = node(cx.s, k);
            Cell::new(
                format!("{}/{}", bytes(n.mem_alloc_mib << 20), bytes(n.mem_total_mib << 20)),
                cx.tones.dim,
            )
        },
    )
    .right()
    .drop(5),
    col(
        "MODEL",
        14,
        |cx, k| SortKey::Str(node(cx.s, k).gpu_model()),
        |cx, k| untrusted(node(cx.s, k).gpu_model().trim_start_matches("NVIDIA "), cx.tones.dim),
    )
    .drop(6),
    col(
        "REASON",
        10,
        |cx, k| SortKey::Str(node(cx.s, k).reason.as_ref().map_or("", |r| r.text.as_str())),
        |cx, k| match &node(cx.s, k).reason {
            Some(r) => untrusted(&r.text, cx.tones.warn),
            None => Cell::raw(""),
        },
    ),
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(cx.s.cluster_of(&node(cx.s, k).cluster)),
        |cx, k| cluster_cell(cx, &node(cx.s, k).cluster),
    )
    .drop(9)
    .fleet(),
];

pub fn state_style(cx: &Cx<'_>, st: NodeState) -> Tone {
    match st {
        NodeState::Down | NodeState::DownDrain | NodeState::Unknown => cx.tones.crit,
        NodeState::Drained | NodeState::Draining | NodeState::Cordoned | NodeState::Maintenance => {
            cx.tones.warn
        }
        NodeState::Idle => cx.tones.dim,
        _ => cx.tones.ok,
    }
}

fn node(s: &ClusterState, key: RowKey) -> &Node {
    &s.nodes[key as usize]
}

/// Sorts disagreeing pairs first, then by the other scheduler's state; unpaired nodes last.
fn twin_order(s: &ClusterState, i: usize) -> i64 {
    match s.twin(i) {
        Some(t) if t.mismatch_since.is_some() => -1,
        Some(t) => t.node.state as i64,
        None => i64::MAX,
    }
}

/// The node's JSON, with the other scheduler's node of a paired host under `twin`.
fn node_json(s: &ClusterState, i: usize) -> serde_json::Value {
    let mut v = to_json(&s.nodes[i]);
    if let (Some(t), Some(o)) = (s.twin(i), v.as_object_mut()) {
        let n = t.node;
        o.insert(
            "twin".into(),
            serde_json::json!({
                "scheduler": t.other,
                "cluster": s.cluster_of(&n.cluster),
                "name": n.name,
                "state": n.state,
                "reason": n.reason,
                "mismatch_since": t.mismatch_since,
            }),
        );
    }
    v
}

impl TableSource for NodesTable {
    fn id(&self) -> TableId {
        TABLE
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        node_json(cx.s, key as usize)
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.node_key(key as usize).map(ObjKey::Node)
    }

    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let ObjKey::Node(n) = id else { return None };
        // Either node of a paired host is found on its host's row (the Slurm node's).
        cx.s.node_at(n).map(|i| cx.s.host_row(i) as RowKey)
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        let s = cx.s;
        if s.has_twins() {
            // A paired host is one row: its Kubernetes node shows in the Slurm node's row.
            out.extend((0..s.nodes.len()).filter(|&i| !s.is_kube_twin(i)).map(|i| i as RowKey));
        } else {
            out.extend(0..s.nodes.len() as RowKey);
        }
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let n = node(cx.s, key);
        let mut v =
            vec![Cow::Borrowed(n.name.as_str()), Cow::Borrowed(n.pool.as_str()), n.state.label().into()];
        if let Some(r) = &n.reason {
            v.push(Cow::Borrowed(r.text.as_str()));
        }
        v
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let n = node(cx.s, key);
        Some(match name {
            "cluster" => cx.s.cluster_of(&n.cluster).as_str().into(),
            "name" => n.name.as_str().into(),
            "state" => n.state.label().into(),
            "pool" | "partition" => n.pool.as_str().into(),
            "model" => n.gpu_model().into(),
            "reason" => n.reason.as_ref()?.text.as_str().into(),
            "driver" => n.driver.as_deref()?.into(),
            "twin" => {
                let t = cx.s.twin(key as usize)?;
                format!("{}/{}", cx.s.cluster_of(&t.node.cluster), t.node.name).into()
            }
            "twin_state" => cx.s.twin(key as usize)?.node.state.label().into(),
            label => n.labels.iter().find(|(k, _)| k.eq_ignore_ascii_case(label))?.1.as_str().into(),
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["cluster", "name", "state", "pool", "partition", "model", "reason", "driver", "twin", "twin_state"]
    }

    fn marked(&self, cx: &Cx<'_>, key: RowKey) -> bool {
        cx.marked.node(cx, node(cx.s, key))
    }
}

/// The detail pane of a node: scheduling state with who/when, hardware, GPUs, ports, history.
pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
    let s = cx.s;
    let Some(n) = s.nodes.get(key as usize) else { return vec![] };
    let t = cx.tones;
    let g = cx.glyphs;
    let mut out = vec![
        kv(cx, "node", untrusted(&n.name, t.accent)),
        kv(cx, "state", Cell::new(n.state.label(), state_style(cx, n.state))),
    ];
    if let Some(r) = &n.reason {
        out.push(kv(cx, "reason", untrusted(&r.text, t.warn)));
        out.push(kv(
            cx,
            "set by",
            Cell::new(format!("{} {}", super::fmt::safe(&r.by), ago(s.now, r.at)), t.dim),
        ));
    }
    out.extend(twin_lines(cx, key as usize));
    // What is wrong comes first: each incident about this node, its GPU or its port, worst
    // first (the one the operator jumped from is among them), above the fold at 80×24.
    let faults = faults(s, n);
    for (part, inc) in &faults {
        let what = match part {
            Part::Gpu(i) => format!("GPU {i}: "),
            Part::Port(p) => format!("port {}: ", super::fmt::safe(p)),
            Part::Node => String::new(),
        };
        out.push(kv(
            cx,
            "incident",
            Cell::new(format!("{what}{}", super::fmt::safe(&inc.title)), severity_style(cx, inc)),
        ));
    }
    out.push(kv(cx, "pool", untrusted(&n.pool, t.text)));
    out.push(kv(
        cx,
        "gpus",
        Cell::new(format!("{}/{} allocated, {}", n.gpu_alloc, n.gpu_slots, n.gpu_model()), t.text),
    ));
    out.push(kv(
        cx,
        "cpu/mem",
        Cell::new(
            format!(
                "{}/{} cpus, {}/{}",
                n.cpus_alloc,
                n.cpus_total,
                bytes(n.mem_alloc_mib << 20),
                bytes(n.mem_total_mib << 20)
            ),
            t.text,
        ),
    ));
    out.push(kv(
        cx,
        "driver",
        Cell::new(format!("{} cuda {}", opt(n.driver.as_deref()), opt(n.cuda.as_deref())), t.text),
    ));
    let w = (width as usize).saturating_sub(14).min(120);
    if let Some(i) = s.node_index_in(&n.cluster, &n.name) {
        let util = s.node_util_history(i, w);
        let last = util.last().map(|v| format!(" {v}%"));
        out.push(spark_line(cx, width, "util", g.spark(util.into_iter().map(u32::from), 100), last));
        let power = s.node_power_history(i, w);
        let maxp = power.iter().copied().max().unwrap_or(1);
        let last = power.last().map(|v| format!(" {}", super::fmt::power(*v as f64)));
        out.push(spark_line(cx, width, "power", g.spark(power.into_iter(), maxp), last));
    }
    out.extend(super::detail::focus_history(cx, &crate::model::protocol::Focus::Node(n.name.clone()), width));
    // GPUs and ports an incident is about lead their lists, marked and in its colour.
    let fault_of = |p: &Part| faults.iter().find(|(q, _)| q == p).map(|(_, i)| severity_style(cx, i));
    let mut gpus: Vec<_> = n.gpus.iter().collect();
    gpus.sort_by_key(|g| faults.iter().position(|(p, _)| *p == Part::Gpu(g.index)).unwrap_or(usize::MAX));
    let faulty = faults.iter().any(|(p, _)| matches!(p, Part::Gpu(_)));
    out.push(section(cx, if faulty { "GPUs (with an incident first)" } else { "GPUs" }));
    for gpu in gpus {
        let util = gpu.util.unwrap_or(0);
        // Unknown readings show as `-`, never as 0 or a bare unit.
        let util_s = opt(gpu.util.map(|u| format!("{u}%")));
        let temp_s = opt(gpu.temp_c.map(|c| format!("{c}C")));
        let index = match fault_of(&Part::Gpu(gpu.index)) {
            Some(st) => Cell::new(format!("!{:>2} ", gpu.index), st).strong(),
            None => Cell::new(format!("{:>3} ", gpu.index), t.dim),
        };
        let mut spans = vec![
            index,
            Cell::new(g.bar(u32::from(util), 10), t.accent),
            Cell::new(
                format!(" {util_s:>4} {temp_s:>4} "),
                t.level(u32::from(gpu.temp_c.unwrap_or(0)), 80, 88),
            ),
            Cell::new(opt(gpu.job.map(|j| format!("job {j}"))), t.text),
        ];
        if let Some(x) = gpu.xid {
            spans.push(Cell::new(format!("  XID {}", x.code), t.crit));
        }
        if gpu.ecc.dbe > 0 {
            spans.push(Cell::new(format!("  DBE {}", gpu.ecc.dbe), t.crit));
        }
        let l = &gpu.links;
        if l.nvlink_crc > 0 || l.nvlink_replay > 0 {
            spans.push(Cell::new(
                format!("  NVL err {}", l.nvlink_crc.saturating_add(l.nvlink_replay)),
                t.warn,
            ));
        }
        if l.pcie_replay > 0 {
            spans.push(Cell::new(format!("  PCIe replay {}", l.pcie_replay), t.warn));
        }
        if !gpu.mig.is_empty() {
            spans.push(Cell::new(format!("  MIG {}", gpu.mig.len()), t.info));
        }
        out.push(Line::from(spans));
    }
    let procs: Vec<_> = n.gpus.iter().flat_map(|g| &g.processes).collect();
    if !procs.is_empty() {
        out.push(section(cx, "GPU processes and their owners"));
        for p in procs {
            out.push(proc_line(cx, p, true));
        }
    }
    if !n.ports.is_empty() {
        out.push(section(cx, "fabric"));
        let mut ports: Vec<_> = n.ports.iter().collect();
        ports.sort_by_key(|p| {
            faults.iter().position(|(q, _)| *q == Part::Port(p.name.to_string())).unwrap_or(usize::MAX)
        });
        for p in ports {
            let st = if p.state == crate::model::PortState::Active { t.ok } else { t.crit };
            let name = match fault_of(&Part::Port(p.name.to_string())) {
                Some(f) => Cell::new(format!("! {:<10} ", super::fmt::safe(&p.name)), f).strong(),
                None => Cell::new(format!("  {:<10} ", super::fmt::safe(&p.name)), t.text),
            };
            out.push(Line::from(vec![
                name,
                Cell::new(format!("{:<7}", p.state.label()), st),
                Cell::new(format!(" {}G err {} flaps {}", p.rate_gbps, p.errors(), p.flaps), t.dim),
            ]));
        }
    }
    if !n.labels.is_empty() {
        out.push(section(cx, "labels"));
        for (k, v) in &n.labels {
            out.push(Line::from(vec![
                Cell::new(format!("  {}=", super::fmt::safe(k)), t.dim),
                untrusted(v, t.text),
            ]));
        }
    }
    out
}

/// A paired host's other scheduler: its node, state, reason with who set it and when, and
/// since when the two disagree.
fn twin_lines<'a>(cx: &Cx<'a>, i: usize) -> Vec<Line<'a>> {
    let s = cx.s;
    let t = cx.tones;
    let Some(tw) = s.twin(i) else { return vec![] };
    let n = tw.node;
    let safe = super::fmt::safe;
    let mut out = vec![
        section(cx, &format!("one host, two schedulers: this node in {}", tw.own.label())),
        kv(
            cx,
            tw.other.short(),
            Cell::new(format!("{}/{}", safe(s.cluster_of(&n.cluster)), safe(&n.name)), t.accent),
        ),
        kv(cx, "its state", Cell::new(n.state.label(), state_style(cx, n.state))),
    ];
    if let Some(r) = &n.reason {
        out.push(kv(cx, "its reason", untrusted(&r.text, t.warn)));
        out.push(kv(cx, "set by", Cell::new(format!("{} {}", safe(&r.by), ago(s.now, r.at)), t.dim)));
    }
    if let Some(since) = tw.mismatch_since {
        out.push(kv(
            cx,
            "mismatch",
            Cell::new(
                format!("{} since {}", safe(&tw.states(&s.nodes[i])), crate::clock::clock_rel(s.now, since)),
                t.warn,
            )
            .strong(),
        ));
    }
    out
}

/// What on a node an incident is about.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Gpu(u8),
    Port(String),
    Node,
}

/// The incidents about node `n`, worst first (the order the state keeps them in), with the GPU
/// or port each is about (its subject is `node/gpuN` or `node/PORT`).
fn faults<'s>(s: &'s ClusterState, n: &Node) -> Vec<(Part, &'s crate::state::Incident)> {
    s.incidents
        .iter()
        .filter(|i| i.node.as_ref() == Some(&n.name))
        .map(|i| {
            let rest = i.subject.strip_prefix(n.name.as_str()).and_then(|r| r.strip_prefix('/'));
            let part = match rest {
                None => Part::Node,
                Some(r) if n.ports.iter().any(|p| p.name == r) => Part::Port(r.to_string()),
                Some(r) => match r.strip_prefix("gpu").and_then(|x| x.parse::<u8>().ok()) {
                    Some(g) if n.gpus.iter().any(|x| x.index == g) => Part::Gpu(g),
                    _ => Part::Node,
                },
            };
            (part, i)
        })
        .collect()
}

fn severity_style(cx: &Cx<'_>, i: &crate::state::Incident) -> Tone {
    match i.severity {
        crate::state::Severity::Critical => cx.tones.crit,
        crate::state::Severity::Warning => cx.tones.warn,
        crate::state::Severity::Info => cx.tones.info,
    }
}

/// `gpu3  12345 alice  python  2048 MiB  slurm 4242.0`
pub fn proc_line<'a>(cx: &Cx<'a>, p: &crate::model::GpuProc, with_gpu: bool) -> Line<'a> {
    let t = cx.tones;
    let safe = super::fmt::safe;
    let mut spans = Vec::new();
    if with_gpu {
        spans.push(Cell::new(format!("  gpu{:<2} ", p.gpu), t.dim));
    } else {
        spans.push(Cell::raw("  "));
    }
    spans.push(Cell::new(format!("{:>7} ", p.pid), t.dim));
    spans.push(Cell::new(format!("{:<10} ", safe(p.user.as_deref().unwrap_or("-"))), t.text));
    spans.push(Cell::new(format!("{:<16} ", safe(p.command.as_deref().unwrap_or("-"))), t.text));
    spans.push(Cell::new(format!("{:>6} MiB  ", p.mem_mib.map_or("-".into(), |m| m.to_string())), t.dim));
    let owner = match p.pod_uid.as_ref().and_then(|u| cx.s.pod_names.get(u)) {
        Some(name) => format!("pod {name}"),
        None => p.owner.to_string(),
    };
    spans.push(Cell::new(safe(&owner).into_owned(), t.accent));
    Line::from(spans)
}
