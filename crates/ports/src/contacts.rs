//! Contacts: the users of the service, their export and their erasure.

use async_trait::async_trait;
use confab_domain::{
    Contact, ContactId, ContactProfilePatch, ConversationId, GroupId, Message, MessageId, Page,
    Paged, Timestamp,
};

use crate::{Outbox, StoreError};

/// Contacts: the users of the service.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait ContactStore: Send + Sync {
    /// Stores a new contact, with the `outbox`'s events (`contact.created`).
    /// # Errors
    /// - MUST return `Conflict` when the username is taken in any letter case.
    async fn create_contact(&self, contact: Contact, outbox: Outbox)
        -> Result<Contact, StoreError>;
    /// The contact with this id, if any.
    async fn contact(&self, id: ContactId) -> Result<Option<Contact>, StoreError>;
    /// The contact with this username compared case-insensitively, if any.
    async fn contact_by_username(&self, username: &str) -> Result<Option<Contact>, StoreError>;
    /// Changes the submitted profile attributes; returns the contact. Writes
    /// the `outbox`'s events (`contact.updated`, payload the contact as
    /// returned) when a submitted value differs from the stored one (the
    /// same values again write nothing).
    /// # Errors
    /// - MUST return `NotFound` when the contact does not exist.
    async fn update_contact(
        &self,
        id: ContactId,
        patch: ContactProfilePatch,
        outbox: Outbox,
    ) -> Result<Contact, StoreError>;
    /// Records activity: sets `last_active_at` to `at` if it is later. No
    /// event: activity is recorded on requests, an event each would flood
    /// every stream.
    async fn touch_contact(&self, id: ContactId, at: Timestamp) -> Result<(), StoreError>;
    /// A page of every contact, newest first (`created_at` desc, id desc);
    /// with `username`, only the contact of that username compared
    /// case-insensitively (at most one). For the server API, never for
    /// contacts: they find each other by username only.
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not a contact.
    async fn list_contacts(
        &self,
        username: Option<String>,
        page: Page<ContactId>,
    ) -> Result<Paged<Contact>, StoreError>;
    /// What erasing the contact will delete and change, from which the
    /// erase's events are made; `None` when there is no such contact.
    async fn erase_plan(&self, id: ContactId) -> Result<Option<ErasePlan>, StoreError>;
    /// Erases the contact (the right to be forgotten, docs/api.md "Server API: from an app's backend"),
    /// in one transaction: its direct conversations, its messages in
    /// groups, its memberships (a group it was the only member of is
    /// deleted; one whose last owner it was passes ownership to its oldest
    /// admin, else its oldest member), its reactions, states, tokens and
    /// idempotency keys, and the contact. What others wrote stays; every
    /// kept event or stored answer that showed the contact keeps nothing of
    /// it. Whatever the contact wrote after the plan was read goes too
    /// (without an event of its own).
    /// # Errors
    /// - MUST return `NotFound` when there is no such contact.
    async fn erase_contact(&self, erasure: Erasure) -> Result<(), StoreError>;
    /// The messages `contact` sent, oldest first (by id), at most `limit`
    /// after `after` (from the first when `None`): a page of its export.
    async fn messages_sent(
        &self,
        contact: ContactId,
        after: Option<MessageId>,
        limit: u32,
    ) -> Result<Vec<Message>, StoreError>;
    /// The reactions `contact` made, in the order made, at most `limit`
    /// after the one numbered `after` (0: from the first): a page of its
    /// export.
    async fn reactions_made(
        &self,
        contact: ContactId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<ReactionMade>, StoreError>;
}

/// A reaction a contact made, as its export lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReactionMade {
    /// Its number: the order reactions were made in (a page cursor).
    pub seq: i64,
    /// The message reacted to.
    pub message_id: MessageId,
    /// The reaction's name.
    pub name: String,
    /// When it was made.
    pub created_at: Timestamp,
}

/// What erasing a contact touches ([`ContactStore::erase_plan`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErasePlan {
    /// Its direct conversations: deleted (`conversation.deleted`).
    pub direct_conversations: Vec<ConversationId>,
    /// The messages it sent in group conversations: deleted
    /// (`message.deleted`), each with its conversation.
    pub group_messages: Vec<(MessageId, ConversationId)>,
    /// The groups it leaves (`group.updated`).
    pub groups_left: Vec<GroupId>,
    /// The groups it was the only member of: deleted (`group.deleted`).
    pub groups_deleted: Vec<GroupId>,
}

/// An erase to carry out ([`ContactStore::erase_contact`]).
#[derive(Clone)]
pub struct Erasure {
    /// The contact erased.
    pub contact: ContactId,
    /// The plan its events were made from.
    pub plan: ErasePlan,
    /// `conversation.deleted` of its direct conversations and
    /// `message.deleted` of its group messages.
    pub outbox: Outbox,
    /// Each group's own event (`group.updated` when it leaves,
    /// `group.deleted` when the group goes with it).
    pub groups: Vec<(GroupId, Outbox)>,
    /// When it is done.
    pub at: Timestamp,
}
