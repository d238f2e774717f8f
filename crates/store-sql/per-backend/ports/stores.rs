//! The `confab-ports` implementations of both SQL stores, written once: each
//! method runs one query function through the door ([`crate::door`]) in the
//! right kind of transaction, but PostgreSQL's hot calls (`pg_async`).

use async_trait::async_trait;
use confab_domain::{
    Attachment, AttachmentId, Contact, ContactId, ContactProfilePatch, Conversation,
    ConversationId, ConversationView, Filename, Group, GroupId, GroupMember, GroupRole,
    MemberStatePatch, Message, MessageId, Page, Paged, PinnedMessageChange, ReactionName,
    Timestamp,
};
use confab_ports::{
    AttachmentFilter, AttachmentStore, ClaimOutcome, ClaimRequest, Completion, ContactStore,
    ConversationFilter, ConversationMember, ConversationStore, ErasePlan, Erasure, GroupChange,
    GroupStore, HealthCheck, IdempotencyStore, KeyClaim, LiveToken, Lookup, MessageChange,
    MessageStore, NewGroup, NewMessage, NewServerKey, NewTicket, NewToken, Outbox, ReactionMade,
    ServerKey, StorageUse, StoreError, StoredResponse, TicketHolder, TokenInfo, TokenStore,
    Uploaded,
};
use uuid::Uuid;

use crate::queries as q;
use confab_store_sql::door::{query, write, write_alone};
use confab_store_sql::queries::{contacts, idempotency};

use crate::Store;

impl Store {
    /// A send (port `append_message`) through the door.
    pub(crate) async fn door_append_message(
        &self,
        message: NewMessage,
        outbox: Outbox,
        completion: Option<Completion<Message>>,
    ) -> Result<Message, StoreError> {
        write(self, move |c| {
            q::append_message(c, message, &outbox, completion)
        })
        .await
    }

    /// A message for its viewer (port `message_for`) through the
    /// door: one statement (the message with its sender and
    /// relations; on SQLite a second for the relations), no
    /// transaction needed, both read committed rows only.
    pub(crate) async fn door_message_for(
        &self,
        viewer: ContactId,
        id: MessageId,
    ) -> Result<Option<Message>, StoreError> {
        query(self, move |c| q::message_for(c, viewer, id)).await
    }

    /// A page of messages (port `list_messages`) through the door.
    /// A page of one conversation is one statement; the feed's
    /// relations take a second, which only completes the first (a
    /// snapshot around them would cost two more).
    pub(crate) async fn door_list_messages(
        &self,
        viewer: ContactId,
        list: confab_ports::MessageList,
        page: Page<MessageId>,
    ) -> Result<Paged<Message>, StoreError> {
        query(self, move |c| q::list_messages(c, viewer, list, page)).await
    }
}

#[async_trait]
impl IdempotencyStore for Store {
    async fn claim_key(&self, request: ClaimRequest) -> Result<ClaimOutcome, StoreError> {
        write_alone(self, move |c| idempotency::claim_key::<Store>(c, request)).await
    }

    async fn complete_key(
        &self,
        claim: KeyClaim,
        response: StoredResponse,
    ) -> Result<bool, StoreError> {
        write_alone(self, move |c| {
            idempotency::complete_key::<Store>(c, claim, response)
        })
        .await
    }

    async fn key_answered(
        &self,
        contact_id: ContactId,
        key: String,
        since: Timestamp,
    ) -> Result<bool, StoreError> {
        query(self, move |c| {
            idempotency::key_answered::<Store>(c, contact_id, &key, since)
        })
        .await
    }

    async fn release_key(&self, claim: KeyClaim) -> Result<(), StoreError> {
        write_alone(self, move |c| idempotency::release_key::<Store>(c, claim)).await
    }

    async fn prune_keys(&self, before: Timestamp) -> Result<u64, StoreError> {
        write_alone(self, move |c| idempotency::prune_keys::<Store>(c, before)).await
    }
}

#[async_trait]
impl HealthCheck for Store {
    /// Within its own deadline (0.8 s): `/readyz` answers in 1 s.
    async fn ping(&self) -> Result<(), StoreError> {
        confab_store_sql::door::ping(self, confab_store_sql::queries::health::ping::<Store>).await
    }

    fn pool_state(&self) -> Option<confab_ports::PoolState> {
        Some(Store::pool_state(self))
    }
}

#[async_trait]
impl ContactStore for Store {
    async fn create_contact(
        &self,
        contact: Contact,
        outbox: Outbox,
    ) -> Result<Contact, StoreError> {
        write(self, move |c| {
            contacts::create_contact::<Store>(c, contact, &outbox)
        })
        .await
    }

    async fn contact(&self, id: ContactId) -> Result<Option<Contact>, StoreError> {
        query(self, move |c| contacts::contact::<Store>(c, id)).await
    }

