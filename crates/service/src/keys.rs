//! The server API's credentials (docs/api.md "Server API: from an app's backend"): server keys, made by
//! the operator's CLI, with which an app's backend manages contacts and
//! their tokens, and acts for a contact (`Confab-Contact`).

use std::time::Instant;

use confab_domain::{Contact, ContactId, Field, Rule};
use confab_ports::{NewServerKey, ServerKey};
use uuid::Uuid;

use crate::auth::{hash_token, random_hex, Touches, Trusted};
use crate::{Confab, ServiceError};

/// Server keys start with this (and the token prefix never does: a
/// contact token is `cfb_` and 64 hex characters).
pub const KEY_PREFIX: &str = "cfb_sk_";

/// The longest key name (the operator's label for what the key is for).
pub const KEY_NAME_MAX: usize = 100;

/// Whether a bearer credential is shaped as a server key (not whether it
/// is live).
pub fn is_server_key(credential: &str) -> bool {
    credential.starts_with(KEY_PREFIX)
}

/// A key just made: the stored key and its secret, shown this once.
#[derive(Debug, Clone)]
pub struct CreatedKey {
    /// The key as stored.
    pub key: ServerKey,
    /// `cfb_sk_` and 64 hex characters; only its SHA-256 is stored.
    pub secret: String,
}

/// Live keys (by hash) and the contacts keys acted for, recently looked up:
/// as with tokens, trusted for [`crate::auth::TOKEN_TRUST`] without asking
/// the store again, so that a revocation by another process (the CLI)
/// takes effect within it; one by this process at once.
#[derive(Debug, Default)]
pub(crate) struct KeyCache {
    keys: Trusted<String, ServerKey>,
    contacts: Trusted<ContactId, Contact>,
    touches: Touches<Uuid>,
}

impl KeyCache {
    /// Forgets `id` (changed or erased by this process): the next request
    /// acting for it asks the store.
    pub(crate) fn forget_contact(&self, id: ContactId) {
        self.contacts.forget(|c| c.id() == id);
    }
}

impl Confab {
    /// Makes a server key named `name` (operator action, CLI only): the
    /// secret is returned this once and stored only as its SHA-256.
    pub async fn create_server_key(&self, name: &str) -> Result<CreatedKey, ServiceError> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > KEY_NAME_MAX {
            return Err(ServiceError::invalid(
                Field::KeyName,
                Rule::Invariant("must be 1 to 100 characters"),
            ));
        }
        if name.chars().any(char::is_control) {
            return Err(ServiceError::invalid(
                Field::KeyName,
                Rule::Invariant("must not contain control characters"),
            ));
        }
        let secret = format!("{KEY_PREFIX}{}", random_hex("a server key")?);
        let key = NewServerKey {
            id: self.new_uuid(),
            name: name.to_owned(),
            hash: hash_token(&secret),
            created_at: self.now(),
        };
        self.ports.tokens.insert_server_key(key.clone()).await?;
        Ok(CreatedKey {
            key: ServerKey {
                id: key.id,
                name: key.name,
                created_at: key.created_at,
                last_used_at: None,
                revoked_at: None,
            },
            secret,
        })
    }

    /// Every server key, revoked ones included, oldest first (no secrets).
    pub async fn list_server_keys(&self) -> Result<Vec<ServerKey>, ServiceError> {
        Ok(self.ports.tokens.list_server_keys().await?)
    }

    /// Revokes a server key: this process refuses it from its next request
    /// on, another (a running server when the CLI revokes) within 3 s; its
    /// open event streams end within the hub's token check after that.
    /// Revoking a revoked key answers it as it is.
    pub async fn revoke_server_key(&self, id: &str) -> Result<ServerKey, ServiceError> {
        let id: Uuid = id
            .trim()
            .parse()
            .map_err(|_| ServiceError::not_found_of(Field::KeyId))?;
        let revoked = self.ports.tokens.revoke_server_key(id, self.now()).await;
        self.keys.keys.forget(|key| key.id == id);
        revoked?.ok_or(ServiceError::not_found_of(Field::KeyId))
    }

    /// The live server key of this secret (as the store said less than 3 s
    /// ago, and this process revoked no key since). Records its use at most
    /// once a minute.
    pub async fn authenticate_key(&self, secret: &str) -> Result<ServerKey, ServiceError> {
        if !is_server_key(secret) || secret.len() > 256 {
            return Err(ServiceError::Unauthorized);
        }
        let hash = hash_token(secret);
        let key = match self.keys.keys.get(hash.as_str()) {
            Some(key) => key,
            None => {
                let asked = Instant::now();
                let key = self
                    .ports
                    .tokens
                    .server_key(&hash)
                    .await?
                    .ok_or(ServiceError::Unauthorized)?;
                self.keys.keys.put(hash, key.clone(), asked);
                key
            }
        };
        let now = self.now();
        if let Some(claim) = self.keys.touches.claim(&key.id, now) {
            self.ports.tokens.touch_server_key(key.id, now).await?;
            claim.done();
        }
        Ok(key)
    }

    /// The contact a server key acts for (`Confab-Contact`): `Unauthorized`
    /// when there is no such contact, as for an unknown token. Its
    /// `last_active_at` is left alone: it records the contact's own
    /// requests; the key's `last_used_at` records these.
    pub async fn acting_for(&self, id: ContactId) -> Result<Contact, ServiceError> {
        if let Some(contact) = self.keys.contacts.get(&id) {
            return Ok(contact);
        }
        let asked = Instant::now();
        let contact = self
            .ports
            .contacts
            .contact(id)
            .await?
            .ok_or(ServiceError::Unauthorized)?;
        self.keys.contacts.put(id, contact.clone(), asked);
        Ok(contact)
    }
}
