//! The checks the fuzz targets run (`fuzz/fuzz_targets/*.rs`, `scripts/fuzz`), here so that the
//! corpus replay test (`tests/hermetic/fuzz_corpus.rs`, plain `cargo test`) runs exactly the same code on
//! every kept input. Each check takes arbitrary bytes and panics when a property fails.

use crate::sanitize::sanitize;
use std::collections::BTreeMap;
use std::path::Path;

pub mod audit;
pub mod filter;
pub mod kube;
pub mod record;
pub mod slurm;

/// The fuzz targets, by the name of their folder under `fuzz/corpus/`.
pub const TARGETS: &[&str] = &[
    "slurm_jobs",
    "prom_answer",
    "nccl_output",
    "sanitize",
    "toml_files",
    "slurm_responses",
    "kube_objects",
    "filter",
    "audit_verify",
    "recording",
];

/// Runs the check of `target` on `data`; `dir` is a scratch folder for the loaders that read
/// files (`toml_files`). Unknown names panic.
pub fn check(target: &str, data: &[u8], dir: &Path) {
    match target {
        "slurm_jobs" => slurm_jobs(data),
        "prom_answer" => prom_answer(data),
        "nccl_output" => nccl_output(data),
        "sanitize" => sanitize_bytes(data),
        "toml_files" => toml_files(dir, data),
        "slurm_responses" => slurm::check(data),
        "kube_objects" => kube::check(data),
        "filter" => filter::check(data),
        "audit_verify" => audit::check(dir, data),
        "recording" => record::check(dir, data),
        other => panic!("no fuzz target {other:?}"),
    }
}

/// `parse::jobs_streamed` (v0.0.42) under every `stream::Policy` against the serde_json
/// reference decoder: the first byte says how many chunk sizes follow (0–3), each next byte one
/// size; the rest is the body (see `reference::check`).
pub fn slurm_jobs(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else { return };
    let n = usize::from(n % 4).min(rest.len());
    let (head, body) = rest.split_at(n);
    // A byte with the high bit set: a multiple of 64 up to 8 KiB; else 1–128 bytes.
    let sizes: Vec<usize> = head
        .iter()
        .map(|&b| if b & 0x80 != 0 { usize::from(b & 0x7f) * 64 + 64 } else { usize::from(b) + 1 })
        .collect();
    if let Err(e) = crate::backend::slurm::reference::check(body, &sizes) {
        panic!("{e}\nbody: {:?}", String::from_utf8_lossy(body));
    }
}

/// `api::parse` against its serde path, and `api::for_each_series` against iterating `parse`.
pub fn prom_answer(data: &[u8]) {
    if let Err(e) = crate::backend::prom::api::check(data) {
        panic!("{e}\nbody: {:?}", String::from_utf8_lossy(data));
    }
}

/// Whether text is safe for a terminal cell: no C0/C1 control character (ESC, 8-bit CSI, DEL
/// included) and no bidi control, the sanitiser's promise.
fn terminal_safe(s: &str) -> bool {
    !s.chars().any(|c| {
        c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{200E}' | '\u{200F}')
    })
}

/// The sanitiser on arbitrary text (bytes that are not UTF-8 replaced, as every caller does):
/// the output has no C0/C1 control character and no bidi control (tabs and newlines become a
/// space, as documented), sanitising it again changes nothing, text with nothing to remove comes
/// back as it was, borrowed, and the output is never longer.
pub fn sanitize_bytes(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let out = sanitize(&text);
    assert!(terminal_safe(&out), "unsafe output {out:?} from {text:?}");
    assert!(out.chars().count() <= text.chars().count(), "{out:?} is longer than {text:?}");
    let again = sanitize(&out);
    assert!(
        matches!(again, std::borrow::Cow::Borrowed(_)) && again == out,
        "not idempotent: {out:?} → {again:?}"
    );
    if terminal_safe(&text) {
        assert!(
            matches!(out, std::borrow::Cow::Borrowed(_)) && out == text,
            "safe text changed: {text:?} → {out:?}"
        );
    }
}

