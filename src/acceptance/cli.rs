//! `gpuplane acceptance parse|run` and `gpuplane get acceptance`.

use super::report;
use super::store::Store;
use crate::cli::{AcceptanceCommand, Output};
use crate::config::Config;
use std::io::{Read, Write};
use std::process::ExitCode;

/// The largest output read (a real sweep is a few KB; NCCL_DEBUG=INFO logs a few MB).
pub const MAX_OUTPUT: u64 = 256 << 20;

/// The run store in use: `[acceptance] store`, else the XDG data dir.
pub fn store(config: &Config) -> Store {
    Store::new(config.acceptance.store.clone().unwrap_or_else(|| {
        Store::default_path().unwrap_or_else(|| std::path::PathBuf::from("gpuplane-acceptance.jsonl"))
    }))
}

pub fn run(cmd: &AcceptanceCommand, _config: &Config) -> ExitCode {
    match cmd {
        AcceptanceCommand::Parse { file, output } => parse(file, *output),
    }
}

fn read_limited(r: impl Read) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.take(MAX_OUTPUT + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_OUTPUT {
        return Err(std::io::Error::other(format!("larger than {} MiB", MAX_OUTPUT >> 20)));
    }
    Ok(buf)
}

fn parse(file: &std::path::Path, output: Output) -> ExitCode {
    let bytes = if file.as_os_str() == "-" {
        read_limited(std::io::stdin().lock())
    } else {
        std::fs::File::open(file).and_then(read_limited)
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            eprintln!("gpuplane: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let parsed = super::parse::parse(&bytes);
    let mut out = std::io::stdout().lock();
    let json = output == Output::Json;
    let (text, code) = match &parsed {
        Ok(r) if json => (serde_json::to_string_pretty(r).unwrap_or_default(), u8::from(r.failed())),
        Ok(r) => (report::parse_text(r), u8::from(r.failed())),
        Err(e) if json => {
            let v = serde_json::json!({"error": e.to_string(), "kind": e.kind, "line": e.line, "partial": e.partial});
            (serde_json::to_string_pretty(&v).unwrap_or_default(), 2)
        }
        Err(e) => {
            eprintln!("gpuplane: {}: {e}", file.display());
            (report::parse_error_text(e), 2)
        }
    };
    match writeln!(out, "{}", text.trim_end()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::from(code),
    }
}

/// `gpuplane get acceptance`: every recorded run, newest last; `--filter` keeps the rows
/// whose text contains it (case-insensitive; `!text` drops them).
pub fn get(output: Output, filter: &str, config: &Config) -> ExitCode {
    let st = store(config);
    let loaded = match st.load() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            return ExitCode::from(2);
        }
    };
    if loaded.skipped > 0 {
        eprintln!("gpuplane: warning: {}: {} unreadable line(s) skipped", st.path.display(), loaded.skipped);
    }
    let (neg, needle) = match filter.strip_prefix('!') {
        Some(f) => (true, f.to_lowercase()),
        None => (false, filter.to_lowercase()),
    };
    let runs: Vec<_> = loaded
        .runs
        .iter()
        .map(|r| (r, report::row_cells(r)))
        .filter(|(_, cells)| needle.is_empty() || cells.join(" ").to_lowercase().contains(&needle) != neg)
        .collect();
    let cols: Vec<usize> =
        (0..report::COLUMNS.len()).filter(|&i| output != Output::Table || !report::COLUMNS[i].1).collect();
    let mut out = std::io::stdout().lock();
    let written = match output {
        Output::Json => {
            let v: Vec<_> = runs.iter().map(|(r, _)| *r).collect();
            serde_json::to_writer_pretty(&mut out, &v)
                .map_err(std::io::Error::other)
                .and_then(|_| writeln!(out))
        }
        Output::Csv => {
            let mut w = csv::Writer::from_writer(out);
            let r = w
                .write_record(cols.iter().map(|&i| report::COLUMNS[i].0))
                .and_then(|_| runs.iter().try_for_each(|(_, c)| w.write_record(cols.iter().map(|&i| &c[i]))))
                .and_then(|_| w.flush().map_err(csv::Error::from));
            r.map_err(std::io::Error::other)
        }
        Output::Table | Output::Wide => {
            let width = |i: usize| {
                runs.iter()
                    .map(|(_, c)| unicode_width::UnicodeWidthStr::width(c[i].as_str()))
                    .max()
                    .unwrap_or(0)
                    .max(report::COLUMNS[i].0.len())
            };
            let widths: Vec<usize> = cols.iter().map(|&i| width(i)).collect();
            let line = |cells: Vec<&str>| {
                let mut l = String::new();
                for (n, c) in cells.iter().enumerate() {
                    l.push_str(c);
                    l.push_str(
                        &" ".repeat(widths[n].saturating_sub(unicode_width::UnicodeWidthStr::width(*c)) + 2),
                    );
                }
                l.trim_end().to_string()
            };
            let mut r = writeln!(out, "{}", line(cols.iter().map(|&i| report::COLUMNS[i].0).collect()));
            for (_, c) in &runs {
                if r.is_ok() {
                    r = writeln!(out, "{}", line(cols.iter().map(|&i| c[i].as_str()).collect()));
                }
            }
            r
        }
    };
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("gpuplane: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}
