//! The statements of the idempotency queries ([`super`]), each named
//! (`#[auto_type]`) so that [`IdempotencyStatements`] lists them once as
//! what a backend's connection must run ([`crate::run`]).

use diesel::backend::Backend;
use diesel::dsl::auto_type;
use diesel::prelude::*;
use diesel::sql_types::Bool;
use diesel::QueryResult;

use crate::id::DbId;
use crate::raw::{Bind, RawDb, RawQuery, Sql, TypedQuery};
use crate::run::{Exec, Run};
use crate::schema::idempotency_keys as keys;
use crate::schema::idempotency_quota as quota;

/// The row of a key as a claim reads it back.
pub type KeyRow = (String, Option<i32>, Option<String>, Option<String>);

/// The answer of the one-statement claim: whether the key is new, whether
/// it was counted, whether it was stored.
pub type Claimed = (bool, bool, bool);

/// The one-statement claim's statement (`Shape::typed`).
pub type ClaimStatement<Db> = TypedQuery<Db, (Bool, Bool, Bool)>;

/// Whether the key `key` of `contact` is stored, made at `since` or later.
#[auto_type]
pub fn key_is_live(contact: DbId, key: String, since: i64) -> _ {
    diesel::dsl::select(diesel::dsl::exists(
        keys::table
            .filter(keys::contact_id.eq(contact))
            .filter(keys::key.eq(key))
            .filter(keys::created_at.ge(since)),
    ))
}

/// Takes back the count of a new key of `contact` on `day`.
#[auto_type]
pub fn uncount_key(day: i64, contact: DbId) -> _ {
    let one: i64 = 1;
    let less: <quota::used as std::ops::Sub<i64>>::Output = quota::used - one;
    diesel::dsl::update(
        quota::table
            .filter(quota::day.eq(day))
            .filter(quota::contact_id.eq(contact)),
    )
    .set(quota::used.eq(less))
}

#[auto_type]
fn stored_key(contact: DbId, key: String) -> _ {
    keys::table
        .filter(keys::contact_id.eq(contact))
        .filter(keys::key.eq(key))
}

/// Takes over the key `key` of `contact` for `holder` from a holder whose
/// lease ran out at `now` before it answered, for the same request
/// (`fingerprint`) only.
#[auto_type]
pub fn take_over_key(
    contact: DbId,
    key: String,
    now: i64,
    fingerprint: String,
    holder: DbId,
    locked_until: i64,
) -> _ {
    let this: stored_key = stored_key(contact, key);
    diesel::dsl::update(
        this.filter(
            keys::status
                .is_null()
                .and(keys::locked_until.le(now))
                .and(keys::fingerprint.eq(fingerprint)),
        ),
    )
    .set((
        keys::claim.eq(holder),
        keys::created_at.eq(now),
        keys::locked_until.eq(locked_until),
    ))
}

/// What the key `key` of `contact` holds.
#[auto_type]
pub fn key_state(contact: DbId, key: String) -> _ {
    let this: stored_key = stored_key(contact, key);
    let one: i64 = 1;
    this.select((keys::fingerprint, keys::status, keys::location, keys::body))
        .limit(one)
}

#[auto_type]
fn held_key(contact: DbId, key: String, holder: DbId) -> _ {
    keys::table
        .filter(keys::contact_id.eq(contact))
        .filter(keys::key.eq(key))
        .filter(keys::claim.eq(holder))
        .filter(keys::status.is_null())
}

/// Stores the response for the key `holder` holds, not yet answered.
#[auto_type]
pub fn answer_key(
    contact: DbId,
    key: String,
    holder: DbId,
    status: i32,
    location: Option<String>,
    body: String,
) -> _ {
    let this: held_key = held_key(contact, key, holder);
    diesel::dsl::update(this).set((
        keys::status.eq(status),
        keys::location.eq(location),
        keys::body.eq(body),
    ))
}

/// How many answered keys `key` of `contact` were made at `since` or
/// later (0 or 1).
#[auto_type]
pub fn answered_keys(contact: DbId, key: String, since: i64) -> _ {
    keys::table
        .filter(keys::contact_id.eq(contact))
        .filter(keys::key.eq(key))
        .filter(keys::status.is_not_null())
        .filter(keys::created_at.ge(since))
        .count()
}

