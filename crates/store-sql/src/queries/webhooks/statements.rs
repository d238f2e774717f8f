//! The statements of the webhook queries ([`super::queries`]), each named
//! (`#[auto_type]` makes a type alias of each builder's name) so that
//! [`WebhookStatements`] lists them once as what a backend's connection
//! must run ([`crate::run`]).

use diesel::backend::Backend;
use diesel::dsl::{auto_type, AsSelect};
use diesel::expression::SqlLiteral;
use diesel::prelude::*;
use diesel::query_builder::SqlQuery;
use diesel::sql_types::BigInt;

use super::{EventRow, MinAt, Position, RetryKey, WebhookRow};
use crate::id::DbId;
use crate::raw::{Bind, Numbered, RawDb, RawQuery, Sql};
use crate::run::{Exec, Run};
use crate::schema::{
    events, webhook_deliveries as deliveries, webhook_retries as retries, webhooks,
};

/// A new webhook, free (leased until 0), its cursor at `cursor`.
#[auto_type]
pub fn insert_webhook(
    id: DbId,
    url: String,
    types: String,
    secret: String,
    created_at: i64,
    cursor: i64,
) -> _ {
    let free: i64 = 0;
    diesel::dsl::insert_into(webhooks::table).values((
        webhooks::id.eq(id),
        webhooks::url.eq(url),
        webhooks::event_types.eq(types),
        webhooks::secret.eq(secret),
        webhooks::created_at.eq(created_at),
        webhooks::cursor_position.eq(cursor),
        webhooks::leased_until.eq(free),
    ))
}

/// Every webhook, oldest first.
#[auto_type]
pub fn all_webhooks<Db: Backend>() -> _ {
    let row: AsSelect<WebhookRow, Db> = WebhookRow::as_select();
    webhooks::table
        .order((webhooks::created_at.asc(), webhooks::id.asc()))
        .select(row)
}

/// Deletes the retries of a webhook.
#[auto_type]
pub fn delete_retries_of(id: DbId) -> _ {
    diesel::dsl::delete(retries::table.filter(retries::webhook_id.eq(id)))
}

/// Deletes the delivery records of a webhook.
#[auto_type]
pub fn delete_deliveries_of(id: DbId) -> _ {
    diesel::dsl::delete(deliveries::table.filter(deliveries::webhook_id.eq(id)))
}

/// Deletes a webhook.
#[auto_type]
pub fn delete_webhook(id: DbId) -> _ {
    diesel::dsl::delete(webhooks::table.find(id))
}

/// A webhook free at `now` with events after its cursor, up to `end`
/// (an SQL expression), if any.
#[auto_type]
pub fn free_webhook_with_events(now: i64, end: &'static str) -> _ {
    let end: SqlLiteral<BigInt> = diesel::dsl::sql::<BigInt>(end);
    let one: i64 = 1;
    webhooks::table
        .filter(webhooks::leased_until.le(now))
        .filter(diesel::dsl::exists(
            events::table
                .filter(events::position.gt(webhooks::cursor_position))
                .filter(events::position.le(end)),
        ))
        .select(webhooks::id)
        .limit(one)
}

/// A retry due at `now`, if any.
#[auto_type]
pub fn due_retry(now: i64) -> _ {
    let one: i64 = 1;
    retries::table
        .filter(retries::next_at.le(now))
        .select(retries::webhook_id)
        .limit(one)
}

/// Up to `limit` events after `after`, up to `end`, in order.
#[auto_type]
pub fn events_between<Db: Backend>(after: i64, end: i64, limit: i64) -> _ {
    let row: AsSelect<EventRow, Db> = EventRow::as_select();
    events::table
        .filter(events::position.gt(after))
        .filter(events::position.le(end))
        .order(events::position.asc())
        .limit(limit)
        .select(row)
}

/// As [`events_between`], of the types named `kinds` only.
#[auto_type]
pub fn events_of_kinds_between<Db: Backend>(
    after: i64,
    end: i64,
    kinds: Vec<String>,
    limit: i64,
) -> _ {
    let row: AsSelect<EventRow, Db> = EventRow::as_select();
    events::table
        .filter(events::position.gt(after))
        .filter(events::position.le(end))
        .filter(events::kind.eq_any(kinds))
        .order(events::position.asc())
        .limit(limit)
        .select(row)
}

