//! Playbooks: for each signal an incident carries (`xid:79`, `ecc-dbe`, `port-down`, …) the
//! ordered remediation an operator follows. A shipped data file (`playbooks/default.toml`,
//! embedded) that a file of the same name in the config dir replaces; a bad file is reported
//! with its name and line and the built-in one is used.
//!
//! The first step is what the console offers as an action (drain or cordon with the step's
//! reason prefilled, or an acknowledgement); the rest is text in the incident's detail. When
//! the signal repeated `escalate.count` times within `escalate.window`, the escalation step
//! replaces the first one (XID 79 twice in 24 h → RMA).

use crate::datafile::{self, DataFileError};
use std::collections::HashMap;
use std::path::Path;

/// The built-in catalogue.
pub const DEFAULT: &str = include_str!("../../../playbooks/default.toml");

/// What a step offers on the actions road.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Deserialize,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum StepAction {
    Drain,
    Cordon,
    Ack,
}

impl StepAction {
    pub fn label(self) -> &'static str {
        match self {
            Self::Drain => "drain",
            Self::Cordon => "cordon",
            Self::Ack => "ack",
        }
    }
}

#[derive(
    Debug,
    Clone,
    PartialEq,
    serde::Deserialize,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// What to do, for a person.
    pub text: String,
    /// The action the console offers for it (first step only).
    #[serde(default)]
    pub action: Option<StepAction>,
    /// The reason prefilled for a drain or cordon.
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(
    Debug,
    Clone,
    PartialEq,
    serde::Deserialize,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    pub count: u32,
    /// `30m`, `24h`, `7d`.
    #[serde(deserialize_with = "window_secs")]
    pub window: i64,
    pub text: String,
    #[serde(default)]
    pub action: Option<StepAction>,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Deserialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
#[serde(deny_unknown_fields)]
pub struct Playbook {
    pub signals: Vec<String>,
    pub name: String,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub escalate: Option<Escalation>,
}

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    playbook: Vec<Playbook>,
}

/// Every playbook, by signal.
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Playbooks {
    list: Vec<Playbook>,
    by_signal: HashMap<String, usize>,
}

/// The step an incident is at: which one, its text, and whether repeats escalated it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Current<'a> {
    pub playbook: &'a str,
    pub text: &'a str,
    pub action: Option<StepAction>,
    pub reason: Option<&'a str>,
    /// The repeat count reached the escalation's.
    pub escalated: bool,
}

fn window_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let s: String = serde::Deserialize::deserialize(d)?;
    parse_window(&s).ok_or_else(|| serde::de::Error::custom(format!("window {s:?}: want 30m, 24h or 7d")))
}

/// `30m`, `24h`, `7d`, `90s` in seconds.
pub fn parse_window(s: &str) -> Option<i64> {
    let s = s.trim();
    let (n, unit) = s.split_at(s.len().checked_sub(1)?);
    let n: i64 = n.parse().ok().filter(|&n| n > 0)?;
    Some(
        n * match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3_600,
            "d" => 86_400,
            _ => return None,
        },
    )
}

impl Playbooks {
    /// Parses a playbook file; errors name `file` and the line.
    pub fn parse(file: &str, text: &str) -> Result<Playbooks, DataFileError> {
        let f: File = datafile::parse(file, text)?;
        let mut by_signal = HashMap::new();
        for (i, p) in f.playbook.iter().enumerate() {
            let bad = |message: String| DataFileError { file: file.to_string(), message };
            if p.steps.is_empty() {
                return Err(bad(format!("playbook {:?} has no steps", p.name)));
            }
            if p.steps.iter().skip(1).any(|s| s.action.is_some()) {
                return Err(bad(format!("playbook {:?}: only the first step takes an action", p.name)));
            }
            for s in &p.signals {
                if by_signal.insert(s.clone(), i).is_some() {
                    return Err(bad(format!("signal {s:?} is in two playbooks")));
                }
            }
        }
        Ok(Playbooks { list: f.playbook, by_signal })
    }

    /// The built-in catalogue.
    pub fn builtin() -> Playbooks {
        match Self::parse("playbooks/default.toml (built in)", DEFAULT) {
            Ok(p) => p,
            Err(e) => panic!("the built-in playbook is invalid: {e}"),
        }
    }

    /// The built-in catalogue, parsed once per process.
    pub fn shared_builtin() -> std::sync::Arc<Playbooks> {
        static BUILTIN: std::sync::OnceLock<std::sync::Arc<Playbooks>> = std::sync::OnceLock::new();
        BUILTIN.get_or_init(|| std::sync::Arc::new(Self::builtin())).clone()
    }

