//! Search on PostgreSQL (`confab_store_sql::search`): step 1 as one
//! statement over the searcher's ranges (a `LATERAL` range per group), and
//! step 2 by the `pg_trgm` GIN index of migration `search`.

use std::sync::atomic::{AtomicU8, Ordering};

use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;
use diesel::sql_types::Bool;
use diesel::PgConnection;

use confab_store_sql::queries::paging::{feed_audiences, feed_sees};
use confab_store_sql::raw::{Bind, Sql};
use confab_store_sql::search::{
    like_anywhere, Found, Marks, RecentRow, SearchScope, RECENT_MIN_PER_RANGE, RECENT_ROWS,
};

/// Run on each of searches' own connections after the session's
/// settings: one statement of a search may run 1 s before PostgreSQL
/// cancels it (and the search answers `Unavailable`), shorter than the
/// other calls' 1.5 s, so that a search that cannot finish gives its
/// connection back before its caller's deadline (1.8 s) has passed.
/// Behind a pooler in transaction mode no session setting is made: the
/// role's own `statement_timeout` applies (docs/deployment.md).
pub(crate) const SEARCH_SESSION_SETTINGS: &str = "SET statement_timeout = '1000ms'";

/// PostgreSQL's substring test: exact, no pattern syntax.
fn contains(text: &str, term: &str) -> String {
    format!("strpos({text}, {term}) > 0")
}

/// Step 1: one statement. The rows per range follow from the searcher's
/// number of groups, counted in the statement itself.
pub(crate) fn recent(conn: &mut PgConnection, scope: &SearchScope) -> QueryResult<Vec<RecentRow>> {
    recent_limited(conn, scope, false)
}

/// [`recent`], each range read down to its end when `whole` (step 2 of a
/// search whose terms the index cannot find).
fn recent_limited(
    conn: &mut PgConnection,
    scope: &SearchScope,
    whole: bool,
) -> QueryResult<Vec<RecentRow>> {
    let mut sql = Sql::default();
    let marks = Marks::bind(&mut sql, scope);
    let v = sql.bind(Bind::Id(scope.viewer));
    if let Some(c) = scope.conversation {
        let c = sql.id(c);
        let w = sql.bind(Bind::Int(if whole { i64::MAX } else { RECENT_ROWS }));
        let range = marks.recent_range(&format!("m.conversation_id = {c}"), &w, contains);
        sql.push(&range);
        return sql.unprepared().query().load(conn);
    }
    let w = if whole {
        sql.bind(Bind::Int(i64::MAX))
    } else {
        "(SELECT n FROM w)".to_owned()
    };
    let [as_creator, as_peer, in_group] = feed_audiences("m", &v);
    let per_group = marks.recent_range(&in_group, &w, contains);
    sql.push(&format!(
        "WITH w AS MATERIALIZED ( \
             SELECT GREATEST({RECENT_MIN_PER_RANGE}, {RECENT_ROWS} / (2 + count(*)))::bigint AS n \
             FROM group_members WHERE contact_id = {v} \
         ) \
         ({}) UNION ALL ({}) \
         UNION ALL SELECT r.* FROM group_members g CROSS JOIN LATERAL ({per_group}) r \
             WHERE g.contact_id = {v}",
        marks.recent_range(&as_creator, &w, contains),
        marks.recent_range(&as_peer, &w, contains),
    ));
    sql.unprepared().query().load(conn)
}

/// Step 2. The terms the trigram index can find go to it as `LIKE`
/// patterns (escaped, bound); the rows it finds are then checked against
/// the other terms and the filters, and kept if the searcher sees them.
/// In a materialized `WITH`, so that no plan walks the time-ordered
/// indexes for a `LIMIT` instead, through every newer message of every
/// conversation: the page's order is applied to what the index found.
/// Without such a term, the searcher's ranges are read whole (a cost that
/// follows what they can see): every query has a term of three letters or
/// digits in a row (`SearchQuery`'s rule), so that is only a query of
/// letters beyond ASCII in a database whose locale makes no trigrams of
/// them. Runs in a transaction of its own (the door's reads run in none),
/// for its `SET LOCAL`.
pub(crate) fn indexed(conn: &mut PgConnection, scope: &SearchScope) -> QueryResult<Vec<Found>> {
    let unicode = trigrams_beyond_ascii(conn)?;
    let (by_index, rest): (Vec<&String>, Vec<&String>) =
        scope.terms.iter().partition(|t| has_trigram(t, unicode));
    if by_index.is_empty() {
        return whole_ranges(conn, scope);
    }
    // The index reads every row with all of the terms' trigrams, before
    // any check: few for a rare term, but every message for a term made
    // of common trigrams that no message has as a whole ("dolorem" where
    // every text has "dolor" and "lorem"). Past INDEX_TIMEOUT, the
    // searcher's own ranges are read whole instead: what that costs
    // follows what they can see, whatever the table holds.
    let by_index = by_index_query(scope, &by_index, &rest);
    let found = conn.transaction(|conn| {
        conn.batch_execute(&format!(
            "SET LOCAL statement_timeout = '{INDEX_TIMEOUT_MS}ms'"
        ))?;
        by_index.load(conn)
    });
    match found {
        Err(diesel::result::Error::DatabaseError(_, info))
            if info
                .message()
                .starts_with("canceling statement due to statement timeout") =>
        {
            whole_ranges(conn, scope)
        }
        found => found,
    }
}

