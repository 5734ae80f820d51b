//! Themes and keymaps are TOML data files: embedded defaults shipped in the binary, overridable
//! by files of the same name in the user's config directory. A bad file never stops the console:
//! the caller gets the defaults plus a warning that names the file and the line.

use std::path::{Path, PathBuf};

/// A data file that failed to load: which file, and what is wrong (with line and column).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct DataFileError {
    pub file: String,
    pub message: String,
}

/// Parses TOML text, naming `file` and the line in the error.
pub fn parse<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, DataFileError> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        let msg = e.message().trim().to_string();
        DataFileError {
            file: file.to_string(),
            message: match line {
                Some((l, c)) => format!("line {l}, column {c}: {msg}"),
                None => msg,
            },
        }
    })
}

fn line_of(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// Where a named data file is looked up: `<config dir>/<kind>/<name>.toml`, or the name taken as
/// a path when it contains a slash.
pub fn user_path(config_dir: Option<&Path>, kind: &str, name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    config_dir.map(|d| d.join(kind).join(format!("{name}.toml")))
}

/// Loads `name` of `kind`: a user file when one exists, else the embedded one. Falls back to
/// `default_name` (embedded, always valid) with a warning when the requested one is missing or bad.
pub fn load<T: serde::de::DeserializeOwned>(
    kind: &str,
    name: &str,
    default_name: &str,
    embedded: &[(&str, &str)],
    config_dir: Option<&Path>,
) -> (T, Option<DataFileError>) {
    let fallback = || {
        let text = embedded.iter().find(|(n, _)| *n == default_name).map(|(_, t)| *t).unwrap_or("");
        match parse(&format!("{kind}/{default_name}.toml (built in)"), text) {
            Ok(v) => v,
            Err(e) => panic!("built-in {kind} {default_name} is invalid: {e}"),
        }
    };
    let attempt = || -> Result<T, DataFileError> {
        if let Some(path) = user_path(config_dir, kind, name)
            && path.exists()
        {
            let file = path.display().to_string();
            let text = std::fs::read_to_string(&path)
                .map_err(|e| DataFileError { file: file.clone(), message: e.to_string() })?;
            return parse(&file, &text);
        }
        match embedded.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => parse(&format!("{kind}/{n}.toml (built in)"), text),
            None => Err(DataFileError {
                file: format!("{kind}/{name}.toml"),
                message: format!(
                    "no such {kind}; built in: {}",
                    embedded.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            }),
        }
    };
    match attempt() {
        Ok(v) => (v, None),
        Err(e) => (fallback(), Some(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Probe {
        name: String,
    }

    #[test]
    fn error_names_file_and_line() {
        let e = parse::<Probe>("themes/x.toml", "name = \"a\"\n\nbogus = 1\n").unwrap_err();
        assert_eq!(e.file, "themes/x.toml");
        assert!(e.message.starts_with("line 3, column 1:"), "{}", e.message);
        assert!(e.message.contains("bogus"), "{}", e.message);
    }

    #[test]
    fn missing_name_falls_back_with_a_warning() {
        let embedded = [("default", "name = \"default\"")];
        let (p, err): (Probe, _) = load("themes", "nope", "default", &embedded, None);
        assert_eq!(p.name, "default");
        assert!(err.unwrap().message.contains("built in: default"));
    }

    #[test]
    fn bad_user_file_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("themes")).unwrap();
        std::fs::write(dir.path().join("themes/mine.toml"), "name = 3\n").unwrap();
        let embedded = [("default", "name = \"default\"")];
        let (p, err): (Probe, _) = load("themes", "mine", "default", &embedded, Some(dir.path()));
        assert_eq!(p.name, "default");
        let err = err.unwrap();
        assert!(err.file.ends_with("themes/mine.toml"));
        assert!(err.message.starts_with("line 1"), "{}", err.message);
    }
}
