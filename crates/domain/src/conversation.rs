use crate::{
    ContactId, ConversationId, DomainError, Field, GroupId, Message, MessageId, Rule, Timestamp,
};

/// How far in the future `archived_at` may lie. Enough for clock skew; small
/// enough that a value in milliseconds is caught as an error.
pub const ARCHIVE_FUTURE_TOLERANCE_SECS: i64 = 60;

/// Who a conversation is between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversationKind {
    /// Two members: the creator and the contact it was opened with.
    Direct {
        /// The contact the creator opened it with.
        peer_id: ContactId,
    },
    /// The members of a group, as they are at the time of each request.
    Group {
        /// The group whose members share it.
        group_id: GroupId,
    },
}

/// The attributes of a [`Conversation`], unchecked: what
/// [`Conversation::new`] takes and [`Conversation::into_parts`] gives back.
/// Its fields are public because it holds no invariant; a `Conversation`
/// built from it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationParts {
    /// See [`Conversation::id`].
    pub id: ConversationId,
    /// See [`Conversation::kind`].
    pub kind: ConversationKind,
    /// See [`Conversation::creator_id`].
    pub creator_id: ContactId,
    /// See [`Conversation::pinned_message_id`].
    pub pinned_message_id: Option<MessageId>,
    /// See [`Conversation::last_active_at`].
    pub last_active_at: Option<Timestamp>,
    /// See [`Conversation::created_at`].
    pub created_at: Timestamp,
}

/// A conversation's shared state: the same for every member.
///
/// Built only through [`Conversation::new_direct`],
/// [`Conversation::new_group`] or [`Conversation::new`]: a direct
/// conversation is between two different contacts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    parts: ConversationParts,
}

impl ConversationParts {
    /// A conversation just created: nothing pinned, no message yet.
    fn fresh(
        id: ConversationId,
        kind: ConversationKind,
        creator: ContactId,
        now: Timestamp,
    ) -> Self {
        Self {
            id,
            kind,
            creator_id: creator,
            pinned_message_id: None,
            last_active_at: None,
            created_at: now,
        }
    }
}

impl Conversation {
    /// A new direct conversation between `creator` and `peer`.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Contact`] with
    /// [`Rule::ConversationWithSelf`] when `peer` is `creator`.
    pub fn new_direct(
        id: ConversationId,
        creator: ContactId,
        peer: ContactId,
        now: Timestamp,
    ) -> Result<Self, DomainError> {
        Self::new(ConversationParts::fresh(
            id,
            ConversationKind::Direct { peer_id: peer },
            creator,
            now,
        ))
    }

    /// A new conversation of a group the creator belongs to.
    pub fn new_group(
        id: ConversationId,
        creator: ContactId,
        group_id: GroupId,
        now: Timestamp,
    ) -> Self {
        let kind = ConversationKind::Group { group_id };
        Self {
            parts: ConversationParts::fresh(id, kind, creator, now),
        }
    }

    /// The conversation `parts` describe, in any state (as a store reads
    /// it back), when they keep a conversation's rule: a direct
    /// conversation's peer is not its creator.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Contact`] with
    /// [`Rule::ConversationWithSelf`] when it is.
    pub fn new(parts: ConversationParts) -> Result<Self, DomainError> {
        if matches!(parts.kind, ConversationKind::Direct { peer_id } if peer_id == parts.creator_id)
        {
            return Err(DomainError::breaks(
                Field::Contact,
                Rule::ConversationWithSelf,
            ));
        }
        Ok(Self { parts })
    }

    /// Its attributes, for a caller that takes the conversation apart (and
    /// may build another through [`Conversation::new`]).
    pub fn into_parts(self) -> ConversationParts {
        self.parts
    }

    /// Never changes.
    pub fn id(&self) -> ConversationId {
        self.parts.id
    }

    /// Direct or of a group; never changes.
    pub fn kind(&self) -> ConversationKind {
        self.parts.kind
    }

    /// Who created it: one of the two members of a direct conversation;
    /// for a group one, a member who may delete it.
    pub fn creator_id(&self) -> ContactId {
        self.parts.creator_id
    }

    /// The message every member sees pinned, if any (one that
    /// [`Conversation::check_pin`] let through).
    pub fn pinned_message_id(&self) -> Option<MessageId> {
        self.parts.pinned_message_id
    }

    /// `created_at` of the latest message; `None` until the first one.
    pub fn last_active_at(&self) -> Option<Timestamp> {
        self.parts.last_active_at
    }

    /// When it was created; nothing is archived before it.
    pub fn created_at(&self) -> Timestamp {
        self.parts.created_at
    }

    /// The group of a group conversation; `None` for a direct one.
    pub fn group_id(&self) -> Option<GroupId> {
        match self.parts.kind {
            ConversationKind::Group { group_id } => Some(group_id),
            ConversationKind::Direct { .. } => None,
        }
    }

