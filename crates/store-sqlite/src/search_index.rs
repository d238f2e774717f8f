//! Search's FTS5 index, kept off the writers' path.
//!
//! When every send wrote the index itself (a trigger of migration
//! `search`), each commit of the group commit wrote a new segment of the
//! FTS5 index, and FTS5 merged the segments as they piled up: sends ran
//! at 0.43x of their rate without the index (`docs/performance.md`,
//! "Search"). Since migration `search_backlog`, a write only
//! records the message's rowid in `messages_search_backlog` (a row in a
//! small table); a thread of the store moves the backlog into the index
//! every [`EVERY`], in batches of up to [`CHUNK`] rows, each batch in a
//! transaction of its own under the writers' turn. A batch writes one
//! segment for hundreds of messages instead of one for each commit.
//!
//! Nothing waits for it: a search reads the backlog besides the index
//! (`search::indexed`), in the same snapshot, so a message is found as soon
//! as it is committed, and an edit or a deletion shows at once. The
//! migration's triggers keep the rule that makes this exact: a message
//! with folded text is in the index, as its text is now, or in the
//! backlog, never both.

use std::sync::{Arc, Weak};
use std::time::Duration;

use diesel::connection::SimpleConnection as _;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sql_types::BigInt;
use diesel::{Connection as _, QueryResult, RunQueryDsl as _, SqliteConnection};

use crate::turn::WriterTurn;

/// How often the thread looks at the backlog. Under the benchmark's sends
/// (about 3,000 a second) that is a few hundred rows a batch.
pub(crate) const EVERY: Duration = Duration::from_millis(100);

/// At most this many rows are indexed per transaction: the writers wait
/// for one batch at a time (a backlog left by `confab migrate`'s folding
/// is worked through batch by batch, the writers' turn given back between
/// them).
pub(crate) const CHUNK: i64 = 2_000;

/// Moves up to `chunk` of the backlog's oldest rows into the index; returns
/// how many left the backlog. Must run in a write transaction: both
/// statements must see the same backlog.
pub(crate) fn index_backlog(conn: &mut SqliteConnection, chunk: i64) -> QueryResult<usize> {
    let oldest = "SELECT message_rowid FROM messages_search_backlog \
                  ORDER BY message_rowid LIMIT ?";
    diesel::sql_query(format!(
        "INSERT INTO messages_search (rowid, body_folded) \
         SELECT m.rowid, m.body_folded FROM ({oldest}) b \
         CROSS JOIN messages m ON m.rowid = b.message_rowid"
    ))
    .bind::<BigInt, _>(chunk)
    .execute(conn)?;
    diesel::sql_query(format!(
        "DELETE FROM messages_search_backlog WHERE message_rowid IN ({oldest})"
    ))
    .bind::<BigInt, _>(chunk)
    .execute(conn)
}

/// One batch in a transaction of its own; how many rows it indexed.
fn batch(conn: &mut SqliteConnection) -> QueryResult<usize> {
    conn.batch_execute("BEGIN IMMEDIATE")?;
    match index_backlog(conn, CHUNK) {
        Ok(n) => {
            conn.batch_execute("COMMIT")?;
            Ok(n)
        }
        Err(e) => {
            let _ = conn.batch_execute("ROLLBACK");
            Err(e)
        }
    }
}

