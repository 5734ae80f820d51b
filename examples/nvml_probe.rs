//! What gpuplane's NVML source reads on this host, as JSON: run it on a GPU node to record the
//! real driver's answers (the issue notes quote it), or with a library path to read another
//! `libnvidia-ml.so` (the tests' fake one). Reads twice, one second apart (utilisation and
//! XID events need an interval), and prints the second read, then the model's node for it.
//!
//! `cargo run --release --example nvml_probe [-- /path/to/libnvidia-ml.so.1]`

use gpuplane::backend::nvml::{NvmlConfig, Reader, node_of};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cfg = NvmlConfig { lib_path: std::env::args_os().nth(1).map(Into::into), ..Default::default() };
    let mut reader = match Reader::open(&cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let first = reader.read();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let snap = reader.read();
    let out = serde_json::json!({
        "first_read_us": first.read_us,
        "snapshot": snap,
        "node": node_of(&snap),
    });
    match serde_json::to_string_pretty(&out) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
