//! Configuration from the environment (or the command line), parsed once by
//! clap into [`Settings`]; every error names the variable at fault.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::bail;
use tracing_subscriber::EnvFilter;

use crate::app::telemetry::LogFormat;
use confab_delivery::events::{HubOptions, StreamSlots};
use confab_http::client_addr::TrustedProxies;
use confab_http::ratelimit::{Quota, RateLimits};

mod database;
use database::{parse_listen_database, parse_pooler};
pub use database::{Database, DatabaseConfig, ListenUrl, Pooler};

use parse::{
    limit_parser, parse_database, parse_listen, parse_log_filter, parse_max_connections,
    parse_max_group_members, parse_max_streams, parse_max_upload_bytes, parse_metrics_listen,
    parse_pool_size, parse_public_url, parse_synchronous, parse_trusted_proxies, parse_web_app,
    seconds_parser,
};

pub(crate) use parse::parse_allow_private;

mod cors;
mod search;
use cors::parse_cors_origins;
pub use cors::CorsOrigins;
pub use search::SearchSettings;

/// What every command reads from its environment (or the same options on
/// its command line): where the data lives, how to reach it, and logging.
/// Every subcommand's `--help` lists these and its own options only.
#[derive(Debug, Clone, clap::Args)]
#[command(
    next_help_heading = "Configuration (each option also read from its environment variable)"
)]
pub struct Common {
    /// Where the data lives: postgres://... (PostgreSQL), or an SQLite file
    /// (a path, sqlite:<path>).
    #[arg(
        long = "database-url",
        env = "DATABASE_URL",
        global = true,
        hide_env_values = true,
        default_value = Database::DEFAULT_SQLITE_FILE,
        value_name = "URL",
        value_parser = parse_database
    )]
    pub database: Database,

    /// What sits between confab and PostgreSQL: none (a direct connection,
    /// the default) or transaction (a pooler such as PgBouncer with
    /// pool_mode=transaction: no named prepared statements, no session
    /// settings, LISTEN and migrations over CONFAB_LISTEN_DATABASE_URL).
    #[arg(
        long,
        env = "CONFAB_DB_POOLER",
        global = true,
        default_value = "none",
        value_name = "none|transaction",
        value_parser = parse_pooler
    )]
    pub db_pooler: Pooler,

    /// A direct connection to the same PostgreSQL database (not through a
    /// pooler), for LISTEN (other instances' events at once) and, behind a
    /// pooler, for migrations. Unset: DATABASE_URL's; behind a pooler,
    /// other instances' events then arrive by polling (within 1 s).
    #[arg(
        long,
        env = "CONFAB_LISTEN_DATABASE_URL",
        global = true,
        hide_env_values = true,
        value_name = "URL",
        value_parser = parse_listen_database
    )]
    pub listen_database_url: Option<ListenUrl>,

    /// Log filter, e.g. info, warn, confab_server=debug [default: info for
    /// serve, warn for the other commands].
    #[arg(
        long = "log",
        env = "RUST_LOG",
        global = true,
        value_name = "FILTER",
        value_parser = parse_log_filter
    )]
    pub log_filter: Option<String>,

    /// Log lines as text or as JSON objects.
    #[arg(
        long,
        env = "CONFAB_LOG_FORMAT",
        global = true,
        default_value = "text",
        value_enum,
        ignore_case = true
    )]
    pub log_format: LogFormat,
}

impl Common {
    /// How to reach the database: `DATABASE_URL` and the pooler settings.
    pub fn database(&self) -> anyhow::Result<DatabaseConfig> {
        if self.listen_database_url.is_some() && !matches!(self.database, Database::Postgres(_)) {
            bail!("CONFAB_LISTEN_DATABASE_URL is set, but DATABASE_URL is not a postgres:// URL");
        }
        if self.db_pooler == Pooler::Transaction && !matches!(self.database, Database::Postgres(_))
        {
            bail!("CONFAB_DB_POOLER=transaction is for PostgreSQL, but DATABASE_URL is not a postgres:// URL");
        }
        Ok(DatabaseConfig {
            database: self.database.clone(),
            pooler: self.db_pooler,
            listen_url: self.listen_database_url.clone().map(|u| u.0),
            search_connections: None,
        })
    }
}

