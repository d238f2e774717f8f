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
//! past [`BACKSTOP_BYTES`], which keeps the WAL bounded should this thread
//! ever fall behind. Every 50 ms rather than 200: each checkpoint is
//! smaller (the sends' p99 in short runs: 20-24 ms, against 36-41 ms at
//! 200 ms; full runs still saw 29-55 ms, so not all of the tail was the
//! checkpoint).
//!
//! # Closing the WAL out
//!
//! SQLite starts the WAL over from its beginning only when a writer begins
//! with every page of it copied into the file. Under a steady stream of
//! commits a passive checkpoint never gets there: by the time it has copied
//! what it saw, the writers have added more. So the WAL grew until a
//! commit passed the backstop and checkpointed all of it itself, holding
//! up every writer queued behind it: every 0.7 s under the benchmark's
//! sends, 40-80 ms each, which was the SQLite sends' whole p99
//! (`docs/performance.md`, "Changes from 610aeec"). Now, once the WAL
//! holds [`CLOSE_OUT_BYTES`], the thread catches up without any lock while
//! a pass leaves more than [`LEFT_FOR_THE_LOCK_BYTES`] of the pages it saw (a
//! passive pass nearly always copies all it saw, so this rarely runs: what
//! piles up is what the writers add while it syncs; counting that instead
//! did not shorten the last pass, `docs/performance.md`, "SQLite's sends
//! on a machine whose disk flushes slowly"), then takes the writers' turn
//! (the store's in-process writer lock),
//! ahead of every writer waiting for it (`turn`), for one last pass that
//! copies the few pages left. The next writer finds the
//! WAL all copied and starts it over. Readers still reading old pages can
//! keep a pass from copying everything: then the WAL is left as it is,
//! and the thread tries again at its next turn. The last pass holds the
//! writers for its two disk syncs (the WAL's new frames, then the file):
//! 31-46 ms on a disk whose syncs took 15-60 ms under the sends' writes,
//! however few pages were left to it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use diesel::sql_types::Integer;
use diesel::{Connection as _, QueryableByName, RunQueryDsl as _, SqliteConnection};

use crate::turn::WriterTurn;

/// `bytes` of a file whose pages are `page_size` bytes, in pages (at
/// least 1).
pub(crate) fn pages(bytes: u64, page_size: u32) -> i32 {
    let pages = bytes / u64::from(page_size.max(512));
    i32::try_from(pages).unwrap_or(i32::MAX).max(1)
}

/// The page size of the database `conn` is on.
pub(crate) fn page_size(conn: &mut SqliteConnection) -> diesel::QueryResult<u32> {
    #[derive(QueryableByName)]
    struct PageSize {
        #[diesel(sql_type = Integer)]
        page_size: i32,
    }
    let row: PageSize = diesel::sql_query("PRAGMA page_size").get_result(conn)?;
    Ok(u32::try_from(row.page_size).unwrap_or(4096))
}

/// How often the thread checkpoints.
pub(crate) const EVERY: Duration = Duration::from_millis(50);

/// The WAL size past which a commit checkpoints itself (`PRAGMA
/// wal_autocheckpoint`, set in pages: [`pages`]; SQLite's default is 1,000
/// pages, ~4 MB with 4 KB pages): 16,000 pages of 4 KB, ~62.5 MB.
pub(crate) const BACKSTOP_BYTES: u64 = 16_000 * 4096;

/// The WAL size (16 MB) from which the thread closes it out. In bytes, as
/// every threshold here: a file made with other pages than SQLite's 4 KB
/// (by `sqlite3`, a restored copy, a `VACUUM` after `PRAGMA page_size`)
/// restarts its WAL after as much writing, not 4 times as often with 1 KB
/// pages, nor 16 times less with 64 KB.
const CLOSE_OUT_BYTES: u64 = 16 << 20;

/// Closing out: passes without the lock until at most this much (1 MB) is
/// left to copy, or [`CATCH_UP_PASSES`] have run.
const LEFT_FOR_THE_LOCK_BYTES: u64 = 1 << 20;
const CATCH_UP_PASSES: usize = 4;

/// Keeps the checkpoint thread of one store alive: the thread ends within
/// [`EVERY`] of the last clone of its store being dropped.
#[derive(Debug, Clone)]
pub(crate) struct Checkpointer {
    _alive: Arc<()>,
}

/// What one `PRAGMA wal_checkpoint` did: the WAL's size in pages, and how
/// many of them are now in the database file.
#[derive(QueryableByName, Debug)]
struct Pass {
    #[diesel(sql_type = Integer)]
    log: i32,
    #[diesel(sql_type = Integer)]
    checkpointed: i32,
}

