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
    // 400 records and a signed checkpoint every 100 (the checkpoint counted).
    assert_eq!(verify(&log.path).unwrap(), VerifyReport { records: 404, problem: None });
    let recs = log.read_all().unwrap();
    let cps: Vec<u64> = recs.iter().filter(|r| r.phase == Phase::Checkpoint).map(|r| r.seq).collect();
    assert_eq!(cps, [100, 200, 300, 400]);
    // The witness journal saw every head, in order.
    let heads = witness::read_heads(&[witness::journal_path(&log.path)]).unwrap();
    assert_eq!(heads.last().map(|h| h.seq), Some(403));
    assert!(heads.windows(2).all(|w| w[0].seq < w[1].seq));
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

fn full(log: &AuditLog, pubkey: Option<ed25519_dalek::VerifyingKey>) -> Report {
    let heads = witness::read_heads(&[witness::journal_path(&log.path)]).unwrap();
    verify_full(&log.path, &VerifyOptions { heads, pubkey, now: 0 }).unwrap()
}

#[test]
fn a_cut_tail_is_named_by_the_witness_journal() {
    let (_d, log) = log_with(10);
    assert!(full(&log, None).intact());
    let l = lines(&log);
    write(&log, &l[..7]);
    // The chain alone cannot tell.
    assert_eq!(verify(&log.path).unwrap().problem, None);
    let r = full(&log, None);
    assert_eq!(r.problem, Some(Problem::Missing { first_seq: 7, last_seq: 9 }));
    assert_eq!(r.witness.last, Some(9));
    assert!(r.problem.unwrap().to_string().starts_with("records 7, 8, 9 are missing from the end"));
}

#[test]
fn a_rewritten_tail_is_not_the_one_the_witness_saw() {
    let (_d, log) = log_with(6);
    let l = lines(&log);
    write(&log, &l[..4]);
    // Two different records appended where 4 and 5 stood: a valid chain, but not the
    // witnessed one (the journal keeps the old heads too).
    log.append(Phase::Intent, &entry(40)).unwrap();
    log.append(Phase::Outcome, &entry(40)).unwrap();
    assert_eq!(verify(&log.path).unwrap().problem, None);
    assert_eq!(full(&log, None).problem, Some(Problem::Unwitnessed { line: 5, seq: 4 }));
}

#[test]
fn a_torn_last_line_is_an_incomplete_write_unless_the_witness_saw_it_whole() {
    let (_d, log) = log_with(10);
    let l = lines(&log);
    // A crash while appending record 10: never witnessed.
    let mut text: String = l.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(&l[9][..40]);
    std::fs::write(&log.path, &text).unwrap();
    let r = full(&log, None);
    assert_eq!((r.problem.clone(), r.incomplete_write, r.records), (None, Some(11), 10));
    assert!(!r.intact());
    // Record 9 cut in half after it was witnessed: tampering.
    let text: String = l[..9].iter().map(|l| format!("{l}\n")).collect::<String>() + &l[9][..40];
    std::fs::write(&log.path, &text).unwrap();
    let r = full(&log, None);
    assert_eq!((r.problem, r.incomplete_write), (Some(Problem::Missing { first_seq: 9, last_seq: 9 }), None));
}

#[test]
fn checkpoints_verify_with_the_public_key_alone() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl")).with_checkpoint_every(4);
    for i in 0..9 {
        log.append(Phase::Event, &entry(i)).unwrap();
    }
    let public = sign::parse_public(&log.public_key().unwrap()).unwrap();
    // A copy elsewhere, without the key or the journal.
    let copy = dir.path().join("copy.jsonl");
    std::fs::copy(&log.path, &copy).unwrap();
    let check =
        |p: &Path| verify_full(p, &VerifyOptions { pubkey: Some(public), ..Default::default() }).unwrap();
    let r = check(&copy);
    assert_eq!((r.problem.clone(), r.signed), (None, Some((2, Some(8)))), "{r:?}");
    // 0..=3, checkpoint 4, 5..=7, checkpoint 8, then 9 and 10 after it.
    assert_eq!(r.warnings, [Warning::UnsignedTail { first_seq: 9, last_seq: 10 }]);
    // A forger edits record 2 and re-hashes the whole chain: the chain is valid again, the
    // signature is not.
    let mut recs: Vec<Record> =
        std::fs::read_to_string(&copy).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    recs[2].reason = Some("nothing happened".into());
    let mut prev = GENESIS.to_string();
    for r in &mut recs {
        r.prev_hash = prev.clone();
        r.hash = r.compute_hash();
        prev = r.hash.clone();
    }
    let text: String = recs.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
    std::fs::write(&copy, text).unwrap();
    assert_eq!(verify(&copy).unwrap().problem, None);
    assert_eq!(check(&copy).problem, Some(Problem::BadCheckpoint { line: 5, seq: 4 }));
    // Another key verifies nothing.
    let other = sign::load_or_create(&dir.path().join("other.key")).unwrap().verifying_key();
    let r = verify_full(&log.path, &VerifyOptions { pubkey: Some(other), ..Default::default() }).unwrap();
    assert_eq!(r.problem, Some(Problem::BadCheckpoint { line: 5, seq: 4 }));
}

