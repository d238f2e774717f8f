//! Conversations: create, list, open, update (pin, mute, archive, pinned
//! message), delete.

use confab_domain::{
    conversation_created, conversation_deleted, conversation_opened, conversation_updated, Change,
    Contact, ContactId, Conversation, ConversationId, ConversationView, Field, GroupId,
    MemberStatePatch, MessageId, Page, Paged, PinnedMessageChange, Rule, Timestamp,
};
use confab_ports::{Completion, ConversationFilter};

use crate::error::page_error;
use crate::{Confab, ServiceError};

/// Who a new conversation is with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversationTarget {
    Contact(ContactId),
    Group(GroupId),
}

impl Confab {
    /// Whether `caller` is a member of `conversation` now (asked of the
    /// store, which answers "no" for a conversation that does not exist).
    pub(crate) async fn is_member(
        &self,
        caller: &Contact,
        conversation: ConversationId,
    ) -> Result<bool, ServiceError> {
        let members = self
            .ports
            .depth
            .members_among(conversation, vec![caller.id()])
            .await?;
        Ok(members.contains(&caller.id()))
    }

    /// The conversation as the caller sees it, or `NotFound` of `input`.
    pub(crate) async fn visible_conversation(
        &self,
        caller: &Contact,
        id: ConversationId,
        input: Option<Field>,
    ) -> Result<ConversationView, ServiceError> {
        self.ports
            .conversations
            .conversation_for(caller.id(), id)
            .await?
            .ok_or(ServiceError::NotFound { of: input })
    }

    pub async fn list_conversations(
        &self,
        caller: &Contact,
        filter: ConversationFilter,
        page: Page<ConversationId>,
    ) -> Result<Paged<ConversationView>, ServiceError> {
        if let Some(group_id) = filter.group_id {
            // A foreign group is not found, like everywhere else.
            self.ports
                .groups
                .group_for(caller.id(), group_id)
                .await?
                .ok_or(ServiceError::not_found_of(Field::Group))?;
        }
        self.ports
            .conversations
            .list_conversations(caller.id(), filter, page)
            .await
            .map_err(|e| page_error(&page, e))
    }

    /// Creates a conversation with a contact or a group. With a
    /// `completion`, its answer is kept for the caller's idempotency key in
    /// the same transaction.
    /// The caller's oldest direct conversation with `peer`, as the caller
    /// sees it, if there is one (`distinct=true`, docs/api.md "Requests and answers").
    pub async fn direct_conversation_with(
        &self,
        caller: &Contact,
        peer: ContactId,
    ) -> Result<Option<ConversationView>, ServiceError> {
        self.check_unblocked(caller.id(), peer, Field::Contact)
            .await?;
        let Some(id) = self
            .ports
            .conversations
            .direct_conversation_between(caller.id(), peer)
            .await?
        else {
            return Ok(None);
        };
        Ok(self
            .ports
            .conversations
            .conversation_for(caller.id(), id)
            .await?)
    }

    pub async fn create_conversation(
        &self,
        caller: &Contact,
        target: ConversationTarget,
        completion: Option<Completion<ConversationView>>,
    ) -> Result<ConversationView, ServiceError> {
        let id = ConversationId::from_uuid(self.new_uuid());
        let now = self.now();
        let conversation = match target {
            ConversationTarget::Contact(peer) => {
                // Validate before looking up, so "yourself" is invalid, not unknown.
                let c = Conversation::new_direct(id, caller.id(), peer, now)?;
                self.ports
                    .contacts
                    .contact(peer)
                    .await?
                    .ok_or(ServiceError::not_found_of(Field::Contact))?;
                self.check_unblocked(caller.id(), peer, Field::Contact)
                    .await?;
                c
            }
            ConversationTarget::Group(group_id) => {
                self.ports
                    .groups
                    .group_for(caller.id(), group_id)
                    .await?
                    .ok_or(ServiceError::not_found_of(Field::Group))?;
                Conversation::new_group(id, caller.id(), group_id, now)
            }
        };
        let input = match target {
            ConversationTarget::Contact(_) => Field::Contact,
            ConversationTarget::Group(_) => Field::Group,
        };
        // What the caller sees of it is known before it is written.
        let view = ConversationView {
            conversation: conversation.clone(),
            viewer: caller.id(),
            state: Default::default(),
        };
        let completion = completion.map(|c| {
            let view = view.clone();
            c.adapt(move |_: &()| view)
        });
        let events = conversation_created(Change::new(caller.id(), now), self.event_ids(), id);
        self.ports
            .conversations
            .create_conversation(conversation, self.outbox(events), completion)
            .await
            .map_err(|e| match e {
                // The peer or group vanished between the check and the write.
                confab_ports::StoreError::NotFound => ServiceError::not_found_of(input),
                e => e.into(),
            })?;
        self.committed();
        Ok(view)
    }

