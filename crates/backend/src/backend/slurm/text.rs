//! Slurm's little string languages, shared by every API version: hostlists
//! (`gpu-[001-004,007]`), GRES strings (`gpu:h100:8(S:0-1)`, `gpu:h100:4(IDX:0-3)`) and TRES
//! strings (`cpu=64,mem=1000000M,gres/gpu=8`). Everything here is untrusted input: parsers
//! never panic and give up quietly on what they do not understand.

use crate::model::{MAX_GPUS_PER_NODE, Text};

/// Hostlists longer than this are cut (a hostile or broken range must not eat the memory).
const MAX_HOSTS: usize = 1_000_000;

/// Bytes of host names one hostlist may build, intermediate names of several bracket groups
/// counted too: a million hosts of 64 characters. What bounds the work when the names are long
/// (a 10 KB suffix, a bound zero-padded to thousands of digits, hundreds of groups).
const MAX_HOST_BYTES: usize = 64 << 20;

/// Expands a Slurm hostlist into host names: `gpu-[001-003,007],cpu1` →
/// `gpu-001 gpu-002 gpu-003 gpu-007 cpu1`. Zero padding is kept; several bracket groups
/// multiply (`r[1-2]n[1-2]` → 4 hosts). Malformed ranges, and one range of more than
/// [`MAX_HOSTS`] numbers, are kept as literal text. The list is cut at [`MAX_HOSTS`] names or
/// [`MAX_HOST_BYTES`] of them, whichever comes first; ranges are walked, never built whole, so
/// the cut comes before the work (`n[0-999999,0-999999,…]` stops at the first million).
pub fn expand_hostlist(list: &str) -> Vec<Text> {
    let mut out = Hosts { names: Vec::new(), bytes: 0 };
    for item in split_top_level(list) {
        let item = item.trim();
        if !item.is_empty() {
            out.expand(item);
        }
        if out.full() {
            break;
        }
    }
    out.names
}

/// Host names so far and the bytes spent building them.
struct Hosts {
    names: Vec<Text>,
    bytes: usize,
}

impl Hosts {
    fn full(&self) -> bool {
        self.names.len() >= MAX_HOSTS || self.bytes >= MAX_HOST_BYTES
    }

    fn push(&mut self, name: &str) {
        if !self.full() {
            self.bytes += name.len();
            self.names.push(name.into());
        }
    }

    /// Expands the first bracket group of `item`, then the rest of each name it makes.
    fn expand(&mut self, item: &str) {
        let Some(open) = item.find('[') else {
            return self.push(item);
        };
        let Some(close) = item[open..].find(']').map(|c| open + c) else {
            return self.push(item);
        };
        let (prefix, ranges, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
        let Some(ranges) = parse_ranges(ranges) else {
            return self.push(item);
        };
        for r in ranges {
            for n in r.lo..=r.hi {
                if self.full() {
                    return;
                }
                let name = format!("{prefix}{n:0width$}{rest}", width = r.width);
                self.bytes += name.len();
                self.expand(&name);
            }
        }
    }
}

/// Splits on commas that are not inside brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// One range of a bracket group: `001-003` is 1..=3 printed 3 wide.
struct Range {
    lo: u64,
    hi: u64,
    width: usize,
}

/// `001-003,7` → `[1..=3 width 3, 7..=7 width 1]`; `None` when not a range list or when one
/// range holds more than [`MAX_HOSTS`] numbers.
fn parse_ranges(s: &str) -> Option<Vec<Range>> {
    s.split(',')
        .map(|part| {
            let part = part.trim();
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (lo, hi): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
            (hi >= lo && hi - lo <= MAX_HOSTS as u64).then_some(Range { lo, hi, width: a.len() })
        })
        .collect()
}

/// The device indexes of an `IDX:` list (`0-3,6` → 0, 1, 2, 3, 6), in order and once each.
/// Indexes from [`MAX_GPUS_PER_NODE`] up are dropped before anything is expanded (no node has
/// them; `0-4000000000` is 64 numbers, not four billion). Empty when not a range list (`N/A`).
fn gpu_indexes(s: &str) -> Vec<u32> {
    const _: () = assert!(MAX_GPUS_PER_NODE <= 64, "the indexes are a 64-bit set");
    let mut seen = 0u64;
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(lo), Ok(hi)) = (a.parse::<u64>(), b.parse::<u64>()) else { return Vec::new() };
        if hi < lo {
            return Vec::new();
        }
        for i in lo..=hi.min(u64::from(MAX_GPUS_PER_NODE) - 1) {
            seen |= 1 << i;
        }
    }
    (0..MAX_GPUS_PER_NODE).filter(|i| seen & (1 << i) != 0).collect()
}

