//! A contact's export (docs/api.md "Server API: from an app's backend"): what it sent and reacted, read
//! in pages by keyset, so that an export of any size holds one page at a
//! time.

use confab_domain::{ContactId, Message, MessageId, Timestamp};
use confab_ports::ReactionMade;
use diesel::prelude::*;

use super::messages::load_messages;
use super::{Conn, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::rows::{message_id, DbKey};
use confab_store_sql::schema::{messages, reactions};

pub(crate) fn messages_sent(
    conn: &mut Conn,
    contact: ContactId,
    after: Option<MessageId>,
    limit: u32,
) -> Result<Vec<Message>> {
    let mut q = messages::table
        .filter(messages::sender_id.eq(contact.db()))
        .order(messages::id.asc())
        .select(messages::id)
        .limit(i64::from(limit))
        .into_boxed();
    if let Some(after) = after {
        q = q.filter(messages::id.gt(after.db()));
    }
    let ids: Vec<DbId> = q.load(conn)?;
    let mut found = load_messages(conn, &ids)?;
    found.sort_by_key(|m| *m.id().as_uuid());
    Ok(found)
}

pub(crate) fn reactions_made(
    conn: &mut Conn,
    contact: ContactId,
    after: i64,
    limit: u32,
) -> Result<Vec<ReactionMade>> {
    Ok(reactions::table
        .filter(reactions::contact_id.eq(contact.db()))
        .filter(reactions::seq.gt(after))
        .order(reactions::seq.asc())
        .select((
            reactions::seq,
            reactions::message_id,
            reactions::name,
            reactions::created_at,
        ))
        .limit(i64::from(limit))
        .load::<(i64, DbId, String, i64)>(conn)?
        .into_iter()
        .map(|(seq, m, name, at)| ReactionMade {
            seq,
            message_id: message_id(m),
            name,
            created_at: Timestamp::from_micros(at),
        })
        .collect())
}
