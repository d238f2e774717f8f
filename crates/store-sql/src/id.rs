//! Ids in the database: one SQL type, [`IdSql`], for every id column, and
//! one Rust type, [`DbId`], that each backend encodes its own way
//! ([`IdColumn`]): PostgreSQL as its native `uuid`, SQLite as lowercase
//! hyphenated `TEXT`, whose text order is the UUID's byte order (the order
//! PostgreSQL's `uuid` sorts by), so lists page identically on both.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::query_builder::QueryId;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::{HasSqlType, SqlType};
use uuid::Uuid;

/// The SQL type of every id column.
#[derive(Debug, Clone, Copy, Default, QueryId, SqlType)]
#[cfg_attr(
    feature = "postgres",
    diesel(postgres_type(oid = 2950, array_oid = 2951))
)]
#[cfg_attr(feature = "sqlite", diesel(sqlite_type(name = "Text")))]
pub struct IdSql;

/// An id as the database stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, AsExpression, FromSqlRow)]
#[diesel(sql_type = IdSql)]
pub struct DbId(Uuid);

impl DbId {
    pub(crate) fn uuid(self) -> Uuid {
        self.0
    }
}

impl From<Uuid> for DbId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

/// How a backend writes and reads [`IdSql`] values.
pub(crate) trait IdColumn: Backend + HasSqlType<IdSql> {
    fn write_id<'b>(id: &'b Uuid, out: &mut Output<'b, '_, Self>) -> serialize::Result;
    fn read_id(value: Self::RawValue<'_>) -> deserialize::Result<Uuid>;
}

impl<DB: IdColumn> ToSql<IdSql, DB> for DbId {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
        DB::write_id(&self.0, out)
    }
}

impl<DB: IdColumn> FromSql<IdSql, DB> for DbId {
    fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
        DB::read_id(value).map(Self)
    }
}
