//! WAL checkpoints off the writers' path.
//!
//! By default SQLite checkpoints inside a commit: the writer whose commit
//! takes the WAL past 1,000 pages copies them into the database file and
//! syncs it before it returns. Here that writer is the group commit's
//! (`group_commit`), so every writer queued behind it waited for a disk
//! sync: on a machine whose disk was now and then slow to sync, the sends'
//! p99 was 54-152 ms in some runs (115 ms, and 277 ms mixed with reads, in
//! a full one) against 19-24 ms in others (`docs/performance.md`). So a
//! thread of its own checkpoints every [`EVERY`] (`PASSIVE`: it never waits
//! for, nor blocks, a reader or a writer), and a commit checkpoints only
//! past [`BACKSTOP_PAGES`], which keeps the WAL bounded should this thread
//! ever fall behind. Every 50 ms rather than 200: each checkpoint is
//! smaller (the sends' p99 in short runs: 20-24 ms, against 36-41 ms at
//! 200 ms; full runs still saw 29-55 ms, so not all of the tail was the
//! checkpoint).

use std::sync::{Arc, Weak};
use std::time::Duration;

use diesel::connection::SimpleConnection as _;
use diesel::{Connection as _, SqliteConnection};

/// How often the thread checkpoints.
pub(super) const EVERY: Duration = Duration::from_millis(50);

/// The WAL size, in pages, past which a commit checkpoints itself
/// (`PRAGMA wal_autocheckpoint`; SQLite's default is 1,000, ~4 MB).
pub(super) const BACKSTOP_PAGES: u32 = 16_000;

/// Keeps the checkpoint thread of one store alive: the thread ends within
/// [`EVERY`] of the last clone of its store being dropped.
#[derive(Debug, Clone)]
pub(super) struct Checkpointer {
    _alive: Arc<()>,
}

impl Checkpointer {
    /// Starts checkpointing the database file at `path` every [`EVERY`],
    /// on a connection set up by `configure`.
    pub(super) fn start(
        path: &str,
        configure: fn(&mut SqliteConnection) -> diesel::QueryResult<()>,
    ) -> anyhow::Result<Self> {
        let mut conn = SqliteConnection::establish(path)?;
        configure(&mut conn)?;
        let alive = Arc::new(());
        let watch: Weak<()> = Arc::downgrade(&alive);
        std::thread::Builder::new()
            .name("sqlite-checkpoint".to_owned())
            .spawn(move || {
                let mut failing = false;
                loop {
                    std::thread::sleep(EVERY);
                    if watch.strong_count() == 0 {
                        return;
                    }
                    match conn.batch_execute("PRAGMA wal_checkpoint(PASSIVE);") {
                        Ok(()) => failing = false,
                        // Logged once per run of failures (a locked or
                        // vanished file): the backstop keeps the WAL
                        // bounded meanwhile.
                        Err(error) if !failing => {
                            failing = true;
                            tracing::warn!(%error, "SQLite checkpoint failed");
                        }
                        Err(_) => {}
                    }
                }
            })?;
        Ok(Self { _alive: alive })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_len(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }

    /// Pages committed to the WAL reach the database file without any
    /// commit checkpointing (the connection's backstop set out of reach),
    /// and the thread ends once its store is gone.
    #[test]
    fn the_thread_copies_the_wal_into_the_file_and_ends_with_its_store() {
        let dir = std::env::temp_dir().join(format!("confab-ckpt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("db.sqlite");
        let path = file.to_str().expect("utf-8").to_owned();
        let mut conn = SqliteConnection::establish(&path).expect("open");
        conn.batch_execute(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t (body TEXT);",
        )
        .expect("setup");
        let no_checkpoints = |_: &mut SqliteConnection| Ok(());
        let before = file_len(&file);
        let checkpoints = Checkpointer::start(&path, no_checkpoints).expect("start");
        // ~2 MB in the WAL, in 200 commits.
        for _ in 0..200 {
            conn.batch_execute("INSERT INTO t SELECT hex(randomblob(5000));")
                .expect("insert");
        }
        let deadline = std::time::Instant::now() + EVERY * 40;
        while file_len(&file) < before + 1_000_000 {
            assert!(
                std::time::Instant::now() < deadline,
                "the database file stayed at {} bytes",
                file_len(&file)
            );
            std::thread::sleep(EVERY / 2);
        }
        let watch = Arc::downgrade(&checkpoints._alive);
        drop(checkpoints);
        assert!(watch.upgrade().is_none());
        let named = || {
            std::fs::read_dir("/proc/self/task")
                .map(|tasks| {
                    tasks
                        .filter_map(|t| t.ok())
                        .filter(|t| {
                            std::fs::read_to_string(t.path().join("comm"))
                                .is_ok_and(|c| c.trim() == "sqlite-checkpoint")
                        })
                        .count()
                })
                .unwrap_or(0)
        };
        let deadline = std::time::Instant::now() + EVERY * 40;
        while cfg!(target_os = "linux") && named() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the thread outlived its store"
            );
            std::thread::sleep(EVERY / 2);
        }
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
