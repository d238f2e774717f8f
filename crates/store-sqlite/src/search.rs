//! Search on SQLite (`confab_store_sql::search`): step 1 as a statement
//! per range (SQLite has no `LATERAL`; each is a seek of an audience index
//! in this process), and step 2 by the FTS5 trigram index of migration
//! `search` and the backlog of rows not yet in it (migration
//! `search_backlog`, `search_index`).

use std::time::Duration;

use cpu_time::ThreadTime;

use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::SqliteConnection;

use confab_store_sql::id::DbId;
use confab_store_sql::queries::paging::feed_audiences;
use confab_store_sql::raw::{Bind, Sql};
use confab_store_sql::schema::group_members;
use confab_store_sql::search::{
    fts_phrase, per_range, settle, Found, Marks, RecentRow, SearchScope,
};
use confab_store_sql::search_share::{default_search_connections, SearchShare};

/// Searches' own connections to the file at `path`
/// (`confab_store_sql::search_share`), opened as searches need them and
/// set up by `setup` like the store's, waiting at most `checkout_timeout`
/// for one; for an in-memory database (`:memory:`, which lives in its one
/// connection), `pool`'s. Run on threads of their own that yield the CPU
/// ([`yield_the_cpu`]).
pub(crate) fn share(
    path: &str,
    pool: &Pool<ConnectionManager<SqliteConnection>>,
    setup: Box<dyn CustomizeConnection<SqliteConnection, diesel::r2d2::Error>>,
    checkout_timeout: Duration,
) -> anyhow::Result<SearchShare<ConnectionManager<SqliteConnection>>> {
    use anyhow::Context as _;
    let share = if path == ":memory:" {
        SearchShare::new(pool.clone(), default_search_connections())
    } else {
        SearchShare::open(
            ConnectionManager::new(path),
            setup,
            checkout_timeout,
            false,
            "SQLite",
        )
        .with_context(|| format!("cannot open SQLite database {path} for searches"))?
    };
    Ok(share.on_own_threads(yield_the_cpu))
}

/// How much less than other threads a search thread asks of the CPU: the
/// nice value 10, about a tenth of a core's time beside one busy thread of
/// the default 0. A search reads in this process; on its own threads at
/// this priority it takes what sends and reads leave, never their turn.
const SEARCH_NICE: i32 = 10;

/// Lowers the calling thread's scheduling priority to [`SEARCH_NICE`]
/// (Linux: a thread's own nice value); elsewhere, or if refused, the
/// thread keeps its priority and searches stay bounded by their number.
fn yield_the_cpu() {
    #[cfg(target_os = "linux")]
    {
        let tid = rustix::thread::gettid();
        if let Err(error) = rustix::process::setpriority_process(Some(tid), SEARCH_NICE) {
            tracing::warn!(%error, "a search thread keeps its priority");
        }
    }
}

/// SQLite's substring test: exact, no pattern syntax.
fn contains(text: &str, term: &str) -> String {
    format!("instr({text}, {term}) > 0")
}

/// How long step 2 may read the index before the searcher's ranges are
/// read whole instead (as on PostgreSQL, `confab_store_postgres::search`):
/// a term made of trigrams that most messages have, which no message has
/// as a whole ("dolorem" in text full of "dolor" and "lorem"), makes FTS5
/// compare the positions of every message's trigrams: 1.1 s over the
/// benchmark's million messages, against the searcher's own ranges read
/// whole in a few milliseconds. In CPU time of the searching thread
/// ([`spent`]).
const INDEX_BUDGET: Duration = Duration::from_millis(150);

/// SQLite cannot interrupt a statement of diesel's, so step 2 foretells
/// instead: it reads the index over the newest this many rowids first, and
/// the rest only if that took little enough that the rest, at the same
/// cost per rowid, fits in [`INDEX_BUDGET`]. Over the benchmark's million
/// messages (SQLite 3.40): a rare term took 0.6 ms for this window and
/// 0.8 ms for the rest; "dolorem" 33 ms for this window, and 490 ms for
/// any window below it (FTS5 walks the lists down from the newest rowid).
const FIRST_WINDOW: i64 = 1 << 16;

/// Step 1: the searcher's groups, then one statement per range (the
/// filter's conversation, or their direct conversations as creator and as
/// peer, and each group).
pub(crate) fn recent(
    conn: &mut SqliteConnection,
    scope: &SearchScope,
) -> QueryResult<Vec<RecentRow>> {
    recent_limited(conn, scope, false)
}

