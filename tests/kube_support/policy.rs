//! Authorization: a per-user rule list (RBAC-like wildcards plus explicit denies), used both to
//! answer SelfSubjectAccessReviews and to enforce every request.

use super::util::{ApiError, qualified};
use serde_json::{Value, json};
use std::collections::HashMap;

/// One rule. Empty lists and `"*"` match anything. Resources may name subresources
/// (`pods/eviction`, `pods/*`, `*/status`); a bare `pods` does not cover `pods/eviction`.
#[derive(Debug, Clone, Default)]
pub struct Rule {
    pub allow: bool,
    pub verbs: Vec<String>,
    pub groups: Vec<String>,
    pub resources: Vec<String>,
    pub namespaces: Vec<String>,
    pub names: Vec<String>,
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

impl Rule {
    /// Allows `verbs` on `resources` in `groups` (all namespaces and names).
    pub fn allow(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Rule {
        Rule {
            allow: true,
            verbs: strings(verbs),
            groups: strings(groups),
            resources: strings(resources),
            ..Default::default()
        }
    }
    /// Denies; a matching deny wins over any allow.
    pub fn deny(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Rule {
        Rule { allow: false, ..Rule::allow(verbs, groups, resources) }
    }
    pub fn in_namespaces(mut self, ns: &[&str]) -> Rule {
        self.namespaces = strings(ns);
        self
    }
    pub fn names(mut self, names: &[&str]) -> Rule {
        self.names = strings(names);
        self
    }

    fn matches(&self, a: &Attrs) -> bool {
        let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == "*" || x == v);
        let res_ok = self.resources.is_empty()
            || self.resources.iter().any(|r| {
                if r == "*" {
                    return true;
                }
                match (r.split_once('/'), a.subresource.is_empty()) {
                    (None, true) => *r == a.resource,
                    (None, false) => false,
                    (Some(_), true) => false,
                    (Some((rr, rs)), false) => {
                        (rr == "*" || rr == a.resource) && (rs == "*" || rs == a.subresource)
                    }
                }
            });
        any(&self.verbs, &a.verb)
            && any(&self.groups, &a.group)
            && res_ok
            && (self.namespaces.is_empty()
                || self.namespaces.iter().any(|n| n == "*" || (!a.namespace.is_empty() && *n == a.namespace)))
            && (self.names.is_empty()
                || self.names.iter().any(|n| n == "*" || (!a.name.is_empty() && *n == a.name)))
    }
}

/// What a request does, in authorization terms.
#[derive(Debug, Clone, Default)]
pub struct Attrs {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct Policy {
    pub users: HashMap<String, Vec<Rule>>,
}

impl Default for Policy {
    /// `admin` may do everything; `viewer` may get, list and watch everything.
    fn default() -> Self {
        let mut users = HashMap::new();
        users.insert("admin".to_string(), vec![Rule::allow(&["*"], &["*"], &["*"])]);
        users.insert("viewer".to_string(), vec![Rule::allow(&["get", "list", "watch"], &["*"], &["*"])]);
        Policy { users }
    }
}

#[derive(Debug, Clone)]
pub struct Decision {
    pub allowed: bool,
    pub denied: bool,
    pub reason: String,
}

impl Policy {
    pub fn set_user(&mut self, user: &str, rules: Vec<Rule>) {
        self.users.insert(user.to_string(), rules);
    }

    /// Whether any rule names this user (or `group:NAME`).
    pub fn has_user(&self, user: &str) -> bool {
        self.users.contains_key(user)
    }

    pub fn check(&self, user: &str, a: &Attrs) -> Decision {
        let rules = self.users.get(user).map(Vec::as_slice).unwrap_or(&[]);
        if rules.iter().any(|r| !r.allow && r.matches(a)) {
            return Decision {
                allowed: false,
                denied: true,
                reason: format!("denied by gpuplane fake policy for user \"{user}\""),
            };
        }
        if rules.iter().any(|r| r.allow && r.matches(a)) {
            return Decision {
                allowed: true,
                denied: false,
                reason: format!(
                    "RBAC: allowed by ClusterRoleBinding \"fake-{user}\" of ClusterRole \"fake-{user}\" to User \"{user}\""
                ),
            };
        }
        Decision { allowed: false, denied: false, reason: String::new() }
    }

    pub fn forbidden(user: &str, a: &Attrs) -> ApiError {
        let what = qualified(&a.group, &a.resource);
        let named = if a.name.is_empty() { what.clone() } else { format!("{what} \"{}\"", a.name) };
        let res = if a.subresource.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        let scope = if a.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{}\"", a.namespace)
        };
        ApiError::new(
            403,
            "Forbidden",
            format!(
                "{named} is forbidden: User \"{user}\" cannot {} resource \"{res}\" in API group \"{}\" {scope}",
                a.verb, a.group
            ),
        )
        .with_details(json!({"name": a.name, "group": a.group, "kind": a.resource}))
    }

    /// Answers a SelfSubjectAccessReview body for `user`.
    pub fn review(&self, user: &str, mut body: Value) -> Value {
        let spec = body["spec"].clone();
        let status = if let Some(ra) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
            let s = |k: &str| ra[k].as_str().unwrap_or_default().to_string();
            let a = Attrs {
                verb: s("verb"),
                group: s("group"),
                resource: s("resource"),
                subresource: s("subresource"),
                namespace: s("namespace"),
                name: s("name"),
            };
            let d = self.check(user, &a);
            let mut st = json!({"allowed": d.allowed});
            if d.denied {
                st["denied"] = json!(true);
            }
            if !d.reason.is_empty() {
                st["reason"] = json!(d.reason);
            }
            st
        } else if let Some(nr) = spec.get("nonResourceAttributes") {
            let verb = nr["verb"].as_str().unwrap_or_default();
            let rules = self.users.get(user).map(Vec::as_slice).unwrap_or(&[]);
            let allowed = rules.iter().any(|r| {
                r.allow
                    && r.resources.iter().any(|x| x == "*")
                    && (r.verbs.iter().any(|v| v == "*" || v == verb))
            });
            json!({"allowed": allowed})
        } else {
            json!({"allowed": false, "evaluationError": "no resourceAttributes or nonResourceAttributes"})
        };
        body["apiVersion"] = json!("authorization.k8s.io/v1");
        body["kind"] = json!("SelfSubjectAccessReview");
        body["metadata"] = json!({"creationTimestamp": null});
        body["status"] = status;
        body
    }
}