/// One `gpu` entry of a GRES string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GresGpu {
    /// The GPU type (`h100`), empty when the GRES has none.
    pub model: Text,
    pub count: u32,
    /// Device indexes from `(IDX:0-3,6)`, when given.
    pub idx: Vec<u32>,
}

/// The GPU entries of a GRES string such as `gpu:h100:8(S:0-1),gpu:a100:2,nic:1` or
/// `gpu:h100:4(IDX:0-3)`. Other GRES (`nic`, `shard`, `mps`) are skipped.
pub fn gres_gpus(s: &str) -> Vec<GresGpu> {
    let mut out = Vec::new();
    for entry in split_top_level_paren(s) {
        let entry = entry.trim();
        let (head, detail) = match entry.find('(') {
            Some(i) => (&entry[..i], entry[i + 1..].trim_end_matches(')')),
            None => (entry, ""),
        };
        // `gres/gpu:h100=4` and `gres:gpu:h100:4` (TRES-per-node forms) are accepted too.
        let head = head.trim_start_matches("gres/").trim_start_matches("gres:");
        let mut fields: Vec<&str> = head.split(':').collect();
        if fields.first().is_none_or(|f| *f != "gpu") {
            continue;
        }
        fields.remove(0);
        let (model, count) = match fields.as_slice() {
            [] => ("", 1),
            [n] if n.parse::<u32>().is_ok() => ("", n.parse().unwrap_or(0)),
            [t] => (*t, 1),
            [t, n, ..] => (*t, n.parse().unwrap_or(0)),
        };
        let idx = detail
            .split_once("IDX:")
            .map(|(_, r)| gpu_indexes(r.split(')').next().unwrap_or("")))
            .unwrap_or_default();
        out.push(GresGpu { model: model.into(), count, idx });
    }
    out
}

