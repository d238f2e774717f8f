//! Contacts and tokens as the operator manages them (CLI), and token
//! authentication for every request.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use confab_domain::{
    AvatarUrl, Contact, ContactId, ContactParts, Field, Page, Paged, PhoneNumber, Rule, Timestamp,
    Username,
};
use confab_ports::{LiveToken, Lookup, NewToken, TokenInfo};
use uuid::Uuid;

use crate::error::page_error;
use sha2::{Digest, Sha256};

use crate::{Confab, ServiceError};

/// Tokens start with this, so that a leaked one is easy to recognise (secret
/// scanners, logs).
pub(crate) const TOKEN_PREFIX: &str = "cfb_";

/// How long a token found live is trusted without asking the store again.
/// A revocation by another process (the CLI's `confab token revoke`) or an
/// expiry takes effect within this, under the contract's 5 s with room for
/// a request in flight; a revocation through this process's service
/// ([`Confab::revoke_tokens`]) drops the contact's entries at once.
pub(crate) const TOKEN_TRUST: Duration = Duration::from_secs(3);
/// At most this many tokens are remembered (a bounded memory cost).
pub(crate) const TOKEN_CACHE_SIZE: usize = 10_000;

/// Live tokens (by hash) recently looked up, with their contact: a request
/// whose token was checked less than [`TOKEN_TRUST`] ago costs no store
/// round trip. Unknown tokens are never remembered.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    /// Live tokens by hash, with their contact and expiry (a remembered
    /// token is refused from its expiry on, not up to [`TOKEN_TRUST`]
    /// later).
    by_hash: Trusted<String, LiveToken>,
    /// The contacts' activity writes this process made or is making.
    touches: Touches<ContactId>,
    /// The tokens' `last_used_at` writes, by token hash.
    token_touches: Touches<String>,
}

/// The once-a-minute activity writes (a contact's `last_active_at`, a
/// token's or a server key's `last_used_at`) this process made or is
/// making, by what they record: when each was claimed.
#[derive(Debug)]
pub(crate) struct Touches<K> {
    claimed: Mutex<HashMap<K, Timestamp>>,
}

impl<K> Default for Touches<K> {
    fn default() -> Self {
        Self {
            claimed: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone> Touches<K> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Timestamp>> {
        self.claimed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims the once-a-minute write of `key` at `now`: the first request
    /// of a minute gets it, the others seen meanwhile (its concurrent
    /// requests, before the write is done) do not. Without it each of them
    /// wrote the same row at once, every write queued on the row lock of
    /// the one before (60-70 ms each on PostgreSQL under load:
    /// docs/performance.md).
    pub(crate) fn claim<Q>(&self, key: &Q, now: Timestamp) -> Option<TouchClaim<'_, K>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let fresh = |at: &Timestamp| !Contact::activity_written_long_ago(*at, now);
        let mut claimed = self.lock();
        if claimed.get(key).is_some_and(fresh) {
            return None;
        }
        if claimed.len() >= TOKEN_CACHE_SIZE {
            claimed.retain(|_, at| fresh(at));
        }
        let key = key.to_owned();
        claimed.insert(key.clone(), now);
        Some(TouchClaim {
            touches: self,
            key,
            at: now,
            done: false,
        })
    }
}

/// The right to record one activity write at `at`, held by one request.
/// Dropped unfinished (the write failed, or the request was dropped while
/// it waited), it frees the key for the next request.
pub(crate) struct TouchClaim<'a, K: Hash + Eq + Clone> {
    touches: &'a Touches<K>,
    key: K,
    at: Timestamp,
    done: bool,
}

impl<K: Hash + Eq + Clone> TouchClaim<'_, K> {
    pub(crate) fn done(mut self) {
        self.done = true;
    }
}

impl<K: Hash + Eq + Clone> Drop for TouchClaim<'_, K> {
    fn drop(&mut self) {
        if !self.done {
            let mut claimed = self.touches.lock();
            if claimed.get(&self.key) == Some(&self.at) {
                claimed.remove(&self.key);
            }
        }
    }
}

/// Credentials (or what they lead to) the store found live, each with when
/// it was asked: trusted for [`TOKEN_TRUST`] without asking again, at most
/// [`TOKEN_CACHE_SIZE`] of them. Tokens and server keys both use it.
#[derive(Debug)]
pub(crate) struct Trusted<K, V> {
    entries: Mutex<TrustedEntries<K, V>>,
}

#[derive(Debug)]
struct TrustedEntries<K, V> {
    map: HashMap<K, (V, Instant)>,
    /// When this process last forgot entries ([`Trusted::forget`]): a
    /// lookup asked before may have read what was revoked since, so its
    /// answer is not remembered.
    forgot_at: Option<Instant>,
}

