//! The refusals that keep one client from taking others' share of the
//! server: connections, uploads under way, stored bytes, free disk.

use actix_web::http::StatusCode;

use super::ApiError;

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
