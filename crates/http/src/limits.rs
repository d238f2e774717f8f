//! Limits on what a request may bring, shared by the body reader
//! (`params`) and the errors that name them (`error`).

use std::time::Duration;

/// Largest request body accepted, in bytes (64 KiB).
pub const BODY_LIMIT: usize = 64 * 1024;

/// How long a request body may take to arrive, from the first read
/// (docs/api.md "Limits": then 408): a client trickling its body holds a
/// connection and a worker's attention no longer than this.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
