//! The hub: one per server. It keeps a cursor in the events table; on each
//! wakeup (this process's commits, a PostgreSQL notification, or the poll
//! interval) it reads the new events in batches and hands each to the
//! subscriptions of its recipients, in memory.
//!
//! Its memory is bounded whatever an event's audience or payload (docs/api.md
//! "Limits"): a batch is read for the contacts that have a stream here
//! (a snapshot taken before the read), and holds only those recipients,
//! each event's shared payload once, and no more than
//! [`HubOptions::read`] allows (events, payload bytes, recipient rows; at
//! least one event). Each event's shared frame is built once and shared by
//! its streams. A stream that subscribes while a batch is read without its
//! contact is sent back to the table (below), which has what it missed.
//!
//! A read that fails is tried again with half as many events, down to one;
//! the batch grows back by doubling as reads succeed. A single event whose
//! read fails [`STUCK_AFTER`] times in a row does not hold the hub forever:
//! every stream goes back to the table (which loses nothing) and the
//! cursor moves past it, with a warning.
//!
//! Each subscription has a bounded queue. The hub never waits for a stream:
//! when a queue is full it drops the subscription marked [`Ended::Lagged`],
//! and the stream goes back to the table from its last position (then
//! subscribes again), so a slow client costs neither the hub's progress nor
//! unbounded memory. Every [`REVALIDATE_EVERY`] the hub asks the store, in
//! one call, which of the open streams' tokens are still live, and ends
//! the streams of the others.
//!
//! Typing news (docs/api.md "Typing") takes another way: never stored, it
//! comes from the service's relay (this process's and, on PostgreSQL, the
//! other processes'), and each piece is handed to the streams of the
//! conversation's other members connected here, asked of the store once
//! per conversation and batch among the contacts with a stream. Its frames
//! carry no position: a stream sends them as they come and never replays
//! them; a full queue drops the frame, not the stream.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use confab_domain::{ContactId, Typing};
use confab_service::{Confab, FanOutBatch, FanOutEvent, FanOutLimits, StreamToken};
use tokio::sync::{mpsc, watch};

use super::frame::{sse_frame, sse_frame_with, typing_frame};
use confab_metrics::Metrics;
use read::read_loop;
#[cfg(test)]
use read::{skip, AfterFailure, Reading};

/// Failed reads of a single event in a row after which the hub moves past
/// it (see the module docs).
const STUCK_AFTER: u32 = 3;
/// How often the open streams' tokens are checked (revocation reaches a
/// stream within this plus one query, under the contract's 5 s).
const REVALIDATE_EVERY: Duration = Duration::from_secs(2);
/// Extra reads after a wakeup: on PostgreSQL an event becomes readable only
/// once every transaction that began before its own has ended, which may be
/// a few milliseconds after the notification of its commit.
/// Spaced out so that a transaction holding the horizon back for a while
/// (a loaded machine) still delays its followers well under the poll.
const FOLLOW_UPS: [Duration; 6] = [
    Duration::from_millis(10),
    Duration::from_millis(30),
    Duration::from_millis(70),
    Duration::from_millis(150),
    Duration::from_millis(300),
    Duration::from_millis(500),
];

/// With no stream open, how often the hub's cursor moves to "now" (its
/// wakeups meanwhile read nothing).
const IDLE_CATCH_UP: Duration = Duration::from_millis(100);

/// How the hub and its streams behave.
#[derive(Debug, Clone, Copy)]
pub struct HubOptions {
    /// The interval of the `:` comment lines that keep proxies open.
    pub heartbeat: Duration,
    /// Live events a stream may have waiting before it is sent back to the
    /// table.
    pub queue: usize,
    /// What one read of the hub may hold at most (the number of events
    /// shrinks below this after failed reads, then grows back).
    pub read: FanOutLimits,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            heartbeat: Duration::from_secs(15),
            queue: 256,
            read: FanOutLimits::default(),
        }
    }
}

/// Resolves once the hub closes (or is gone).
pub async fn until_closed(closing: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped here, before any other await.
    let _ = closing.wait_for(|closed| *closed).await;
}

/// A live event for one recipient: its position and its frame.
#[derive(Debug, Clone)]
pub struct Live {
    /// The stored event's position; `None` for typing news, which has
    /// none (sent as it comes, never replayed).
    pub position: Option<i64>,
    pub frame: Bytes,
}

