//! HTTP: authentication, routing, discovery, list (paging, selectors, tables), watch streams,
//! get/create/update/patch/delete and the subresources.

use super::convert;
use super::eviction;
use super::kueue;
use super::ops::{self, DeleteOpts, PODS};
use super::policy::{Attrs, Policy};
use super::resources::{self, Feature, ResDef};
use super::selectors::{FieldSelector, LabelSelector};
use super::store::{EvType, Obj, Snapshot};
use super::tables::{self, Include};
use super::util::ApiError;
use super::{RequestLog, Shared};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub type Body = BoxBody<Bytes, Infallible>;

fn full(code: u16, ctype: &str, b: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("Content-Type", ctype)
        .header("Cache-Control", "no-cache, private")
        .body(Full::new(b.into()).boxed())
        .expect("response")
}

fn json_resp(code: u16, v: &Value) -> Response<Body> {
    full(code, "application/json", serde_json::to_vec(v).expect("json"))
}

fn err_resp(e: &ApiError) -> Response<Body> {
    json_resp(e.code, &e.status_json())
}

/// How the client wants objects rendered.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fmt {
    Json,
    Table(Include),
    Meta,
}

fn fmt_of(accept: &str, q: &Query) -> Result<Fmt, ApiError> {
    if accept.contains("as=Table") {
        return Ok(Fmt::Table(Include::parse(q.get("includeObject"))));
    }
    if accept.contains("as=PartialObjectMetadata") {
        return Ok(Fmt::Meta);
    }
    if !accept.is_empty()
        && !accept.contains("json")
        && !accept.contains("*/*")
        && !accept.contains("application/*")
    {
        return Err(ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: application/json (got {accept})"),
        ));
    }
    Ok(Fmt::Json)
}

pub struct Query(pub Vec<(String, String)>);

impl Query {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
    }
    fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("1" | "true" | "True"))
    }
    fn dry_run(&self) -> bool {
        self.0.iter().any(|(k, v)| k == "dryRun" && v == "All")
    }
}

/// Serves one HTTP request.
pub async fn handle(sh: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let raw_query = req.uri().query().unwrap_or_default().to_string();
    let q = Query(form_urlencoded::parse(raw_query.as_bytes()).into_owned().collect());
    let header = |n: &str| req.headers().get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let accept = header("accept");
    let ctype = header("content-type");
    let auth = header("authorization");
    let user = auth.strip_prefix("Bearer ").and_then(|t| sh.tokens.read().unwrap().get(t.trim()).cloned());
    // Impersonation (Impersonate-User / Impersonate-Group): the caller must be allowed to
    // `impersonate` each; the request then runs as the impersonated identity.
    let imp_user = header("impersonate-user");
    let imp_groups: Vec<String> = req
        .headers()
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let acting = match &user {
        Some(u) if !imp_user.is_empty() => impersonate(&sh, u, &imp_user, &imp_groups),
        Some(u) => Ok(u.clone()),
        None => Err(ApiError::new(401, "Unauthorized", "Unauthorized")),
    };
    let resp = match &acting {
        Err(e) => err_resp(e),
        Ok(u) => match route(&sh, u, &method, &path, &q, &accept, &ctype, &body).await {
            Ok(r) => r,
            Err(e) => err_resp(&e),
        },
    };
    let user = match (&user, &acting) {
        (Some(u), Ok(a)) if a != u => Some(format!("{u} as {a}")),
        _ => user,
    };
    sh.requests.lock().unwrap().push(RequestLog {
        method: method.to_string(),
        path,
        query: raw_query,
        user: user.unwrap_or_default(),
        status: resp.status().as_u16(),
    });
    Ok(resp)
}

