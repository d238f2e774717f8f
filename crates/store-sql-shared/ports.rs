//! The port implementations of both SQL stores, written once: each method
//! goes through the one door to the database ([`SqlStore::call`]) and runs
//! one function of `queries.rs` in the right kind of transaction. See
//! `README.md` beside this file.

use async_trait::async_trait;
use confab_domain::{
    Contact, ContactId, ContactProfilePatch, Conversation, ConversationId, ConversationView, Group,
    GroupId, MemberStatePatch, Message, MessageId, Page, Paged, PinnedMessageChange, ReactionName,
    Timestamp,
};
use confab_ports::{
    ContactStore, ConversationFilter, ConversationStore, GroupChange, GroupStore, HealthCheck,
    MessageChange, MessageStore, NewGroup, NewMessage, NewToken, StoreError, TokenStore,
};

use crate::backend::Conn;
use crate::queries as q;
use crate::rows::Error;
use crate::SqlStore;

/// Makes `conn` count every statement it sends into `counter` (the store's
/// `statements_run`). Called once per pooled connection.
pub(crate) fn count_statements(
    conn: &mut Conn,
    counter: std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    use diesel::connection::{Connection as _, InstrumentationEvent};
    conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
        if matches!(event, InstrumentationEvent::StartQuery { .. }) {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
}

impl SqlStore {
    /// The one door to the database: runs `f` on tokio's blocking pool, in
    /// the caller's tracing span. `f` checks out its pooled connection itself,
    /// so a connection never lives across an `.await`.
    async fn call<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&SqlStore) -> Result<T, Error> + Send + 'static,
    {
        let store = self.clone();
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || span.in_scope(|| f(&store)))
            .await
            .map_err(|e| StoreError::Other(format!("store task failed: {e}")))?
            .map_err(Error::into_store)
    }

    /// A single statement, no transaction.
    async fn query<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn) -> Result<T, Error> + Send + 'static,
    {
        self.call(move |store| {
            let mut conn = store.checkout()?;
            f(&mut conn)
        })
        .await
    }

    /// Several reads that must see one consistent snapshot.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn) -> Result<T, Error> + Send + 'static,
    {
        self.call(move |store| store.read_tx(f)).await
    }

    /// A unit of work that writes: it commits entirely or not at all.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn) -> Result<T, Error> + Send + 'static,
    {
        self.call(move |store| store.write_tx(f)).await
    }
}

#[async_trait]
impl HealthCheck for SqlStore {
    async fn ping(&self) -> Result<(), StoreError> {
        self.query(q::ping).await
    }
}

#[async_trait]
impl ContactStore for SqlStore {
    async fn create_contact(&self, contact: Contact) -> Result<Contact, StoreError> {
        self.write(move |c| q::create_contact(c, contact)).await
    }

    async fn contact(&self, id: ContactId) -> Result<Option<Contact>, StoreError> {
        self.query(move |c| q::contact(c, id)).await
    }

    async fn contact_by_username(&self, username: &str) -> Result<Option<Contact>, StoreError> {
        let username = username.to_owned();
        self.query(move |c| q::contact_by_username(c, &username))
            .await
    }

    async fn update_contact(
        &self,
        id: ContactId,
        patch: ContactProfilePatch,
    ) -> Result<Contact, StoreError> {
        self.write(move |c| q::update_contact(c, id, patch)).await
    }

    async fn touch_contact(&self, id: ContactId, at: Timestamp) -> Result<(), StoreError> {
        self.write(move |c| q::touch_contact(c, id, at)).await
    }
}

#[async_trait]
impl TokenStore for SqlStore {
    async fn insert_token(&self, token: NewToken) -> Result<(), StoreError> {
        self.write(move |c| q::insert_token(c, token)).await
    }

    async fn contact_for_token(
        &self,
        hash: &str,
        now: Timestamp,
    ) -> Result<Option<Contact>, StoreError> {
        let hash = hash.to_owned();
        self.query(move |c| q::contact_for_token(c, &hash, now))
            .await
    }

