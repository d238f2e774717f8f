//! The health check.

/// Expands the functions of this file in a backend's `queries` module (see
/// [`super::instantiate`]).
macro_rules! expand {
    () => {
        use diesel::prelude::*;

        use super::{Conn, Result};

        pub(crate) fn ping(conn: &mut Conn) -> Result<()> {
            diesel::sql_query("SELECT 1").execute(conn)?;
            Ok(())
        }
    };
}
pub(crate) use expand;
