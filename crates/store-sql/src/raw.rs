//! Raw SQL with its binds, for statements whose shape diesel's query
//! builder cannot state (data-modifying `WITH`, `LATERAL`, the outbox's
//! `UNION ALL` arms), built once for both databases: whole statements
//! ([`RawQuery`]), or written out once per shape ([`Shape`]).
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
use diesel::query_builder::{
    AstPass, BoxedSqlQuery, Query, QueryBuilder, QueryFragment, QueryId, SqlQuery,
};
use diesel::serialize::ToSql;
use diesel::sql_types::{BigInt, HasSqlType, Integer, Nullable, Text, Untyped};
use diesel::{QueryResult, RunQueryDsl};

use crate::id::{DbId, IdSql};

/// Delimits a bind's number in the text (never part of SQL itself).
const MARK: char = '\u{1}';

/// Statements with more binds than this are not kept prepared.
pub const PREPARED_MAX_BINDS: usize = 32;

/// A bind of a raw statement.
#[derive(Debug, Clone)]
pub enum Bind {
    Id(DbId),
    Int(i64),
    /// A 32-bit integer (an `INTEGER` column).
    Int32(i32),
    Text(String),
    MaybeInt(Option<i64>),
    /// A nullable 32-bit integer.
    MaybeInt32(Option<i32>),
    MaybeText(Option<String>),
    MaybeId(Option<DbId>),
}

/// Raw SQL and its binds. Each bind is named by the marker [`Sql::bind`]
/// returns, which the text may use once or more.
#[derive(Debug, Default)]
pub struct Sql {
    text: String,
    binds: Vec<Bind>,
    /// Never kept prepared ([`Sql::unprepared`]).
    unprepared: bool,
}

impl Sql {
    /// This statement, never kept prepared: for statements whose text
    /// varies with their input (a search's terms and filters), which
    /// would otherwise fill each connection's statement cache, and the
    /// database's memory, with a plan per variant a client can make.
    #[must_use]
    pub fn unprepared(mut self) -> Self {
        self.unprepared = true;
        self
    }

    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Adds a bind; returns its marker (to use once or more).
    pub fn bind(&mut self, b: Bind) -> String {
        self.binds.push(b);
        format!("{MARK}{}{MARK}", self.binds.len() - 1)
    }

    pub fn id(&mut self, id: DbId) -> String {
        self.bind(Bind::Id(id))
    }

    /// Takes in `other`'s binds; returns its text with its markers
    /// renumbered to name them here (to be pushed where it belongs).
    pub fn absorb(&mut self, other: Sql) -> String {
        let shift = self.binds.len();
        self.binds.extend(other.binds);
        other
            .text
            .split(MARK)
            .enumerate()
            .map(|(i, part)| match part.parse::<usize>() {
                Ok(n) if i % 2 == 1 => format!("{MARK}{}{MARK}", n + shift),
                _ if i % 2 == 1 => format!("{MARK}{part}{MARK}"),
                _ => part.to_owned(),
            })
            .collect()
    }

    /// How many binds it has.
    pub fn binds(&self) -> usize {
        self.binds.len()
    }

    /// The statement, for diesel's `RunQueryDsl` (`load`, `execute`,
    /// `get_result`; rows as `QueryableByName`).
    pub fn query<DB>(self) -> RawQuery<DB> {
        RawQuery {
            sql: self.split(),
            db: PhantomData,
        }
    }

    /// The text split at its markers, once: diesel walks a statement
    /// three times an execution (its text, its binds, whether it may be
    /// kept prepared).
    fn split(self) -> Split {
        Split {
            parts: parts(&self.text),
            binds: self.binds,
            unprepared: self.unprepared,
        }
    }
}

/// A [`Sql`] as a diesel query of backend `DB`.
#[derive(Debug)]
pub struct RawQuery<DB> {
    sql: Split,
    db: PhantomData<DB>,
}

/// A [`Sql`]'s text split at its markers, and its binds.
#[derive(Debug)]
struct Split {
    parts: Vec<Part>,
    binds: Vec<Bind>,
    unprepared: bool,
}

/// A statement's text and bind numbers, in turn.
#[derive(Debug)]
enum Part {
    Text(String),
    /// A bind's number; `usize::MAX` for a marker that is not a number,
    /// which fails the statement ("no bind numbered").
    Bind(usize),
}

/// `text` split at its markers: text and bind numbers alternate.
fn parts(text: &str) -> Vec<Part> {
    text.split(MARK)
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 0 {
                Part::Text(part.to_owned())
            } else {
                Part::Bind(part.parse().unwrap_or(usize::MAX))
            }
        })
        .collect()
}

impl<DB: RawDb> QueryFragment<DB> for Split {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        walk_parts(out, &self.parts, &self.binds, self.unprepared)
    }
}

