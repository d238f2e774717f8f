//! Search (docs/api.md "Search messages") as both stores run it, in two steps whose
//! cost follows what the searcher can see, never the size of the store.
//!
//! 1. **Recent** (`per-backend/queries/search.rs`): each of the
//!    searcher's audience ranges (the feed's: their direct conversations as
//!    creator, as peer, and each group; or the one conversation of the
//!    filter) is read newest first, at most [`per_range`] rows each, and
//!    every row is checked against the terms. A range that ends before
//!    that many rows is read whole. What was read answers the page exactly
//!    when it holds enough matches newer than every range's last row read
//!    ([`settle`]): a term the searcher's recent messages are full of (the
//!    costly one for any index) is answered here.
//! 2. **Indexed** (each store's own): the store's trigram index finds the
//!    messages with the terms, of which the searcher's are kept, newest
//!    first. Reached by a rare term or one with no match, for which the
//!    index finds few rows.
//!
//! Both compare the text as the domain folds it (`messages.body_folded`,
//! [`confab_domain::fold`]), case-sensitively, each term a bound value: no
//! text of a query becomes SQL syntax.

use diesel::sql_types::{BigInt, Bool};
use diesel::QueryableByName;

use crate::id::{DbId, IdSql};
use crate::raw::{Bind, Sql};

/// The rows step 1 reads in all, shared among the searcher's ranges.
pub const RECENT_ROWS: i64 = 2_000;

/// The fewest rows step 1 reads of each range, however many there are.
pub const RECENT_MIN_PER_RANGE: i64 = 20;

/// The rows step 1 reads of each of `ranges` ranges.
pub fn per_range(ranges: usize) -> i64 {
    let ranges = i64::try_from(ranges.max(1)).unwrap_or(i64::MAX);
    (RECENT_ROWS / ranges).max(RECENT_MIN_PER_RANGE)
}

/// What one search looks for, in the store's terms.
#[derive(Debug, Clone)]
pub struct SearchScope {
    /// The searcher.
    pub viewer: DbId,
    /// The terms, folded, each at least 3 characters.
    pub terms: Vec<String>,
    /// Only this conversation (the searcher's: checked before).
    pub conversation: Option<DbId>,
    /// Only this sender's messages.
    pub sender: Option<DbId>,
    /// Only messages created at or after (microseconds).
    pub from: Option<i64>,
    /// Only messages created before (microseconds).
    pub until: Option<i64>,
    /// Only messages after this one in the list: its `(created_at, id)`.
    pub cursor: Option<(i64, DbId)>,
    /// How many rows the page needs (its size and one more).
    pub fetch: i64,
}

/// A row step 1 read: a match, or a range's last row read (or both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, QueryableByName)]
pub struct RecentRow {
    #[diesel(sql_type = IdSql)]
    pub id: DbId,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    /// It has every term (and the filter's sender).
    #[diesel(sql_type = Bool)]
    pub hit: bool,
    /// Its range had more rows than were read: this is the oldest read.
    #[diesel(sql_type = Bool)]
    pub boundary: bool,
}

/// A message found, by its place in the list: `(created_at, id)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, QueryableByName)]
pub struct Found {
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = IdSql)]
    pub id: DbId,
}

/// Step 1's answer, when it is exact: the newest `fetch` matches, newest
/// first. Every range was read at least down to the newest of the
/// boundaries (a range without one was read whole), so the matches at or
/// above it are all of them there; if they are `fetch` or more, no match
/// below can be on the page. `None`: step 2 must answer.
///
/// Each range's rows may stop at its `fetch` newest matches (no more of
/// one range can be on the page), besides its boundary.
pub fn settle(rows: &[RecentRow], fetch: usize) -> Option<Vec<Found>> {
    let boundary = rows
        .iter()
        .filter(|r| r.boundary)
        .map(|r| (r.created_at, r.id))
        .max();
    let mut hits: Vec<Found> = rows
        .iter()
        .filter(|r| r.hit && boundary.is_none_or(|b| (r.created_at, r.id) >= b))
        .map(|r| Found {
            created_at: r.created_at,
            id: r.id,
        })
        .collect();
    if boundary.is_some() && hits.len() < fetch {
        return None;
    }
    hits.sort_unstable_by(|a, b| b.cmp(a));
    hits.dedup();
    hits.truncate(fetch);
    Some(hits)
}