/// Checks that `caller` may impersonate `user` and `groups`; returns the identity to act as: the
/// user's own rules when the policy has them, else the first group's (`group:NAME`).
fn impersonate(sh: &Shared, caller: &str, user: &str, groups: &[String]) -> Result<String, ApiError> {
    let policy = sh.policy.read().unwrap();
    let attrs = |resource: &str, name: &str| super::policy::Attrs {
        verb: "impersonate".into(),
        resource: resource.into(),
        name: name.into(),
        ..Default::default()
    };
    for (resource, name) in
        std::iter::once(("users", user)).chain(groups.iter().map(|g| ("groups", g.as_str())))
    {
        let a = attrs(resource, name);
        if !policy.check(caller, &a).allowed {
            return Err(super::policy::Policy::forbidden(caller, &a));
        }
    }
    if policy.has_user(user) {
        return Ok(user.to_string());
    }
    Ok(groups
        .iter()
        .map(|g| format!("group:{g}"))
        .find(|k| policy.has_user(k))
        .unwrap_or_else(|| user.to_string()))
}

struct Target {
    group: String,
    version: String,
    def: &'static ResDef,
    ns: String,
    name: String,
    sub: String,
}

/// Splits a resource path into group/version/namespace/resource/name/subresource.
fn parse_target(sh: &Shared, path: &str) -> Option<Result<Target, ApiError>> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => ("", *v, rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => (*g, *v, rest),
        _ => return None,
    };
    let served = sh.served;
    let (ns, rest) = match rest {
        ["namespaces", ns, r, ..]
            if resources::find(group, version, r, &served).is_some_and(|d| d.namespaced) =>
        {
            (ns.to_string(), &rest[2..])
        }
        _ => (String::new(), rest),
    };
    let plural = rest[0];
    let Some(def) = resources::find(group, version, plural, &served) else {
        return Some(Err(ApiError::new(404, "NotFound", "the server could not find the requested resource")
            .with_details(json!({}))));
    };
    Some(Ok(Target {
        group: group.to_string(),
        version: version.to_string(),
        def,
        ns,
        name: rest.get(1).map(|s| s.to_string()).unwrap_or_default(),
        sub: rest.get(2).map(|s| s.to_string()).unwrap_or_default(),
    }))
}

