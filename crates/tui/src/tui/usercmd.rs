//! User aliases and hotkeys (`<config>/hotkeys.toml`): name a command (`:mine` → `jobs
//! user==$USER`) or bind a key to one (`ctrl-g` → `gpus state=down`). A bad file is reported
//! with its line and the built-ins stay.

use super::keymap::{Key, Keymap};
use crate::datafile::{self, DataFileError};
use ratatui::crossterm::event::KeyEvent;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct File {
    aliases: BTreeMap<String, String>,
    hotkeys: Vec<HotkeySpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HotkeySpec {
    key: String,
    command: String,
    description: Option<String>,
}

/// A key bound to a command.
#[derive(Debug, Clone, PartialEq)]
pub struct Hotkey {
    pub key: Key,
    pub command: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UserCommands {
    pub aliases: BTreeMap<String, String>,
    pub hotkeys: Vec<Hotkey>,
}

impl Default for UserCommands {
    fn default() -> Self {
        let aliases = [("mine".to_string(), "jobs user==$USER".to_string())].into_iter().collect();
        UserCommands { aliases, hotkeys: Vec::new() }
    }
}

impl UserCommands {
    /// The built-ins, with `<config_dir>/hotkeys.toml` over them when it exists. Keys already
    /// bound in the keymap are refused (the keymap wins) and reported.
    pub fn load(config_dir: Option<&Path>, keymap: &Keymap) -> (UserCommands, Vec<DataFileError>) {
        let mut out = UserCommands::default();
        let Some(path) = config_dir.map(|d| d.join("hotkeys.toml")).filter(|p| p.exists()) else {
            return (out, Vec::new());
        };
        let name = path.display().to_string();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => return (out, vec![DataFileError { file: name, message: e.to_string() }]),
        };
        let file: File = match datafile::parse(&name, &text) {
            Ok(f) => f,
            Err(e) => return (out, vec![e]),
        };
        let mut errors = Vec::new();
        out.aliases.extend(file.aliases);
        for h in file.hotkeys {
            match Key::parse(&h.key) {
                Ok(key) if keymap.bindings().any(|(_, keys)| keys.contains(&key)) => {
                    errors.push(DataFileError {
                        file: name.clone(),
                        message: format!("hotkey {:?} is already bound in the keymap; ignored", h.key),
                    })
                }
                Ok(key) => out.hotkeys.push(Hotkey {
                    key,
                    description: h.description.unwrap_or_else(|| h.command.clone()),
                    command: h.command,
                }),
                Err(e) => errors.push(DataFileError { file: name.clone(), message: format!("hotkey: {e}") }),
            }
        }
        (out, errors)
    }

    /// The command an alias stands for, `$USER` filled in and the rest of the line appended.
    pub fn expand(&self, head: &str, rest: &str, user: &str) -> Option<String> {
        let body = self.aliases.get(head)?.replace("$USER", user);
        Some(if rest.is_empty() { body } else { format!("{body} {rest}") })
    }

    pub fn hotkey(&self, ev: &KeyEvent) -> Option<&Hotkey> {
        let k = Key::from_event(ev);
        self.hotkeys.iter().find(|h| h.key == k)
    }
}
