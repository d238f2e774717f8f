//! Finding contacts and changing one's own profile; for the server API,
//! listing and changing any contact.

use confab_domain::{
    contact_updated, conversation_deleted, group_deleted, group_updated, message_deleted, Change,
    Contact, ContactId, ContactProfilePatch, ConversationId, Message, MessageId, Page, PageLimit,
    Paged,
};
use confab_ports::{ConversationMember, Erasure, ReactionMade};

/// The largest conversation whose `message.created` webhook deliveries
/// name the members to notify (`recipients`).
pub const PUSH_RECIPIENTS_MAX: i64 = 100;

use crate::error::page_error;
use crate::{Confab, ServiceError};

impl Confab {
    /// Any contact by id (contacts are how clients find someone to talk to).
    pub async fn contact(&self, _caller: &Contact, id: ContactId) -> Result<Contact, ServiceError> {
        self.ports
            .contacts
            .contact(id)
            .await?
            .ok_or(ServiceError::not_found())
    }

    /// Zero or one contact with this username (case-insensitive).
    pub async fn find_contacts(
        &self,
        _caller: &Contact,
        username: &str,
    ) -> Result<Vec<Contact>, ServiceError> {
        Ok(self
            .ports
            .contacts
            .contact_by_username(username)
            .await?
            .into_iter()
            .collect())
    }

    /// A page of every contact, newest first; with `username`, only that
    /// contact (case-insensitive). Server API only.
    pub async fn list_contacts(
        &self,
        username: Option<&str>,
        page: Page<ContactId>,
    ) -> Result<Paged<Contact>, ServiceError> {
        self.ports
            .contacts
            .list_contacts(username.map(str::to_owned), page)
            .await
            .map_err(|e| page_error(&page, e))
    }

    /// Any contact by id, for the server API.
    pub async fn contact_by_id(&self, id: ContactId) -> Result<Contact, ServiceError> {
        self.ports
            .contacts
            .contact(id)
            .await?
            .ok_or(ServiceError::not_found())
    }

    /// Changes a contact's phone number and avatar (server API); the
    /// `contact.updated` event names no actor contact but the contact
    /// itself, as the contact's own change would.
    pub async fn update_contact(
        &self,
        id: ContactId,
        patch: ContactProfilePatch,
    ) -> Result<Contact, ServiceError> {
        let current = self.contact_by_id(id).await?;
        self.update_me(&current, patch).await
    }

    /// A page of a conversation's members with their mute state and unread
    /// count (server API). `NotFound` when there is no such conversation.
    pub async fn conversation_members(
        &self,
        id: ConversationId,
        page: Page<ContactId>,
    ) -> Result<Paged<ConversationMember>, ServiceError> {
        self.ports
            .conversations
            .conversation_members(id, page)
            .await
            .map_err(|e| page_error(&page, e))?
            .ok_or(ServiceError::not_found())
    }

    /// Whom to notify of a new message of `sender` in `conversation` (the
    /// `recipients` of a `message.created` webhook delivery, docs/api.md
    /// "Server API: from an app's backend"): its members but the sender and those who muted it;
    /// `None` when it has more than [`PUSH_RECIPIENTS_MAX`] members (the
    /// backend pages them instead); none when it is gone.
    pub async fn push_recipients(
        &self,
        conversation: ConversationId,
        sender: ContactId,
    ) -> Result<Option<Vec<ContactId>>, ServiceError> {
        let all = Page {
            limit: PageLimit::new(PUSH_RECIPIENTS_MAX).map_err(ServiceError::from)?,
            cursor: None,
        };
        Ok(
            match self
                .ports
                .conversations
                .conversation_members(conversation, all)
                .await?
            {
                None => Some(Vec::new()),
                Some(members) if members.has_more => None,
                Some(members) => Some(
                    members
                        .items
                        .into_iter()
                        .filter(|m| m.contact.id() != sender && !m.is_muted)
                        .map(|m| m.contact.id())
                        .collect(),
                ),
            },
        )
    }

    /// The last step of contact `id`'s erase ([`Confab::erase_contact`]),
    /// once its batches took its messages: its direct conversations are
    /// deleted (`conversation.deleted` to the peer), what it wrote in
    /// groups since is deleted (`message.deleted`), it leaves every group
    /// (`group.updated`; a group it was alone in is deleted), and the rest
    /// of it goes. One transaction. A contact already gone is done.
    pub(crate) async fn erase_rest(&self, id: ContactId) -> Result<(), ServiceError> {
        let Some(plan) = self.ports.contacts.erase_plan(id).await? else {
            return Ok(());
        };
        let now = self.now();
        let change = || Change::new(id, now);
        let mut events =
            Vec::with_capacity(plan.direct_conversations.len() + plan.group_messages.len());
        for c in &plan.direct_conversations {
            events.extend(conversation_deleted(change(), self.event_ids(), *c));
        }
        for (m, c) in &plan.group_messages {
            events.extend(message_deleted(change(), self.event_ids(), *m, *c));
        }
        let mut groups = Vec::new();
        for g in &plan.groups_left {
            let left = group_updated(change(), self.event_ids(), *g, &[id]);
            groups.push((*g, self.outbox(left)));
        }
        for g in &plan.groups_deleted {
            groups.push((
                *g,
                self.outbox(group_deleted(change(), self.event_ids(), *g)),
            ));
        }
        let erasure = Erasure {
            contact: id,
            plan,
            outbox: self.outbox(events),
            groups,
            at: now,
        };
        match self.ports.contacts.erase_contact(erasure).await {
            // Gone already: a batch before a restart did it.
            Ok(()) | Err(confab_ports::StoreError::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
        self.committed();
        Ok(())
    }

    /// A page of the messages `contact` sent, oldest first, after `after`
    /// (its export; server API).
    pub async fn export_messages(
        &self,
        contact: ContactId,
        after: Option<MessageId>,
        limit: u32,
    ) -> Result<Vec<Message>, ServiceError> {
        Ok(self
            .ports
            .contacts
            .messages_sent(contact, after, limit)
            .await?)
    }

    /// A page of the reactions `contact` made, in order, after the one
    /// numbered `after` (its export; server API).
    pub async fn export_reactions(
        &self,
        contact: ContactId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<ReactionMade>, ServiceError> {
        Ok(self
            .ports
            .contacts
            .reactions_made(contact, after, limit)
            .await?)
    }

    /// Changes the caller's own phone number and avatar.
    pub async fn update_me(
        &self,
        caller: &Contact,
        patch: ContactProfilePatch,
    ) -> Result<Contact, ServiceError> {
        if patch.is_empty() {
            return Ok(caller.clone());
        }
        let events = contact_updated(
            Change::new(caller.id(), self.now()),
            self.event_ids(),
            caller.id(),
        );
        let contact = self
            .ports
            .contacts
            .update_contact(caller.id(), patch, self.outbox(events))
            .await?;
        self.committed();
        // The caller's next requests see the new profile at once.
        self.tokens.refresh(&contact);
        self.keys.forget_contact(contact.id());
        Ok(contact)
    }
}