/// `term` as a LIKE pattern that matches it anywhere, literally: `\`, `%`
/// and `_` escaped with `\`.
pub fn like_anywhere(term: &str) -> String {
    let mut pattern = String::with_capacity(term.len() + 2);
    pattern.push('%');
    for c in term.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// `term` as one FTS5 phrase (a substring, for the trigram tokenizer):
/// quoted, its quotes doubled, so that nothing in it is query syntax.
pub fn fts_phrase(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// A search's values bound in a statement ([`Marks::bind`]), by marker:
/// each is bound once, however many ranges use it.
#[derive(Debug)]
pub struct Marks {
    terms: Vec<String>,
    sender: Option<String>,
    from: Option<String>,
    until: Option<String>,
    cursor: Option<(String, String)>,
    /// The page's rows.
    pub fetch: String,
}

impl Marks {
    /// Binds `scope`'s terms, filters, cursor and page size in `sql`.
    pub fn bind(sql: &mut Sql, scope: &SearchScope) -> Self {
        Self {
            terms: scope
                .terms
                .iter()
                .map(|t| sql.bind(Bind::Text(t.clone())))
                .collect(),
            sender: scope.sender.map(|s| sql.id(s)),
            from: scope.from.map(|at| sql.bind(Bind::Int(at))),
            until: scope.until.map(|at| sql.bind(Bind::Int(at))),
            cursor: scope
                .cursor
                .map(|(at, id)| (sql.bind(Bind::Int(at)), sql.id(id))),
            fetch: sql.bind(Bind::Int(scope.fetch)),
        }
    }

    /// Whether row `m` of `messages` has every term (`contains(text,
    /// term)`: the backend's substring test, an SQL expression) and the
    /// filter's sender.
    pub fn hit(&self, m: &str, contains: fn(&str, &str) -> String) -> String {
        let mut all: Vec<String> = self
            .terms
            .iter()
            .map(|t| contains(&format!("{m}.body_folded"), t))
            .collect();
        all.extend(self.sender.as_ref().map(|s| format!("{m}.sender_id = {s}")));
        format!("({})", all.join(" AND "))
    }

    /// ` AND ...` for the filter's sender on row `m`, if any.
    pub fn sender(&self, m: &str) -> String {
        self.sender
            .as_ref()
            .map(|s| format!(" AND {m}.sender_id = {s}"))
            .unwrap_or_default()
    }

    /// ` AND ...` for the filter's times and the cursor, on row `m`: what
    /// bounds a range of the `(..., created_at, id)` indexes.
    pub fn bounds(&self, m: &str) -> String {
        let mut out = String::new();
        if let Some(from) = &self.from {
            out.push_str(&format!(" AND {m}.created_at >= {from}"));
        }
        if let Some(until) = &self.until {
            out.push_str(&format!(" AND {m}.created_at < {until}"));
        }
        if let Some((at, id)) = &self.cursor {
            out.push_str(&format!(" AND ({m}.created_at, {m}.id) < ({at}, {id})"));
        }
        out
    }

    /// Step 1's statement for one range: the messages where `audience`
    /// holds (of `messages m`), newest first, at most `per_range` (an SQL
    /// expression) of them, as [`RecentRow`]s: the matches among them, at
    /// most the page's rows, and the last row read if there were as many
    /// as that (the range may hold more).
    pub fn recent_range(
        &self,
        audience: &str,
        per_range: &str,
        contains: fn(&str, &str) -> String,
    ) -> String {
        format!(
            "SELECT r.id, r.created_at, r.hit, r.nth = {per_range} AS boundary FROM ( \
                 SELECT x.id, x.created_at, x.hit, \
                     ROW_NUMBER() OVER (ORDER BY x.created_at DESC, x.id DESC) AS nth, \
                     SUM(CASE WHEN x.hit THEN 1 ELSE 0 END) OVER ( \
                         ORDER BY x.created_at DESC, x.id DESC ROWS UNBOUNDED PRECEDING) AS hits \
                 FROM ( \
                     SELECT m.id, m.created_at, COALESCE({hit}, 1 = 0) AS hit FROM messages m \
                     WHERE {audience}{bounds} \
                     ORDER BY m.created_at DESC, m.id DESC LIMIT {per_range} \
                 ) x \
             ) r WHERE (r.hit AND r.hits <= {fetch}) OR r.nth = {per_range}",
            hit = self.hit("m", contains),
            bounds = self.bounds("m"),
            fetch = self.fetch,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn row(at: i64, hit: bool, boundary: bool) -> RecentRow {
        RecentRow {
            id: DbId::from(Uuid::from_u128(at as u128)),
            created_at: at,
            hit,
            boundary,
        }
    }

    fn ats(found: &[Found]) -> Vec<i64> {
        found.iter().map(|f| f.created_at).collect()
    }

    #[test]
    fn ranges_read_whole_answer_whatever_they_hold() {
        let rows = [
            row(5, true, false),
            row(9, true, false),
            row(7, true, false),
        ];
        assert_eq!(ats(&settle(&rows, 2).expect("exact")), [9, 7]);
        assert_eq!(ats(&settle(&rows, 10).expect("exact")), [9, 7, 5]);
        assert_eq!(settle(&[], 3), Some(vec![]));
    }

    #[test]
    fn a_cut_range_answers_only_with_enough_matches_above_every_boundary() {
        // Range A read whole; range B cut at 6 (its rows below unread).
        let rows = [
            row(10, true, false),
            row(8, true, false),
            row(3, true, false),
            row(6, false, true),
        ];
        // Two matches at or above 6: a page of two is exact.
        assert_eq!(ats(&settle(&rows, 2).expect("exact")), [10, 8]);
        // A third could be in B below 6: not exact.
        assert_eq!(settle(&rows, 3), None);
        // The newest boundary counts: a match at 7 is below it.
        let rows = [
            row(9, true, false),
            row(7, true, false),
            row(8, false, true),
            row(2, false, true),
        ];
        assert_eq!(settle(&rows, 2), None);
        assert_eq!(ats(&settle(&rows, 1).expect("exact")), [9]);
        // A boundary that is a match counts as one.
        let rows = [row(9, true, false), row(8, true, true)];
        assert_eq!(ats(&settle(&rows, 2).expect("exact")), [9, 8]);
    }

    #[test]
    fn patterns_and_phrases_keep_every_character_literal() {
        assert_eq!(like_anywhere("50%_a\\b"), "%50\\%\\_a\\\\b%");
        assert_eq!(like_anywhere("東京都"), "%東京都%");
        assert_eq!(fts_phrase("say \"hi\" OR NOT"), "\"say \"\"hi\"\" OR NOT\"");
        assert_eq!(per_range(1), RECENT_ROWS);
        assert_eq!(per_range(0), RECENT_ROWS);
        assert_eq!(per_range(10_000), RECENT_MIN_PER_RANGE);
    }
}
