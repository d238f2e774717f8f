//! PostgreSQL `LISTEN confab_events`: the wakeup of every `confab serve`
//! process when any of them (or the CLI) commits events. The events
//! migration's trigger sends the notification at commit of each transaction
//! that inserted events.
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

use crate::wakeups::LocalWakeups;

/// The channel the events trigger notifies.
const CHANNEL: &str = "confab_events";
/// How often the hub reads the table without a notification.
const POLL_EVERY: Duration = Duration::from_secs(1);
/// How often an idle listening connection proves it is alive.
const CHECK_EVERY: Duration = Duration::from_secs(10);
/// How long a connect or a check may take before the connection is
/// given up and made again.
const TIMEOUT: Duration = Duration::from_secs(2);
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Wakeups from PostgreSQL notifications (all processes' commits) and from
/// this process's own commits (at once, without the round trip). The
/// listening connection is opened by the first wait, in the waiter's tokio
/// runtime, so that a process that never streams (the CLI) never opens it.
/// Dropping it stops listening.
pub struct PgWakeups {
    local: LocalWakeups,
    config: Config,
    task: OnceLock<JoinHandle<()>>,
}

impl PgWakeups {
    /// Fails only on a database URL tokio-postgres cannot read; an
    /// unreachable database is tried again until it answers.
    pub fn new(database_url: &str) -> anyhow::Result<Self> {
        let mut config = Config::from_str(database_url)
            .map_err(|e| anyhow::anyhow!("DATABASE_URL is not a PostgreSQL URL: {e}"))?;
        config
            .connect_timeout(TIMEOUT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(2))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(2)
            .tcp_user_timeout(TIMEOUT);
        Ok(Self {
            local: LocalWakeups::new(POLL_EVERY),
            config,
            task: OnceLock::new(),
        })
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
    }
}

#[async_trait]
impl EventWakeups for PgWakeups {
    async fn changed(&self) {
        let notify = self.local.notify();
        self.task
            .get_or_init(|| tokio::spawn(listen_forever(self.config.clone(), notify.clone())));
        notify.notified().await;
    }

    fn poll_every(&self) -> Duration {
        POLL_EVERY
    }
}

async fn listen_forever(config: Config, notify: Arc<Notify>) {
    let mut backoff = BACKOFF_MIN;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        match listen_once(&config, &notify, &mut backoff).await {
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

/// One connection's life: connect, `LISTEN`, pass notifications on until
/// the connection fails or stops answering.
async fn listen_once(
    config: &Config,
    notify: &Arc<Notify>,
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
        loop {
            tokio::select! {
                ended = &mut driver => {
                    return match ended {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(e.into()),
                        Err(e) => Err(e.into()),
                    };
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