    /// `<config dir>/playbooks/default.toml` when it exists, else the built-in one; a bad file
    /// gives the built-in one and the error (file and line).
    pub fn load(config_dir: Option<&Path>) -> (Playbooks, Option<DataFileError>) {
        let Some(path) = datafile::user_path(config_dir, "playbooks", "default").filter(|p| p.exists())
        else {
            return (Self::builtin(), None);
        };
        let file = path.display().to_string();
        let r = std::fs::read_to_string(&path)
            .map_err(|e| DataFileError { file: file.clone(), message: e.to_string() })
            .and_then(|text| Self::parse(&file, &text));
        match r {
            Ok(p) => (p, None),
            Err(e) => (Self::builtin(), Some(e)),
        }
    }

    pub fn get(&self, signal: &str) -> Option<&Playbook> {
        self.by_signal.get(signal).map(|&i| &self.list[i])
    }

    pub fn signals(&self) -> impl Iterator<Item = &str> {
        self.by_signal.keys().map(String::as_str)
    }

    /// The step for `signal` after `repeats` occurrences within the escalation's window.
    pub fn current(&self, signal: &str, repeats: u32) -> Option<Current<'_>> {
        let p = self.get(signal)?;
        if let Some(e) = p.escalate.as_ref().filter(|e| repeats >= e.count) {
            return Some(Current {
                playbook: &p.name,
                text: &e.text,
                action: e.action,
                reason: e.reason.as_deref(),
                escalated: true,
            });
        }
        let s = p.steps.first()?;
        Some(Current {
            playbook: &p.name,
            text: &s.text,
            action: s.action,
            reason: s.reason.as_deref(),
            escalated: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The XIDs the issue asks the catalogue to cover.
    const REQUIRED_XIDS: &[u16] =
        &[13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 93, 94, 95, 119, 120, 140];

    #[test]
    fn the_builtin_catalogue_covers_every_required_signal() {
        let p = Playbooks::builtin();
        for x in REQUIRED_XIDS {
            let pb = p.get(&format!("xid:{x}")).unwrap_or_else(|| panic!("XID {x} has no playbook"));
            assert!(!pb.steps.is_empty());
            assert!(pb.steps[0].action.is_some(), "XID {x}: the first step offers an action");
        }
        for s in ["ecc-dbe", "row-remap-failure", "nvlink", "port-down", "port-flap", "hot", "fs-full"] {
            assert!(p.get(s).is_some(), "{s} has no playbook");
        }
        // Drain steps carry the reason the console prefills.
        for s in p.signals() {
            let c = p.current(s, 0).unwrap();
            if c.action == Some(StepAction::Drain) {
                assert!(c.reason.is_some_and(|r| !r.is_empty()), "{s}: a drain step needs a reason");
            }
        }
    }

    #[test]
    fn repeats_within_the_window_escalate_xid_79_to_rma() {
        let p = Playbooks::builtin();
        let first = p.current("xid:79", 1).unwrap();
        assert!(!first.escalated);
        assert_eq!(first.action, Some(StepAction::Drain));
        assert!(first.text.starts_with("drain the node"));
        let again = p.current("xid:79", 2).unwrap();
        assert!(again.escalated);
        assert!(again.text.starts_with("RMA"), "{}", again.text);
        assert_eq!(p.get("xid:79").unwrap().escalate.as_ref().unwrap().window, 86_400);
        assert!(p.current("no-such-signal", 5).is_none());
    }

    #[test]
    fn a_bad_file_names_the_file_and_line_and_the_builtin_one_is_used() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("playbooks")).unwrap();
        let path = dir.path().join("playbooks/default.toml");
        std::fs::write(
            &path,
            "[[playbook]]\nsignals = [\"xid:79\"]\nname = \"x\"\nsteps = [{ text = \"a\" }]\nescalate = { count = 2, window = \"soon\", text = \"b\" }\n",
        )
        .unwrap();
        let (p, err) = Playbooks::load(Some(dir.path()));
        let err = err.expect("reported");
        assert!(err.file.ends_with("playbooks/default.toml"), "{err}");
        assert!(err.message.contains("line 5"), "{err}");
        assert!(err.message.contains("window \"soon\""), "{err}");
        assert_eq!(p, Playbooks::builtin());
        // A valid override replaces the catalogue.
        std::fs::write(&path, "[[playbook]]\nsignals = [\"xid:79\"]\nname = \"site\"\nsteps = [{ text = \"call the vendor\", action = \"ack\" }]\n").unwrap();
        let (p, err) = Playbooks::load(Some(dir.path()));
        assert!(err.is_none());
        assert_eq!(p.current("xid:79", 9).unwrap().text, "call the vendor");
        assert!(p.get("xid:48").is_none());
        // Semantic errors name the file too.
        let e = Playbooks::parse("f.toml", "[[playbook]]\nsignals = [\"a\"]\nname = \"n\"\nsteps = []\n")
            .unwrap_err();
        assert_eq!(e.file, "f.toml");
        assert!(e.message.contains("no steps"));
        assert!(Playbooks::parse("f.toml", "[[playbook]]\nsignals = [\"a\"]\nname = \"n\"\nsteps = [{ text = \"t\", action = \"reboot\" }]\n").unwrap_err().message.contains("line 4"));
    }
}
