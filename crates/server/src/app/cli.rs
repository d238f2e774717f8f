//! The `confab` command line: serve, migrate, and the operator's contact and
//! token management. Scripts rely on these forms and outputs:
//! - `contact create` prints the contact as JSON (the API's contact object)
//!   on stdout;
//! - `token issue` prints the token alone on stdout;
//! - everything else reports on stderr; failures exit non-zero with
//!   `error: ...` on stderr;
//! - only `serve` and `migrate` apply migrations; the other commands
//!   refuse (`N migrations are pending: run `confab migrate` first`)
//!   rather than change the schema or take the migration lock.

use std::net::TcpListener;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};
use std::sync::Arc;

use confab_domain::EventType;
use confab_service::{
    parse_event_types, AddressPolicy, Confab, ServiceError, Webhook, WebhookError,
};
use tracing_subscriber::EnvFilter;

use crate::app::config::{
    parse_allow_private, Common, Database, DatabaseConfig, MigrateSettings, Settings,
};
use crate::app::startup::{open_service_as, Application, Opening, ServerOptions};
use crate::app::telemetry;

/// confab: a chat service with a JSON HTTP API.
///
/// Every setting below is read from its environment variable (or given as
/// the option); each has a default. Only `serve` and `migrate` change the
/// database's schema; the other commands refuse while a migration is
/// pending (run `confab migrate` first).
#[derive(Debug, Parser)]
#[command(name = "confab", version)]
pub struct Cli {
    #[command(flatten)]
    common: Common,
    /// `serve`'s settings, for `confab` without a command (which serves):
    /// with a command, the command's own options.
    #[command(flatten)]
    settings: Settings,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply pending migrations and serve the HTTP API (the default).
    Serve(Box<Settings>),
    /// Apply pending migrations and exit.
    Migrate(MigrateSettings),
    /// Manage contacts (the users of the service).
    #[command(subcommand)]
    Contact(ContactCommand),
    /// Manage access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Manage webhooks (URLs that receive events).
    #[command(subcommand)]
    Webhook(WebhookCommand),
    /// Manage server keys (an app backend's credential for /v1/admin and
    /// for acting as a contact with Confab-Contact).
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Make a server key; prints {"id","name","key","created_at"} as JSON
    /// on stdout (the key is shown only this once).
    Create {
        /// What the key is for (1 to 100 characters), e.g. "app backend".
        #[arg(long)]
        name: String,
    },
    /// List the server keys as a JSON array (never their secrets).
    List,
    /// Revoke a server key (a running server refuses it within 5 s).
    Revoke {
        #[arg(long)]
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum WebhookCommand {
    /// Create a webhook; prints {"id","url","events","secret"} as JSON on
    /// stdout (the secret is shown only this once).
    Create {
        /// An http:// or https:// URL; private, loopback and link-local
        /// addresses are refused unless CONFAB_WEBHOOK_ALLOW_PRIVATE=true.
        #[arg(long)]
        url: String,
        /// Event types to receive, comma-separated (default: every type),
        /// e.g. message.created,message.updated.
        #[arg(long, default_value = "")]
        events: String,
        /// Let the URL be a private, loopback or link-local address (true
        /// or false).
        #[arg(
            long = "webhook-allow-private",
            env = "CONFAB_WEBHOOK_ALLOW_PRIVATE",
            default_value = "false",
            value_name = "BOOL",
            action = clap::ArgAction::Set,
            value_parser = parse_allow_private
        )]
        allow_private: bool,
    },
    /// List the webhooks as a JSON array (without their secrets).
    List,
    /// Delete a webhook.
    Delete {
        #[arg(long)]
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum ContactCommand {
    /// Create a contact; prints it as JSON on stdout.
    Create {
        /// 1 to 32 of A-Z a-z 0-9 _ . - (unique in any letter case).
        #[arg(long)]
        username: String,
        /// E.164: + then 2 to 15 digits.
        #[arg(long)]
        phone_number: String,
        /// An http(s) URL.
        #[arg(long)]
        avatar_url: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Issue a token for a contact; prints the token alone on stdout.
    Issue {
        #[arg(long)]
        username: String,
        /// Lifetime such as 90s, 15m, 12h, 30d or 2w (default: no expiry).
        #[arg(long, value_parser = parse_duration)]
        expires_in: Option<i64>,
    },
    /// Revoke every live token of a contact.
    Revoke {
        #[arg(long)]
        username: String,
    },
}

impl Command {
    /// The command as typed, e.g. `confab token issue`: its PostgreSQL
    /// connections' `application_name`.
    fn name(&self) -> &'static str {
        match self {
            Self::Serve(_) => "confab serve",
            Self::Migrate(_) => "confab migrate",
            Self::Contact(ContactCommand::Create { .. }) => "confab contact create",
            Self::Token(TokenCommand::Issue { .. }) => "confab token issue",
            Self::Token(TokenCommand::Revoke { .. }) => "confab token revoke",
            Self::Webhook(WebhookCommand::Create { .. }) => "confab webhook create",
            Self::Webhook(WebhookCommand::List) => "confab webhook list",
            Self::Webhook(WebhookCommand::Delete { .. }) => "confab webhook delete",
            Self::Key(KeyCommand::Create { .. }) => "confab key create",
            Self::Key(KeyCommand::List) => "confab key list",
            Self::Key(KeyCommand::Revoke { .. }) => "confab key revoke",
        }
    }
}

/// `90s`, `15m`, `12h`, `30d`, `2w` -> seconds (positive).
fn parse_duration(raw: &str) -> Result<i64, String> {
    let error = || {
        format!("{raw:?} is not a duration: use a whole number and a unit s, m, h, d or w, e.g. 90s, 15m, 12h, 30d")
    };
    let unit = raw.chars().last().ok_or_else(error)?;
    let unit_secs: i64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        'w' => 604_800,
        _ => return Err(error()),
    };
    let digits = &raw[..raw.len() - unit.len_utf8()];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error());
    }
    let n: i64 = digits.parse().map_err(|_| error())?;
    if n == 0 {
        return Err(format!("{raw:?}: the duration must be positive"));
    }
    n.checked_mul(unit_secs)
        .filter(|secs| *secs <= 100 * 365 * 86_400)
        .ok_or_else(|| format!("{raw:?}: the duration must be at most 100 years"))
}

