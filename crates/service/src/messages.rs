//! Messages: send, list, read, edit / react / attach, unreact, delete.

use std::sync::Arc;

use confab_domain::{
    check_message_content, message_deleted, message_sent, message_updated, AddAttachment,
    AttachmentId, Change, Contact, ContactId, ConversationId, DomainError, EditId, Field, Mentions,
    Message, MessageEdit, MessageId, MessageText, NewAttachment, Page, Paged, Quote, QuotedMessage,
    ReactionName, Rule,
};
use confab_ports::{
    Completion, MessageChange, MessageList, NewMessage, Outbox, PayloadRenderer, StoreError,
};

use crate::error::page_error;
use crate::{Confab, ServiceError};

/// A message to send, already parsed into domain values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendMessage {
    pub conversation_id: ConversationId,
    /// [`MessageText::none`] for a message that is only its attachments.
    pub text: MessageText,
    pub attachments: Vec<AttachmentInput>,
    /// The message it quotes: one of the same conversation.
    pub reply_to_id: Option<MessageId>,
    /// The message whose thread it replies in: a top-level message of the
    /// same conversation.
    pub parent_id: Option<MessageId>,
    /// The members it mentions, as given (checked here: members only, each
    /// once, at most `MAX_MENTIONS`).
    pub mentions: Vec<ContactId>,
}

/// One attachment of a send or an edit, as the caller gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachmentInput {
    /// A file at a URL.
    Link(NewAttachment),
    /// The caller's own upload, not attached yet.
    Upload(AttachmentId),
}

/// The attributes of a message update; empty fields change nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageUpdate {
    pub text: Option<MessageText>,
    /// Reaction names, each with the usernames asked to react with it, in
    /// the order submitted.
    pub reactions: Vec<(ReactionName, Vec<String>)>,
    pub attachments: Vec<AttachmentInput>,
    /// The members it mentions from now on (sender only); `None` keeps
    /// them.
    pub mentions: Option<Vec<ContactId>>,
}

impl MessageUpdate {
    pub fn is_empty(&self) -> bool {
        self.text.is_none()
            && self.reactions.is_empty()
            && self.attachments.is_empty()
            && self.mentions.is_none()
    }
}

impl Confab {
    fn with_ids(&self, attachments: Vec<AttachmentInput>) -> Vec<AddAttachment> {
        attachments
            .into_iter()
            .map(|a| match a {
                AttachmentInput::Link(a) => {
                    AddAttachment::Link(AttachmentId::from_uuid(self.new_uuid()), a)
                }
                AttachmentInput::Upload(id) => AddAttachment::Upload(id),
            })
            .collect()
    }

    /// The message, when the caller is a member of its conversation.
    async fn visible_message(
        &self,
        caller: &Contact,
        id: MessageId,
    ) -> Result<Message, ServiceError> {
        // Visibility is checked by the store in the same query.
        self.ports
            .messages
            .message_for(caller.id(), id)
            .await?
            .ok_or(ServiceError::not_found())
    }

    /// Sends a message; with a `completion`, its answer is kept for the
    /// caller's idempotency key in the same transaction.
    pub async fn send_message(
        &self,
        caller: &Contact,
        send: SendMessage,
        completion: Option<Completion<Message>>,
    ) -> Result<Message, ServiceError> {
        let render = self.ports.render.clone();
        self.send_message_rendered_by(caller, send, completion, render)
            .await
    }

    /// [`Confab::send_message`], its event's payload rendered by `render`
    /// instead of the ports' renderer: a caller that answers with the
    /// message too can hand both the one rendering of it (the server does).
    pub async fn send_message_rendered_by(
        &self,
        caller: &Contact,
        send: SendMessage,
        completion: Option<Completion<Message>>,
        render: Arc<dyn PayloadRenderer>,
    ) -> Result<Message, ServiceError> {
        // The rules of a message (at most `MAX_ATTACHMENTS` attachments...)
        // are its constructor's: the store builds the message it writes
        // through it, before writing anything, and answers `Rule` for one
        // that breaks them.
        //
        // No read first: the store checks membership inside the write, so a
        // member removed meanwhile cannot post, and the send is one
        // transaction.
        check_message_content(&send.text, send.attachments.len())?;
        let mentions = Mentions::new(send.mentions)?;
        // A quote, a thread or mentions are read and checked first (a
        // plain send reads nothing).
        let (reply_to, parent_id) = self
            .check_depth(
                caller,
                send.conversation_id,
                (send.reply_to_id, send.parent_id),
                &mentions,
            )
            .await?;
        let now = self.now();
        let message = NewMessage {
            id: MessageId::from_uuid(self.new_uuid()),
            conversation_id: send.conversation_id,
            sender: caller.clone(),
            text: send.text,
            attachments: self.with_ids(send.attachments),
            created_at: now,
            reply_to,
            parent_id,
            mentions,
        };
        let events = message_sent(
            Change::new(caller.id(), now),
            self.event_ids(),
            message.id,
            message.conversation_id,
        );
        let conversation = message.conversation_id;
        let sent = match self
            .ports
            .messages
            .append_message(message, Outbox::new(events, render), completion)
            .await
        {
            Ok(sent) => sent,
            // Nothing written: not a member, or (asked only now, so that a
            // send pays nothing for blocks) a direct conversation whose two
            // members are in a block.
            Err(StoreError::NotFound) => return Err(self.refused_send(caller, conversation).await),
            Err(e) => return Err(e.into()),
        };
        self.committed();
        // A send counts as a stop (docs/api.md "Reply, quote, start a thread").
        self.typing_ended_by_send(caller.id(), conversation);
        Ok(sent)
    }

