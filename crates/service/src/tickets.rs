//! Event tickets (docs/api.md "Requests and answers"): a browser's `EventSource` cannot send
//! an `Authorization` header, so a client trades its token for a ticket,
//! a credential good only for opening the caller's event stream
//! (`GET /v1/events?ticket=...`) for [`TICKET_TTL_SECS`]. A ticket lives no
//! longer than the token that made it: revoking or expiring the token
//! refuses its tickets, and ends the streams they opened.

use confab_domain::{Contact, Timestamp};
use confab_ports::{Lookup, NewTicket};

use crate::auth::{hash_token, random_hex, TOKEN_PREFIX};
use crate::events::StreamToken;
use crate::{Confab, ServiceError};

/// Tickets start with this (and never with a token's prefix), so that a
/// ticket sent as a token, or a token as a ticket, is refused without a
/// store round trip.
pub const TICKET_PREFIX: &str = "cft_";

/// How long a ticket opens streams: 10 minutes (a stream it opened stays
/// open past that; a reconnect after it needs a new ticket).
pub const TICKET_TTL_SECS: i64 = 600;

/// How long an expired ticket is kept before it is pruned: meanwhile it is
/// refused as expired (a client knows to make a new one), not as unknown.
pub const EXPIRED_TICKET_KEPT_SECS: i64 = 86_400;

/// A ticket just made: the secret is shown this once.
#[derive(Debug, Clone)]
pub struct Ticket {
    /// `cft_` and 64 hex characters; only its SHA-256 is stored.
    pub ticket: String,
    /// When it stops opening streams.
    pub expires_at: Timestamp,
}

/// Whom a ticket authenticates, and the token a stream it opens hangs on.
#[derive(Debug, Clone)]
pub struct TicketCaller {
    /// The contact of the token that made the ticket.
    pub contact: Contact,
    /// That token, as streams keep it: revoking it ends the stream.
    pub token: StreamToken,
}

/// Whether `credential` has a ticket's shape.
pub fn is_ticket(credential: &str) -> bool {
    credential.starts_with(TICKET_PREFIX)
}

impl Confab {
    /// Makes a ticket for the bearer of `token` (a contact's token, already
    /// authenticated by the caller of this). `Unauthorized` when the token
    /// is no longer live.
    pub async fn issue_ticket(&self, token: &str) -> Result<Ticket, ServiceError> {
        if !token.starts_with(TOKEN_PREFIX) || crate::is_server_key(token) {
            return Err(ServiceError::Unauthorized);
        }
        let secret = format!("{TICKET_PREFIX}{}", random_hex("an event ticket")?);
        let now = self.now();
        let expires_at = now.plus_secs(TICKET_TTL_SECS);
        let stored = self
            .ports
            .tokens
            .insert_ticket(NewTicket {
                hash: hash_token(&secret),
                token_hash: hash_token(token),
                created_at: now,
                expires_at,
            })
            .await;
        match stored {
            Ok(()) => Ok(Ticket {
                ticket: secret,
                expires_at,
            }),
            Err(confab_ports::StoreError::NotFound) => Err(ServiceError::Unauthorized),
            Err(e) => Err(e.into()),
        }
    }

    /// The holder of a live ticket (not expired, its token live), with the
    /// contact's activity recorded as for a token. `Expired` when the
    /// ticket or its token has expired (a new token makes a new ticket);
    /// `Unauthorized` otherwise (unknown, or its token revoked).
    pub async fn authenticate_ticket(&self, ticket: &str) -> Result<TicketCaller, ServiceError> {
        // Cheap shape check first: no store round trip for garbage.
        if !is_ticket(ticket) || ticket.len() > 256 {
            return Err(ServiceError::Unauthorized);
        }
        let now = self.now();
        let found = self
            .ports
            .tokens
            .ticket_holder(&hash_token(ticket), now)
            .await?;
        let holder = match found {
            Lookup::Live(holder) => holder,
            Lookup::Expired => return Err(ServiceError::Expired),
            Lookup::Unknown => return Err(ServiceError::Unauthorized),
        };
        let contact = self
            .record_use(holder.contact, &holder.token_hash, now)
            .await?;
        Ok(TicketCaller {
            contact,
            token: StreamToken::from_hash(holder.token_hash),
        })
    }

    /// Deletes at most `batch` tickets that expired over
    /// [`EXPIRED_TICKET_KEPT_SECS`] ago; returns how many.
    pub async fn prune_tickets(&self, batch: u32) -> Result<u64, ServiceError> {
        let before = self.now().plus_secs(-EXPIRED_TICKET_KEPT_SECS);
        Ok(self.ports.tokens.prune_tickets(before, batch).await?)
    }
}