/// How long step 2 may read the index before the searcher's ranges are
/// read whole instead ([`indexed`]).
const INDEX_TIMEOUT_MS: u32 = 150;

/// The matches among all of the searcher's messages: each range read to
/// its end, newest first.
fn whole_ranges(conn: &mut PgConnection, scope: &SearchScope) -> QueryResult<Vec<Found>> {
    let rows = recent_limited(conn, scope, true)?;
    let mut found: Vec<Found> = rows
        .into_iter()
        .filter(|r| r.hit)
        .map(|r| Found {
            created_at: r.created_at,
            id: r.id,
        })
        .collect();
    found.sort_unstable_by(|a, b| b.cmp(a));
    found.truncate(usize::try_from(scope.fetch).unwrap_or(usize::MAX));
    Ok(found)
}

/// [`indexed`]'s statement: `by_index` as `LIKE` patterns the index
/// serves, `rest` checked on the rows it finds.
fn by_index_query(
    scope: &SearchScope,
    by_index: &[&String],
    rest: &[&String],
) -> confab_store_sql::raw::RawQuery<diesel::pg::Pg> {
    let mut sql = Sql::default();
    let patterns: Vec<String> = by_index
        .iter()
        .map(|t| {
            let p = sql.bind(Bind::Text(like_anywhere(t)));
            format!("m.body_folded LIKE {p} ESCAPE '\\'")
        })
        .collect();
    let others: Vec<String> = rest
        .iter()
        .map(|t| {
            let t = sql.bind(Bind::Text((*t).clone()));
            format!(" AND {}", contains("m.body_folded", &t))
        })
        .collect();
    let marks = Marks::bind(
        &mut sql,
        &SearchScope {
            // Checked above, as patterns or substrings.
            terms: Vec::new(),
            ..scope.clone()
        },
    );
    let sees = match scope.conversation {
        Some(c) => {
            let c = sql.id(c);
            format!("m.conversation_id = {c}")
        }
        None => {
            let v = sql.id(scope.viewer);
            // As a condition on the rows found, never an index of its own.
            format!("({}) IS TRUE", feed_sees(&v))
        }
    };
    sql.push(&format!(
        "WITH found AS MATERIALIZED ( \
             SELECT m.id, m.created_at FROM messages m \
             WHERE {}{}{}{} AND {sees} \
         ) \
         SELECT created_at, id FROM found ORDER BY created_at DESC, id DESC LIMIT {}",
        patterns.join(" AND "),
        others.concat(),
        marks.sender("m"),
        marks.bounds("m"),
        marks.fetch,
    ));
    sql.unprepared().query()
}

/// Whether `term` has three letters or digits in a row, of which pg_trgm
/// makes a trigram (beyond ASCII only when `unicode`): a `LIKE` pattern
/// without one would read the whole index.
fn has_trigram(term: &str, unicode: bool) -> bool {
    let mut run = 0;
    for c in term.chars() {
        let word = c.is_ascii_alphanumeric() || (unicode && c.is_alphanumeric());
        run = if word { run + 1 } else { 0 };
        if run == 3 {
            return true;
        }
    }
    false
}

/// Whether pg_trgm makes trigrams of letters beyond ASCII in this
/// database (it follows the database's locale: a `C` database makes none
/// of CJK text), asked once per process.
fn trigrams_beyond_ascii(conn: &mut PgConnection) -> QueryResult<bool> {
    // 0: not asked yet; 1: no; 2: yes.
    static KNOWN: AtomicU8 = AtomicU8::new(0);
    match KNOWN.load(Ordering::Relaxed) {
        1 => return Ok(false),
        2 => return Ok(true),
        _ => {}
    }
    let yes: bool = diesel::select(diesel::dsl::sql::<Bool>(
        "COALESCE(array_length(show_trgm('東京都é'), 1), 0) > 0",
    ))
    .get_result(conn)?;
    KNOWN.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
    Ok(yes)
}

#[cfg(test)]
mod tests {
    use super::has_trigram;

    #[test]
    fn only_terms_with_three_word_characters_in_a_row_use_the_index() {
        assert!(has_trigram("abc", false));
        assert!(has_trigram("50%abc", false));
        assert!(!has_trigram("a.b.c", false));
        assert!(!has_trigram("!!!", false));
        assert!(!has_trigram("東京都", false));
        assert!(has_trigram("東京都", true));
        assert!(!has_trigram("ab_cd", true));
    }
}
