use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;
use diesel::sql_types::Text;

/// A row of `EXPLAIN QUERY PLAN`.
#[derive(QueryableByName)]
struct Step {
    #[diesel(sql_type = Text)]
    detail: String,
}

/// SQLite is built with its query planner stability guarantee on
/// (`SQLITE_ENABLE_QPSG`, `.cargo/config.toml`): a statement's plan
/// ignores the values bound to it, so a `GLOB` with a bound prefix
/// scans, where a plan that looked at the value would seek the index
/// range of the prefix. Without it, SQLite compiles a statement whose
/// plan looked at a bound value again after every bind, and it looks at
/// a bound `LIMIT`: every page and `first()` was parsed and planned on
/// every call, whatever diesel's statement cache kept.
#[test]
fn plans_do_not_depend_on_bound_values() {
    let mut conn = SqliteConnection::establish(":memory:").expect("open");
    conn.batch_execute("CREATE TABLE t (name TEXT); CREATE INDEX t_name ON t (name);")
        .expect("table");
    let plan: Vec<Step> =
        diesel::sql_query("EXPLAIN QUERY PLAN SELECT name FROM t WHERE name GLOB ?")
            .bind::<Text, _>("abc*")
            .load(&mut conn)
            .expect("plan");
    let plan: Vec<_> = plan.into_iter().map(|s| s.detail).collect();
    assert!(plan.iter().all(|d| !d.starts_with("SEARCH")), "{plan:?}");
    assert!(plan.iter().any(|d| d.starts_with("SCAN")), "{plan:?}");
}

/// The feed's plan, each way of travel: the audience indexes searched
/// (their ranges covered by the index alone, but for the peer's, which
/// reads the row to leave out the viewer's own conversations), each
/// candidate found by rowid, the cursor by primary key, and no table
/// or index scanned whole.
#[test]
fn the_feed_searches_its_ranges_and_finds_candidates_by_rowid() {
    use diesel_migrations::MigrationHarness as _;

    let mut conn = SqliteConnection::establish(":memory:").expect("open");
    conn.run_pending_migrations(super::MIGRATIONS)
        .expect("migrate");
    let v = confab_store_sql::id::DbId::from(uuid::Uuid::now_v7());
    for cursor in [None, Some((false, v)), Some((true, v))] {
        let query = super::feed_page_query(v, cursor, 51);
        let sql = diesel::debug_query::<diesel::sqlite::Sqlite, _>(&query).to_string();
        let sql = sql.split(" -- binds:").next().expect("text");
        let plan: Vec<Step> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
            .load(&mut conn)
            .expect("plan");
        let plan: Vec<_> = plan.into_iter().map(|s| s.detail).collect();
        let has = |step: &str| plan.iter().any(|d| d.starts_with(step));
        for step in [
            "SEARCH messages USING INTEGER PRIMARY KEY (rowid=?)",
            "SEARCH i USING COVERING INDEX messages_direct_creator_order_idx (direct_creator_id=?",
            "SEARCH i USING INDEX messages_direct_peer_order_idx (direct_peer_id=?",
            "SEARCH g USING COVERING INDEX group_members_contact_id_idx (contact_id=?)",
            "SEARCH k USING INTEGER PRIMARY KEY (rowid=?)",
            "SEARCH i USING COVERING INDEX messages_group_order_idx (group_id=?",
        ] {
            assert!(has(step), "{cursor:?}: no {step}: {plan:?}");
        }
        assert_eq!(
            has("SEARCH messages USING INDEX sqlite_autoindex_messages_1 (id=?)"),
            cursor.is_some(),
            "{cursor:?}: the cursor by primary key: {plan:?}"
        );
        let scans: Vec<_> = plan
            .iter()
            .filter(|d| d.starts_with("SCAN") && !d.starts_with("SCAN (subquery"))
            .filter(|d| !d.starts_with("SCAN cursor_key"))
            .collect();
        assert!(scans.is_empty(), "{cursor:?}: scans {scans:?} in {plan:?}");
    }
}

