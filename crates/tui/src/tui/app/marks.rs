//! Marks and targets: what an action acts on, by identity (the marked rows, else the selected one).

use super::*;

/// How many marks the rows of table `id` stand for, and how many of those the filter hides.
pub fn marks_in(tables: &TableStates, cx: &Cx<'_>, id: TableId) -> (usize, usize) {
    let st = &tables[id];
    let src = id.source();
    let marked = cx.marked;
    let Some(first) = st.rows.first().or(st.sorted_keys().first()) else { return (0, 0) };
    let marks: Vec<ObjKey> = match src.identity(cx, *first) {
        Some(ObjKey::Job(_)) => marked.jobs.iter().cloned().map(ObjKey::Job).collect(),
        Some(ObjKey::Node(_)) => marked.nodes.iter().cloned().map(ObjKey::Node).collect(),
        // GPU and port rows mark their node: the count, not which rows hide it.
        Some(ObjKey::Gpu(..) | ObjKey::Port(..)) => return (marked.nodes.len(), 0),
        _ => return (0, 0),
    };
    if marks.is_empty() {
        return (0, 0);
    }
    // A mark is hidden when its row is gone or the filter rejects it (one lookup per mark).
    let hidden = marks
        .iter()
        .filter(|m| match src.locate(cx, m) {
            Some(row) => !st.filter.matches(src, cx, row),
            None => true,
        })
        .count();
    (marks.len(), hidden)
}

impl App {
    /// [`marks_in`] for the console's tables.
    pub fn marks_in(&self, id: TableId) -> (usize, usize) {
        marks_in(&self.ui.tables, &self.cx(), id)
    }

    /// The node or job the selected row stands for in the focused table (a GPU or a port
    /// stands for its node).
    pub(crate) fn selected_target(&self) -> Option<(bool, String)> {
        let s = self.state();
        match self.selected_obj()? {
            ObjKey::Job(k) => s.job_at(k).map(|_| (true, self.target_name(&k.cluster, &k.id.to_string()))),
            // An incident stands for its node (or its job), in its own cluster.
            ObjKey::Incident(cluster, subject, signal) => {
                let i = s
                    .incidents
                    .iter()
                    .find(|i| i.cluster == *cluster && i.subject == *subject && i.signal == *signal)?;
                let c = &i.cluster;
                let (node, job) = if self.routes.is_empty() {
                    (i.node.as_ref().filter(|n| s.node(n).is_some()), i.job.filter(|&j| s.job(j).is_some()))
                } else {
                    (
                        i.node.as_ref().filter(|n| s.node_in(c, n).is_some()),
                        i.job.filter(|&j| s.job_in(c, j).is_some()),
                    )
                };
                match (node, job) {
                    (_, Some(j)) if i.subject.starts_with("job ") => {
                        Some((true, self.target_name(c, &j.to_string())))
                    }
                    (Some(n), _) => Some((false, self.target_name(c, n))),
                    (None, Some(j)) => Some((true, self.target_name(c, &j.to_string()))),
                    (None, None) => None,
                }
            }
            o => o
                .node()
                .filter(|n| s.node_at(n).is_some())
                .map(|n| (false, self.target_name(&n.cluster, &n.name))),
        }
    }

    /// A target as actions name it: `cluster/name` in a fleet (its cluster's executor takes
    /// it), the bare name or job id for one cluster.
    pub(crate) fn target_name(&self, cluster: &Text, name: &str) -> String {
        if self.routes.is_empty() {
            name.to_string()
        } else {
            ops::fleet::qualify(self.state().cluster_of(cluster), name)
        }
    }

    pub(crate) fn toggle_mark(&mut self) {
        self.prepare();
        let s = self.state();
        // A GPU or a port marks its node.
        let (node, job) = match self.selected_obj() {
            Some(ObjKey::Job(k)) if s.job_at(k).is_some() => (None, Some(k.clone())),
            Some(o) => (o.node().filter(|n| s.node_at(n).is_some()).cloned(), None),
            None => (None, None),
        };
        match (node, job) {
            (_, Some(k)) => {
                if !self.marks.jobs.remove(&k) {
                    self.marks.jobs.insert(k);
                }
            }
            (Some(k), _) => {
                if !self.marks.nodes.remove(&k) {
                    self.marks.nodes.insert(k);
                }
            }
            _ => {
                self.ui.message = Some(("nothing to mark here (nodes and jobs can be marked)".into(), false));
                return;
            }
        }
        if let Some(t) = self.focused_table() {
            self.table(t).move_by(1);
        }
    }

    /// Drops every mark (nodes and jobs), saying how many there were.
    pub(crate) fn clear_marks(&mut self) {
        let n = self.marks.nodes.len() + self.marks.jobs.len();
        self.marks = Marks::default();
        self.ui.message = Some((
            if n == 0 { "no marks to clear".to_string() } else { format!("cleared {n} mark(s)") },
            false,
        ));
    }

    /// Of the marked `targets`, those the focused table's filter hides (the table lists
    /// `jobs` or nodes, and has a filter); and a note when the action takes the marks while
    /// the highlighted row is another.
    pub(crate) fn marks_context(&self, jobs: bool, targets: &[String]) -> (Vec<String>, Option<String>) {
        let Some(t) = self.focused_table() else { return (Vec::new(), None) };
        let cx = self.cx();
        let src = t.source();
        let st = &self.ui.tables[t];
        let name_of = |o: ObjKey| match o {
            ObjKey::Job(k) if jobs => Some(self.target_name(&k.cluster, &k.id.to_string())),
            ObjKey::Job(_) => None,
            o if !jobs => o.node().map(|n| self.target_name(&n.cluster, &n.name)),
            _ => None,
        };
        let mut hidden = Vec::new();
        // A filter, or the cluster focus, may hide marked rows.
        if !st.filter.is_empty() || self.focus.is_some() {
            // What the table lists, from a row it shows (or any, when the filter shows none).
            let any = st.rows.first().copied().or_else(|| {
                let mut all = Vec::new();
                src.keys(&cx, &mut all);
                all.first().copied()
            });
            let same_kind = any.and_then(|k| src.identity(&cx, k)).and_then(name_of).is_some();
            if same_kind {
                let shown: std::collections::BTreeSet<String> =
                    st.rows.iter().filter_map(|&k| src.identity(&cx, k).and_then(name_of)).collect();
                hidden = targets.iter().filter(|t| !shown.contains(*t)).cloned().collect();
            }
        }
        let what = if jobs { "job" } else { "node" };
        let highlighted = st.selected_id().cloned().and_then(name_of);
        let clear = self.keymap.hint(Action::ClearMarks).map(|k| format!(" ({k} clears the marks)"));
        let note = match highlighted {
            Some(h) if !targets.contains(&h) => Some(format!(
                "acting on the {} marked {what}(s), not the highlighted {h}{}",
                targets.len(),
                clear.unwrap_or_default()
            )),
            _ => None,
        };
        (hidden, note)
    }
}