/// A backend that every [`Bind`] serializes to (both of ours). Generic
/// code binds through it: what each bind needs of the backend is proved
/// once here, for each backend, instead of at each use.
pub trait RawDb: Backend {
    /// Pushes `bind` where its placeholder goes.
    fn push_bind<'b>(out: &mut AstPass<'_, 'b, Self>, bind: &'b Bind) -> QueryResult<()>;

    /// `query` with `bind` bound after its other binds (diesel's
    /// `sql_query(..).bind(..)`).
    fn bind_next(
        query: BoxedSqlQuery<'static, Self, SqlQuery>,
        bind: Bind,
    ) -> BoxedSqlQuery<'static, Self, SqlQuery>;

    /// `name` quoted as diesel's query builder quotes identifiers for the
    /// database (PostgreSQL `"name"`, SQLite `` `name` ``).
    fn identifier(name: &str) -> QueryResult<String>;
}

impl<DB> RawDb for DB
where
    DB::QueryBuilder: Default,
    DB: Backend + HasSqlType<IdSql> + HasSqlType<BigInt> + HasSqlType<Integer> + HasSqlType<Text>,
    DbId: ToSql<IdSql, DB>,
    i64: ToSql<BigInt, DB>,
    i32: ToSql<Integer, DB>,
    Option<i32>: ToSql<Nullable<Integer>, DB>,
    String: ToSql<Text, DB>,
    Option<i64>: ToSql<Nullable<BigInt>, DB>,
    Option<String>: ToSql<Nullable<Text>, DB>,
    Option<DbId>: ToSql<Nullable<IdSql>, DB>,
{
    fn push_bind<'b>(out: &mut AstPass<'_, 'b, Self>, bind: &'b Bind) -> QueryResult<()> {
        match bind {
            Bind::Id(v) => out.push_bind_param::<IdSql, _>(v),
            Bind::Int(v) => out.push_bind_param::<BigInt, _>(v),
            Bind::Int32(v) => out.push_bind_param::<Integer, _>(v),
            Bind::Text(v) => out.push_bind_param::<Text, _>(v),
            Bind::MaybeInt(v) => out.push_bind_param::<Nullable<BigInt>, _>(v),
            Bind::MaybeInt32(v) => out.push_bind_param::<Nullable<Integer>, _>(v),
            Bind::MaybeText(v) => out.push_bind_param::<Nullable<Text>, _>(v),
            Bind::MaybeId(v) => out.push_bind_param::<Nullable<IdSql>, _>(v),
        }
    }

    fn bind_next(
        query: BoxedSqlQuery<'static, Self, SqlQuery>,
        bind: Bind,
    ) -> BoxedSqlQuery<'static, Self, SqlQuery> {
        match bind {
            Bind::Id(v) => query.bind::<IdSql, _>(v),
            Bind::Int(v) => query.bind::<BigInt, _>(v),
            Bind::Int32(v) => query.bind::<Integer, _>(v),
            Bind::Text(v) => query.bind::<Text, _>(v),
            Bind::MaybeInt(v) => query.bind::<Nullable<BigInt>, _>(v),
            Bind::MaybeInt32(v) => query.bind::<Nullable<Integer>, _>(v),
            Bind::MaybeText(v) => query.bind::<Nullable<Text>, _>(v),
            Bind::MaybeId(v) => query.bind::<Nullable<IdSql>, _>(v),
        }
    }

    fn identifier(name: &str) -> QueryResult<String> {
        let mut out = DB::QueryBuilder::default();
        out.push_identifier(name)?;
        Ok(out.finish())
    }
}

/// A statement whose text numbers its own placeholders, in the database's
/// syntax, with `binds` for them in their order: diesel's `sql_query` with
/// its binds (never kept prepared), as one type whatever the binds, which
/// generic code can name (`crate::run`).
pub fn numbered<DB: RawDb>(text: String, binds: Vec<Bind>) -> Numbered<DB> {
    binds
        .into_iter()
        .fold(diesel::sql_query(text).into_boxed(), DB::bind_next)
}

/// A statement of [`numbered`].
pub type Numbered<DB> = BoxedSqlQuery<'static, DB, SqlQuery>;

/// The text of `parts` with `binds` where their numbers are: each use of
/// a bind is a placeholder of its own, in the backend's syntax.
fn walk_parts<'b, DB: RawDb>(
    mut out: AstPass<'_, 'b, DB>,
    parts: &'b [Part],
    binds: &'b [Bind],
    unprepared: bool,
) -> QueryResult<()> {
    if unprepared || binds.len() > PREPARED_MAX_BINDS {
        out.unsafe_to_cache_prepared();
    }
    for part in parts {
        let n = match part {
            Part::Text(text) => {
                out.push_sql(text);
                continue;
            }
            Part::Bind(n) => *n,
        };
        let bind = binds.get(n).ok_or_else(|| {
            diesel::result::Error::QueryBuilderError(
                format!("no bind numbered {n} in a raw statement").into(),
            )
        })?;
        DB::push_bind(&mut out, bind)?;
    }
    Ok(())
}