/// What `serve` reads from its environment (or the same options on its
/// command line): `confab serve --help` (and `confab --help`, serve being
/// the default command) lists each variable and its default. A bad value
/// stops the program with a message naming the variable.
#[derive(Debug, Clone, clap::Args)]
#[command(
    next_help_heading = "Configuration (each option also read from its environment variable)"
)]
pub struct Settings {
    /// Address `serve` listens on: host:port (a host name is resolved).
    #[arg(
        long,
        env = "CONFAB_LISTEN",
        default_value = Settings::DEFAULT_LISTEN,
        value_name = "HOST:PORT",
        value_parser = parse_listen
    )]
    pub listen: Listen,

    /// Requests a second per contact (all its tokens together), on average
    /// (0: no per-contact limit).
    #[arg(
        long,
        env = "CONFAB_RATE_LIMIT_PER_SECOND",
        default_value_t = RateLimits::DEFAULT_PER_SECOND,
        value_name = "N",
        value_parser = limit_parser("CONFAB_RATE_LIMIT_PER_SECOND")
    )]
    pub rate_limit_per_second: u32,

    /// Requests a contact may send at once, all its tokens together (0: no
    /// per-contact limit).
    #[arg(
        long,
        env = "CONFAB_RATE_LIMIT_BURST",
        default_value_t = RateLimits::DEFAULT_BURST,
        value_name = "N",
        value_parser = limit_parser("CONFAB_RATE_LIMIT_BURST")
    )]
    pub rate_limit_burst: u32,

    /// Requests a second per client address without a valid token (0: no
    /// limit).
    #[arg(
        long,
        env = "CONFAB_RATE_LIMIT_ANON_PER_SECOND",
        default_value_t = RateLimits::DEFAULT_ANON_PER_SECOND,
        value_name = "N",
        value_parser = limit_parser("CONFAB_RATE_LIMIT_ANON_PER_SECOND")
    )]
    pub rate_limit_anon_per_second: u32,

    /// Requests a client address without a valid token may send at once (0:
    /// no limit).
    #[arg(
        long,
        env = "CONFAB_RATE_LIMIT_ANON_BURST",
        default_value_t = RateLimits::DEFAULT_ANON_BURST,
        value_name = "N",
        value_parser = limit_parser("CONFAB_RATE_LIMIT_ANON_BURST")
    )]
    pub rate_limit_anon_burst: u32,

    /// Requests a second one server key may send on average, also when it
    /// acts for contacts (0: no limit).
    #[arg(
        long,
        env = "CONFAB_RATE_LIMIT_KEY_PER_SECOND",
        default_value_t = RateLimits::DEFAULT_KEY_PER_SECOND,
        value_name = "N",
        value_parser = limit_parser("CONFAB_RATE_LIMIT_KEY_PER_SECOND")
    )]
    pub rate_limit_key_per_second: u32,

    /// Requests one server key may send at once (0: no limit).
    #[arg(
        long,
        env = "CONFAB_RATE_LIMIT_KEY_BURST",
        default_value_t = RateLimits::DEFAULT_KEY_BURST,
        value_name = "N",
        value_parser = limit_parser("CONFAB_RATE_LIMIT_KEY_BURST")
    )]
    pub rate_limit_key_burst: u32,

    /// Browser origins allowed to call the API (CORS), comma-separated, e.g.
    /// https://app.example,http://localhost:3000; `*` for any; empty: CORS
    /// off.
    #[arg(
        long,
        env = "CONFAB_CORS_ORIGINS",
        default_value = "",
        hide_default_value = true,
        value_name = "ORIGINS",
        value_parser = parse_cors_origins
    )]
    pub cors_origins: CorsOrigins,

    /// Seconds `serve` and `migrate` keep trying to reach PostgreSQL when
    /// it is down at start (each try logged), before giving up; 0: fail at
    /// once.
    #[arg(
        long,
        env = "CONFAB_DB_WAIT_SECS",
        default_value_t = Settings::DEFAULT_DB_WAIT_SECS,
        value_name = "SECONDS",
        value_parser = seconds_parser("CONFAB_DB_WAIT_SECS")
    )]
    pub db_wait_secs: u32,

    /// Connections to the database, from 1 to 1000: on PostgreSQL, also how
    /// many statements run at once (requests beyond wait their turn, in
    /// order); on SQLite, how many reads run at once. Default: on
    /// PostgreSQL twice this machine's CPUs plus one, on SQLite 8.
    #[arg(
        long,
        env = "CONFAB_DB_POOL_SIZE",
        value_name = "CONNECTIONS",
        value_parser = parse_pool_size
    )]
    pub db_pool_size: Option<u32>,

    /// On SQLite, whether a commit waits for the disk: `full` (the
    /// default: an acknowledged write survives a power cut) or `normal`
    /// (the WAL is synced at each checkpoint, every 50 ms while writes come
    /// in: faster sends, but an operating-system crash or power cut may
    /// roll back the last acknowledged writes). Ignored on PostgreSQL.
    #[arg(
        long,
        env = "CONFAB_SQLITE_SYNCHRONOUS",
        value_name = "full|normal",
        default_value = "full",
        value_parser = parse_synchronous
    )]
    pub sqlite_synchronous: Synchronous,

    /// Let webhooks go to private, loopback, link-local and other
    /// non-public addresses (true or false): for receivers on the same
    /// host or network.
    #[arg(
        long,
        env = "CONFAB_WEBHOOK_ALLOW_PRIVATE",
        default_value = "false",
        value_name = "BOOL",
        action = clap::ArgAction::Set,
        value_parser = parse_allow_private
    )]
    pub webhook_allow_private: bool,
    /// Seconds without events after which a `GET /v1/events` stream gets a
    /// comment line (keeps proxies from closing it); at least 1.
    #[arg(
        long,
        env = "CONFAB_EVENTS_HEARTBEAT_SECS",
        default_value_t = Settings::DEFAULT_EVENTS_HEARTBEAT_SECS,
        value_name = "SECONDS",
        value_parser = seconds_parser("CONFAB_EVENTS_HEARTBEAT_SECS")
    )]
    pub events_heartbeat_secs: u32,

    /// Event streams (`GET /v1/events`) one contact may hold open at once,
    /// all its tokens together; one more is 429 `too_many_streams`.
    #[arg(
        long,
        env = "CONFAB_MAX_STREAMS_PER_CONTACT",
        default_value_t = StreamSlots::DEFAULT_MAX,
        value_name = "N",
        value_parser = parse_max_streams
    )]
    pub max_streams_per_contact: usize,

    /// New Idempotency-Keys one contact may use in a UTC day, all its
    /// tokens together; one more is 429 `idempotency_quota` (0: no limit).
    #[arg(
        long,
        env = "CONFAB_IDEMPOTENCY_KEYS_PER_DAY",
        default_value_t = confab_service::DEFAULT_KEYS_PER_DAY,
        value_name = "N",
        value_parser = limit_parser("CONFAB_IDEMPOTENCY_KEYS_PER_DAY")
    )]
    pub idempotency_keys_per_day: u32,

    /// New reports (`POST /v1/reports`) one contact may file in a UTC
    /// hour, all its tokens together; one more is 429 `report_quota` (0:
    /// no limit).
    #[arg(
        long,
        env = "CONFAB_REPORTS_PER_HOUR",
        default_value_t = confab_domain::DEFAULT_REPORTS_PER_HOUR,
        value_name = "N",
        value_parser = limit_parser("CONFAB_REPORTS_PER_HOUR")
    )]
    pub reports_per_hour: u32,

    /// The most members a group may have (docs/api.md "Groups"); a create or
    /// an update past it is 400 naming the list.
    #[arg(
        long,
        env = "CONFAB_MAX_GROUP_MEMBERS",
        default_value_t = confab_domain::DEFAULT_MAX_GROUP_MEMBERS,
        value_name = "N",
        value_parser = parse_max_group_members
    )]
    pub max_group_members: u64,

    /// Proxies whose `X-Forwarded-For` names the client (for the
    /// per-address limit), as comma-separated address blocks, e.g.
    /// 10.0.0.0/8,fd00::/8; the client is the rightmost forwarded address
    /// not in them. Empty: the peer address is the client.
    #[arg(
        long,
        env = "CONFAB_TRUSTED_PROXIES",
        default_value = "",
        hide_default_value = true,
        value_name = "CIDRS",
        value_parser = parse_trusted_proxies
    )]
    pub trusted_proxies: TrustedProxies,

    /// Where uploaded files are kept: a folder path (`file:///path` or a
    /// plain path), or `s3://bucket/prefix` for any S3-compatible store
    /// (endpoint, region and credentials from the standard `AWS_*`
    /// variables: AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, AWS_ALLOW_HTTP). Empty: the folder
    /// `confab-files` beside the SQLite file (with PostgreSQL, in the
    /// working directory).
    #[arg(
        long,
        env = "CONFAB_STORAGE_URL",
        default_value = "",
        hide_default_value = true,
        value_name = "URL"
    )]
    pub storage_url: String,

    /// The largest upload, in bytes (POST /v1/attachments); past it 413.
    #[arg(
        long,
        env = "CONFAB_MAX_UPLOAD_BYTES",
        default_value_t = confab_service::DEFAULT_MAX_UPLOAD_BYTES,
        value_name = "BYTES",
        value_parser = parse_max_upload_bytes
    )]
    pub max_upload_bytes: u64,

    /// The URL clients reach this service at (https://chat.example.com):
    /// the base of uploaded files' links. Unset: the scheme and host each
    /// request was made to (set it behind a proxy).
    #[arg(
        long,
        env = "CONFAB_PUBLIC_URL",
        value_name = "URL",
        value_parser = parse_public_url
    )]
    pub public_url: Option<String>,

    /// Serve the reference web client (built into the binary) at /app/
    /// (true or false); it calls the API on the same origin.
    #[arg(long, env = "CONFAB_WEB_APP", default_value = "false", value_name = "BOOL",
        action = clap::ArgAction::Set, value_parser = parse_web_app)]
    pub web_app: bool,

    /// A second address serving only `GET /metrics` (host:port), for
    /// Prometheus on a private network; the main listener then answers 404
    /// there. Unset: `/metrics` is on the main listener, within the
    /// per-address limit.
    #[arg(
        long,
        env = "CONFAB_METRICS_LISTEN",
        value_name = "HOST:PORT",
        value_parser = parse_metrics_listen
    )]
    pub metrics_listen: Option<Listen>,

    /// Connections served at once; past it a request on a new connection
    /// is a fast 503 (but `/healthz` and `/readyz`), and open connections
    /// keep working. Default: what the open-file limit allows after a
    /// reserve for the database, files and those fast answers.
    #[arg(
        long,
        env = "CONFAB_MAX_CONNECTIONS",
        value_name = "N",
        value_parser = parse_max_connections
    )]
    pub max_connections: Option<usize>,
    #[command(flatten)]
    pub shares: shares::ShareSettings,

    /// How many searches run at once, per contact and in all.
    #[command(flatten)]
    pub search: SearchSettings,
}

