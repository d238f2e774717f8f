//! Changes to a message: new text, reactions added and removed,
//! attachments added, each under the message's row lock so that the limits on
//! reaction names and attachments hold under concurrency.

use confab_domain::{
    check_attachment_count, check_reaction_name_count, AddAttachment, Attachment, ContactId,
    Message, MessageId, MessageText, ReactionName, Timestamp,
};
use confab_ports::{MessageChange, Outbox};
use diesel::prelude::*;

use super::attachments::attach_uploads;
use super::messages::load_message;
use super::outbox::{self, Written};
use super::{Backend, Conn, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::rows::{
    conversation_id, AttachmentRow, DbKey, MessageChangeset, NewReactionRow,
};
use confab_store_sql::schema::{attachments, messages, reactions};
use confab_store_sql::SqlBackend as _;

/// Inserts `list`, a new message's attachments, in places 0, 1, ...
pub(super) fn insert_attachments(conn: &mut Conn, list: &[Attachment]) -> Result<()> {
    let rows: Vec<(Attachment, i32)> = list.iter().cloned().zip(0..).collect();
    insert_attachment_rows(conn, &rows)
}

/// Inserts attachments, each at its place.
pub(super) fn insert_attachment_rows(conn: &mut Conn, list: &[(Attachment, i32)]) -> Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    let rows: Vec<AttachmentRow> = list
        .iter()
        .map(|(a, seq)| AttachmentRow::of(a, *seq))
        .collect();
    diesel::insert_into(attachments::table)
        .values(&rows)
        .execute(conn)?;
    Ok(())
}

pub(crate) fn update_message(
    conn: &mut Conn,
    id: MessageId,
    change: MessageChange,
    outbox: &Outbox,
) -> Result<Message> {
    let m = id.db();
    // The row lock serializes changes to one message, so that the limits on
    // reaction names and attachments hold under concurrency; the caller's
    // membership is checked in the same statement.
    let current = Backend::lock_message(conn, m, change.reactor.db())?.ok_or_else(not_found)?;
    let at = change.at.micros();

    // Written with `updated_at` below, in one statement.
    let new_body = change
        .text
        .filter(|text| text.as_str() != current.body)
        .map(MessageText::into_inner);
    let mut changed = new_body.is_some();
    // The text it replaces is kept; the mentions move the counts of those
    // they add and drop.
    if new_body.is_some() {
        super::depth::keep_edit(conn, change.edit_id, m, &current.body, at)?;
    }
    let before = confab_store_sql::rows::mentions_of(current.mentions.as_deref())?;
    let new_mentions = change.mentions.filter(|after| *after != before);
    if let Some(after) = &new_mentions {
        let seq: i64 = messages::table.find(m).select(messages::seq).first(conn)?;
        super::depth::remention(
            conn,
            (current.conversation_id, current.sender_id, seq),
            &before,
            after,
        )?;
        changed = true;
    }

    if !change.add_reactions.is_empty() {
        let reactor = change.reactor.db();
        let existing: Vec<(String, DbId)> = reactions::table
            .filter(reactions::message_id.eq(m))
            .select((reactions::name, reactions::contact_id))
            .load(conn)?;
        let mut names: Vec<&str> = Vec::new();
        for (name, _) in &existing {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        let mut new_rows: Vec<NewReactionRow> = Vec::new();
        for name in &change.add_reactions {
            let has_it = existing
                .iter()
                .any(|(n, who)| n == name.as_str() && *who == reactor)
                || new_rows.iter().any(|r| r.name == name.as_str());
            if has_it {
                continue;
            }
            if !names.contains(&name.as_str()) {
                names.push(name.as_str());
            }
            new_rows.push(NewReactionRow {
                message_id: m,
                name: name.as_str().to_owned(),
                contact_id: reactor,
                created_at: at,
            });
        }
        // The domain's rule, on the names under the row lock (see the
        // attachments' below).
        check_reaction_name_count(names.len())?;
        if !new_rows.is_empty() {
            diesel::insert_into(reactions::table)
                .values(&new_rows)
                .execute(conn)?;
            changed = true;
        }
    }

    if !change.add_attachments.is_empty() {
        let seqs: Vec<i32> = attachments::table
            .filter(attachments::message_id.eq(m))
            .select(attachments::seq)
            .load(conn)?;
        // The domain's rule, on the count under the row lock: the
        // service's check (`Message::check_attach`) saw a snapshot that a
        // concurrent change may have outdated.
        check_attachment_count(seqs.len() + change.add_attachments.len())?;
        let next = seqs.iter().max().map_or(0, |s| s + 1);
        let conversation = conversation_id(current.conversation_id);
        let mut links = Vec::new();
        let mut uploads = Vec::new();
        for ((place, a), seq) in change.add_attachments.into_iter().enumerate().zip(next..) {
            match a {
                AddAttachment::Link(attachment, a) => links.push((
                    a.attach(attachment, (id, conversation), change.reactor, change.at),
                    seq,
                )),
                AddAttachment::Upload(upload) => uploads.push((place, upload, seq)),
            }
        }
        insert_attachment_rows(conn, &links)?;
        attach_uploads(conn, (id, conversation), change.reactor, &uploads)?;
        changed = true;
    }

    if changed {
        diesel::update(messages::table.find(m))
            .set(&MessageChangeset {
                edited_at: new_body.as_ref().map(|_| at),
                body_folded: new_body.as_deref().map(confab_domain::fold),
                body: new_body,
                updated_at: Some(at),
                mentions: new_mentions.map(|m| confab_store_sql::rows::mentions_json(&m)),
            })
            .execute(conn)?;
    }
    let message = load_message(conn, m)?.ok_or_else(not_found)?;
    // Nothing changed (e.g. a racing request added the same
    // reaction first): no event.
    if changed {
        write_message_events(conn, outbox, &message)?;
    }
    Ok(message)
}

fn write_message_events(conn: &mut Conn, outbox: &Outbox, message: &Message) -> Result<()> {
    outbox::write(
        conn,
        outbox,
        &Written {
            messages: std::slice::from_ref(message),
            ..Written::default()
        },
    )
}

pub(crate) fn remove_reaction(
    conn: &mut Conn,
    id: MessageId,
    reactor: ContactId,
    name: ReactionName,
    at: Timestamp,
    outbox: &Outbox,
) -> Result<Message> {
    let m = id.db();
    Backend::lock_message(conn, m, reactor.db())?.ok_or_else(not_found)?;
    let removed = diesel::delete(
        reactions::table
            .filter(reactions::message_id.eq(m))
            .filter(reactions::contact_id.eq(reactor.db()))
            .filter(reactions::name.eq(name.as_str())),
    )
    .execute(conn)?;
    if removed > 0 {
        diesel::update(messages::table.find(m))
            .set(messages::updated_at.eq(Some(at.micros())))
            .execute(conn)?;
    }
    let message = load_message(conn, m)?.ok_or_else(not_found)?;
    if removed > 0 {
        write_message_events(conn, outbox, &message)?;
    }
    Ok(message)
}