#[allow(clippy::too_many_arguments)]
async fn route(
    sh: &Arc<Shared>,
    user: &str,
    method: &Method,
    path: &str,
    q: &Query,
    accept: &str,
    ctype: &str,
    body: &Bytes,
) -> Result<Response<Body>, ApiError> {
    let served = sh.served;
    let vis_off = !sh.visibility.load(std::sync::atomic::Ordering::SeqCst);
    let unavailable =
        || ApiError::new(503, "ServiceUnavailable", "the server is currently unable to handle the request");
    match path.trim_end_matches('/') {
        "/version" => {
            return Ok(json_resp(
                200,
                &json!({
                    "major": "1", "minor": "34", "emulationMajor": "1", "emulationMinor": "34",
                    "gitVersion": "v1.34.0-gpuplane-fake", "gitCommit": "0000000000000000000000000000000000000000",
                    "gitTreeState": "clean", "buildDate": "2025-08-27T00:00:00Z", "goVersion": "go1.24.6",
                    "compiler": "gc", "platform": "linux/amd64",
                }),
            ));
        }
        "/healthz" | "/readyz" | "/livez" => return Ok(full(200, "text/plain", "ok")),
        "/api" => return Ok(json_resp(200, &resources::api_versions(&sh.addr.to_string()))),
        "/apis" => return Ok(json_resp(200, &resources::api_group_list(&served))),
        "/api/v1" => {
            return Ok(json_resp(200, &resources::resource_list("", "v1", &served).expect("core")));
        }
        p if p.starts_with("/openapi") => {
            return Err(ApiError::new(404, "NotFound", "the server could not find the requested resource"));
        }
        _ => {}
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    if segs[0] == "apis" && segs.len() <= 3 {
        let not_found = || ApiError::new(404, "NotFound", "the server could not find the requested resource");
        if segs.len() == 2 {
            return resources::api_group(segs[1], &served).map(|v| json_resp(200, &v)).ok_or_else(not_found);
        }
        if segs.len() == 3 {
            if segs[1] == "visibility.kueue.x-k8s.io"
                && vis_off
                && resources::api_group(segs[1], &served).is_some()
            {
                return Err(unavailable());
            }
            return resources::resource_list(segs[1], segs[2], &served)
                .map(|v| json_resp(200, &v))
                .ok_or_else(not_found);
        }
    }
    let t = match parse_target(sh, path) {
        None => {
            return Err(ApiError::new(404, "NotFound", "the server could not find the requested resource"));
        }
        Some(t) => t?,
    };
    if t.def.feature == Feature::Visibility && vis_off {
        return Err(unavailable());
    }
    if !t.sub.is_empty() && !t.def.subs.iter().any(|s| s.name == t.sub) {
        return Err(ApiError::new(404, "NotFound", "the server could not find the requested resource"));
    }
    let is_watch = q.flag("watch");
    let verb = match (method.as_str(), t.name.is_empty()) {
        ("GET", true) if is_watch => "watch",
        ("GET", true) => "list",
        ("GET", false) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "deletecollection",
        ("DELETE", false) => "delete",
        _ => {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            ));
        }
    };
    let attrs = Attrs {
        verb: verb.into(),
        group: t.group.clone(),
        resource: t.def.plural.into(),
        subresource: t.sub.clone(),
        namespace: t.ns.clone(),
        name: t.name.clone(),
    };
    // Every authenticated user may review its own access (system:basic-user).
    // (SelfSubjectAccessReview, SelfSubjectRulesReview; and SelfSubjectReview, "who am I")
    let self_review = (t.group == "authorization.k8s.io" && t.def.plural.starts_with("selfsubject"))
        || (t.group == "authentication.k8s.io" && t.def.plural == "selfsubjectreviews");
    if !self_review && !sh.policy.read().unwrap().check(user, &attrs).allowed {
        return Err(Policy::forbidden(user, &attrs));
    }
    if !t.def.verbs.contains(&verb) && t.sub.is_empty() {
        return Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ));
    }
    let def = t.def;
    let key = def.storage();
    let dry = q.dry_run();

    // Special resources and subresources.
    if def.plural == "selfsubjectreviews" {
        // The identity the request was authenticated (or impersonated) as; every
        // authenticated user is in system:authenticated.
        let b: Value = serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
        if b["kind"].as_str().is_some_and(|k| k != "SelfSubjectReview") {
            return Err(ApiError::bad_request(format!("expected kind SelfSubjectReview, got {}", b["kind"])));
        }
        return Ok(json_resp(
            201,
            &json!({
                "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
                "metadata": {"creationTimestamp": null},
                "status": {"userInfo": {"username": user, "groups": ["system:authenticated"]}},
            }),
        ));
    }
    if def.plural == "selfsubjectaccessreviews" {
        let b: Value = serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
        return Ok(json_resp(201, &sh.policy.read().unwrap().review(user, b)));
    }
    if t.sub == "pendingworkloads" {
        let limit = q.get("limit").and_then(|v| v.parse().ok()).unwrap_or(1000);
        let offset = q.get("offset").and_then(|v| v.parse().ok()).unwrap_or(0);
        let st = sh.store.lock().unwrap();
        let v = if def.plural == "clusterqueues" {
            kueue::pending_workloads(&st, &t.version, Some(&t.name), None, limit, offset)?
        } else {
            kueue::pending_workloads(&st, &t.version, None, Some((&t.ns, &t.name)), limit, offset)?
        };
        return Ok(json_resp(200, &v));
    }
    if def.feature == Feature::Visibility {
        return Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ));
    }
    if key == PODS && t.sub == "log" {
        let st = sh.store.lock().unwrap();
        st.get(PODS, &t.ns, &t.name).ok_or_else(|| ApiError::not_found("", "pods", &t.name))?;
        drop(st);
        let text =
            sh.pod_logs.lock().unwrap().get(&(t.ns.clone(), t.name.clone())).cloned().unwrap_or_default();
        let text = match q.get("tailLines").and_then(|v| v.parse::<usize>().ok()) {
            Some(n) => {
                let lines: Vec<&str> = text.lines().collect();
                let mut s = lines[lines.len().saturating_sub(n)..].join("\n");
                if !s.is_empty() {
                    s.push('\n');
                }
                s
            }
            None => text,
        };
        return Ok(full(200, "text/plain", text));
    }
    if key == PODS && t.sub == "eviction" {
        if method != Method::POST {
            return Err(ApiError::new(405, "MethodNotAllowed", "eviction supports POST only"));
        }
        let mut v = eviction::evict(sh, &t.ns, &t.name, body, dry)?;
        v["code"] = json!(201);
        return Ok(json_resp(201, &v));
    }

    let fmt = fmt_of(accept, q)?;
    match verb {
        "list" => list(sh, def, &t.version, &t.ns, q, fmt),
        "watch" => {
            if sh.expired_as_status.load(std::sync::atomic::Ordering::SeqCst) {
                expired_as_status(sh, def, q).await?;
            }
            watch(sh, def, &t.version, &t.ns, q, fmt)
        }
        "get" => {
            let v = sh
                .store
                .lock()
                .unwrap()
                .get_value(key, &t.ns, &t.name)
                .ok_or_else(|| ApiError::not_found(def.group, def.plural, &t.name))?;
            let v = convert::out(def, &t.version, v);
            Ok(json_resp(200, &render_one(def, v, fmt)))
        }
        "create" => {
            let b = parse_body(body)?;
            if def.group == "events.k8s.io" {
                let name = b["metadata"]["name"]
                    .as_str()
                    .or(b["metadata"]["generateName"].as_str())
                    .unwrap_or_default()
                    .to_string();
                for f in ["eventTime", "reportingController", "reportingInstance"] {
                    if b[f].is_null() {
                        return Err(ApiError::invalid("Event", &name, f, &format!("{f} is required")));
                    }
                }
            }
            let b = convert::into_stored(def, &t.version, b);
            let v = ops::create(sh, def, &t.ns, b, dry)?;
            Ok(json_resp(201, &convert::out(def, &t.version, v)))
        }
        "update" => {
            let b = convert::into_stored(def, &t.version, parse_body(body)?);
            let v = ops::replace(sh, def, &t.ns, &t.name, &t.sub, b, dry)?;
            Ok(json_resp(200, &convert::out(def, &t.version, v)))
        }
        "patch" => {
            let v = ops::patch(sh, def, &t.version, &t.ns, &t.name, &t.sub, ctype, body, dry)?;
            Ok(json_resp(200, &convert::out(def, &t.version, v)))
        }
        "delete" => {
            let o = DeleteOpts::parse(&q.0, body);
            let v = ops::delete(sh, def, &t.ns, &t.name, &o)?;
            Ok(json_resp(200, &convert::out(def, &t.version, v)))
        }
        "deletecollection" => {
            let o = DeleteOpts::parse(&q.0, body);
            let label = LabelSelector::parse(q.get("labelSelector").unwrap_or_default())?;
            let names: Vec<String> = {
                let st = sh.store.lock().unwrap();
                st.iter(key, if def.namespaced && !t.ns.is_empty() { Some(&t.ns) } else { None })
                    .into_iter()
                    .filter(|o| label.matches(&o.labels))
                    .map(|o| format!("{}/{}", o.ns, o.name))
                    .collect()
            };
            let mut items = Vec::new();
            for n in names {
                let (ns, name) = n.split_once('/').expect("key");
                if let Ok(v) = ops::delete(sh, def, ns, name, &o) {
                    items.push(convert::out(def, &t.version, v));
                }
            }
            Ok(json_resp(
                200,
                &json!({"kind": format!("{}List", def.kind), "apiVersion": def.api_version(&t.version), "metadata": {}, "items": items}),
            ))
        }
        _ => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )),
    }
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("the body of the request could not be decoded as JSON: {e}"))
    })?;
    if !v.is_object() {
        return Err(ApiError::bad_request("the body of the request must be an object"));
    }
    Ok(v)
}

