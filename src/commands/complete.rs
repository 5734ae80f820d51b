//! `gpuplane completions SHELL`: shell completion scripts from the command line's definition
//! (clap_complete), in which --view, --theme, --keymap, --context and --cluster complete to names, not
//! file names. The flags accept any value when parsing (a theme file of one's own); the names
//! are possible values of the command the script is generated from only.

use crate::cli::Names;
use crate::config::Config;
use clap_complete::Shell;
use std::io::Write;
use std::process::ExitCode;

/// The names of one kind, sorted, without duplicates.
pub fn names(kind: Names, config: &Config, console: &super::ConsoleFacts) -> Vec<String> {
    let mut v: Vec<String> = match kind {
        // Canonical names (`:nodes`); the aliases are accepted but not offered.
        Names::Views => console.views.clone(),
        Names::Themes => data_names(&console.themes, "themes", config),
        Names::Keymaps => data_names(&console.keymaps, "keymaps", config),
        Names::Contexts => crate::backend::kube::contexts(&config.kube.clone().unwrap_or_default()),
        Names::Clusters => config.cluster_names.clone(),
    };
    v.sort();
    v.dedup();
    v
}

/// The built-in data files' names and the `.toml` files in `<config>/<dir>/`.
fn data_names(embedded: &[String], dir: &str, config: &Config) -> Vec<String> {
    let mut v: Vec<String> = embedded.to_vec();
    if let Some(d) = &config.config_dir
        && let Ok(rd) = std::fs::read_dir(d.join(dir))
    {
        v.extend(rd.flatten().filter_map(|e| {
            let p = e.path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
        }));
    }
    v
}

/// The flags that complete to names, and their kind.
const NAMED: &[(&str, Names)] = &[
    ("view", Names::Views),
    ("theme", Names::Themes),
    ("keymap", Names::Keymaps),
    ("context", Names::Contexts),
    // `--cluster` (the field `clusters`).
    ("clusters", Names::Clusters),
];

/// The command the script for `shell` is generated from: the flags of [`NAMED`] with their
/// names as possible values. For bash, contexts and clusters are one word, a command
/// substitution that its `compgen -W` expands at each completion, so a new kubeconfig context or
/// `[[cluster]]` entry completes at once.
pub fn completion_command(shell: Shell, config: &Config, console: &super::ConsoleFacts) -> clap::Command {
    crate::cli::command_with(|mut cmd| {
        for &(id, kind) in NAMED {
            if !cmd.get_arguments().any(|a| a.get_id() == id) {
                continue;
            }
            let values: Vec<String> = match (shell, kind) {
                (Shell::Bash, Names::Contexts) => {
                    vec!["$(gpuplane completions --list contexts 2>/dev/null)".into()]
                }
                (Shell::Bash, Names::Clusters) => {
                    vec!["$(gpuplane completions --list clusters 2>/dev/null)".into()]
                }
                _ => names(kind, config, console),
            };
            if values.is_empty() {
                continue;
            }
            cmd = cmd.mut_arg(id, |a| a.value_parser(clap::builder::PossibleValuesParser::new(values)));
        }
        cmd
    })
}

pub fn run(
    shell: Option<Shell>,
    list: Option<Names>,
    config: &Config,
    console: &super::ConsoleFacts,
) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let written = match (shell, list) {
        (_, Some(kind)) => names(kind, config, console).iter().try_for_each(|n| writeln!(out, "{n}")),
        (Some(shell), None) => {
            let mut cmd = completion_command(shell, config, console);
            clap_complete::generate(shell, &mut cmd, "gpuplane", &mut out);
            Ok(())
        }
        (None, None) => Ok(()),
    };
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}