/// The command line, with `serve`'s options (read before any command, for
/// `confab` alone) refused on the command line ahead of a command: they
/// belong after `serve` (`confab serve --listen ...`), and no other command
/// takes them. From the environment they are read whatever the command.
fn parse_command_line(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(args)?;
    if let Some((name, _)) = matches.subcommand() {
        let serve_only = <Settings as clap::Args>::augment_args(clap::Command::new("serve"));
        for arg in serve_only.get_arguments() {
            let id = arg.get_id().as_str();
            if matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
                let flag = arg.get_long().unwrap_or(id);
                return Err(command.error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "--{flag} is an option of serve: give it after the command \
                         (confab serve --{flag} ...); `{name}` does not take it"
                    ),
                ));
            }
        }
    }
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = parse_command_line(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let common = cli.common;
    let command = cli
        .command
        .unwrap_or_else(|| Command::Serve(Box::new(cli.settings)));
    // The operator's one-shot commands keep stderr quiet unless asked.
    let default_filter = match command {
        Command::Serve(_) => "info",
        _ => "warn",
    };
    let filter = common
        .log_filter
        .as_deref()
        .filter(|f| !f.trim().is_empty())
        .unwrap_or(default_filter);
    // Checked when parsed: only an empty filter could fail here.
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new(default_filter));
    telemetry::init(filter, common.log_format);
    match run(command, &common) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command, common: &Common) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut database: DatabaseConfig = common.database()?;
    if let Command::Serve(settings) = &command {
        database.search_connections = settings.search.search_connections;
    }
    runtime.block_on(async move {
        // A server (and its migration step) may start before its database:
        // they wait for it; the one-shot commands fail at once. Only those
        // two change the schema: the others refuse while a migration is
        // pending (`opening`).
        let mut opening = match &command {
            Command::Serve(settings) => Opening {
                pool_size: settings.db_pool_size,
                synchronous: settings.sqlite_synchronous,
                ..Opening::migrating(settings.db_wait())
            },
            Command::Migrate(settings) => Opening::migrating(settings.db_wait()),
            _ => {
                refuse_a_guessed_database(&database.database)?;
                Opening::current_schema()
            }
        };
        opening = opening.named(command.name());
        let (service, applied) =
            tokio::task::spawn_blocking(move || open_service_as(&database, &opening))
                .await
                .context("opening the database panicked")??;
        match command {
            Command::Serve(settings) => {
                if common.db_pooler == crate::app::config::Pooler::Transaction
                    && common.listen_database_url.is_none()
                {
                    tracing::warn!(
                        "CONFAB_DB_POOLER=transaction without CONFAB_LISTEN_DATABASE_URL: \
                         events of other instances reach this one's streams by polling \
                         (within 1 s), not at once"
                    );
                }
                serve(service, &settings, &common.database()?.database).await
            }
            Command::Migrate(_) => {
                for version in &applied {
                    eprintln!("applied migration {version}");
                }
                eprintln!("migrations are up to date ({} applied now)", applied.len());
                Ok(())
            }
            Command::Contact(ContactCommand::Create {
                username,
                phone_number,
                avatar_url,
            }) => {
                let contact = service
                    .create_contact(&username, &phone_number, avatar_url.as_deref())
                    .await
                    .map_err(|e| cli_error(e, &username))?;
                println!(
                    "{}",
                    String::from_utf8(confab_http::wire::contact(
                        &contact,
                        confab_domain::Viewer::Operator
                    )?)?
                );
                Ok(())
            }
            Command::Token(TokenCommand::Issue {
                username,
                expires_in,
            }) => {
                let token = service
                    .issue_token(&username, expires_in)
                    .await
                    .map_err(|e| cli_error(e, &username))?;
                println!("{token}");
                Ok(())
            }
            Command::Webhook(command) => webhook(&service, command).await,
            Command::Key(command) => key(&service, command).await,
            Command::Token(TokenCommand::Revoke { username }) => {
                let count = service
                    .revoke_tokens(&username)
                    .await
                    .map_err(|e| cli_error(e, &username))?;
                eprintln!("revoked {count} token(s) of {username}");
                Ok(())
            }
        }
    })
}