/// Why the hub dropped a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Ended {
    /// Still subscribed, or the stream itself went away.
    Open = 0,
    /// Its queue was full: the stream catches up from the table.
    Lagged = 1,
    /// Its token was revoked or expired.
    Revoked = 2,
    /// The server is shutting down.
    Shutdown = 3,
}

struct Sub {
    id: u64,
    tx: mpsc::Sender<Live>,
    token: StreamToken,
    ended: Arc<AtomicU8>,
}

impl Sub {
    fn end(self, why: Ended) {
        self.ended.store(why as u8, Ordering::SeqCst);
        // Dropping the sender wakes the stream with `None`.
    }
}

#[derive(Default)]
struct State {
    next_id: u64,
    closed: bool,
    subs: HashMap<ContactId, Vec<Sub>>,
    /// Contacts whose streams a batch sent back to the table because they
    /// subscribed after its snapshot (`fan_out`), with the snapshots that
    /// still name them: their streams subscribe again at once, maybe just
    /// after the next snapshot, which would send them back again, batch
    /// after batch while the hub has a backlog.
    lately: HashMap<ContactId, u8>,
}

/// Snapshots that name a contact sent back to the table (`State::lately`).
const LATELY_SNAPSHOTS: u8 = 3;

struct Inner {
    service: Confab,
    options: HubOptions,
    metrics: Arc<Metrics>,
    state: Mutex<State>,
    shutdown: watch::Sender<bool>,
    /// Told when a stream subscribes: wakes a hub that, with no stream
    /// open, sleeps through commits (`read_loop`).
    opened: tokio::sync::Notify,
    /// Recipients the store handed the hub, all batches together: what the
    /// hub holds grows with these (it stays with the connected ones).
    recipients_read: AtomicU64,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change to the map is complete before the guard drops.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn new(service: Confab, options: HubOptions, metrics: Arc<Metrics>) -> Self {
        let (shutdown, _) = watch::channel(false);
        Self {
            service,
            options,
            metrics,
            state: Mutex::default(),
            shutdown,
            opened: tokio::sync::Notify::new(),
            recipients_read: AtomicU64::new(0),
        }
    }

    /// The contacts with a subscription now, and those just sent back to
    /// the table (see `State::lately`): whom the next batch is read for.
    fn connected(&self) -> Arc<HashSet<ContactId>> {
        let mut state = self.lock();
        let State { subs, lately, .. } = &mut *state;
        let mut to: HashSet<ContactId> = subs.keys().copied().collect();
        lately.retain(|contact, left| {
            to.insert(*contact);
            *left -= 1;
            *left > 0 && !subs.contains_key(contact)
        });
        Arc::new(to)
    }
}

/// The server's event hub. Clones share it.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

/// A stream's place in the hub. Dropping it unsubscribes.
pub struct Subscription {
    id: u64,
    contact: ContactId,
    rx: mpsc::Receiver<Live>,
    ended: Arc<AtomicU8>,
    hub: Weak<Inner>,
}

impl Subscription {
    /// The next live event; `None` once the hub dropped the subscription
    /// (see [`Subscription::ended`]).
    pub async fn recv(&mut self) -> Option<Live> {
        self.rx.recv().await
    }

    pub fn ended(&self) -> Ended {
        match self.ended.load(Ordering::SeqCst) {
            1 => Ended::Lagged,
            2 => Ended::Revoked,
            3 => Ended::Shutdown,
            _ => Ended::Open,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let Some(hub) = self.hub.upgrade() else {
            return;
        };
        let mut state = hub.lock();
        if let Some(subs) = state.subs.get_mut(&self.contact) {
            subs.retain(|s| s.id != self.id);
            if subs.is_empty() {
                state.subs.remove(&self.contact);
            }
        }
    }
}

impl Hub {
    /// Starts the hub's reader and its token checks on the current tokio
    /// runtime; they stop at [`Hub::close`].
    pub fn start(service: Confab, options: HubOptions, metrics: Arc<Metrics>) -> Hub {
        let inner = Arc::new(Inner::new(service, options, metrics));
        tokio::spawn(read_loop(inner.clone()));
        tokio::spawn(revalidate_loop(inner.clone()));
        tokio::spawn(typing_loop(inner.clone()));
        Hub { inner }
    }

    pub fn options(&self) -> HubOptions {
        self.inner.options
    }

