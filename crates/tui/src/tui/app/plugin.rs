//! Plugins: the shortcut of a plugin in scope builds its variables from the selection.

use super::*;

impl App {
    pub(crate) fn view_scope(&self) -> &'static str {
        self.ui.view.0
    }

    /// The variables a plugin sees for the current selection.
    pub fn plugin_vars(&mut self) -> std::collections::BTreeMap<String, String> {
        self.prepare();
        let mut v = std::collections::BTreeMap::new();
        v.insert("USER".to_string(), self.user.clone());
        v.insert("CLUSTER".to_string(), self.state().cluster.to_string());
        v.insert("CONTEXT".to_string(), self.state().cluster.to_string());
        let Some(t) = self.focused_table() else { return v };
        let Some(key) = self.ui.tables[t].selected_key() else { return v };
        let s = self.state();
        let obj = self.ui.tables[t].selected_id();
        let node = obj.and_then(|o| o.node()).and_then(|n| s.node_at(n)).map(|i| &s.nodes[i]);
        if let Some(n) = node {
            v.insert("NODE".into(), n.name.to_string());
        }
        if let Some(ObjKey::Gpu(gk)) = obj
            && let Some(g) = node.and_then(|n| n.gpus.iter().find(|g| g.index == gk.index))
        {
            v.insert("GPU".into(), g.index.to_string());
            v.insert("GPU_UUID".into(), g.uuid.to_string());
        }
        if let Some(ObjKey::Job(jk)) = obj
            && let Some(j) = s.job_at(jk).map(|i| &s.jobs[i])
        {
            v.insert("JOB".into(), j.id.to_string());
            v.insert("ACCOUNT".into(), j.account.to_string());
            v.insert("NAMESPACE".into(), j.account.to_string());
            v.insert("JOB_USER".into(), j.user.to_string());
        }
        let nodes: Vec<String> = self.marks.nodes.iter().map(|n| n.name.to_string()).collect();
        v.insert(
            "NODES".into(),
            if nodes.is_empty() { v.get("NODE").cloned().unwrap_or_default() } else { nodes.join(",") },
        );
        // Every column of the selected row, as the table shows it.
        let cx = self.cx();
        let src = t.source();
        let cells = src.cells(&cx, key);
        for (c, cell) in src.columns().iter().zip(cells) {
            if !c.name.is_empty() {
                v.insert(
                    format!("COL_{}", c.name.replace(['-', '/', ' ', '%', '$'], "_")),
                    cell.text.to_string(),
                );
            }
        }
        v
    }

    pub(crate) fn plugin_key(&mut self, k: &KeyEvent) {
        let key = crate::tui::keymap::Key::from_event(k);
        let scope = self.view_scope();
        let Some(p) = self
            .plugins
            .iter()
            .find(|p| {
                p.applies_to(scope) && crate::tui::keymap::Key::parse(&p.shortcut).is_ok_and(|s| s == key)
            })
            .cloned()
        else {
            return;
        };
        if p.dangerous && self.readonly {
            return;
        }
        if p.confirm && self.armed_plugin.as_deref() != Some(p.name.as_str()) {
            self.armed_plugin = Some(p.name.clone());
            self.ui.message = Some((format!("press {} again to run plugin {:?}", p.shortcut, p.name), false));
            return;
        }
        self.armed_plugin = None;
        let vars = self.plugin_vars();
        let (program, args) = p.argv(&vars);
        // In a fleet, recorded by the selected object's cluster (else the first cluster's).
        let fleet_to = || {
            let c = self.selected_obj().and_then(|o| match o {
                ObjKey::Job(k) => Some(k.cluster.clone()),
                ObjKey::Incident(c, ..) => Some(c.clone()),
                o => o.node().map(|n| n.cluster.clone()),
            });
            c.filter(|c| self.routes.get(c).is_some_and(|r| r.tx.is_some()))
                .or_else(|| self.routes.iter().find(|(_, r)| r.tx.is_some()).map(|(c, _)| c.clone()))
                .map(To::Cluster)
        };
        let to = if self.ops_tx.is_some() { Some(To::Console) } else { fleet_to() };
        if p.dangerous
            && let Some(to) = to
        {
            // Audited like an action: who ran what, on what.
            let msg = OpMsg::Event {
                action: format!("plugin {}", p.name),
                session: self.break_glass.as_ref().map(|b| b.id.clone()).unwrap_or_default(),
                ticket: self.break_glass.as_ref().map(|b| b.ticket.clone()).unwrap_or_default(),
                reason: format!("{program} {}", args.join(" ")),
            };
            self.emit(Effect::Ops(to, msg));
        }
        self.pending_plugin = Some(PluginRun { name: p.name, program, args, background: p.background });
    }
}