/// The commits' own checkpoint (the backstop) is set in bytes of WAL,
/// whatever size the file's pages are: 16,000 pages of SQLite's 4 KB,
/// 64,000 of a file made with 1 KB pages.
#[test]
fn the_backstop_is_as_much_wal_whatever_the_page_size() {
    #[derive(QueryableByName)]
    struct Backstop {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        wal_autocheckpoint: i32,
    }
    let dir = std::env::temp_dir().join(format!("confab-pages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    for (page_size, backstop) in [(None, 16_000), (Some(1024), 64_000), (Some(65_536), 1_000)] {
        let file = dir.join(format!("db-{page_size:?}.sqlite"));
        let path = file.to_str().expect("utf-8");
        let mut made = SqliteConnection::establish(path).expect("open");
        if let Some(size) = page_size {
            made.batch_execute(&format!("PRAGMA page_size = {size};"))
                .expect("page size");
        }
        made.batch_execute("PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT);")
            .expect("make");
        let mut conn = SqliteConnection::establish(path).expect("open");
        super::configure(&mut conn).expect("configure");
        let set: Backstop = diesel::sql_query("PRAGMA wal_autocheckpoint")
            .get_result(&mut conn)
            .expect("read");
        assert_eq!(
            set.wal_autocheckpoint, backstop,
            "pages of {page_size:?} bytes"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file the store creates has [`super::NEW_FILE_PAGE_SIZE`] pages; a
/// file made before keeps its own, and its rows.
#[test]
fn a_new_file_has_small_pages_and_an_old_one_keeps_its_own() {
    let page_size = |path: &str| {
        let mut conn = SqliteConnection::establish(path).expect("open");
        crate::checkpoint::page_size(&mut conn).expect("read")
    };
    let dir = std::env::temp_dir().join(format!("confab-new-pages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let new = dir.join("new.sqlite");
    let new = new.to_str().expect("utf-8");
    let store = super::SqliteStore::open(new).expect("open a new file");
    drop(store);
    assert_eq!(page_size(new), super::NEW_FILE_PAGE_SIZE);

    let old = dir.join("old.sqlite");
    let old = old.to_str().expect("utf-8");
    let mut made = SqliteConnection::establish(old).expect("open");
    made.batch_execute("CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('kept');")
        .expect("make");
    drop(made);
    assert_eq!(page_size(old), 4096);
    let store = super::SqliteStore::open(old).expect("open an old file");
    drop(store);
    assert_eq!(page_size(old), 4096);
    let mut conn = SqliteConnection::establish(old).expect("open");
    let kept: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "(SELECT COUNT(*) FROM t WHERE x = 'kept')",
    ))
    .get_result(&mut conn)
    .expect("count");
    assert_eq!(kept, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every connection of the store's pool, the writers' included, runs
/// the store's `synchronous`: `FULL` (2) unless told `NORMAL` (1).
#[test]
fn the_pool_s_connections_sync_as_the_store_is_told() {
    let dir = std::env::temp_dir().join(format!("confab-synchronous-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    for (told, level) in [
        (None, 2),
        (Some(super::Synchronous::Full), 2),
        (Some(super::Synchronous::Normal), 1),
    ] {
        let path = dir.join(format!("{level}-{}.sqlite", told.is_some()));
        let path = path.to_str().expect("utf-8");
        let store = match told {
            None => super::SqliteStore::open(path),
            Some(s) => super::SqliteStore::open_with(path, Some(3), s),
        }
        .expect("open");
        let conns: Vec<_> = (0..3)
            .map(|_| store.pool.get().expect("checkout"))
            .collect();
        for mut conn in conns {
            let got: i32 = diesel::select(diesel::dsl::sql::<diesel::sql_types::Integer>(
                "(SELECT synchronous FROM pragma_synchronous)",
            ))
            .get_result(&mut *conn)
            .expect("read synchronous");
            assert_eq!(got, level, "told {told:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
