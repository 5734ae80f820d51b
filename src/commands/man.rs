//! `gpuplane man [SUBCOMMAND] [--dir DIR]`: man pages generated from the command line's
//! definition (clap_mangen), one per subcommand (`gpuplane-drain(1)`), each with the sections
//! a reader looks for: KEYS (the console's, from the default keymap, on the main page), FILES,
//! ENVIRONMENT (every variable a flag of that page reads, and the ones read directly), EXIT
//! STATUS and EXAMPLES.

use roff::{Roff, bold, italic, roman};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// A page: its name (`gpuplane-audit-verify`) and the command it documents.
pub struct Page {
    pub name: String,
    pub cmd: clap::Command,
}

/// Every page: gpuplane(1), then one per subcommand, nested ones included.
pub fn pages() -> Vec<Page> {
    let root = crate::cli::command();
    let mut out = Vec::new();
    fn walk(cmd: &clap::Command, name: String, out: &mut Vec<Page>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(sub, format!("{name}-{}", sub.get_name()), out);
        }
        out.push(Page { name, cmd: cmd.clone() });
    }
    walk(&root, "gpuplane".into(), &mut out);
    out.reverse();
    out
}

/// The roff text of one page.
pub fn render(page: &Page, console: &super::ConsoleFacts) -> std::io::Result<Vec<u8>> {
    let cmd = page.cmd.clone().name(page.name.clone());
    let man = clap_mangen::Man::new(cmd.clone()).title(page.name.clone()).manual("gpuplane manual");
    let mut w = Vec::new();
    man.render_title(&mut w)?;
    man.render_name_section(&mut w)?;
    man.render_synopsis_section(&mut w)?;
    man.render_description_section(&mut w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut w)?;
    }
    if cmd.get_subcommands().next().is_some() {
        man.render_subcommands_section(&mut w)?;
    }
    let main = page.name == "gpuplane";
    let mut r = Roff::new();
    if main {
        keys(&mut r, console);
    }
    files(&mut r);
    environment(&mut r, &cmd);
    exit_status(&mut r, &page.name);
    examples(&mut r, &page.name);
    see_also(&mut r, &page.name);
    w.extend_from_slice(r.to_roff().as_bytes());
    if main {
        man.render_version_section(&mut w)?;
    }
    Ok(w)
}

fn section(r: &mut Roff, title: &str) {
    r.control("SH", [title]);
}

fn item(r: &mut Roff, term: &str, text: &str) {
    r.control("TP", []).text([bold(term)]).text([roman(text)]);
}

/// KEYS: the default keymap's bindings, grouped as the help screen groups them.
fn keys(r: &mut Roff, console: &super::ConsoleFacts) {
    section(r, "KEYS");
    r.text([roman(
        "The console's keys as the default keymap binds them (k9s/vim style; --keymap emacs, or a \
         keymap file of your own, binds others; ? lists the keys in use).",
    )]);
    let mut group = "";
    for (g, keys, what) in &console.keys {
        if g != group {
            r.control("SS", [g.as_str()]);
            group = g;
        }
        item(r, keys, what);
    }
}

fn files(r: &mut Roff) {
    section(r, "FILES");
    item(
        r,
        "$XDG_CONFIG_HOME/gpuplane/config.toml",
        "The config file (~/.config/gpuplane/config.toml); --config names another. Flags and \
         their environment variables override it.",
    );
    item(
        r,
        "$XDG_CONFIG_HOME/gpuplane/themes/, keymaps/",
        "Themes and keymaps of your own, looked up by name before the built-in ones.",
    );
    item(
        r,
        "$XDG_DATA_HOME/gpuplane/audit.jsonl",
        "The audit log of every action (--audit-log names another; it may be on a shared \
         filesystem), with its witness journal and signing key beside it.",
    );
    item(r, "$XDG_DATA_HOME/gpuplane/ledger/", "The usage ledger (SQLite) that cost windows are read from.");
    item(
        r,
        "$XDG_DATA_HOME/gpuplane/timeline.sqlite",
        "The event journal (SQLite, beside the audit log; [timeline] path moves it) that the Timeline \
         view and gpuplane timeline read.",
    );
    item(r, "$XDG_STATE_HOME/gpuplane/gpuplane.log", "The log; nothing is logged to the terminal.");
}

