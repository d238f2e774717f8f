//! Search (docs/api.md "Search messages"): the page of a search, in the two steps of
//! `confab_store_sql::search` (the recent rows of the searcher's ranges,
//! else the store's index), then the page's messages read whole in one
//! statement. Also the folding of rows written before search existed.

use confab_domain::{ContactId, Cursor, Message, MessageId, Page, Paged, SearchQuery};
use confab_ports::{SearchFilter, StoreError};
use diesel::prelude::*;

use super::membership::is_member;
use super::messages::load_messages;
use super::{Backend, Conn, Result};
use confab_store_sql::error::Error;
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{feed_sees, fetch_size};
use confab_store_sql::rows::DbKey;
use confab_store_sql::schema::messages;
use confab_store_sql::search::{settle, SearchScope};
use confab_store_sql::SqlBackend as _;

/// Rows folded per transaction by [`fold_unfolded`].
const FOLD_BATCH: i64 = 1000;

pub(crate) fn search_messages(
    conn: &mut Conn,
    viewer: ContactId,
    query: SearchQuery,
    filter: SearchFilter,
    page: Page<MessageId>,
) -> Result<Paged<Message>> {
    let v = viewer.db();
    let (limit, fetch) = fetch_size(&page);
    if let Some(c) = filter.conversation {
        if !is_member(conn, v, c.db())? {
            return Err(not_found());
        }
    }
    let cursor = match page.cursor {
        None => None,
        Some(Cursor::After(id)) => Some(cursor_key(conn, v, id.db())?),
        // Pages go forward only (the service refuses the other way).
        Some(Cursor::Before(_)) => return Err(Error::Store(StoreError::CursorNotFound)),
    };
    let scope = SearchScope {
        viewer: v,
        terms: query.terms().to_vec(),
        conversation: filter.conversation.map(|c| c.db()),
        sender: filter.sender.map(|s| s.db()),
        from: filter.created_from.map(|t| t.micros()),
        until: filter.created_until.map(|t| t.micros()),
        cursor,
        fetch,
    };
    let wanted = usize::try_from(fetch).unwrap_or(usize::MAX);
    let found = match settle(&Backend::search_recent(conn, &scope)?, wanted) {
        Some(found) => found,
        None => Backend::search_indexed(conn, &scope)?,
    };
    // Whole, in one statement; then in the order found. A message
    // deleted in between is left out.
    let ids: Vec<DbId> = found.iter().map(|f| f.id).collect();
    let mut whole = load_messages(conn, &ids)?;
    let place = |m: &Message| ids.iter().position(|id| *id == m.id().db());
    whole.sort_by_key(place);
    let has_more = whole.len() > limit;
    whole.truncate(limit);
    Ok(Paged {
        items: whole,
        has_more,
    })
}

/// The cursor's place in the list, `(created_at, id)`, when it is a
/// message the viewer sees (whether it matches or not: an edit may have
/// taken the terms out of it since); else `CursorNotFound`.
fn cursor_key(conn: &mut Conn, v: DbId, id: DbId) -> Result<(i64, DbId)> {
    use confab_store_sql::raw::{Bind, Sql};

    #[derive(QueryableByName)]
    struct At {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        created_at: i64,
    }
    let mut sql = Sql::default();
    let (k, viewer) = (sql.id(id), sql.bind(Bind::Id(v)));
    sql.push(&format!(
        "SELECT created_at FROM messages WHERE id = {k} AND {}",
        feed_sees(&viewer)
    ));
    let at: Option<At> = sql.query().get_result(conn).optional()?;
    at.map(|a| (a.created_at, id))
        .ok_or(Error::Store(StoreError::CursorNotFound))
}

/// Folds the text of the messages written before search existed (those
/// whose migration could not fold in SQL: any text beyond ASCII), a batch
/// per transaction; returns how many. Nothing to do costs one probe of
/// the partial index of unfolded rows.
pub(crate) fn fold_unfolded(conn: &mut Conn) -> Result<u64> {
    let mut done = 0_u64;
    loop {
        let batch: Vec<(DbId, String)> = messages::table
            .filter(messages::body_folded.is_null())
            .select((messages::id, messages::body))
            .limit(FOLD_BATCH)
            .load(conn)?;
        if batch.is_empty() {
            return Ok(done);
        }
        conn.transaction(|conn| -> Result<()> {
            for (id, body) in &batch {
                diesel::update(messages::table.find(*id))
                    .set(messages::body_folded.eq(confab_domain::fold(body)))
                    .execute(conn)?;
            }
            Ok(())
        })?;
        done += batch.len() as u64;
    }
}