/// What `migrate` reads besides [`Common`].
#[derive(Debug, Clone, clap::Args)]
#[command(
    next_help_heading = "Configuration (each option also read from its environment variable)"
)]
pub struct MigrateSettings {
    /// Seconds to keep trying to reach PostgreSQL when it is down at start
    /// (each try logged), before giving up; 0: fail at once.
    #[arg(
        long,
        env = "CONFAB_DB_WAIT_SECS",
        default_value_t = Settings::DEFAULT_DB_WAIT_SECS,
        value_name = "SECONDS",
        value_parser = seconds_parser("CONFAB_DB_WAIT_SECS")
    )]
    pub db_wait_secs: u32,
}

impl MigrateSettings {
    /// How long `migrate` waits for the database at start.
    pub fn db_wait(&self) -> Duration {
        Duration::from_secs(self.db_wait_secs.into())
    }
}

impl Settings {
    pub const DEFAULT_LISTEN: &'static str = "127.0.0.1:8080";
    pub const DEFAULT_DB_WAIT_SECS: u32 = 30;
    pub const DEFAULT_EVENTS_HEARTBEAT_SECS: u32 = 15;

    /// How the event hub and its streams behave.
    pub fn hub_options(&self) -> HubOptions {
        HubOptions {
            heartbeat: Duration::from_secs(self.events_heartbeat_secs.max(1).into()),
            ..HubOptions::default()
        }
    }

    /// How long `serve` and `migrate` wait for the database at start.
    pub fn db_wait(&self) -> Duration {
        Duration::from_secs(self.db_wait_secs.into())
    }

    /// The rate limits; 0 turns one off.
    pub fn rate_limits(&self) -> RateLimits {
        RateLimits {
            per_contact: Quota::new(self.rate_limit_per_second, self.rate_limit_burst),
            anonymous: Quota::new(self.rate_limit_anon_per_second, self.rate_limit_anon_burst),
            per_key: Quota::new(self.rate_limit_key_per_second, self.rate_limit_key_burst),
        }
    }
}

/// `CONFAB_LISTEN` as given and the addresses it resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub given: String,
    pub addrs: Vec<SocketAddr>,
}

/// Whether an SQLite commit waits for the disk (`CONFAB_SQLITE_SYNCHRONOUS`);
/// startup hands it to the SQLite store as that store's own setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is synced before it is acknowledged (the default).
    #[default]
    Full,
    /// The WAL is synced at checkpoints only.
    Normal,
}

mod parse;
pub mod shares;
#[cfg(test)]
mod tests;
