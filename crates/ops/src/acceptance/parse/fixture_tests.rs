//! Every collective's output format, by nccl-tests version and flags: the `s*.txt` fixtures are
//! synthesised from nccl-tests' own format strings (`tests/fixtures/nccl/synth.py`, README there).

use super::*;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../../../../../tests/fixtures/nccl/", $name))
    };
}

fn m(time_us: f64, algbw: f64, busbw: f64, wrong: Option<u64>) -> Measure {
    Measure { time_us, algbw, busbw, wrong, max_error: None }
}

/// Parses and checks what every good fixture shares: no errors, one sweep closed by its footer.
fn ok(text: &str) -> NcclRun {
    let r = parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.sweeps.len(), 1);
    assert!(r.sweeps[0].avg_busbw.is_some());
    r
}

fn last(r: &NcclRun) -> &Row {
    r.rows().last().unwrap()
}

#[test]
fn every_collective_of_2_19_6() {
    // (fixture, collective, first row's size and count, redop, root, last row's busbw both ways, avg)
    #[allow(clippy::type_complexity)]
    let cases: [(&str, &str, (u64, u64), Option<&str>, i64, (f64, f64), f64); 8] = [
        (
            fixture!("s10_all_reduce_perf_2.19.6_h100x8.txt"),
            "all_reduce_perf",
            (8, 2),
            Some("sum"),
            -1,
            (458.46, 467.61),
            166.173,
        ),
        (
            fixture!("s11_all_gather_perf_2.19.6_h100x8.txt"),
            "all_gather_perf",
            (0, 0),
            Some("none"),
            -1,
            (349.17, 364.91),
            118.126,
        ),
        (
            fixture!("s12_reduce_scatter_perf_2.19.6_h100x8.txt"),
            "reduce_scatter_perf",
            (0, 0),
            Some("sum"),
            -1,
            (341.91, 341.20),
            112.708,
        ),
        (
            fixture!("s13_alltoall_perf_2.19.6_h100x8.txt"),
            "alltoall_perf",
            (0, 0),
            Some("none"),
            -1,
            (330.34, 329.31),
            108.437,
        ),
        (
            fixture!("s14_broadcast_perf_2.19.6_h100x8.txt"),
            "broadcast_perf",
            (8, 2),
            Some("none"),
            0,
            (351.17, 333.25),
            113.414,
        ),
        (
            fixture!("s15_reduce_perf_2.19.6_h100x8.txt"),
            "reduce_perf",
            (8, 2),
            Some("sum"),
            0,
            (327.06, 340.91),
            109.489,
        ),
        (
            fixture!("s16_sendrecv_perf_2.19.6_h100x8.txt"),
            "sendrecv_perf",
            (8, 2),
            Some("sum"),
            -1,
            (317.37, 322.83),
            104.586,
        ),
        // hypercube prints an empty operation name: a blank field under `redop`.
        (
            fixture!("s17_hypercube_perf_2.19.6_h100x8.txt"),
            "hypercube_perf",
            (0, 0),
            None,
            -1,
            (313.15, 311.52),
            97.9108,
        ),
    ];
    for (text, coll, (size0, count0), redop, root, (oop, ip), avg) in cases {
        let r = ok(text);
        assert_eq!(r.collective.as_deref(), Some(coll));
        assert_eq!(r.tests_version.as_deref(), Some("2.19.6"));
        assert_eq!(r.nccl_version.as_deref(), Some("2.28.9"));
        assert_eq!(r.devices.len(), 8, "{coll}");
        assert_eq!(r.hosts(), vec!["dgx-a-01"]);
        assert_eq!(r.rows().count(), 15, "{coll}");
        let first = r.rows().next().unwrap();
        assert_eq!((first.size, first.count, first.dtype.as_str()), (size0, count0, "float"), "{coll}");
        for row in r.rows() {
            assert_eq!((row.redop.as_deref(), row.root), (redop, Some(root)), "{coll}");
            assert_eq!((row.out_of_place.wrong, row.in_place.wrong), (Some(0), Some(0)), "{coll}");
        }
        let l = last(&r);
        assert_eq!(l.size, 2_147_483_648, "{coll}");
        assert_eq!((l.out_of_place.busbw, l.in_place.busbw), (oop, ip), "{coll}");
        assert_eq!(r.largest(), Some((2_147_483_648, oop.max(ip))), "{coll}");
        assert_eq!(r.avg_busbw(), Some(avg), "{coll}");
        assert!(
            r.errors.is_empty() && !r.failed() && r.notes.is_empty(),
            "{coll}: {:?} {:?}",
            r.errors,
            r.notes
        );
    }
}

