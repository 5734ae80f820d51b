use super::*;

const GCP: &str =
    include_str!("../../../../../tests/fixtures/nccl/01_h100x16_2node_gcp_a3mega_allreduce.txt");
/// Recorded by this project on a real H200 (nccl-tests 2.19.6, one GPU; README of the folder).
const H200: &str =
    include_str!("../../../../../tests/fixtures/nccl/03_h200x1_all_reduce_nccl_tests_2.19.6.txt");
const NEBIUS: &str =
    include_str!("../../../../../tests/fixtures/nccl/02_h100x16_2node_nebius_k8s_ib_allreduce_excerpt.txt");

fn lines_until(text: &str, pred: impl Fn(&str) -> bool) -> String {
    let mut out = String::new();
    for l in text.lines() {
        if pred(l) {
            break;
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

#[test]
fn full_sample_devices_rows_and_footer() {
    let r = parse(GCP.as_bytes()).unwrap();
    assert_eq!(r.devices.len(), 16);
    let d = &r.devices[9];
    assert_eq!((d.rank, d.group, d.pid, d.device), (9, Some(0), 6734, 1));
    assert_eq!((d.host.as_str(), d.bus_id.as_str()), ("ztan-mig-gq73", "0000:05:00"));
    assert_eq!(d.model, "NVIDIA H100 80GB HBM3");
    assert_eq!(r.hosts(), vec!["ztan-mig-235z", "ztan-mig-gq73"]);
    assert_eq!(r.sweeps.len(), 1);
    let rows = &r.sweeps[0].rows;
    assert_eq!(rows.len(), 31);
    assert_eq!(
        (rows[0].size, rows[0].count, rows[0].dtype.as_str(), rows[0].redop.as_deref()),
        (8, 2, "float", Some("sum"))
    );
    assert_eq!(rows[0].root, Some(-1));
    let last = &rows[30];
    assert_eq!(last.size, 8_589_934_592);
    assert_eq!(
        last.out_of_place,
        Measure { time_us: 47535.0, algbw: 180.71, busbw: 338.82, wrong: Some(0), max_error: None }
    );
    assert_eq!(
        last.in_place,
        Measure { time_us: 47743.0, algbw: 179.92, busbw: 337.35, wrong: Some(0), max_error: None }
    );
    assert_eq!(r.sweeps[0].out_of_bounds, Some(0));
    assert_eq!(r.avg_busbw(), Some(70.742));
    assert_eq!(r.peak_busbw(), Some(338.82));
    assert_eq!(r.largest(), Some((8_589_934_592, 338.82)));
    assert!(r.errors.is_empty() && !r.failed(), "{:?}", r.errors);
    assert_eq!(r.wrong(), 0);
}

#[test]
fn excerpt_without_device_table_parses() {
    let r = parse(NEBIUS.as_bytes()).unwrap();
    assert!(r.devices.is_empty());
    assert_eq!(r.rows().count(), 5);
    assert_eq!(r.peak_busbw(), Some(467.28));
    assert_eq!(r.largest(), Some((8_589_934_592, 467.28)));
    assert_eq!(r.avg_busbw(), Some(450.404));
}

#[test]
fn two_logs_concatenated_are_two_sweeps_judged_on_the_last() {
    let text = format!("{GCP}\n{NEBIUS}");
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.sweeps.len(), 2);
    assert_eq!(r.peak_busbw(), Some(467.28));
    assert_eq!(r.largest(), Some((8_589_934_592, 467.28)));
    assert_eq!(r.avg_busbw(), Some(450.404));
}

#[test]
fn crlf_line_endings() {
    let crlf = GCP.replace('\n', "\r\n");
    let r = parse(crlf.as_bytes()).unwrap();
    assert_eq!(r, parse(GCP.as_bytes()).unwrap());
}

#[test]
fn truncated_mid_row_keeps_what_was_read() {
    let cut = GCP.find("  4294967296").unwrap() + 40;
    let e = parse(&GCP.as_bytes()[..cut]).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Truncated, "{e}");
    assert_eq!(e.partial.devices.len(), 16);
    assert_eq!(e.partial.rows().count(), 29);
    assert_eq!(e.partial.peak_busbw(), Some(318.52));
    let msg = e.to_string();
    assert!(msg.starts_with("truncated nccl-tests output at line"), "{msg}");
    assert!(msg.contains("16 device(s), 29 row(s)"), "{msg}");
}

#[test]
fn rows_without_footer_are_truncated() {
    let text = lines_until(GCP, |l| l.starts_with("# Out of bounds"));
    let e = parse(text.as_bytes()).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Truncated);
    assert_eq!(e.partial.rows().count(), 31);
    assert!(e.detail.contains("no closing"), "{}", e.detail);
}

