//! Parsing nccl-tests output: the full recorded sample, and a large log made of that sample
//! repeated (as a `-N` multi-cycle run or concatenated logs would be) with `NCCL INFO` noise.
//! Run: `cargo bench --bench nccl_parse`.

use divan::{Bencher, counter::BytesCount};
use gpuplane::acceptance::parse::parse;
use std::sync::LazyLock;

const SAMPLE: &str = include_str!("../tests/fixtures/nccl/01_h100x16_2node_gcp_a3mega_allreduce.txt");

/// About 8 MB: the sample 1,000 times, each copy preceded by 20 `NCCL INFO` lines.
static BIG: LazyLock<String> = LazyLock::new(|| {
    let noise =
        "ztan-mig-235z:6899:6950 [0] NCCL INFO Channel 00/32 : 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n";
    let mut s = String::new();
    for _ in 0..1000 {
        for _ in 0..20 {
            s.push_str(noise);
        }
        s.push_str(SAMPLE);
        s.push('\n');
    }
    s
});

fn main() {
    eprintln!("large log: {:.1} MB", BIG.len() as f64 / 1e6);
    divan::main();
}

#[divan::bench]
fn sample(b: Bencher) {
    b.counter(BytesCount::new(SAMPLE.len())).bench(|| parse(SAMPLE.as_bytes()).map(|r| r.sweeps.len()));
}

#[divan::bench(sample_count = 10)]
fn large_log(b: Bencher) {
    let big = &*BIG;
    b.counter(BytesCount::new(big.len())).bench(|| parse(big.as_bytes()).map(|r| r.sweeps.len()));
}