    /// The two members of a direct conversation.
    pub fn direct_members(&self) -> Option<[ContactId; 2]> {
        match self.parts.kind {
            ConversationKind::Direct { peer_id } => Some([self.parts.creator_id, peer_id]),
            ConversationKind::Group { .. } => None,
        }
    }

    /// The other member as seen by `viewer` (direct conversations only).
    pub fn other_member(&self, viewer: ContactId) -> Option<ContactId> {
        self.direct_members()
            .map(|[a, b]| if a == viewer { b } else { a })
    }

    /// Checks that `message` may become this conversation's pinned message.
    pub fn check_pin(&self, message: &Message) -> Result<MessageId, DomainError> {
        if message.conversation_id() != self.parts.id {
            return Err(DomainError::breaks(
                Field::PinnedMessage,
                Rule::OutsideConversation,
            ));
        }
        Ok(message.id())
    }

    /// Checks that `archived_at` may be set to `at`: not before the
    /// conversation was created, and not more than
    /// [`ARCHIVE_FUTURE_TOLERANCE_SECS`] ahead of `now` (clock skew is
    /// allowed; a time in milliseconds is caught).
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::ArchivedAt`] with
    /// [`Rule::BeforeCreation`] or [`Rule::TooFarInFuture`].
    ///
    /// # Example
    ///
    /// ```
    /// use confab_domain::{Conversation, DomainError, Field, Rule, Timestamp};
    ///
    /// let created = Timestamp::from_secs(1_000);
    /// let chat = Conversation::new_direct(
    ///     "0190a1b2-0000-7000-8000-0000000000c0".parse()?,
    ///     "0190a1b2-0000-7000-8000-00000000000a".parse()?,
    ///     "0190a1b2-0000-7000-8000-00000000000b".parse()?,
    ///     created,
    /// )?;
    /// let now = Timestamp::from_secs(2_000);
    /// assert_eq!(chat.check_archive(now, now)?, now);
    /// // A minute of clock skew is fine, an hour is not.
    /// assert!(chat.check_archive(now.plus_secs(60), now).is_ok());
    /// assert_eq!(
    ///     chat.check_archive(now.plus_secs(3_600), now),
    ///     Err(DomainError::breaks(
    ///         Field::ArchivedAt,
    ///         Rule::TooFarInFuture { tolerance_secs: 60 }
    ///     ))
    /// );
    /// assert!(chat.check_archive(Timestamp::from_secs(999), now).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_archive(&self, at: Timestamp, now: Timestamp) -> Result<Timestamp, DomainError> {
        if at.secs() < self.parts.created_at.secs() {
            return Err(DomainError::breaks(Field::ArchivedAt, Rule::BeforeCreation));
        }
        if at.secs() > now.secs() + ARCHIVE_FUTURE_TOLERANCE_SECS {
            return Err(DomainError::breaks(
                Field::ArchivedAt,
                Rule::TooFarInFuture {
                    tolerance_secs: ARCHIVE_FUTURE_TOLERANCE_SECS,
                },
            ));
        }
        Ok(at)
    }

    /// Who may delete: either member of a direct conversation; for a group
    /// conversation its creator or an owner of the group.
    pub fn check_delete(&self, by: ContactId, by_is_group_owner: bool) -> Result<(), DomainError> {
        match self.parts.kind {
            ConversationKind::Direct { .. } => Ok(()),
            ConversationKind::Group { .. } if by == self.parts.creator_id || by_is_group_owner => {
                Ok(())
            }
            ConversationKind::Group { .. } => Err(DomainError::Forbidden(
                "only the conversation's creator or a group owner may delete a group conversation",
            )),
        }
    }
}

/// One member's own view of a conversation.
///
/// A plain carrier (public fields): its attributes are each the member's
/// own choice or count, and no rule ties them to each other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberState {
    /// Whether the member pinned it (their own pin, not the pinned message).
    pub is_pinned: bool,
    /// Whether the member muted it.
    pub is_muted: bool,
    /// When the member archived it; `None` when not archived.
    pub archived_at: Option<Timestamp>,
    /// When the member last opened it; `None` if never.
    pub last_opened_at: Option<Timestamp>,
    /// Messages from others that arrived after `last_opened_at` (all of
    /// them if never opened); 0 right after opening.
    pub unread_count: u64,
    /// Those of the unread messages that mention the member; 0 right after
    /// opening.
    pub unread_mention_count: u64,
}

impl MemberState {
    /// The state after `patch`: only submitted attributes change.
    pub fn patched(self, patch: &MemberStatePatch) -> Self {
        Self {
            is_pinned: patch.is_pinned.unwrap_or(self.is_pinned),
            is_muted: patch.is_muted.unwrap_or(self.is_muted),
            archived_at: patch.archived_at.unwrap_or(self.archived_at),
            last_opened_at: self.last_opened_at,
            unread_count: self.unread_count,
            unread_mention_count: self.unread_mention_count,
        }
    }
}