#[test]
fn every_data_type_and_operation_in_one_table() {
    let r = ok(fixture!("s20_all_reduce_perf_2.19.6_dall_oall_h100x8.txt"));
    assert_eq!(r.rows().count(), 216);
    let types = [
        "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16",
        "f8e4m3", "f8e5m2",
    ];
    let ops = ["sum", "prod", "max", "min", "avg", "mulsum"];
    let mut seen = std::collections::BTreeSet::new();
    for row in r.rows() {
        assert!(
            types.contains(&row.dtype.as_str()) && ops.contains(&row.redop.as_deref().unwrap()),
            "{row:?}"
        );
        seen.insert((row.dtype.clone(), row.redop.clone()));
    }
    assert_eq!(seen.len(), 72);
    let rows: Vec<&Row> = r.rows().collect();
    assert_eq!((rows[0].size, rows[0].count, rows[0].dtype.as_str()), (1_048_576, 1_048_576, "int8"));
    assert_eq!(rows[0].out_of_place, m(13.52, 77.54, 135.69, Some(0)));
    // uint64: 8-byte words, so a count of an eighth of the size.
    assert_eq!(
        (rows[99].dtype.as_str(), rows[99].redop.as_deref(), rows[99].count),
        ("uint64", Some("min"), 131_072)
    );
    assert_eq!(rows[99].busbw(), 134.18);
    let l = rows[215];
    assert_eq!((l.dtype.as_str(), l.redop.as_deref(), l.size), ("f8e5m2", Some("mulsum"), 67_108_864));
    assert_eq!(l.in_place, m(270.72, 247.89, 433.81, Some(0)));
    assert_eq!(r.avg_busbw(), Some(307.386));
    assert!(!r.failed());
}

#[test]
fn unchecked_run_reads_na_as_no_count() {
    let r = ok(fixture!("s21_all_gather_perf_2.19.6_c0_h100x8.txt"));
    assert_eq!(r.rows().count(), 10);
    assert!(r.rows().all(|row| row.out_of_place.wrong.is_none() && row.in_place.wrong.is_none()));
    assert_eq!(last(&r).out_of_place, m(2626.67, 408.79, 357.69, None));
    assert_eq!(r.largest(), Some((1_073_741_824, 357.69)));
    assert_eq!(r.wrong(), 0);
    assert!(!r.failed());
}

#[test]
fn per_iteration_columns_timestamps_and_memory_report() {
    let r = ok(fixture!("s22_reduce_scatter_perf_2.19.6_I1_S1_M1_h100x8.txt"));
    assert_eq!(r.rows().count(), 6);
    let first = r.rows().next().unwrap();
    assert_eq!(first.out_of_place, m(12.73, 82.35, 72.05, Some(0)));
    // The in-place section comes after the four per-iteration columns of the out-of-place one.
    assert_eq!(first.in_place, m(12.80, 81.94, 71.69, Some(0)));
    assert_eq!(last(&r).in_place, m(2873.56, 373.66, 326.95, Some(0)));
    assert_eq!(r.avg_busbw(), Some(253.969));
    assert!(r.errors.is_empty());
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(
        r.notes[0].contains("columns not read: i_min i_max i_p99 i_cv% i_min i_max i_p99 i_cv%"),
        "{}",
        r.notes[0]
    );
}

#[test]
fn cputime_timestamps_and_a_wrong_count_in_place() {
    let r = parse(fixture!("s23_all_reduce_perf_2.19.6_C1_S1_wrong_h100x8.txt").as_bytes()).unwrap();
    assert_eq!(r.rows().count(), 5);
    let row = r.rows().find(|row| row.size == 67_108_864).unwrap();
    assert_eq!(row.out_of_place, m(272.34, 246.42, 431.24, Some(0)));
    assert_eq!(row.in_place, m(263.54, 254.64, 445.62, Some(3)));
    assert_eq!(r.wrong(), 3 + 1, "3 wrong elements and the footer's 1 out-of-bounds test");
    assert!(r.failed());
    assert_eq!(r.errors.len(), 2, "{:?}", r.errors);
    assert!(r.errors[0].contains("3 wrong value(s) at 67108864 bytes"), "{}", r.errors[0]);
    assert!(r.errors[1].contains("out of bounds values: 1 FAILED"), "{}", r.errors[1]);
}

