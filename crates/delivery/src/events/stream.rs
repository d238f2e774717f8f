//! One `GET /v1/events` stream: a task that replays the caller's events
//! from the table after its start position, then forwards the hub's live
//! events, dropping those at or below the last one sent (so nothing is
//! missed and nothing repeated), with a comment line every heartbeat.
//!
//! The task writes into a small channel that is the response body. It
//! holds no database connection while idle (each read is one store call
//! with its own deadline, outside the request's database budget, which
//! ends with the response head), and ends when the client goes away, when
//! the token is revoked, or when the server shuts down.

use std::convert::Infallible;
use std::time::Duration;

use actix_web::http::header::{self, HeaderValue};
use actix_web::web::Bytes;
use actix_web::HttpResponse;
use confab_domain::ContactId;
use confab_service::{Confab, StreamToken};
use tokio::sync::mpsc;

use super::frame::sse_frame;
use super::hub::{until_closed, Ended, Hub, Live, Subscription};
use super::slots::StreamSlot;

/// Events read from the table per replay query.
const REPLAY_PAGE: u32 = 100;
/// Replay reads that may fail in a row before the stream is ended (the
/// client reconnects with `Last-Event-ID` and resumes).
const REPLAY_TRIES: u32 = 3;
/// Frames waiting to be written to the socket. Small: the task waits when
/// the client reads slowly, and falls back to the table if the hub's queue
/// fills meanwhile.
const BODY_QUEUE: usize = 16;

/// The first bytes of every stream: tells the client to reconnect after
/// 1 s, and that the stream is open (everything committed from now on will
/// arrive).
const OPENING: &str = "retry: 1000\n: connected\n\n";
const HEARTBEAT: &str = ": keep-alive\n\n";

/// The streaming response of a stream subscribed as `subscription`,
/// starting after `position`.
pub fn open_stream(
    hub: &Hub,
    contact: ContactId,
    token: StreamToken,
    position: i64,
    subscription: Subscription,
    slot: StreamSlot,
) -> HttpResponse {
    let (tx, mut rx) = mpsc::channel::<Bytes>(BODY_QUEUE);
    let task = StreamTask {
        hub: hub.clone(),
        contact,
        token,
        position,
        tx,
        sent: 0,
    };
    tokio::spawn(task.run(subscription));
    let body = futures_util::stream::poll_fn(move |cx| {
        // The body owns the slot: it is given back when the connection
        // closes or the stream ends.
        let _slot = &slot;
        rx.poll_recv(cx).map(|frame| frame.map(Ok::<_, Infallible>))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        // Never compressed: an encoder per stream would cost far more
        // memory than the stream itself, and could hold frames back.
        .insert_header((
            header::CONTENT_ENCODING,
            HeaderValue::from_static("identity"),
        ))
        // Proxies that buffer (nginx) must pass each frame on at once.
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body)
}

struct StreamTask {
    hub: Hub,
    contact: ContactId,
    token: StreamToken,
    /// The position of the last event sent (or the start).
    position: i64,
    tx: mpsc::Sender<Bytes>,
    /// Events sent so far (for the log line when it closes).
    sent: u64,
}

/// Why a stream stops.
enum Stop {
    /// The client went away.
    Gone,
    /// The hub ended it, or the table cannot be read.
    Ended(&'static str),
}

impl StreamTask {
    async fn run(mut self, mut subscription: Subscription) {
        let metrics = self.hub.metrics().clone();
        let _open = metrics.stream_opened();
        let opened = std::time::Instant::now();
        if self
            .send(Bytes::from_static(OPENING.as_bytes()))
            .await
            .is_err()
        {
            return;
        }
        let stop = loop {
            if let Err(stop) = self.replay().await {
                break stop;
            }
            match self.live(&mut subscription).await {
                // Fell behind the hub: back to the table, subscribed again
                // first so that nothing falls between the two.
                Ok(()) => {
                    metrics.stream_resynced();
                    subscription = self.hub.subscribe(self.contact, self.token.clone());
                }
                Err(stop) => break stop,
            }
        };
        let why = match stop {
            Stop::Gone => "the client went away",
            Stop::Ended(why) => {
                let _ = self
                    .send(Bytes::from(format!(": stream ended: {why}\n\n")))
                    .await;
                why
            }
        };
        // The opening is logged with the request; its end here, so that an
        // operator sees how long streams live and why they end.
        tracing::info!(
            contact = %self.contact,
            duration_ms = u64::try_from(opened.elapsed().as_millis()).unwrap_or(u64::MAX),
            events = self.sent,
            reason = why,
            "event stream closed"
        );
    }

    /// Sends everything of the caller's after `position` from the table.
    async fn replay(&mut self) -> Result<(), Stop> {
        let service: &Confab = self.hub.service();
        let closing = self.hub.closing();
        let mut failures = 0;
        loop {
            if *closing.borrow() {
                return Err(Stop::Ended(
                    "the server is shutting down; reconnect with Last-Event-ID",
                ));
            }
            let page = match service
                .events_for(self.contact, self.position, REPLAY_PAGE)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    failures += 1;
                    tracing::warn!(error = %e, failures, "a stream cannot read its events");
                    if failures >= REPLAY_TRIES {
                        return Err(Stop::Ended(
                            "the events cannot be read now; reconnect with Last-Event-ID",
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            failures = 0;
            let full = page.len() >= REPLAY_PAGE as usize;
            for event in &page {
                self.send(sse_frame(event)).await?;
                self.position = event.position;
                self.sent += 1;
            }
            self.hub.metrics().events_sent(page.len());
            if !full {
                return Ok(());
            }
        }
    }

    /// Forwards live events; `Ok` when the stream fell behind and must
    /// replay.
    async fn live(&mut self, subscription: &mut Subscription) -> Result<(), Stop> {
        let heartbeat = self.hub.options().heartbeat;
        let mut closing = self.hub.closing();
        loop {
            let live = tokio::select! {
                live = subscription.recv() => live,
                () = tokio::time::sleep(heartbeat) => {
                    self.send(Bytes::from_static(HEARTBEAT.as_bytes())).await?;
                    continue;
                }
                () = self.tx.closed() => return Err(Stop::Gone),
                () = until_closed(&mut closing) => {
                    return Err(Stop::Ended("the server is shutting down; reconnect with Last-Event-ID"));
                }
            };
            match live {
                Some(Live {
                    position: Some(position),
                    frame,
                }) => {
                    if position > self.position {
                        self.send(frame).await?;
                        self.position = position;
                        self.sent += 1;
                        self.hub.metrics().events_sent(1);
                    }
                }
                // Typing news: sent as it comes, the position kept.
                Some(Live {
                    position: None,
                    frame,
                }) => self.send(frame).await?,
                None => {
                    return match subscription.ended() {
                        Ended::Lagged => Ok(()),
                        Ended::Revoked => Err(Stop::Ended("the token was revoked or expired")),
                        Ended::Shutdown => Err(Stop::Ended(
                            "the server is shutting down; reconnect with Last-Event-ID",
                        )),
                        Ended::Open => Err(Stop::Gone),
                    };
                }
            }
        }
    }

    async fn send(&self, frame: Bytes) -> Result<(), Stop> {
        self.tx.send(frame).await.map_err(|_| Stop::Gone)
    }
}
