//! Small shared pieces: API errors as `Status` objects, timestamps, ids, JSON patches, ages.

use serde_json::{Map, Value, json};

/// An error the API answers with: always rendered as a `meta/v1 Status` object.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError { code, reason, message: message.into(), details: None }
    }
    pub fn with_details(mut self, d: Value) -> Self {
        self.details = Some(d);
        self
    }
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        let res = qualified(group, plural);
        ApiError::new(404, "NotFound", format!("{res} \"{name}\" not found"))
            .with_details(json!({"name": name, "group": group, "kind": plural}))
    }
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        let res = qualified(group, plural);
        ApiError::new(409, "AlreadyExists", format!("{res} \"{name}\" already exists"))
            .with_details(json!({"name": name, "group": group, "kind": plural}))
    }
    pub fn conflict(group: &str, plural: &str, name: &str) -> Self {
        let res = qualified(group, plural);
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {res} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again"
            ),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }
    pub fn bad_request(msg: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", msg)
    }
    pub fn invalid(kind: &str, name: &str, field: &str, msg: &str) -> Self {
        ApiError::new(422, "Invalid", format!("{kind} \"{name}\" is invalid: {field}: Required value: {msg}"))
            .with_details(json!({"name": name, "kind": kind, "causes": [
                {"reason": "FieldValueRequired", "message": format!("Required value: {msg}"), "field": field}
            ]}))
    }
    pub fn expired(msg: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", msg)
    }
    pub fn status_json(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

/// `pods` or `deployments.apps`, as the real server names resources in messages.
pub fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() { plural.to_string() } else { format!("{plural}.{group}") }
}

pub fn success_status(details: Value) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// Seconds since the epoch, now.
pub fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// RFC 3339 with second precision, as Kubernetes writes `metav1.Time`.
pub fn ts(secs: i64) -> String {
    jiff::Timestamp::from_second(secs).map(|t| t.to_string()).unwrap_or_default()
}

/// RFC 3339 with microseconds (`metav1.MicroTime`).
pub fn micro_ts(secs: i64) -> String {
    let t = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    t.strftime("%Y-%m-%dT%H:%M:%S.000000Z").to_string()
}

pub fn parse_ts(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The five-character suffix `generateName` gets (the apiserver's alphabet: no vowels, no 0/1/3).
pub fn name_suffix() -> String {
    const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHA[fastrand::usize(..ALPHA.len())] as char).collect()
}

/// RFC 7386 JSON merge patch (also used for strategic merge patches: the fields gpuplane and
/// kubectl patch have no merge keys that differ from plain merging). Strategic-merge
/// directives (`$patch`, `$setElementOrder/...`, `$retainKeys`) are dropped.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().expect("object");
            for (k, v) in p {
                if k.starts_with('$') {
                    continue;
                }
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// RFC 6902 JSON patch: add, remove, replace, test, copy, move.
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), String> {
    let ops = ops.as_array().ok_or("json patch must be an array")?;
    for op in ops {
        let kind = op["op"].as_str().ok_or("missing op")?;
        let path = op["path"].as_str().ok_or("missing path")?;
        match kind {
            "add" => ptr_add(target, path, op["value"].clone())?,
            "remove" => {
                ptr_remove(target, path)?;
            }
            "replace" => {
                ptr_remove(target, path)?;
                ptr_add(target, path, op["value"].clone())?;
            }
            "test" => {
                if target.pointer(path) != Some(&op["value"]) {
                    return Err(format!("test failed at {path}"));
                }
            }
            "copy" | "move" => {
                let from = op["from"].as_str().ok_or("missing from")?;
                let v = if kind == "move" {
                    ptr_remove(target, from)?
                } else {
                    target.pointer(from).cloned().ok_or("missing from value")?
                };
                ptr_add(target, path, v)?;
            }
            other => return Err(format!("unknown op {other}")),
        }
    }
    Ok(())
}

fn split_ptr(path: &str) -> Result<(String, String), String> {
    let i = path.rfind('/').ok_or("bad pointer")?;
    let last = path[i + 1..].replace("~1", "/").replace("~0", "~");
    Ok((path[..i].to_string(), last))
}

fn ptr_add(target: &mut Value, path: &str, v: Value) -> Result<(), String> {
    if path.is_empty() {
        *target = v;
        return Ok(());
    }
    let (parent, last) = split_ptr(path)?;
    match target.pointer_mut(&parent) {
        Some(Value::Object(m)) => {
            m.insert(last, v);
            Ok(())
        }
        Some(Value::Array(a)) => {
            if last == "-" {
                a.push(v);
            } else {
                let i: usize = last.parse().map_err(|_| "bad index")?;
                if i > a.len() {
                    return Err("index out of range".into());
                }
                a.insert(i, v);
            }
            Ok(())
        }
        _ => Err(format!("missing parent for {path}")),
    }
}

fn ptr_remove(target: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split_ptr(path)?;
    match target.pointer_mut(&parent) {
        Some(Value::Object(m)) => m.remove(&last).ok_or(format!("missing {path}")),
        Some(Value::Array(a)) => {
            let i: usize = last.parse().map_err(|_| "bad index")?;
            if i >= a.len() {
                return Err("index out of range".into());
            }
            Ok(a.remove(i))
        }
        _ => Err(format!("missing parent for {path}")),
    }
}

/// kubectl's age format (the same rules as apimachinery's `HumanDuration`).
pub fn human_age(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{d}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

/// Walks a dotted path (`spec.nodeName`) to a string-ish value.
pub fn field_str(v: &Value, path: &str) -> Option<String> {
    let mut cur = v;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An int-or-percent (`"25%"` / `2`) resolved against `total`, rounding up like the
/// disruption controller.
pub fn int_or_percent(v: &Value, total: i64) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            if let Some(p) = s.strip_suffix('%') {
                let p: i64 = p.parse().ok()?;
                Some((total * p + 99) / 100)
            } else {
                s.parse().ok()
            }
        }
        _ => None,
    }
}