/// The nccl-tests parser on arbitrary bytes: no panic; what it keeps is terminal-safe and every
/// figure finite (the run store writes JSON); an error names a line of the input; and CRLF line
/// ends read as LF do.
pub fn nccl_output(data: &[u8]) {
    use crate::acceptance::parse::{MAX_LINE, NcclRun, parse};
    fn strings_ok(r: &NcclRun) {
        let texts = [r.collective.as_deref(), r.tests_version.as_deref(), r.nccl_version.as_deref()];
        for t in texts.into_iter().flatten() {
            assert!(terminal_safe(t), "{t:?}");
        }
        for d in &r.devices {
            for t in [&d.host, &d.bus_id, &d.model] {
                assert!(terminal_safe(t), "{t:?}");
            }
        }
        for t in r.errors.iter().chain(&r.notes) {
            assert!(terminal_safe(t), "{t:?}");
        }
        for s in &r.sweeps {
            assert!(s.avg_busbw.is_none_or(f64::is_finite));
            for row in &s.rows {
                assert!(terminal_safe(&row.dtype) && row.redop.as_deref().is_none_or(terminal_safe));
                for m in [&row.out_of_place, &row.in_place] {
                    let figures = [m.time_us, m.algbw, m.busbw, m.max_error.unwrap_or(0.0)];
                    assert!(figures.iter().all(|v| v.is_finite() && *v >= 0.0), "{row:?}");
                }
            }
        }
    }
    let lines = data.split(|&b| b == b'\n').count();
    let result = parse(data);
    match &result {
        Ok(r) => {
            strings_ok(r);
            assert!(r.rows().next().is_some(), "a parse without rows is an error");
            let (size, bw) = r.largest().expect("rows, so a largest size");
            assert!(r.rows().any(|row| row.size == size) && bw.is_finite());
        }
        Err(e) => {
            strings_ok(&e.partial);
            assert!(e.line <= lines, "error at line {} of {lines}", e.line);
            let msg = e.to_string();
            assert!(terminal_safe(&msg), "{msg:?}");
        }
    }
    // CRLF: only where adding a byte to each line changes nothing else (no CR already, no line
    // at the length limit).
    if !data.contains(&b'\r') && data.split(|&b| b == b'\n').all(|l| l.len() < MAX_LINE) {
        let crlf: Vec<u8> =
            data.iter().flat_map(|&b| if b == b'\n' { vec![b'\r', b'\n'] } else { vec![b] }).collect();
        assert_eq!(parse(&crlf), result, "CRLF reads differently");
    }
}