    /// Opens the conversation: the caller's `last_opened_at` becomes now and
    /// messages from others become read.
    pub async fn open_conversation(
        &self,
        caller: &Contact,
        id: ConversationId,
    ) -> Result<ConversationView, ServiceError> {
        let now = self.now();
        let events = conversation_opened(Change::new(caller.id(), now), self.event_ids(), id);
        let view = self
            .ports
            .conversations
            .open_conversation(caller.id(), id, now, self.outbox(events))
            .await?;
        self.committed();
        Ok(view)
    }

    /// Changes the pinned message (shared) and the caller's own pin, mute
    /// and archive state. Only submitted attributes change, and only those
    /// that differ from what the caller sees: a request that changes
    /// nothing (the pinned message pinned again, a mute already set)
    /// answers the conversation as it is, writing nothing and telling
    /// nobody.
    pub async fn update_conversation(
        &self,
        caller: &Contact,
        id: ConversationId,
        pinned: Option<Option<MessageId>>,
        is_pinned: Option<bool>,
        is_muted: Option<bool>,
        archived_at: Option<Option<Timestamp>>,
    ) -> Result<ConversationView, ServiceError> {
        let view = self.visible_conversation(caller, id, None).await?;
        let now = self.now();
        let archived_at = match archived_at {
            Some(Some(at)) => Some(Some(view.conversation.check_archive(at, now)?)),
            other => other,
        };
        let pinned = match pinned {
            None => None,
            Some(None) => Some(PinnedMessageChange::Unpin),
            // The message pinned now is this conversation's: pinning it
            // again needs no look at it.
            Some(Some(m)) if view.conversation.pinned_message_id() == Some(m) => None,
            Some(Some(message_id)) => {
                let not_here =
                    || ServiceError::invalid(Field::PinnedMessage, Rule::OutsideConversation);
                let message = self
                    .ports
                    .messages
                    .message_for(caller.id(), message_id)
                    .await?
                    .ok_or_else(not_here)?;
                Some(PinnedMessageChange::Pin(
                    view.conversation.check_pin(&message)?,
                ))
            }
        };
        let pinned = pinned.filter(|change| change.changes(&view.conversation));
        let patch = MemberStatePatch {
            is_pinned,
            is_muted,
            archived_at,
        }
        .against(&view.state);
        if pinned.is_none() && patch.is_empty() {
            return Ok(view);
        }
        // The pinned message is shared: its change reaches the other
        // member, which a block between the two refuses (one's own pin,
        // mute and archive stay allowed).
        if pinned.is_some() && view.conversation.group_id().is_none() {
            if let Some(blocked) = self.conversation_blocked(caller, id, None).await? {
                return Err(blocked);
            }
        }
        // The pinned message is shared: every member hears of its change.
        let events = conversation_updated(
            Change::new(caller.id(), now),
            self.event_ids(),
            id,
            pinned.is_some(),
        );
        let updated = self
            .ports
            .conversations
            .update_conversation(caller.id(), id, pinned, patch, self.outbox(events))
            .await?;
        self.committed();
        Ok(updated)
    }

    /// Deletes the conversation and all its messages, in one transaction
    /// (a big one in batches first: [`Confab::delete_conversation_within`]).
    pub async fn delete_conversation(
        &self,
        caller: &Contact,
        id: ConversationId,
    ) -> Result<(), ServiceError> {
        self.check_may_delete(caller, id).await?;
        let events =
            conversation_deleted(Change::new(caller.id(), self.now()), self.event_ids(), id);
        self.ports
            .conversations
            .delete_conversation(id, caller.id(), self.outbox(events))
            .await?;
        self.committed();
        Ok(())
    }

    /// `NotFound` unless `caller` is a member of the conversation;
    /// `Forbidden` unless they may delete it (a direct conversation's
    /// member, a group conversation's creator or a group owner).
    pub(crate) async fn check_may_delete(
        &self,
        caller: &Contact,
        id: ConversationId,
    ) -> Result<(), ServiceError> {
        let view = self.visible_conversation(caller, id, None).await?;
        let is_group_owner = match view.conversation.group_id() {
            Some(group_id) => self
                .ports
                .groups
                .group_for(caller.id(), group_id)
                .await?
                .is_some_and(|g| g.is_owner(caller.id())),
            None => false,
        };
        view.conversation
            .check_delete(caller.id(), is_group_owner)?;
        Ok(())
    }
}
