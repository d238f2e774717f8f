//! Rate limits (GCRA, from `governor`): one budget per contact (all its
//! tokens together, so that more tokens buy no more requests), and one per
//! client address for requests that bring no valid token (docs/api.md "Limits"
//! "Hostile load").
//!
//! Authentication is where both apply (see `auth`): a request without a
//! usable header costs its address one unit; a token the store refuses
//! costs the address one unit (and while the address is spent, such a
//! request is 429); a token it accepts costs its contact one unit and never
//! looks at the address, so a valid token behind a proxy or a NAT is never
//! refused because a neighbour spent the address's allowance. The address
//! is the client's as [`crate::client_addr`] finds it, an IPv6 client's
//! /64.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use actix_web::HttpResponse;
use confab_domain::ContactId;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::RateLimiter;

use crate::client_addr::limit_key;

/// A budget: `per_second` requests a second on average, up to `burst` at
/// once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub per_second: NonZeroU32,
    pub burst: NonZeroU32,
}

impl Quota {
    /// `None` (no limit) when either number is 0.
    pub fn new(per_second: u32, burst: u32) -> Option<Quota> {
        Some(Quota {
            per_second: NonZeroU32::new(per_second)?,
            burst: NonZeroU32::new(burst)?,
        })
    }

    fn governor(self) -> governor::Quota {
        governor::Quota::per_second(self.per_second).allow_burst(self.burst)
    }
}

/// The limits the server applies; `None` turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// Per contact, all its tokens together (`CONFAB_RATE_LIMIT_PER_SECOND`,
    /// `CONFAB_RATE_LIMIT_BURST`).
    pub per_contact: Option<Quota>,
    /// Per client address, for requests without a valid token
    /// (`CONFAB_RATE_LIMIT_ANON_PER_SECOND`, `CONFAB_RATE_LIMIT_ANON_BURST`).
    pub anonymous: Option<Quota>,
    /// Per server key, also when it acts for a contact (which then spends
    /// the key's budget, not the contact's): `CONFAB_RATE_LIMIT_KEY_PER_SECOND`,
    /// `CONFAB_RATE_LIMIT_KEY_BURST` (docs/api.md "Server API: from an app's backend").
    pub per_key: Option<Quota>,
}

impl RateLimits {
    pub const DEFAULT_PER_SECOND: u32 = 100;
    pub const DEFAULT_BURST: u32 = 200;
    pub const DEFAULT_ANON_PER_SECOND: u32 = 20;
    pub const DEFAULT_ANON_BURST: u32 = 40;
    pub const DEFAULT_KEY_PER_SECOND: u32 = 1000;
    pub const DEFAULT_KEY_BURST: u32 = 2000;

    pub const OFF: RateLimits = RateLimits {
        per_contact: None,
        anonymous: None,
        per_key: None,
    };
}

/// Generous: a busy client never meets it; a runaway one or a token
/// guesser does.
impl Default for RateLimits {
    fn default() -> Self {
        Self {
            per_contact: Quota::new(Self::DEFAULT_PER_SECOND, Self::DEFAULT_BURST),
            anonymous: Quota::new(Self::DEFAULT_ANON_PER_SECOND, Self::DEFAULT_ANON_BURST),
            per_key: Quota::new(Self::DEFAULT_KEY_PER_SECOND, Self::DEFAULT_KEY_BURST),
        }
    }
}

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock, StateInformationMiddleware>;

/// Every how many checks the keyed stores forget idle keys, so that memory
/// stays bounded by the active clients.
const SWEEP_EVERY: u64 = 4096;

/// The limiters of one server (shared by its workers as app data).
pub struct Limiter {
    per_contact: Option<(Quota, Keyed<ContactId>)>,
    anonymous: Option<(Quota, Keyed<IpAddr>)>,
    per_key: Option<(Quota, Keyed<uuid::Uuid>)>,
    /// Addresses whose budget for failed attempts is spent, until when.
    blocked: Mutex<HashMap<IpAddr, Instant>>,
    clock: DefaultClock,
    checks: AtomicU64,
}