/// Splits on commas outside parentheses (`gpu:h100:4(IDX:0-1,3),nic:1`).
fn split_top_level_paren(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth <= 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Total GPUs in a GRES string and the first GPU type named.
pub fn gres_total(s: &str) -> (u32, Option<Text>) {
    let gpus = gres_gpus(s);
    let total = gpus.iter().map(|g| g.count).fold(0u32, u32::saturating_add);
    let model = gpus.iter().find(|g| !g.model.is_empty()).map(|g| g.model.clone());
    (total, model)
}

/// The GPU count in a TRES string: `gres/gpu=8` (typed entries such as `gres/gpu:h100=8` are
/// counted only when there is no plain `gres/gpu`). `None` when the string names no GPUs.
pub fn tres_gpus(s: &str) -> Option<u32> {
    let mut plain = None;
    let mut typed: Option<u32> = None;
    for kv in s.split(',') {
        let Some((k, v)) = kv.trim().split_once('=') else { continue };
        let Ok(n) = v.trim().parse::<u32>() else { continue };
        if k == "gres/gpu" {
            plain = Some(n);
        } else if k.starts_with("gres/gpu:") {
            typed = Some(typed.unwrap_or(0).saturating_add(n));
        }
    }
    plain.or(typed)
}

/// GPUs asked for in a TRES-per-X string: `gres/gpu:8`, `gres:gpu:h100:8`, `gres/gpu:l40s:4`,
/// `gres/gpu=2`. Returns the count and the type when named.
pub fn tres_per_gpus(s: &str) -> Option<(u32, Option<Text>)> {
    let mut found = None;
    for part in s.split(',') {
        let part = part.trim();
        let Some(rest) = part.strip_prefix("gres/gpu").or_else(|| part.strip_prefix("gres:gpu")) else {
            continue;
        };
        let fields: Vec<&str> = rest.trim_start_matches([':', '=']).split([':', '=']).collect();
        let parsed = match fields.as_slice() {
            [""] | [] => Some((1, None)),
            [n] => n.parse().ok().map(|n| (n, None)),
            [t, n, ..] => n.parse().ok().map(|n| (n, Some(Text::from(*t)))),
        };
        if parsed.is_some() {
            found = parsed;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(s: &str) -> Vec<String> {
        expand_hostlist(s).into_iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn hostlists_expand_with_padding_and_several_groups() {
        assert_eq!(hosts("gpu-[001-003,007]"), ["gpu-001", "gpu-002", "gpu-003", "gpu-007"]);
        assert_eq!(hosts("h100-[02-03],l40s-01"), ["h100-02", "h100-03", "l40s-01"]);
        assert_eq!(hosts("r[1-2]n[8-9]"), ["r1n8", "r1n9", "r2n8", "r2n9"]);
        assert_eq!(hosts("node7"), ["node7"]);
        assert!(hosts("").is_empty());
        // malformed input stays literal instead of panicking
        assert_eq!(hosts("gpu-[9-1]"), ["gpu-[9-1]"]);
        assert_eq!(hosts("gpu-[a-b"), ["gpu-[a-b"]);
    }

    /// Hostlists that would build billions of names, or names of gigabytes, stop at the caps:
    /// the ranges are walked, not built, so each of these ends after at most `MAX_HOSTS` names or
    /// `MAX_HOST_BYTES` of them (without the caps: 50 million strings, 2^40 hosts, 30 GB).
    #[test]
    fn hostile_hostlists_stop_at_the_caps_before_expanding() {
        let many = format!("n[{}]", vec!["0-999999"; 50].join(","));
        let h = expand_hostlist(&many);
        assert_eq!(h.len(), MAX_HOSTS);
        assert_eq!((h[0].as_str(), h[MAX_HOSTS - 1].as_str()), ("n0", "n999999"));
        // Several items, each under the cap, together over it.
        let items = vec!["a[0-999999]"; 30].join(",");
        assert_eq!(expand_hostlist(&items).len(), MAX_HOSTS);
        // Forty groups of two multiply to 2^40.
        let groups = "r[1-2]".repeat(40);
        let h = expand_hostlist(&groups);
        assert!(!h.is_empty() && h.len() <= MAX_HOSTS);
        assert!(h.iter().all(|n| n.len() == 40 * 2), "{}", h[0]);
        // Long names: a 10 KB suffix, a bound zero-padded to 30,000 digits.
        let suffix = format!("g[0-999999]{}", "x".repeat(10_000));
        let padded = format!("g[{}1-999999]", "0".repeat(30_000));
        for list in [suffix, padded] {
            let h = expand_hostlist(&list);
            let bytes: usize = h.iter().map(|n| n.len()).sum();
            assert!(!h.is_empty() && bytes <= MAX_HOST_BYTES + 40_000, "{} names, {bytes} bytes", h.len());
        }
        // One range wider than the cap is not a range: kept as text, as before.
        assert_eq!(hosts("gpu[001-999999999]"), ["gpu[001-999999999]"]);
        assert_eq!(hosts("gpu[0-18446744073709551615]"), ["gpu[0-18446744073709551615]"]);
    }

    /// GRES counts and device indexes past what a node can hold are cut before expanding.
    #[test]
    fn hostile_gres_counts_and_indexes_are_capped() {
        assert_eq!(gres_total("gpu:a100:999999999"), (999_999_999, Some("a100".into())));
        assert_eq!(gres_total("gpu:a:4294967295,gpu:b:4294967295").0, u32::MAX);
        let all: Vec<u32> = (0..MAX_GPUS_PER_NODE).collect();
        assert_eq!(gres_gpus("gpu:h100:8(IDX:0-4000000000)")[0].idx, all);
        let repeated = format!("gpu:h100:8(IDX:{})", vec!["0-18446744073709551615"; 2000].join(","));
        assert_eq!(gres_gpus(&repeated)[0].idx, all);
        assert_eq!(gres_gpus("gpu:h100:2(IDX:7,3,3,99)")[0].idx, [3, 7]);
        assert_eq!(gres_gpus("gpu:h100:2(IDX:3-1)")[0].idx, Vec::<u32>::new());
    }

    #[test]
    fn gres_strings_give_counts_models_and_indexes() {
        assert_eq!(gres_total("gpu:h100:8(S:0-1)"), (8, Some("h100".into())));
        assert_eq!(gres_total("gpu:h100:8,gpu:a100:2,nic:1"), (10, Some("h100".into())));
        assert_eq!(gres_total("gpu:4"), (4, None));
        assert_eq!(gres_total("(null)"), (0, None));
        let used = gres_gpus("gpu:h100:4(IDX:0-1,3,6)");
        assert_eq!(used[0].idx, [0, 1, 3, 6]);
        assert_eq!(gres_gpus("gpu:h100:0(IDX:N/A)")[0].idx, Vec::<u32>::new());
    }

    #[test]
    fn tres_strings() {
        assert_eq!(tres_gpus("cpu=64,mem=1000000M,billing=64,gres/gpu=8"), Some(8));
        assert_eq!(tres_gpus("cpu=1,gres/gpu:h100=2"), Some(2));
        assert_eq!(tres_gpus("cpu=1,mem=1G"), None);
        assert_eq!(tres_per_gpus("gres/gpu:8"), Some((8, None)));
        assert_eq!(tres_per_gpus("gres:gpu:h100:8"), Some((8, Some("h100".into()))));
        assert_eq!(tres_per_gpus("gres/gpu:l40s:4"), Some((4, Some("l40s".into()))));
        assert_eq!(tres_per_gpus(""), None);
        assert_eq!(tres_per_gpus("cpu:2,gres/gpu:4"), Some((4, None)));
    }
}