/// Whether the backlog holds a row: the one statement of an idle turn.
/// Before the migrations have made the backlog (the store opens, then
/// migrates), there is nothing to do.
fn pending(conn: &mut SqliteConnection) -> QueryResult<bool> {
    #[derive(diesel::QueryableByName)]
    struct Pending {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        pending: bool,
    }
    let row: QueryResult<Pending> =
        diesel::sql_query("SELECT EXISTS (SELECT 1 FROM messages_search_backlog) AS pending")
            .get_result(conn);
    match row {
        Ok(row) => Ok(row.pending),
        Err(diesel::result::Error::DatabaseError(_, info))
            if info.message().starts_with("no such table") =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// One turn of the thread: batches until the backlog is empty, each under
/// the writers' turn, asked for first (`WriterTurn::take_first`: under a
/// steady stream of sends a plain turn may never come) and given back
/// after each batch; `writers` is `None` when the caller holds it already.
fn turn(conn: &mut SqliteConnection, writers: Option<&WriterTurn>) -> QueryResult<()> {
    if !pending(conn)? {
        return Ok(());
    }
    loop {
        let done = {
            let _turn = writers.map(WriterTurn::take_first);
            batch(conn)?
        };
        if done < usize::try_from(CHUNK).unwrap_or(usize::MAX) {
            return Ok(());
        }
    }
}

/// Where the thread's connection comes from: its own, on a file (so its
/// statements are not counted among the pool's, which tests count per
/// request), or the pool's only one, for an in-memory database.
pub(crate) enum Source {
    File {
        path: String,
        configure: fn(&mut SqliteConnection) -> QueryResult<()>,
    },
    Pool(Pool<ConnectionManager<SqliteConnection>>),
}

/// Keeps the indexing thread of one store alive: the thread ends within
/// [`EVERY`] of the last clone of its store being dropped.
#[derive(Debug, Clone)]
pub(crate) struct Indexer {
    _alive: Arc<()>,
}

impl Indexer {
    /// Starts indexing the backlog every [`EVERY`]; `writers` is the lock
    /// this process's writers hold while they write.
    pub(crate) fn start(source: Source, writers: Arc<WriterTurn>) -> anyhow::Result<Self> {
        let mut own = match &source {
            Source::File { path, configure } => {
                let mut conn = SqliteConnection::establish(path)?;
                configure(&mut conn)?;
                Some(conn)
            }
            Source::Pool(_) => None,
        };
        let alive = Arc::new(());
        let watch: Weak<()> = Arc::downgrade(&alive);
        std::thread::Builder::new()
            .name("sqlite-search-index".to_owned())
            .spawn(move || {
                let mut failing = false;
                loop {
                    std::thread::sleep(EVERY);
                    if watch.strong_count() == 0 {
                        return;
                    }
                    let outcome = match (&mut own, &source) {
                        (Some(conn), _) => turn(conn, Some(&writers)),
                        // The pool's one connection is the writers' too:
                        // the turn first, then the connection, as they
                        // take them.
                        (None, Source::Pool(pool)) => {
                            let _turn = writers.take_first();
                            match pool.get() {
                                Ok(mut conn) => turn(&mut conn, None),
                                Err(_) => continue,
                            }
                        }
                        (None, Source::File { .. }) => return,
                    };
                    match outcome {
                        Ok(()) => failing = false,
                        // Logged once per run of failures (a locked or
                        // vanished file): searches read the backlog
                        // meanwhile, so nothing is missed, only slower.
                        Err(error) if !failing => {
                            failing = true;
                            tracing::warn!(%error, "indexing messages for search failed");
                        }
                        Err(_) => {}
                    }
                }
            })?;
        Ok(Self { _alive: alive })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use diesel::sql_types::{Integer, Text};
    use diesel::QueryableByName;

    /// `tables` (a `messages` table with `body_folded` among its columns),
    /// then migrations `search` and `search_backlog` over them.
    pub(crate) fn with_search_schema(tables: &str) -> SqliteConnection {
        let mut conn = SqliteConnection::establish(":memory:").expect("open");
        conn.batch_execute(tables).expect("tables");
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations/sqlite/");
        for m in [
            "2026-12-10-100000_search",
            "2026-12-11-100000_search_backlog",
        ] {
            let up = std::fs::read_to_string(format!("{root}{m}/up.sql")).expect("migration");
            // The column exists already here.
            let up = up.replace("ALTER TABLE messages ADD COLUMN body_folded TEXT;", "");
            conn.batch_execute(&up).expect(m);
        }
        conn
    }

    fn db() -> SqliteConnection {
        with_search_schema(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT NOT NULL, body_folded TEXT);",
        )
    }

    #[derive(QueryableByName, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct Hit {
        #[diesel(sql_type = Integer)]
        rowid: i32,
    }

    fn indexed_hits(conn: &mut SqliteConnection, phrase: &str) -> Vec<i32> {
        let mut hits: Vec<Hit> =
            diesel::sql_query("SELECT rowid FROM messages_search WHERE messages_search MATCH ?")
                .bind::<Text, _>(phrase)
                .load(conn)
                .expect("match");
        hits.sort();
        hits.into_iter().map(|h| h.rowid).collect()
    }

    fn backlog(conn: &mut SqliteConnection) -> Vec<i32> {
        let rows: Vec<Hit> = diesel::sql_query(
            "SELECT message_rowid AS rowid FROM messages_search_backlog ORDER BY 1",
        )
        .load(conn)
        .expect("backlog");
        rows.into_iter().map(|h| h.rowid).collect()
    }

    /// FTS5's own check of an external-content index against its table:
    /// fails on any entry that differs from the text (as an external
    /// 'delete' of text never indexed leaves).
    fn index_is_whole(conn: &mut SqliteConnection) {
        conn.batch_execute(
            "INSERT INTO messages_search (messages_search, rank) VALUES ('integrity-check', 1)",
        )
        .expect("the index matches the messages");
    }

    fn index_all(conn: &mut SqliteConnection) -> usize {
        conn.batch_execute("BEGIN IMMEDIATE").expect("begin");
        let n = index_backlog(conn, 1_000).expect("index");
        conn.batch_execute("COMMIT").expect("commit");
        n
    }

    /// Writes go to the backlog, not the index; the indexer moves them;
    /// edits and deletions of indexed and of backlogged rows alike leave
    /// an index that FTS5 finds whole, with every row in exactly one of
    /// the two.
    #[test]
    fn the_backlog_and_the_index_hold_each_message_once_through_edits_and_deletions() {
        let mut conn = db();
        conn.batch_execute(
            "INSERT INTO messages (id, body, body_folded) VALUES
                 (1, 'Alpha', 'alpha'), (2, 'Beta', 'beta'), (3, 'Gamma', 'gamma'),
                 (4, 'unfolded', NULL);",
        )
        .expect("insert");
        assert_eq!(backlog(&mut conn), [1, 2, 3, 4]);
        assert!(indexed_hits(&mut conn, "\"alp\"").is_empty());

        assert_eq!(index_all(&mut conn), 4);
        assert!(backlog(&mut conn).is_empty());
        assert_eq!(indexed_hits(&mut conn, "\"alpha\""), [1]);
        index_is_whole(&mut conn);

        // An indexed row edited: out of the index, into the backlog.
        conn.batch_execute("UPDATE messages SET body_folded = 'delta' WHERE id = 1")
            .expect("edit");
        assert!(indexed_hits(&mut conn, "\"alpha\"").is_empty());
        assert_eq!(backlog(&mut conn), [1]);
        // Edited again while in the backlog: stays there, once.
        conn.batch_execute("UPDATE messages SET body_folded = 'epsilon' WHERE id = 1")
            .expect("edit");
        assert_eq!(backlog(&mut conn), [1]);
        // A new row, then deleted before it was indexed; an indexed row
        // deleted; a row not yet folded (indexed as an empty document)
        // folded, as `confab migrate` does.
        conn.batch_execute(
            "INSERT INTO messages (id, body, body_folded) VALUES (5, 'Zeta', 'zeta');
             DELETE FROM messages WHERE id = 5;
             DELETE FROM messages WHERE id = 2;
             UPDATE messages SET body_folded = 'unfolded' WHERE id = 4;",
        )
        .expect("writes");
        assert_eq!(backlog(&mut conn), [1, 4]);
        assert!(indexed_hits(&mut conn, "\"beta\"").is_empty());

        assert_eq!(index_all(&mut conn), 2);
        assert_eq!(indexed_hits(&mut conn, "\"epsilon\""), [1]);
        assert_eq!(indexed_hits(&mut conn, "\"unfolded\""), [4]);
        assert!(indexed_hits(&mut conn, "\"delta\"").is_empty());
        assert!(indexed_hits(&mut conn, "\"zeta\"").is_empty());
        index_is_whole(&mut conn);

        // Text taken away (NULL): out of the index, back as an empty
        // document.
        conn.batch_execute("UPDATE messages SET body_folded = NULL WHERE id = 3")
            .expect("edit");
        assert_eq!(backlog(&mut conn), [3]);
        assert!(indexed_hits(&mut conn, "\"gamma\"").is_empty());
        assert_eq!(index_all(&mut conn), 1);
        index_is_whole(&mut conn);
    }

    /// A message not yet folded when migration `search` ran (its rebuild
    /// indexed it as an empty document), folded afterwards as `confab
    /// migrate` does: migration `search`'s own triggers indexed the new
    /// text over the empty document and left an index FTS5 calls
    /// malformed; migration `search_backlog` rebuilds it, and folding goes
    /// through the backlog like any edit.
    #[test]
    fn folding_a_message_written_before_search_keeps_the_index_whole() {
        let mut conn = SqliteConnection::establish(":memory:").expect("open");
        conn.batch_execute(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
             INSERT INTO messages (id, body) VALUES (1, 'Ünïcode'), (2, 'ascii');",
        )
        .expect("table");
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations/sqlite/");
        let up = |m: &str| std::fs::read_to_string(format!("{root}{m}/up.sql")).expect(m);
        conn.batch_execute(&up("2026-12-10-100000_search"))
            .expect("search");
        index_is_whole(&mut conn);
        // Migration `search`'s triggers alone: the fold breaks the index.
        conn.batch_execute(
            "SAVEPOINT before_fold; UPDATE messages SET body_folded = 'ünïcode' WHERE id = 1;",
        )
        .expect("fold");
        let broken = conn.batch_execute(
            "INSERT INTO messages_search (messages_search, rank) VALUES ('integrity-check', 1)",
        );
        assert!(broken.is_err(), "the old triggers kept the index whole");
        conn.batch_execute("ROLLBACK TO before_fold; RELEASE before_fold;")
            .expect("undo");
        // With migration `search_backlog`: whole before and after.
        conn.batch_execute(&up("2026-12-11-100000_search_backlog"))
            .expect("search_backlog");
        index_is_whole(&mut conn);
        conn.batch_execute("UPDATE messages SET body_folded = 'ünïcode' WHERE id = 1")
            .expect("fold");
        assert_eq!(backlog(&mut conn), [1]);
        assert_eq!(index_all(&mut conn), 1);
        index_is_whole(&mut conn);
        assert_eq!(indexed_hits(&mut conn, "\"ünï\""), [1]);
    }

    /// A batch takes the oldest rows only, and the rest wait for the next.
    #[test]
    fn a_batch_takes_at_most_its_chunk_oldest_first() {
        let mut conn = db();
        conn.batch_execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10)
             INSERT INTO messages (id, body, body_folded) SELECT i, 'msg' || i, 'msg' || i FROM n;",
        )
        .expect("insert");
        conn.batch_execute("BEGIN IMMEDIATE").expect("begin");
        assert_eq!(index_backlog(&mut conn, 4).expect("index"), 4);
        conn.batch_execute("COMMIT").expect("commit");
        assert_eq!(backlog(&mut conn), [5, 6, 7, 8, 9, 10]);
        assert_eq!(indexed_hits(&mut conn, "\"msg\""), [1, 2, 3, 4]);
        assert_eq!(index_all(&mut conn), 6);
        assert_eq!(indexed_hits(&mut conn, "\"msg\"").len(), 10);
        index_is_whole(&mut conn);
    }
}
