//! The hub's reader: when to read the events table (a wakeup, its
//! follow-ups, the poll interval), how much at a time (fewer events after a
//! failed read, more again as reads succeed), and moving past an event
//! whose read keeps failing.

use super::*;

/// Waits for the next reason to read: a wakeup (then a few quick follow-up
/// reads), or the poll interval. Returns `false` when the hub closes.
pub(super) async fn read_loop(inner: Arc<Inner>) {
    let mut closing = inner.shutdown.subscribe();
    let service = inner.service.clone();
    let poll = service.events_poll_every();
    // Streams replay from the table whatever happened before the hub's
    // first read, so the hub starts at "now".
    let mut cursor = loop {
        match service.events_start(None).await {
            Ok(position) => break position,
            Err(e) => {
                tracing::warn!(error = %e, "the event hub cannot read its start; trying again");
                tokio::select! {
                    () = until_closed(&mut closing) => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    };
    // Follow-up reads still due after the last wakeup: (when, index).
    let mut woken_at: Option<Instant> = None;
    let mut step = 0usize;
    // When the cursor last moved without a read (no stream open).
    let mut moved_idle: Option<Instant> = None;
    let mut reading = Reading::new(inner.options.read);
    loop {
        if inner.lock().subs.is_empty() {
            // No stream open: a commit needs no read, the cursor only
            // moves to "now" every `IDLE_CATCH_UP` (`drain`). Until that is
            // due the hub sleeps through the wakeups (they wait as one
            // stored permit), so that under a write load it wakes ten
            // times a second, not once per commit; a stream that opens
            // wakes it at once.
            woken_at = None;
            let due = moved_idle.map(|at| at + IDLE_CATCH_UP);
            if let Some(due) = due.filter(|due| *due > Instant::now()) {
                tokio::select! {
                    () = until_closed(&mut closing) => return,
                    () = inner.opened.notified() => {}
                    () = tokio::time::sleep_until(due.into()) => {}
                }
            }
        }
        let wait = match woken_at {
            Some(at) if step < FOLLOW_UPS.len() => {
                (at + FOLLOW_UPS[step]).saturating_duration_since(Instant::now())
            }
            _ => poll,
        };
        tokio::select! {
            () = until_closed(&mut closing) => return,
            () = service.events_changed() => {
                woken_at = Some(Instant::now());
                step = 0;
            }
            () = tokio::time::sleep(wait) => {
                if woken_at.is_some() {
                    step += 1;
                    if step >= FOLLOW_UPS.len() {
                        woken_at = None;
                    }
                }
            }
        }
        drain(&inner, &mut cursor, &mut moved_idle, &mut reading).await;
    }
}

/// The size of the hub's next read: halved after each failed read (down to
/// one event), doubled after each that succeeds (up to the configured
/// limit), so that a batch too slow for the database's deadline still
/// makes progress.
#[derive(Debug)]
pub(super) struct Reading {
    limits: FanOutLimits,
    /// Events in the next read.
    events: u32,
    /// Reads of one event that failed in a row.
    stuck: u32,
}

/// What to do after a failed read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum AfterFailure {
    /// Read again at once, fewer events.
    Fewer,
    /// Read again at the next wakeup or poll.
    Later,
    /// Move past the event (see [`skip`]).
    Skip,
}

impl Reading {
    pub(super) fn new(limits: FanOutLimits) -> Self {
        Self {
            limits,
            events: limits.events.max(1),
            stuck: 0,
        }
    }

    pub(super) fn limits(&self) -> FanOutLimits {
        FanOutLimits {
            events: self.events,
            ..self.limits
        }
    }

    pub(super) fn succeeded(&mut self) {
        self.events = self.events.saturating_mul(2).min(self.limits.events.max(1));
        self.stuck = 0;
    }

    pub(super) fn failed(&mut self) -> AfterFailure {
        if self.events > 1 {
            self.events /= 2;
            return AfterFailure::Fewer;
        }
        self.stuck += 1;
        if self.stuck >= STUCK_AFTER {
            AfterFailure::Skip
        } else {
            AfterFailure::Later
        }
    }

    /// The hub moved past the event it could not read.
    pub(super) fn skipped(&mut self) {
        self.stuck = 0;
    }
}

/// Reads and fans out everything after `cursor` until caught up.
///
/// With no stream open it reads nothing: at most every
/// [`IDLE_CATCH_UP`] it moves `cursor` to "now" (one statement that reads
/// no table), as the hub's start does, instead of reading every new event
/// and its recipients for no one, on every commit of this process. A
/// stream that opens after the check replays the table from its own start,
/// which is no earlier; one that opened before it is seen by the check made
/// after "now" is read, and gets the usual read from the old cursor, as
/// does one that opens while the cursor waits for its next move (the
/// events it already replayed are not sent twice: a stream takes only
/// events above the last it sent).
async fn drain(
    inner: &Inner,
    cursor: &mut i64,
    moved_idle: &mut Option<Instant>,
    reading: &mut Reading,
) {
    if inner.lock().subs.is_empty() {
        if moved_idle.is_some_and(|at| at.elapsed() < IDLE_CATCH_UP) {
            return;
        }
        match inner.service.events_start(None).await {
            Ok(now) if inner.lock().subs.is_empty() => {
                *cursor = (*cursor).max(now);
                *moved_idle = Some(Instant::now());
                return;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "the event hub cannot read its position");
                return;
            }
        }
    }
    loop {
        let to = inner.connected();
        if to.is_empty() {
            // Every stream went away: the next wakeup moves the cursor.
            return;
        }
        let limits = reading.limits();
        match inner
            .service
            .recent_events(*cursor, limits, to.clone())
            .await
        {
            Ok(batch) => {
                reading.succeeded();
                if let Some(last) = batch.events.last() {
                    *cursor = last.event.position;
                }
                fan_out(inner, &batch, &to);
                if !batch.more {
                    return;
                }
            }
            // Streams lose nothing meanwhile: they replay from the table
            // when they fall behind.
            Err(e) => match reading.failed() {
                AfterFailure::Fewer => {
                    tracing::warn!(error = %e, events = limits.events,
                        "the event hub cannot read new events; reading fewer at once");
                }
                AfterFailure::Later => {
                    tracing::warn!(error = %e, events = limits.events,
                        "the event hub cannot read new events; trying again at the next wakeup");
                    return;
                }
                AfterFailure::Skip => {
                    tracing::warn!(error = %e, after = *cursor,
                        "the event hub cannot read the next event");
                    if skip(inner, cursor).await {
                        reading.skipped();
                    }
                    return;
                }
            },
        }
    }
}

/// Moves past an event the hub cannot read: every open subscription ends
/// [`Ended::Lagged`] (each stream replays its own events from the table,
/// from the last it sent, and subscribes again, so it loses nothing) and
/// the cursor moves to "now", below which every event is readable, so a
/// stream's replay covers all the hub skipped. Returns whether it moved.
pub(super) async fn skip(inner: &Inner, cursor: &mut i64) -> bool {
    let now = match inner.service.events_start(None).await {
        Ok(now) => now,
        Err(e) => {
            tracing::warn!(error = %e, "the event hub cannot read its position to move on");
            return false;
        }
    };
    let subs = std::mem::take(&mut inner.lock().subs);
    let streams: usize = subs.values().map(Vec::len).sum();
    for sub in subs.into_values().flatten() {
        sub.end(Ended::Lagged);
    }
    tracing::warn!(
        from = *cursor,
        to = now,
        streams,
        "the event hub moved past events it could not read; its streams read them from the table"
    );
    *cursor = (*cursor).max(now);
    true
}