/// Deletes the key `holder` holds, not yet answered.
#[auto_type]
pub fn delete_held_key(contact: DbId, key: String, holder: DbId) -> _ {
    let this: held_key = held_key(contact, key, holder);
    diesel::dsl::delete(this)
}

/// Deletes the keys made before `before`.
#[auto_type]
pub fn delete_keys_before(before: i64) -> _ {
    diesel::dsl::delete(keys::table.filter(keys::created_at.lt(before)))
}

/// Deletes the quota counters of the days before `day`.
#[auto_type]
pub fn delete_quota_before(day: i64) -> _ {
    diesel::dsl::delete(quota::table.filter(quota::day.lt(day)))
}

/// A claim of a key as a new one, as [`insert_key`] stores it.
pub struct NewKey {
    pub contact: DbId,
    pub key: String,
    pub fingerprint: String,
    pub holder: DbId,
    pub now: i64,
    pub locked_until: i64,
    /// Keys made before it are expired, and taken over.
    pub expired_before: i64,
}

/// Stores a new key, or takes over an expired one: diesel's
/// `insert_into(..).values(..).on_conflict(..).do_update().set(..)`
/// filtered, written out as diesel writes it (its upsert types cannot be
/// named).
pub fn insert_key<Db: RawDb>(new: NewKey) -> QueryResult<RawQuery<Db>> {
    let name = |c: &str| Db::identifier(c);
    let table = name("idempotency_keys")?;
    let mut sql = Sql::default();
    let values = [
        sql.id(new.contact),
        sql.bind(Bind::Text(new.key)),
        sql.bind(Bind::Text(new.fingerprint.clone())),
        sql.id(new.holder),
        sql.bind(Bind::Int(new.now)),
        sql.bind(Bind::Int(new.locked_until)),
    ];
    let columns = [
        "contact_id",
        "key",
        "fingerprint",
        "claim",
        "created_at",
        "locked_until",
    ]
    .map(name)
    .into_iter()
    .collect::<QueryResult<Vec<_>>>()?;
    let set = [
        ("fingerprint", Bind::Text(new.fingerprint)),
        ("claim", Bind::Id(new.holder)),
        ("created_at", Bind::Int(new.now)),
        ("locked_until", Bind::Int(new.locked_until)),
        ("status", Bind::MaybeInt32(None)),
        ("location", Bind::MaybeText(None)),
        ("body", Bind::MaybeText(None)),
    ]
    .map(|(c, b)| Ok(format!("{} = {}", name(c)?, sql.bind(b))))
    .into_iter()
    .collect::<QueryResult<Vec<_>>>()?;
    let before = sql.bind(Bind::Int(new.expired_before));
    sql.push(&format!(
        "INSERT INTO {table} ({}) VALUES ({}) ON CONFLICT ({}, {}) DO UPDATE SET {} \
         WHERE ({table}.{} < {before})",
        columns.join(", "),
        values.join(", "),
        name("contact_id")?,
        name("key")?,
        set.join(", "),
        name("created_at")?,
    ));
    Ok(sql.query())
}

/// Counts a new key of `contact` on `day` while fewer than `max` were
/// counted: diesel's upsert filtered, written out as diesel writes it.
pub fn count_key<Db: RawDb>(day: i64, contact: DbId, max: i64) -> QueryResult<RawQuery<Db>> {
    let name = |c: &str| Db::identifier(c);
    let table = name("idempotency_quota")?;
    let used = name("used")?;
    let mut sql = Sql::default();
    let values = [
        sql.bind(Bind::Int(day)),
        sql.id(contact),
        sql.bind(Bind::Int(1)),
    ];
    let step = sql.bind(Bind::Int(1));
    let max = sql.bind(Bind::Int(max));
    sql.push(&format!(
        "INSERT INTO {table} ({}, {}, {used}) VALUES ({}) ON CONFLICT ({}, {}) \
         DO UPDATE SET {used} = ({table}.{used} + {step}) WHERE ({table}.{used} < {max})",
        name("day")?,
        name("contact_id")?,
        values.join(", "),
        name("day")?,
        name("contact_id")?,
    ));
    Ok(sql.query())
}