/// The TOML loaders on arbitrary text, each through its public loading function and a real file
/// in `dir`: the first byte picks the file (config, theme, keymap, plugin, hotkeys), the rest is
/// its text. No panic, and each loader's promise holds: a bad file gives the defaults and an
/// error naming the file; a good one gives a usable result.
pub fn toml_files(dir: &Path, data: &[u8]) {
    let Some((&kind, text)) = data.split_first() else { return };
    let lossy = String::from_utf8_lossy(text);
    let write = |rel: &str| {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("scratch folder");
        }
        std::fs::write(&p, text).expect("scratch file");
        p
    };
    match kind % 5 {
        0 => {
            use crate::config::Config;
            // The config names files the loader reads at once (`bearer_token_file`); one under
            // /dev, /proc or /sys (`/dev/zero`) would read forever or read the machine. The
            // loader reads what it is told, so such inputs are left out, however spelt.
            fn system_path(v: &toml::Value) -> bool {
                match v {
                    toml::Value::String(s) => ["/dev", "/proc", "/sys"].iter().any(|p| s.contains(p)),
                    toml::Value::Array(a) => a.iter().any(system_path),
                    toml::Value::Table(t) => t.iter().any(|(k, v)| system_path(v) || k.contains("/dev")),
                    _ => false,
                }
            }
            if toml::from_str::<toml::Table>(&lossy).is_ok_and(|t| t.values().any(system_path)) {
                return;
            }
            let p = write("config.toml");
            let cli = crate::cli::Cli { config: Some(p), ..crate::cli::Cli::default() };
            let (c, warnings) = Config::load(&cli);
            assert!(c.refresh >= std::time::Duration::from_millis(100));
            assert!((1..=16).contains(&c.sim_gpus) && c.sim_nodes >= 1);
            assert!(1 <= c.break_glass_default_min && c.break_glass_default_min <= c.break_glass_max_min);
            assert!(c.break_glass_max_min <= 24 * 60);
            assert!(c.thresholds.idle_after_s >= 0, "idle_after {}", c.thresholds.idle_after_s);
            let prices = c.prices.per_gpu_hour.values().chain([&c.prices.default]);
            for p in prices {
                assert!(p.is_finite() && *p >= 0.0, "price {p} per GPU-hour");
            }
            let j = &c.acceptance.judge;
            assert!(
                (0.0..=100.0).contains(&j.fail_pct)
                    && j.fail_pct <= j.degraded_pct
                    && j.degraded_pct <= 100.0
            );
            assert!(j.baseline.values().all(|v| v.is_finite() && *v > 0.0));
            if toml::from_str::<toml::Table>(&lossy).is_err() || std::str::from_utf8(text).is_err() {
                assert!(warnings.iter().any(|w| w.starts_with("config ignored")), "{warnings:?}");
            }
        }
        1 => {
            use crate::tui::theme::Theme;
            write("themes/fuzz.toml");
            let (t, err) = Theme::load("fuzz", Some(dir), false);
            if let Some(e) = err {
                assert!(e.file.contains("fuzz.toml") && !e.message.is_empty(), "{e}");
                assert_eq!(t, Theme::builtin("dark"), "a bad theme falls back to dark");
            }
        }
        2 => {
            use crate::tui::keymap::{Action, Keymap};
            write("keymaps/fuzz.toml");
            let (k, err) = Keymap::load("fuzz", Some(dir));
            if let Some(e) = &err {
                assert!(e.file.contains("fuzz.toml") && !e.message.is_empty(), "{e}");
                assert_eq!(k.name, "default");
            }
            for needed in [Action::Quit, Action::Command, Action::Back] {
                assert!(k.hint(needed).is_some(), "no key for {needed:?}: {err:?}");
            }
            let mut seen = std::collections::HashSet::new();
            for (_, keys) in k.bindings() {
                for key in keys {
                    assert!(seen.insert(*key), "{key:?} bound twice");
                }
            }
        }
        3 => {
            use crate::tui::keymap::Key;
            write("plugins/fuzz.toml");
            let (plugins, errors) = crate::tui::plugins::load(Some(dir), false);
            for e in &errors {
                // A shortcut taken twice is reported on the later file, which may be a built-in.
                assert!(e.file.contains("fuzz.toml") || e.message.contains("already taken"), "{e}");
                assert!(!e.message.is_empty());
            }
            let mut shortcuts = std::collections::HashSet::new();
            for p in &plugins {
                assert!(Key::parse(&p.shortcut).is_ok(), "{p:?}");
                assert!(shortcuts.insert(p.shortcut.clone()), "shortcut {:?} twice", p.shortcut);
                let hostile = "a'b\"c $(rm -rf /) `x` ; \n $NODE";
                let vars: BTreeMap<String, String> = ["NODE", "NODES", "JOB", "USER"]
                    .iter()
                    .map(|n| (n.to_string(), hostile.to_string()))
                    .collect();
                let (program, argv) = p.argv(&vars);
                if p.shell {
                    assert_eq!((program.as_str(), argv.len()), ("sh", 2));
                } else {
                    assert_eq!(argv.len(), p.args.len());
                }
            }
            let (_, readonly_errors) = crate::tui::plugins::load(Some(dir), true);
            assert!(readonly_errors.len() <= errors.len());
        }
        _ => {
            use crate::tui::keymap::Keymap;
            use crate::tui::usercmd::UserCommands;
            write("hotkeys.toml");
            let keymap = Keymap::builtin("default");
            let (u, errors) = UserCommands::load(Some(dir), &keymap);
            for e in &errors {
                assert!(e.file.contains("hotkeys.toml") && !e.message.is_empty(), "{e}");
            }
            for h in &u.hotkeys {
                assert!(
                    !keymap.bindings().any(|(_, keys)| keys.contains(&h.key)),
                    "{h:?} shadows the keymap"
                );
            }
            assert!(u.expand("mine", "x", "alice").is_some(), "the built-in alias stays");
        }
    }
}
