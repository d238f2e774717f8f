//! The health check.

use super::Result;
use crate::raw::Sql;
use crate::run::Exec;
use crate::SqlBackend;

/// Whether the database answers: `SELECT 1`, never kept prepared (as
/// diesel's `sql_query` would run it).
pub fn ping<B: SqlBackend>(conn: &mut B::Conn) -> Result<()> {
    let mut sql = Sql::default();
    sql.push("SELECT 1");
    conn.exec(sql.unprepared().query::<B::Db>())?;
    Ok(())
}