    async fn contact_by_username(&self, username: &str) -> Result<Option<Contact>, StoreError> {
        let username = username.to_owned();
        query(self, move |c| {
            contacts::contact_by_username::<Store>(c, &username)
        })
        .await
    }

    async fn update_contact(
        &self,
        id: ContactId,
        patch: ContactProfilePatch,
        outbox: Outbox,
    ) -> Result<Contact, StoreError> {
        write(self, move |c| {
            contacts::update_contact::<Store>(c, id, patch, &outbox)
        })
        .await
    }

    async fn touch_contact(&self, id: ContactId, at: Timestamp) -> Result<(), StoreError> {
        write(self, move |c| contacts::touch_contact::<Store>(c, id, at)).await
    }

    async fn list_contacts(
        &self,
        username: Option<String>,
        page: Page<ContactId>,
    ) -> Result<Paged<Contact>, StoreError> {
        query(self, move |c| {
            contacts::list_contacts::<Store>(c, username, page)
        })
        .await
    }

    async fn erase_plan(&self, id: ContactId) -> Result<Option<ErasePlan>, StoreError> {
        query(self, move |c| q::erase_plan(c, id)).await
    }

    async fn erase_contact(&self, erasure: Erasure) -> Result<(), StoreError> {
        write(self, move |c| q::erase_contact(c, erasure)).await
    }

    async fn messages_sent(
        &self,
        contact: ContactId,
        after: Option<MessageId>,
        limit: u32,
    ) -> Result<Vec<Message>, StoreError> {
        query(self, move |c| q::messages_sent(c, contact, after, limit)).await
    }

    async fn reactions_made(
        &self,
        contact: ContactId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<ReactionMade>, StoreError> {
        query(self, move |c| q::reactions_made(c, contact, after, limit)).await
    }
}

#[async_trait]
impl TokenStore for Store {
    async fn insert_token(&self, token: NewToken) -> Result<(), StoreError> {
        write(self, move |c| q::insert_token(c, token)).await
    }

    async fn contact_for_token(
        &self,
        hash: &str,
        now: Timestamp,
    ) -> Result<Lookup<LiveToken>, StoreError> {
        let hash = hash.to_owned();
        query(self, move |c| q::contact_for_token(c, &hash, now)).await
    }

    async fn revoke_tokens(&self, contact_id: ContactId, at: Timestamp) -> Result<u64, StoreError> {
        write(self, move |c| q::revoke_tokens(c, contact_id, at)).await
    }

    async fn revoke_token(&self, id: Uuid, at: Timestamp) -> Result<Option<ContactId>, StoreError> {
        write_alone(self, move |c| q::revoke_token(c, id, at)).await
    }

    async fn list_tokens(
        &self,
        contact_id: ContactId,
        now: Timestamp,
        page: Page<Uuid>,
    ) -> Result<Paged<TokenInfo>, StoreError> {
        query(self, move |c| q::list_tokens(c, contact_id, now, page)).await
    }

    async fn touch_token(&self, hash: &str, at: Timestamp) -> Result<(), StoreError> {
        let hash = hash.to_owned();
        write_alone(self, move |c| q::touch_token(c, &hash, at)).await
    }

    async fn insert_ticket(&self, ticket: NewTicket) -> Result<(), StoreError> {
        write(self, move |c| q::insert_ticket(c, ticket)).await
    }

    async fn ticket_holder(
        &self,
        hash: &str,
        now: Timestamp,
    ) -> Result<Lookup<TicketHolder>, StoreError> {
        let hash = hash.to_owned();
        query(self, move |c| q::ticket_holder(c, &hash, now)).await
    }

    async fn prune_tickets(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError> {
        write_alone(self, move |c| q::prune_tickets(c, before, batch)).await
    }

    async fn insert_server_key(&self, key: NewServerKey) -> Result<(), StoreError> {
        write(self, move |c| q::insert_server_key(c, key)).await
    }

    async fn server_key(&self, hash: &str) -> Result<Option<ServerKey>, StoreError> {
        let hash = hash.to_owned();
        query(self, move |c| q::server_key(c, &hash)).await
    }

    async fn list_server_keys(&self) -> Result<Vec<ServerKey>, StoreError> {
        query(self, q::list_server_keys).await
    }

    async fn revoke_server_key(
        &self,
        id: Uuid,
        at: Timestamp,
    ) -> Result<Option<ServerKey>, StoreError> {
        write(self, move |c| q::revoke_server_key(c, id, at)).await
    }

    async fn touch_server_key(&self, id: Uuid, at: Timestamp) -> Result<(), StoreError> {
        write_alone(self, move |c| q::touch_server_key(c, id, at)).await
    }
}

#[async_trait]
impl ConversationStore for Store {
    async fn create_conversation(
        &self,
        conversation: Conversation,
        outbox: Outbox,
        completion: Option<Completion<()>>,
    ) -> Result<(), StoreError> {
        write(self, move |c| {
            q::create_conversation(c, conversation, &outbox, completion)
        })
        .await
    }