/// What a check decided; either way the headers to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go on; `None` when no limit applies.
    Allowed(Option<Budget>),
    /// 429: over the budget, retry after the given seconds.
    Limited(Budget),
}

/// The `RateLimit-*` figures of one budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the budget is whole again (429: until one request
    /// is allowed, which is also `Retry-After`).
    pub reset_secs: u64,
}

impl Budget {
    /// Writes `RateLimit-Limit`, `-Remaining`, `-Reset`, and on a 429
    /// `Retry-After`.
    pub fn write(&self, headers: &mut HeaderMap, limited: bool) {
        let mut set = |name: &'static str, value: u64| {
            headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
        };
        set("ratelimit-limit", u64::from(self.limit));
        set("ratelimit-remaining", u64::from(self.remaining));
        set("ratelimit-reset", self.reset_secs);
        if limited {
            headers.insert(RETRY_AFTER, HeaderValue::from(self.reset_secs));
        }
    }

    /// Adds the headers to a response.
    pub fn apply(&self, res: &mut HttpResponse, limited: bool) {
        self.write(res.headers_mut(), limited);
    }
}

/// Whole seconds, rounded up, at least 1 (a `Retry-After: 0` invites an
/// immediate retry that would fail again).
fn ceil_secs(d: Duration) -> u64 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    secs.max(1)
}

impl Limiter {
    pub fn new(limits: RateLimits) -> Limiter {
        Limiter {
            per_contact: limits
                .per_contact
                .map(|q| (q, RateLimiter::keyed(q.governor()).with_middleware())),
            anonymous: limits
                .anonymous
                .map(|q| (q, RateLimiter::keyed(q.governor()).with_middleware())),
            per_key: limits
                .per_key
                .map(|q| (q, RateLimiter::keyed(q.governor()).with_middleware())),
            blocked: Mutex::new(HashMap::new()),
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        }
    }

    /// Is this address still blocked for failed attempts? Memory only.
    pub fn blocked(&self, ip: IpAddr) -> Option<Budget> {
        let (quota, _) = self.anonymous.as_ref()?;
        let ip = limit_key(ip);
        let now = Instant::now();
        let blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        let until = *blocked.get(&ip)?;
        (until > now).then(|| Budget {
            limit: quota.burst.get(),
            remaining: 0,
            reset_secs: ceil_secs(until - now),
        })
    }

    /// One request without a valid token from `ip`.
    pub fn check_anonymous(&self, ip: IpAddr) -> Verdict {
        self.sweep();
        let ip = limit_key(ip);
        let Some((quota, limiter)) = &self.anonymous else {
            return Verdict::Allowed(None);
        };
        let verdict = self.check(quota, limiter, &ip);
        if let Verdict::Limited(budget) = &verdict {
            let until = Instant::now() + Duration::from_secs(budget.reset_secs);
            let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
            blocked.insert(ip, until);
        }
        verdict
    }

    /// One request of this (authenticated) contact, whichever its token.
    pub fn check_contact(&self, contact: ContactId) -> Verdict {
        self.sweep();
        let Some((quota, limiter)) = &self.per_contact else {
            return Verdict::Allowed(None);
        };
        self.check(quota, limiter, &contact)
    }

    /// One request made with this server key, on its own budget.
    pub fn check_key(&self, key: uuid::Uuid) -> Verdict {
        self.sweep();
        let Some((quota, limiter)) = &self.per_key else {
            return Verdict::Allowed(None);
        };
        self.check(quota, limiter, &key)
    }