#[test]
fn garbage_columns_are_garbled_with_the_line() {
    let text = GCP.replace("   268435456      67108864     float", "   268435456      67108864     fl@at");
    let e = parse(text.as_bytes()).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Garbled);
    assert_eq!(e.line, GCP.lines().position(|l| l.contains("268435456      67108864")).unwrap() + 1);
    assert_eq!(e.partial.rows().count(), 25);
    let text = GCP.replace("213.19      0", "2x3.19      0");
    let e = parse(text.as_bytes()).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Garbled);
    assert!(e.detail.contains("busbw \"2x3.19\""), "{}", e.detail);
    // A short row in the middle is garbage, not truncation.
    let text = GCP.replace("   268435456      67108864     float     sum      -1", "   268435456");
    assert_eq!(parse(text.as_bytes()).unwrap_err().kind, ParseErrorKind::Garbled);
}

#[test]
fn missing_column_header_is_read_from_the_rows() {
    let text: String = GCP
        .lines()
        .filter(|l| !l.contains("out-of-place") && !l.contains("(B)") && !l.contains("redop"))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.rows().count(), 31);
    assert_eq!(r.devices.len(), 16);
}

#[test]
fn not_nccl_tests() {
    let e = parse(b"hello\nworld\n").unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::NotNcclTests);
    assert!(e.to_string().starts_with("not nccl-tests output"), "{e}");
    let e = parse(b"").unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::NotNcclTests);
    // A header with no rows (the job died before the first size).
    let head = lines_until(GCP, |l| l.contains("out-of-place"));
    let e = parse(head.as_bytes()).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::NotNcclTests);
    assert_eq!(e.partial.devices.len(), 16);
}

#[test]
fn huge_line_is_skipped_and_noted() {
    let huge = "x".repeat(MAX_LINE * 50);
    let text = GCP.replace("# Using devices", &format!("{huge}\n# Using devices"));
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.rows().count(), 31);
    assert_eq!(r.notes.len(), 1);
    assert!(r.notes[0].contains("bytes long, skipped"));
}

