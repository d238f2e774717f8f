//! Configuration from the environment, parsed once into [`Settings`]; every
//! error names the variable at fault.

use std::fmt;
use std::net::SocketAddr;

use anyhow::{bail, Context};

use crate::ratelimit::{Quota, RateLimits};

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

/// Everything the binary reads from the environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `DATABASE_URL`.
    pub database: Database,
    /// `CONFAB_LISTEN`, default `127.0.0.1:8080`.
    pub listen: SocketAddr,
    /// `CONFAB_RATE_LIMIT_PER_SECOND` / `_BURST` (per token) and
    /// `CONFAB_RATE_LIMIT_ANON_PER_SECOND` / `_BURST` (per client address,
    /// without a valid token); 0 turns a limit off.
    pub rate_limits: RateLimits,
}

impl Settings {
    pub const DEFAULT_LISTEN: &'static str = "127.0.0.1:8080";

    pub fn from_env() -> anyhow::Result<Settings> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Same as [`Settings::from_env`] over any lookup (for tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> anyhow::Result<Settings> {
        let database = Database::from_env_value(lookup("DATABASE_URL").as_deref())?;
        let listen_raw = lookup("CONFAB_LISTEN").unwrap_or_else(|| Self::DEFAULT_LISTEN.to_owned());
        let listen = listen_raw.trim().parse().with_context(|| {
            format!("CONFAB_LISTEN {listen_raw:?} is not an address like 127.0.0.1:8080")
        })?;
        let number = |name: &str, default: u32| -> anyhow::Result<u32> {
            match lookup(name) {
                None => Ok(default),
                Some(raw) => raw.trim().parse().with_context(|| {
                    format!(
                        "{name} {raw:?} is not a whole number from 0 to {} (0: no limit)",
                        u32::MAX
                    )
                }),
            }
        };
        let rate_limits = RateLimits {
            per_token: Quota::new(
                number(
                    "CONFAB_RATE_LIMIT_PER_SECOND",
                    RateLimits::DEFAULT_PER_SECOND,
                )?,
                number("CONFAB_RATE_LIMIT_BURST", RateLimits::DEFAULT_BURST)?,
            ),
            anonymous: Quota::new(
                number(
                    "CONFAB_RATE_LIMIT_ANON_PER_SECOND",
                    RateLimits::DEFAULT_ANON_PER_SECOND,
                )?,
                number(
                    "CONFAB_RATE_LIMIT_ANON_BURST",
                    RateLimits::DEFAULT_ANON_BURST,
                )?,
            ),
        };
        Ok(Settings {
            database,
            listen,
            rate_limits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(v: Option<&str>) -> Database {
        Database::from_env_value(v).expect("valid")
    }

    #[test]
    fn database_values() {
        assert_eq!(db(None), Database::Sqlite("confab.db".into()));
        assert_eq!(
            db(Some("sqlite:///tmp/x.db")),
            Database::Sqlite("/tmp/x.db".into())
        );
        assert_eq!(db(Some("sqlite://x.db")), Database::Sqlite("x.db".into()));
        assert_eq!(db(Some("sqlite:x.db")), Database::Sqlite("x.db".into()));
        assert_eq!(db(Some("/tmp/x.db")), Database::Sqlite("/tmp/x.db".into()));
        assert_eq!(
            db(Some("./data/x.db")),
            Database::Sqlite("./data/x.db".into())
        );
        let pg = "postgres://u:secret@localhost/db";
        assert_eq!(db(Some(pg)), Database::Postgres(pg.into()));
        assert!(matches!(
            db(Some("postgresql://localhost/db")),
            Database::Postgres(_)
        ));
        assert!(!format!("{:?}", db(Some(pg))).contains("secret"));
        for bad in ["mysql://x", "http://x", "", "  ", "sqlite:", "sqlite://"] {
            let e = Database::from_env_value(Some(bad)).expect_err(bad);
            assert!(e.to_string().contains("DATABASE_URL"), "{bad}: {e}");
        }
    }

    #[test]
    fn settings_name_the_variable() {
        let s = Settings::from_lookup(|_| None).expect("defaults");
        assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
        let e = Settings::from_lookup(|k| (k == "CONFAB_LISTEN").then(|| "nope".to_owned()))
            .expect_err("bad listen");
        assert!(e.to_string().contains("CONFAB_LISTEN"));
    }

    #[test]
    fn rate_limits_default_on_and_zero_is_off() {
        let s = Settings::from_lookup(|_| None).expect("defaults");
        assert_eq!(s.rate_limits, RateLimits::default());
        assert!(s.rate_limits.per_token.is_some() && s.rate_limits.anonymous.is_some());
        let s = Settings::from_lookup(|k| {
            matches!(
                k,
                "CONFAB_RATE_LIMIT_PER_SECOND" | "CONFAB_RATE_LIMIT_ANON_BURST"
            )
            .then(|| "0".to_owned())
        })
        .expect("zeros");
        assert_eq!(s.rate_limits, RateLimits::OFF);
        let s =
            Settings::from_lookup(|k| (k == "CONFAB_RATE_LIMIT_BURST").then(|| " 7 ".to_owned()))
                .expect("burst");
        assert_eq!(s.rate_limits.per_token, Quota::new(100, 7));
        for name in [
            "CONFAB_RATE_LIMIT_BURST",
            "CONFAB_RATE_LIMIT_ANON_PER_SECOND",
        ] {
            let e = Settings::from_lookup(|k| (k == name).then(|| "-1".to_owned()))
                .expect_err("negative");
            assert!(e.to_string().contains(name), "{e}");
        }
    }
}