    fn check<K: std::hash::Hash + Eq + Clone>(
        &self,
        quota: &Quota,
        limiter: &Keyed<K>,
        key: &K,
    ) -> Verdict {
        let interval = Duration::from_secs(1) / quota.per_second.get();
        match limiter.check_key(key) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                let missing = quota.burst.get().saturating_sub(remaining);
                Verdict::Allowed(Some(Budget {
                    limit: quota.burst.get(),
                    remaining,
                    reset_secs: ceil_secs(interval * missing),
                }))
            }
            Err(not_until) => Verdict::Limited(Budget {
                limit: quota.burst.get(),
                remaining: 0,
                reset_secs: ceil_secs(not_until.wait_time_from(self.clock.now())),
            }),
        }
    }

    /// Now and then, forgets keys whose budget is whole again.
    fn sweep(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY != SWEEP_EVERY - 1 {
            return;
        }
        if let Some((_, limiter)) = &self.per_contact {
            limiter.retain_recent();
        }
        if let Some((_, limiter)) = &self.anonymous {
            limiter.retain_recent();
        }
        if let Some((_, limiter)) = &self.per_key {
            limiter.retain_recent();
        }
        let now = Instant::now();
        let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        blocked.retain(|_, until| *until > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contact(n: u128) -> ContactId {
        ContactId::from_uuid(uuid::Uuid::from_u128(n))
    }

    #[test]
    fn a_burst_then_limited_with_a_retry_time() {
        let limiter = Limiter::new(RateLimits {
            per_contact: Quota::new(1, 3),
            anonymous: None,
            per_key: Quota::new(1, 1),
        });
        let remaining: Vec<u32> = (0..3)
            .map(|_| match limiter.check_contact(contact(1)) {
                Verdict::Allowed(Some(b)) => b.remaining,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(remaining, [2, 1, 0]);
        match limiter.check_contact(contact(1)) {
            Verdict::Limited(b) => assert_eq!((b.limit, b.remaining, b.reset_secs), (3, 0, 1)),
            other => panic!("{other:?}"),
        }
        // Another contact has its own budget.
        assert!(matches!(
            limiter.check_contact(contact(2)),
            Verdict::Allowed(Some(_))
        ));
        // A server key has its own budget, apart from every contact's.
        let key = uuid::Uuid::from_u128(1);
        assert!(matches!(limiter.check_key(key), Verdict::Allowed(Some(_))));
        assert!(matches!(limiter.check_key(key), Verdict::Limited(_)));
        assert!(matches!(
            limiter.check_key(uuid::Uuid::from_u128(2)),
            Verdict::Allowed(Some(_))
        ));
        // No anonymous limit configured: never limited, never blocked.
        let ip = IpAddr::from([127, 0, 0, 1]);
        assert_eq!(limiter.check_anonymous(ip), Verdict::Allowed(None));
        assert_eq!(limiter.blocked(ip), None);
    }

    #[test]
    fn a_spent_address_is_blocked_from_memory() {
        let limiter = Limiter::new(RateLimits {
            per_contact: None,
            anonymous: Quota::new(1, 2),
            per_key: None,
        });
        let ip = IpAddr::from([10, 0, 0, 1]);
        assert!(matches!(limiter.check_anonymous(ip), Verdict::Allowed(_)));
        assert!(matches!(limiter.check_anonymous(ip), Verdict::Allowed(_)));
        assert_eq!(limiter.blocked(ip), None);
        assert!(matches!(limiter.check_anonymous(ip), Verdict::Limited(_)));
        assert!(limiter.blocked(ip).is_some());
        assert_eq!(limiter.blocked(IpAddr::from([10, 0, 0, 2])), None);
        assert_eq!(limiter.check_contact(contact(1)), Verdict::Allowed(None));
    }

    #[test]
    fn an_ipv6_client_s_64_shares_one_budget() {
        let limiter = Limiter::new(RateLimits {
            per_contact: None,
            anonymous: Quota::new(1, 1),
            per_key: None,
        });
        let a: IpAddr = "2001:db8:0:1::1".parse().expect("ip");
        let b: IpAddr = "2001:db8:0:1:ffff::9".parse().expect("ip");
        let other: IpAddr = "2001:db8:0:2::1".parse().expect("ip");
        assert!(matches!(limiter.check_anonymous(a), Verdict::Allowed(_)));
        assert!(matches!(limiter.check_anonymous(b), Verdict::Limited(_)));
        assert!(limiter.blocked(a).is_some() && limiter.blocked(b).is_some());
        assert!(matches!(
            limiter.check_anonymous(other),
            Verdict::Allowed(_)
        ));
    }

    #[test]
    fn zero_is_off() {
        assert_eq!(Quota::new(0, 10), None);
        assert_eq!(Quota::new(10, 0), None);
        assert!(Quota::new(1, 1).is_some());
    }
}