/// Every statement the idempotency queries run, as capabilities of a
/// connection whose backend is `Db` (see [`crate::run`]).
pub trait IdempotencyStatements<Db: Backend>:
    Run<ClaimStatement<Db>, Claimed>
    + Run<key_is_live, bool>
    + Exec<uncount_key>
    + Exec<take_over_key>
    + Run<key_state, KeyRow>
    + Exec<answer_key>
    + Run<answered_keys, i64>
    + Exec<delete_held_key>
    + Exec<delete_keys_before>
    + Exec<delete_quota_before>
{
}

impl<Db: Backend, C> IdempotencyStatements<Db> for C where
    C: Run<ClaimStatement<Db>, Claimed>
        + Run<key_is_live, bool>
        + Exec<uncount_key>
        + Exec<take_over_key>
        + Run<key_state, KeyRow>
        + Exec<answer_key>
        + Run<answered_keys, i64>
        + Exec<delete_held_key>
        + Exec<delete_keys_before>
        + Exec<delete_quota_before>
{
}

#[cfg(all(test, feature = "postgres", feature = "sqlite"))]
mod tests {
    use diesel::debug_query;
    use diesel::pg::Pg;
    use diesel::prelude::*;
    use diesel::query_dsl::methods::FilterDsl;
    use diesel::sqlite::Sqlite;

    use super::NewKey;
    use crate::id::DbId;
    use crate::schema::idempotency_keys as keys;
    use crate::schema::idempotency_quota as quota;

    fn new_key() -> NewKey {
        NewKey {
            contact: DbId::from(uuid::Uuid::nil()),
            key: "k".to_owned(),
            fingerprint: "f".to_owned(),
            holder: DbId::from(uuid::Uuid::max()),
            now: 10,
            locked_until: 20,
            expired_before: 5,
        }
    }

    /// The upserts written out are the ones diesel's builder writes, on
    /// both databases: the same text, the same binds (by their Rust
    /// values; their SQL types are the columns').
    #[test]
    fn the_upserts_are_diesels_own() {
        let k = new_key();
        let built_key = || {
            let insert = diesel::insert_into(keys::table)
                .values((
                    keys::contact_id.eq(k.contact),
                    keys::key.eq(&k.key),
                    keys::fingerprint.eq(&k.fingerprint),
                    keys::claim.eq(k.holder),
                    keys::created_at.eq(k.now),
                    keys::locked_until.eq(k.locked_until),
                ))
                .on_conflict((keys::contact_id, keys::key))
                .do_update()
                .set((
                    keys::fingerprint.eq(&k.fingerprint),
                    keys::claim.eq(k.holder),
                    keys::created_at.eq(k.now),
                    keys::locked_until.eq(k.locked_until),
                    keys::status.eq(None::<i32>),
                    keys::location.eq(None::<String>),
                    keys::body.eq(None::<String>),
                ));
            FilterDsl::filter(insert, keys::created_at.lt(k.expired_before))
        };
        let raw = super::insert_key::<Pg>(new_key()).expect("statement");
        assert_eq!(
            debug_query::<Pg, _>(&raw).to_string(),
            debug_query::<Pg, _>(&built_key()).to_string()
        );
        let raw = super::insert_key::<Sqlite>(new_key()).expect("statement");
        assert_eq!(
            debug_query::<Sqlite, _>(&raw).to_string(),
            debug_query::<Sqlite, _>(&built_key()).to_string()
        );

        let (day, max) = (3, 7);
        let built_count = || {
            let count = diesel::insert_into(quota::table)
                .values((
                    quota::day.eq(day),
                    quota::contact_id.eq(k.contact),
                    quota::used.eq(1_i64),
                ))
                .on_conflict((quota::day, quota::contact_id))
                .do_update()
                .set(quota::used.eq(quota::used + 1));
            FilterDsl::filter(count, quota::used.lt(max))
        };
        let raw = super::count_key::<Pg>(day, k.contact, max).expect("statement");
        assert_eq!(
            debug_query::<Pg, _>(&raw).to_string(),
            debug_query::<Pg, _>(&built_count()).to_string()
        );
        let raw = super::count_key::<Sqlite>(day, k.contact, max).expect("statement");
        assert_eq!(
            debug_query::<Sqlite, _>(&raw).to_string(),
            debug_query::<Sqlite, _>(&built_count()).to_string()
        );
    }
}
