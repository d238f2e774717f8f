//! Changes to a message: new text, reactions added and removed,
//! attachments added, each under the message's row lock so that the limits on
//! reaction names and attachments hold under concurrency.

use confab_domain::{
    check_attachment_count, check_reaction_name_count, Attachment, ContactId, FileSize, Message,
    MessageId, MessageText, ReactionName, Timestamp,
};
use confab_ports::{MessageChange, Outbox};
use diesel::prelude::*;

use super::messages::load_message;
use super::outbox::{self, Written};
use super::{Backend, Conn, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::rows::{AttachmentRow, DbKey, MessageChangeset, NewReactionRow};
use confab_store_sql::schema::{attachments, messages, reactions};
use confab_store_sql::SqlBackend as _;

/// Inserts `list`, attachments of `message`, from place `first_seq` on.
pub(super) fn insert_attachments(
    conn: &mut Conn,
    message: DbId,
    first_seq: i32,
    list: &[Attachment],
) -> Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    let rows: Vec<AttachmentRow> = list
        .iter()
        .zip(first_seq..)
        .map(|(a, seq)| AttachmentRow {
            id: a.id.db(),
            message_id: message,
            seq,
            filename: a.filename.as_str().to_owned(),
            file_url: a.file_url.as_str().to_owned(),
            file_type: a.file_type.as_str().to_owned(),
            file_size: a.file_size.map(FileSize::bytes),
            created_at: a.created_at.micros(),
        })
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
        let added: Vec<Attachment> = change
            .add_attachments
            .into_iter()
            .map(|(attachment, a)| a.attach(attachment, id, change.at))
            .collect();
        insert_attachments(conn, m, next, &added)?;
        changed = true;
    }

    if changed {
        diesel::update(messages::table.find(m))
            .set(&MessageChangeset {
                body: new_body,
                updated_at: Some(at),
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