    async fn conversation_members(
        &self,
        id: ConversationId,
        page: Page<ContactId>,
    ) -> Result<Option<Paged<ConversationMember>>, StoreError> {
        query(self, move |c| q::conversation_members(c, id, page)).await
    }

    async fn direct_conversation_between(
        &self,
        a: ContactId,
        b: ContactId,
    ) -> Result<Option<ConversationId>, StoreError> {
        query(self, move |c| q::direct_conversation_between(c, a, b)).await
    }

    async fn conversation_for(
        &self,
        viewer: ContactId,
        id: ConversationId,
    ) -> Result<Option<ConversationView>, StoreError> {
        query(self, move |c| q::conversation_for(c, viewer, id)).await
    }

    async fn list_conversations(
        &self,
        viewer: ContactId,
        filter: ConversationFilter,
        page: Page<ConversationId>,
    ) -> Result<Paged<ConversationView>, StoreError> {
        // One statement (two with a cursor, whose key is read first):
        // no snapshot is worth two more.
        query(self, move |c| {
            q::list_conversations(c, viewer, filter, page)
        })
        .await
    }

    async fn open_conversation(
        &self,
        viewer: ContactId,
        id: ConversationId,
        at: Timestamp,
        outbox: Outbox,
    ) -> Result<ConversationView, StoreError> {
        write(self, move |c| {
            q::open_conversation(c, viewer, id, at, &outbox)
        })
        .await
    }

    async fn update_conversation(
        &self,
        viewer: ContactId,
        id: ConversationId,
        pinned: Option<PinnedMessageChange>,
        patch: MemberStatePatch,
        outbox: Outbox,
    ) -> Result<ConversationView, StoreError> {
        write(self, move |c| {
            q::update_conversation(c, viewer, id, pinned, patch, &outbox)
        })
        .await
    }

    async fn delete_conversation(
        &self,
        id: ConversationId,
        by: ContactId,
        outbox: Outbox,
    ) -> Result<(), StoreError> {
        write(self, move |c| q::delete_conversation(c, id, by, &outbox)).await
    }
}

#[async_trait]
impl MessageStore for Store {
    async fn append_message(
        &self,
        message: NewMessage,
        outbox: Outbox,
        completion: Option<Completion<Message>>,
    ) -> Result<Message, StoreError> {
        self.write_append_message(message, outbox, completion).await
    }

    async fn message_for(
        &self,
        viewer: ContactId,
        id: MessageId,
    ) -> Result<Option<Message>, StoreError> {
        self.read_message_for(viewer, id).await
    }

    async fn list_messages(
        &self,
        viewer: ContactId,
        list: confab_ports::MessageList,
        page: Page<MessageId>,
    ) -> Result<Paged<Message>, StoreError> {
        self.read_list_messages(viewer, list, page).await
    }

    async fn update_message(
        &self,
        id: MessageId,
        change: MessageChange,
        outbox: Outbox,
    ) -> Result<Message, StoreError> {
        write(self, move |c| q::update_message(c, id, change, &outbox)).await
    }

    async fn remove_reaction(
        &self,
        id: MessageId,
        reactor: ContactId,
        name: ReactionName,
        at: Timestamp,
        outbox: Outbox,
    ) -> Result<Message, StoreError> {
        write(self, move |c| {
            q::remove_reaction(c, id, reactor, name, at, &outbox)
        })
        .await
    }

    async fn delete_message(
        &self,
        id: MessageId,
        by: ContactId,
        outbox: Outbox,
    ) -> Result<(), StoreError> {
        write(self, move |c| q::delete_message(c, id, by, &outbox)).await
    }
}

#[async_trait]
impl GroupStore for Store {
    async fn create_group(
        &self,
        group: NewGroup,
        at: Timestamp,
        outbox: Outbox,
        completion: Option<Completion<Group>>,
    ) -> Result<Group, StoreError> {
        write(self, move |c| {
            q::create_group(c, group, at, &outbox, completion)
        })
        .await
    }

    async fn group_for(&self, viewer: ContactId, id: GroupId) -> Result<Option<Group>, StoreError> {
        // The group, then its members: no snapshot needed around them.
        query(self, move |c| q::group_for(c, viewer, id)).await
    }

    async fn list_groups(
        &self,
        viewer: ContactId,
        page: Page<GroupId>,
    ) -> Result<Paged<Group>, StoreError> {
        query(self, move |c| q::list_groups(c, viewer, page)).await
    }

    async fn member_roles(
        &self,
        id: GroupId,
        contacts: Vec<ContactId>,
    ) -> Result<Vec<(ContactId, GroupRole)>, StoreError> {
        query(self, move |c| q::member_roles(c, id, &contacts)).await
    }

