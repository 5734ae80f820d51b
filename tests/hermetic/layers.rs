//! The layers (docs/architecture.md): every import points down.
//!
//! Between crates the compiler enforces it (a crate cannot name one it does not depend on), and
//! `no_crate_depends_upward` reads `cargo metadata` so that no crate may list a higher one.
//! Inside a crate, each file of `crates/*/src` and `src` is parsed with `syn`; every path that starts at `crate::` (or climbs to
//! the crate root with `super::`), in `use` trees, types, expressions, patterns and macro
//! bodies, is an edge from the file's top-level module to the module it names. An edge must
//! point to a lower layer, or stay in its own layer without making a cycle. Test code
//! (`#[cfg(test)]` items and `tests.rs` files) may reach up: it builds data with the simulator.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The layers, lowest first. A module not listed is an error, so a new one gets placed.
/// The top-level modules, by layer; each crate holds consecutive layers (its `lib.rs` is `lib`).
const LAYERS: &[(&str, &[&str])] = &[
    ("model", &["memory", "model", "sanitize", "clock"]),
    ("infrastructure", &["audit", "datafile", "store", "playbook", "record"]),
    ("backends", &["backend"]),
    ("state", &["state", "testing", "replay"]),
    ("runs and reports", &["acceptance", "cost"]),
    ("ops", &["ops"]),
    ("tables", &["tables"]),
    // The command line reads the table model, never the console: `get` and the reports print
    // cells of text and a tone, and what `completions` and `man` need of the console reaches
    // them from the binary's root as data (`ConsoleFacts`).
    ("command line", &["cli", "config", "executors", "commands"]),
    ("console", &["tui"]),
    ("binary", &["fuzzing", "main", "lib"]),
];

/// The workspace's crates, lowest first; crates of one rank may not depend on each other.
const CRATES: &[(&str, u8)] = &[
    ("gpuplane-model", 0),
    ("gpuplane-infra", 1),
    ("gpuplane-backend", 1),
    ("gpuplane-state", 2),
    ("gpuplane-ops", 3),
    ("gpuplane-tables", 4),
    ("gpuplane-tui", 5),
    ("gpuplane", 6),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// Where a file sits in the module tree: `crates/backend/src/backend/sim/mod.rs` → `[backend, sim]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

/// Collects the top-level modules named by `crate::…` / `super::…` paths.
struct Edges<'a> {
    here: &'a [String],
    found: BTreeSet<String>,
}