#[test]
fn forty_nodes_of_eight() {
    let r = ok(fixture!("s30_all_reduce_perf_2.19.6_40x8_h100.txt"));
    assert_eq!(r.devices.len(), 320);
    let hosts = r.hosts();
    assert_eq!(hosts.len(), 40);
    assert_eq!((hosts[0], hosts[39]), ("gpu-001", "gpu-040"));
    let d = &r.devices[317];
    assert_eq!((d.rank, d.host.as_str(), d.device, d.bus_id.as_str()), (317, "gpu-040", 5, "0000:ab:00"));
    assert_eq!(r.nccl_version.as_deref(), Some("2.28.9"), "the library code of the version line comes first");
    assert_eq!(r.rows().count(), 32);
    assert_eq!(last(&r).size, 17_179_869_184);
    assert_eq!(last(&r).out_of_place, m(88198.9, 194.79, 388.35, Some(0)));
    assert_eq!(r.largest(), Some((17_179_869_184, 388.35)));
    assert_eq!(r.avg_busbw(), Some(145.909));
    assert!(!r.failed());
}

#[test]
fn layout_of_2_13_to_2_17() {
    let r = ok(fixture!("s40_alltoall_perf_2.16.9_2x8_h100.txt"));
    assert_eq!((r.devices.len(), r.rows().count()), (16, 11));
    assert_eq!(r.hosts(), vec!["node-a", "node-b"]);
    assert_eq!(last(&r).redop.as_deref(), Some("none"));
    assert_eq!(last(&r).out_of_place, m(5460.0, 196.66, 184.36, Some(0)));
    assert_eq!(r.avg_busbw(), Some(70.531));

    let r = ok(fixture!("s41_hypercube_perf_2.16.9_2x8_h100.txt"));
    assert_eq!(r.rows().count(), 11);
    assert!(r.rows().all(|row| row.redop.is_none() && row.root == Some(-1)));
    assert_eq!(last(&r).in_place, m(5809.0, 173.29, 173.29, Some(0)));

    // One GPU: in-place bandwidths overflow `%6.2f`, pushing later columns right.
    let r = ok(fixture!("s42_sendrecv_perf_2.16.9_h200x1.txt"));
    assert_eq!(r.rows().count(), 4);
    assert_eq!(last(&r).in_place, m(0.31, 1727485.87, 1727485.87, Some(0)));
    assert_eq!(r.avg_busbw(), Some(248105.0));
}

#[test]
fn layouts_before_2_13_name_only_their_columns() {
    // all_gather: size count type, no redop, no root; `error` instead of `#wrong`.
    let r = ok(fixture!("s50_all_gather_perf_2.11.0_h100x8.txt"));
    assert_eq!((r.devices.len(), r.rows().count()), (8, 20));
    assert_eq!(r.devices[3].group, None);
    assert_eq!(r.devices[3].bus_id, "0x5d");
    let l = last(&r);
    assert_eq!(
        (l.size, l.count, l.dtype.as_str(), l.redop.as_deref(), l.root),
        (268_435_456, 16_777_216, "half", None, None)
    );
    assert_eq!(l.out_of_place, Measure { max_error: Some(0.0), ..m(808.2, 332.14, 290.63, None) });
    assert_eq!(r.avg_busbw(), Some(103.992));
    // broadcast: a root and no redop.
    let r = ok(fixture!("s51_broadcast_perf_2.11.0_h100x8.txt"));
    assert!(r.rows().all(|row| row.redop.is_none() && row.root == Some(0)));
    assert_eq!(last(&r).in_place, Measure { max_error: Some(0.0), ..m(920.8, 291.54, 291.54, None) });
    // reduce: both.
    let r = ok(fixture!("s52_reduce_perf_2.11.0_h100x8.txt"));
    assert!(r.rows().all(|row| row.redop.as_deref() == Some("sum") && row.root == Some(0)));
    assert_eq!(r.largest(), Some((268_435_456, 293.13)));
    // all_reduce: a redop and no root; two operations and two types in one table.
    let r = ok(fixture!("s53_all_reduce_perf_2.11.0_h100x8.txt"));
    assert_eq!(r.rows().count(), 40);
    assert!(r.rows().all(|row| row.root.is_none()));
    assert_eq!(r.rows().filter(|row| row.redop.as_deref() == Some("max")).count(), 20);
    assert_eq!(r.largest(), Some((268_435_456, 301.15)));
    assert_eq!(r.wrong(), 0);
    assert!(!r.failed());
}

#[test]
fn a_large_error_before_2_13_is_kept_and_judged_by_the_footer() {
    let text = fixture!("s52_reduce_perf_2.11.0_h100x8.txt")
        .replacen("0e+00", "2e+00", 1)
        .replace("# Out of bounds values : 0 OK", "# Out of bounds values : 1 FAILED");
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.rows().next().unwrap().out_of_place.max_error, Some(2.0));
    assert_eq!(r.wrong(), 1);
    assert!(r.failed());
}