/// Moves the cursor of the webhook `id` to `to` and renews its lease
/// until `until`, while `holder` holds it at `now`.
#[auto_type]
pub fn move_cursor(id: DbId, holder: DbId, now: i64, to: i64, until: i64) -> _ {
    diesel::dsl::update(
        webhooks::table
            .find(id)
            .filter(webhooks::leased_by.eq(holder))
            .filter(webhooks::leased_until.gt(now)),
    )
    .set((
        webhooks::cursor_position.eq(to),
        webhooks::leased_until.eq(until),
    ))
}

/// A first retry (attempt 1) of `event` to `webhook`, unless one is
/// stored. diesel's `on_conflict_do_nothing()` statement written out, as
/// diesel's upsert types cannot be named: the same text, the same binds.
pub fn insert_retry<Db: RawDb>(
    webhook: DbId,
    event: DbId,
    next_at: i64,
    first_at: i64,
) -> QueryResult<RawQuery<Db>> {
    let mut sql = Sql::default();
    let columns = [
        "webhook_id",
        "event_id",
        "attempt",
        "next_at",
        "first_attempt_at",
    ]
    .map(Db::identifier)
    .into_iter()
    .collect::<QueryResult<Vec<_>>>()?;
    let values = [
        sql.id(webhook),
        sql.id(event),
        sql.bind(Bind::Int32(1)),
        sql.bind(Bind::Int(next_at)),
        sql.bind(Bind::Int(first_at)),
    ];
    sql.push(&format!(
        "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING",
        Db::identifier("webhook_retries")?,
        columns.join(", "),
        values.join(", ")
    ));
    Ok(sql.query())
}

/// The record of one delivery attempt.
#[auto_type]
pub fn insert_delivery(
    id: DbId,
    webhook: DbId,
    event: DbId,
    attempt: i32,
    status: Option<i32>,
    error: Option<String>,
    at: i64,
) -> _ {
    diesel::dsl::insert_into(deliveries::table).values((
        deliveries::id.eq(id),
        deliveries::webhook_id.eq(webhook),
        deliveries::event_id.eq(event),
        deliveries::attempt.eq(attempt),
        deliveries::status.eq(status),
        deliveries::error.eq(error),
        deliveries::attempted_at.eq(at),
    ))
}

/// How many webhooks have the id `id` (0 or 1).
#[auto_type]
pub fn webhooks_with_id(id: DbId) -> _ {
    webhooks::table.find(id).count()
}

/// The sort key of the delivery `id` of the webhook `webhook`.
#[auto_type]
pub fn delivery_key(id: DbId, webhook: DbId) -> _ {
    let one: i64 = 1;
    deliveries::table
        .find(id)
        .filter(deliveries::webhook_id.eq(webhook))
        .select((deliveries::attempted_at, deliveries::id))
        .limit(one)
}

/// A delivery record as a page lists it.
pub type DeliveryRow = (DbId, DbId, i32, Option<i32>, Option<String>, i64);

#[auto_type]
fn deliveries_of(webhook: DbId) -> _ {
    deliveries::table.filter(deliveries::webhook_id.eq(webhook))
}

#[auto_type]
fn delivery_columns() -> _ {
    (
        deliveries::id,
        deliveries::event_id,
        deliveries::attempt,
        deliveries::status,
        deliveries::error,
        deliveries::attempted_at,
    )
}

/// The newest `fetch` deliveries of `webhook`, newest first (the
/// keyset order of `crate::keyset!`).
#[auto_type]
pub fn deliveries_from_newest(webhook: DbId, fetch: i64) -> _ {
    let of: deliveries_of = deliveries_of(webhook);
    let columns: delivery_columns = delivery_columns();
    of.order((deliveries::attempted_at.desc(), deliveries::id.desc()))
        .select(columns)
        .limit(fetch)
}

/// The `fetch` deliveries of `webhook` after the key (`at`, `id`),
/// newest first (`crate::keyset!`).
#[auto_type]
pub fn deliveries_after(webhook: DbId, at: i64, id: DbId, fetch: i64) -> _ {
    let of: deliveries_of = deliveries_of(webhook);
    let columns: delivery_columns = delivery_columns();
    of.filter(deliveries::attempted_at.le(at))
        .filter(
            deliveries::attempted_at
                .lt(at)
                .or(deliveries::attempted_at.eq(at).and(deliveries::id.lt(id))),
        )
        .order((deliveries::attempted_at.desc(), deliveries::id.desc()))
        .select(columns)
        .limit(fetch)
}