/// A change to a member's own state. `None` leaves an attribute as it is;
/// `archived_at: Some(None)` unarchives.
///
/// A plain carrier (public fields): any combination of its attributes is a
/// valid change. The time to archive at is checked against the
/// conversation, by [`Conversation::check_archive`], not here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberStatePatch {
    /// Pin or unpin for this member.
    pub is_pinned: Option<bool>,
    /// Mute or unmute for this member.
    pub is_muted: Option<bool>,
    /// Archive at a time (checked with [`Conversation::check_archive`]) or,
    /// with `Some(None)`, unarchive.
    pub archived_at: Option<Option<Timestamp>>,
}

impl MemberStatePatch {
    /// Whether the patch changes nothing (no write, no event).
    pub fn is_empty(&self) -> bool {
        self.is_pinned.is_none() && self.is_muted.is_none() && self.archived_at.is_none()
    }

    /// The part of the patch that changes `state`: an attribute submitted
    /// with the value `state` already has is left out, so that a patch
    /// that changes nothing [`is_empty`](Self::is_empty) (no write, no
    /// event).
    ///
    /// ```
    /// use confab_domain::{MemberState, MemberStatePatch};
    ///
    /// let muted = MemberState { is_muted: true, ..MemberState::default() };
    /// let again = MemberStatePatch { is_muted: Some(true), ..Default::default() };
    /// assert!(again.against(&muted).is_empty());
    /// let unmute = MemberStatePatch { is_muted: Some(false), ..Default::default() };
    /// assert_eq!(unmute.against(&muted), unmute);
    /// ```
    pub fn against(self, state: &MemberState) -> Self {
        Self {
            is_pinned: self.is_pinned.filter(|p| *p != state.is_pinned),
            is_muted: self.is_muted.filter(|m| *m != state.is_muted),
            archived_at: self.archived_at.filter(|a| *a != state.archived_at),
        }
    }
}

/// A change to the shared pinned message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinnedMessageChange {
    /// Pin this message (checked with [`Conversation::check_pin`]).
    Pin(MessageId),
    /// Leave the conversation without a pinned message.
    Unpin,
}

impl PinnedMessageChange {
    /// The pinned message after the change.
    pub fn target(self) -> Option<MessageId> {
        match self {
            Self::Pin(m) => Some(m),
            Self::Unpin => None,
        }
    }

    /// Whether it changes `conversation`'s pinned message: pinning the
    /// message already pinned, or unpinning where nothing is pinned,
    /// changes nothing (no write, no event).
    pub fn changes(self, conversation: &Conversation) -> bool {
        conversation.parts.pinned_message_id != self.target()
    }
}

/// A conversation as one member sees it.
///
/// A plain carrier (public fields) of a checked [`Conversation`], the
/// member and their [`MemberState`]: that `viewer` is a member is known
/// where the view is looked up (a group's members are not part of it),
/// not a rule between its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationView {
    /// The state every member shares.
    pub conversation: Conversation,
    /// The member whose view this is.
    pub viewer: ContactId,
    /// The viewer's own state of it.
    pub state: MemberState,
}

