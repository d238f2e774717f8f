//! Raw SQL with its binds, for statements whose shape diesel's query
//! builder cannot state (data-modifying `WITH`, `LATERAL`, the outbox's
//! `UNION ALL` arms), built once for both databases.
//!
//! Unlike diesel's `sql_query`, which is never kept prepared (so the
//! database parses and plans it on every execution), a [`RawQuery`] with
//! few binds is: diesel's statement cache keys it by its text, so each
//! shape is prepared once per connection. Statements with many binds (a
//! send with many attachments, a batch of recipients) vary in shape with
//! their size and stay unprepared, so that a connection's cache holds a
//! bounded number of statements.

use std::marker::PhantomData;

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{BigInt, HasSqlType, Nullable, Text, Untyped};
use diesel::{QueryResult, RunQueryDsl};

use crate::id::{DbId, IdSql};

/// Delimits a bind's number in the text (never part of SQL itself).
const MARK: char = '\u{1}';

/// Statements with more binds than this are not kept prepared.
pub(crate) const PREPARED_MAX_BINDS: usize = 32;

/// A bind of a raw statement.
#[derive(Debug, Clone)]
pub(crate) enum Bind {
    Id(DbId),
    Int(i64),
    Text(String),
    MaybeInt(Option<i64>),
    MaybeText(Option<String>),
}

/// Raw SQL and its binds. Each bind is named by the marker [`Sql::bind`]
/// returns, which the text may use once or more.
#[derive(Debug, Default)]
pub(crate) struct Sql {
    text: String,
    binds: Vec<Bind>,
}

impl Sql {
    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Adds a bind; returns its marker (to use once or more).
    pub(crate) fn bind(&mut self, b: Bind) -> String {
        self.binds.push(b);
        format!("{MARK}{}{MARK}", self.binds.len() - 1)
    }

    pub(crate) fn id(&mut self, id: DbId) -> String {
        self.bind(Bind::Id(id))
    }

    /// How many binds it has.
    pub(crate) fn binds(&self) -> usize {
        self.binds.len()
    }

    /// The statement, for diesel's `RunQueryDsl` (`load`, `execute`,
    /// `get_result`; rows as `QueryableByName`).
    pub(crate) fn query<DB>(self) -> RawQuery<DB> {
        RawQuery {
            sql: self,
            db: PhantomData,
        }
    }
}

/// A [`Sql`] as a diesel query of backend `DB`.
#[derive(Debug)]
pub(crate) struct RawQuery<DB> {
    sql: Sql,
    db: PhantomData<DB>,
}

impl<DB> QueryFragment<DB> for RawQuery<DB>
where
    DB: Backend + HasSqlType<IdSql> + HasSqlType<BigInt> + HasSqlType<Text>,
    DbId: ToSql<IdSql, DB>,
    i64: ToSql<BigInt, DB>,
    String: ToSql<Text, DB>,
    Option<i64>: ToSql<Nullable<BigInt>, DB>,
    Option<String>: ToSql<Nullable<Text>, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        if self.sql.binds.len() > PREPARED_MAX_BINDS {
            out.unsafe_to_cache_prepared();
        }
        // Text and bind numbers alternate; each use of a bind is a
        // placeholder of its own, in the backend's syntax.
        for (i, part) in self.sql.text.split(MARK).enumerate() {
            if i % 2 == 0 {
                out.push_sql(part);
                continue;
            }
            let bind = part
                .parse::<usize>()
                .ok()
                .and_then(|n| self.sql.binds.get(n))
                .ok_or_else(|| {
                    diesel::result::Error::QueryBuilderError(
                        format!("no bind numbered {part:?} in a raw statement").into(),
                    )
                })?;
            match bind {
                Bind::Id(v) => out.push_bind_param::<IdSql, _>(v)?,
                Bind::Int(v) => out.push_bind_param::<BigInt, _>(v)?,
                Bind::Text(v) => out.push_bind_param::<Text, _>(v)?,
                Bind::MaybeInt(v) => out.push_bind_param::<Nullable<BigInt>, _>(v)?,
                Bind::MaybeText(v) => out.push_bind_param::<Nullable<Text>, _>(v)?,
            }
        }
        Ok(())
    }
}

impl<DB> QueryId for RawQuery<DB> {
    type QueryId = ();
    /// Keyed by its text in diesel's statement cache.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<DB: Backend> Query for RawQuery<DB> {
    type SqlType = Untyped;
}

impl<DB, Conn> RunQueryDsl<Conn> for RawQuery<DB> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_number_the_binds_in_order() {
        let mut sql = Sql::default();
        let a = sql.bind(Bind::Int(1));
        let b = sql.bind(Bind::Text("x".into()));
        sql.push(&format!("SELECT {a}, {b}, {a}"));
        assert_eq!(sql.binds(), 2);
        let parts: Vec<&str> = sql.text.split(MARK).collect();
        assert_eq!(parts, ["SELECT ", "0", ", ", "1", ", ", "0", ""]);
    }

    /// A statement with few binds is prepared once and reused; one with
    /// many is prepared for each execution (diesel's cache reports each
    /// statement it keeps).
    #[cfg(feature = "sqlite")]
    #[test]
    fn few_binds_stay_prepared_many_do_not() {
        use std::sync::{Arc, Mutex};

        use diesel::connection::{Connection, InstrumentationEvent, SimpleConnection};
        use diesel::sqlite::{Sqlite, SqliteConnection};

        #[derive(diesel::QueryableByName)]
        struct Total {
            #[diesel(sql_type = BigInt)]
            total: i64,
        }

        fn sum(n: usize) -> RawQuery<Sqlite> {
            let mut sql = Sql::default();
            let terms: Vec<String> = (0..n).map(|i| sql.bind(Bind::Int(i as i64))).collect();
            let t = sql.bind(Bind::Text("t".into()));
            sql.push(&format!(
                "SELECT {} AS total FROM t WHERE name = {t}",
                terms.join(" + ")
            ));
            sql.query()
        }

        let mut conn = SqliteConnection::establish(":memory:").expect("open");
        conn.batch_execute("CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('t');")
            .expect("table");
        let cached = Arc::new(Mutex::new(Vec::new()));
        let seen = cached.clone();
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::CacheQuery { sql, .. } = event {
                seen.lock().expect("lock").push(sql.to_owned());
            }
        });
        for _ in 0..3 {
            let few: Total = sum(3).get_result(&mut conn).expect("few");
            assert_eq!(few.total, 3);
        }
        assert_eq!(cached.lock().expect("lock").len(), 1, "{cached:?}");
        for _ in 0..3 {
            let many: Total = sum(PREPARED_MAX_BINDS).get_result(&mut conn).expect("many");
            assert_eq!(many.total, (0..PREPARED_MAX_BINDS as i64).sum::<i64>());
        }
        assert_eq!(cached.lock().expect("lock").len(), 1, "{cached:?}");
    }
}