/// A one-shot command (not `serve` or `migrate`) with `DATABASE_URL` unset
/// and no `confab.db` here would create and migrate an empty database,
/// then report what it lacks (docs/api.md "Requests and answers"): it refuses instead.
fn refuse_a_guessed_database(database: &Database) -> anyhow::Result<()> {
    let given = std::env::var_os("DATABASE_URL").is_some()
        || std::env::args().any(|a| a.starts_with("--database-url"));
    let default = Database::Sqlite(Database::DEFAULT_SQLITE_FILE.to_owned());
    if given || *database != default || std::path::Path::new(Database::DEFAULT_SQLITE_FILE).exists()
    {
        return Ok(());
    }
    let here = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "the working directory".to_owned());
    Err(anyhow!(
        "DATABASE_URL is not set and there is no {} in {here}: set DATABASE_URL (postgres://... \
         or the SQLite file confab serve uses), or run this where that confab.db is",
        Database::DEFAULT_SQLITE_FILE
    ))
}

/// The file storage of `CONFAB_STORAGE_URL`; empty: the folder
/// `confab-files` beside the SQLite file, or in the working directory.
pub fn open_files(
    storage_url: &str,
    database: &crate::app::config::Database,
) -> anyhow::Result<confab_files::ObjectFiles> {
    let beside = match database {
        crate::app::config::Database::Sqlite(path) => std::path::Path::new(path)
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default(),
        crate::app::config::Database::Postgres(_) => std::path::PathBuf::new(),
    };
    let default_dir = beside.join("confab-files");
    confab_files::ObjectFiles::from_url(storage_url, &default_dir)
        .context("cannot open the file storage (CONFAB_STORAGE_URL)")
}

async fn serve(
    service: Confab,
    settings: &Settings,
    database: &crate::app::config::Database,
) -> anyhow::Result<()> {
    let listen = &settings.listen;
    let listener = TcpListener::bind(&listen.addrs[..])
        .with_context(|| format!("cannot listen on {} (CONFAB_LISTEN)", listen.given))?;
    let address = listener
        .local_addr()
        .context("the listener has no local address")?;
    let options = ServerOptions {
        rate_limits: settings.rate_limits(),
        cors: settings.cors_origins.clone(),
        webhook_allow_private: settings.webhook_allow_private,
        events: settings.hub_options(),
        max_streams_per_contact: Some(settings.max_streams_per_contact),
        trusted_proxies: settings.trusted_proxies.clone(),
        metrics_listen: settings.metrics_listen.as_ref().map(|l| l.addrs.clone()),
        max_connections: settings.max_connections,
        max_connections_per_address: settings.shares.max_connections_per_address,
        max_pending_per_address: settings.shares.max_pending_per_address,
        public_url: settings.public_url.clone(),
        web_app: settings.web_app,
    };
    if settings.public_url.is_none() {
        tracing::warn!(
            %address,
            "CONFAB_PUBLIC_URL is not set: links to uploaded files name this server's own \
             address as each connection reached it (or, from CONFAB_TRUSTED_PROXIES, the host \
             they forward), never a host a request names; set CONFAB_PUBLIC_URL to the URL \
             clients reach this service at (e.g. https://chat.example.com)"
        );
    }
    let files = open_files(&settings.storage_url, database)?;
    tracing::info!(storage = %files.describe(), "uploaded files are kept here");
    let service = service
        .with_idempotency_quota(settings.idempotency_keys_per_day)
        .with_report_quota(settings.reports_per_hour)
        .with_max_group_members(settings.max_group_members)
        .with_max_searches_per_contact(settings.search.max_searches_per_contact)
        .with_files(std::sync::Arc::new(files), settings.max_upload_bytes)
        .with_upload_limits(settings.shares.upload_limits());
    let app = Application::build_with_options(service, listener, options).await?;
    let limits = app.connection_limits();
    tracing::info!(
        %address,
        metrics_port = app.metrics_port(),
        connections = limits.budget,
        per_address = limits.per_address,
        open_files = limits.open_files,
        "confab is serving"
    );
    app.run_until_stopped().await.context("the server failed")
}