#[test]
fn warnings_wrong_values_and_failed_footers_are_errors() {
    let text = GCP
        .replace(
            "# Using devices",
            "ztan-mig-235z:6899:6950 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
             ztan-mig-235z:6899:6950 [0] transport/net_ib.cc:123 NCCL WARN NET/IB : \u{1b}[31mGot async event\u{1b}[0m\n\
             # Using devices",
        )
        .replace("338.82      0    47743", "338.82      3    47743")
        .replace("# Out of bounds values : 0 OK", "# Out of bounds values : 0 FAILED")
        + " ztan-mig-235z: Test failure common.cu:1009\n";
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.nccl_version.as_deref(), Some("2.21.5+cuda12.4"));
    assert_eq!(r.wrong(), 3);
    assert!(r.failed());
    assert_eq!(r.errors.len(), 4, "{:#?}", r.errors);
    assert!(r.errors[0].contains("NCCL WARN") && !r.errors[0].contains('\u{1b}'), "{}", r.errors[0]);
    assert!(!r.errors[0].contains("[31m"), "escape parameters do not leak: {}", r.errors[0]);
    assert!(r.errors[1].contains("3 wrong value(s) at 8589934592 bytes"));
    assert!(r.errors[2].contains("out of bounds"));
    assert!(r.errors[3].contains("Test failure"));
}

#[test]
fn na_wrong_and_newer_header_lines() {
    let text = "# nccl-tests version 2.13.10 nccl-headers=22105 nccl-library=22105\n\
                # Collective test starting: all_reduce_perf\n\
                # nThread 1 nGpus 8 minBytes 8589934592 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 0 graph: 0\n\
                #  Rank  0 Group  0 Pid  100 on node-a device  0 [0000:18:00] NVIDIA H200\n\
                #  Rank  1 Pid  100 on node-a device  1 [0x2a] NVIDIA H200\n\
                  8589934592    2147483648     float     sum      -1    31422  273.38  478.41    N/A    31397  273.59  478.79    N/A\n\
                # Out of bounds values : 0 OK\n\
                # Avg bus bandwidth    : 478.6 OK\n\
                #\n# Collective test concluded: all_reduce_perf\n";
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.tests_version.as_deref(), Some("2.13.10"));
    assert_eq!(r.nccl_version.as_deref(), Some("2.21.5"), "from nccl-library=22105");
    assert_eq!(r.collective.as_deref(), Some("all_reduce_perf"));
    assert_eq!(r.devices[1].group, None);
    assert_eq!(r.devices[1].bus_id, "0x2a");
    assert_eq!(r.rows().next().unwrap().out_of_place.wrong, None);
    assert_eq!(r.largest(), Some((8_589_934_592, 478.79)));
    assert!(!r.failed());
}

#[test]
fn hostile_host_and_model_names_are_sanitised() {
    let text = "#  Rank  0 Group  0 Pid  1 on ev\u{1b}]0;pwned\u{7}il device  0 [0000:01:00] GPU\u{202e}X\u{1b}[2J\n\
                8 2 float sum -1 1.0 0.00 0.00 0 1.0 0.00 0.00 0\n# Avg bus bandwidth : 0.0\n";
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.devices[0].host, "evil");
    assert_eq!(r.devices[0].model, "GPUX");
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = fastrand::Rng::with_seed(7);
    let base = GCP.as_bytes();
    for _ in 0..300 {
        let mut b = base.to_vec();
        for _ in 0..rng.usize(1..20) {
            let i = rng.usize(..b.len());
            b[i] = rng.u8(..);
        }
        let cut = rng.usize(..=b.len());
        let _ = parse(&b[..cut]);
    }
}

#[test]
fn a_single_gpu_run_recorded_on_a_real_h200() {
    let r = parse(H200.as_bytes()).unwrap();
    assert_eq!(r.tests_version.as_deref(), Some("2.19.6"));
    assert_eq!(r.nccl_version.as_deref(), Some("2.28.9"), "nccl-library=22809");
    assert_eq!(r.collective.as_deref(), Some("all_reduce_perf"));
    assert_eq!(r.devices.len(), 1);
    let d = &r.devices[0];
    assert_eq!((d.rank, d.group, d.pid, d.device), (0, Some(0), 795, 0));
    assert_eq!((d.host.as_str(), d.bus_id.as_str(), d.model.as_str()), ("vm", "0000:00:06", "NVIDIA H200"));
    let rows: Vec<_> = r.rows().collect();
    assert_eq!(rows.len(), 14);
    assert_eq!(rows[13].size, 536_870_912);
    assert_eq!(
        rows[13].out_of_place,
        Measure { time_us: 629.08, algbw: 853.42, busbw: 0.0, wrong: Some(0), max_error: None }
    );
    // One rank moves no bytes between GPUs: bus bandwidth is 0 by nccl-tests' definition.
    assert_eq!(r.peak_busbw(), Some(0.0));
    assert!(r.errors.is_empty() && !r.failed(), "{:?}", r.errors);
}