impl<K, V> Default for Trusted<K, V> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(TrustedEntries {
                map: HashMap::new(),
                forgot_at: None,
            }),
        }
    }
}

impl<K: Hash + Eq, V: Clone> Trusted<K, V> {
    fn lock(&self) -> std::sync::MutexGuard<'_, TrustedEntries<K, V>> {
        // A panic while holding the lock leaves a map that is still valid.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value of `key`, when the store was asked less than
    /// [`TOKEN_TRUST`] ago.
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let map = &mut self.lock().map;
        match map.get(key) {
            Some((value, checked)) if checked.elapsed() < TOKEN_TRUST => Some(value.clone()),
            Some(_) => {
                map.remove(key);
                None
            }
            None => None,
        }
    }

    /// Remembers that the store, `asked` at that instant, found `value`
    /// for `key`; unless this process forgot entries since.
    pub(crate) fn put(&self, key: K, value: V, asked: Instant) {
        let mut guard = self.lock();
        if guard.forgot_at.is_some_and(|forgot| asked <= forgot) {
            return;
        }
        let map = &mut guard.map;
        if map.len() >= TOKEN_CACHE_SIZE {
            map.retain(|_, (_, checked)| checked.elapsed() < TOKEN_TRUST);
            if map.len() >= TOKEN_CACHE_SIZE {
                map.clear();
            }
        }
        map.insert(key, (value, asked));
    }

    /// Forgets every entry whose value `gone` says was revoked or changed:
    /// the next request asks the store. Lookups still in flight, which may
    /// have read it before, are not remembered.
    pub(crate) fn forget(&self, gone: impl Fn(&V) -> bool) {
        let mut guard = self.lock();
        guard.map.retain(|_, (value, _)| !gone(value));
        guard.forgot_at = Some(Instant::now());
    }

    /// Changes the remembered values in place, keeping when they were
    /// checked.
    fn update(&self, mut change: impl FnMut(&mut V)) {
        for (value, _) in self.lock().map.values_mut() {
            change(value);
        }
    }
}

impl TokenCache {
    fn get(&self, hash: &str) -> Option<LiveToken> {
        self.by_hash.get(hash)
    }

    /// Remembers that the store, `asked` at that instant, found the token
    /// of `hash` live; unless this process revoked tokens since.
    fn put(&self, hash: String, token: LiveToken, asked: Instant) {
        self.by_hash.put(hash, token, asked);
    }

    /// Forgets every token of `contact`, after its tokens were revoked:
    /// their next request asks the store. Lookups still in flight, which
    /// may have read a token before the revocation, are not remembered.
    pub(crate) fn forget(&self, contact: ContactId) {
        self.by_hash.forget(|cached| cached.contact.id() == contact);
    }

    /// Claims the once-a-minute activity write of `contact` at `now`
    /// ([`Touches::claim`]).
    pub(crate) fn claim_touch(
        &self,
        contact: ContactId,
        now: Timestamp,
    ) -> Option<TouchClaim<'_, ContactId>> {
        self.touches.claim(&contact, now)
    }

    /// Replaces the remembered copies of `contact` (after it changed), keeping
    /// when their tokens were checked.
    pub(crate) fn refresh(&self, contact: &Contact) {
        self.by_hash.update(|cached| {
            if cached.contact.id() == contact.id() {
                cached.contact = contact.clone();
            }
        });
    }
}

/// The shortest and longest lifetimes of a token minted over HTTP.
const MINT_MIN_SECS: i64 = 60;
const MINT_MAX_SECS: i64 = 31_536_000;

/// A token just minted: the secret is shown this once.
#[derive(Debug, Clone)]
pub struct MintedToken {
    /// Names the token (to revoke it alone).
    pub id: Uuid,
    /// `cfb_` and 64 hex characters; only its SHA-256 is stored.
    pub token: String,
    /// The contact it authenticates.
    pub contact_id: ContactId,
    /// When it was issued.
    pub created_at: Timestamp,
    /// When it stops being accepted; `None`: never.
    pub expires_at: Option<Timestamp>,
}

/// 32 random bytes in lowercase hex (a secret's 256 bits); `what` names
/// the secret in the error.
pub(crate) fn random_hex(what: &'static str) -> Result<String, ServiceError> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| ServiceError::Internal {
        what,
        // getrandom::Error implements std's Error only with its "std"
        // feature; its text is the whole cause anyway.
        source: e.to_string().into(),
    })?;
    let mut hex = String::with_capacity(64);
    for b in bytes {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
    }
    Ok(hex)
}

pub(crate) fn hash_token(token: &str) -> String {
    // Lowercase hex in one allocation (every request hashes its token;
    // a `format!` per byte was 33 allocations).
    format!("{:x}", Sha256::digest(token.as_bytes()))
}