/// Variables read directly (not through a flag).
const MORE_ENV: &[(&str, &str)] = &[
    ("SLURM_JWT", "The Slurm token when neither --slurm-token-cmd nor --slurm-token-file is given."),
    ("KUBECONFIG", "The kubeconfig files to read (else ~/.kube/config); implies Kubernetes."),
    ("PROMETHEUS_BEARER_TOKEN", "A bearer token sent to Prometheus."),
    ("NO_COLOR", "Any value: monochrome, whatever the theme."),
    ("TZ", "The zone times are shown in (else /etc/localtime); --utc shows UTC."),
    ("USER, LOGNAME", "The user \"my jobs\" shows and the audit log records (--user overrides)."),
    ("XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME", "Where the files below live."),
    ("GPUPLANE_LOG", "The log's filter (tracing syntax, e.g. debug or gpuplane=trace)."),
];

fn environment(r: &mut Roff, cmd: &clap::Command) {
    section(r, "ENVIRONMENT");
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let Some(env) = a.get_env() else { continue };
        let flag = a.get_long().map(|l| format!("--{l}")).unwrap_or_else(|| a.get_id().to_string());
        item(r, &env.to_string_lossy(), &format!("As {flag}."));
    }
    for (var, what) in MORE_ENV {
        item(r, var, what);
    }
}

fn exit_status(r: &mut Roff, page: &str) {
    section(r, "EXIT STATUS");
    let codes: &[(&str, &str)] = match page {
        "gpuplane-cordon" | "gpuplane-uncordon" | "gpuplane-drain" | "gpuplane-resume"
        | "gpuplane-cancel" => &[
            ("0", "Every target done (or a dry run recorded)."),
            ("1", "A target failed, or the confirmation was not typed."),
            (
                "2",
                "Refused before anything was done: usage, no reason, read-only, no cluster to act through, a plan the identity may not run.",
            ),
            ("3", "Done, but its outcome could not be written to the audit log."),
        ],
        "gpuplane-get" => &[
            ("0", "Printed."),
            ("1", "The output could not be written."),
            ("2", "Usage (unknown resource, bad --filter or --window), or the cluster could not be read."),
            ("3", "--fail-on: an open incident at that severity or worse."),
        ],
        "gpuplane-doctor" => &[
            ("0", "Every check OK."),
            ("1", "A WARN (something disabled or degraded) and no FAIL."),
            ("2", "A FAIL (a source gpuplane cannot use), or usage."),
        ],
        "gpuplane-silence" | "gpuplane-silence-create" | "gpuplane-silence-expire" => &[
            ("0", "Done."),
            ("1", "Alertmanager refused or failed."),
            ("2", "Refused before anything was sent (usage, read-only, no audit record, unknown silence)."),
            ("3", "Done, but its outcome could not be audited."),
        ],
        "gpuplane-timeline" => &[
            ("0", "Printed (an empty window too)."),
            ("1", "The output could not be written."),
            ("2", "Usage (a bad --since, --until or --kind), or the event journal could not be read."),
        ],
        "gpuplane-audit-verify" => {
            &[("0", "The log is intact."), ("1", "Tampered with or torn."), ("2", "It could not be read.")]
        }
        "gpuplane-acceptance-run" => {
            &[("0", "Every run passed."), ("1", "A run degraded or failed."), ("2", "Nothing was submitted.")]
        }
        "gpuplane-acceptance-parse" => &[
            ("0", "Clean output."),
            ("1", "The output reports wrong values or errors."),
            ("2", "Unreadable or not nccl-tests output."),
        ],
        "gpuplane" => &[
            ("0", "The console was quit, or the subcommand succeeded."),
            ("1", "An error (the console could not start; a subcommand failed)."),
            ("2", "Usage."),
            ("129, 143", "The console ended on SIGHUP, SIGTERM."),
        ],
        _ => &[("0", "Success."), ("1", "Failure."), ("2", "Usage.")],
    };
    for (code, what) in codes {
        item(r, code, what);
    }
}

