//! PostgreSQL `LISTEN confab_events`: the wakeup of every `confab serve`
//! process when any of them commits events. Each server sends the
//! `NOTIFY` itself, on this connection, after its own commits, coalesced to
//! one in flight at a time and at most one per 10 ms: a `NOTIFY` inside the write transactions (the
//! trigger of the first events migration) took PostgreSQL's notification
//! lock from each commit to its end, so that all writes with events
//! committed one at a time. Writes by a process that does not listen (the
//! CLI) are found by the hub's poll, within a second.
//!
//! The same connection carries typing news (docs/api.md "Typing") between
//! the processes on channel `confab_typing` ([`PgWakeups`] is also the
//! [`TypingRelay`]): each process queues its news for its own hub at once,
//! and sends it here, many at a time in one `NOTIFY` transaction, tagged
//! with the process's own id, so that the other processes' hubs receive
//! it and this one skips its own. The session commits without waiting for
//! its WAL to be flushed (`synchronous_commit = off`): it writes nothing
//! but notifications, which a crash may lose without harm (a lost wakeup
//! is found by the poll, lost typing news by its expiry).
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
use confab_domain::{ContactId, ConversationId, Timestamp, Typing, TypingState};
use confab_ports::{EventSignal, EventWakeups, TypingRelay};
use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Config, NoTls};

use confab_store_sql::{LocalTyping, LocalWakeups};

/// The channel of event notifications.
const CHANNEL: &str = "confab_events";
/// The channel of typing news.
const TYPING_CHANNEL: &str = "confab_typing";
/// Typing news per `NOTIFY` payload at most (a line is about 140 bytes,
/// PostgreSQL takes up to 8000 per payload).
const TYPING_PER_PAYLOAD: usize = 40;
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
    /// Typing news for this process's hub: its own and the other
    /// processes'.
    typing: LocalTyping,
    /// This process's typing news waiting for the listening connection.
    typing_out: LocalTyping,
    /// This process's tag on the news it sends.
    instance: String,
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
            typing: LocalTyping::new(),
            typing_out: LocalTyping::new(),
            instance: uuid::Uuid::now_v7().simple().to_string(),
        })
    }

    /// No LISTEN at all: this process's own commits wake its hub at once,
    /// other processes' are found by the hub's poll (every second); typing
    /// news reaches this process's streams only. For a
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
            typing: LocalTyping::new(),
            typing_out: LocalTyping::new(),
            instance: uuid::Uuid::now_v7().simple().to_string(),
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
                Channels {
                    notify: notify.clone(),
                    outgoing: self.outgoing.clone(),
                    typing: self.typing.clone(),
                    typing_out: self.typing_out.clone(),
                    instance: self.instance.clone(),
                },
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

#[async_trait]
impl TypingRelay for PgWakeups {
    fn publish(&self, typing: Typing) {
        self.typing.push(typing);
        if self.config.is_some() {
            self.typing_out.push(typing);
            if tokio::runtime::Handle::try_current().is_ok() {
                self.start(self.local.notify());
            }
        }
    }

    async fn received(&self) -> Vec<Typing> {
        // The other processes' news arrives on the listening connection.
        self.start(self.local.notify());
        self.typing.received().await
    }
}

/// What the listening task passes on, each way.
struct Channels {
    /// Wakes this process's hub for events.
    notify: Arc<Notify>,
    /// This process committed events: send a `NOTIFY`.
    outgoing: Arc<Notify>,
    /// Typing news for this process's hub.
    typing: LocalTyping,
    /// This process's typing news to send.
    typing_out: LocalTyping,
    /// This process's tag on its news.
    instance: String,
}

/// One line of a typing payload: `<instance> <conversation> <contact>
/// <start|stop> <expires_at in microseconds>`.
fn typing_line(instance: &str, typing: &Typing) -> String {
    format!(
        "{instance} {} {} {} {}",
        typing.conversation_id(),
        typing.contact_id(),
        typing.state(),
        typing.expires_at().micros()
    )
}

/// The news of another process in a typing payload (lines this process
/// sent, and lines it cannot read, are skipped).
fn typing_news(payload: &str, own: &str) -> Vec<Typing> {
    payload
        .lines()
        .filter_map(|line| {
            let mut parts = line.split(' ');
            let instance = parts.next()?;
            if instance == own {
                return None;
            }
            let conversation: ConversationId = parts.next()?.parse().ok()?;
            let contact: ContactId = parts.next()?.parse().ok()?;
            let state: TypingState = parts.next()?.parse().ok()?;
            let expires_at = Timestamp::from_micros(parts.next()?.parse().ok()?);
            if parts.next().is_some() {
                return None;
            }
            Some(Typing::from_parts(conversation, contact, state, expires_at))
        })
        .collect()
}