/// The `fetch` deliveries of `webhook` before the key (`at`, `id`),
/// oldest first (`crate::keyset!`).
#[auto_type]
pub fn deliveries_before(webhook: DbId, at: i64, id: DbId, fetch: i64) -> _ {
    let of: deliveries_of = deliveries_of(webhook);
    let columns: delivery_columns = delivery_columns();
    of.filter(deliveries::attempted_at.ge(at))
        .filter(
            deliveries::attempted_at
                .gt(at)
                .or(deliveries::attempted_at.eq(at).and(deliveries::id.gt(id))),
        )
        .order((deliveries::attempted_at.asc(), deliveries::id.asc()))
        .select(columns)
        .limit(fetch)
}

/// How many retries are stored.
#[auto_type]
pub fn retry_count() -> _ {
    retries::table.count()
}

/// When the oldest event waiting for a retry was made.
#[auto_type]
pub fn oldest_retried_event() -> _ {
    let oldest: diesel::helper_types::min<events::created_at> =
        diesel::dsl::min(events::created_at);
    let one: i64 = 1;
    retries::table
        .inner_join(events::table.on(events::id.eq(retries::event_id)))
        .select(oldest)
        .limit(one)
}

/// The ids of up to `batch` delivery records made before `before`,
/// oldest first.
#[auto_type]
pub fn deliveries_made_before(before: i64, batch: i64) -> _ {
    deliveries::table
        .filter(deliveries::attempted_at.lt(before))
        .order(deliveries::attempted_at.asc())
        .select(deliveries::id)
        .limit(batch)
}

/// Deletes the delivery records `ids`.
#[auto_type]
pub fn delete_deliveries(ids: Vec<DbId>) -> _ {
    diesel::dsl::delete(deliveries::table.filter(deliveries::id.eq_any(ids)))
}

/// Frees the webhook `id` from `holder`'s lease, due again at `now`.
#[auto_type]
pub fn release_webhook(id: DbId, holder: DbId, now: i64) -> _ {
    let nobody: Option<DbId> = None;
    diesel::dsl::update(
        webhooks::table
            .find(id)
            .filter(webhooks::leased_by.eq(holder)),
    )
    .set((
        webhooks::leased_by.eq(nobody),
        webhooks::leased_until.eq(now),
    ))
}

/// The retries `holder` leased, with their webhook and event.
#[auto_type]
pub fn leased_retries<Db: Backend>(holder: DbId) -> _ {
    let webhook: AsSelect<WebhookRow, Db> = WebhookRow::as_select();
    let event: AsSelect<EventRow, Db> = EventRow::as_select();
    retries::table
        .inner_join(webhooks::table)
        .inner_join(events::table)
        .filter(retries::leased_by.eq(holder))
        .select((webhook, event))
}

#[auto_type]
fn held_retry(webhook: DbId, event: DbId, holder: DbId) -> _ {
    retries::table
        .filter(retries::webhook_id.eq(webhook))
        .filter(retries::event_id.eq(event))
        .filter(retries::leased_by.eq(holder))
}

/// Deletes the retry of `event` to `webhook` that `holder` leased.
#[auto_type]
pub fn delete_held_retry(webhook: DbId, event: DbId, holder: DbId) -> _ {
    let this: held_retry = held_retry(webhook, event, holder);
    diesel::dsl::delete(this)
}

/// Makes the retry of `event` to `webhook` that `holder` leased due at
/// `at`, and frees it.
#[auto_type]
pub fn postpone_held_retry(webhook: DbId, event: DbId, holder: DbId, at: i64) -> _ {
    let this: held_retry = held_retry(webhook, event, holder);
    let nobody: Option<DbId> = None;
    diesel::dsl::update(this).set((retries::next_at.eq(at), retries::leased_by.eq(nobody)))
}

/// The rows of [`oldest_retried_event`].
pub type OldestRetried = Option<i64>;