/// A header whose two sections differ (`#wrong` in one only) is read section by section.
#[test]
fn wrong_column_in_one_section_only() {
    let text = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw\n\
                \x20  1048576        262144     float     sum      -1    14.05   74.65  130.63       2    14.91   70.32  123.05\n\
                # Out of bounds values : 1 FAILED\n# Avg bus bandwidth    : 126.84\n";
    let r = parse(text.as_bytes()).unwrap();
    let row = r.rows().next().unwrap();
    assert_eq!(row.out_of_place, m(14.05, 74.65, 130.63, Some(2)));
    assert_eq!(row.in_place, m(14.91, 70.32, 123.05, None));
    assert_eq!(r.wrong(), 3);
    // And the other way round.
    let text = "#  size count type redop root time algbw busbw time algbw busbw #wrong\n\
                1048576 262144 float sum -1 14.05 74.65 130.63 14.91 70.32 123.05 0\n\
                # Avg bus bandwidth    : 126.84\n";
    let row = parse(text.as_bytes()).unwrap().rows().next().unwrap().clone();
    assert_eq!(row.out_of_place, m(14.05, 74.65, 130.63, None));
    assert_eq!(row.in_place, m(14.91, 70.32, 123.05, Some(0)));
}

/// Extra trailing columns of a later version are skipped by name; missing ones stay `None`.
#[test]
fn unknown_trailing_columns_are_skipped_by_name() {
    let text = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong gpu_temp host\n\
                8 2 float sum -1 1.0 0.10 0.20 0 1.5 0.30 0.40 0 61 dgx-a-01\n# Avg bus bandwidth : 0.3\n";
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.rows().next().unwrap().in_place, m(1.5, 0.30, 0.40, Some(0)));
    assert!(r.notes[0].contains("columns not read: gpu_temp host"), "{:?}", r.notes);
}

#[test]
fn a_row_that_disagrees_with_its_header_names_the_line_and_both_counts() {
    let text = fixture!("s10_all_reduce_perf_2.19.6_h100x8.txt");
    let at = text.lines().position(|l| l.starts_with("      131072")).unwrap();
    // One column too many.
    let bad =
        text.replace("      131072         32768     float", "      131072         32768     float   float");
    let e = parse(bad.as_bytes()).unwrap_err();
    assert_eq!((e.kind.clone(), e.line), (ParseErrorKind::Garbled, at + 1), "{e}");
    assert!(
        e.detail.contains("the row has 14 columns where its column header (line 16) calls for 13"),
        "{}",
        e.detail
    );
    assert_eq!(e.partial.rows().count(), 7);
    // A value missing in the middle (not a blank text column): garbled, not truncated.
    let bad = text.replace(
        "      131072         32768     float     sum      -1     9.96",
        "      131072         32768     float     sum      -1",
    );
    let e = parse(bad.as_bytes()).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Garbled);
    assert!(
        e.detail.contains("the row has 12 columns where its column header (line 16) calls for 13"),
        "{}",
        e.detail
    );
    // A blank `redop` where the header has it is allowed only under the `redop` name: a blank
    // `type` is a missing column.
    let bad = text.replace(
        "      131072         32768     float     sum",
        "      131072         32768               sum",
    );
    let e = parse(bad.as_bytes()).unwrap_err();
    assert!(e.detail.contains("12 columns"), "{}", e.detail);
    // The 2.11 all_gather layout read under a 2.19 header.
    let bad = text.replace(
        "      131072         32768     float     sum      -1",
        "      131072         32768     float",
    );
    assert!(parse(bad.as_bytes()).unwrap_err().detail.contains("11 columns"));
}

#[test]
fn a_row_cut_at_the_end_is_truncated_with_both_counts() {
    let text = fixture!("s22_reduce_scatter_perf_2.19.6_I1_S1_M1_h100x8.txt");
    let cut = text.find("   268435456").unwrap() + 100;
    let e = parse(&text.as_bytes()[..cut]).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Truncated, "{e}");
    assert!(e.detail.contains("where its column header (line 17) calls for 23"), "{}", e.detail);
    assert_eq!(e.partial.rows().count(), 4);
}

#[test]
fn rows_without_a_header_use_the_2_13_layout_and_say_so() {
    let e = parse(b"1024 32 float 12.58 0.08 0.07 0e+00 12.26 0.08 0.07 0e+00\n# Avg bus bandwidth : 0.07\n")
        .unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Garbled);
    assert!(
        e.detail
            .contains("the row has 11 columns where nccl-tests 2.13 and later print 13 (no column header"),
        "{}",
        e.detail
    );
}