    pub fn service(&self) -> &Confab {
        &self.inner.service
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// Subscribes `contact`'s stream: every event the hub reads from now on
    /// for `contact` is queued for it. After [`Hub::close`] the
    /// subscription is born ended.
    pub fn subscribe(&self, contact: ContactId, token: StreamToken) -> Subscription {
        let (tx, rx) = mpsc::channel(self.inner.options.queue.max(1));
        let ended = Arc::new(AtomicU8::new(Ended::Open as u8));
        let mut state = self.inner.lock();
        state.next_id += 1;
        let id = state.next_id;
        let sub = Sub {
            id,
            tx,
            token,
            ended: ended.clone(),
        };
        if state.closed {
            sub.end(Ended::Shutdown);
        } else {
            state.subs.entry(contact).or_default().push(sub);
            self.inner.opened.notify_one();
        }
        Subscription {
            id,
            contact,
            rx,
            ended,
            hub: Arc::downgrade(&self.inner),
        }
    }

    /// A receiver that turns `true` when the hub closes.
    pub fn closing(&self) -> watch::Receiver<bool> {
        self.inner.shutdown.subscribe()
    }

    /// Ends every stream (each finishes its response, so that a graceful
    /// shutdown does not wait on them) and stops the hub's tasks. New
    /// streams end at once.
    pub fn close(&self) {
        let subs = {
            let mut state = self.inner.lock();
            state.closed = true;
            std::mem::take(&mut state.subs)
        };
        for sub in subs.into_values().flatten() {
            sub.end(Ended::Shutdown);
        }
        self.inner.shutdown.send_replace(true);
    }

    /// Open subscriptions (for tests and metrics).
    pub fn subscriptions(&self) -> usize {
        self.inner.lock().subs.values().map(Vec::len).sum()
    }

    /// Recipients the store handed the hub so far (see `Inner`).
    #[cfg(test)]
    fn recipients_read(&self) -> u64 {
        self.inner.recipients_read.load(Ordering::Relaxed)
    }
}

/// Hands each event of `batch` (read for the contacts `to`) to the
/// subscriptions of its recipients.
fn fan_out(inner: &Inner, batch: &FanOutBatch, to: &HashSet<ContactId>) {
    let now = now_micros();
    // The frames, built before the lock is taken: one shared frame per
    // event (its streams share its bytes), one per own payload.
    let mut frames: Vec<(i64, Vec<(ContactId, Bytes)>)> = Vec::with_capacity(batch.events.len());
    let mut recipients = 0u64;
    for FanOutEvent {
        event,
        recipients: to_each,
    } in &batch.events
    {
        inner.metrics.event_read(now - event.created_at.micros());
        recipients += to_each.len() as u64;
        let mut shared: Option<Bytes> = None;
        let each = to_each
            .iter()
            .map(|(contact, own)| {
                let frame = match own {
                    Some(payload) => sse_frame_with(event, payload),
                    None => shared.get_or_insert_with(|| sse_frame(event)).clone(),
                };
                (*contact, frame)
            })
            .collect();
        frames.push((event.position, each));
    }
    inner
        .recipients_read
        .fetch_add(recipients, Ordering::Relaxed);

    let mut delivered = 0u64;
    let mut state = inner.lock();
    if !batch.events.is_empty() {
        // Streams of contacts the batch was not read for subscribed after
        // its snapshot: it may hold events of theirs that their replay did
        // not reach. They go back to the table, which has them, and the
        // next snapshots name their contacts.
        let State { subs, lately, .. } = &mut *state;
        subs.retain(|contact, subs| {
            if to.contains(contact) {
                return true;
            }
            for sub in subs.drain(..) {
                sub.end(Ended::Lagged);
            }
            lately.insert(*contact, LATELY_SNAPSHOTS);
            false
        });
    }
    for (position, each) in frames {
        for (contact, frame) in each {
            let live = Live {
                position: Some(position),
                frame,
            };
            // A stream that cannot take a stored event replays it.
            delivered += offer(&mut state, contact, &live, WhenFull::Lag).0;
        }
    }
    drop(state);
    inner.metrics.events_queued(delivered);
}

/// What a full queue costs the subscription that cannot take a frame.
#[derive(Debug, Clone, Copy)]
enum WhenFull {
    /// It ends [`Ended::Lagged`] (its stream replays from the table).
    Lag,
    /// It loses this frame only.
    Drop,
}

/// Queues `live` for every subscription of `contact`, removing those whose
/// stream went away and treating full ones as `full` says; returns the
/// frames queued and dropped.
fn offer(state: &mut State, contact: ContactId, live: &Live, full: WhenFull) -> (u64, u64) {
    let Some(subs) = state.subs.get_mut(&contact) else {
        return (0, 0);
    };
    let (mut queued, mut dropped) = (0u64, 0u64);
    let mut i = 0;
    while i < subs.len() {
        match (subs[i].tx.try_send(live.clone()), full) {
            (Ok(()), _) => queued += 1,
            (Err(mpsc::error::TrySendError::Full(_)), WhenFull::Drop) => dropped += 1,
            (Err(mpsc::error::TrySendError::Full(_)), WhenFull::Lag) => {
                subs.swap_remove(i).end(Ended::Lagged);
                continue;
            }
            (Err(mpsc::error::TrySendError::Closed(_)), _) => {
                subs.swap_remove(i).end(Ended::Open);
                continue;
            }
        }
        i += 1;
    }
    if subs.is_empty() {
        state.subs.remove(&contact);
    }
    (queued, dropped)
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The typing loop's longest sleep: how late it may learn of a wake-up.
const TYPING_TICK: Duration = Duration::from_millis(100);

/// Hands typing news to the streams of those who hear it, as it comes, and
/// has news that waited told in its turn (`Confab::typing_wake`).
async fn typing_loop(inner: Arc<Inner>) {
    let mut closing = inner.shutdown.subscribe();
    loop {
        let wait = inner.service.typing_wait(TYPING_TICK);
        let news = tokio::select! {
            () = until_closed(&mut closing) => return,
            news = inner.service.typing_news() => news,
            () = tokio::time::sleep(wait) => Vec::new(),
        };
        inner.service.typing_wake();
        if !news.is_empty() {
            deliver_typing(&inner, news).await;
        }
    }
}

/// Queues each piece of `news` for the streams here of the other members
/// of its conversation: one store call per conversation in `news`, for the
/// contacts with a stream (none when no stream is open). News that cannot
/// be placed (a failed read, a full queue) is dropped: a start expires on
/// its own.
async fn deliver_typing(inner: &Inner, news: Vec<Typing>) {
    let connected: Vec<ContactId> = inner.lock().subs.keys().copied().collect();
    if connected.is_empty() {
        return;
    }
    let heard = match inner.service.typing_audiences(news, connected).await {
        Ok(heard) => heard,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read who hears typing news; dropped");
            return;
        }
    };
    let (mut queued, mut dropped) = (0u64, 0u64);
    let mut state = inner.lock();
    for (typing, audience) in heard {
        let live = Live {
            position: None,
            frame: typing_frame(&typing),
        };
        for contact in audience {
            // Only this frame is lost: the stream keeps its place.
            let (q, d) = offer(&mut state, contact, &live, WhenFull::Drop);
            queued += q;
            dropped += d;
        }
    }
    drop(state);
    inner.metrics.typing_frames(queued, dropped);
}

/// Ends the streams whose token is no longer live, every
/// [`REVALIDATE_EVERY`].
async fn revalidate_loop(inner: Arc<Inner>) {
    let mut closing = inner.shutdown.subscribe();
    loop {
        tokio::select! {
            () = until_closed(&mut closing) => return,
            () = tokio::time::sleep(REVALIDATE_EVERY) => {}
        }
        let tokens: HashSet<StreamToken> = inner
            .lock()
            .subs
            .values()
            .flatten()
            .map(|s| s.token.clone())
            .collect();
        if tokens.is_empty() {
            continue;
        }
        let live = match inner
            .service
            .live_stream_tokens(tokens.into_iter().collect())
            .await
        {
            Ok(live) => live,
            Err(e) => {
                // Not a reason to end streams: the store may be back soon.
                tracing::warn!(error = %e, "cannot check the open streams' tokens");
                continue;
            }
        };
        let mut ended = Vec::new();
        {
            let mut state = inner.lock();
            for subs in state.subs.values_mut() {
                let mut i = 0;
                while i < subs.len() {
                    if live.contains(&subs[i].token) {
                        i += 1;
                    } else {
                        ended.push(subs.swap_remove(i));
                    }
                }
            }
            state.subs.retain(|_, subs| !subs.is_empty());
        }
        for sub in ended {
            sub.end(Ended::Revoked);
        }
    }
}

mod read;
#[cfg(test)]
mod tests;
