//! How each command opens the database, whatever the store
//! (`startup::open_service_as` does it): only `serve` and `migrate` change
//! the schema; every other command refuses while migrations are pending,
//! before it reads or writes anything and without taking the migration
//! lock. On PostgreSQL each connection names its command
//! (`application_name`, e.g. `confab token issue`), so that a session
//! holding the migration lock, or anything else, can be told apart in
//! `pg_stat_activity`.

use std::time::Duration;

use anyhow::anyhow;

use crate::app::config::Synchronous;

/// What a command does with the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Apply the pending migrations (`serve`, `migrate`).
    Migrate,
    /// Refuse while any migration is pending (every other command).
    Current,
}

/// How a command opens the database.
#[derive(Debug, Clone)]
pub struct Opening {
    /// While PostgreSQL cannot be reached, try again for this long
    /// (`CONFAB_DB_WAIT_SECS`; zero: fail at once).
    pub wait: Duration,
    /// Connections to the database (`CONFAB_DB_POOL_SIZE`); `None`: the
    /// store's default.
    pub pool_size: Option<u32>,
    /// SQLite's commits (`CONFAB_SQLITE_SYNCHRONOUS`).
    pub synchronous: Synchronous,
    /// PostgreSQL's `application_name` for this process's connections,
    /// unless the URL sets one; `None`: libpq's default.
    pub application_name: Option<String>,
    pub schema: Schema,
}

impl Opening {
    /// `serve`'s and `migrate`'s: migrate, waiting `wait` for PostgreSQL.
    pub fn migrating(wait: Duration) -> Self {
        Self {
            wait,
            pool_size: None,
            synchronous: Synchronous::default(),
            application_name: None,
            schema: Schema::Migrate,
        }
    }

    /// Every other command's: refuse while a migration is pending; fail at
    /// once when PostgreSQL does not answer.
    pub fn current_schema() -> Self {
        Self {
            schema: Schema::Current,
            ..Self::migrating(Duration::ZERO)
        }
    }

    /// Named `application_name` on PostgreSQL.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.application_name = Some(name.into());
        self
    }
}

/// `url` with `application_name` set to `name`, unless it sets one
/// already: a `postgres://` URL gets a query parameter (percent-encoded),
/// a `key=value` connection string a quoted pair.
pub fn with_application_name(url: &str, name: &str) -> String {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let given = if is_url {
        url.split_once('?').map_or("", |(_, query)| query)
    } else {
        url
    };
    let set = given
        .split(if is_url { '&' } else { ' ' })
        .any(|param| param.split('=').next().map(str::trim) == Some("application_name"));
    if set {
        return url.to_owned();
    }
    if is_url {
        let mut encoded = String::new();
        for b in name.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                encoded.push(char::from(b));
            } else {
                encoded.push_str(&format!("%{b:02X}"));
            }
        }
        let joint = if url.contains('?') { '&' } else { '?' };
        format!("{url}{joint}application_name={encoded}")
    } else {
        let quoted = name.replace('\\', "\\\\").replace('\'', "\\'");
        format!("{url} application_name='{quoted}'")
    }
}

/// The refusal of a command that does not migrate, on a database with
/// `pending` migrations (by name, oldest first).
pub fn pending_refusal(pending: &[String]) -> anyhow::Error {
    let (first, last) = (&pending[0], &pending[pending.len() - 1]);
    let which = if pending.len() == 1 {
        format!("1 migration is pending ({first})")
    } else {
        format!(
            "{} migrations are pending ({first} to {last})",
            pending.len()
        )
    };
    anyhow!(
        "{which}: run `confab migrate` first (only `confab migrate` and `confab serve` \
         change the schema; this command did nothing)"
    )
}

/// A command that does not migrate, on an SQLite file that does not
/// exist: refused before SQLite would create an empty one.
pub fn refuse_missing_sqlite_file(path: &str) -> anyhow::Result<()> {
    if path == ":memory:" || path.starts_with("file:") || std::path::Path::new(path).exists() {
        return Ok(());
    }
    Err(anyhow!(
        "there is no SQLite database at {path:?}: run `confab migrate` first, which makes \
         it (only `confab migrate` and `confab serve` change the schema; this command did \
         nothing)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_name_joins_the_url_unless_it_names_one() {
        assert_eq!(
            with_application_name("postgres://u@h/db", "confab token issue"),
            "postgres://u@h/db?application_name=confab%20token%20issue"
        );
        assert_eq!(
            with_application_name("postgres://u@h/db?sslmode=off", "confab serve"),
            "postgres://u@h/db?sslmode=off&application_name=confab%20serve"
        );
        assert_eq!(
            with_application_name("postgres://u@h/db?application_name=mine", "confab serve"),
            "postgres://u@h/db?application_name=mine"
        );
        assert_eq!(
            with_application_name("host=h dbname=db", "confab migrate"),
            "host=h dbname=db application_name='confab migrate'"
        );
        assert_eq!(
            with_application_name("host=h application_name=mine", "confab migrate"),
            "host=h application_name=mine"
        );
    }

    #[test]
    fn the_refusal_counts_and_names_the_pending() {
        let one = pending_refusal(&["2026-01-01-000000_a".to_owned()]).to_string();
        assert!(
            one.starts_with(
                "1 migration is pending (2026-01-01-000000_a): run `confab migrate` first"
            ),
            "{one}"
        );
        let two = pending_refusal(&["a".to_owned(), "b".to_owned()]).to_string();
        assert!(
            two.starts_with("2 migrations are pending (a to b)"),
            "{two}"
        );
    }
}
