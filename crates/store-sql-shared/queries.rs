//! Every query of the SQL stores, written once in diesel's DSL and compiled
//! into both `confab-store-postgres` and `confab-store-sqlite` against their
//! own `crate::backend` (connection type, id type, row locks, transactions).
//! See `README.md` beside this file.
//!
//! Each function is synchronous and runs inside the transaction its caller
//! (`ports.rs`) opened. Lists page by keyset over an index, never by OFFSET:
//! they fetch `limit + 1` rows to learn whether more lie beyond.

use std::collections::HashMap;

use confab_domain::{
    check_attachment_count, check_reaction_name_count, AttachmentId, AvatarUrl, Contact, ContactId,
    ContactProfilePatch, Conversation, ConversationId, ConversationView, Cursor, DomainError,
    Field, FileSize, Group, GroupDescription, GroupId, GroupMember, GroupName, GroupRole,
    MemberState, MemberStatePatch, Message, MessageId, MessageText, NewAttachment, Page, Paged,
    PinnedMessageChange, Reaction, ReactionName, Reactor, Rule, Timestamp, Username,
};
use confab_ports::{
    ConversationFilter, GroupChange, MessageChange, NewGroup, NewMessage, NewToken, StoreError,
};
use diesel::dsl::{exists, max};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};

use crate::backend::{self, Conn, Db, DbId};
use crate::rows::{
    contact_id, conversation_id, corrupt, group_id, message_id, ts, AttachmentRow,
    ContactChangeset, ContactRow, ConversationRow, DbKey, Error, GroupChangeset, GroupMemberRow,
    GroupRow, MessageRow, NewReactionRow, StateChangeset, StateRow, TokenRow,
};
use crate::schema::{
    attachments, contacts, conversation_states, conversations, group_members, groups, messages,
    reactions, tokens,
};

type Result<T> = std::result::Result<T, Error>;

// ---------------------------------------------------------------------------
// Paging
// ---------------------------------------------------------------------------

/// Where a page starts, resolved to the sort key of its cursor item.
enum Seek<K> {
    First,
    After(K),
    Before(K),
}

impl<K> Seek<K> {
    fn backwards(&self) -> bool {
        matches!(self, Self::Before(_))
    }
}

/// Resolves a cursor to its item's sort key with `key_of`, which must look
/// the item up in the very list being paged (same viewer, same filters).
fn seek<Id, K>(
    cursor: Option<Cursor<Id>>,
    key_of: impl FnOnce(Id) -> Result<Option<K>>,
) -> Result<Seek<K>> {
    let missing = || Error::Store(StoreError::CursorNotFound);
    Ok(match cursor {
        None => Seek::First,
        Some(Cursor::After(id)) => Seek::After(key_of(id)?.ok_or_else(missing)?),
        Some(Cursor::Before(id)) => Seek::Before(key_of(id)?.ok_or_else(missing)?),
    })
}

/// Rows fetched with `limit + 1`: cut to the page, learn `has_more`, and put a
/// backwards page back into list order.
fn finish_page<T>(mut rows: Vec<T>, limit: usize, backwards: bool) -> (Vec<T>, bool) {
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    if backwards {
        rows.reverse();
    }
    (rows, has_more)
}

fn fetch_size<Id>(page: &Page<Id>) -> (usize, i64) {
    let n = page.limit.get();
    (usize::from(n), i64::from(n) + 1)
}

/// Orders a boxed list query by `($a, $b)` descending (every list's order)
/// and applies a resolved [`Seek`]: strictly after the key in list order, or
/// strictly before it, which runs in reverse order (the rows are turned
/// back by [`finish_page`]). The tuple comparison is spelled out (both
/// databases understand it), with a redundant bound on `$a` alone that lets
/// the index scan start at the cursor instead of filtering its way there.
macro_rules! keyset {
    ($q:expr, $a:expr, $b:expr, $seek:expr) => {
        match $seek {
            Seek::First => $q.order(($a.desc(), $b.desc())),
            Seek::After((ka, kb)) => $q
                .filter($a.le(ka))
                .filter($a.lt(ka).or($a.eq(ka).and($b.lt(kb))))
                .order(($a.desc(), $b.desc())),
            Seek::Before((ka, kb)) => $q
                .filter($a.ge(ka))
                .filter($a.gt(ka).or($a.eq(ka).and($b.gt(kb))))
                .order(($a.asc(), $b.asc())),
        }
    };
}