impl ConversationView {
    /// The other member of a direct conversation; `None` for groups.
    pub fn contact_id(&self) -> Option<ContactId> {
        self.conversation.other_member(self.viewer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn cid(n: u128) -> ContactId {
        ContactId::from_uuid(Uuid::from_u128(n))
    }

    fn direct(now: Timestamp) -> Conversation {
        Conversation::new_direct(
            ConversationId::from_uuid(Uuid::from_u128(9)),
            cid(1),
            cid(2),
            now,
        )
        .expect("distinct members")
    }

    #[test]
    fn direct_needs_another_contact() {
        let err = Conversation::new_direct(
            ConversationId::from_uuid(Uuid::from_u128(9)),
            cid(1),
            cid(1),
            Timestamp::from_secs(0),
        );
        assert!(matches!(
            err,
            Err(DomainError::Invalid {
                field: Field::Contact,
                rule: Rule::ConversationWithSelf
            })
        ));
    }

    #[test]
    fn a_stored_direct_conversation_is_between_two_contacts() {
        let c = direct(Timestamp::from_secs(100));
        assert_eq!(Conversation::new(c.clone().into_parts()), Ok(c.clone()));
        let with_self = ConversationParts {
            kind: ConversationKind::Direct { peer_id: cid(1) },
            ..c.into_parts()
        };
        assert_eq!(
            Conversation::new(with_self),
            Err(DomainError::breaks(
                Field::Contact,
                Rule::ConversationWithSelf
            ))
        );
    }

    #[test]
    fn new_conversation_defaults() {
        let c = direct(Timestamp::from_secs(100));
        assert_eq!(c.pinned_message_id(), None);
        assert_eq!(c.last_active_at(), None);
        assert!(!MemberState::default().is_pinned);
        assert_eq!(MemberState::default().archived_at, None);
    }

    #[test]
    fn each_member_sees_the_other() {
        let c = direct(Timestamp::from_secs(100));
        assert_eq!(c.other_member(cid(1)), Some(cid(2)));
        assert_eq!(c.other_member(cid(2)), Some(cid(1)));
        let g = Conversation::new_group(
            ConversationId::from_uuid(Uuid::from_u128(9)),
            cid(1),
            GroupId::from_uuid(Uuid::from_u128(5)),
            Timestamp::from_secs(0),
        );
        assert_eq!(g.other_member(cid(1)), None);
        assert!(g.group_id().is_some());
    }

    #[test]
    fn archive_window() {
        let c = direct(Timestamp::from_secs(1_000));
        let now = Timestamp::from_secs(2_000);
        assert!(c.check_archive(Timestamp::from_secs(1_000), now).is_ok());
        assert!(c.check_archive(Timestamp::from_secs(2_060), now).is_ok());
        assert!(c.check_archive(Timestamp::from_secs(999), now).is_err());
        assert!(c.check_archive(Timestamp::from_secs(2_061), now).is_err());
        // A millisecond value is far in the future.
        assert!(c
            .check_archive(Timestamp::from_secs(2_000_000), now)
            .is_err());
    }

    #[test]
    fn patch_changes_only_submitted_attributes() {
        let s = MemberState {
            is_pinned: true,
            is_muted: false,
            archived_at: Some(Timestamp::from_secs(5)),
            last_opened_at: Some(Timestamp::from_secs(6)),
            unread_count: 3,
            unread_mention_count: 1,
        };
        let p = MemberStatePatch {
            is_muted: Some(true),
            ..Default::default()
        };
        let n = s.patched(&p);
        assert!(n.is_pinned && n.is_muted);
        assert_eq!(n.archived_at, s.archived_at);
        let unarchive = MemberStatePatch {
            archived_at: Some(None),
            ..Default::default()
        };
        assert_eq!(s.patched(&unarchive).archived_at, None);
        assert!(MemberStatePatch::default().is_empty());
    }

    #[test]
    fn a_value_already_set_is_no_change() {
        let state = MemberState {
            is_pinned: true,
            archived_at: Some(Timestamp::from_secs(5)),
            ..MemberState::default()
        };
        let same = MemberStatePatch {
            is_pinned: Some(true),
            is_muted: Some(false),
            archived_at: Some(Some(Timestamp::from_secs(5))),
        };
        assert!(same.against(&state).is_empty());
        let unarchive = MemberStatePatch {
            is_pinned: Some(true),
            archived_at: Some(None),
            ..Default::default()
        };
        assert_eq!(
            unarchive.against(&state),
            MemberStatePatch {
                archived_at: Some(None),
                ..Default::default()
            }
        );
        assert!(unarchive
            .against(&MemberState::default())
            .is_pinned
            .is_some());
    }

    #[test]
    fn pinning_the_pinned_message_is_no_change() {
        let m = MessageId::from_uuid(Uuid::from_u128(7));
        let unpinned = direct(Timestamp::from_secs(0));
        assert!(PinnedMessageChange::Pin(m).changes(&unpinned));
        assert!(!PinnedMessageChange::Unpin.changes(&unpinned));
        let pinned = Conversation::new(ConversationParts {
            pinned_message_id: Some(m),
            ..unpinned.into_parts()
        })
        .expect("a valid conversation");
        assert!(!PinnedMessageChange::Pin(m).changes(&pinned));
        assert!(PinnedMessageChange::Unpin.changes(&pinned));
        let other = MessageId::from_uuid(Uuid::from_u128(8));
        assert!(PinnedMessageChange::Pin(other).changes(&pinned));
        assert_eq!(PinnedMessageChange::Unpin.target(), None);
    }

    #[test]
    fn delete_rights() {
        let c = direct(Timestamp::from_secs(0));
        assert!(c.check_delete(cid(2), false).is_ok());
        let g = Conversation::new_group(
            ConversationId::from_uuid(Uuid::from_u128(9)),
            cid(1),
            GroupId::from_uuid(Uuid::from_u128(5)),
            Timestamp::from_secs(0),
        );
        assert!(g.check_delete(cid(1), false).is_ok());
        assert!(g.check_delete(cid(3), true).is_ok());
        assert_eq!(
            g.check_delete(cid(3), false)
                .map_err(|e| matches!(e, DomainError::Forbidden(_))),
            Err(true)
        );
    }
}