impl Confab {
    /// Creates a contact (operator action).
    pub async fn create_contact(
        &self,
        username: &str,
        phone_number: &str,
        avatar_url: Option<&str>,
    ) -> Result<Contact, ServiceError> {
        let username = Username::new(username.to_owned())?;
        let phone_number = PhoneNumber::new(phone_number.to_owned())?;
        let avatar_url = AvatarUrl::new(avatar_url.unwrap_or_default().to_owned())?;
        let now = self.now();
        let contact = Contact::new(ContactParts {
            id: ContactId::from_uuid(self.new_uuid()),
            username,
            phone_number,
            avatar_url,
            last_active_at: now,
            created_at: now,
        })?;
        let events = confab_domain::contact_created(now, self.event_ids(), contact.id());
        // The store refuses a username taken in any letter case (Conflict),
        // atomically: a lookup first would only race with it.
        let created = self
            .ports
            .contacts
            .create_contact(contact, self.outbox(events))
            .await?;
        self.committed();
        Ok(created)
    }

    async fn contact_named(&self, username: &str) -> Result<Contact, ServiceError> {
        self.ports
            .contacts
            .contact_by_username(username)
            .await?
            .ok_or(ServiceError::not_found_of(Field::Username))
    }

    /// Issues a token for the contact; returns the secret, which is shown
    /// this once and stored only as its SHA-256.
    pub async fn issue_token(
        &self,
        username: &str,
        expires_in_secs: Option<i64>,
    ) -> Result<String, ServiceError> {
        if let Some(secs) = expires_in_secs {
            if secs <= 0 {
                return Err(ServiceError::invalid(
                    Field::TokenLifetime,
                    Rule::Invariant("must be a positive duration"),
                ));
            }
        }
        let contact = self.contact_named(username).await?;
        Ok(self.new_token(contact.id(), expires_in_secs).await?.token)
    }

    /// Stores a new token of `contact` (which must exist: else `NotFound`).
    async fn new_token(
        &self,
        contact: ContactId,
        expires_in_secs: Option<i64>,
    ) -> Result<MintedToken, ServiceError> {
        let token = format!("{TOKEN_PREFIX}{}", random_hex("a token")?);
        let now = self.now();
        let minted = MintedToken {
            id: self.new_uuid(),
            token,
            contact_id: contact,
            created_at: now,
            expires_at: expires_in_secs.map(|s| now.plus_secs(s)),
        };
        self.ports
            .tokens
            .insert_token(NewToken {
                id: minted.id,
                contact_id: contact,
                hash: hash_token(&minted.token),
                created_at: now,
                expires_at: minted.expires_at,
            })
            .await?;
        Ok(minted)
    }

    /// Mints a token for the contact (server API): `expires_in_secs`, when
    /// given, 60 s to 365 days. The secret is in the answer this once.
    pub async fn mint_token(
        &self,
        contact: ContactId,
        expires_in_secs: Option<i64>,
    ) -> Result<MintedToken, ServiceError> {
        if let Some(secs) = expires_in_secs {
            if !(MINT_MIN_SECS..=MINT_MAX_SECS).contains(&secs) {
                return Err(ServiceError::invalid(
                    Field::TokenLifetime,
                    Rule::Invariant("must be a whole number of seconds from 60 to 31536000"),
                ));
            }
        }
        self.new_token(contact, expires_in_secs)
            .await
            .map_err(|e| match e {
                ServiceError::NotFound { .. } => ServiceError::not_found(),
                e => e,
            })
    }

    /// A page of the contact's live tokens, newest first, without secrets
    /// (server API). `NotFound` when there is no such contact.
    pub async fn list_tokens(
        &self,
        contact: ContactId,
        page: Page<Uuid>,
    ) -> Result<Paged<TokenInfo>, ServiceError> {
        self.ports
            .tokens
            .list_tokens(contact, self.now(), page)
            .await
            .map_err(|e| page_error(&page, e))
    }

    /// Revokes one live token (a device's logout; server API). `NotFound`
    /// when there is no such live token. As [`Confab::revoke_tokens`]: this
    /// process refuses it from its next request on, others within 3 s.
    pub async fn revoke_token(&self, id: Uuid) -> Result<(), ServiceError> {
        let owner = self
            .ports
            .tokens
            .revoke_token(id, self.now())
            .await?
            .ok_or(ServiceError::not_found())?;
        self.tokens.forget(owner);
        Ok(())
    }

    /// Revokes every live token of the contact (server API); returns how
    /// many. `NotFound` when there is no such contact.
    pub async fn revoke_all_tokens(&self, contact: ContactId) -> Result<u64, ServiceError> {
        self.ports
            .contacts
            .contact(contact)
            .await?
            .ok_or(ServiceError::not_found())?;
        let revoked = self.ports.tokens.revoke_tokens(contact, self.now()).await;
        self.tokens.forget(contact);
        Ok(revoked?)
    }

