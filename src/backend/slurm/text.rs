//! Slurm's little string languages, shared by every API version: hostlists
//! (`gpu-[001-004,007]`), GRES strings (`gpu:h100:8(S:0-1)`, `gpu:h100:4(IDX:0-3)`) and TRES
//! strings (`cpu=64,mem=1000000M,gres/gpu=8`). Everything here is untrusted input: parsers
//! never panic and give up quietly on what they do not understand.

use crate::model::Text;

/// Hostlists longer than this are cut (a hostile or broken range must not eat the memory).
const MAX_HOSTS: usize = 1_000_000;

/// Expands a Slurm hostlist into host names: `gpu-[001-003,007],cpu1` →
/// `gpu-001 gpu-002 gpu-003 gpu-007 cpu1`. Zero padding is kept; several bracket groups
/// multiply (`r[1-2]n[1-2]` → 4 hosts). Malformed ranges are kept as literal text.
pub fn expand_hostlist(list: &str) -> Vec<Text> {
    let mut out = Vec::new();
    for item in split_top_level(list) {
        let item = item.trim();
        if !item.is_empty() {
            expand_one(item, &mut out);
        }
        if out.len() >= MAX_HOSTS {
            out.truncate(MAX_HOSTS);
            break;
        }
    }
    out
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

fn expand_one(item: &str, out: &mut Vec<Text>) {
    let Some(open) = item.find('[') else {
        out.push(item.into());
        return;
    };
    let Some(close) = item[open..].find(']').map(|c| open + c) else {
        out.push(item.into());
        return;
    };
    let (prefix, ranges, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let Some(values) = expand_ranges(ranges) else {
        out.push(item.into());
        return;
    };
    for v in values {
        if out.len() >= MAX_HOSTS {
            return;
        }
        expand_one(&format!("{prefix}{v}{rest}"), out);
    }
}

/// `001-003,7` → `["001", "002", "003", "7"]`; `None` when not a range list.
fn expand_ranges(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (lo, hi): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
                if hi < lo || hi - lo > MAX_HOSTS as u64 {
                    return None;
                }
                let width = a.len();
                for n in lo..=hi {
                    out.push(format!("{n:0width$}"));
                }
            }
            None => {
                part.parse::<u64>().ok()?;
                out.push(part.to_string());
            }
        }
    }
    Some(out)
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
            .map(|(_, r)| {
                let r = r.split(')').next().unwrap_or("");
                expand_ranges(r).unwrap_or_default().iter().filter_map(|v| v.parse().ok()).collect()
            })
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
