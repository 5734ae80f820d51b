//! A failed Kubernetes call as the console can act on it: the API server's status (403
//! Forbidden with its own message, 404 NotFound, 409 Conflict/AlreadyExists, 429
//! TooManyRequests, 5xx) and transport failures (unreachable, timed out).

use crate::model::ActionError;
use crate::sanitize::sanitize;

/// Maps one kube-rs error. The server's `message` is kept word for word (control characters
/// stripped): it names the user, the verb and the resource.
pub fn action_error(e: kube::Error) -> ActionError {
    match e {
        kube::Error::Api(s) => {
            let msg = sanitize(&s.message).into_owned();
            let said = if msg.is_empty() { format!("{} {}", s.code, s.reason) } else { msg };
            match s.code {
                401 => ActionError::forbidden_as_said(format!(
                    "{said} (the credentials were not accepted: refresh the kubeconfig's token)"
                )),
                403 => ActionError::forbidden(said),
                404 | 410 => ActionError::not_found(said),
                409 => ActionError::conflict(said),
                429 => ActionError::Busy { detail: said },
                408 | 504 => ActionError::Timeout { what: format!("the API server ({said})"), after: None },
                500..=503 => ActionError::unreachable(format!(
                    "the API server answered {} {}: {said}",
                    s.code, s.reason
                )),
                _ => ActionError::Other(format!("{said} ({} {})", s.code, s.reason)),
            }
        }
        other => {
            let text = sanitize(&chain(&other)).into_owned();
            let low = text.to_ascii_lowercase();
            if low.contains("timed out") || low.contains("timeout") || low.contains("deadline has elapsed") {
                ActionError::Timeout { what: format!("the API server ({text})"), after: None }
            } else if matches!(other, kube::Error::HyperError(_) | kube::Error::Service(_))
                || low.contains("connect")
                || low.contains("dns")
            {
                ActionError::unreachable(format!("the Kubernetes API: {text}"))
            } else if matches!(other, kube::Error::Auth(_)) {
                ActionError::forbidden_as_said(format!("{text} (fix the kubeconfig's credentials)"))
            } else {
                ActionError::Other(text)
            }
        }
    }
}

/// An error and its causes, innermost last (`connection refused` is usually a cause).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        src = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ActionErrorKind as K;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status { code, reason: reason.into(), message: message.into(), ..Default::default() }
                .boxed(),
        )
    }

    #[test]
    fn api_statuses_map_to_what_the_console_can_act_on() {
        let said = r#"nodes "gpu-1" is forbidden: User "viewer" cannot patch resource "nodes" in API group "" at the cluster scope"#;
        let e = action_error(api(403, "Forbidden", said));
        assert!(matches!(&e, ActionError::Forbidden { reason, .. } if reason == said), "{e:?}");
        assert_eq!(action_error(api(404, "NotFound", r#"nodes "gpu-9" not found"#)).kind(), K::NotFound);
        let e = action_error(api(409, "AlreadyExists", r#"jobs.batch "x" already exists"#));
        assert_eq!(e, ActionError::conflict(r#"jobs.batch "x" already exists"#));
        assert_eq!(action_error(api(429, "TooManyRequests", "Cannot evict pod")).kind(), K::Busy);
        assert_eq!(action_error(api(401, "Unauthorized", "Unauthorized")).kind(), K::Forbidden);
        assert_eq!(action_error(api(504, "Timeout", "")).kind(), K::Timeout);
        assert_eq!(action_error(api(503, "ServiceUnavailable", "etcd")).kind(), K::Unreachable);
        assert_eq!(action_error(api(422, "Invalid", "bad")).kind(), K::Other);
        let e = action_error(api(403, "Forbidden", "evil\x1b[31m text"));
        assert!(!e.to_string().contains('\x1b'), "{e:?}");
    }
}
