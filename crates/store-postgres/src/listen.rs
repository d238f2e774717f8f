//! PostgreSQL `LISTEN confab_events`: the wakeup of every `confab serve`
//! process when any of them commits events. Each server sends the
//! `NOTIFY` itself, on this connection, after its own commits, coalesced to
//! one in flight at a time and at most one per 10 ms: a `NOTIFY` inside the write transactions (the
//! trigger of the first events migration) took PostgreSQL's notification
//! lock from each commit to its end, so that all writes with events
//! committed one at a time. Writes by a process that does not listen (the
//! CLI) are found by the hub's poll, within a second.
//!
//! One dedicated connection (tokio-postgres, outside the diesel pool, which
//! has no LISTEN), driven by a task of its own. When the database goes away
//! the task reconnects with backoff (100 ms doubling to 5 s), and a silent
//! connection is checked every 10 s with a `SELECT 1`, so that a stalled
//! server or a lost network is noticed without waiting for TCP. Whatever
//! happens here only delays events up to the hub's poll: the table is the
//! truth.

use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use confab_ports::{EventSignal, EventWakeups};
use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Config, NoTls};

use confab_store_sql::LocalWakeups;

/// The channel of event notifications.
const CHANNEL: &str = "confab_events";
/// The listening connection's `application_name` in `pg_stat_activity`.
pub const LISTENER_NAME: &str = "confab events";
/// How often the hub reads the table without a notification.
const POLL_EVERY: Duration = Duration::from_secs(1);
/// How often an idle listening connection proves it is alive.
const CHECK_EVERY: Duration = Duration::from_secs(10);
/// At most one `NOTIFY` per this interval: the commits meanwhile share the
/// next. Each `NOTIFY` is a transaction of its own, whose commit PostgreSQL
/// flushes to disk like a send's; back to back under a load of sends they
/// doubled the commits. An event still reaches another process's streams
/// well within the contract's 100 ms.
const NOTIFY_EVERY: Duration = Duration::from_millis(10);
/// How long a connect or a check may take before the connection is
/// given up and made again.
const TIMEOUT: Duration = Duration::from_secs(2);
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Wakeups from PostgreSQL notifications (all processes' commits) and from
/// this process's own commits (at once, without the round trip). The
/// listening connection is opened by the first wait or the first commit
/// with events, in the caller's tokio runtime, so that a process that
/// neither streams nor writes (most CLI commands) never opens it.
/// Dropping it stops listening.
pub struct PgWakeups {
    local: LocalWakeups,
    /// This process committed events: the listening task sends one
    /// `NOTIFY` (a stored permit, so commits during a send make one more).
    outgoing: Arc<Notify>,
    /// Where to LISTEN; `None`: nowhere ([`PgWakeups::polling`]).
    config: Option<Config>,
    task: OnceLock<JoinHandle<()>>,
}

impl PgWakeups {
    /// Fails only on a database URL tokio-postgres cannot read; an
    /// unreachable database is tried again until it answers.
    pub fn new(database_url: &str) -> anyhow::Result<Self> {
        let mut config = Config::from_str(database_url)
            .map_err(|e| anyhow::anyhow!("DATABASE_URL is not a PostgreSQL URL: {e}"))?;
        config
            // How an operator (and the tests) tell it from the pool's.
            .application_name(LISTENER_NAME)
            .connect_timeout(TIMEOUT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(2))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(2)
            .tcp_user_timeout(TIMEOUT);
        Ok(Self {
            local: LocalWakeups::new(POLL_EVERY),
            outgoing: Arc::new(Notify::new()),
            config: Some(config),
            task: OnceLock::new(),
        })
    }

    /// No LISTEN at all: this process's own commits wake its hub at once,
    /// other processes' are found by the hub's poll (every second). For a
    /// server behind a pooler in transaction mode without a direct
    /// connection to listen on: a LISTEN through such a pooler would hold
    /// on to a server connection it is lent for one statement, and hear
    /// nothing.
    pub fn polling() -> Self {
        Self {
            local: LocalWakeups::new(POLL_EVERY),
            outgoing: Arc::new(Notify::new()),
            config: None,
            task: OnceLock::new(),
        }
    }
}

impl PgWakeups {
    /// Starts the listening connection's task in the caller's runtime,
    /// once.
    fn start(&self, notify: &Arc<Notify>) {
        let Some(config) = &self.config else {
            return;
        };
        self.task.get_or_init(|| {
            tokio::spawn(listen_forever(
                config.clone(),
                notify.clone(),
                self.outgoing.clone(),
            ))
        });
    }
}

impl Drop for PgWakeups {
    fn drop(&mut self) {
        if let Some(task) = self.task.get() {
            task.abort();
        }
    }
}

impl EventSignal for PgWakeups {
    fn committed(&self) {
        self.local.committed();
        self.outgoing.notify_one();
        // A server that writes but has no stream open has not listened yet:
        // its notifications need the connection too.
        if tokio::runtime::Handle::try_current().is_ok() {
            self.start(self.local.notify());
        }
    }
}

#[async_trait]
impl EventWakeups for PgWakeups {
    async fn changed(&self) {
        let notify = self.local.notify();
        self.start(notify);
        notify.notified().await;
    }

    fn poll_every(&self) -> Duration {
        POLL_EVERY
    }
}

async fn listen_forever(config: Config, notify: Arc<Notify>, outgoing: Arc<Notify>) {
    let mut backoff = BACKOFF_MIN;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        match listen_once(&config, &notify, &outgoing, &mut backoff).await {
            Ok(()) => tracing::warn!("the PostgreSQL LISTEN connection ended; reconnecting"),
            Err(e) => tracing::warn!(
                attempt,
                error = format!("{e:#}"),
                "PostgreSQL LISTEN connection lost or refused; retrying in {backoff:?}"
            ),
        }
        // Events committed while nobody listened are found by reading.
        notify.notify_one();
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// One connection's life: connect, `LISTEN`, pass notifications on and
/// send this process's own, until the connection fails or stops answering.
async fn listen_once(
    config: &Config,
    notify: &Arc<Notify>,
    outgoing: &Arc<Notify>,
    backoff: &mut Duration,
) -> anyhow::Result<()> {
    let (client, mut connection) = tokio::time::timeout(TIMEOUT, config.connect(NoTls))
        .await
        .map_err(|_| anyhow::anyhow!("connecting took over {TIMEOUT:?}"))??;
    // The connection must be polled for the client to make progress, and its
    // messages are where notifications arrive.
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let driver_notify = notify.clone();
    let mut driver = tokio::spawn(async move {
        while let Some(message) = messages.next().await {
            match message? {
                AsyncMessage::Notification(_) => driver_notify.notify_one(),
                AsyncMessage::Notice(_) => {}
                _ => {}
            }
        }
        Ok::<(), tokio_postgres::Error>(())
    });
    let result = async {
        tokio::time::timeout(TIMEOUT, client.batch_execute(&format!("LISTEN {CHANNEL}")))
            .await
            .map_err(|_| anyhow::anyhow!("LISTEN took over {TIMEOUT:?}"))??;
        tracing::info!("listening for events on PostgreSQL channel {CHANNEL}");
        *backoff = BACKOFF_MIN;
        // Whatever was committed before LISTEN took effect is read now.
        notify.notify_one();
        let now = tokio::time::Instant::now();
        let mut last_notify = now.checked_sub(NOTIFY_EVERY).unwrap_or(now);
        loop {
            tokio::select! {
                ended = &mut driver => {
                    return match ended {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(e.into()),
                        Err(e) => Err(e.into()),
                    };
                }
                () = outgoing.notified() => {
                    // The commits until then share this one.
                    tokio::time::sleep_until(last_notify + NOTIFY_EVERY).await;
                    last_notify = tokio::time::Instant::now();
                    tokio::time::timeout(TIMEOUT, client.batch_execute(&format!("NOTIFY {CHANNEL}")))
                        .await
                        .map_err(|_| anyhow::anyhow!("NOTIFY took over {TIMEOUT:?}"))??;
                }
                () = tokio::time::sleep(CHECK_EVERY) => {
                    tokio::time::timeout(TIMEOUT, client.simple_query("SELECT 1"))
                        .await
                        .map_err(|_| anyhow::anyhow!("the listening connection stopped answering"))??;
                }
            }
        }
    }
    .await;
    driver.abort();
    result
}
