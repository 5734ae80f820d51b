//! Plugins: site runbooks as data (`plugins/*.toml` shipped as examples, plus
//! `<config>/plugins/*.toml`). Each names a shortcut, the views it applies to, a command and
//! arguments with variables (`$NODE`, `$NODES`, `$GPU`, `$GPU_UUID`, `$JOB`, `$USER`,
//! `$ACCOUNT`, `$NAMESPACE`, `$CONTEXT`, `$CLUSTER`, `$COL_<NAME>`). Arguments become argv
//! entries — never a shell — unless the plugin asks for a shell, and then every value is
//! shell-quoted.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The examples shipped in the binary.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("ssh", include_str!("../../../../../plugins/ssh.toml")),
    ("nvidia-smi", include_str!("../../../../../plugins/nvidia-smi.toml")),
    ("scontrol-node", include_str!("../../../../../plugins/scontrol-node.toml")),
    ("scontrol-job", include_str!("../../../../../plugins/scontrol-job.toml")),
    ("kubectl-describe-node", include_str!("../../../../../plugins/kubectl-describe-node.toml")),
    ("grafana", include_str!("../../../../../plugins/grafana.toml")),
    ("copy-osc52", include_str!("../../../../../plugins/copy-osc52.toml")),
];

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plugin {
    pub name: String,
    pub shortcut: String,
    /// Views it applies to: nodes, gpus, jobs, queues, fabric, …
    pub scopes: Vec<String>,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Ask before running.
    #[serde(default)]
    pub confirm: bool,
    /// Run without taking over the terminal; output goes to a pane.
    #[serde(default)]
    pub background: bool,
    /// Changes something: hidden in read-only mode and audited as an action.
    #[serde(default)]
    pub dangerous: bool,
    /// Run `command` through `sh -c` with the arguments shell-quoted.
    #[serde(default)]
    pub shell: bool,
    #[serde(default)]
    pub description: String,
}

/// Quotes a value for a POSIX shell: `'…'` with embedded quotes closed and escaped.
pub fn shell_quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', r"'\''"))
}

/// Replaces `$NAME` variables (longest names first, so `$NODES` is not read as `$NODE` + `S`).
fn expand(template: &str, vars: &BTreeMap<String, String>, quote: bool) -> String {
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match names.iter().find(|n| after.starts_with(n.as_str())) {
            Some(n) => {
                let v = &vars[n.as_str()];
                out.push_str(&if quote { shell_quote(v) } else { v.clone() });
                rest = &after[n.len()..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

impl Plugin {
    /// The program and its argv for these variables. Without `shell`, each argument is one
    /// argv entry whatever its value holds (spaces, quotes, `;`, `$(…)`, newlines); with
    /// `shell`, `sh -c` gets the command line with every value shell-quoted.
    pub fn argv(&self, vars: &BTreeMap<String, String>) -> (String, Vec<String>) {
        if self.shell {
            let line = std::iter::once(expand(&self.command, vars, true))
                .chain(self.args.iter().map(|a| expand(a, vars, true)))
                .collect::<Vec<_>>()
                .join(" ");
            ("sh".into(), vec!["-c".into(), line])
        } else {
            (expand(&self.command, vars, false), self.args.iter().map(|a| expand(a, vars, false)).collect())
        }
    }

    pub fn applies_to(&self, view: &str) -> bool {
        self.scopes.iter().any(|s| s == view || s == "all")
    }
}

/// The shipped examples and `<config>/plugins/*.toml` (a user file of the same name replaces the
/// example). Errors name the file and line; read-only mode drops dangerous plugins; a shortcut
/// used twice keeps the first and reports the second.
pub fn load(config_dir: Option<&Path>, readonly: bool) -> (Vec<Plugin>, Vec<crate::datafile::DataFileError>) {
    let mut files: BTreeMap<String, (String, String)> = EMBEDDED
        .iter()
        .map(|(n, t)| (n.to_string(), (format!("plugins/{n}.toml (built in)"), t.to_string())))
        .collect();
    if let Some(dir) = config_dir.map(|d| d.join("plugins"))
        && let Ok(rd) = std::fs::read_dir(&dir)
    {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "toml")
                && let (Some(stem), Ok(text)) = (p.file_stem(), std::fs::read_to_string(&p))
            {
                files.insert(stem.to_string_lossy().into_owned(), (p.display().to_string(), text));
            }
        }
    }
    let (mut out, mut errors): (Vec<Plugin>, Vec<_>) = (Vec::new(), Vec::new());
    for (_, (file, text)) in files {
        match crate::datafile::parse::<Plugin>(&file, &text) {
            Ok(p) if crate::tui::keymap::Key::parse(&p.shortcut).is_err() => {
                errors.push(crate::datafile::DataFileError {
                    file,
                    message: format!(
                        "shortcut {:?} is not a key (e.g. \"ctrl-n\", \"S\", \"f5\")",
                        p.shortcut
                    ),
                })
            }
            Ok(p) if readonly && p.dangerous => {}
            Ok(p) if out.iter().any(|o: &Plugin| o.shortcut == p.shortcut) => {
                errors.push(crate::datafile::DataFileError {
                    file,
                    message: format!(
                        "shortcut {:?} is already taken; plugin {:?} ignored",
                        p.shortcut, p.name
                    ),
                })
            }
            Ok(p) => out.push(p),
            Err(e) => errors.push(e),
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests;