#[test]
fn an_explicit_checkpoint_signs_the_head_once() {
    let (_d, log) = log_with(3);
    let c = log.checkpoint().unwrap().expect("signed");
    assert_eq!((c.seq, c.phase), (3, Phase::Checkpoint));
    assert!(log.checkpoint().unwrap().is_none(), "already ends with a checkpoint");
    let empty = AuditLog::new(_d.path().join("empty.jsonl"));
    assert!(empty.checkpoint().unwrap().is_none());
}

#[test]
fn intents_without_outcomes_and_open_break_glass_are_warnings() {
    let (_d, log) = log_with(0);
    for i in 0..3 {
        log.append(Phase::Intent, &entry(i)).unwrap();
        log.append(Phase::Outcome, &entry(i)).unwrap();
    }
    // An action interrupted after its intent.
    log.append(Phase::Intent, &entry(7)).unwrap();
    let start = Entry {
        action: BREAK_GLASS_START.into(),
        ticket: Some("INC-9".into()),
        break_glass: Some("s-1".into()),
        op_id: "s-1".into(),
        params: [("until".to_string(), "100".to_string())].into_iter().collect(),
        ..Entry::default()
    };
    log.append(Phase::Event, &start).unwrap();
    let heads = witness::read_heads(&[witness::journal_path(&log.path)]).unwrap();
    let at =
        |now| verify_full(&log.path, &VerifyOptions { heads: heads.clone(), pubkey: None, now }).unwrap();
    let r = at(1000);
    assert!(r.intact());
    assert_eq!(
        r.warnings,
        [
            Warning::NoOutcome { seq: 6, action: "drain".into(), op_id: "op-7".into() },
            Warning::BreakGlassOpen {
                seq: 7,
                session: "s-1".into(),
                ticket: Some("INC-9".into()),
                open: false
            },
        ]
    );
    assert!(r.warnings[1].to_string().contains("break-glass session s-1 (ticket INC-9) has no end record"));
    assert!(matches!(at(50).warnings[1], Warning::BreakGlassOpen { open: true, .. }));
    let open = open_sessions(&log.read_all().unwrap());
    assert_eq!((open.len(), open[0].until, open[0].ticket.as_deref()), (1, Some(100), Some("INC-9")));
    log.append(Phase::Event, &Entry { action: BREAK_GLASS_END.into(), ..start }).unwrap();
    assert_eq!(full(&log, None).warnings.len(), 1);
    assert!(open_sessions(&log.read_all().unwrap()).is_empty());
}

/// The default syslog witness: an RFC 5424 datagram per append, to a socket a test can bind.
#[test]
fn heads_reach_a_syslog_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("log.sock");
    let sink = std::os::unix::net::UnixDatagram::bind(&sock).unwrap();
    sink.set_nonblocking(true).unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"))
        .with_witness(Witness { syslog: Some(sock.clone()), ..Witness::default() });
    for i in 0..3 {
        log.append(Phase::Event, &entry(i)).unwrap();
    }
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = sink.recv(&mut buf) {
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
        got.push('\n');
    }
    let heads = witness::parse_heads(&got);
    assert_eq!(heads.iter().map(|h| h.seq).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(got.lines().all(|l| l.starts_with("<85>1 ")), "{got}");
    // A sink that is gone does not fail the append.
    drop(sink);
    assert!(log.append(Phase::Event, &entry(9)).is_ok());
}

#[test]
fn a_witness_command_gets_the_head_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("heads.txt");
    let log = AuditLog::new(dir.path().join("audit.jsonl")).with_witness(Witness {
        journal: false,
        command: vec!["sh".into(), "-c".into(), format!("cat >> {}", out.display())],
        ..Witness::default()
    });
    log.append(Phase::Event, &entry(0)).unwrap();
    log.append(Phase::Event, &entry(1)).unwrap();
    let heads = witness::read_heads(&[out]).unwrap();
    assert_eq!(heads.iter().map(|h| h.seq).collect::<Vec<_>>(), [0, 1]);
    assert!(!witness::journal_path(&log.path).exists());
}
