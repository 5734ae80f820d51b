//! The command line for scripts and packages: man pages per subcommand, help that shows only
//! the flags a subcommand uses, reasons refused before planning, the simulator saying so.

mod common;

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