/// [`recent`], each range read down to its end when `whole` (step 2's way
/// out of an index that costs too much: [`indexed`]).
fn recent_limited(
    conn: &mut SqliteConnection,
    scope: &SearchScope,
    whole: bool,
) -> QueryResult<Vec<RecentRow>> {
    let limit = |ranges: usize| if whole { i64::MAX } else { per_range(ranges) };
    if let Some(c) = scope.conversation {
        return range(
            conn,
            scope,
            |sql| {
                let c = sql.id(c);
                format!("m.conversation_id = {c}")
            },
            limit(1),
        );
    }
    let groups: Vec<DbId> = group_members::table
        .filter(group_members::contact_id.eq(scope.viewer))
        .select(group_members::group_id)
        .load(conn)?;
    let w = limit(2 + groups.len());
    let mut rows = Vec::new();
    for audience in [0, 1] {
        rows.extend(range(
            conn,
            scope,
            |sql| {
                let v = sql.id(scope.viewer);
                feed_audiences("m", &v)[audience].clone()
            },
            w,
        )?);
    }
    for g in groups {
        rows.extend(range(
            conn,
            scope,
            |sql| {
                let g = sql.id(g);
                format!("m.group_id = {g}")
            },
            w,
        )?);
    }
    Ok(rows)
}

/// One range's rows ([`Marks::recent_range`]), its audience written by
/// `audience` (which binds what it needs).
fn range(
    conn: &mut SqliteConnection,
    scope: &SearchScope,
    audience: impl FnOnce(&mut Sql) -> String,
    per_range: i64,
) -> QueryResult<Vec<RecentRow>> {
    let mut sql = Sql::default();
    let marks = Marks::bind(&mut sql, scope);
    let audience = audience(&mut sql);
    let w = sql.bind(Bind::Int(per_range));
    sql.push(&marks.recent_range(&audience, &w, contains));
    sql.unprepared().query().load(conn)
}

/// Step 2: the messages with every term, of the index and of its
/// backlog, in one snapshot (a batch of the indexer moves rows from one to
/// the other): the backlog, then the index's newest [`FIRST_WINDOW`]
/// rowids, then the rest of the index, unless the first window foretells
/// that the rest would pass [`INDEX_BUDGET`]: then the searcher's ranges
/// are read whole instead. Each read keeps its newest `fetch` rows; the
/// page is the newest `fetch` of all.
///
/// The forecast trusts the newest messages of the whole store to tell how
/// common a term's trigrams are in the older ones: a store whose recent
/// traffic, everyone's, lacks the trigrams its old messages are full of
/// would read the rest at its full cost.
pub(crate) fn indexed(conn: &mut SqliteConnection, scope: &SearchScope) -> QueryResult<Vec<Found>> {
    windowed(conn, scope, FIRST_WINDOW, INDEX_BUDGET)
}

/// [`indexed`], its first window and budget given.
fn windowed(
    conn: &mut SqliteConnection,
    scope: &SearchScope,
    first_window: i64,
    budget: Duration,
) -> QueryResult<Vec<Found>> {
    conn.transaction(|conn| {
        let started = ThreadTime::try_now().ok();
        let mut found = matches(conn, scope, None)?;
        let high = newest_rowid(conn)?;
        let width = first_window.max(1);
        let low = high.saturating_sub(width - 1).max(1);
        let first = ThreadTime::try_now().ok();
        found.extend(matches(conn, scope, Some((low, high)))?);
        if low > 1 {
            // The rest, at the first window's cost per rowid.
            let rest = spent(first.as_ref()).as_secs_f64() * (low - 1) as f64 / width as f64;
            if spent(started.as_ref()).as_secs_f64() + rest > budget.as_secs_f64() {
                return whole_ranges(conn, scope);
            }
            found.extend(matches(conn, scope, Some((1, low - 1)))?);
        }
        found.sort_unstable_by(|a, b| b.cmp(a));
        found.dedup();
        found.truncate(usize::try_from(scope.fetch).unwrap_or(usize::MAX));
        Ok(found)
    })
}

/// The CPU time this thread spent since `since` (statements run on the
/// calling thread): what a read cost, however busy the machine. Wall time
/// counted the waits of 8 searches on 2 cores, and sent rare terms to the
/// way out. Nothing when the clock cannot be read (never the way out).
fn spent(since: Option<&ThreadTime>) -> Duration {
    since.and_then(|t| t.try_elapsed().ok()).unwrap_or_default()
}

/// The greatest rowid of `messages` (0 when empty): where the windows of
/// [`indexed`] start.
fn newest_rowid(conn: &mut SqliteConnection) -> QueryResult<i64> {
    #[derive(diesel::QueryableByName)]
    struct Newest {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        rowid: i64,
    }
    let row: Newest = diesel::sql_query("SELECT COALESCE(MAX(rowid), 0) AS rowid FROM messages")
        .get_result(conn)?;
    Ok(row.rowid)
}

