//! The port contract suite: every test is written once against
//! `Arc<dyn Store>` and runs unchanged on both stores
//! (`<module>::postgres::*`, `<module>::sqlite::*`), each on a fresh
//! database. It checks what `confab-ports` documents, including every error
//! a method MUST return. One test binary (modules below) keeps link time
//! down.

mod big_groups_migration;
mod concurrency;
mod contacts;
mod conversations;
mod deleted_events;
mod event_log;
mod events;
mod events_read;
mod feed;
mod files;
mod groups;
mod idempotency;
mod membership_in_writes;
mod messages;
mod migration_lock;
mod moderation;
mod resilience;
mod search;
mod search_share;
mod statements;
mod support;
mod tokens;
mod unread;
mod webhooks;
mod writes;