/// Every statement the webhook queries run, as capabilities of a
/// connection whose backend is `Db`: a bound of `SqlBackend::Conn`, proved
/// where each store names its connection.
pub trait WebhookStatements<Db: Backend>:
    Run<SqlQuery, Position>
    + Run<SqlQuery, MinAt>
    + Run<Numbered<Db>, WebhookRow>
    + Run<Numbered<Db>, RetryKey>
    + Exec<insert_webhook>
    + Run<all_webhooks<Db>, WebhookRow>
    + Exec<delete_retries_of>
    + Exec<delete_deliveries_of>
    + Exec<delete_webhook>
    + Run<free_webhook_with_events, DbId>
    + Run<due_retry, DbId>
    + Run<events_between<Db>, EventRow>
    + Run<events_of_kinds_between<Db>, EventRow>
    + Exec<move_cursor>
    + Exec<insert_delivery>
    + Run<webhooks_with_id, i64>
    + Run<delivery_key, (i64, DbId)>
    + Run<deliveries_from_newest, DeliveryRow>
    + Run<deliveries_after, DeliveryRow>
    + Run<deliveries_before, DeliveryRow>
    + Run<retry_count, i64>
    + Run<oldest_retried_event, OldestRetried>
    + Run<deliveries_made_before, DbId>
    + Exec<delete_deliveries>
    + Exec<release_webhook>
    + Run<leased_retries<Db>, (WebhookRow, EventRow)>
    + Exec<delete_held_retry>
    + Exec<postpone_held_retry>
{
}

impl<Db: Backend, C> WebhookStatements<Db> for C where
    C: Run<SqlQuery, Position>
        + Run<SqlQuery, MinAt>
        + Run<Numbered<Db>, WebhookRow>
        + Run<Numbered<Db>, RetryKey>
        + Exec<insert_webhook>
        + Run<all_webhooks<Db>, WebhookRow>
        + Exec<delete_retries_of>
        + Exec<delete_deliveries_of>
        + Exec<delete_webhook>
        + Run<free_webhook_with_events, DbId>
        + Run<due_retry, DbId>
        + Run<events_between<Db>, EventRow>
        + Run<events_of_kinds_between<Db>, EventRow>
        + Exec<move_cursor>
        + Exec<insert_delivery>
        + Run<webhooks_with_id, i64>
        + Run<delivery_key, (i64, DbId)>
        + Run<deliveries_from_newest, DeliveryRow>
        + Run<deliveries_after, DeliveryRow>
        + Run<deliveries_before, DeliveryRow>
        + Run<retry_count, i64>
        + Run<oldest_retried_event, OldestRetried>
        + Run<deliveries_made_before, DbId>
        + Exec<delete_deliveries>
        + Exec<release_webhook>
        + Run<leased_retries<Db>, (WebhookRow, EventRow)>
        + Exec<delete_held_retry>
        + Exec<postpone_held_retry>
{
}

#[cfg(all(test, feature = "postgres", feature = "sqlite"))]
mod tests {
    use diesel::debug_query;
    use diesel::pg::Pg;
    use diesel::prelude::*;
    use diesel::sqlite::Sqlite;

    use crate::id::DbId;
    use crate::schema::webhook_retries as retries;

