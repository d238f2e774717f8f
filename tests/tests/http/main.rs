//! Black-box HTTP suite: every test runs against the real server on both
//! stores (PostgreSQL and SQLite), each with a fresh database.
//! One test binary (modules below) keeps link time down.

mod admin;
mod attachments;
mod authorization;
mod clients;
mod contacts;
mod conversations;
mod cors_and_compression;
mod deleted;
mod depth;
mod events;
mod groups;
mod hostile;
mod http1_parser;
mod idempotency;
mod links;
mod messages;
mod metrics;
mod moderation;
mod openapi;
mod rate_limit;
mod search;
mod search_limits;
mod security_headers;
mod support;
mod tickets;
mod token_cache;
mod unread;
mod upload_limits;
mod upload_retries;
mod web_app;
mod wire;
mod writes;