fn render_one(def: &ResDef, v: Value, fmt: Fmt) -> Value {
    match fmt {
        Fmt::Json => v,
        Fmt::Meta => meta_only(&v),
        Fmt::Table(inc) => {
            let rv = v["metadata"]["resourceVersion"].clone();
            tables::table(def.kind, vec![tables::row(def.kind, &v, inc)], json!({"resourceVersion": rv}))
        }
    }
}

fn meta_only(v: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": v["metadata"]})
}

/// Whether stored JSON can go out as is for this version.
fn needs_conversion(def: &ResDef, version: &str) -> bool {
    def.group == "events.k8s.io" || version != def.versions[0]
}

fn selectors(def: &ResDef, q: &Query) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let label = LabelSelector::parse(q.get("labelSelector").unwrap_or_default())?;
    let mut field = FieldSelector::parse(q.get("fieldSelector").unwrap_or_default(), def.fields)?;
    if def.group == "events.k8s.io" {
        field = field.map_fields(convert::event_field);
    }
    Ok((label, field))
}

fn matches(o: &Obj, ns: &str, label: &LabelSelector, field: &FieldSelector) -> bool {
    (ns.is_empty() || o.ns == ns) && label.matches(&o.labels) && field.matches(|f| o.field(f))
}

/// A continue token: the list's resourceVersion and the last key returned.
fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    let t = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{ns}/{name}\u{0}")});
    hex::encode(serde_json::to_vec(&t).expect("json"))
}

