//! `parse::jobs_streamed` (v0.0.42) under every `stream::Policy` against the serde_json
//! reference decoder, on arbitrary bytes: the first byte says how many chunk sizes follow
//! (0–3), each next byte one size; the rest is the body (see `reference::check`, which also
//! skips the one documented exception, keys spelt with escapes).
#![no_main]

use gpuplane::backend::slurm::reference;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else { return };
    let n = usize::from(n % 4).min(rest.len());
    let (head, body) = rest.split_at(n);
    // A byte with the high bit set: a multiple of 64 up to 8 KiB; else 1–128 bytes.
    let sizes: Vec<usize> = head
        .iter()
        .map(|&b| if b & 0x80 != 0 { usize::from(b & 0x7f) * 64 + 64 } else { usize::from(b) + 1 })
        .collect();
    if let Err(e) = reference::check(body, &sizes) {
        panic!("{e}\nbody: {:?}", String::from_utf8_lossy(body));
    }
});
