//! The `file_url` of an uploaded attachment (docs/api.md "Files and attachments"): an
//! absolute link to `GET /v1/attachments/{id}/content`, signed so that an
//! `<img>` tag works without a header, minted afresh on every read.
//!
//! The base is `CONFAB_PUBLIC_URL` when set. Without it, never what the
//! request says of itself: a sender's request renders the payload of the
//! `message.created` its recipients and webhooks receive, so a `Host` or
//! `X-Forwarded-Host` it wrote would send everyone's links to its own
//! server. The base is then the scheme and host forwarded by a trusted
//! proxy (`CONFAB_TRUSTED_PROXIES`: `X-Forwarded-Proto` and
//! `X-Forwarded-Host`, [`TrustedProxies::forwarded_origin`]), else this
//! server's own address as the connection reached it (`serve` logs that
//! `CONFAB_PUBLIC_URL` should be set). Event payloads are rendered once,
//! by the request that made the change: their links are that request's,
//! and expire like any other (a client re-reads the attachment for a
//! fresh one).

use std::future::{ready, Ready};
use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::{web, FromRequest, HttpRequest};
use uuid::Uuid;

use crate::client_addr::TrustedProxies;
use crate::content::{expiry, LinkSigner};
use crate::error::ApiError;

/// The local address of a connection, as the server accepted it (set for
/// each connection when it opens): the address of this server the client
/// reached, which no header can change.
#[derive(Debug, Clone, Copy)]
pub struct LocalAddr(pub SocketAddr);

/// How file links are made: the signing key every instance shares, and
/// the public base URL when configured. Registered as app data.
#[derive(Clone)]
pub struct LinkConfig {
    pub signer: Arc<LinkSigner>,
    /// `CONFAB_PUBLIC_URL`, without a trailing `/`.
    pub public_url: Option<Arc<str>>,
}

impl LinkConfig {
    /// Links signed with `key`, based on `public_url` when given.
    pub fn new(key: Vec<u8>, public_url: Option<&str>) -> Self {
        Self {
            signer: Arc::new(LinkSigner::new(key)),
            public_url: public_url.map(|u| Arc::from(u.trim_end_matches('/'))),
        }
    }

    /// The links of a request to `req`.
    pub fn for_request(&self, req: &HttpRequest) -> FileLinks {
        let base: Arc<str> = match &self.public_url {
            Some(url) => url.clone(),
            None => Arc::from(own_base(req)),
        };
        FileLinks {
            base,
            signer: Some(self.signer.clone()),
        }
    }
}

/// The links of one request (its extractor) or one background write.
#[derive(Clone)]
pub struct FileLinks {
    base: Arc<str>,
    signer: Option<Arc<LinkSigner>>,
}

impl std::fmt::Debug for FileLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileLinks")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Default for FileLinks {
    /// Unsigned relative links: for writers that render no upload (the
    /// CLI's contacts, tests).
    fn default() -> Self {
        Self {
            base: Arc::from(""),
            signer: None,
        }
    }
}

impl FileLinks {
    /// The link to attachment `id`'s content, valid for about an hour
    /// from `now` (Unix seconds).
    pub fn content_url(&self, id: &Uuid, now: i64) -> String {
        let path = format!("{}/v1/attachments/{}/content", self.base, id.hyphenated());
        match &self.signer {
            Some(signer) => {
                let expires = expiry(now);
                format!(
                    "{path}?expires={expires}&signature={}",
                    signer.sign(*id, expires)
                )
            }
            None => path,
        }
    }
}

impl FromRequest for FileLinks {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        ready(Ok(links_of(req)))
    }
}

/// Without `CONFAB_PUBLIC_URL`: the scheme and host a trusted proxy
/// forwarded, else this server's address as the connection reached it
/// (the listener's, when a connection's is unknown).
fn own_base(req: &HttpRequest) -> String {
    let forwarded = req.peer_addr().and_then(|peer| {
        req.app_data::<web::Data<TrustedProxies>>()?
            .forwarded_origin(peer.ip(), req.headers())
    });
    if let Some(origin) = forwarded {
        return origin;
    }
    let config = req.app_config();
    let local = req
        .conn_data::<LocalAddr>()
        .map_or(config.local_addr(), |a| a.0);
    let scheme = if config.secure() { "https" } else { "http" };
    format!("{scheme}://{local}")
}

/// The links of the request `req` (unsigned relative ones in an app built
/// without a [`LinkConfig`], as some tests build it).
pub fn links_of(req: &HttpRequest) -> FileLinks {
    req.app_data::<web::Data<LinkConfig>>()
        .map(|config| config.for_request(req))
        .unwrap_or_default()
}

/// The time now in Unix seconds, for link expiries.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