fn decode_continue(s: &str) -> Result<(u64, String, String), ApiError> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = hex::decode(s).map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v["rv"].as_u64().ok_or_else(bad)?;
    let start = v["start"].as_str().ok_or_else(bad)?.trim_end_matches('\u{0}');
    let (ns, name) = start.split_once('/').ok_or_else(bad)?;
    Ok((rv, ns.to_string(), name.to_string()))
}

const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn list(
    sh: &Arc<Shared>,
    def: &'static ResDef,
    version: &str,
    ns: &str,
    q: &Query,
    fmt: Fmt,
) -> Result<Response<Body>, ApiError> {
    let key = def.storage();
    let (label, field) = selectors(def, q)?;
    let mut limit = q.get("limit").and_then(|v| v.parse::<usize>().ok()).filter(|l| *l > 0);
    let (rv, snap, after): (u64, Snapshot, Option<(String, String)>) = {
        let mut st = sh.store.lock().unwrap();
        match q.get("continue").filter(|c| !c.is_empty()) {
            Some(c) => {
                let (rv, cns, cname) = decode_continue(c)?;
                let snap = st.snapshot_at(key, rv).ok_or_else(|| ApiError::expired(CONTINUE_EXPIRED))?;
                (rv, snap, Some((cns, cname)))
            }
            None => {
                if q.get("resourceVersion") == Some("0") {
                    // Served from the watch cache: the limit is ignored.
                    limit = None;
                }
                let (rv, snap) = st.snapshot(key);
                (rv, snap, None)
            }
        }
    };
    // Skip to the namespace (objects are ordered by namespace, then name) or past the token.
    let start = match &after {
        Some((ans, aname)) => {
            snap.partition_point(|o| (o.ns.as_str(), o.name.as_str()) <= (ans.as_str(), aname.as_str()))
        }
        None if !ns.is_empty() => snap.partition_point(|o| o.ns.as_str() < ns),
        None => 0,
    };
    let mut items: Vec<Arc<Obj>> = Vec::new();
    let mut next = None;
    let mut remaining = 0usize;
    for o in snap[start..].iter() {
        if !ns.is_empty() && o.ns != ns {
            break;
        }
        if !matches(o, ns, &label, &field) {
            continue;
        }
        if let Some(l) = limit
            && items.len() >= l
        {
            if next.is_none() {
                let last = items.last().expect("limit > 0");
                next = Some(encode_continue(rv, &last.ns, &last.name));
            }
            remaining += 1;
            continue;
        }
        items.push(o.clone());
    }
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(n) = next {
        meta["continue"] = json!(n);
        meta["remainingItemCount"] = json!(remaining);
    }
    match fmt {
        Fmt::Table(inc) => {
            let rows: Vec<Value> = items
                .iter()
                .map(|o| tables::row(def.kind, &convert::out(def, version, o.value()), inc))
                .collect();
            Ok(json_resp(200, &tables::table(def.kind, rows, meta)))
        }
        Fmt::Meta => {
            let items: Vec<Value> = items.iter().map(|o| meta_only(&o.value())).collect();
            Ok(json_resp(
                200,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": items}),
            ))
        }
        Fmt::Json => {
            let head = format!(
                "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
                def.kind,
                def.api_version(version),
                meta
            );
            let conv = needs_conversion(def, version);
            let version = version.to_string();
            // Streams the pre-serialized objects in ~1 MiB chunks.
            let mut idx = 0usize;
            let mut done = false;
            let mut first = Some(Bytes::from(head));
            let stream = futures::stream::poll_fn(move |_| {
                if done {
                    return std::task::Poll::Ready(None);
                }
                let mut buf = Vec::with_capacity(1 << 20);
                if let Some(h) = first.take() {
                    buf.extend_from_slice(&h);
                }
                while idx < items.len() && buf.len() < (1 << 20) {
                    if idx > 0 {
                        buf.push(b',');
                    }
                    if conv {
                        let v = convert::out(def, &version, items[idx].value());
                        buf.extend_from_slice(&serde_json::to_vec(&v).expect("json"));
                    } else {
                        buf.extend_from_slice(&items[idx].json);
                    }
                    idx += 1;
                }
                if idx >= items.len() {
                    buf.extend_from_slice(b"]}");
                    done = true;
                }
                std::task::Poll::Ready(Some(Ok::<_, Infallible>(Frame::data(Bytes::from(buf)))))
            });
            Ok(Response::builder()
                .status(200)
                .header("Content-Type", "application/json")
                .body(BodyExt::boxed(StreamBody::new(stream)))
                .expect("response"))
        }
    }
}