    async fn group_members(
        &self,
        viewer: ContactId,
        id: GroupId,
        page: Page<ContactId>,
    ) -> Result<Option<Paged<GroupMember>>, StoreError> {
        query(self, move |c| q::group_members_page(c, viewer, id, page)).await
    }

    async fn update_group(
        &self,
        id: GroupId,
        change: GroupChange,
        at: Timestamp,
        outbox: Outbox,
    ) -> Result<Group, StoreError> {
        write(self, move |c| q::update_group(c, id, change, at, &outbox)).await
    }

    async fn delete_group(&self, id: GroupId, outbox: Outbox) -> Result<(), StoreError> {
        write(self, move |c| q::delete_group(c, id, &outbox)).await
    }
}

#[async_trait]
impl AttachmentStore for Store {
    async fn expect_file(&self, id: AttachmentId, due: Timestamp) -> Result<(), StoreError> {
        write_alone(self, move |c| q::expect_file(c, id, due)).await
    }

    async fn insert_upload(
        &self,
        upload: Attachment,
        quota: Option<u64>,
        outbox: Outbox,
        completion: Option<Completion<Attachment>>,
    ) -> Result<Uploaded, StoreError> {
        write(self, move |c| {
            q::insert_upload(c, upload, quota, &outbox, completion)
        })
        .await
    }

    async fn storage_use(&self, contact: ContactId) -> Result<StorageUse, StoreError> {
        query(self, move |c| q::storage_use(c, contact)).await
    }

    async fn storage_total(&self) -> Result<StorageUse, StoreError> {
        query(self, q::storage_total).await
    }

    async fn attachment_for(
        &self,
        viewer: ContactId,
        id: AttachmentId,
    ) -> Result<Option<Attachment>, StoreError> {
        query(self, move |c| q::attachment_for(c, viewer, id)).await
    }

    async fn attachment(&self, id: AttachmentId) -> Result<Option<Attachment>, StoreError> {
        query(self, move |c| q::attachment(c, id)).await
    }

    async fn list_attachments(
        &self,
        viewer: ContactId,
        filter: AttachmentFilter,
        page: Page<AttachmentId>,
    ) -> Result<Paged<Attachment>, StoreError> {
        query(self, move |c| q::list_attachments(c, viewer, filter, page)).await
    }

    async fn rename_attachment(
        &self,
        id: AttachmentId,
        by: ContactId,
        filename: Filename,
        outbox: Outbox,
    ) -> Result<Attachment, StoreError> {
        write(self, move |c| {
            q::rename_attachment(c, id, by, filename, &outbox)
        })
        .await
    }

    async fn delete_attachment(
        &self,
        id: AttachmentId,
        by: ContactId,
        outbox: Outbox,
    ) -> Result<(), StoreError> {
        write(self, move |c| q::delete_attachment(c, id, by, &outbox)).await
    }

    async fn due_file_deletions(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<AttachmentId>, StoreError> {
        query(self, move |c| q::due_file_deletions(c, now, limit)).await
    }

    async fn release_file(&self, id: AttachmentId, outbox: Outbox) -> Result<bool, StoreError> {
        write(self, move |c| q::release_file(c, id, &outbox)).await
    }

    async fn forget_file_deletion(&self, id: AttachmentId) -> Result<(), StoreError> {
        write_alone(self, move |c| q::forget_file_deletion(c, id)).await
    }

    async fn shared_secret(&self, name: &str, fresh: String) -> Result<String, StoreError> {
        let name = name.to_owned();
        write_alone(self, move |c| q::shared_secret(c, &name, fresh)).await
    }
}

#[async_trait]
impl confab_ports::DepthStore for Store {
    async fn members_among(
        &self,
        conversation: ConversationId,
        contacts: Vec<ContactId>,
    ) -> Result<Vec<ContactId>, StoreError> {
        query(self, move |c| q::members_among(c, conversation, &contacts)).await
    }

    async fn message_edits(
        &self,
        viewer: ContactId,
        message: MessageId,
        page: Page<confab_domain::EditId>,
    ) -> Result<Paged<confab_domain::MessageEdit>, StoreError> {
        query(self, move |c| q::message_edits(c, viewer, message, page)).await
    }
}

#[async_trait]
impl confab_ports::SearchStore for Store {
    async fn search_messages(
        &self,
        viewer: ContactId,
        query_text: confab_domain::SearchQuery,
        filter: confab_ports::SearchFilter,
        page: Page<MessageId>,
    ) -> Result<Paged<Message>, StoreError> {
        // On searches' own share of the database, never the pool's.
        confab_store_sql::door::search(self, move |c| {
            q::search_messages(c, viewer, query_text, filter, page)
        })
        .await
    }
}
