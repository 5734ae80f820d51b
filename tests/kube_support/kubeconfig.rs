//! The kubeconfig the fake writes: one cluster, one user and one `fake-<user>` context per
//! token, `fake-admin` current. The server is https with the fake's CA embedded.

/// Standard base64 (for `certificate-authority-data`).
pub fn base64(data: &[u8]) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// YAML for `server`, the CA PEM and `(user, token)` pairs.
pub fn render(server: &str, ca_pem: &str, users: &[(String, String)]) -> String {
    let mut s = String::from("apiVersion: v1\nkind: Config\npreferences: {}\nclusters:\n");
    s.push_str(&format!(
        "- name: fake\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\n",
        base64(ca_pem.as_bytes())
    ));
    s.push_str("contexts:\n");
    for (u, _) in users {
        s.push_str(&format!(
            "- name: fake-{u}\n  context:\n    cluster: fake\n    user: {u}\n    namespace: default\n"
        ));
    }
    let current = if users.iter().any(|(u, _)| u == "admin") { "admin" } else { users[0].0.as_str() };
    s.push_str(&format!("current-context: fake-{current}\nusers:\n"));
    for (u, t) in users {
        s.push_str(&format!("- name: {u}\n  user:\n    token: {t}\n"));
    }
    s
}
