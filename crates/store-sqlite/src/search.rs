//! Search on SQLite (`confab_store_sql::search`): step 1 as a statement
//! per range (SQLite has no `LATERAL`; each is a seek of an audience index
//! in this process), and step 2 by the FTS5 trigram index of migration
//! `search`.

use diesel::prelude::*;
use diesel::SqliteConnection;

use confab_store_sql::id::DbId;
use confab_store_sql::queries::paging::feed_audiences;
use confab_store_sql::raw::{Bind, Sql};
use confab_store_sql::schema::group_members;
use confab_store_sql::search::{fts_phrase, per_range, Found, Marks, RecentRow, SearchScope};

/// SQLite's substring test: exact, no pattern syntax.
fn contains(text: &str, term: &str) -> String {
    format!("instr({text}, {term}) > 0")
}

/// Step 1: the searcher's groups, then one statement per range (the
/// filter's conversation, or their direct conversations as creator and as
/// peer, and each group).
pub(crate) fn recent(
    conn: &mut SqliteConnection,
    scope: &SearchScope,
) -> QueryResult<Vec<RecentRow>> {
    if let Some(c) = scope.conversation {
        return range(
            conn,
            scope,
            |sql| {
                let c = sql.id(c);
                format!("m.conversation_id = {c}")
            },
            per_range(1),
        );
    }
    let groups: Vec<DbId> = group_members::table
        .filter(group_members::contact_id.eq(scope.viewer))
        .select(group_members::group_id)
        .load(conn)?;
    let w = per_range(2 + groups.len());
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

/// Step 2: the rows of the FTS5 index that have every term (each term a
/// quoted phrase, of which the trigram tokenizer finds any substring),
/// materialized first so that no plan walks the time-ordered indexes
/// instead; of those, the searcher's, by the filters, newest first. Each
/// is checked against the terms again (`instr`), so the answer is exactly
/// step 1's rule, whatever the index's tokens.
pub(crate) fn indexed(conn: &mut SqliteConnection, scope: &SearchScope) -> QueryResult<Vec<Found>> {
    let mut sql = Sql::default();
    let phrases: Vec<String> = scope.terms.iter().map(|t| fts_phrase(t)).collect();
    let matching = sql.bind(Bind::Text(phrases.join(" ")));
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
        "WITH found AS MATERIALIZED ( \
             SELECT rowid AS found_rowid FROM messages_search WHERE messages_search MATCH {matching} \
         ) \
         SELECT m.created_at, m.id FROM found CROSS JOIN messages m ON m.rowid = found.found_rowid \
         WHERE {}{} AND {sees} \
         ORDER BY m.created_at DESC, m.id DESC LIMIT {}",
        marks.hit("m", contains),
        marks.bounds("m"),
        marks.fetch,
    ));
    sql.unprepared().query().load(conn)
}
