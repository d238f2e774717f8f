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
    pub fn uuid(self) -> Uuid {
        self.0
    }
}

impl From<Uuid> for DbId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

/// How a backend writes and reads [`IdSql`] values.
pub trait IdColumn: Backend + HasSqlType<IdSql> {
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

/// Ids are native `uuid` values: 16 bytes on the wire.
#[cfg(feature = "postgres")]
impl IdColumn for diesel::pg::Pg {
    fn write_id<'b>(id: &'b Uuid, out: &mut Output<'b, '_, diesel::pg::Pg>) -> serialize::Result {
        std::io::Write::write_all(out, id.as_bytes())?;
        Ok(serialize::IsNull::No)
    }

    fn read_id(value: diesel::pg::PgValue<'_>) -> deserialize::Result<Uuid> {
        Ok(Uuid::from_slice(value.as_bytes())?)
    }
}

/// Ids are `TEXT`: lowercase hyphenated UUIDs.
#[cfg(feature = "sqlite")]
impl IdColumn for diesel::sqlite::Sqlite {
    fn write_id<'b>(
        id: &'b Uuid,
        out: &mut Output<'b, '_, diesel::sqlite::Sqlite>,
    ) -> serialize::Result {
        out.set_value(id.hyphenated().to_string());
        Ok(serialize::IsNull::No)
    }

    fn read_id(mut value: diesel::sqlite::SqliteValue<'_, '_, '_>) -> deserialize::Result<Uuid> {
        Ok(Uuid::parse_str(value.read_text())?)
    }
}
