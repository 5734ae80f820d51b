//! The command line for scripts and packages: man pages per subcommand, help that shows only
//! the flags a subcommand uses, reasons refused before planning, the simulator saying so.

use crate::common;

fn run(args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    common::gpuplane_cmd(dir.path()).args(args).output().expect("run gpuplane")
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_man_page_per_subcommand_with_the_sections_readers_look_for() {
    let main = stdout(&["man"]);
    assert!(main.starts_with(".ie") && main.contains(".TH gpuplane 1"), "roff");
    for s in [".SH KEYS", ".SH FILES", ".SH ENVIRONMENT", ".SH \"EXIT STATUS\"", ".SH EXAMPLES"] {
        assert!(main.contains(s), "gpuplane(1) lacks {s}");
    }
    // KEYS come from the default keymap: every action it binds is there.
    let km = gpuplane::tui::keymap::Keymap::builtin("default");
    for (action, _) in km.bindings() {
        let (_, what) = action.describe();
        if !what.is_empty() {
            let first = what.split_whitespace().next().unwrap().replace('-', "\\-");
            assert!(main.contains(&first), "KEYS lacks {what}");
        }
    }
    assert!(main.contains("drain node(s)") && main.contains("SLURM_JWT") && main.contains("NO_COLOR"));
    let drain = stdout(&["man", "drain"]);
    assert!(
        drain.contains(".TH gpuplane\\-drain 1") || drain.contains(".TH gpuplane-drain 1"),
        "{}",
        &drain[..300]
    );
    for s in [".SH FILES", ".SH ENVIRONMENT", ".SH \"EXIT STATUS\"", ".SH EXAMPLES", "\\-\\-reason"] {
        assert!(drain.contains(s), "gpuplane-drain(1) lacks {s}");
    }
    assert!(!drain.contains(".SH KEYS"), "keys are the console's, on gpuplane(1)");
    assert_eq!(stdout(&["man", "gpuplane-drain"]), drain, "the page's own name works too");
    let verify = stdout(&["man", "audit", "verify"]);
    assert!(verify.contains("\\-\\-witness") && !verify.contains("\\-\\-slurm\\-ca"), "no backend flags");
    let out = run(&["man", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gpuplane-drain"), "lists the pages");
    // --dir: every page, as packaging installs them.
    let dir = tempfile::tempdir().unwrap();
    stdout(&["man", "--dir", dir.path().to_str().unwrap()]);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for p in
        ["gpuplane.1", "gpuplane-drain.1", "gpuplane-get.1", "gpuplane-doctor.1", "gpuplane-audit-verify.1"]
    {
        assert!(names.iter().any(|n| n == p), "{p} in {names:?}");
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("gpuplane-drain.1")).unwrap(), drain);
}

#[test]
fn help_shows_the_flags_a_subcommand_uses_with_backends_under_one_heading() {
    let drain = stdout(&["drain", "--help"]);
    let (own, backends) = drain.split_once("\nBackends:\n").expect("a Backends heading");
    assert!(!own.contains("--slurm") && !own.contains("--prometheus"), "{own}");
    for f in ["--slurm ", "--prometheus", "--context", "--kubeconfig"] {
        assert!(backends.contains(f), "{f} under Backends");
    }
    assert_eq!(drain.matches("Backends:").count(), 1);
    for sub in [&["audit", "verify"][..], &["man"], &["completions"], &["acceptance", "parse"]] {
        let help = stdout(&[sub, &["--help"]].concat());
        assert!(!help.contains("--slurm") && !help.contains("Backends"), "{sub:?}:\n{help}");
    }
    // Hidden, not removed: a wrapper that always passes --slurm still works.
    assert!(run(&["audit", "tail", "--slurm", "http://127.0.0.1:9"]).status.success());
}

#[test]
fn an_empty_reason_is_refused_before_anything_is_planned() {
    for reason in ["", "   "] {
        let out = run(&["drain", "gpu-001", "--reason", reason, "--yes"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty(), "no plan printed: {}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stderr).contains("a reason is required"));
    }
    let out = stdout(&["cordon", "gpu-001", "-r", "a test", "--yes"]);
    assert!(out.contains("(simulated cluster; nothing persists)"), "{out}");
}

/// The bash script completes --view, --theme, --keymap, --context and --cluster to names
/// (contexts read from the kubeconfig and clusters from the config at each completion), run in
/// bash as a shell would.
#[test]
fn completions_offer_views_themes_keymaps_contexts_and_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::create_dir_all(home.join("config/gpuplane/themes")).unwrap();
    std::fs::write(home.join("config/gpuplane/themes/solarized.toml"), "# a theme of one's own\n").unwrap();
    let clusters = |names: &[&str]| {
        let text: String = names.iter().map(|n| format!("[[cluster]]\nname = \"{n}\"\n\n")).collect();
        std::fs::write(home.join("config/gpuplane/config.toml"), text).unwrap();
    };
    clusters(&["prod-a", "prod-b", "lab"]);
    let kc = home.join("kubeconfig");
    let kubeconfig = |contexts: &[&str]| {
        let ctx: String = contexts
            .iter()
            .map(|c| format!("- {{name: {c}, context: {{cluster: c1, user: u1}}}}\n"))
            .collect();
        std::fs::write(
            &kc,
            format!(
                "apiVersion: v1\nkind: Config\nclusters: [{{name: c1, cluster: {{server: \"https://127.0.0.1:1\"}}}}]\nusers: [{{name: u1, user: {{token: x}}}}]\ncontexts:\n{ctx}current-context: {}\n",
                contexts[0]
            ),
        )
        .unwrap();
    };
    kubeconfig(&["prod-east", "lab-west"]);
    let script = home.join("gpuplane.bash");
    let out =
        common::gpuplane_cmd(home).args(["completions", "bash"]).env("KUBECONFIG", &kc).output().unwrap();
    assert!(out.status.success());
    std::fs::write(&script, &out.stdout).unwrap();
    // `gpuplane` on PATH, as installed.
    let bin = home.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpuplane"), bin.join("gpuplane")).unwrap();
    let complete = |words: &str| -> Vec<String> {
        let line = format!("gpuplane {words}");
        let n = line.split(' ').count() - 1;
        let snippet = format!(
            "source {s}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; read -ra COMP_WORDS <<< \"$COMP_LINE\"; \
             [[ \"$COMP_LINE\" == *' ' ]] && COMP_WORDS+=(''); COMP_CWORD={n}; \
             _gpuplane gpuplane \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            s = script.display()
        );
        let out = std::process::Command::new("bash")
            .args(["--norc", "-c", &snippet])
            .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
            .env("KUBECONFIG", &kc)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("HOME", home)
            .output()
            .expect("bash");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().lines().filter(|l| !l.is_empty()).map(String::from).collect()
    };
    let views = complete("--view ");
    for v in ["nodes", "gpus", "queues", "cost", "topology"] {
        assert!(views.iter().any(|x| x == v), "{v} in {views:?}");
    }
    assert!(!views.iter().any(|v| v.contains('/') || v.ends_with(".rs")), "names, not files: {views:?}");
    assert_eq!(complete("--view q"), ["queues", "quotas"]);
    let themes = complete("--theme ");
    for t in ["dark", "light", "high-contrast", "monochrome", "solarized"] {
        assert!(themes.iter().any(|x| x == t), "{t} in {themes:?}");
    }
    assert_eq!(complete("--keymap e"), ["emacs"]);
    assert_eq!(complete("--context "), ["lab-west", "prod-east"]);
    // A subcommand's --context too; and a context added later completes without a new script.
    kubeconfig(&["prod-east", "lab-west", "lab-north"]);
    assert_eq!(complete("drain --context lab-"), ["lab-north", "lab-west"]);
    // Clusters: the config's [[cluster]] names, read again at each completion.
    assert_eq!(complete("--cluster "), ["lab", "prod-a", "prod-b"]);
    clusters(&["prod-a", "prod-b", "lab", "prod-c"]);
    assert_eq!(complete("get nodes --cluster prod-"), ["prod-a", "prod-b", "prod-c"]);
    // zsh and fish name them as well (those known when the script was printed).
    for shell in ["zsh", "fish"] {
        let out =
            common::gpuplane_cmd(home).args(["completions", shell]).env("KUBECONFIG", &kc).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("topology") && text.contains("high-contrast") && text.contains("prod-east"),
            "{shell}"
        );
    }
}
