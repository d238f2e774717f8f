//! The connection layer: no client takes the server's connections from
//! others.
//!
//! - **A budget, with descriptors in reserve** ([`ConnectionLimits`]):
//!   past it a request on a new connection gets a fast 503 and the
//!   connection closes; `/healthz`, `/readyz` and the connections already
//!   open keep working.
//! - **A share per client address** (the peer; a trusted proxy's own
//!   connections are not counted, see `CONFAB_TRUSTED_PROXIES`): at most
//!   [`ConnectionLimits::per_address`] open connections, and at most
//!   [`ConnectionLimits::pending_per_address`] of its connections and
//!   requests still sending a request head or body (a kept-alive
//!   connection between requests counts: its next head may be coming a
//!   byte at a time). A connection past either is answered 429
//!   `too_many_connections` as it is accepted and closed at once, before
//!   it costs a worker anything; a body past the second (through a
//!   proxy, by the forwarded address) is 429 before it is read.
//! - **Heads that never end are cut.** actix times out a connection's
//!   first request head only; the gate keeps a second handle on each
//!   socket it serves (so a served connection takes two descriptors) and
//!   shuts any connection that has waited [`HEAD_DEADLINE`] for a head.
//! - **A reserve for callers with a token**: past `budget - reserve` open
//!   connections, each new connection closes the connection that has
//!   waited longest for its first head (at least [`PRESSURE_GRACE`]), and
//!   a request on it without a credential is a fast 503.
//!
//! A request body's pace is the body reader's affair (`http::limits`, the
//! upload route's own rate).

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Shutdown};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use actix_web::body::{BodySize, BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{ConnectionType, StatusCode};
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{HttpMessage as _, HttpResponse};
use anyhow::Context as _;
use futures_util::Stream;
use socket2::{SockRef, Socket};

use confab_http::client_addr::{limit_key, TrustedProxies};
use confab_http::error::ApiError;

/// How long a connection may wait for a request head before the gate
/// shuts it: actix's keep-alive (5 s, then it closes an idle connection
/// itself) and its time for a first head (5 s).
pub const HEAD_DEADLINE: Duration = Duration::from_secs(10);
/// Under pressure, a connection that has waited this long for a head may
/// be closed for a newcomer: a client that connects sends its head within
/// a round trip.
pub const PRESSURE_GRACE: Duration = Duration::from_secs(1);
/// How often the gate looks for heads past [`HEAD_DEADLINE`].
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// The server's connection budget and each address's share. The
/// process's open-file limit (its soft limit raised to the hard one at
/// start) less a reserve for everything else that needs a descriptor (the
/// database pool, the SQLite files, the LISTEN connection, webhook
/// deliveries, logs) is where the server stops accepting, so that accept
/// never fails for want of a descriptor. A connection within the `budget`
/// takes two descriptors (its socket and the gate's handle on it); past
/// it, connections are still accepted (one descriptor each) but each
/// request on them is answered 503 at once and the connection closed
/// (`/healthz` and `/readyz` excepted), so that a flood of connections
/// gets fast refusals instead of timeouts and the connections already
/// open keep working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served as usual.
    pub budget: usize,
    /// Connections accepted at all (past it the listener waits).
    pub accepted: usize,
    /// The open-file limit they were derived from.
    pub open_files: u64,
    /// Connections one client address may hold open.
    pub per_address: usize,
    /// Of those, connections and requests still sending a request head or
    /// body.
    pub pending_per_address: usize,
    /// The last connections of the budget, kept for requests with a
    /// credential.
    pub reserve: usize,
}

impl ConnectionLimits {
    /// Descriptors kept for everything but connections: this many, or an
    /// eighth of the limit when that is more.
    pub const RESERVE: u64 = 64;

    /// Derived from an open-file limit (see the type's docs): the budget
    /// is `explicit`, or what seven eighths of the usable descriptors
    /// serve at two each (the last eighth for fast refusals); each
    /// address's share from [`Self::with_shares`]'s defaults.
    pub fn from_open_files(open_files: u64, explicit: Option<usize>) -> anyhow::Result<Self> {
        let reserve = Self::RESERVE.max(open_files / 8);
        let usable = usize::try_from(open_files.saturating_sub(reserve)).unwrap_or(usize::MAX);
        if usable < 4 {
            anyhow::bail!(
                "the open-file limit ({open_files}) leaves no descriptor for connections \
                 after a reserve of {reserve}: raise it (ulimit -n)"
            );
        }
        // Two descriptors a served connection, one a refused one:
        // 2 * budget + (accepted - budget) = usable.
        let most = (usable - 1) / 2;
        let budget = match explicit {
            Some(n) if n <= most => n,
            Some(n) => anyhow::bail!(
                "CONFAB_MAX_CONNECTIONS {n} does not fit the open-file limit ({open_files}): \
                 at most {most} (each served connection takes two descriptors, after a \
                 reserve of {reserve} and room for fast refusals); raise the limit \
                 (ulimit -n) or lower the variable"
            ),
            None => (usable - usable / 8) / 2,
        };
        Self {
            budget,
            accepted: usable - budget,
            open_files,
            per_address: 0,
            pending_per_address: 0,
            reserve: 0,
        }
        .with_shares(None, None)
    }