impl Edges<'_> {
    /// A path given as its leading segment names; records the top-level module it reaches.
    fn segments<'s>(&mut self, mut segs: impl Iterator<Item = &'s str>) {
        let mut at: Option<Vec<String>> = None;
        match segs.next() {
            Some("crate") => at = Some(Vec::new()),
            // Another workspace crate named directly (`gpuplane_tui::tui::…`): its module.
            Some(c) if c.starts_with("gpuplane_") => at = Some(Vec::new()),
            Some("super") => {
                let mut p = self.here.to_vec();
                p.pop();
                let mut rest = segs.by_ref().peekable();
                while rest.peek() == Some(&"super") {
                    rest.next();
                    p.pop();
                }
                if p.is_empty()
                    && let Some(m) = rest.next()
                {
                    self.found.insert(m.to_string());
                }
                return;
            }
            _ => {}
        }
        if at.is_some()
            && let Some(m) = segs.next()
        {
            self.found.insert(m.to_string());
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
            syn::UseTree::Name(n) => self.leaf(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.leaf(prefix, &r.ident),
            syn::UseTree::Glob(_) => self.segments(prefix.iter().map(String::as_str)),
        }
    }

    fn leaf(&mut self, prefix: &[String], last: &syn::Ident) {
        let last = last.to_string();
        self.segments(prefix.iter().map(String::as_str).chain(std::iter::once(last.as_str())));
    }

    /// Macro bodies are tokens, not syntax: look for `crate :: name` and `super :: …` runs.
    fn tokens(&mut self, ts: TokenStream) {
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    loop {
                        match (&toks.get(j), &toks.get(j + 1), &toks.get(j + 2)) {
                            (
                                Some(TokenTree::Punct(a)),
                                Some(TokenTree::Punct(b)),
                                Some(TokenTree::Ident(n)),
                            ) if a.as_char() == ':' && b.as_char() == ':' => {
                                segs.push(n.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    self.segments(segs.iter().map(String::as_str));
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Edges<'_> {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, i);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let names: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.segments(names.iter().map(String::as_str));
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The edges of one file's source, from its top-level module (`here[0]`).
fn edges_of(here: &[String], source: &str) -> Result<BTreeSet<String>, String> {
    let file = syn::parse_file(source).map_err(|e| format!("does not parse: {e}"))?;
    let mut v = Edges { here, found: BTreeSet::new() };
    v.visit_file(&file);
    v.found.remove(&here[0]);
    Ok(v.found)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every module-level edge in `src/`, with a file that makes it.
fn graph(src: &Path) -> Result<BTreeMap<(String, String), String>, Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let (mut edges, mut errors) = (BTreeMap::new(), Vec::new());
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let here = module_path(rel);
        if here.iter().any(|p| p == "tests") {
            continue; // test code (src/**/tests.rs, src/**/tests/)
        }
        let text = std::fs::read_to_string(&f).expect("readable");
        match edges_of(&here, &text) {
            Ok(found) => {
                for to in found {
                    edges.entry((here[0].clone(), to)).or_insert_with(|| f.display().to_string());
                }
            }
            Err(e) => errors.push(format!("{}: {e}", f.display())),
        }
    }
    if errors.is_empty() { Ok(edges) } else { Err(errors) }
}

/// What is wrong with a graph: unplaced modules, upward edges and cycles within a layer.
fn violations(edges: &BTreeMap<(String, String), String>) -> Vec<String> {
    let mut bad = Vec::new();
    let modules: BTreeSet<&String> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    for m in &modules {
        if layer_of(m).is_none() {
            bad.push(format!("module `{m}` has no layer: add it to LAYERS in tests/hermetic/layers.rs"));
        }
    }
    for ((from, to), file) in edges {
        if let (Some(a), Some(b)) = (layer_of(from), layer_of(to))
            && b > a
        {
            bad.push(format!(
                "{file}: `{from}` ({}) imports `{to}` ({}), a layer above it",
                LAYERS[a].0, LAYERS[b].0
            ));
        }
    }
    // Same-layer edges must not form a cycle.
    let next =
        |m: &str| -> Vec<&str> { edges.keys().filter(|(a, _)| a == m).map(|(_, b)| b.as_str()).collect() };
    for start in &modules {
        let mut stack = vec![(start.as_str(), vec![start.as_str()])];
        let mut seen = BTreeSet::new();
        while let Some((m, path)) = stack.pop() {
            for n in next(m) {
                if n == start.as_str() {
                    bad.push(format!("cycle: {} -> {n}", path.join(" -> ")));
                } else if seen.insert(n) {
                    let mut p = path.clone();
                    p.push(n);
                    stack.push((n, p));
                }
            }
        }
    }
    bad.sort();
    bad.dedup();
    bad
}

/// `src/` and every crate's `src/`.
fn source_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src")];
    for e in std::fs::read_dir(root.join("crates")).expect("crates/ is readable").flatten() {
        dirs.push(e.path().join("src"));
    }
    dirs.sort();
    dirs
}

#[test]
fn every_import_in_src_points_down() {
    let dirs = source_dirs();
    assert!(dirs.len() >= 7, "{dirs:?}");
    let mut edges = BTreeMap::new();
    for src in &dirs {
        edges.extend(graph(src).unwrap_or_else(|e| panic!("{}", e.join("\n"))));
    }
    assert!(edges.len() > 20, "too few edges found ({}): the walk is broken", edges.len());
    let bad = violations(&edges);
    assert!(bad.is_empty(), "layering violations (docs/architecture.md):\n{}", bad.join("\n"));
}

/// Each workspace crate's dependencies on the others (every kind: normal, dev, build).
fn crate_edges() -> Vec<(String, String)> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let mut edges = Vec::new();
    for p in meta["packages"].as_array().expect("packages") {
        let from = p["name"].as_str().expect("name").to_string();
        for d in p["dependencies"].as_array().expect("dependencies") {
            let to = d["name"].as_str().expect("dependency name");
            if to.starts_with("gpuplane") {
                edges.push((from.clone(), to.to_string()));
            }
        }
    }
    edges
}

fn crate_violations(edges: &[(String, String)]) -> Vec<String> {
    let rank = |c: &str| CRATES.iter().find(|(n, _)| *n == c).map(|(_, r)| *r);
    let mut bad = Vec::new();
    for (from, to) in edges {
        match (rank(from), rank(to)) {
            (Some(a), Some(b)) if b < a => {}
            (Some(_), Some(_)) => bad.push(format!("crate {from} depends on {to}, which is not below it")),
            _ => bad.push(format!(
                "crate {from} or {to} has no rank: add it to CRATES in tests/hermetic/layers.rs"
            )),
        }
    }
    bad
}

#[test]
fn no_crate_depends_upward() {
    let edges = crate_edges();
    let members: BTreeSet<&str> = edges.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(members.len(), CRATES.len() - 1, "every crate but the model depends on one: {edges:?}");
    let bad = crate_violations(&edges);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn an_upward_or_sideways_crate_dependency_is_caught() {
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert!(crate_violations(&[e("gpuplane-state", "gpuplane-backend")]).is_empty());
    let bad = crate_violations(&[
        e("gpuplane-model", "gpuplane-state"),
        e("gpuplane-backend", "gpuplane-infra"),
        e("gpuplane-tui", "gpuplane-cli"),
    ]);
    assert_eq!(bad.len(), 3, "{bad:?}");
}

fn check(file: &str, text: &str) -> Vec<String> {
    let here = module_path(Path::new(file));
    let mut edges = BTreeMap::new();
    for to in edges_of(&here, text).unwrap() {
        edges.insert((here[0].clone(), to), file.to_string());
    }
    violations(&edges)
}

#[test]
fn an_upward_use_is_caught_in_every_form() {
    for text in [
        "use crate::state::ClusterState;",
        "use crate::{model::Node, tui::app::App};",
        "fn f() -> crate::ops::Plan { todo!() }",
        "fn f() { let _ = matches!(x, crate::acceptance::Verdict::Pass); }",
        "use super::super::state::ClusterState;",
    ] {
        let bad = check("backend/slurm/mod.rs", text);
        assert_eq!(bad.len(), 1, "{text}: {bad:?}");
        assert!(bad[0].contains("a layer above it"), "{bad:?}");
    }
}

#[test]
fn test_code_comments_and_downward_edges_pass() {
    let text = "
        //! see crate::tui::app for the console
        use crate::model::protocol::Update;
        use super::Client;
        #[cfg(test)]
        mod tests { use crate::state::ClusterState; }
        #[cfg(test)]
        fn helper() -> crate::testing::X { todo!() }
    ";
    assert_eq!(check("backend/slurm/poll.rs", text), Vec::<String>::new());
}

#[test]
fn a_cycle_inside_a_layer_is_caught() {
    let mut edges = BTreeMap::new();
    edges.insert(("acceptance".to_string(), "cost".to_string()), "acceptance/mod.rs".to_string());
    edges.insert(("cost".to_string(), "acceptance".to_string()), "cost/mod.rs".to_string());
    let bad = violations(&edges);
    assert!(bad.iter().any(|b| b.starts_with("cycle: ")), "{bad:?}");
}

#[test]
fn an_unplaced_module_is_named() {
    let bad = check("alerts/mod.rs", "use crate::model::Node;");
    assert_eq!(bad, vec!["module `alerts` has no layer: add it to LAYERS in tests/hermetic/layers.rs"]);
}

/// The crates (of the workspace or not) that `crate` depends on directly.
fn direct_dependencies(krate: &str) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let p = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == krate)
        .unwrap_or_else(|| panic!("no crate {krate}"));
    p["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .map(|d| d["name"].as_str().expect("name").to_string())
        .collect()
}

/// `get` and the reports print from the table model: it must not reach for a terminal.
#[test]
fn the_table_model_knows_no_terminal() {
    let deps = direct_dependencies("gpuplane-tables");
    assert!(deps.iter().any(|d| d == "gpuplane-ops"), "the walk is broken: {deps:?}");
    for terminal in ["ratatui", "crossterm", "gpuplane-tui", "tui-tree-widget"] {
        assert!(!deps.iter().any(|d| d == terminal), "gpuplane-tables depends on {terminal}");
    }
}

#[test]
fn a_command_importing_the_console_is_caught() {
    for text in ["use crate::tui::theme::Theme;", "fn f() { gpuplane_tui::tui::views::VIEWS.len(); }"] {
        let bad = check("commands/get.rs", text);
        assert_eq!(bad.len(), 1, "{text}: {bad:?}");
        assert!(bad[0].contains("`commands` (command line) imports `tui` (console)"), "{bad:?}");
    }
    assert_eq!(check("commands/get.rs", "use crate::tables::table::Cx;"), Vec::<String>::new());
}

/// Views and dialogs are components: views draw from a `ViewCx` and answer keys with an
/// `Outcome`, dialogs from a `dialogs::Cx` with a `Reply`; none names the console's `App` (so
/// none can reach past its own state into the shell's).
#[test]
fn no_view_or_dialog_takes_the_app() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/tui/src/tui");
    let mut files = Vec::new();
    rust_files(&root.join("views"), &mut files);
    assert!(files.len() >= 14, "the walk is broken: {files:?}");
    let views = files.len();
    rust_files(&root.join("dialogs"), &mut files);
    assert!(files.len() >= views + 5, "the walk of the dialogs is broken: {files:?}");
    let mut planted = Names(Vec::new());
    planted.visit_file(&syn::parse_file("fn draw(app: &mut crate::tui::app::App) {}").unwrap());
    assert!(planted.0.iter().any(|n| n == "App"), "the check would miss a view taking the App");
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        let file = syn::parse_file(&text).expect("parses");
        let mut v = Names(Vec::new());
        v.visit_file(&file);
        assert!(
            !v.0.iter().any(|n| n == "App"),
            "{} names the console's App (a view or dialog gets what it needs through its cx)",
            f.display()
        );
    }
}

/// Every identifier a file's syntax names (paths and types), for the test above.
struct Names(Vec<String>);

impl<'ast> Visit<'ast> for Names {
    fn visit_ident(&mut self, i: &'ast proc_macro2::Ident) {
        self.0.push(i.to_string());
    }
}