/// The marker of the bind numbered `n`, for a [`Shape`]'s text, whose
/// binds are numbered beforehand (a [`Sql`] numbers them as they come).
pub fn marker(n: usize) -> String {
    format!("{MARK}{n}{MARK}")
}

/// The text of a statement that runs often, split once at its markers
/// ([`marker`]): kept in a `static` per shape, it is not formatted nor
/// searched again on each execution, only walked ([`Shape::typed`]).
#[derive(Debug)]
pub struct Shape {
    parts: Vec<Part>,
}

impl Shape {
    pub fn new(text: &str) -> Self {
        Self { parts: parts(text) }
    }

    /// The statement with these binds (numbered by their place), as a
    /// query whose rows have the SQL types `ST`, in the order of its select
    /// list: loaded like a query of diesel's builder with that select
    /// clause (`Queryable`, `Selectable`), by position, not by column name.
    pub fn typed<DB, ST>(&'static self, binds: Vec<Bind>) -> TypedQuery<DB, ST> {
        TypedQuery {
            shape: self,
            binds,
            types: PhantomData,
        }
    }
}

impl<DB: Backend> QueryFragment<DB> for RawQuery<DB>
where
    Split: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.sql.walk_ast(out)
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

/// A [`Shape`] with its binds as a diesel query of backend `DB` whose rows
/// have the SQL types `ST` ([`Shape::typed`]). Walking its parts is the
/// whole cost of rendering it, where diesel's query builder renders a
/// statement again on every execution (to find it among the prepared
/// ones), quoting and copying each identifier: for a page of messages a
/// sixth of the server's instructions per request (docs/performance.md).
pub struct TypedQuery<DB, ST> {
    shape: &'static Shape,
    binds: Vec<Bind>,
    types: PhantomData<fn() -> (DB, ST)>,
}

impl<DB, ST> std::fmt::Debug for TypedQuery<DB, ST> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedQuery")
            .field("shape", self.shape)
            .field("binds", &self.binds)
            .finish()
    }
}

impl<DB: RawDb, ST> QueryFragment<DB> for TypedQuery<DB, ST> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        walk_parts(out, &self.shape.parts, &self.binds, false)
    }
}

impl<DB, ST> QueryId for TypedQuery<DB, ST> {
    type QueryId = ();
    /// Keyed by its text in diesel's statement cache.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<DB: Backend, ST> Query for TypedQuery<DB, ST> {
    type SqlType = ST;
}

impl<DB, ST, Conn> RunQueryDsl<Conn> for TypedQuery<DB, ST> {}

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

    /// A shape's binds go where their markers are, by number, each use a
    /// placeholder of its own; its rows are read by position into the
    /// types it was given; it is prepared once; and a marker without its
    /// bind fails the statement instead of running it.
    #[cfg(feature = "sqlite")]
    #[test]
    fn shapes_bind_by_number_and_read_rows_by_position() {
        use std::sync::{Arc, Mutex, OnceLock};

        use diesel::connection::{Connection, InstrumentationEvent};
        use diesel::sqlite::{Sqlite, SqliteConnection};

        static SHAPE: OnceLock<Shape> = OnceLock::new();
        let shape = SHAPE.get_or_init(|| {
            let (a, b, t) = (marker(0), marker(1), marker(2));
            Shape::new(&format!("SELECT {b} - {a}, {t} || {t}, {a}"))
        });
        let mut conn = SqliteConnection::establish(":memory:").expect("open");
        let cached = Arc::new(Mutex::new(0));
        let seen = cached.clone();
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::CacheQuery { .. } = event {
                *seen.lock().expect("lock") += 1;
            }
        });
        for (a, b) in [(1, 10), (5, 7)] {
            let binds = vec![Bind::Int(a), Bind::Int(b), Bind::Text("ab".into())];
            let row: (i64, String, i64) = shape
                .typed::<Sqlite, (BigInt, Text, BigInt)>(binds)
                .get_result(&mut conn)
                .expect("row");
            assert_eq!(row, (b - a, "abab".to_owned(), a));
        }
        assert_eq!(*cached.lock().expect("lock"), 1);

        let short = vec![Bind::Int(1), Bind::Int(2)];
        let error = shape
            .typed::<Sqlite, (BigInt, Text, BigInt)>(short)
            .get_result::<(i64, String, i64)>(&mut conn)
            .expect_err("bind 2 is missing");
        assert!(error.to_string().contains("no bind numbered 2"), "{error}");
    }
}
