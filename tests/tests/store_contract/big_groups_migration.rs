//! The migration `big_groups` converts existing data on both
//! stores: a database migrated up to the one before it, holding direct and
//! group conversations with unread counters, is migrated by the store
//! itself; every member's unread count reads the same afterwards, the
//! messages are numbered in their order and each group counts its members.

use confab_domain::{ContactId, ConversationId, GroupId};
use confab_ports::{ConversationStore, GroupStore};
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

const A: &str = "0190a5e0-0000-7000-8000-00000000000a";
const B: &str = "0190a5e0-0000-7000-8000-00000000000b";
const C: &str = "0190a5e0-0000-7000-8000-00000000000c";
const G: &str = "0190a5e0-0000-7000-8000-0000000000a1";
const DIRECT: &str = "0190a5e0-0000-7000-8000-0000000000d1";
const GROUP_CONV: &str = "0190a5e0-0000-7000-8000-0000000000d2";

/// Before the migration: three contacts, a group of them, a direct
/// conversation and a group conversation with messages, each member's
/// state row with the counter as the old writes kept it (every message
/// from others after the member's last opening).
fn seed() -> String {
    let mut sql = String::new();
    for (id, name) in [(A, "a"), (B, "b"), (C, "c")] {
        sql.push_str(&format!(
            "INSERT INTO contacts (id, username, username_folded, phone_number, avatar_url, \
             last_active_at, created_at) VALUES ('{id}', '{name}', '{name}', '+15550100', '', 1, 1);\n"
        ));
    }
    sql.push_str(&format!(
        "INSERT INTO groups (id, name, description, avatar_url, created_by, created_at) \
         VALUES ('{G}', 'g', '', '', '{A}', 1);\n"
    ));
    for (seq, (who, role)) in [(A, "owner"), (B, "member"), (C, "member")]
        .iter()
        .enumerate()
    {
        sql.push_str(&format!(
            "INSERT INTO group_members (group_id, contact_id, role, seq, joined_at) \
             VALUES ('{G}', '{who}', '{role}', {}, 1);\n",
            seq + 1
        ));
    }
    sql.push_str(&format!(
        "INSERT INTO conversations (id, group_id, creator_id, peer_id, activity_at, created_at) \
         VALUES ('{DIRECT}', NULL, '{A}', '{B}', 1, 1), ('{GROUP_CONV}', '{G}', '{A}', NULL, 1, 1);\n"
    ));
    let direct = [(A, 10), (B, 20), (A, 30)];
    let group = [(A, 10), (B, 20), (C, 30), (A, 40), (B, 40)];
    for (n, (sender, at)) in direct.iter().enumerate() {
        sql.push_str(&format!(
            "INSERT INTO messages (id, conversation_id, sender_id, body, created_at, \
             direct_creator_id, direct_peer_id) \
             VALUES ('0190a5e0-0000-7000-8000-0000000001{n:02}', '{DIRECT}', '{sender}', 'x', {at}, \
             '{A}', '{B}');\n"
        ));
    }
    for (n, (sender, at)) in group.iter().enumerate() {
        sql.push_str(&format!(
            "INSERT INTO messages (id, conversation_id, sender_id, body, created_at, group_id) \
             VALUES ('0190a5e0-0000-7000-8000-0000000002{n:02}', '{GROUP_CONV}', '{sender}', 'x', {at}, \
             '{G}');\n"
        ));
    }
    // Opened: a the direct one at 25; in the group, a at 25 and b at 5;
    // c never.
    let states = [
        (DIRECT, A, "25"),
        (DIRECT, B, "NULL"),
        (GROUP_CONV, A, "25"),
        (GROUP_CONV, B, "5"),
        (GROUP_CONV, C, "NULL"),
    ];
    for (conv, who, opened) in states {
        sql.push_str(&format!(
            "INSERT INTO conversation_states (conversation_id, contact_id, last_opened_at, unread_count) \
             VALUES ('{conv}', '{who}', {opened}, ( \
                 SELECT COUNT(*) FROM messages WHERE conversation_id = '{conv}' \
                 AND sender_id <> '{who}' AND created_at > COALESCE({opened}, -1)));\n"
        ));
    }
    sql
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The migrations before `big_groups`, applied by hand and recorded as
/// diesel records them, then the seed.
fn prepare(conn: &mut impl SimpleConnection, store: &str) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations/");
    let mut dirs: Vec<_> = std::fs::read_dir(format!("{root}{store}"))
        .expect("migrations")
        .map(|e| e.expect("entry").file_name().into_string().expect("name"))
        .collect();
    dirs.sort();
    conn.batch_execute(
        "CREATE TABLE __diesel_schema_migrations (version VARCHAR(50) PRIMARY KEY NOT NULL, \
         run_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    )
    .expect("migrations table");
    for dir in dirs.iter().take_while(|d| !d.contains("big_groups")) {
        let up = std::fs::read_to_string(format!("{root}{store}/{dir}/up.sql")).expect("up.sql");
        conn.batch_execute(&up).expect(dir);
        let version: String = dir.split('_').next().expect("version").replace('-', "");
        conn.batch_execute(&format!(
            "INSERT INTO __diesel_schema_migrations (version) VALUES ('{version}')"
        ))
        .expect("record");
    }
    assert!(
        dirs.iter().any(|d| d.contains("big_groups")),
        "the migration under test exists"
    );
    conn.batch_execute(&seed()).expect("seed");
}

fn cid(s: &str) -> ConversationId {
    s.parse().expect("id")
}

fn contact(s: &str) -> ContactId {
    s.parse().expect("id")
}

/// The counters each member had before, read through the store after.
async fn check<S: ConversationStore + GroupStore>(store: &S, before: &[(String, String, i64)]) {
    for (conv, who, unread) in before {
        let view = store
            .conversation_for(contact(who), cid(conv))
            .await
            .expect("read")
            .expect("visible");
        assert_eq!(
            view.state.unread_count as i64, *unread,
            "unread of {who} in {conv}"
        );
    }
    let group = store
        .group_for(contact(A), G.parse::<GroupId>().expect("id"))
        .await
        .expect("read")
        .expect("visible");
    assert_eq!(group.member_count(), 3);
    assert_eq!(group.owners(), &[contact(A)]);
}

fn counters(conn: &mut impl RunQueryDslConn) -> Vec<(String, String, i64)> {
    conn.counters()
}

/// Reads the counters the old schema kept (before the migration).
trait RunQueryDslConn {
    fn counters(&mut self) -> Vec<(String, String, i64)>;
}

macro_rules! impl_counters {
    ($conn:ty) => {
        impl RunQueryDslConn for $conn {
            fn counters(&mut self) -> Vec<(String, String, i64)> {
                let mut out = Vec::new();
                for conv in [DIRECT, GROUP_CONV] {
                    for who in [A, B, C] {
                        let n: Vec<Count> = diesel::sql_query(format!(
                            "SELECT unread_count AS n FROM conversation_states \
                             WHERE conversation_id = '{conv}' AND contact_id = '{who}'"
                        ))
                        .load(self)
                        .expect("counter");
                        if let Some(c) = n.first() {
                            out.push((conv.to_owned(), who.to_owned(), c.n));
                        }
                    }
                }
                out
            }
        }
    };
}
impl_counters!(diesel::PgConnection);
impl_counters!(diesel::SqliteConnection);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_counts_are_preserved() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("old.db");
    let path = path.to_str().expect("path").to_owned();
    let before = {
        let mut conn = diesel::SqliteConnection::establish(&path).expect("open");
        prepare(&mut conn, "sqlite");
        counters(&mut conn)
    };
    // The counters the old writes kept: direct 0 and 2, group 2, 3, 4.
    let values: Vec<i64> = before.iter().map(|c| c.2).collect();
    assert_eq!(values, vec![0, 2, 2, 3, 4]);
    let store = tokio::task::spawn_blocking(move || {
        let store = confab_store_sqlite::SqliteStore::open(&path).expect("open");
        store.migrate().expect("migrate");
        store
    })
    .await
    .expect("join");
    check(&store, &before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_counts_are_preserved() {
    let admin = confab_tests::db::postgres_admin_url();
    let name = format!("confab_migration_{}", uuid::Uuid::now_v7().simple());
    let url = {
        let mut conn = diesel::PgConnection::establish(&admin).expect("admin");
        conn.batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create");
        match admin.rfind('/') {
            Some(i) => format!("{}/{name}", &admin[..i]),
            None => panic!("admin URL without a database: {admin}"),
        }
    };
    let before = {
        let mut conn = diesel::PgConnection::establish(&url).expect("open");
        prepare(&mut conn, "postgres");
        counters(&mut conn)
    };
    let values: Vec<i64> = before.iter().map(|c| c.2).collect();
    assert_eq!(values, vec![0, 2, 2, 3, 4]);
    let migrated = url.clone();
    let store = tokio::task::spawn_blocking(move || {
        let store = confab_store_postgres::PgStore::connect(&migrated).expect("connect");
        store.migrate().expect("migrate");
        store
    })
    .await
    .expect("join");
    check(&store, &before).await;
    drop(store);
    let mut conn = diesel::PgConnection::establish(&admin).expect("admin");
    conn.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .expect("drop");
}