#[test]
fn headers_that_cannot_be_read_are_errors_at_their_line() {
    let cases = [
        ("#  size count type time algbw busbw\n", "has no in-place time column"),
        ("#  size count type time algbw time algbw busbw\n", "has no out-of-place busbw column"),
        ("#  size count type algbw time algbw busbw time algbw busbw\n", "names algbw before any time"),
        ("#  size count type time algbw busbw time algbw busbw time\n", "names a time three times"),
        ("#  size size count type time algbw busbw time algbw busbw\n", "names size twice"),
        ("#  size type time algbw busbw time algbw busbw\n", "has no count column"),
    ];
    for (head, want) in cases {
        let text = format!("# nThread 1\n{head}8 2 float 1 1 1 1 1 1\n");
        let e = parse(text.as_bytes()).unwrap_err();
        assert_eq!((e.kind.clone(), e.line), (ParseErrorKind::Garbled, 2), "{head}");
        assert!(e.detail.contains(want), "{head}: {}", e.detail);
    }
}

#[test]
fn a_later_header_replaces_the_earlier_one() {
    // An old all_gather log and a new all_reduce log concatenated: each read by its own header.
    let text = format!(
        "{}{}",
        fixture!("s50_all_gather_perf_2.11.0_h100x8.txt"),
        fixture!("s10_all_reduce_perf_2.19.6_h100x8.txt")
    );
    let r = parse(text.as_bytes()).unwrap();
    assert_eq!(r.sweeps.len(), 2);
    assert_eq!((r.sweeps[0].rows.len(), r.sweeps[1].rows.len()), (20, 15));
    assert_eq!(r.sweeps[0].rows[0].root, None);
    assert_eq!(r.sweeps[1].rows[0].root, Some(-1));
    assert_eq!(r.largest(), Some((2_147_483_648, 467.61)));
}

#[test]
fn every_fixture_survives_crlf_and_every_cut() {
    for text in [
        fixture!("s17_hypercube_perf_2.19.6_h100x8.txt"),
        fixture!("s22_reduce_scatter_perf_2.19.6_I1_S1_M1_h100x8.txt"),
        fixture!("s51_broadcast_perf_2.11.0_h100x8.txt"),
    ] {
        assert_eq!(parse(text.replace('\n', "\r\n").as_bytes()).unwrap(), parse(text.as_bytes()).unwrap());
        for cut in 0..text.len() {
            // Never a panic; a cut inside the rows keeps the rows before it.
            if let Err(e) = parse(&text.as_bytes()[..cut]) {
                assert!(e.line <= text[..cut].lines().count(), "{e}");
            }
        }
    }
}

#[test]
fn an_empty_operation_is_found_without_the_header_positions() {
    // A hypercube log pasted with its spacing collapsed: no blank field to see under `redop`.
    let text: String = fixture!("s17_hypercube_perf_2.19.6_h100x8.txt")
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") + "\n")
        .collect();
    let r = ok(&text);
    assert_eq!(r.rows().count(), 15);
    assert!(r.rows().all(|row| row.redop.is_none() && row.root == Some(-1)));
    assert_eq!(last(&r).in_place, m(6031.96, 311.52, 311.52, Some(0)));
    // A word short elsewhere is still an error.
    let e = parse(b"8 2 float sum 1.0 0.1 0.1 0 1.0 0.1 0.1 0\n# Avg bus bandwidth : 0.1\n").unwrap_err();
    assert!(e.detail.contains("the row has 12 columns"), "{}", e.detail);
}

/// Runs recorded before the parser read headers (`redop` a string, `root` a number, no
/// `max_error`) still load from the run store.
#[test]
fn records_of_the_positional_parser_still_load() {
    let old = r#"{"size":8,"count":2,"dtype":"float","redop":"sum","root":-1,
        "out_of_place":{"time_us":1.0,"algbw":0.5,"busbw":0.9,"wrong":0},
        "in_place":{"time_us":1.1,"algbw":0.4,"busbw":0.8,"wrong":null}}"#;
    let row: Row = serde_json::from_str(old).unwrap();
    assert_eq!((row.redop.as_deref(), row.root), (Some("sum"), Some(-1)));
    assert_eq!(row.out_of_place, m(1.0, 0.5, 0.9, Some(0)));
    assert_eq!(row.in_place.wrong, None);
    // And what is written now has no `max_error` unless the column was there.
    let json = serde_json::to_string(&row).unwrap();
    assert!(!json.contains("max_error"), "{json}");
}