impl Pass {
    fn left(&self) -> i32 {
        self.log - self.checkpointed
    }
}

fn pass(conn: &mut SqliteConnection) -> diesel::QueryResult<Pass> {
    diesel::sql_query("PRAGMA wal_checkpoint(PASSIVE)").get_result(conn)
}

/// One turn of the thread: a passive checkpoint and, past `close_out_pages`,
/// the catch-up and the last pass under `writers` (above).
fn turn(
    conn: &mut SqliteConnection,
    writers: &WriterTurn,
    close_out_pages: i32,
    left_for_the_lock: i32,
) -> diesel::QueryResult<()> {
    let mut last = pass(conn)?;
    // Even a pass that copied all it saw is followed by the commit of a
    // writer that was writing meanwhile: only a pass under the writers'
    // turn leaves the next writer a WAL all copied.
    if last.log < close_out_pages {
        return Ok(());
    }
    for _ in 0..CATCH_UP_PASSES {
        if last.left() <= left_for_the_lock {
            break;
        }
        last = pass(conn)?;
    }
    // Before any writer that asks meanwhile: the one writing now finishes,
    // then this pass runs (`turn`).
    let _turn = writers.take_first();
    pass(conn).map(drop)
}

impl Checkpointer {
    /// Starts checkpointing the database file at `path` every [`EVERY`],
    /// on a connection set up by `configure`; `writers` is the lock this
    /// process's writers hold while they write.
    pub(crate) fn start(
        path: &str,
        configure: fn(&mut SqliteConnection) -> diesel::QueryResult<()>,
        writers: Arc<WriterTurn>,
    ) -> anyhow::Result<Self> {
        Self::start_closing_at(path, configure, writers, None)
    }

    fn start_closing_at(
        path: &str,
        configure: fn(&mut SqliteConnection) -> diesel::QueryResult<()>,
        writers: Arc<WriterTurn>,
        close_out_pages: Option<i32>,
    ) -> anyhow::Result<Self> {
        let mut conn = SqliteConnection::establish(path)?;
        configure(&mut conn)?;
        let page_size = page_size(&mut conn)?;
        let close_out_pages = close_out_pages.unwrap_or(pages(CLOSE_OUT_BYTES, page_size));
        let left_for_the_lock = pages(LEFT_FOR_THE_LOCK_BYTES, page_size);
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
                    match turn(&mut conn, &writers, close_out_pages, left_for_the_lock) {
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
    use diesel::connection::SimpleConnection as _;

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
        let checkpoints =
            Checkpointer::start(&path, no_checkpoints, Arc::default()).expect("start");
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

    /// Under a steady stream of commits, each under the writers' lock as
    /// the group commit's, with no commit ever checkpointing: the thread
    /// closes the WAL out, so it starts over and its file stays a fraction
    /// of what was written. With passive checkpoints alone, it grew by all
    /// of it (each pass ends behind the writers).
    #[test]
    fn under_steady_writes_the_wal_starts_over() {
        let dir = std::env::temp_dir().join(format!("confab-ckpt-steady-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("db.sqlite");
        let wal = dir.join("db.sqlite-wal");
        let path = file.to_str().expect("utf-8").to_owned();
        let mut conn = SqliteConnection::establish(&path).expect("open");
        conn.batch_execute(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             PRAGMA synchronous = NORMAL; CREATE TABLE t (body TEXT);",
        )
        .expect("setup");
        let writers: Arc<WriterTurn> = Arc::default();
        let no_checkpoints = |_: &mut SqliteConnection| Ok(());
        // Closing out from 64 pages (256 KB) on.
        let checkpoints =
            Checkpointer::start_closing_at(&path, no_checkpoints, writers.clone(), Some(64))
                .expect("start");
        // At least 3,000 commits of a ~4 KB row (2 pages), for at least
        // 2 s (40 of the thread's turns).
        let started = std::time::Instant::now();
        let mut commits: u64 = 0;
        while commits < 3_000 || started.elapsed() < EVERY * 40 {
            let turn = writers.take();
            conn.batch_execute("INSERT INTO t SELECT hex(randomblob(2000));")
                .expect("insert");
            drop(turn);
            commits += 1;
            std::thread::sleep(Duration::from_micros(50));
        }
        // Each commit wrote one frame at least (a 4 KB page and its
        // 24-byte header): a WAL never started over holds them all.
        let at_least_written = commits * 4_120;
        let wal_bytes = file_len(&wal);
        assert!(
            wal_bytes * 4 < at_least_written,
            "the WAL grew to {wal_bytes} bytes for {commits} commits (at least {at_least_written} bytes)"
        );
        drop(checkpoints);
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