/// The payloads that carry `news` to the other processes: starts that no
/// longer hold (queued while the connection was down) are left out.
fn typing_payloads(news: &[Typing], instance: &str, now: Timestamp) -> Vec<String> {
    let lines: Vec<String> = news
        .iter()
        .filter(|t| t.state() == TypingState::Stop || t.holds_at(now))
        .map(|t| typing_line(instance, t))
        .collect();
    lines
        .chunks(TYPING_PER_PAYLOAD)
        .map(|chunk| chunk.join("\n"))
        .collect()
}

fn wall_clock() -> Timestamp {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    Timestamp::from_micros(micros)
}

async fn listen_forever(config: Config, channels: Channels) {
    let mut backoff = BACKOFF_MIN;
    let mut attempt = 0u32;
    let notify = channels.notify.clone();
    loop {
        attempt += 1;
        match listen_once(&config, &channels, &mut backoff).await {
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
    channels: &Channels,
    backoff: &mut Duration,
) -> anyhow::Result<()> {
    let Channels {
        notify,
        outgoing,
        typing,
        typing_out,
        instance,
    } = channels;
    let (client, mut connection) = tokio::time::timeout(TIMEOUT, config.connect(NoTls))
        .await
        .map_err(|_| anyhow::anyhow!("connecting took over {TIMEOUT:?}"))??;
    // The connection must be polled for the client to make progress, and its
    // messages are where notifications arrive.
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let driver_notify = notify.clone();
    let (driver_typing, own) = (typing.clone(), instance.clone());
    let mut driver = tokio::spawn(async move {
        while let Some(message) = messages.next().await {
            match message? {
                AsyncMessage::Notification(n) if n.channel() == TYPING_CHANNEL => {
                    for news in typing_news(n.payload(), &own) {
                        driver_typing.push(news);
                    }
                }
                AsyncMessage::Notification(_) => driver_notify.notify_one(),
                AsyncMessage::Notice(_) => {}
                _ => {}
            }
        }
        Ok::<(), tokio_postgres::Error>(())
    });
    let result = async {
        let listen =
            format!("SET synchronous_commit = off; LISTEN {CHANNEL}; LISTEN {TYPING_CHANNEL}");
        tokio::time::timeout(TIMEOUT, client.batch_execute(&listen))
            .await
            .map_err(|_| anyhow::anyhow!("LISTEN took over {TIMEOUT:?}"))??;
        tracing::info!("listening for events on PostgreSQL channels {CHANNEL}, {TYPING_CHANNEL}");
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
                news = typing_out.received() => {
                    let payloads = typing_payloads(&news, instance, wall_clock());
                    if payloads.is_empty() {
                        continue;
                    }
                    let sql = format!("SELECT pg_notify('{TYPING_CHANNEL}', p) FROM unnest($1::text[]) p");
                    tokio::time::timeout(TIMEOUT, client.execute(&sql, &[&payloads]))
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

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn ids(n: u128) -> (ConversationId, ContactId) {
        (
            ConversationId::from_uuid(Uuid::from_u128(n)),
            ContactId::from_uuid(Uuid::from_u128(n + 1)),
        )
    }

    #[test]
    fn news_crosses_in_payloads_and_skips_its_own_process() {
        let now = Timestamp::from_secs(1_000);
        let (c, who) = ids(1);
        let news = vec![Typing::start(c, who, now), Typing::stop(c, who, now)];
        let payloads = typing_payloads(&news, "a", now);
        assert_eq!(payloads.len(), 1);
        assert_eq!(typing_news(&payloads[0], "b"), news);
        assert!(typing_news(&payloads[0], "a").is_empty());
    }

    #[test]
    fn many_news_make_several_payloads_under_postgresql_limit() {
        let now = Timestamp::from_secs(1_000);
        let news: Vec<Typing> = (0..100)
            .map(|n| {
                let (c, who) = ids(n * 2);
                Typing::start(c, who, now)
            })
            .collect();
        let payloads = typing_payloads(&news, &Uuid::now_v7().simple().to_string(), now);
        assert_eq!(payloads.len(), 3);
        assert!(payloads.iter().all(|p| p.len() < 8000));
        let back: Vec<Typing> = payloads.iter().flat_map(|p| typing_news(p, "x")).collect();
        assert_eq!(back, news);
    }

    #[test]
    fn stale_starts_are_not_sent_and_bad_lines_are_skipped() {
        let (c, who) = ids(1);
        let old = Typing::start(c, who, Timestamp::from_secs(1_000));
        let stop = Typing::stop(c, who, Timestamp::from_secs(1_000));
        let payloads = typing_payloads(&[old, stop], "a", Timestamp::from_secs(1_009));
        assert_eq!(typing_news(&payloads[0], "b"), vec![stop]);
        let line = typing_line("a", &old);
        let bad = format!(
            "{line} extra\nb nonsense\n\n{}",
            line.replace("start", "go")
        );
        assert!(typing_news(&bad, "b").is_empty());
    }
}
