//! The refusals that keep one client from taking others' share of the
//! server: connections, uploads under way, stored bytes, free disk.

use actix_web::http::StatusCode;

use super::{ApiError, IDEMPOTENCY_KEY};

/// A byte count as people read it, with the exact figure.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    #[allow(clippy::cast_precision_loss)]
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {} ({n} bytes)", UNITS[unit])
}

impl ApiError {
    /// 429: the caller's request budget is spent for now (the rate limiter
    /// adds `Retry-After` and the `RateLimit-*` headers).
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many requests: retry in {retry_after_secs} s"),
        )
    }
}

impl ApiError {
    /// 429: the caller already has as many open event streams as a contact
    /// may (`CONFAB_MAX_STREAMS_PER_CONTACT`).
    pub fn too_many_streams(max: usize) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_streams",
            format!("at most {max} event streams may be open at once; close one first"),
        )
    }

    /// 429 with `Retry-After: 1`: the caller already runs as many
    /// searches at once as a contact may (`CONFAB_MAX_SEARCHES_PER_CONTACT`).
    pub fn too_many_searches(max: u32) -> Self {
        let mut error = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_searches",
            format!(
                "at most {max} searches may run at once for a contact; retry when one of yours \
                 has answered"
            ),
        );
        error.retry_after = Some(1);
        error
    }

    /// 429: the caller stored as many idempotency keys today as a contact
    /// may; a request without a key still runs.
    pub fn idempotency_quota(max: u32, retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "idempotency_quota",
            format!(
                "at most {max} new idempotency keys a day: retry in {retry_after_secs} s, \
                 or send the request without Idempotency-Key"
            ),
        )
        .with_param(IDEMPOTENCY_KEY)
    }

    /// 429: the caller filed as many new reports this hour as a contact
    /// may; `Retry-After` says when the next hour starts.
    pub fn report_quota(max: u32, retry_after_secs: u64) -> Self {
        let mut error = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "report_quota",
            format!("at most {max} new reports an hour: retry in {retry_after_secs} s"),
        );
        error.retry_after = Some(u32::try_from(retry_after_secs).unwrap_or(u32::MAX));
        error
    }

    /// 408: the request body did not arrive in time.
    pub fn request_timeout() -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the request body did not arrive within {} s",
                crate::limits::BODY_TIMEOUT.as_secs()
            ),
        )
    }

    /// 503 for a request on a connection past the server's connection
    /// budget (the connection is closed after it).
    pub fn over_capacity() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the server has no room for another connection now; retry shortly",
        )
    }

    /// 429: the client's address already holds as many connections (or
    /// requests still sending their head or body) as one address may.
    pub fn too_many_connections(what: &str, max: usize) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_connections",
            format!(
                "this address already has {max} {what}, as many as one address may; \
                 finish or close one first"
            ),
        )
    }

    /// 429: the caller already has as many uploads under way as a contact
    /// may (`CONFAB_MAX_UPLOADS_PER_CONTACT`).
    pub fn too_many_uploads(max: usize) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_uploads",
            format!("at most {max} uploads may be under way at once; wait for one to finish"),
        )
        .with_param("file")
    }

    /// 413: the upload does not fit in what is left of the caller's
    /// quota of stored bytes (`CONFAB_UPLOAD_QUOTA_BYTES`).
    pub fn storage_quota(used: u64, limit: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "storage_quota",
            format!(
                "your uploads take {} of the {} a contact may store, and this file does \
                 not fit in the rest: delete uploads you no longer need (uploads never \
                 attached to a message go after 24 h)",
                bytes(used),
                bytes(limit)
            ),
        )
        .with_param("file")
    }

    /// 507: the storage's disk is at the free space the operator keeps
    /// (`CONFAB_STORAGE_MIN_FREE_BYTES`).
    pub fn insufficient_storage() -> Self {
        Self::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient_storage",
            "the server is short of disk space for files: no upload is taken until its \
             operator frees some; retry later",
        )
    }

    /// 408: an upload's body arrived slower than the least rate taken.
    pub fn body_too_slow(min_bytes: u64, window_secs: u64) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!("the request body arrived slower than {min_bytes} bytes in {window_secs} s"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(bytes(5), "5 bytes");
        assert_eq!(bytes(1536), "1.5 KiB (1536 bytes)");
        assert_eq!(bytes(1024 * 1024 * 1024), "1.0 GiB (1073741824 bytes)");
    }
}
