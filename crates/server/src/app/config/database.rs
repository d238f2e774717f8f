//! Where the data lives (`DATABASE_URL`) and how to reach it: the
//! database, the pooler in front of PostgreSQL, the listening connection.

use super::*;

/// Where the data lives (`DATABASE_URL`).
#[derive(Clone, PartialEq, Eq)]
pub enum Database {
    /// A PostgreSQL connection URL (may hold a password: never printed).
    Postgres(String),
    /// The path of an SQLite database file.
    Sqlite(String),
}

impl Database {
    /// The file used when `DATABASE_URL` is unset.
    pub const DEFAULT_SQLITE_FILE: &'static str = "confab.db";

    /// Reads a `DATABASE_URL` value:
    /// - unset: SQLite file `confab.db` in the working directory;
    /// - `postgres://...` or `postgresql://...`: PostgreSQL, the URL as is;
    /// - `sqlite://path`, `sqlite:path` or a plain file path: SQLite;
    /// - empty, or any other scheme (`mysql://...`): an error naming
    ///   `DATABASE_URL`.
    pub fn from_env_value(value: Option<&str>) -> anyhow::Result<Database> {
        let Some(value) = value else {
            return Ok(Self::Sqlite(Self::DEFAULT_SQLITE_FILE.to_owned()));
        };
        let value = value.trim();
        if value.is_empty() {
            bail!("DATABASE_URL is empty: unset it to use {}, or give a postgres:// URL or an SQLite file path", Self::DEFAULT_SQLITE_FILE);
        }
        let lower = value.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return Ok(Self::Postgres(value.to_owned()));
        }
        let sqlite_path = if lower.starts_with("sqlite://") {
            Some(&value["sqlite://".len()..])
        } else if lower.starts_with("sqlite:") {
            Some(&value["sqlite:".len()..])
        } else {
            None
        };
        if let Some(path) = sqlite_path {
            if path.is_empty() {
                bail!("DATABASE_URL {value:?} names no SQLite file");
            }
            return Ok(Self::Sqlite(path.to_owned()));
        }
        if let Some(scheme) = url_scheme(value) {
            bail!(
                "DATABASE_URL has the unsupported scheme {scheme:?}: use postgres://..., sqlite:<path> or a file path"
            );
        }
        Ok(Self::Sqlite(value.to_owned()))
    }
}

/// The scheme of something shaped like a URL (`x:` with a scheme of at
/// least two characters, so that a Windows drive letter is still a path).
fn url_scheme(value: &str) -> Option<&str> {
    let (scheme, _) = value.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let ok = scheme.len() >= 2
        && first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some(scheme)
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The URL may carry a password.
            Self::Postgres(_) => f.write_str("Postgres(<redacted>)"),
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
        }
    }
}

/// Where the data lives and how to reach it.
#[derive(Clone)]
pub struct DatabaseConfig {
    /// `DATABASE_URL`.
    pub database: Database,
    /// `CONFAB_DB_POOLER`.
    pub pooler: Pooler,
    /// `CONFAB_LISTEN_DATABASE_URL` (may hold a password: never printed).
    pub listen_url: Option<String>,
    /// `CONFAB_SEARCH_CONNECTIONS`: searches that run at once, each on a
    /// connection of their own; `None`: the store's default.
    pub search_connections: Option<u32>,
}

impl fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URLs may carry passwords.
        f.debug_struct("DatabaseConfig")
            .field("database", &self.database)
            .field("pooler", &self.pooler)
            .field(
                "listen_url",
                &self.listen_url.as_ref().map(|_| "<redacted>"),
            )
            .field("search_connections", &self.search_connections)
            .finish()
    }
}

impl DatabaseConfig {
    /// `DATABASE_URL` alone: no pooler, LISTEN over the same URL.
    pub fn direct(database: Database) -> Self {
        DatabaseConfig {
            database,
            pooler: Pooler::None,
            listen_url: None,
            search_connections: None,
        }
    }
}

/// What sits between confab and PostgreSQL (`CONFAB_DB_POOLER`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Pooler {
    /// A direct connection (or a pooler in session mode).
    #[default]
    None,
    /// A pooler in transaction mode (PgBouncer's `pool_mode = transaction`).
    Transaction,
}

pub(super) fn parse_pooler(raw: &str) -> Result<Pooler, String> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "none" | "" => Ok(Pooler::None),
        "transaction" => Ok(Pooler::Transaction),
        _ => Err(format!(
            "CONFAB_DB_POOLER {raw:?} is neither none (a direct connection) nor transaction (PgBouncer's pool_mode=transaction)"
        )),
    }
}

/// `CONFAB_LISTEN_DATABASE_URL`: a `postgres://` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct ListenUrl(pub(super) String);

impl fmt::Debug for ListenUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may carry a password.
        f.write_str("ListenUrl(<redacted>)")
    }
}

pub(super) fn parse_listen_database(raw: &str) -> Result<ListenUrl, String> {
    match Database::from_env_value(Some(raw)) {
        Ok(Database::Postgres(url)) => Ok(ListenUrl(url)),
        _ => Err("CONFAB_LISTEN_DATABASE_URL is not a postgres:// URL".to_owned()),
    }
}
