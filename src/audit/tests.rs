use super::*;

fn entry(i: usize) -> Entry {
    Entry {
        cluster: "sim".into(),
        action: "drain".into(),
        targets: vec![format!("gpu-{i:03}")],
        reason: Some("RMA".into()),
        op_id: format!("op-{i}"),
        ..Entry::default()
    }
}

fn log_with(n: usize) -> (tempfile::TempDir, AuditLog) {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    for i in 0..n {
        log.append(if i % 2 == 0 { Phase::Intent } else { Phase::Outcome }, &entry(i)).unwrap();
    }
    (dir, log)
}

fn lines(log: &AuditLog) -> Vec<String> {
    std::fs::read_to_string(&log.path).unwrap().lines().map(String::from).collect()
}

fn write(log: &AuditLog, lines: &[String]) {
    std::fs::write(&log.path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

#[test]
fn an_untouched_log_verifies() {
    let (_d, log) = log_with(10);
    let r = verify(&log.path).unwrap();
    assert_eq!(r, VerifyReport { records: 10, problem: None });
    let recs = log.read_all().unwrap();
    assert_eq!(recs[0].prev_hash, GENESIS);
    assert!(recs.windows(2).all(|w| w[1].prev_hash == w[0].hash && w[1].seq == w[0].seq + 1));
}

#[test]
fn an_edited_field_is_named() {
    let (_d, log) = log_with(10);
    let mut l = lines(&log);
    l[4] = l[4].replace("\"RMA\"", "\"nothing to see\"");
    write(&log, &l);
    assert_eq!(verify(&log.path).unwrap().problem, Some(Problem::Edited { line: 5, seq: 4 }));
}

#[test]
fn a_removed_record_is_named() {
    let (_d, log) = log_with(10);
    let mut l = lines(&log);
    l.remove(6);
    write(&log, &l);
    assert_eq!(
        verify(&log.path).unwrap().problem,
        Some(Problem::Removed { line: 7, first_seq: 6, last_seq: 6 })
    );
}

#[test]
fn an_inserted_record_is_named_even_with_a_valid_hash() {
    let (_d, log) = log_with(10);
    let mut l = lines(&log);
    // A forger copies record 3's chain position and recomputes the hash.
    let mut forged: Record = serde_json::from_str(&l[3]).unwrap();
    forged.reason = Some("forged".into());
    forged.hash = forged.compute_hash();
    l.insert(3, serde_json::to_string(&forged).unwrap());
    write(&log, &l);
    assert_eq!(verify(&log.path).unwrap().problem, Some(Problem::Inserted { line: 5, seq: 3 }));
    // Without a valid hash it is named where it stands.
    let (_d2, log2) = log_with(10);
    let mut l = lines(&log2);
    l.insert(3, l[3].replace("\"RMA\"", "\"x\""));
    write(&log2, &l);
    assert_eq!(verify(&log2.path).unwrap().problem, Some(Problem::Inserted { line: 4, seq: 3 }));
}

#[test]
fn swapped_records_are_named() {
    let (_d, log) = log_with(10);
    let mut l = lines(&log);
    l.swap(2, 3);
    write(&log, &l);
    assert_eq!(
        verify(&log.path).unwrap().problem,
        Some(Problem::Reordered { line: 3, seq: 3, expected_seq: 2 })
    );
}

#[test]
fn a_truncated_tail_is_named_and_refuses_appends() {
    let (_d, log) = log_with(10);
    let text = std::fs::read_to_string(&log.path).unwrap();
    std::fs::write(&log.path, &text[..text.len() - 20]).unwrap();
    assert_eq!(verify(&log.path).unwrap().problem, Some(Problem::TruncatedTail { line: 10 }));
    let err = log.append(Phase::Intent, &entry(99)).unwrap_err();
    assert!(matches!(err, AuditError::PartialTail { line: 10, .. }), "{err}");
}

#[test]
fn secrets_never_reach_the_log() {
    let (_d, log) = log_with(0);
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJyb290In0.c2lnbmF0dXJlLXZhbHVl";
    let mut e = entry(1);
    e.reason = Some(format!("pasted {jwt} by mistake"));
    e.params.insert("slurm_token".into(), jwt.into());
    e.params.insert("grace".into(), "30s".into());
    log.append(Phase::Intent, &e).unwrap();
    let text = std::fs::read_to_string(&log.path).unwrap();
    assert!(!text.contains(jwt));
    assert!(!text.contains("slurm_token"));
    assert!(text.contains("grace"));
    assert!(verify(&log.path).unwrap().problem.is_none());
}

#[test]
fn an_unwritable_path_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    // A path under a regular file cannot be created.
    let log = AuditLog::new(blocker.join("audit.jsonl"));
    assert!(log.append(Phase::Intent, &entry(0)).is_err());
}

#[test]
fn concurrent_appenders_keep_one_chain() {
    let (_d, log) = log_with(0);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    log.append(Phase::Event, &entry(t * 1000 + i)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(verify(&log.path).unwrap(), VerifyReport { records: 400, problem: None });
}

/// A slow append (here: another process-like holder of the log's lock) never stalls the
/// runtime: on a one-thread runtime, a ticking task keeps running while the append waits on
/// the blocking pool, and the record lands once the lock is released.
#[test]
fn async_appends_and_reads_wait_off_the_runtime_thread() {
    let (_d, log) = log_with(2);
    let holder = std::fs::OpenOptions::new().read(true).append(true).open(&log.path).unwrap();
    holder.lock().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let t = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        });
        let l = log.clone();
        let append = tokio::spawn(async move { l.append_async(Phase::Intent, &entry(9)).await });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!append.is_finished(), "the append waits for the lock");
        assert!(ticks.load(std::sync::atomic::Ordering::Relaxed) >= 5, "the runtime thread kept running");
        holder.unlock().unwrap();
        let rec = append.await.unwrap().unwrap();
        assert_eq!(rec.seq, 2);
        assert_eq!(log.tail_async(1).await.unwrap()[0].op_id, "op-9");
        ticker.abort();
    });
}