/// A server key as `key list` prints it (`key create` adds the secret).
fn key_json(key: &confab_service::ServerKey) -> serde_json::Value {
    serde_json::json!({
        "id": key.id.to_string(),
        "name": key.name,
        "created_at": key.created_at.secs(),
        "last_used_at": key.last_used_at.map(|t| t.secs()),
        "revoked_at": key.revoked_at.map(|t| t.secs()),
    })
}

async fn key(service: &Confab, command: KeyCommand) -> anyhow::Result<()> {
    match command {
        KeyCommand::Create { name } => {
            let created = service
                .create_server_key(&name)
                .await
                .map_err(|e| match e {
                    ServiceError::Invalid { field, rule } => {
                        anyhow!("invalid --name: {field} {rule}")
                    }
                    e => anyhow::Error::new(e),
                })?;
            println!(
                "{}",
                serde_json::json!({
                    "id": created.key.id.to_string(),
                    "name": created.key.name,
                    "key": created.secret,
                    "created_at": created.key.created_at.secs(),
                })
            );
        }
        KeyCommand::List => {
            let keys: Vec<_> = service
                .list_server_keys()
                .await?
                .iter()
                .map(key_json)
                .collect();
            println!("{}", serde_json::Value::Array(keys));
        }
        KeyCommand::Revoke { id } => {
            let key = service.revoke_server_key(&id).await.map_err(|e| match e {
                ServiceError::NotFound { .. } => anyhow!("no server key has the id {id:?}"),
                e => anyhow::Error::new(e),
            })?;
            eprintln!("revoked server key {} ({})", key.id, key.name);
        }
    }
    Ok(())
}

/// A webhook as `webhook create` and `webhook list` print it.
fn webhook_json(webhook: &Webhook, with_secret: bool) -> serde_json::Value {
    let mut object = serde_json::json!({
        "id": webhook.id.to_string(),
        "url": webhook.url,
        "events": webhook.events.iter().map(|t| t.name()).collect::<Vec<_>>(),
    });
    if with_secret {
        object["secret"] = webhook.secret.expose().into();
    } else {
        object["created_at"] = webhook.created_at.secs().into();
    }
    object
}

async fn webhook(service: &Confab, command: WebhookCommand) -> anyhow::Result<()> {
    match command {
        WebhookCommand::Create {
            url,
            events,
            allow_private,
        } => {
            let events = parse_event_types(&events).map_err(|e| match e {
                WebhookError::UnknownEventTypes(_) => {
                    let known: Vec<&str> = EventType::ALL.iter().map(|t| t.name()).collect();
                    anyhow!("invalid --events: {e} (known: {})", known.join(", "))
                }
                other => anyhow::Error::new(other),
            })?;
            let policy = AddressPolicy {
                allow_private,
                resolver: Arc::new(confab_delivery::webhooks::SystemResolver),
            };
            let target = confab_delivery::webhooks::parse_url(&url)
                .map_err(|e| anyhow!("invalid --url: {e}"))?;
            let webhook = service
                .create_webhook(target, events, &policy)
                .await
                .map_err(|e| match e {
                    WebhookError::Service(e) => anyhow::Error::new(e),
                    refused => anyhow!("invalid --url: {refused}"),
                })?;
            println!("{}", webhook_json(&webhook, true));
        }
        WebhookCommand::List => {
            let list: Vec<_> = service
                .list_webhooks()
                .await?
                .iter()
                .map(|w| webhook_json(w, false))
                .collect();
            println!("{}", serde_json::Value::Array(list));
        }
        WebhookCommand::Delete { id } => {
            service.delete_webhook(&id).await?;
            eprintln!("deleted webhook {id}");
        }
    }
    Ok(())
}

/// A service error as the operator should read it, options named as flags.
fn cli_error(e: ServiceError, username: &str) -> anyhow::Error {
    match e {
        ServiceError::Invalid { field, rule } => {
            let param = confab_http::error::param(field);
            anyhow!("invalid --{}: {param} {rule}", param.replace('_', "-"))
        }
        ServiceError::NotFound { .. } => anyhow!("there is no contact with username {username:?}"),
        ServiceError::Conflict(what) => anyhow!("{what}"),
        // Keeps the chain of causes for the operator.
        other => anyhow::Error::new(other),
    }
}

#[cfg(test)]
mod tests;
