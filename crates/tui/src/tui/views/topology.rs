//! Topology: a tree cluster → rack or switch (pool when nodes have no such label) → node → GPU,
//! and the selected node's GPU link matrix as `nvidia-smi topo -m` prints it, with NIC and CPU/NUMA affinity.

use super::super::widgets::safe;
use super::super::widgets::table::Dx;
use super::super::widgets::table::TableSource;
use super::ViewId;
use crate::model::{LinkKind, Node, NodeKey};
use crate::tui::keymap::Action;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use std::collections::BTreeMap;
use tui_tree_widget::{Tree, TreeItem, TreeState};

/// Tree identifiers: `p:<group>`, `n:<node name>`, `g:<node name>:<gpu>`.
pub type TreeId = String;

/// Node labels that name where a node sits in the network, most specific first: the leaf
/// switch, then the rack. The tree groups by the first one any node has.
pub const PLACEMENT_LABELS: &[(&str, &str)] = &[
    ("network.topology.kubernetes.io/switch", "switch"),
    ("topology.gpuplane.io/switch", "switch"),
    ("topology.kubernetes.io/rack", "rack"),
    ("topology.gpuplane.io/rack", "rack"),
    ("rack", "rack"),
];

/// What the tree groups nodes by: a placement label when nodes carry one (`("rack", key)`),
/// else their pool (`("pool", "")`).
pub fn grouping(s: &crate::state::ClusterState) -> (&'static str, &'static str) {
    PLACEMENT_LABELS
        .iter()
        .find(|(key, _)| s.nodes.iter().any(|n| n.labels.contains_key(*key)))
        .map_or(("pool", ""), |&(key, what)| (what, key))
}

/// The group a node belongs to under [`grouping`] (`-` when it lacks the label).
fn group_of<'a>(n: &'a Node, key: &str) -> &'a str {
    if key.is_empty() { n.pool.as_str() } else { n.labels.get(key).map_or("-", |v| v.as_str()) }
}

/// A node's id in the tree: its name, `cluster/name` for a fleet cluster's node (two clusters
/// may each have a `gpu-005` in a rack `r1`; their ids stay apart).
fn node_id(n: &Node) -> String {
    if n.cluster.is_empty() { n.name.to_string() } else { format!("{}/{}", n.cluster, n.name) }
}

/// A group's id: `p:GROUP`, `p:CLUSTER/GROUP` in a fleet (a group never spans clusters).
fn group_id(cluster: &str, group: &str) -> String {
    if cluster.is_empty() { format!("p:{group}") } else { format!("p:{cluster}/{group}") }
}