fn event_line(typ: &str, def: &ResDef, version: &str, o: &Obj, fmt: Fmt) -> Bytes {
    let mut out = Vec::with_capacity(o.json.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(typ.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    if fmt == Fmt::Json && !needs_conversion(def, version) {
        out.extend_from_slice(&o.json);
    } else {
        let v = convert::out(def, version, o.value());
        let v = match fmt {
            Fmt::Meta => meta_only(&v),
            Fmt::Table(inc) => tables::table(
                def.kind,
                vec![tables::row(def.kind, &v, inc)],
                json!({"resourceVersion": o.rv.to_string()}),
            ),
            Fmt::Json => v,
        };
        out.extend_from_slice(&serde_json::to_vec(&v).expect("json"));
    }
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

fn bookmark(def: &ResDef, version: &str, rv: u64, initial_end: bool) -> Bytes {
    let mut md = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let v = json!({"type": "BOOKMARK", "object": {"kind": def.kind, "apiVersion": def.api_version(version), "metadata": md}});
    let mut b = serde_json::to_vec(&v).expect("json");
    b.push(b'\n');
    Bytes::from(b)
}

/// With `expire_watches_with_status`: a watch from a compacted resourceVersion is answered
/// HTTP 410 itself (after the gate opens, so a test can compact while the client is between
/// watches, as with the in-stream answer).
async fn expired_as_status(sh: &Arc<Shared>, def: &'static ResDef, q: &Query) -> Result<(), ApiError> {
    let rv = q.get("resourceVersion").unwrap_or_default();
    let Some(from) = rv.parse::<u64>().ok().filter(|&n| n > 0 && !q.flag("sendInitialEvents")) else {
        return Ok(());
    };
    let mut gate = sh.watch_gate.subscribe();
    while *gate.borrow_and_update() {
        if gate.changed().await.is_err() {
            break;
        }
    }
    if let Err(min) = sh.store.lock().unwrap().events_since(def.storage(), from) {
        sh.expired_watches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        return Err(ApiError::expired(format!("too old resource version: {from} ({min})")));
    }
    Ok(())
}

fn watch(
    sh: &Arc<Shared>,
    def: &'static ResDef,
    version: &str,
    ns: &str,
    q: &Query,
    fmt: Fmt,
) -> Result<Response<Body>, ApiError> {
    let key = def.storage();
    let (label, field) = selectors(def, q)?;
    let rv_param = q.get("resourceVersion").unwrap_or_default().to_string();
    let send_initial = q.flag("sendInitialEvents");
    let bookmarks = q.flag("allowWatchBookmarks");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(sh.opts.max_watch);
    let from: Option<u64> = if send_initial || rv_param.is_empty() || rv_param == "0" {
        None
    } else {
        Some(rv_param.parse().map_err(|_| {
            ApiError::new(422, "Invalid", format!("resourceVersion: Invalid value: \"{rv_param}\""))
        })?)
    };
    let (tx, mut rx) = mpsc::channel::<Bytes>(256);
    let sh2 = sh.clone();
    let ns = ns.to_string();
    let version = version.to_string();
    let bookmark_every = sh.opts.bookmark_interval;
    // Subscribed here, before the stream's task runs: a `drop_watches` after this request was
    // accepted ends it even if the task has not started yet, and one before it found the gate
    // closed (tests pause, then drop), so no watch slips between a drop and a pause.
    let mut rv_rx = sh.rv_tx.subscribe();
    let mut drop_rx = sh.drop_tx.subscribe();
    let mut gate = sh.watch_gate.subscribe();
    sh.rt().spawn(async move {
        while *gate.borrow_and_update() {
            tokio::select! {
                r = gate.changed() => if r.is_err() { return },
                _ = drop_rx.changed() => return,
                _ = tx.closed() => return,
            }
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let ok = |o: &Obj| matches(o, &ns, &label, &field);
        let mut cursor;
        let mut initial = Vec::new();
        {
            let st = sh2.store.lock().unwrap();
            match from {
                Some(n) => cursor = n,
                None => {
                    cursor = st.rv;
                    for o in st.iter(key, if ns.is_empty() { None } else { Some(&ns) }) {
                        if ok(&o) {
                            initial.push(event_line("ADDED", def, &version, &o, fmt));
                        }
                    }
                }
            }
        }
        for l in initial {
            if tx.send(l).await.is_err() {
                return;
            }
        }
        if send_initial && tx.send(bookmark(def, &version, cursor, true)).await.is_err() {
            return;
        }
        rv_rx.borrow_and_update();
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + bookmark_every, bookmark_every);
        loop {
            let (evs, now_rv) = {
                let st = sh2.store.lock().unwrap();
                (st.events_since(key, cursor), st.rv)
            };
            match evs {
                Err(min) => {
                    sh2.expired_watches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let e = ApiError::expired(format!("too old resource version: {cursor} ({min})"));
                    let line = json!({"type": "ERROR", "object": e.status_json()});
                    let mut b = serde_json::to_vec(&line).expect("json");
                    b.push(b'\n');
                    let _ = tx.send(Bytes::from(b)).await;
                    return;
                }
                Ok(evs) => {
                    for e in evs {
                        let now_ok = ok(&e.obj);
                        let was_ok = e.old.as_deref().map(ok);
                        let typ = match (e.typ, was_ok, now_ok) {
                            (EvType::Added, _, true) => "ADDED",
                            (EvType::Deleted, Some(true), _) => "DELETED",
                            (EvType::Modified, Some(true), true) => "MODIFIED",
                            (EvType::Modified, Some(false), true) => "ADDED",
                            (EvType::Modified, Some(true), false) => "DELETED",
                            _ => continue,
                        };
                        if tx.send(event_line(typ, def, &version, &e.obj, fmt)).await.is_err() {
                            return;
                        }
                    }
                    cursor = cursor.max(now_rv);
                }
            }
            tokio::select! {
                r = rv_rx.changed() => if r.is_err() { return },
                _ = drop_rx.changed() => return,
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tx.closed() => return,
                _ = tick.tick(), if bookmarks => {
                    if tx.send(bookmark(def, &version, cursor, false)).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    let stream = futures::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|o| o.map(|b| Ok::<_, Infallible>(Frame::data(b))))
    });
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-cache, private")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .expect("response"))
}