    pub async fn list_messages(
        &self,
        caller: &Contact,
        list: MessageList,
        page: Page<MessageId>,
    ) -> Result<Paged<Message>, ServiceError> {
        // The store checks the conversation's (the thread's) visibility in
        // the page's own query: NotFound means the list, not the cursor.
        self.ports
            .messages
            .list_messages(caller.id(), list, page)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found_of(match list {
                    MessageList::Thread(_) => Field::Parent,
                    _ => Field::Conversation,
                }),
                e => page_error(&page, e),
            })
    }

    /// The earlier texts of a message, newest first, to any member of its
    /// conversation.
    pub async fn message_edits(
        &self,
        caller: &Contact,
        id: MessageId,
        page: Page<EditId>,
    ) -> Result<Paged<MessageEdit>, ServiceError> {
        self.ports
            .depth
            .message_edits(caller.id(), id, page)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found(),
                e => page_error(&page, e),
            })
    }

    /// Why a send wrote nothing: a direct conversation whose two members
    /// are in a block, else not a member (or no such conversation).
    async fn refused_send(&self, caller: &Contact, conversation: ConversationId) -> ServiceError {
        match self
            .conversation_blocked(caller, conversation, Some(Field::Conversation))
            .await
        {
            Ok(Some(blocked)) => blocked,
            Ok(None) => ServiceError::not_found_of(Field::Conversation),
            Err(e) => e,
        }
    }

    /// A send's quote, thread and mentions, checked: the quoted message
    /// and the thread's first message are messages of the conversation
    /// the caller sees (the thread's not itself a reply), and the
    /// mentioned are its members. Nothing is read for a send without
    /// them; with them, one statement each, none growing with the
    /// conversation's size. A caller who is not a member learns only
    /// that (404), before anything about what they named.
    async fn check_depth(
        &self,
        caller: &Contact,
        conversation: ConversationId,
        (reply_to, parent): (Option<MessageId>, Option<MessageId>),
        mentions: &Mentions,
    ) -> Result<(Option<Quote>, Option<MessageId>), ServiceError> {
        if reply_to.is_none() && parent.is_none() && mentions.is_empty() {
            return Ok((None, None));
        }
        let mut asked = mentions.contacts().to_vec();
        asked.push(caller.id());
        let members = self.ports.depth.members_among(conversation, asked).await?;
        if !members.contains(&caller.id()) {
            return Err(self.refused_send(caller, conversation).await);
        }
        mentions.check_members(&members)?;
        let quote = match reply_to {
            None => None,
            Some(id) => {
                let quoted = self.ports.messages.message_for(caller.id(), id).await?;
                let quoted = quoted.ok_or(DomainError::breaks(
                    Field::ReplyTo,
                    Rule::OutsideConversation,
                ))?;
                quoted.check_quotable_in(conversation)?;
                Some(Quote::Message(QuotedMessage::of(&quoted)))
            }
        };
        if let Some(id) = parent {
            let first = self.ports.messages.message_for(caller.id(), id).await?;
            first
                .ok_or(DomainError::breaks(
                    Field::Parent,
                    Rule::OutsideConversation,
                ))?
                .check_thread_parent_in(conversation)?;
        }
        Ok((quote, parent))
    }

    pub async fn message(&self, caller: &Contact, id: MessageId) -> Result<Message, ServiceError> {
        self.visible_message(caller, id).await
    }

    /// Edits the text (sender only), adds the caller's reactions (any
    /// member, own name only) and appends attachments (sender only), all or
    /// nothing.
    pub async fn update_message(
        &self,
        caller: &Contact,
        id: MessageId,
        update: MessageUpdate,
    ) -> Result<Message, ServiceError> {
        let render = self.ports.render.clone();
        self.update_message_rendered_by(caller, id, update, render)
            .await
    }

    /// [`Confab::update_message`], its events' payloads rendered by
    /// `render` (see [`Confab::send_message_rendered_by`]).
    pub async fn update_message_rendered_by(
        &self,
        caller: &Contact,
        id: MessageId,
        update: MessageUpdate,
        render: Arc<dyn PayloadRenderer>,
    ) -> Result<Message, ServiceError> {
        let message = self.visible_message(caller, id).await?;
        if update.is_empty() {
            return Ok(message);
        }
        if update.text.is_some() || update.mentions.is_some() {
            message.check_edit(caller.id())?;
        }
        let mentions = match update.mentions {
            None => None,
            Some(list) => {
                let mentions = Mentions::new(list)?;
                let members = self
                    .ports
                    .depth
                    .members_among(message.conversation_id(), mentions.contacts().to_vec())
                    .await?;
                mentions.check_members(&members)?;
                Some(mentions)
            }
        };
        if !update.attachments.is_empty() {
            message.check_attach(caller.id(), update.attachments.len())?;
        }
        let add_reactions = message.plan_reactions(caller, &update.reactions)?;
        if let Some(blocked) = self
            .conversation_blocked(caller, message.conversation_id(), None)
            .await?
        {
            return Err(blocked);
        }
        let unchanged_text = update.text.as_ref().is_none_or(|t| t == message.text());
        let unchanged_mentions = mentions.as_ref().is_none_or(|m| m == message.mentions());
        if unchanged_text
            && unchanged_mentions
            && add_reactions.is_empty()
            && update.attachments.is_empty()
        {
            return Ok(message);
        }
        let now = self.now();
        let change = MessageChange {
            text: update.text,
            add_reactions,
            reactor: caller.id(),
            add_attachments: self.with_ids(update.attachments),
            mentions,
            edit_id: EditId::from_uuid(self.new_uuid()),
            at: now,
        };
        let appended: Vec<AttachmentId> = change
            .add_attachments
            .iter()
            .map(AddAttachment::id)
            .collect();
        // The store writes them only if it finds something to change (a
        // racing request may have added the same reaction first).
        let events = message_updated(
            Change::new(caller.id(), now),
            self.event_ids(),
            id,
            message.conversation_id(),
            &appended,
        );
        let updated = self
            .ports
            .messages
            .update_message(id, change, Outbox::new(events, render))
            .await?;
        self.committed();
        Ok(updated)
    }

    /// Takes back the caller's own reaction `name` (no error if none).
    pub async fn remove_reaction(
        &self,
        caller: &Contact,
        id: MessageId,
        name: ReactionName,
    ) -> Result<Message, ServiceError> {
        let render = self.ports.render.clone();
        self.remove_reaction_rendered_by(caller, id, name, render)
            .await
    }

    /// [`Confab::remove_reaction`], its event's payload rendered by
    /// `render` (see [`Confab::send_message_rendered_by`]).
    pub async fn remove_reaction_rendered_by(
        &self,
        caller: &Contact,
        id: MessageId,
        name: ReactionName,
        render: Arc<dyn PayloadRenderer>,
    ) -> Result<Message, ServiceError> {
        let message = self.visible_message(caller, id).await?;
        if !message.has_reaction(&name, caller.id()) {
            return Ok(message);
        }
        let now = self.now();
        let events = message_updated(
            Change::new(caller.id(), now),
            self.event_ids(),
            id,
            message.conversation_id(),
            &[],
        );
        let updated = self
            .ports
            .messages
            .remove_reaction(id, caller.id(), name, now, Outbox::new(events, render))
            .await?;
        self.committed();
        Ok(updated)
    }

    /// Deletes the message (sender only), permanently.
    pub async fn delete_message(
        &self,
        caller: &Contact,
        id: MessageId,
    ) -> Result<(), ServiceError> {
        let message = self.visible_message(caller, id).await?;
        // Another's message: the caller may moderate its conversation.
        let moderator = !message.is_from(caller.id()) && self.moderates(caller, &message).await?;
        message.check_delete(caller.id(), moderator)?;
        let events = message_deleted(
            Change::new(caller.id(), self.now()),
            self.event_ids(),
            id,
            message.conversation_id(),
        );
        self.ports
            .messages
            .delete_message(id, caller.id(), self.outbox(events))
            .await?;
        self.committed();
        Ok(())
    }
}
