//! A message read whole in one statement: its reactions, attachments and
//! quoted message selected with it as JSON columns, and the message rebuilt
//! from them.

use super::*;

/// A message's reactions and attachments, selected with the message as two
/// JSON arrays ([`relation_columns`]); each NULL or `[]` when it has none.
#[derive(Debug, Queryable)]
pub struct RelationsJson {
    pub reactions: Option<String>,
    pub attachments: Option<String>,
    /// The message it quotes: `[text, sender id, sender's username]`;
    /// NULL when it quotes none or that one is gone.
    pub quoted: Option<String>,
}

/// A reaction in [`RelationsJson`]: name, reactor's id, reactor's username.
type ReactionJson = (String, String, String);
/// An attachment in [`RelationsJson`]: id, filename, file URL, file type,
/// size, creation time, uploader, stored bytes' digest.
type AttachmentJson = (
    String,
    String,
    Option<String>,
    String,
    Option<i64>,
    i64,
    String,
    Option<String>,
);

/// The two select columns of [`RelationsJson`] for the message whose id is
/// the SQL expression `message` (e.g. `"messages"."id"`): its reactions in
/// the order they were made, with their reactors' usernames, and its
/// attachments by position. Each is a correlated subquery reading one range
/// of an index that starts with `message_id` (PostgreSQL:
/// `reactions_message_id_seq_idx`; SQLite: the covering index of
/// `reactions_message_name_contact_key`, `seq` being its rowid; then each
/// reactor by primary key; both: `attachments_message_id_seq_key`), run for
/// the rows the statement returns only, so that a message and its relations
/// come in one statement for the cost of the separate lookups.
///
/// The third is the message it quotes (`reply_to_id`), by primary key,
/// with its sender's username ([`SqlBackend::quoted_message`]).
pub fn relation_columns<S: SqlBackend>(table: &str) -> (JsonColumn, JsonColumn, JsonColumn) {
    let message = &format!("{table}.id");
    (
        // The reactor's username as a scalar subquery, not a join: a
        // primary-key lookup per reaction whatever the size of `contacts`
        // (joined, PostgreSQL hashed or merge-joined `contacts` to match a
        // reaction or two).
        JsonColumn(S::json_rows(
            "reaction.name, reaction.contact_id, \
             (SELECT reactor.username FROM contacts reactor WHERE reactor.id = reaction.contact_id)",
            ("reactions", "reaction"),
            &format!("reaction.message_id = {message}"),
            ("reaction.seq", "reactions_message_id_seq_idx"),
        )),
        JsonColumn(S::json_rows(
            "attachment.id, attachment.filename, attachment.file_url, attachment.file_type, \
             attachment.file_size, attachment.created_at, attachment.uploader_id, \
             attachment.content_sha256",
            ("attachments", "attachment"),
            &format!("attachment.message_id = {message}"),
            // On SQLite a named unique index since migration `files`.
            ("attachment.seq", "attachments_message_id_seq_key"),
        )),
        JsonColumn(S::quoted_message(&format!("{table}.reply_to_id"))),
    )
}

/// A message from its row, its sender's row and its [`RelationsJson`].
pub fn message_with(
    row: MessageRow,
    sender: ContactRow,
    relations: RelationsJson,
) -> Result<Message, Error> {
    let unreadable = |what: &str, e: serde_json::Error| {
        inconsistent(format!(
            "the {what} of message {} do not read: {e}",
            message_id(row.id)
        ))
    };
    let id = |text: &str| {
        Uuid::parse_str(text).map(DbId::from).map_err(|e| {
            inconsistent(format!(
                "an id among the relations of message {} does not read: {e}",
                message_id(row.id)
            ))
        })
    };
    let mut reactions = Vec::new();
    if let Some(json) = relations.reactions {
        let list: Vec<ReactionJson> =
            serde_json::from_str(&json).map_err(|e| unreadable("reactions", e))?;
        let made = list
            .into_iter()
            .map(|(name, contact, username)| Ok((name, reactor(id(&contact)?, username)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        reactions = group_reactions(message_id(row.id), made)?;
    }
    let mut attachments = Vec::new();
    if let Some(json) = relations.attachments {
        let list: Vec<AttachmentJson> =
            serde_json::from_str(&json).map_err(|e| unreadable("attachments", e))?;
        for (
            seq,
            (attachment, filename, file_url, file_type, file_size, created_at, uploader, digest),
        ) in (0..).zip(list)
        {
            attachments.push(Attachment::try_from(AttachmentRow {
                id: id(&attachment)?,
                message_id: Some(row.id),
                seq,
                filename,
                file_url,
                file_type,
                file_size,
                created_at,
                uploader_id: id(&uploader)?,
                conversation_id: Some(row.conversation_id),
                content_sha256: digest,
            })?);
        }
    }
    let quoted = match (row.reply_to_id, relations.quoted) {
        (Some(q), Some(json)) => {
            let (text, sender, username): (String, String, String) =
                serde_json::from_str(&json).map_err(|e| unreadable("quoted message", e))?;
            Some(QuotedMessage {
                id: message_id(q),
                sender: contact_id(id(&sender)?),
                sender_username: Username::new(username).map_err(|e| corrupt("username", e))?,
                text: if text.is_empty() {
                    MessageText::none()
                } else {
                    MessageText::new(text).map_err(|e| corrupt("message text", e))?
                },
            })
        }
        _ => None,
    };
    message(row, sender, (reactions, attachments), quoted)
}

/// A message read whole in one statement: its row, its sender's, and its
/// reactions and attachments ([`relation_columns`]).
pub type WholeRow = (MessageRow, ContactRow, RelationsJson);

/// A select column of trusted SQL text of type `Nullable<Text>`, built from
/// constants only (no binds). Unlike diesel's `sql` literal, it leaves the
/// statement cacheable as a prepared statement (keyed by its text).
#[derive(Debug, Clone)]
pub struct JsonColumn(String);

impl Expression for JsonColumn {
    type SqlType = Nullable<Text>;
}

impl<DB: Backend> QueryFragment<DB> for JsonColumn {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_sql(&self.0);
        Ok(())
    }
}

impl JsonColumn {
    /// The SQL text, for a statement written out by hand.
    pub fn sql(&self) -> &str {
        &self.0
    }
}

impl QueryId for JsonColumn {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<QS> AppearsOnTable<QS> for JsonColumn {}
impl<QS> SelectableExpression<QS> for JsonColumn {}

impl<GB> ValidGrouping<GB> for JsonColumn {
    type IsAggregate = is_aggregate::Never;
}