fn examples(r: &mut Roff, page: &str) {
    section(r, "EXAMPLES");
    let ex: &[(&str, &str)] = match page {
        "gpuplane" => &[
            ("gpuplane", "The console on the built-in simulated cluster."),
            (
                "gpuplane --slurm http://slurmctl:6820 --prometheus http://prom:9090",
                "A Slurm cluster with DCGM telemetry.",
            ),
            ("gpuplane --context prod --view queues", "A Kubernetes context, opening on the Queues view."),
            ("gpuplane doctor", "Check the configuration before an incident."),
        ],
        "gpuplane-get" => &[
            (
                "gpuplane get nodes -o json | jq -r '.[] | select(.state==\"down\") | .name'",
                "Names of down nodes.",
            ),
            ("gpuplane get jobs --filter 'st=PD gpus>4' -o csv", "Large pending jobs, for a spreadsheet."),
            ("gpuplane get incidents --fail-on crit", "A cron check: exit 3 while a CRIT incident is open."),
            ("gpuplane get cost --window 7d --team vision -o csv", "A team's week of cost."),
        ],
        "gpuplane-drain" => &[
            (
                "gpuplane drain gpu-007 -r 'XID 79' -t INC-4242",
                "Show the plan, ask for the confirmation word, drain, audit.",
            ),
            (
                "gpuplane drain gpu-007 gpu-008 -r 'rack maintenance' --dry-run",
                "Record the plan without acting.",
            ),
        ],
        "gpuplane-cancel" => {
            &[("gpuplane cancel 100042 -r 'runaway job' --yes", "Cancel a job without a prompt (scripts).")]
        }
        "gpuplane-doctor" => &[
            ("gpuplane doctor", "One line per check."),
            (
                "gpuplane doctor -o json | jq '.checks[] | select(.status!=\"ok\")'",
                "What is not OK, for a ticket.",
            ),
        ],
        "gpuplane-man" => &[
            ("gpuplane man drain | man -l -", "Read gpuplane-drain(1) without installing it."),
            ("gpuplane man --dir /usr/share/man/man1", "Write every page (packaging)."),
        ],
        "gpuplane-completions" => {
            &[("gpuplane completions bash > /etc/bash_completion.d/gpuplane", "Install bash completion.")]
        }
        "gpuplane-timeline" => &[
            (
                "gpuplane timeline --since 2h -o markdown > postmortem.md",
                "Draft the postmortem of the last two hours: what happened when, who did what, GPU-hours lost.",
            ),
            ("gpuplane timeline --since 1d --node gpu-004", "What happened to one node today."),
            (
                "gpuplane timeline --since 2026-11-01 --until 2026-11-02 --kind xid -o csv",
                "A day's XIDs, for a spreadsheet.",
            ),
        ],
        "gpuplane-audit-verify" => &[(
            "gpuplane audit verify --witness /var/log/syslog",
            "Check the chain against the witnessed heads.",
        )],
        _ => &[],
    };
    if ex.is_empty() {
        let words = page.replace('-', " ");
        item(r, &format!("{words} --help"), "The options, as above.");
    }
    for (cmdline, what) in ex {
        r.control("TP", []).text([bold(*cmdline)]).text([roman(*what)]);
    }
}

fn see_also(r: &mut Roff, page: &str) {
    section(r, "SEE ALSO");
    let others = if page == "gpuplane" {
        "gpuplane-get(1), gpuplane-doctor(1), gpuplane-drain(1), gpuplane-audit(1); the README and docs/ of the source."
    } else {
        "gpuplane(1); the README and docs/ of the source."
    };
    r.text([italic(others)]);
}

/// `gpuplane man`: one page on stdout, or every page into `dir`.
pub fn run(words: &[String], dir: Option<&Path>, console: &super::ConsoleFacts) -> ExitCode {
    let pages = pages();
    if let Some(dir) = dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("gpuplane: {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
        for p in &pages {
            let path = dir.join(format!("{}.1", p.name));
            if let Err(e) = render(p, console).and_then(|b| std::fs::write(&path, b)) {
                eprintln!("gpuplane: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
        println!("{} pages written to {}", pages.len(), dir.display());
        return ExitCode::SUCCESS;
    }
    let mut name = String::from("gpuplane");
    for w in words {
        let w = w.strip_prefix("gpuplane-").unwrap_or(w);
        if w != "gpuplane" {
            name.push('-');
            name.push_str(w);
        }
    }
    let Some(page) = pages.iter().find(|p| p.name == name) else {
        let names: Vec<&str> = pages.iter().map(|p| p.name.as_str()).collect();
        eprintln!("gpuplane: no man page {name}; one of: {}", names.join(", "));
        return ExitCode::from(2);
    };
    match render(page, console).and_then(|b| std::io::stdout().lock().write_all(&b)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
    }
}
