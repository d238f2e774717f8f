//! Messages: appending, reading (hydrated with senders, reactions and
//! attachments in one query each) and deleting.

/// Expands the functions of this file in a backend's `queries` module (see
/// [`super::instantiate`]).
macro_rules! expand {
    () => {
        use std::collections::HashMap;

        use confab_domain::{
            check_attachment_count, Contact, ContactId, ConversationId, Message, MessageId,
            MessageText, Page, Paged, Reaction, ReactionName, Reactor, Username,
        };
        use confab_ports::NewMessage;
        use diesel::dsl::exists;
        use diesel::prelude::*;

        use super::message_updates::insert_attachments;
        use super::{Conn, Db, Result};
        use crate::error::{corrupt, inconsistent};
        use crate::id::DbId;
        use crate::queries::membership::{message_list, visible_to};
        use crate::queries::not_found;
        use crate::queries::paging::{fetch_size, finish_page, keyset, seek};
        use crate::rows::{
            contact_id, conversation_id, message_id, ts, AttachmentRow, ContactRow, DbKey,
            MessageRow,
        };
        use crate::schema::{attachments, contacts, conversations, messages, reactions};

        /// Loads senders, reactions (with the reactors' usernames) and attachments
        /// for all `rows` with one query each, and assembles the messages in order.
        pub(super) fn hydrate(conn: &mut Conn, rows: Vec<MessageRow>) -> Result<Vec<Message>> {
            if rows.is_empty() {
                return Ok(Vec::new());
            }
            let ids: Vec<DbId> = rows.iter().map(|r| r.id).collect();
            let mut sender_ids: Vec<DbId> = rows.iter().map(|r| r.sender_id).collect();
            sender_ids.sort_unstable();
            sender_ids.dedup();

            let mut senders: HashMap<DbId, Contact> = HashMap::with_capacity(sender_ids.len());
            let sender_rows: Vec<ContactRow> = contacts::table
                .filter(contacts::id.eq_any(&sender_ids))
                .select(ContactRow::as_select())
                .load(conn)?;
            for row in sender_rows {
                senders.insert(row.id, Contact::try_from(row)?);
            }

            let reaction_rows: Vec<(DbId, String, DbId, String)> = reactions::table
                .inner_join(contacts::table)
                .filter(reactions::message_id.eq_any(&ids))
                .order(reactions::seq.asc())
                .select((
                    reactions::message_id,
                    reactions::name,
                    reactions::contact_id,
                    contacts::username,
                ))
                .load(conn)?;
            let mut reactions_of: HashMap<DbId, Vec<Reaction>> = HashMap::new();
            for (message, name, who, username) in reaction_rows {
                let reactor = Reactor {
                    contact_id: contact_id(who),
                    username: Username::new(username).map_err(|e| corrupt("username", e))?,
                };
                // Rows come in reaction order: a name's group is placed where its
                // first reaction is, reactors in the order they reacted.
                let list = reactions_of.entry(message).or_default();
                match list.iter_mut().find(|r| r.name.as_str() == name) {
                    Some(reaction) => reaction.reactors.push(reactor),
                    None => list.push(Reaction {
                        name: ReactionName::new(name).map_err(|e| corrupt("reaction name", e))?,
                        reactors: vec![reactor],
                    }),
                }
            }

            let attachment_rows: Vec<AttachmentRow> = attachments::table
                .filter(attachments::message_id.eq_any(&ids))
                .order((attachments::message_id.asc(), attachments::seq.asc()))
                .select(AttachmentRow::as_select())
                .load(conn)?;
            let mut attachments_of: HashMap<DbId, Vec<confab_domain::Attachment>> = HashMap::new();
            for row in attachment_rows {
                let message = row.message_id;
                attachments_of
                    .entry(message)
                    .or_default()
                    .push(confab_domain::Attachment::try_from(row)?);
            }

            rows.into_iter()
                .map(|r| {
                    let sender = senders.get(&r.sender_id).cloned().ok_or_else(|| {
                        inconsistent(format!("sender of message {} is missing", message_id(r.id)))
                    })?;
                    Ok(Message {
                        id: message_id(r.id),
                        conversation_id: conversation_id(r.conversation_id),
                        sender,
                        text: MessageText::new(r.body).map_err(|e| corrupt("message text", e))?,
                        reactions: reactions_of.remove(&r.id).unwrap_or_default(),
                        attachments: attachments_of.remove(&r.id).unwrap_or_default(),
                        read_at: r.read_at.map(ts),
                        created_at: ts(r.created_at),
                        updated_at: r.updated_at.map(ts),
                    })
                })
                .collect()
        }

        pub(super) fn load_message(conn: &mut Conn, id: DbId) -> Result<Option<Message>> {
            let rows: Vec<MessageRow> = messages::table
                .find(id)
                .select(MessageRow::as_select())
                .load(conn)?;
            Ok(hydrate(conn, rows)?.pop())
        }

        pub(crate) fn append_message(conn: &mut Conn, message: NewMessage) -> Result<Message> {
            check_attachment_count(message.attachments.len())?;
            let c = message.conversation_id.db();
            let at = message.created_at.micros();
            // First, so that appenders to one conversation queue on its row lock. Only
            // forward: of two racing appends, the later message wins.
            let moved = diesel::update(
                conversations::table.filter(conversations::id.eq(c)).filter(
                    conversations::last_active_at
                        .is_null()
                        .or(conversations::last_active_at.lt(at)),
                ),
            )
            .set((
                conversations::last_active_at.eq(Some(at)),
                conversations::activity_at.eq(at),
            ))
            .execute(conn)?;
            if moved == 0
                && !diesel::select(exists(conversations::table.find(c))).get_result::<bool>(conn)?
            {
                return Err(not_found());
            }
            let row = MessageRow {
                id: message.id.db(),
                conversation_id: c,
                sender_id: message.sender_id.db(),
                body: message.text.into_inner(),
                read_at: None,
                created_at: at,
                updated_at: None,
            };
            diesel::insert_into(messages::table)
                .values(&row)
                .execute(conn)?;
            insert_attachments(conn, row.id, 0, &message.attachments, message.created_at)?;
            load_message(conn, row.id)?.ok_or_else(not_found)
        }

        pub(crate) fn message_for(
            conn: &mut Conn,
            viewer: ContactId,
            id: MessageId,
        ) -> Result<Option<Message>> {
            let v = viewer.db();
            let rows: Vec<MessageRow> = messages::table
                .find(id.db())
                .filter(
                    messages::conversation_id.eq_any(
                        conversations::table
                            .filter(visible_to!(v))
                            .select(conversations::id),
                    ),
                )
                .select(MessageRow::as_select())
                .load(conn)?;
            Ok(hydrate(conn, rows)?.pop())
        }

        pub(crate) fn list_messages(
            conn: &mut Conn,
            viewer: ContactId,
            conversation: Option<ConversationId>,
            page: Page<MessageId>,
        ) -> Result<Paged<Message>> {
            let v = viewer.db();
            let only = conversation.map(|c| c.db());
            let (limit, fetch) = fetch_size(&page);
            let seek = seek(page.cursor, |id: MessageId| {
                Ok(message_list!(v, only)
                    .filter(messages::id.eq(id.db()))
                    .select((messages::created_at, messages::id))
                    .first::<(i64, DbId)>(conn)
                    .optional()?)
            })?;
            let backwards = seek.backwards();
            let rows: Vec<MessageRow> = keyset!(
                message_list!(v, only),
                messages::created_at,
                messages::id,
                seek
            )
            .select(MessageRow::as_select())
            .limit(fetch)
            .load(conn)?;
            let (rows, has_more) = finish_page(rows, limit, backwards);
            Ok(Paged {
                items: hydrate(conn, rows)?,
                has_more,
            })
        }

        pub(crate) fn delete_message(conn: &mut Conn, id: MessageId) -> Result<()> {
            // Reactions and attachments cascade; a conversation that pinned it gets
            // NULL (ON DELETE SET NULL).
            let n = diesel::delete(messages::table.find(id.db())).execute(conn)?;
            if n == 0 {
                return Err(not_found());
            }
            Ok(())
        }
    };
}
pub(crate) use expand;