// ---------------------------------------------------------------------------
// Membership
// ---------------------------------------------------------------------------

/// The predicate "`$viewer` is a member of this conversation": its creator or
/// peer (direct only), or a current member of its group (live membership, a join,
/// never a copy). A macro because diesel's expression types are unnameable.
macro_rules! visible_to {
    ($viewer:expr) => {
        // A direct conversation's members are its creator and its peer; a
        // group conversation's are the group's members right now, so its
        // creator loses it on leaving the group.
        conversations::group_id
            .is_null()
            .and(
                conversations::creator_id
                    .eq($viewer)
                    .or(conversations::peer_id.eq($viewer)),
            )
            .or(conversations::group_id.eq_any(
                group_members::table
                    .filter(group_members::contact_id.eq($viewer))
                    .select(group_members::group_id.nullable()),
            ))
    };
}

/// The viewer's conversations joined with the viewer's own state row (absent
/// for a group member who never changed anything), with `filter` applied, as
/// a boxed query.
macro_rules! conversation_list {
    ($viewer:expr, $filter:expr) => {{
        let viewer: DbId = $viewer;
        let filter: &ConversationFilter = $filter;
        let mut q = conversations::table
            .left_join(
                conversation_states::table.on(conversation_states::conversation_id
                    .eq(conversations::id)
                    .and(conversation_states::contact_id.eq(viewer))),
            )
            .filter(visible_to!(viewer))
            .into_boxed::<Db>();
        // An absent state row reads as the default state: not muted, not
        // archived, not pinned.
        if let Some(muted) = filter.muted {
            q = if muted {
                q.filter(conversation_states::is_muted.eq(true))
            } else {
                q.filter(
                    conversation_states::is_muted
                        .is_null()
                        .or(conversation_states::is_muted.eq(false)),
                )
            };
        }
        if let Some(pinned) = filter.pinned {
            q = if pinned {
                q.filter(conversation_states::is_pinned.eq(true))
            } else {
                q.filter(
                    conversation_states::is_pinned
                        .is_null()
                        .or(conversation_states::is_pinned.eq(false)),
                )
            };
        }
        if let Some(archived) = filter.archived {
            q = if archived {
                q.filter(conversation_states::archived_at.is_not_null())
            } else {
                q.filter(conversation_states::archived_at.is_null())
            };
        }
        if let Some(group) = filter.group_id {
            q = q.filter(conversations::group_id.eq(group.db()));
        }
        q
    }};
}

/// Messages of the viewer's conversations (optionally of one), boxed.
macro_rules! message_list {
    ($viewer:expr, $only:expr) => {{
        let viewer: DbId = $viewer;
        let only: Option<DbId> = $only;
        let mut q = messages::table
            .filter(
                messages::conversation_id.eq_any(
                    conversations::table
                        .filter(visible_to!(viewer))
                        .select(conversations::id),
                ),
            )
            .into_boxed::<Db>();
        if let Some(c) = only {
            q = q.filter(messages::conversation_id.eq(c));
        }
        q
    }};
}

/// The groups the viewer belongs to, boxed.
macro_rules! group_list {
    ($viewer:expr) => {{
        let viewer: DbId = $viewer;
        groups::table
            .filter(
                groups::id.eq_any(
                    group_members::table
                        .filter(group_members::contact_id.eq(viewer))
                        .select(group_members::group_id),
                ),
            )
            .into_boxed::<Db>()
    }};
}

fn is_member(conn: &mut Conn, viewer: DbId, conversation: DbId) -> Result<bool> {
    Ok(diesel::select(exists(
        conversations::table
            .filter(conversations::id.eq(conversation))
            .filter(visible_to!(viewer)),
    ))
    .get_result(conn)?)
}

fn contact_exists(conn: &mut Conn, id: DbId) -> Result<bool> {
    Ok(diesel::select(exists(contacts::table.find(id))).get_result(conn)?)
}