/// The searcher's ranges read whole, every row checked against the terms.
fn whole_ranges(conn: &mut SqliteConnection, scope: &SearchScope) -> QueryResult<Vec<Found>> {
    let wanted = usize::try_from(scope.fetch).unwrap_or(usize::MAX);
    let rows = recent_limited(conn, scope, true)?;
    // Read whole: no range has a boundary, so the answer is exact.
    Ok(settle(&rows, wanted).unwrap_or_default())
}

/// The newest `fetch` of the searcher's messages with every term, by the
/// filters, among the index's rows in `window` (rowids, both ends
/// included), or among the backlog's when `None`. The index's rows (each
/// term a quoted phrase, of which the trigram tokenizer finds any
/// substring) are materialized first, so that no plan walks the
/// time-ordered indexes instead. Every row is checked against the terms
/// (`instr`), so the answer is exactly step 1's rule, whatever the index's
/// tokens.
fn matches(
    conn: &mut SqliteConnection,
    scope: &SearchScope,
    window: Option<(i64, i64)>,
) -> QueryResult<Vec<Found>> {
    let mut sql = Sql::default();
    let found = match window {
        Some((low, high)) => {
            let phrases: Vec<String> = scope.terms.iter().map(|t| fts_phrase(t)).collect();
            let matching = sql.bind(Bind::Text(phrases.join(" ")));
            let (low, high) = (sql.bind(Bind::Int(low)), sql.bind(Bind::Int(high)));
            format!(
                "SELECT rowid AS found_rowid FROM messages_search \
                 WHERE messages_search MATCH {matching} AND rowid BETWEEN {low} AND {high}"
            )
        }
        None => "SELECT message_rowid AS found_rowid FROM messages_search_backlog".to_owned(),
    };
    let marks = Marks::bind(&mut sql, scope);
    let sees = match scope.conversation {
        Some(c) => {
            let c = sql.id(c);
            format!("m.conversation_id = {c}")
        }
        None => {
            let v = sql.id(scope.viewer);
            // Unary `+`: conditions on the rows found, never an index.
            format!(
                "(+m.direct_creator_id = {v} OR +m.direct_peer_id = {v} \
                 OR +m.group_id IN (SELECT group_id FROM group_members WHERE contact_id = {v}))"
            )
        }
    };
    sql.push(&format!(
        "WITH found AS MATERIALIZED ({found}) \
         SELECT m.created_at, m.id FROM found CROSS JOIN messages m ON m.rowid = found.found_rowid \
         WHERE {}{} AND {sees} \
         ORDER BY m.created_at DESC, m.id DESC LIMIT {}",
        marks.hit("m", contains),
        marks.bounds("m"),
        marks.fetch,
    ));
    sql.unprepared().query().load(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::connection::SimpleConnection as _;
    use uuid::Uuid;

    fn id(n: u128) -> DbId {
        DbId::from(Uuid::from_u128(n))
    }

    /// The columns of `messages` a search reads, and migrations `search`
    /// and `search_backlog` over them.
    fn db() -> SqliteConnection {
        crate::search_index::tests::with_search_schema(
            "CREATE TABLE messages (
                 id TEXT NOT NULL, body TEXT NOT NULL, body_folded TEXT,
                 created_at INTEGER NOT NULL, sender_id TEXT NOT NULL,
                 conversation_id TEXT NOT NULL, direct_creator_id TEXT,
                 direct_peer_id TEXT, group_id TEXT);
             CREATE TABLE group_members (group_id TEXT NOT NULL, contact_id TEXT NOT NULL);",
        )
    }

    /// 600 messages whose times run in another order than their rowids:
    /// every 7th has the term; the viewer (1) is in group 10 and in
    /// direct conversations as creator, not in group 11. Returns what the
    /// viewer's search for "needle" must find, newest first.
    fn seed(conn: &mut SqliteConnection) -> Vec<Found> {
        let mut sql = Sql::default();
        let (viewer, seen) = (sql.id(id(1)), sql.id(id(10)));
        sql.push(&format!(
            "INSERT INTO group_members (group_id, contact_id) VALUES ({seen}, {viewer})"
        ));
        sql.query().execute(conn).expect("member");
        let mut expected = Vec::new();
        for i in 0..600_u128 {
            let at = i64::try_from((i * 7_919) % 1_000).expect("small") * 1_000 + 1;
            let text = if i % 7 == 0 {
                format!("a needle {i}")
            } else {
                format!("hay {i}")
            };
            let (audience, sees) = match i % 3 {
                0 => ("group_id", true),
                1 => ("direct_creator_id", true),
                _ => ("group_id", false),
            };
            let mut sql = Sql::default();
            let m = sql.id(id(1_000 + i));
            let owner = match (audience, sees) {
                ("group_id", true) => sql.id(id(10)),
                ("group_id", false) => sql.id(id(11)),
                _ => sql.id(id(1)),
            };
            let sender = sql.id(id(2));
            let conv = sql.id(id(100 + i % 3));
            let body = sql.bind(Bind::Text(text.clone()));
            let at_mark = sql.bind(Bind::Int(at));
            sql.push(&format!(
                "INSERT INTO messages (id, body, body_folded, created_at, sender_id, conversation_id, {audience}) \
                 VALUES ({m}, {body}, {body}, {at_mark}, {sender}, {conv}, {owner})"
            ));
            sql.query().execute(conn).expect("message");
            if sees && i % 7 == 0 {
                expected.push(Found {
                    created_at: at,
                    id: id(1_000 + i),
                });
            }
        }
        expected.sort_unstable_by(|a, b| b.cmp(a));
        expected
    }

    fn scope(fetch: i64) -> SearchScope {
        SearchScope {
            viewer: id(1),
            terms: vec!["needle".to_owned()],
            conversation: None,
            sender: None,
            from: None,
            until: None,
            cursor: None,
            fetch,
        }
    }

    fn first(expected: &[Found], n: usize) -> Vec<Found> {
        expected.iter().take(n).copied().collect()
    }

    /// Searches run on threads of their own, which yield the CPU to every
    /// other thread of the process.
    #[tokio::test]
    async fn searches_run_on_their_own_threads_at_a_lower_priority() {
        let dir = std::env::temp_dir().join(format!("confab-share-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("share.db").display().to_string();
        let pool = Pool::builder()
            .max_size(1)
            .build(ConnectionManager::<SqliteConnection>::new(&path))
            .expect("pool");
        let setup = Box::new(diesel::r2d2::NopConnectionCustomizer);
        let share = share(&path, &pool, setup, Duration::from_secs(1))
            .expect("share")
            .with_connections(2);
        let threads = share.threads().expect("threads of its own");
        let (name, nice) = threads
            .run(|| {
                let nice = rustix::process::getpriority_process(None).expect("priority");
                (std::thread::current().name().map(str::to_owned), nice)
            })
            .await
            .expect("run");
        assert!(name.is_some_and(|n| n.starts_with("confab-search-")));
        #[cfg(target_os = "linux")]
        assert_eq!(nice, SEARCH_NICE);
        let _ = nice;
        // This thread keeps its own.
        assert_ne!(
            rustix::process::getpriority_process(None).ok(),
            Some(SEARCH_NICE)
        );
        drop(share);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Step 2 with a first window of 4 rowids: the same page with every
    /// message in the backlog, half of them indexed, and all; and the same
    /// from the searcher's ranges read whole when the budget is spent.
    #[test]
    fn windows_backlog_and_the_way_out_find_the_same_messages() {
        let mut conn = db();
        let expected = seed(&mut conn);
        assert!(expected.len() > 40, "{} matches", expected.len());
        let long = Duration::from_secs(60);
        for fetch in [1, 11, 1_000] {
            let want = first(&expected, usize::try_from(fetch).expect("small"));
            assert_eq!(
                windowed(&mut conn, &scope(fetch), 4, long).expect("backlog"),
                want
            );
        }
        conn.batch_execute("BEGIN IMMEDIATE").expect("begin");
        assert_eq!(
            crate::search_index::index_backlog(&mut conn, 300).expect("index"),
            300
        );
        conn.batch_execute("COMMIT").expect("commit");
        for fetch in [1, 11, 1_000] {
            let want = first(&expected, usize::try_from(fetch).expect("small"));
            assert_eq!(
                windowed(&mut conn, &scope(fetch), 4, long).expect("half"),
                want
            );
            assert_eq!(
                windowed(&mut conn, &scope(fetch), 1, Duration::ZERO).expect("way out"),
                want
            );
        }
        conn.batch_execute("BEGIN IMMEDIATE").expect("begin");
        crate::search_index::index_backlog(&mut conn, 1_000).expect("index");
        conn.batch_execute("COMMIT").expect("commit");
        for width in [1, 4, 1 << 16] {
            assert_eq!(
                windowed(&mut conn, &scope(11), width, long).expect("indexed"),
                first(&expected, 11)
            );
        }
    }
}
