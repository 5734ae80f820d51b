//! The Debian package (scripts/package, cargo-deb) is built from the binary under test (no second
//! build: the dev profile's target/debug/gpuplane), installed with `dpkg -i` into a scratch root
//! with its own dpkg database (so the machine and parallel runs are untouched), run from there
//! (`gpuplane --version`, `man gpuplane`, the completions), and removed with `dpkg -r`.
//! Under the `live` feature: needs dpkg, man (man-db) and cargo-deb, which scripts/test installs.

use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{text}", out.status);
    text
}

fn dpkg(admin: &Path, root: &Path) -> Command {
    let mut c = Command::new("dpkg");
    c.arg(format!("--admindir={}", admin.display())).arg(format!("--instdir={}", root.display())).args([
        "--force-not-root",
        "--force-depends",
        "--force-script-chrootless",
        "--no-triggers",
    ]);
    c
}

#[test]
fn the_deb_installs_the_binary_man_pages_and_completions_and_removes_cleanly() {
    for tool in ["dpkg", "man", "cargo-deb"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().expect("sh");
        assert!(
            found.status.success(),
            "{tool} is missing: install it (apt-get install dpkg man-db; cargo install --locked cargo-deb), \
             or run scripts/test, which does"
        );
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = run(Command::new(repo.join("scripts/package"))
        .arg("--no-build")
        .env("GPUPLANE_PACKAGE_PROFILE", "dev")
        .env("GPUPLANE_PACKAGE_OUT", tmp.path()));
    let deb = out.lines().last().unwrap_or_default().trim().to_string();
    assert!(deb.ends_with(".deb") && Path::new(&deb).is_file(), "{out}");

    // A scratch root with an empty dpkg database.
    let (root, admin) = (tmp.path().join("root"), tmp.path().join("dpkg"));
    for d in [root.clone(), admin.join("info"), admin.join("updates"), admin.join("triggers")] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(admin.join("status"), "").expect("status");
    run(dpkg(&admin, &root).args(["-i", &deb]));
    let status = run(dpkg(&admin, &root).args(["-s", "gpuplane"]));
    assert!(status.contains("Status: install ok installed"), "{status}");

    let bin = root.join("usr/bin/gpuplane");
    let version = run(Command::new(&bin).arg("--version"));
    assert!(version.starts_with(&format!("gpuplane {}", env!("CARGO_PKG_VERSION"))), "{version}");
    let page = run(Command::new("man")
        .args(["-M", &root.join("usr/share/man").display().to_string(), "gpuplane"])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .env("LANG", "C.UTF-8"));
    assert!(page.contains("NAME") && page.contains("gpuplane"), "{page}");
    for f in [
        "usr/share/bash-completion/completions/gpuplane",
        "usr/share/zsh/vendor-completions/_gpuplane",
        "usr/share/fish/vendor_completions.d/gpuplane.fish",
    ] {
        let text = std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(text.contains("gpuplane") && text.contains("doctor"), "{f} completes the subcommands");
    }
    // The bash completion loads and completes a subcommand.
    let bash = run(Command::new("bash").args([
        "-c",
        &format!(
            "source {}; COMP_WORDS=(gpuplane doc); COMP_CWORD=1; _gpuplane gpuplane doc gpuplane; echo \"${{COMPREPLY[@]}}\"",
            root.join("usr/share/bash-completion/completions/gpuplane").display()
        ),
    ]));
    assert!(bash.split_whitespace().any(|w| w == "doctor"), "{bash}");

    run(dpkg(&admin, &root).args(["-r", "gpuplane"]));
    assert!(!bin.exists(), "removed");
    assert!(!root.join("usr/share/man/man1/gpuplane.1.gz").exists(), "removed");
}