    /// The delivery pages and the event batches written out are the
    /// statements the boxed queries made (`keyset!`, an optional type
    /// filter), text and binds, on both databases.
    #[test]
    fn the_pages_and_batches_are_the_boxed_queries_own() {
        use crate::queries::paging::Seek;
        use crate::queries::webhooks::EventRow;
        use crate::schema::{events, webhook_deliveries as deliveries};

        let (w, at, id, fetch) = (
            DbId::from(uuid::Uuid::nil()),
            5_i64,
            DbId::from(uuid::Uuid::max()),
            11_i64,
        );
        let seek = |n: usize| match n {
            0 => Seek::First,
            1 => Seek::After((at, id)),
            _ => Seek::Before((at, id)),
        };
        let columns = (
            deliveries::id,
            deliveries::event_id,
            deliveries::attempt,
            deliveries::status,
            deliveries::error,
            deliveries::attempted_at,
        );
        for n in 0..3 {
            let boxed = deliveries::table
                .filter(deliveries::webhook_id.eq(w))
                .into_boxed::<Pg>();
            let boxed = crate::keyset!(boxed, deliveries::attempted_at, deliveries::id, seek(n))
                .select(columns)
                .limit(fetch);
            let written = match n {
                0 => debug_query::<Pg, _>(&super::deliveries_from_newest(w, fetch)).to_string(),
                1 => debug_query::<Pg, _>(&super::deliveries_after(w, at, id, fetch)).to_string(),
                _ => debug_query::<Pg, _>(&super::deliveries_before(w, at, id, fetch)).to_string(),
            };
            assert_eq!(written, debug_query::<Pg, _>(&boxed).to_string());
            let boxed = deliveries::table
                .filter(deliveries::webhook_id.eq(w))
                .into_boxed::<Sqlite>();
            let boxed = crate::keyset!(boxed, deliveries::attempted_at, deliveries::id, seek(n))
                .select(columns)
                .limit(fetch);
            let written = match n {
                0 => debug_query::<Sqlite, _>(&super::deliveries_from_newest(w, fetch)).to_string(),
                1 => {
                    debug_query::<Sqlite, _>(&super::deliveries_after(w, at, id, fetch)).to_string()
                }
                _ => debug_query::<Sqlite, _>(&super::deliveries_before(w, at, id, fetch))
                    .to_string(),
            };
            assert_eq!(written, debug_query::<Sqlite, _>(&boxed).to_string());
        }

        let (after, end, limit) = (3_i64, 9_i64, 7_i64);
        let kinds = vec!["message.created", "group.updated"];
        let owned = || kinds.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>();
        let batch_pg = |types: Option<Vec<&'static str>>| {
            let mut q = events::table
                .filter(events::position.gt(after))
                .filter(events::position.le(end))
                .into_boxed::<Pg>();
            if let Some(names) = types {
                q = q.filter(events::kind.eq_any(names));
            }
            let q = q
                .order(events::position.asc())
                .limit(limit)
                .select(EventRow::as_select());
            debug_query::<Pg, _>(&q).to_string()
        };
        let batch_sqlite = |types: Option<Vec<&'static str>>| {
            let mut q = events::table
                .filter(events::position.gt(after))
                .filter(events::position.le(end))
                .into_boxed::<Sqlite>();
            if let Some(names) = types {
                q = q.filter(events::kind.eq_any(names));
            }
            let q = q
                .order(events::position.asc())
                .limit(limit)
                .select(EventRow::as_select());
            debug_query::<Sqlite, _>(&q).to_string()
        };
        assert_eq!(
            debug_query::<Pg, _>(&super::events_between::<Pg>(after, end, limit)).to_string(),
            batch_pg(None)
        );
        assert_eq!(
            debug_query::<Pg, _>(&super::events_of_kinds_between::<Pg>(
                after,
                end,
                owned(),
                limit
            ))
            .to_string(),
            batch_pg(Some(kinds.clone()))
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&super::events_between::<Sqlite>(after, end, limit))
                .to_string(),
            batch_sqlite(None)
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&super::events_of_kinds_between::<Sqlite>(
                after,
                end,
                owned(),
                limit
            ))
            .to_string(),
            batch_sqlite(Some(kinds.clone()))
        );
    }

    /// The retry insert written out is the one diesel's builder writes,
    /// on both databases.
    #[test]
    fn the_retry_insert_is_diesels_own() {
        let (w, e) = (DbId::from(uuid::Uuid::nil()), DbId::from(uuid::Uuid::max()));
        let built = || {
            diesel::dsl::insert_into(retries::table)
                .values((
                    retries::webhook_id.eq(w),
                    retries::event_id.eq(e),
                    retries::attempt.eq(1),
                    retries::next_at.eq(7_i64),
                    retries::first_attempt_at.eq(5_i64),
                ))
                .on_conflict_do_nothing()
        };
        // The text and the binds (by their Rust values), as diesel shows
        // them.
        let raw = super::insert_retry::<Pg>(w, e, 7, 5).expect("statement");
        assert_eq!(
            debug_query::<Pg, _>(&raw).to_string(),
            debug_query::<Pg, _>(&built()).to_string()
        );
        let raw = super::insert_retry::<Sqlite>(w, e, 7, 5).expect("statement");
        assert_eq!(
            debug_query::<Sqlite, _>(&raw).to_string(),
            debug_query::<Sqlite, _>(&built()).to_string()
        );
    }
}