    /// Each address's share: `per_address` open connections (default an
    /// eighth of the budget, at least 16), `pending` of them still
    /// sending (default a quarter of that, at least 8); and a reserve of a
    /// quarter of the budget.
    pub fn with_shares(
        mut self,
        per_address: Option<usize>,
        pending: Option<usize>,
    ) -> anyhow::Result<Self> {
        let per_address = per_address.unwrap_or((self.budget / 8).max(16));
        let pending = pending.unwrap_or((per_address / 4).max(8));
        if pending > per_address {
            anyhow::bail!(
                "CONFAB_MAX_PENDING_PER_ADDRESS ({pending}) is more than the connections an \
                 address may hold (CONFAB_MAX_CONNECTIONS_PER_ADDRESS, {per_address})"
            );
        }
        self.per_address = per_address;
        self.pending_per_address = pending;
        self.reserve = self.budget / 4;
        Ok(self)
    }

    /// From this process's open-file limit, after raising its soft limit
    /// to the hard one.
    pub fn for_this_process(explicit: Option<usize>) -> anyhow::Result<Self> {
        let open_files = match rlimit::increase_nofile_limit(u64::MAX) {
            Ok(n) => n,
            Err(e) => {
                let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE)
                    .context("cannot read the open-file limit")?;
                tracing::warn!(error = %e, soft, "cannot raise the open-file limit");
                soft
            }
        };
        Self::from_open_files(open_files, explicit)
    }

    /// actix's limit is per worker; the workers are at most the available
    /// parallelism, so together they accept no more than `accepted`.
    pub(crate) fn per_worker(self) -> usize {
        let workers = std::thread::available_parallelism().map_or(1, usize::from);
        (self.accepted / workers).max(1)
    }
}

/// Every connection's place: the counts, and the handles to shut them.
pub(crate) struct Gate {
    limits: ConnectionLimits,
    proxies: TrustedProxies,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    open: usize,
    /// Of `open`, the connections the gate shut that have not closed yet
    /// (actix drops them as soon as its worker reads their end): they
    /// give their place up at once, so that two newcomers in a row each
    /// find the room the pressure made (their descriptors are covered by
    /// the limit's reserve meanwhile).
    shutting: usize,
    conns: HashMap<u64, Conn>,
    /// The connections waiting for a head and not shut yet, oldest first.
    waiting: BTreeSet<(Instant, u64)>,
    /// The shares of the addresses with a connection or a body in flight.
    addresses: HashMap<IpAddr, Share>,
}

struct Conn {
    /// The share it counts in; `None` for a trusted proxy's connection.
    address: Option<IpAddr>,
    /// Since when it waits for a head (counted as pending meanwhile);
    /// `None` while a request is on it.
    waiting: Option<Instant>,
    /// The gate's handle on its socket (`None` past the budget, whose
    /// connections close after one answer).
    handle: Option<Socket>,
    /// Whether a request head ever came on it (an open connection that
    /// served a request is never closed for a newcomer).
    served: bool,
    /// Requests on it not answered yet (more than one when pipelined).
    busy: u32,
    /// Whether the gate shut it (counted in `State::shutting`).
    shut: bool,
}

#[derive(Default)]
struct Share {
    open: usize,
    pending: usize,
}

/// What the gate made of a new connection.
enum Admitted {
    Ticket(ConnectionTicket),
    /// Past the address's share: the refusal to send before closing.
    Refused(ApiError),
}