/// Builds the tree: every rack or switch (by pool when nodes have no such label), the nodes of
/// open groups, the GPUs of open nodes (so a 10,000 node cluster costs only what is open).
pub fn tree_items(cx: &Dx<'_>, state: &TreeState<TreeId>) -> Vec<TreeItem<'static, TreeId>> {
    let s = cx.s;
    let t = cx.theme;
    let opened = state.opened();
    let (what, key) = grouping(s);
    // Grouped per cluster: a fleet's clusters may share rack and node names.
    let mut pools: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for (i, n) in s.nodes.iter().enumerate() {
        pools.entry((n.cluster.as_str(), group_of(n, key))).or_default().push(i);
    }
    let mut items = Vec::with_capacity(pools.len());
    for ((cluster, pool), nodes) in pools {
        let pid = group_id(cluster, pool);
        let open = opened.contains(&vec![pid.clone()]);
        let gpus: u32 = nodes.iter().map(|&i| s.nodes[i].gpu_slots).sum();
        // A rack or switch says which pools it holds; a pool is its own name.
        let mut holds: Vec<&str> = nodes.iter().map(|&i| s.nodes[i].pool.as_str()).collect();
        holds.sort_unstable();
        holds.dedup();
        let holds = if key.is_empty() { String::new() } else { format!(" ({})", safe(&holds.join(", "))) };
        let mut prefix = if key.is_empty() { String::new() } else { format!("{what} ") };
        if !cluster.is_empty() {
            prefix = format!("{}: {prefix}", safe(cluster));
        }
        let label = Line::from(vec![
            Span::styled(format!("{prefix}{}", safe(pool)), t.title),
            Span::styled(
                format!(
                    "  {} node{}, {} GPUs{holds}",
                    nodes.len(),
                    if nodes.len() == 1 { "" } else { "s" },
                    gpus
                ),
                t.dim,
            ),
        ]);
        let children = if open {
            nodes
                .iter()
                .map(|&i| {
                    let n = &s.nodes[i];
                    // Ids are names (never positions): what is open and selected stays on the
                    // same node when the nodes are relisted.
                    let nid = format!("n:{}", node_id(n));
                    let nopen = opened.contains(&vec![pid.clone(), nid.clone()]);
                    let nlabel = Line::from(vec![
                        Span::styled(safe(&n.name).into_owned(), t.text),
                        Span::styled(
                            format!("  {} {}/{}", n.state.label(), n.gpu_alloc, n.gpu_slots),
                            cx.theme.tone(super::nodes::state_style(cx, n.state)),
                        ),
                    ]);
                    let gchildren = if nopen {
                        n.gpus
                            .iter()
                            .map(|g| {
                                let style = if g.is_failed() { t.crit } else { t.dim };
                                TreeItem::new_leaf(
                                    format!("g:{}:{}", node_id(n), g.index),
                                    Line::from(Span::styled(
                                        format!(
                                            "gpu{} {} {}%",
                                            g.index,
                                            safe(g.model.trim_start_matches("NVIDIA ")),
                                            g.util.map_or("-".into(), |u| u.to_string())
                                        ),
                                        style,
                                    )),
                                )
                            })
                            .collect()
                    } else if n.gpus.is_empty() {
                        vec![]
                    } else {
                        // a placeholder so the node shows as openable
                        vec![TreeItem::new_leaf(format!("g:{}:-", node_id(n)), Line::styled("…", t.dim))]
                    };
                    TreeItem::new(nid, nlabel, gchildren)
                        .unwrap_or_else(|_| TreeItem::new_leaf(format!("n:{}", node_id(n)), "?"))
                })
                .collect()
        } else {
            vec![TreeItem::new_leaf(format!("{pid}:-"), Line::styled("…", t.dim))]
        };
        if let Ok(item) = TreeItem::new(pid.clone(), label, children) {
            items.push(item);
        }
    }
    items
}

/// The id of the first group (rack, switch or pool), where the selection starts.
pub fn first_pool(s: &crate::state::ClusterState) -> Option<TreeId> {
    let (_, key) = grouping(s);
    s.nodes.iter().map(|n| (n.cluster.as_str(), group_of(n, key))).min().map(|(c, p)| group_id(c, p))
}

/// The name of the node the tree selection points at (a node or one of its GPUs).
pub fn selected_node(state: &TreeState<TreeId>) -> Option<NodeKey> {
    let id = state.selected().iter().rev().find_map(|id| {
        id.strip_prefix("n:")
            .or_else(|| id.strip_prefix("g:").and_then(|r| r.rsplit_once(':')).map(|(n, _)| n))
    })?;
    // The cluster as objects carry it (empty in a single-cluster console).
    Some(match id.split_once('/') {
        Some((c, n)) => NodeKey { cluster: c.into(), name: n.into() },
        None => NodeKey { cluster: Default::default(), name: id.into() },
    })
}

pub fn draw_tree(
    f: &mut Frame,
    area: Rect,
    block: Block<'_>,
    cx: &Dx<'_>,
    state: &mut TreeState<TreeId>,
    focused: bool,
) {
    let items = tree_items(cx, state);
    if state.selected().is_empty() {
        state.select_first();
    }
    match Tree::new(&items) {
        Ok(tree) => {
            let tree = tree
                .block(block)
                .highlight_style(if focused { cx.theme.selected } else { cx.theme.accent })
                .node_closed_symbol(if cx.glyphs.unicode { "▶ " } else { "+ " })
                .node_open_symbol(if cx.glyphs.unicode { "▼ " } else { "- " })
                .node_no_children_symbol("  ")
                .highlight_symbol(&cx.theme.cursor);
            f.render_stateful_widget(tree, area, state);
        }
        Err(e) => f.render_widget(Paragraph::new(format!("tree error: {e}")).block(block), area),
    }
}

fn link_style(cx: &Dx<'_>, l: LinkKind) -> Style {
    match l {
        LinkKind::X => cx.theme.dim,
        LinkKind::Nv(_) => cx.theme.ok,
        LinkKind::Pix | LinkKind::Pxb => cx.theme.accent,
        LinkKind::Phb | LinkKind::Node => cx.theme.warn,
        LinkKind::Sys => cx.theme.crit,
    }
}

/// The matrix of one node, `nvidia-smi topo -m` style.
pub fn matrix_lines<'a>(cx: &Dx<'a>, n: &Node, width: u16) -> Vec<Line<'a>> {
    let t = cx.theme;
    let mut out = vec![Line::from(vec![
        Span::styled(safe(&n.name).into_owned(), t.accent),
        Span::styled(format!("  {}  {} GPUs", n.gpu_model(), n.gpus.len()), t.dim),
    ])];
    let Some(topo) = &n.topology else {
        out.push(Line::styled(
            "no topology reported for this node (NVML or the GPU operator provide it)",
            t.dim,
        ));
        return out;
    };
    let ng = topo.matrix.len();
    let cell = 5usize;
    let nics = if width as usize >= 8 + cell * (ng + topo.nics.len()) + 20 { topo.nics.len() } else { 0 };
    let mut header = vec![Span::raw(format!("{:<7}", ""))];
    for j in 0..ng {
        header.push(Span::styled(format!("{:<cell$}", format!("GPU{j}")), t.header));
    }
    for nic in topo.nics.iter().take(nics) {
        header.push(Span::styled(
            format!("{:<cell$}", format!("NIC{}", nic.name.trim_start_matches("mlx5_"))),
            t.header,
        ));
    }
    if width >= 70 {
        header.push(Span::styled("CPU Affinity  NUMA", t.header));
    }
    out.push(Line::from(header));
    for i in 0..ng {
        let mut row = vec![Span::styled(format!("{:<7}", format!("GPU{i}")), t.header)];
        for j in 0..ng {
            let l = topo.matrix[i].get(j).copied().unwrap_or(LinkKind::Sys);
            row.push(Span::styled(format!("{:<cell$}", l.label()), link_style(cx, l)));
        }
        for nic in topo.nics.iter().take(nics) {
            let l = nic.to_gpu.get(i).copied().unwrap_or(LinkKind::Sys);
            row.push(Span::styled(format!("{:<cell$}", l.label()), link_style(cx, l)));
        }
        if width >= 70 {
            row.push(Span::styled(
                format!(
                    "{:<13} {}",
                    topo.cpu_affinity.get(i).map(|c| safe(c).into_owned()).unwrap_or_default(),
                    topo.numa.get(i).map_or("-".into(), |v| v.to_string())
                ),
                t.dim,
            ));
        }
        out.push(Line::from(row));
    }
    let islands = topo.nvlink_islands();
    out.push(Line::raw(""));
    out.push(Line::from(vec![
        Span::styled("NVLink islands: ", t.dim),
        Span::styled(
            islands
                .iter()
                .map(|i| format!("[{}]", i.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(",")))
                .collect::<Vec<_>>()
                .join(" "),
            t.text,
        ),
    ]));
    if nics == 0 && !topo.nics.is_empty() {
        for nic in &topo.nics {
            let near: Vec<String> = nic
                .to_gpu
                .iter()
                .enumerate()
                .filter(|(_, l)| matches!(l, LinkKind::Pix | LinkKind::Pxb))
                .map(|(g, _)| format!("GPU{g}"))
                .collect();
            out.push(Line::styled(
                format!(
                    "{} near {}",
                    safe(&nic.name),
                    if near.is_empty() { "-".into() } else { near.join(",") }
                ),
                t.dim,
            ));
        }
    }
    out.push(Line::styled("Legend:", t.dim));
    for (k, v) in LinkKind::LEGEND {
        out.push(Line::from(vec![
            Span::styled(format!("  {k:<5}"), t.text),
            Span::styled(format!("= {v}"), t.dim),
        ]));
    }
    out
}

