//! Opening a store's SQLite file, the same way for every store (usage ledger, timeline,
//! acknowledgements): the directory created, WAL with `synchronous = NORMAL`, a busy timeout,
//! and the schema brought to `migrations.len()` through `user_version`, one step per
//! migration, in one immediate transaction (two consoles starting at once migrate once).

use rusqlite::{Connection, Transaction, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// Why a store's file could not be opened; each store words it for its own error type.
#[derive(Debug)]
pub enum OpenError {
    /// The file's directory could not be created (the I/O error's text).
    Dir(String),
    /// SQLite refused: damaged file, not a database, locked, I/O.
    Sqlite(rusqlite::Error),
    /// The file's schema version is newer than this build reads: (the file's, ours).
    TooNew(i64, i64),
}

/// The schema version `migrations` bring a file to.
pub const fn version_of(migrations: &[&str]) -> i64 {
    migrations.len() as i64
}

/// Opens (creating) `path` and migrates it to [`version_of`]`(migrations)`. `on_migrate` runs
/// inside the migrating transaction after the last step (a store's one-time rows); it does
/// not run when the file was already current.
pub fn open(
    path: &Path,
    busy: Duration,
    migrations: &[&str],
    on_migrate: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<()>,
) -> Result<Connection, OpenError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| OpenError::Dir(format!("cannot create {}: {e}", dir.display())))?;
    }
    let mut conn = Connection::open(path).map_err(OpenError::Sqlite)?;
    conn.busy_timeout(busy).map_err(OpenError::Sqlite)?;
    // The first statement that reads the file: a damaged one fails here.
    let _: String =
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(OpenError::Sqlite)?;
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(OpenError::Sqlite)?;
    let want = version_of(migrations);
    let current = user_version(&conn).map_err(OpenError::Sqlite)?;
    if current > want {
        return Err(OpenError::TooNew(current, want));
    }
    if current < want {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(OpenError::Sqlite)?;
        // Read again under the write lock: another console may have migrated meanwhile.
        let mut v = user_version(&tx).map_err(OpenError::Sqlite)?;
        if v > want {
            return Err(OpenError::TooNew(v, want));
        }
        let migrated = v < want;
        while v < want {
            // v is in 0..want here: a valid index.
            let step = migrations[usize::try_from(v).unwrap_or_default()];
            tx.execute_batch(step).map_err(OpenError::Sqlite)?;
            v += 1;
            tx.pragma_update(None, "user_version", v).map_err(OpenError::Sqlite)?;
        }
        if migrated {
            on_migrate(&tx).map_err(OpenError::Sqlite)?;
        }
        tx.commit().map_err(OpenError::Sqlite)?;
    }
    Ok(conn)
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEPS: &[&str] = &["CREATE TABLE a (x INTEGER);", "ALTER TABLE a ADD COLUMN y TEXT;"];

    #[test]
    fn migrates_step_by_step_once_and_refuses_a_newer_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/s.sqlite");
        let mut ran = 0;
        let c = open(&p, Duration::from_secs(1), &STEPS[..1], |_| {
            ran += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(user_version(&c).unwrap(), 1);
        drop(c);
        // The next version adds one step; opening again at that version runs nothing.
        for _ in 0..2 {
            let c = open(&p, Duration::from_secs(1), STEPS, |_| {
                ran += 1;
                Ok(())
            })
            .unwrap();
            c.execute("INSERT INTO a (x, y) VALUES (1, 'b')", []).unwrap();
            assert_eq!(user_version(&c).unwrap(), 2);
        }
        assert_eq!(ran, 2, "on_migrate runs once per migration, not per open");
        let mode: String =
            Connection::open(&p).unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        match open(&p, Duration::from_secs(1), &STEPS[..1], |_| Ok(())) {
            Err(OpenError::TooNew(2, 1)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_sqlite_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("junk.sqlite");
        std::fs::write(&p, vec![0x5a; 8192]).unwrap();
        match open(&p, Duration::from_secs(1), STEPS, |_| Ok(())) {
            Err(OpenError::Sqlite(e)) => {
                assert_eq!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::NotADatabase), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }
}