impl Gate {
    pub(crate) fn new(limits: ConnectionLimits, proxies: TrustedProxies) -> Arc<Self> {
        Arc::new(Self {
            limits,
            proxies,
            state: Mutex::default(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The share a connection from `peer` counts in.
    fn address_of(&self, peer: Option<IpAddr>) -> Option<IpAddr> {
        peer.filter(|ip| !self.proxies.trusts(*ip)).map(limit_key)
    }

    fn admit(self: &Arc<Self>, peer: Option<IpAddr>, socket: Option<SockRef<'_>>) -> Admitted {
        let limits = self.limits;
        let address = self.address_of(peer);
        let now = Instant::now();
        let mut st = self.state();
        if let Some(share) = address.and_then(|a| st.addresses.get(&a)) {
            if share.open >= limits.per_address {
                return Admitted::Refused(ApiError::too_many_connections(
                    "open connections",
                    limits.per_address,
                ));
            }
            if share.pending >= limits.pending_per_address {
                return Admitted::Refused(ApiError::too_many_connections(
                    "connections or requests still sending a request",
                    limits.pending_per_address,
                ));
            }
        }
        st.open += 1;
        // Under pressure a connection that has waited long for a head
        // makes room; the newcomer takes its place (it closes at once).
        let pressed = st.open - st.shutting > limits.budget - limits.reserve;
        if pressed {
            st.evict_oldest(now);
        }
        let over = st.open - st.shutting > limits.budget;
        let reserve_only = !over && pressed;
        let handle = match (over, socket) {
            (false, Some(socket)) => socket
                .try_clone()
                .inspect_err(|e| tracing::debug!(error = %e, "no second handle on a connection"))
                .ok(),
            _ => None,
        };
        let id = st.next_id;
        st.next_id += 1;
        st.conns.insert(
            id,
            Conn {
                address,
                waiting: Some(now),
                handle,
                served: false,
                busy: 0,
                shut: false,
            },
        );
        st.waiting.insert((now, id));
        if let Some(a) = address {
            let share = st.addresses.entry(a).or_default();
            share.open += 1;
            share.pending += 1;
        }
        Admitted::Ticket(ConnectionTicket {
            gate: self.clone(),
            id,
            over,
            reserve_only,
        })
    }

    /// A request head arrived on connection `id`.
    fn head_arrived(&self, id: u64) {
        let mut st = self.state();
        let State {
            conns,
            waiting,
            addresses,
            ..
        } = &mut *st;
        let Some(conn) = conns.get_mut(&id) else {
            return;
        };
        conn.served = true;
        conn.busy += 1;
        if let Some(since) = conn.waiting.take() {
            waiting.remove(&(since, id));
            if let Some(share) = conn.address.and_then(|a| addresses.get_mut(&a)) {
                share.pending = share.pending.saturating_sub(1);
            }
        }
    }

    /// An answer on connection `id` went out: with none left to send, it
    /// waits for a head again.
    fn answered(&self, id: u64) {
        let now = Instant::now();
        let mut st = self.state();
        let State {
            conns,
            waiting,
            addresses,
            ..
        } = &mut *st;
        let Some(conn) = conns.get_mut(&id) else {
            return;
        };
        conn.busy = conn.busy.saturating_sub(1);
        if conn.waiting.is_none() && conn.busy == 0 {
            conn.waiting = Some(now);
            waiting.insert((now, id));
            if let Some(share) = conn.address.and_then(|a| addresses.get_mut(&a)) {
                share.pending += 1;
            }
        }
    }

    /// A body starts coming from `address`: its place among the address's
    /// pending, or `None` when it has none left.
    fn body_started(self: &Arc<Self>, address: IpAddr) -> Option<BodyInFlight> {
        let address = limit_key(address);
        let mut st = self.state();
        let share = st.addresses.entry(address).or_default();
        if share.pending >= self.limits.pending_per_address {
            if share.open == 0 && share.pending == 0 {
                st.addresses.remove(&address);
            }
            return None;
        }
        share.pending += 1;
        Some(BodyInFlight {
            gate: self.clone(),
            address,
        })
    }

    fn body_ended(&self, address: IpAddr) {
        let mut st = self.state();
        if let Some(share) = st.addresses.get_mut(&address) {
            share.pending = share.pending.saturating_sub(1);
            if share.open == 0 && share.pending == 0 {
                st.addresses.remove(&address);
            }
        }
    }

    /// Connection `id` closed.
    fn closed(&self, id: u64) {
        let mut st = self.state();
        st.open = st.open.saturating_sub(1);
        let Some(conn) = st.conns.remove(&id) else {
            return;
        };
        if conn.shut {
            st.shutting = st.shutting.saturating_sub(1);
        }
        if let Some(since) = conn.waiting {
            st.waiting.remove(&(since, id));
        }
        if let Some(a) = conn.address {
            if let Some(share) = st.addresses.get_mut(&a) {
                share.open = share.open.saturating_sub(1);
                if conn.waiting.is_some() {
                    share.pending = share.pending.saturating_sub(1);
                }
                if share.open == 0 && share.pending == 0 {
                    st.addresses.remove(&a);
                }
            }
        }
        // Dropping `conn` closes the gate's handle.
    }

    /// Shuts the connections that have waited for a head past
    /// [`HEAD_DEADLINE`].
    fn shut_late(&self) {
        let now = Instant::now();
        let mut st = self.state();
        while let Some(&(since, id)) = st.waiting.first() {
            if now.duration_since(since) < HEAD_DEADLINE {
                break;
            }
            st.waiting.remove(&(since, id));
            st.shut(id);
        }
    }

    /// Looks for late heads every [`WATCH_EVERY`] while the gate lives.
    pub(crate) fn spawn_watch(gate: &Arc<Self>) {
        let gate: Weak<Self> = Arc::downgrade(gate);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(WATCH_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                match gate.upgrade() {
                    Some(gate) => gate.shut_late(),
                    None => break,
                }
            }
        });
    }

    /// Connections open now, and of those waiting for a head (for tests
    /// and figures).
    pub(crate) fn counts(&self) -> (usize, usize) {
        let st = self.state();
        (st.open, st.waiting.len())
    }
}

impl State {
    /// Under pressure: shuts the connection that has waited longest for
    /// its first head, if it has waited [`PRESSURE_GRACE`] (it then
    /// counts in `shutting` until it closes). (One that served a request waits for its next head until
    /// [`HEAD_DEADLINE`]: the connections already open keep working.)
    fn evict_oldest(&mut self, now: Instant) {
        let oldest = self
            .waiting
            .iter()
            .find(|(since, id)| {
                now.duration_since(*since) >= PRESSURE_GRACE
                    && self
                        .conns
                        .get(id)
                        .is_some_and(|c| c.handle.is_some() && !c.served)
            })
            .copied();
        let Some((since, id)) = oldest else {
            return;
        };
        self.waiting.remove(&(since, id));
        self.shut(id);
    }

    /// Shuts connection `id` through the gate's handle: actix then reads
    /// its end and drops it (and its ticket). It stays counted until then.
    fn shut(&mut self, id: u64) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let Some(handle) = conn.handle.as_ref() else {
            return;
        };
        if let Err(e) = handle.shutdown(Shutdown::Both) {
            tracing::debug!(error = %e, "a late connection could not be shut");
            return;
        }
        if !conn.shut {
            conn.shut = true;
            self.shutting += 1;
        }
    }
}

/// A connection's place, kept in its connection data (and so dropped,
/// giving the place back, when the connection closes).
pub(crate) struct ConnectionTicket {
    gate: Arc<Gate>,
    id: u64,
    /// Past the budget: every request gets a fast 503.
    over: bool,
    /// Within the reserve: requests without a credential get a fast 503.
    reserve_only: bool,
}

impl Drop for ConnectionTicket {
    fn drop(&mut self) {
        self.gate.closed(self.id);
    }
}

/// The connection is past its address's share: refused as it is
/// accepted, before actix reads anything.
pub(crate) struct Refused(ApiError);

/// Takes a newly accepted connection in (`HttpServer::on_connect`): its
/// ticket, or, past its address's share, a 429 written straight to the
/// socket, which is then shut (actix reads its end and drops it).
pub(crate) fn on_connect(
    gate: &Arc<Gate>,
    conn: &dyn std::any::Any,
    ext: &mut actix_web::dev::Extensions,
) {
    let tcp = conn.downcast_ref::<actix_web::rt::net::TcpStream>();
    if let Some(tcp) = tcp {
        // A response written in two pieces (a compressed body's head and
        // its end) must not wait for the client's delayed ACK: 40 ms per
        // kept-alive request otherwise (Nagle's algorithm).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set on a connection");
        }
        // The base of file links without CONFAB_PUBLIC_URL.
        if let Ok(local) = tcp.local_addr() {
            ext.insert(confab_http::links::LocalAddr(local));
        }
    }
    let peer = tcp.and_then(|t| t.peer_addr().ok()).map(|a| a.ip());
    match gate.admit(peer, tcp.map(SockRef::from)) {
        Admitted::Ticket(ticket) => {
            ext.insert(ticket);
        }
        Admitted::Refused(refusal) => {
            if let Some(tcp) = tcp {
                refuse_now(&SockRef::from(tcp), &refusal);
            }
            ext.insert(Refused(refusal));
        }
    }
}

/// Writes `refusal` on a connection just accepted (its send buffer is
/// empty: the write does not block) and shuts it. What the client sent
/// so far is read and dropped first, so that the close is not a reset
/// that could discard the answer.
fn refuse_now(socket: &SockRef<'_>, refusal: &ApiError) {
    let body = refusal.body_text();
    let status = actix_web::ResponseError::status_code(refusal);
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         retry-after: 1\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    let mut answer = head.into_bytes();
    answer.extend_from_slice(body.as_bytes());
    if let Err(e) = socket.send(&answer) {
        tracing::debug!(error = %e, "a refused connection's answer was not sent");
    }
    let mut sink = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    for _ in 0..16 {
        match socket.recv(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    let _ = socket.shutdown(Shutdown::Both);
}

mod requests;

pub(crate) use requests::keep_shares;
use requests::BodyInFlight;

#[cfg(test)]
mod tests;