/// Topology: the pools, their nodes and GPUs as a tree, and the selected node's GPU link matrix.
pub struct View;

pub const ID: ViewId = ViewId("topology");

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Topology"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["topo", "tree"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[]
    }

    fn state(&self) -> super::Own {
        Box::new(TreeState::<TreeId>::default())
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut super::ViewCx<'_>) {
        let [tree, matrix] =
            Layout::horizontal([Constraint::Percentage(38), Constraint::Percentage(62)]).areas(area);
        let Some(ts) = cx.own.downcast_mut::<TreeState<TreeId>>() else { return };
        let dx = &cx.dx;
        let blk = crate::tui::draw::bordered(
            dx.theme,
            dx.glyphs,
            vec![Span::styled(" Topology ", dx.theme.title)],
            true,
        );
        draw_tree(f, tree, blk, dx, ts, true);
        let node = selected_node(ts).and_then(|k| dx.s.node_in(&k.cluster, &k.name)).or(dx.s.nodes.first());
        let lines = node.map(|n| matrix_lines(dx, n, matrix.width.saturating_sub(2))).unwrap_or_default();
        let b = crate::tui::draw::bordered(
            dx.theme,
            dx.glyphs,
            vec![Span::styled(" GPU links (nvidia-smi topo -m) ", dx.theme.title)],
            false,
        );
        f.render_widget(Paragraph::new(lines).block(b), matrix);
    }

    fn shows_tables(&self, _own: &(dyn std::any::Any + Send)) -> bool {
        false
    }

    fn selected(&self, own: &(dyn std::any::Any + Send)) -> Option<crate::model::ObjKey> {
        own.downcast_ref::<TreeState<TreeId>>().and_then(selected_node).map(crate::model::ObjKey::Node)
    }

    fn on_action(&self, a: Action, k: &mut super::KeyCx<'_>) -> Option<super::Outcome> {
        let ts = k.own.downcast_mut::<TreeState<TreeId>>()?;
        if ts.selected().is_empty()
            && let Some(p) = first_pool(k.cx.s)
        {
            ts.select(vec![p]);
        }
        let page = 20;
        match a {
            Action::Up => ts.key_up(),
            Action::Down => ts.key_down(),
            Action::Top => ts.select_first(),
            Action::Bottom => ts.select_last(),
            Action::PageUp => ts.scroll_up(page),
            Action::PageDown => ts.scroll_down(page),
            Action::Enter => ts.toggle_selected(),
            _ => return None,
        };
        Some(super::Outcome::Done)
    }
}