    async fn revoke_tokens(&self, contact_id: ContactId, at: Timestamp) -> Result<u64, StoreError> {
        self.write(move |c| q::revoke_tokens(c, contact_id, at))
            .await
    }
}

#[async_trait]
impl ConversationStore for SqlStore {
    async fn create_conversation(&self, conversation: Conversation) -> Result<(), StoreError> {
        self.write(move |c| q::create_conversation(c, conversation))
            .await
    }

    async fn conversation_for(
        &self,
        viewer: ContactId,
        id: ConversationId,
    ) -> Result<Option<ConversationView>, StoreError> {
        self.query(move |c| q::conversation_for(c, viewer, id))
            .await
    }

    async fn list_conversations(
        &self,
        viewer: ContactId,
        filter: ConversationFilter,
        page: Page<ConversationId>,
    ) -> Result<Paged<ConversationView>, StoreError> {
        self.read(move |c| q::list_conversations(c, viewer, filter, page))
            .await
    }

    async fn open_conversation(
        &self,
        viewer: ContactId,
        id: ConversationId,
        at: Timestamp,
    ) -> Result<ConversationView, StoreError> {
        self.write(move |c| q::open_conversation(c, viewer, id, at))
            .await
    }

    async fn update_conversation(
        &self,
        viewer: ContactId,
        id: ConversationId,
        pinned: Option<PinnedMessageChange>,
        patch: MemberStatePatch,
    ) -> Result<ConversationView, StoreError> {
        self.write(move |c| q::update_conversation(c, viewer, id, pinned, patch))
            .await
    }

    async fn delete_conversation(&self, id: ConversationId) -> Result<(), StoreError> {
        self.write(move |c| q::delete_conversation(c, id)).await
    }
}

#[async_trait]
impl MessageStore for SqlStore {
    async fn append_message(&self, message: NewMessage) -> Result<Message, StoreError> {
        self.write(move |c| q::append_message(c, message)).await
    }

    async fn message_for(
        &self,
        viewer: ContactId,
        id: MessageId,
    ) -> Result<Option<Message>, StoreError> {
        self.read(move |c| q::message_for(c, viewer, id)).await
    }

    async fn list_messages(
        &self,
        viewer: ContactId,
        conversation: Option<ConversationId>,
        page: Page<MessageId>,
    ) -> Result<Paged<Message>, StoreError> {
        self.read(move |c| q::list_messages(c, viewer, conversation, page))
            .await
    }

    async fn update_message(
        &self,
        id: MessageId,
        change: MessageChange,
    ) -> Result<Message, StoreError> {
        self.write(move |c| q::update_message(c, id, change)).await
    }

    async fn remove_reaction(
        &self,
        id: MessageId,
        reactor: ContactId,
        name: ReactionName,
        at: Timestamp,
    ) -> Result<Message, StoreError> {
        self.write(move |c| q::remove_reaction(c, id, reactor, name, at))
            .await
    }

    async fn delete_message(&self, id: MessageId) -> Result<(), StoreError> {
        self.write(move |c| q::delete_message(c, id)).await
    }
}

#[async_trait]
impl GroupStore for SqlStore {
    async fn create_group(&self, group: NewGroup, at: Timestamp) -> Result<Group, StoreError> {
        self.write(move |c| q::create_group(c, group, at)).await
    }

    async fn group_for(&self, viewer: ContactId, id: GroupId) -> Result<Option<Group>, StoreError> {
        self.read(move |c| q::group_for(c, viewer, id)).await
    }

    async fn list_groups(
        &self,
        viewer: ContactId,
        page: Page<GroupId>,
    ) -> Result<Paged<Group>, StoreError> {
        self.read(move |c| q::list_groups(c, viewer, page)).await
    }

    async fn update_group(
        &self,
        id: GroupId,
        change: GroupChange,
        at: Timestamp,
    ) -> Result<Group, StoreError> {
        self.write(move |c| q::update_group(c, id, change, at))
            .await
    }

    async fn delete_group(&self, id: GroupId) -> Result<(), StoreError> {
        self.write(move |c| q::delete_group(c, id)).await
    }
}
