use super::*;

fn vars(node: &str) -> BTreeMap<String, String> {
    [("NODE", node), ("NODES", "a b"), ("USER", "alice")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn plugin(shell: bool) -> Plugin {
    // In shell mode the author writes shell syntax (the format is quoted by hand); values are
    // quoted by gpuplane.
    let fmt = if shell { "'%s|'" } else { "%s|" };
    Plugin {
        name: "echo".into(),
        shortcut: "ctrl-p".into(),
        scopes: vec!["nodes".into()],
        command: "printf".into(),
        args: vec![fmt.into(), "$NODE".into(), "$NODES".into()],
        confirm: false,
        background: true,
        dangerous: false,
        shell,
        description: String::new(),
    }
}

const HOSTILE: &[&str] =
    &["a b", "it's", "x\"y", "n; rm -rf /tmp/nope", "$(touch /tmp/pwned)", "`id`", "line1\nline2", "$HOME"];

#[test]
fn argv_without_a_shell_keeps_each_value_whole() {
    for h in HOSTILE {
        let (prog, args) = plugin(false).argv(&vars(h));
        assert_eq!(prog, "printf");
        assert_eq!(args, vec!["%s|".to_string(), h.to_string(), "a b".to_string()]);
        // and the real program sees exactly those bytes
        let out = std::process::Command::new(prog).args(&args).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{h}|a b|"));
    }
}

#[test]
fn with_a_shell_every_value_is_quoted() {
    let marker = std::env::temp_dir().join(format!("gpuplane-pwned-{}", std::process::id()));
    let attack = format!("$(touch {})", marker.display());
    for h in HOSTILE.iter().copied().chain([attack.as_str()]) {
        let (prog, args) = plugin(true).argv(&vars(h));
        assert_eq!((prog.as_str(), args[0].as_str()), ("sh", "-c"));
        let out = std::process::Command::new(prog).args(&args).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{h}|a b|"), "no injection for {h:?}");
    }
    assert!(!marker.exists(), "the command substitution never ran");
}

#[test]
fn longer_variable_names_win() {
    let (_, args) = plugin(false).argv(&vars("n1"));
    assert_eq!(args[2], "a b", "$NODES is not $NODE followed by S");
    assert_eq!(expand("$UNKNOWN $USER", &vars("n"), false), "$UNKNOWN alice");
}

#[test]
fn shipped_examples_load_and_dangerous_ones_hide_in_read_only_mode() {
    let (all, errs) = load(None, false);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(all.len(), EMBEDDED.len());
    assert!(all.iter().any(|p| p.name == "ssh" && p.applies_to("nodes") && !p.applies_to("jobs")));
    // Every shipped shortcut is a key, and none collides with the default keymap.
    let keymap = crate::tui::keymap::Keymap::builtin("default");
    for p in &all {
        let k = crate::tui::keymap::Key::parse(&p.shortcut).unwrap();
        assert!(
            !keymap.bindings().any(|(_, keys)| keys.contains(&k)),
            "{} shortcut {} is the keymap's",
            p.name,
            p.shortcut
        );
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("plugins")).unwrap();
    std::fs::write(
        dir.path().join("plugins/reboot.toml"),
        "name = \"reboot\"\nshortcut = \"ctrl-b\"\nscopes = [\"nodes\"]\ncommand = \"ipmitool\"\nargs = [\"-H\", \"$NODE\", \"power\", \"cycle\"]\ndangerous = true\nconfirm = true\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("plugins/zz-dup.toml"),
        "name = \"dup\"\nshortcut = \"ctrl-b\"\nscopes = [\"nodes\"]\ncommand = \"true\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("plugins/bad.toml"), "name = \"bad\"\nshortcut = 4\n").unwrap();
    let (rw, errs) = load(Some(dir.path()), false);
    assert!(rw.iter().any(|p| p.name == "reboot"));
    assert!(errs.iter().any(|e| e.file.ends_with("bad.toml") && e.message.starts_with("line 2")), "{errs:?}");
    assert!(errs.iter().any(|e| e.message.contains("already taken")), "{errs:?}");
    let (ro, _) = load(Some(dir.path()), true);
    assert!(!ro.iter().any(|p| p.name == "reboot"), "dangerous plugins are hidden in read-only mode");
}

#[test]
fn the_osc52_example_emits_the_escape_with_the_value_base64_encoded() {
    let (all, _) = load(None, false);
    let p = all.iter().find(|p| p.name == "copy-osc52").unwrap();
    let (prog, args) = p.argv(&vars("gpu-001"));
    let out = std::process::Command::new(prog).args(&args).output().unwrap();
    // "gpu-001" in base64 is "Z3B1LTAwMQ=="
    assert_eq!(out.stdout, b"\x1b]52;c;Z3B1LTAwMQ==\x07");
}
