//! `filter`: the filter language (`tables::filter`) parsed, bound and matched against
//! the console's own tables, filled by a small simulated cluster.
//!
//! Input: the first byte picks the table (every table of every view, in registry order); the
//! rest is the filter as typed (bytes that are not UTF-8 replaced).
//!
//! Checks: no panic; a filter that names a key the table lacks is an error that lists every
//! key the table accepts; and, for a filter that parses and binds:
//! * quoted back (each word through `shlex`, as a saved or displayed filter would be) and
//!   parsed again, it keeps exactly the same rows;
//! * one word `w` and `!w` keep complementary rows;
//! * several words keep exactly the rows every word alone keeps.

use crate::cost::CostReport;
use crate::state::ClusterState;
use crate::tables::filter::{Filter, keys_of};
use crate::tables::fmt::Glyphs;
use crate::tables::table::{Cx, Marks, RowKey, TableSource};
use crate::tables::tone::TONES;

struct Fixture {
    state: ClusterState,
    cost: CostReport,
    marks: Marks,
}

thread_local! {
    static FIXTURE: Fixture = {
        let cfg = crate::testing::SimConfig { nodes: 6, jobs: 40, ..Default::default() };
        let state = crate::testing::state_after(cfg, 3);
        let cost = crate::cost::report(&state, 86_400);
        Fixture { state, cost, marks: Marks::default() }
    };
}

/// The rows `raw` keeps, or the error of parsing or binding it.
fn rows(src: &dyn TableSource, cx: &Cx<'_>, keys: &[RowKey], raw: &str) -> Result<Vec<RowKey>, String> {
    let mut f = Filter::parse(raw)?;
    f.bind(src, cx)?;
    Ok(keys.iter().copied().filter(|&k| f.matches(src, cx, k)).collect())
}

pub fn check(data: &[u8]) {
    let Some((&t, text)) = data.split_first() else { return };
    let tables: Vec<&'static dyn TableSource> = crate::tables::all().collect();
    let src = tables[usize::from(t) % tables.len()];
    let raw = String::from_utf8_lossy(text);
    FIXTURE.with(|fx| {
        let cx = Cx {
            s: &fx.state,
            cost: &fx.cost,
            tones: &TONES,
            glyphs: Glyphs::ASCII,
            user: "alice",
            audit: &[],
            marked: &fx.marks,
            rules: &Default::default(),
        };
        let mut keys = Vec::new();
        src.keys(&cx, &mut keys);
        let Ok(mut parsed) = Filter::parse(&raw) else { return };
        if let Err(e) = parsed.bind(src, &cx) {
            assert!(e.starts_with("unknown key"), "{e}");
            for k in keys_of(src) {
                assert!(e.split(' ').any(|w| w == k), "{e:?} does not list {k:?}");
            }
            return;
        }
        let kept: Vec<RowKey> = keys.iter().copied().filter(|&k| parsed.matches(src, &cx, k)).collect();
        let words = shlex::split(&raw).expect("it parsed, so its quotes balance");
        let quoted: Option<Vec<String>> =
            words.iter().map(|w| shlex::try_quote(w).ok().map(String::from)).collect();
        let Some(quoted) = quoted else { return }; // a NUL: shlex cannot quote it
        let table = src.id().0;
        let again = quoted.join(" ");
        assert_eq!(
            rows(src, &cx, &keys, &again),
            Ok(kept.clone()),
            "{table}: {raw:?} quoted back as {again:?}"
        );
        if let [w] = words.as_slice()
            && !w.is_empty()
            && !w.starts_with('!')
        {
            let neg = format!("!{}", quoted[0]);
            let negated = rows(src, &cx, &keys, &neg).unwrap_or_else(|e| panic!("{table}: {neg:?}: {e}"));
            let complement: Vec<RowKey> = keys.iter().copied().filter(|k| !kept.contains(k)).collect();
            assert_eq!(negated, complement, "{table}: {raw:?} and {neg:?} are not complements");
        }
        if words.len() > 1 {
            let mut each = keys.clone();
            for q in &quoted {
                let alone = rows(src, &cx, &keys, q).unwrap_or_else(|e| panic!("{table}: {q:?} alone: {e}"));
                each.retain(|k| alone.contains(k));
            }
            assert_eq!(each, kept, "{table}: {raw:?} keeps other rows than its words each keep");
        }
    });
}
