//! Credentials (docs/api.md "Authentication and tokens" and "Server API: from an app's backend"): contacts' access tokens, the
//! tickets that stand for one on an event stream, and the server keys of
//! app backends.

use async_trait::async_trait;
use confab_domain::{Contact, ContactId, Page, Paged, Timestamp};
use uuid::Uuid;

use crate::StoreError;

/// A token to store. Only the hash of the secret is ever stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// Names the token.
    pub id: Uuid,
    /// The contact the token authenticates; it must exist.
    pub contact_id: ContactId,
    /// Lowercase hex SHA-256 of the secret.
    pub hash: String,
    /// When the token was issued.
    pub created_at: Timestamp,
    /// The token is refused from this instant on; `None`: it never expires
    /// (it can still be revoked).
    pub expires_at: Option<Timestamp>,
}

/// Credentials: contacts' access tokens and the server keys of app backends.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// Stores a new, live token for its contact.
    /// # Errors
    /// - MUST return `NotFound` when the contact does not exist.
    async fn insert_token(&self, token: NewToken) -> Result<(), StoreError>;
    /// The token with this hash at `now`, in one lookup: `Live` with its
    /// contact; `Expired` when it is stored, not revoked, and expired;
    /// `Unknown` when no such token is stored or it was revoked.
    async fn contact_for_token(
        &self,
        hash: &str,
        now: Timestamp,
    ) -> Result<Lookup<LiveToken>, StoreError>;
    /// Revokes every live token of the contact (neither revoked nor expired
    /// at `at`), recording `at` as their revocation time; returns how many
    /// (0 when it has none).
    async fn revoke_tokens(&self, contact_id: ContactId, at: Timestamp) -> Result<u64, StoreError>;
    /// Revokes the token `id` if it is live at `at`, recording `at`;
    /// returns its contact, `None` when there is no such live token.
    async fn revoke_token(&self, id: Uuid, at: Timestamp) -> Result<Option<ContactId>, StoreError>;
    /// A page of the contact's live tokens (neither revoked nor expired at
    /// `now`), newest first (`created_at` desc, id desc).
    /// # Errors
    /// - MUST return `NotFound` when the contact does not exist.
    /// - MUST return `CursorNotFound` when the cursor is not a token of the
    ///   contact.
    async fn list_tokens(
        &self,
        contact_id: ContactId,
        now: Timestamp,
        page: Page<Uuid>,
    ) -> Result<Paged<TokenInfo>, StoreError>;
    /// Records a request with the token of this hash: sets its
    /// `last_used_at` to `at` if that is later (no event).
    async fn touch_token(&self, hash: &str, at: Timestamp) -> Result<(), StoreError>;
    /// Stores an event ticket for the live token with `token_hash` (neither
    /// revoked nor expired at `created_at`).
    /// # Errors
    /// - MUST return `NotFound` when there is no such live token.
    async fn insert_ticket(&self, ticket: NewTicket) -> Result<(), StoreError>;
    /// The ticket with this hash at `now`, in one lookup: `Live` with its
    /// holder when neither it nor its token has expired and the token is
    /// not revoked; `Expired` when the ticket or its token has expired (and
    /// the token is not revoked); `Unknown` when no such ticket is stored
    /// or its token was revoked.
    async fn ticket_holder(
        &self,
        hash: &str,
        now: Timestamp,
    ) -> Result<Lookup<TicketHolder>, StoreError>;
    /// Deletes at most `batch` tickets that expired before `before`;
    /// returns how many.
    async fn prune_tickets(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError>;
    /// Stores a new, live server key.
    /// # Errors
    /// - MUST return `Conflict` when the hash is already stored.
    async fn insert_server_key(&self, key: NewServerKey) -> Result<(), StoreError>;
    /// The live (not revoked) server key with this hash.
    async fn server_key(&self, hash: &str) -> Result<Option<ServerKey>, StoreError>;
    /// Every server key, revoked ones included, oldest first.
    async fn list_server_keys(&self) -> Result<Vec<ServerKey>, StoreError>;
    /// Revokes the key `id` at `at`; returns it as revoked (its earlier
    /// revocation time when it was revoked already), `None` when there is
    /// no such key.
    async fn revoke_server_key(
        &self,
        id: Uuid,
        at: Timestamp,
    ) -> Result<Option<ServerKey>, StoreError>;
    /// Records a request with the key: sets its `last_used_at` to `at` if
    /// that is later.
    async fn touch_server_key(&self, id: Uuid, at: Timestamp) -> Result<(), StoreError>;
}

/// What the store holds for a credential presented by its hash. Only these
/// three answers exist: a credential that expired is told apart (its holder
/// may get a new one), a revoked one is not told from one never issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<T> {
    /// Accepted now.
    Live(T),
    /// Issued and not revoked, but past its lifetime.
    Expired,
    /// Never issued, or revoked.
    Unknown,
}

impl<T> Lookup<T> {
    /// The live value, `None` for the two refusals.
    pub fn live(self) -> Option<T> {
        match self {
            Lookup::Live(value) => Some(value),
            Lookup::Expired | Lookup::Unknown => None,
        }
    }

    /// Changes the live value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Lookup<U> {
        match self {
            Lookup::Live(value) => Lookup::Live(f(value)),
            Lookup::Expired => Lookup::Expired,
            Lookup::Unknown => Lookup::Unknown,
        }
    }
}

/// A live token as its lookup finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveToken {
    /// The contact it authenticates.
    pub contact: Contact,
    /// When it stops being accepted; `None`: never.
    pub expires_at: Option<Timestamp>,
}

/// An event ticket to store (a browser's credential for `GET
/// /v1/events`): only the hash of its secret is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTicket {
    /// Lowercase hex SHA-256 of the ticket's secret.
    pub hash: String,
    /// The hash of the token that makes it: the ticket lives no longer
    /// than that token.
    pub token_hash: String,
    /// When it was made; the token must be live then.
    pub created_at: Timestamp,
    /// The ticket is refused from this instant on.
    pub expires_at: Timestamp,
}

/// Whom a live event ticket authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketHolder {
    /// The contact of the token that made the ticket.
    pub contact: Contact,
    /// That token's hash: a stream opened with the ticket ends when the
    /// token is revoked.
    pub token_hash: String,
}

/// A token as the server API lists it: never its secret nor its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// Names the token (to revoke it alone).
    pub id: Uuid,
    /// The contact it authenticates.
    pub contact_id: ContactId,
    /// When it was issued.
    pub created_at: Timestamp,
    /// When it stops being accepted; `None`: never.
    pub expires_at: Option<Timestamp>,
    /// Its latest request (recorded at most once a minute); `None`: not
    /// used yet.
    pub last_used_at: Option<Timestamp>,
}

/// A server key to store. Only the hash of the secret is ever stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewServerKey {
    /// Names the key.
    pub id: Uuid,
    /// The operator's name for it (what it is for).
    pub name: String,
    /// Lowercase hex SHA-256 of the secret.
    pub hash: String,
    /// When the key was made.
    pub created_at: Timestamp,
}

/// A server key as stored: never its secret nor its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerKey {
    /// Names the key (the request log's `actor`).
    pub id: Uuid,
    /// The operator's name for it.
    pub name: String,
    /// When it was made.
    pub created_at: Timestamp,
    /// Its latest request (recorded at most once a minute); `None`: not
    /// used yet.
    pub last_used_at: Option<Timestamp>,
    /// When it was revoked; `None`: live.
    pub revoked_at: Option<Timestamp>,
}
