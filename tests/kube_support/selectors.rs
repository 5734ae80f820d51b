//! Label selectors (string form and `metav1.LabelSelector`) and field selectors.

use super::util::ApiError;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    /// An empty `metav1.LabelSelector` matches nothing when it is nil; used for that case.
    Never,
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Req>);

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let bad = || ApiError::bad_request(format!("unable to parse requirement: {part}"));
            if let Some(k) = part.strip_prefix('!') {
                reqs.push(Req::NotExists(k.trim().to_string()));
            } else if let Some((k, rest)) = split_word(part, " notin ") {
                reqs.push(Req::NotIn(k, set_values(&rest).ok_or_else(bad)?));
            } else if let Some((k, rest)) = split_word(part, " in ") {
                reqs.push(Req::In(k, set_values(&rest).ok_or_else(bad)?));
            } else if let Some((k, v)) = part.split_once("!=") {
                reqs.push(Req::Ne(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = part.split_once("==") {
                reqs.push(Req::Eq(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = part.split_once('=') {
                reqs.push(Req::Eq(k.trim().into(), v.trim().into()));
            } else if part.contains(['(', ')', '<', '>']) {
                return Err(bad());
            } else {
                reqs.push(Req::Exists(part.to_string()));
            }
        }
        Ok(LabelSelector(reqs))
    }

    /// From a `metav1.LabelSelector` object. `None` (absent) matches nothing.
    pub fn from_object(v: Option<&Value>) -> Self {
        let Some(v) = v.filter(|v| v.is_object()) else {
            return LabelSelector(vec![Req::Never]);
        };
        let mut reqs = Vec::new();
        if let Some(m) = v.get("matchLabels").and_then(Value::as_object) {
            for (k, val) in m {
                reqs.push(Req::Eq(k.clone(), val.as_str().unwrap_or_default().into()));
            }
        }
        for e in v.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
            let k = e["key"].as_str().unwrap_or_default().to_string();
            let vals: Vec<String> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str().map(String::from))
                .collect();
            reqs.push(match e["operator"].as_str().unwrap_or_default() {
                "In" => Req::In(k, vals),
                "NotIn" => Req::NotIn(k, vals),
                "Exists" => Req::Exists(k),
                "DoesNotExist" => Req::NotExists(k),
                _ => Req::Never,
            });
        }
        LabelSelector(reqs)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => labels.get(k) == Some(v),
            Req::Ne(k, v) => labels.get(k) != Some(v),
            Req::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Req::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Req::Exists(k) => labels.contains_key(k),
            Req::NotExists(k) => !labels.contains_key(k),
            Req::Never => false,
        })
    }
}

/// Splits on commas outside parentheses.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

fn split_word(part: &str, word: &str) -> Option<(String, String)> {
    let i = part.find(word)?;
    Some((part[..i].trim().to_string(), part[i + word.len()..].trim().to_string()))
}

fn set_values(s: &str) -> Option<Vec<String>> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect())
}

/// A parsed field selector: `a=b`, `a==b`, `a!=b`, comma-joined.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses and checks every field is one the resource supports (`supported`), like the
    /// real server's "field label not supported" error.
    pub fn parse(s: &str, supported: &[&str]) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (k, eq, v) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!("invalid selector: '{part}'")));
            };
            let k = k.trim();
            if k != "metadata.name" && k != "metadata.namespace" && !supported.contains(&k) {
                return Err(ApiError::bad_request(format!("field label not supported: {k}")));
            }
            reqs.push((k.to_string(), eq, v.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    /// Renames fields (events.k8s.io `regarding.*` is stored as core `involvedObject.*`).
    pub fn map_fields(mut self, f: impl Fn(&str) -> String) -> Self {
        for r in &mut self.0 {
            r.0 = f(&r.0);
        }
        self
    }

    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.0.iter().all(|(k, eq, v)| {
            let have = get(k).unwrap_or_default();
            (have == *v) == *eq
        })
    }
}
