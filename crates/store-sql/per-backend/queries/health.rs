//! The health check.

use diesel::prelude::*;

use super::{Conn, Result};

pub(crate) fn ping(conn: &mut Conn) -> Result<()> {
    diesel::sql_query("SELECT 1").execute(conn)?;
    Ok(())
}