/// How many of `ids` (distinct) are existing contacts.
fn count_known_contacts(conn: &mut Conn, ids: &[DbId]) -> Result<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    let known: Vec<DbId> = contacts::table
        .filter(contacts::id.eq_any(ids))
        .select(contacts::id)
        .load(conn)?;
    Ok(known.len())
}

fn not_found() -> Error {
    Error::Store(StoreError::NotFound)
}

/// `ids` without duplicates and without `skip`, first occurrence kept.
fn distinct_except<T: PartialEq + Copy>(ids: &[T], skip: Option<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(ids.len());
    for id in ids {
        if Some(*id) != skip && !out.contains(id) {
            out.push(*id);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Health
// ---------------------------------------------------------------------------

pub(crate) fn ping(conn: &mut Conn) -> Result<()> {
    diesel::sql_query("SELECT 1").execute(conn)?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Contacts
// ---------------------------------------------------------------------------

pub(crate) fn create_contact(conn: &mut Conn, contact: Contact) -> Result<Contact> {
    let inserted = diesel::insert_into(contacts::table)
        .values(&ContactRow::from(&contact))
        .execute(conn);
    match inserted {
        Ok(_) => Ok(contact),
        Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info))
            if info.message().contains("username_folded") =>
        {
            Err(StoreError::Conflict(format!("username {} is taken", contact.username)).into())
        }
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn contact(conn: &mut Conn, id: ContactId) -> Result<Option<Contact>> {
    contacts::table
        .find(id.db())
        .select(ContactRow::as_select())
        .first(conn)
        .optional()?
        .map(Contact::try_from)
        .transpose()
}

pub(crate) fn contact_by_username(conn: &mut Conn, username: &str) -> Result<Option<Contact>> {
    // Folded exactly like `Username::folded`, which filled the column.
    contacts::table
        .filter(contacts::username_folded.eq(username.to_ascii_lowercase()))
        .select(ContactRow::as_select())
        .first(conn)
        .optional()?
        .map(Contact::try_from)
        .transpose()
}

pub(crate) fn update_contact(
    conn: &mut Conn,
    id: ContactId,
    patch: ContactProfilePatch,
) -> Result<Contact> {
    if !patch.is_empty() {
        let changes = ContactChangeset {
            phone_number: patch.phone_number.map(|p| p.into_inner()),
            avatar_url: patch.avatar_url.map(|a| a.into_inner()),
        };
        let n = diesel::update(contacts::table.find(id.db()))
            .set(&changes)
            .execute(conn)?;
        if n == 0 {
            return Err(not_found());
        }
    }
    contact(conn, id)?.ok_or_else(not_found)
}

pub(crate) fn touch_contact(conn: &mut Conn, id: ContactId, at: Timestamp) -> Result<()> {
    // Only forward: a late request must not move activity back in time.
    diesel::update(
        contacts::table
            .filter(contacts::id.eq(id.db()))
            .filter(contacts::last_active_at.lt(at.micros())),
    )
    .set(contacts::last_active_at.eq(at.micros()))
    .execute(conn)?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

pub(crate) fn insert_token(conn: &mut Conn, token: NewToken) -> Result<()> {
    let owner = token.contact_id.db();
    if !contact_exists(conn, owner)? {
        return Err(not_found());
    }
    diesel::insert_into(tokens::table)
        .values(&TokenRow {
            id: token.id.db(),
            contact_id: owner,
            token_hash: token.hash,
            created_at: token.created_at.micros(),
            expires_at: token.expires_at.map(Timestamp::micros),
            revoked_at: None,
        })
        .execute(conn)?;
    Ok(())
}

pub(crate) fn contact_for_token(
    conn: &mut Conn,
    hash: &str,
    now: Timestamp,
) -> Result<Option<Contact>> {
    tokens::table
        .inner_join(contacts::table)
        .filter(tokens::token_hash.eq(hash))
        .filter(tokens::revoked_at.is_null())
        .filter(
            tokens::expires_at
                .is_null()
                .or(tokens::expires_at.gt(now.micros())),
        )
        .select(ContactRow::as_select())
        .first(conn)
        .optional()?
        .map(Contact::try_from)
        .transpose()
}

pub(crate) fn revoke_tokens(conn: &mut Conn, owner: ContactId, at: Timestamp) -> Result<u64> {
    let n = diesel::update(
        tokens::table
            .filter(tokens::contact_id.eq(owner.db()))
            .filter(tokens::revoked_at.is_null())
            .filter(
                tokens::expires_at
                    .is_null()
                    .or(tokens::expires_at.gt(at.micros())),
            ),
    )
    .set(tokens::revoked_at.eq(Some(at.micros())))
    .execute(conn)?;
    Ok(n as u64)
}

// ---------------------------------------------------------------------------
// Conversations
// ---------------------------------------------------------------------------

fn to_view(
    viewer: ContactId,
    row: ConversationRow,
    state: Option<StateRow>,
) -> Result<ConversationView> {
    Ok(ConversationView {
        conversation: Conversation::try_from(row)?,
        viewer,
        state: state.map(MemberState::from).unwrap_or_default(),
    })
}

pub(crate) fn create_conversation(conn: &mut Conn, conversation: Conversation) -> Result<()> {
    let row = ConversationRow::from(&conversation);
    let target_exists = match (row.peer_id, row.group_id) {
        (Some(peer), _) => contact_exists(conn, peer)?,
        (None, Some(group)) => {
            diesel::select(exists(groups::table.find(group))).get_result::<bool>(conn)?
        }
        (None, None) => false,
    };
    if !target_exists {
        return Err(not_found());
    }
    diesel::insert_into(conversations::table)
        .values(&row)
        .execute(conn)?;
    // Both members of a direct conversation get their state row now; a group
    // member's row is made on its first change.
    if let Some(members) = conversation.direct_members() {
        let states: Vec<StateRow> = distinct_except(&members, None)
            .into_iter()
            .map(|m| StateRow::new(row.id, m.db(), MemberState::default()))
            .collect();
        diesel::insert_into(conversation_states::table)
            .values(&states)
            .execute(conn)?;
    }
    Ok(())
}

pub(crate) fn conversation_for(
    conn: &mut Conn,
    viewer: ContactId,
    id: ConversationId,
) -> Result<Option<ConversationView>> {
    let row: Option<(ConversationRow, Option<StateRow>)> =
        conversation_list!(viewer.db(), &ConversationFilter::default())
            .filter(conversations::id.eq(id.db()))
            .select((
                ConversationRow::as_select(),
                Option::<StateRow>::as_select(),
            ))
            .first(conn)
            .optional()?;
    row.map(|(c, s)| to_view(viewer, c, s)).transpose()
}

pub(crate) fn list_conversations(
    conn: &mut Conn,
    viewer: ContactId,
    filter: ConversationFilter,
    page: Page<ConversationId>,
) -> Result<Paged<ConversationView>> {
    let v = viewer.db();
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: ConversationId| {
        Ok(conversation_list!(v, &filter)
            .filter(conversations::id.eq(id.db()))
            .select((conversations::activity_at, conversations::id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let rows: Vec<(ConversationRow, Option<StateRow>)> = keyset!(
        conversation_list!(v, &filter),
        conversations::activity_at,
        conversations::id,
        seek
    )
    .select((
        ConversationRow::as_select(),
        Option::<StateRow>::as_select(),
    ))
    .limit(fetch)
    .load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    let items = rows
        .into_iter()
        .map(|(c, s)| to_view(viewer, c, s))
        .collect::<Result<Vec<_>>>()?;
    Ok(Paged { items, has_more })
}

pub(crate) fn open_conversation(
    conn: &mut Conn,
    viewer: ContactId,
    id: ConversationId,
    at: Timestamp,
) -> Result<ConversationView> {
    let (v, c) = (viewer.db(), id.db());
    if !is_member(conn, v, c)? {
        return Err(not_found());
    }
    let opened = MemberState {
        last_opened_at: Some(at),
        ..MemberState::default()
    };
    diesel::insert_into(conversation_states::table)
        .values(&StateRow::new(c, v, opened))
        .on_conflict((
            conversation_states::conversation_id,
            conversation_states::contact_id,
        ))
        .do_update()
        .set(conversation_states::last_opened_at.eq(Some(at.micros())))
        .execute(conn)?;
    diesel::update(
        messages::table
            .filter(messages::conversation_id.eq(c))
            .filter(messages::sender_id.ne(v))
            .filter(messages::read_at.is_null()),
    )
    .set(messages::read_at.eq(Some(at.micros())))
    .execute(conn)?;
    conversation_for(conn, viewer, id)?.ok_or_else(not_found)
}

pub(crate) fn update_conversation(
    conn: &mut Conn,
    viewer: ContactId,
    id: ConversationId,
    pinned: Option<PinnedMessageChange>,
    patch: MemberStatePatch,
) -> Result<ConversationView> {
    let (v, c) = (viewer.db(), id.db());
    if !is_member(conn, v, c)? {
        return Err(not_found());
    }
    if let Some(change) = pinned {
        let target = match change {
            PinnedMessageChange::Pin(m) => {
                // Locked so that it cannot be deleted before this commits.
                let message = backend::lock_message(conn, m.db())?;
                if message.map(|r| r.conversation_id) != Some(c) {
                    return Err(DomainError::breaks(
                        Field::PinnedMessage,
                        Rule::OutsideConversation,
                    )
                    .into());
                }
                Some(m.db())
            }
            PinnedMessageChange::Unpin => None,
        };
        diesel::update(conversations::table.find(c))
            .set(conversations::pinned_message_id.eq(target))
            .execute(conn)?;
    }
    if !patch.is_empty() {
        // Only the submitted columns change, also when two requests race.
        let changes = StateChangeset {
            is_pinned: patch.is_pinned,
            is_muted: patch.is_muted,
            archived_at: patch.archived_at.map(|a| a.map(Timestamp::micros)),
        };
        let fresh = MemberState::default().patched(&patch);
        diesel::insert_into(conversation_states::table)
            .values(&StateRow::new(c, v, fresh))
            .on_conflict((
                conversation_states::conversation_id,
                conversation_states::contact_id,
            ))
            .do_update()
            .set(&changes)
            .execute(conn)?;
    }
    conversation_for(conn, viewer, id)?.ok_or_else(not_found)
}

pub(crate) fn delete_conversation(conn: &mut Conn, id: ConversationId) -> Result<()> {
    // Messages, their reactions and attachments, and the members' states go
    // with it (ON DELETE CASCADE).
    let n = diesel::delete(conversations::table.find(id.db())).execute(conn)?;
    if n == 0 {
        return Err(not_found());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

/// Loads senders, reactions (with the reactors' usernames) and attachments
/// for all `rows` with one query each, and assembles the messages in order.
fn hydrate(conn: &mut Conn, rows: Vec<MessageRow>) -> Result<Vec<Message>> {
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
                Error::Store(StoreError::Other(format!(
                    "sender of message {} is missing",
                    message_id(r.id)
                )))
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

fn load_message(conn: &mut Conn, id: DbId) -> Result<Option<Message>> {
    let rows: Vec<MessageRow> = messages::table
        .find(id)
        .select(MessageRow::as_select())
        .load(conn)?;
    Ok(hydrate(conn, rows)?.pop())
}

fn insert_attachments(
    conn: &mut Conn,
    message: DbId,
    first_seq: i32,
    list: &[(AttachmentId, NewAttachment)],
    at: Timestamp,
) -> Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    let rows: Vec<AttachmentRow> = list
        .iter()
        .zip(first_seq..)
        .map(|((id, a), seq)| AttachmentRow {
            id: id.db(),
            message_id: message,
            seq,
            filename: a.filename.as_str().to_owned(),
            file_url: a.file_url.as_str().to_owned(),
            file_type: a.file_type.as_str().to_owned(),
            file_size: a.file_size.map(FileSize::bytes),
            created_at: at.micros(),
        })
        .collect();
    diesel::insert_into(attachments::table)
        .values(&rows)
        .execute(conn)?;
    Ok(())
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

pub(crate) fn update_message(
    conn: &mut Conn,
    id: MessageId,
    change: MessageChange,
) -> Result<Message> {
    let m = id.db();
    // The row lock serializes changes to one message, so that the limits on
    // reaction names and attachments hold under concurrency.
    let current = backend::lock_message(conn, m)?.ok_or_else(not_found)?;
    let at = change.at.micros();
    let mut changed = false;

    if let Some(text) = change.text {
        if text.as_str() != current.body {
            diesel::update(messages::table.find(m))
                .set(messages::body.eq(text.into_inner()))
                .execute(conn)?;
            changed = true;
        }
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
        check_attachment_count(seqs.len() + change.add_attachments.len())?;
        let next = seqs.iter().max().map_or(0, |s| s + 1);
        insert_attachments(conn, m, next, &change.add_attachments, change.at)?;
        changed = true;
    }

    if changed {
        diesel::update(messages::table.find(m))
            .set(messages::updated_at.eq(Some(at)))
            .execute(conn)?;
    }
    load_message(conn, m)?.ok_or_else(not_found)
}

pub(crate) fn remove_reaction(
    conn: &mut Conn,
    id: MessageId,
    reactor: ContactId,
    name: ReactionName,
    at: Timestamp,
) -> Result<Message> {
    let m = id.db();
    backend::lock_message(conn, m)?.ok_or_else(not_found)?;
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
    load_message(conn, m)?.ok_or_else(not_found)
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

// ---------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------

/// Loads the members of all `rows` with one query and assembles the groups.
fn with_members(conn: &mut Conn, rows: Vec<GroupRow>) -> Result<Vec<Group>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<DbId> = rows.iter().map(|r| r.id).collect();
    let member_rows: Vec<(DbId, String, ContactRow)> = group_members::table
        .inner_join(contacts::table)
        .filter(group_members::group_id.eq_any(&ids))
        .order((
            group_members::group_id.asc(),
            group_members::seq.asc(),
            group_members::contact_id.asc(),
        ))
        .select((
            group_members::group_id,
            group_members::role,
            ContactRow::as_select(),
        ))
        .load(conn)?;
    let mut members_of: HashMap<DbId, Vec<GroupMember>> = HashMap::new();
    for (group, role, contact) in member_rows {
        let role = GroupRole::parse(&role).ok_or_else(|| {
            Error::Store(StoreError::Other(format!(
                "stored group role {role:?} is invalid"
            )))
        })?;
        members_of.entry(group).or_default().push(GroupMember {
            contact: Contact::try_from(contact)?,
            role,
        });
    }
    rows.into_iter()
        .map(|r| {
            Ok(Group {
                id: group_id(r.id),
                name: GroupName::new(r.name).map_err(|e| corrupt("group name", e))?,
                description: GroupDescription::new(r.description)
                    .map_err(|e| corrupt("group description", e))?,
                avatar_url: AvatarUrl::new(r.avatar_url)
                    .map_err(|e| corrupt("group avatar_url", e))?,
                created_by: contact_id(r.created_by),
                created_at: ts(r.created_at),
                members: members_of.remove(&r.id).unwrap_or_default(),
            })
        })
        .collect()
}

fn load_group(conn: &mut Conn, id: DbId) -> Result<Option<Group>> {
    let rows: Vec<GroupRow> = groups::table
        .find(id)
        .select(GroupRow::as_select())
        .load(conn)?;
    Ok(with_members(conn, rows)?.pop())
}

fn next_member_seq(conn: &mut Conn, group: DbId) -> Result<i64> {
    let last: Option<i64> = group_members::table
        .filter(group_members::group_id.eq(group))
        .select(max(group_members::seq))
        .first(conn)?;
    Ok(last.map_or(1, |s| s + 1))
}

pub(crate) fn create_group(conn: &mut Conn, group: NewGroup, at: Timestamp) -> Result<Group> {
    let creator = group.created_by;
    let members: Vec<DbId> = distinct_except(&group.member_ids, Some(creator))
        .iter()
        .map(DbKey::db)
        .collect();
    if count_known_contacts(conn, &members)? != members.len() {
        return Err(DomainError::breaks(Field::Members, Rule::UnknownContacts).into());
    }
    let g = group.id.db();
    diesel::insert_into(groups::table)
        .values(&GroupRow {
            id: g,
            name: group.name.into_inner(),
            description: group.description.into_inner(),
            avatar_url: group.avatar_url.into_inner(),
            created_by: creator.db(),
            created_at: group.created_at.micros(),
        })
        .execute(conn)?;
    let owner = GroupMemberRow {
        group_id: g,
        contact_id: creator.db(),
        role: GroupRole::Owner.as_str(),
        seq: 1,
        joined_at: at.micros(),
    };
    let rows: Vec<GroupMemberRow> = std::iter::once(owner)
        .chain(members.into_iter().zip(2..).map(|(m, seq)| GroupMemberRow {
            group_id: g,
            contact_id: m,
            role: GroupRole::Member.as_str(),
            seq,
            joined_at: at.micros(),
        }))
        .collect();
    diesel::insert_into(group_members::table)
        .values(&rows)
        .execute(conn)?;
    load_group(conn, g)?.ok_or_else(not_found)
}

pub(crate) fn group_for(conn: &mut Conn, viewer: ContactId, id: GroupId) -> Result<Option<Group>> {
    let rows: Vec<GroupRow> = group_list!(viewer.db())
        .filter(groups::id.eq(id.db()))
        .select(GroupRow::as_select())
        .load(conn)?;
    Ok(with_members(conn, rows)?.pop())
}

pub(crate) fn list_groups(
    conn: &mut Conn,
    viewer: ContactId,
    page: Page<GroupId>,
) -> Result<Paged<Group>> {
    let v = viewer.db();
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: GroupId| {
        Ok(group_list!(v)
            .filter(groups::id.eq(id.db()))
            .select((groups::created_at, groups::id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let rows: Vec<GroupRow> = keyset!(group_list!(v), groups::created_at, groups::id, seek)
        .select(GroupRow::as_select())
        .limit(fetch)
        .load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: with_members(conn, rows)?,
        has_more,
    })
}

pub(crate) fn update_group(
    conn: &mut Conn,
    id: GroupId,
    change: GroupChange,
    at: Timestamp,
) -> Result<Group> {
    let g = id.db();
    // The row lock serializes membership changes (and their join order).
    if !backend::lock_group(conn, g)? {
        return Err(not_found());
    }
    if change.name.is_some() || change.description.is_some() || change.avatar_url.is_some() {
        diesel::update(groups::table.find(g))
            .set(&GroupChangeset {
                name: change.name.map(GroupName::into_inner),
                description: change.description.map(GroupDescription::into_inner),
                avatar_url: change.avatar_url.map(AvatarUrl::into_inner),
            })
            .execute(conn)?;
    }

    let adds: Vec<DbId> = distinct_except(&change.add, None)
        .iter()
        .map(DbKey::db)
        .collect();
    if !adds.is_empty() {
        if count_known_contacts(conn, &adds)? != adds.len() {
            return Err(DomainError::breaks(Field::AddedMembers, Rule::UnknownContacts).into());
        }
        let already: Vec<DbId> = group_members::table
            .filter(group_members::group_id.eq(g))
            .filter(group_members::contact_id.eq_any(&adds))
            .select(group_members::contact_id)
            .load(conn)?;
        let next = next_member_seq(conn, g)?;
        let rows: Vec<GroupMemberRow> = adds
            .into_iter()
            .filter(|c| !already.contains(c))
            .zip(next..)
            .map(|(c, seq)| GroupMemberRow {
                group_id: g,
                contact_id: c,
                role: GroupRole::Member.as_str(),
                seq,
                joined_at: at.micros(),
            })
            .collect();
        if !rows.is_empty() {
            diesel::insert_into(group_members::table)
                .values(&rows)
                .execute(conn)?;
        }
    }

    let removes: Vec<DbId> = change.remove.iter().map(DbKey::db).collect();
    if !removes.is_empty() {
        diesel::delete(
            group_members::table
                .filter(group_members::group_id.eq(g))
                .filter(group_members::contact_id.eq_any(&removes)),
        )
        .execute(conn)?;
    }
    load_group(conn, g)?.ok_or_else(not_found)
}

pub(crate) fn delete_group(conn: &mut Conn, id: GroupId) -> Result<()> {
    // Its conversations (and their messages) and memberships cascade.
    let n = diesel::delete(groups::table.find(id.db())).execute(conn)?;
    if n == 0 {
        return Err(not_found());
    }
    Ok(())
}