    /// Revokes all of the contact's tokens; returns how many were live.
    /// This process refuses them from its next request on (its cache of
    /// live tokens forgets them); another process, such as a running
    /// server when the CLI revokes, within 3 s (`TOKEN_TRUST`).
    pub async fn revoke_tokens(&self, username: &str) -> Result<u64, ServiceError> {
        let contact = self.contact_named(username).await?;
        let revoked = self
            .ports
            .tokens
            .revoke_tokens(contact.id(), self.now())
            .await;
        // Also when the answer was lost (the revocation may have committed).
        self.tokens.forget(contact.id());
        Ok(revoked?)
    }

    /// The contact holding this bearer token, when it is live (as the store
    /// said less than 3 s ago, and this process revoked none of its
    /// contact's tokens since; never past its expiry). Records the
    /// contact's activity at most once a minute. `Expired` when the token
    /// was issued, is not revoked, and has expired; `Unauthorized` for
    /// anything else.
    pub async fn authenticate(&self, token: &str) -> Result<Contact, ServiceError> {
        // Cheap shape check first: no store round trip for garbage.
        if !token.starts_with(TOKEN_PREFIX) || token.len() > 256 {
            return Err(ServiceError::Unauthorized);
        }
        let now = self.now();
        let hash = hash_token(token);
        let live = match self.tokens.get(&hash) {
            Some(live) => live,
            None => {
                let asked = Instant::now();
                let found = self.ports.tokens.contact_for_token(&hash, now).await?;
                let live = match found {
                    Lookup::Live(live) => live,
                    Lookup::Expired => return Err(ServiceError::Expired),
                    Lookup::Unknown => return Err(ServiceError::Unauthorized),
                };
                self.tokens.put(hash.clone(), live.clone(), asked);
                live
            }
        };
        if live.expires_at.is_some_and(|at| at <= now) {
            return Err(ServiceError::Expired);
        }
        self.record_use(live.contact, &hash, now).await
    }

    /// Records a request made with the token of this hash (directly, or
    /// through a ticket it made): the contact's activity and the token's
    /// `last_used_at`, each at most once a minute.
    pub(crate) async fn record_use(
        &self,
        mut contact: Contact,
        hash: &str,
        now: Timestamp,
    ) -> Result<Contact, ServiceError> {
        if contact.activity_is_stale(now) {
            if let Some(claim) = self.tokens.claim_touch(contact.id(), now) {
                self.ports.contacts.touch_contact(contact.id(), now).await?;
                claim.done();
                contact.record_activity(now);
                self.tokens.refresh(&contact);
            }
        }
        // The token's own `last_used_at` (the server API lists it), at most
        // once a minute per token and process.
        if let Some(claim) = self.tokens.token_touches.claim(hash, now) {
            self.ports.tokens.touch_token(hash, now).await?;
            claim.done();
        }
        Ok(contact)
    }
}

/// For tests of other modules: the hash a token is stored under.
#[cfg(test)]
pub(crate) fn token_hash_for_tests(token: &str) -> String {
    hash_token(token)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use confab_domain::{
        AvatarUrl, Contact, ContactId, ContactParts, PhoneNumber, Timestamp, Username,
    };

    use super::{hash_token, LiveToken, TokenCache};

    fn alice() -> LiveToken {
        let contact = Contact::new(ContactParts {
            id: ContactId::from_uuid(uuid::Uuid::from_u128(1)),
            username: Username::new("alice".into()).expect("valid"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
            avatar_url: AvatarUrl::none(),
            last_active_at: Timestamp::from_secs(0),
            created_at: Timestamp::from_secs(0),
        })
        .expect("valid");
        LiveToken {
            contact,
            expires_at: None,
        }
    }

    /// A lookup that asked the store before a revocation in this process,
    /// and answers after it, may carry a token since revoked: it is not
    /// remembered. One asked after the revocation is.
    #[test]
    fn a_lookup_from_before_a_revocation_is_not_remembered() {
        let cache = TokenCache::default();
        cache.put("other".into(), alice(), Instant::now());
        let asked = Instant::now();
        cache.forget(alice().contact.id());
        assert!(cache.get("other").is_none(), "forgotten at once");
        cache.put("late".into(), alice(), asked);
        assert!(cache.get("late").is_none(), "asked before the revocation");
        std::thread::sleep(Duration::from_millis(1));
        cache.put("fresh".into(), alice(), Instant::now());
        assert_eq!(
            cache.get("fresh").map(|t| t.contact.id()),
            Some(alice().contact.id())
        );
    }

    #[test]
    fn a_token_is_stored_as_the_lowercase_hex_of_its_sha256() {
        // FIPS 180-2's example: SHA-256("abc").
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
