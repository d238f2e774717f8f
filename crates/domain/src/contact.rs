use crate::{AvatarUrl, ContactId, DomainError, Field, PhoneNumber, Rule, Timestamp, Username};

/// The attributes of a [`Contact`], unchecked: what [`Contact::new`] takes
/// and [`Contact::into_parts`] gives back. Its fields are public because it
/// holds no invariant; a `Contact` built from it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactParts {
    /// See [`Contact::id`].
    pub id: ContactId,
    /// See [`Contact::username`].
    pub username: Username,
    /// See [`Contact::phone_number`].
    pub phone_number: PhoneNumber,
    /// See [`Contact::avatar_url`].
    pub avatar_url: AvatarUrl,
    /// See [`Contact::last_active_at`].
    pub last_active_at: Timestamp,
    /// See [`Contact::created_at`].
    pub created_at: Timestamp,
}

/// A user of the service: whoever holds an access token.
///
/// Built only through [`Contact::new`]; its id, username and creation time
/// never change, and its activity only moves forward
/// ([`Contact::record_activity`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contact {
    parts: ContactParts,
}

impl Contact {
    /// How often `last_active_at` is written at most: it is a hint, not an
    /// audit log, and writing it on every request would make reads write.
    pub const ACTIVITY_RESOLUTION_SECS: i64 = 60;

    /// The contact `parts` describe. Its activity starts when it is
    /// created: `last_active_at` may not lie before `created_at`.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::LastActiveAt`] with
    /// [`Rule::ActiveBeforeCreation`] when it does.
    ///
    /// # Example
    ///
    /// ```
    /// use confab_domain::{
    ///     AvatarUrl, Contact, ContactParts, DomainError, Field, PhoneNumber, Rule, Timestamp,
    ///     Username,
    /// };
    ///
    /// let created = Timestamp::from_secs(1_700_000_000);
    /// let parts = ContactParts {
    ///     id: "0190a1b2-0000-7000-8000-00000000000a".parse()?,
    ///     username: Username::new("alice".into())?,
    ///     phone_number: PhoneNumber::new("+15550100".into())?,
    ///     avatar_url: AvatarUrl::none(),
    ///     last_active_at: created,
    ///     created_at: created,
    /// };
    /// let mut alice = Contact::new(parts.clone())?;
    /// alice.record_activity(created.plus_secs(90));
    /// assert_eq!(alice.last_active_at(), created.plus_secs(90));
    ///
    /// // Active before it existed: no such contact.
    /// let refused = Contact::new(ContactParts { last_active_at: created.plus_secs(-1), ..parts });
    /// assert_eq!(
    ///     refused,
    ///     Err(DomainError::breaks(Field::LastActiveAt, Rule::ActiveBeforeCreation))
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(parts: ContactParts) -> Result<Self, DomainError> {
        if parts.last_active_at < parts.created_at {
            return Err(DomainError::breaks(
                Field::LastActiveAt,
                Rule::ActiveBeforeCreation,
            ));
        }
        Ok(Self { parts })
    }

    /// Its attributes, for a caller that takes the contact apart (and may
    /// build another through [`Contact::new`]).
    pub fn into_parts(self) -> ContactParts {
        self.parts
    }

    /// Never changes.
    pub fn id(&self) -> ContactId {
        self.parts.id
    }

    /// Unique case-insensitively; never changes.
    pub fn username(&self) -> &Username {
        &self.parts.username
    }

    /// The contact's own phone number; they may change it. Private: who
    /// may read it is [`Contact::phone_number_for`]'s rule.
    pub fn phone_number(&self) -> &PhoneNumber {
        &self.parts.phone_number
    }

    /// The phone number as `viewer` may see it: only the contact themself
    /// and the operator's own software ([`Viewer::Operator`]) do.
    ///
    /// ```
    /// use confab_domain::{
    ///     AvatarUrl, Contact, ContactId, ContactParts, PhoneNumber, Timestamp, Username, Viewer,
    /// };
    ///
    /// let at = Timestamp::from_secs(1_700_000_000);
    /// let alice = Contact::new(ContactParts {
    ///     id: "0190a1b2-0000-7000-8000-00000000000a".parse()?,
    ///     username: Username::new("alice".into())?,
    ///     phone_number: PhoneNumber::new("+15550100".into())?,
    ///     avatar_url: AvatarUrl::none(),
    ///     last_active_at: at,
    ///     created_at: at,
    /// })?;
    /// let bob: ContactId = "0190a1b2-0000-7000-8000-00000000000b".parse()?;
    /// assert!(alice.phone_number_for(Viewer::Contact(alice.id())).is_some());
    /// assert!(alice.phone_number_for(Viewer::Operator).is_some());
    /// assert_eq!(alice.phone_number_for(Viewer::Contact(bob)), None);
    /// assert_eq!(alice.phone_number_for(Viewer::Anyone), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn phone_number_for(&self, viewer: Viewer) -> Option<&PhoneNumber> {
        match viewer {
            Viewer::Operator => Some(&self.parts.phone_number),
            Viewer::Contact(id) if id == self.parts.id => Some(&self.parts.phone_number),
            Viewer::Contact(_) | Viewer::Anyone => None,
        }
    }

    /// Empty when the contact has none; they may change it.
    pub fn avatar_url(&self) -> &AvatarUrl {
        &self.parts.avatar_url
    }

    /// Time of the latest authenticated request (at the resolution of
    /// [`Contact::ACTIVITY_RESOLUTION_SECS`]); starts at `created_at`.
    pub fn last_active_at(&self) -> Timestamp {
        self.parts.last_active_at
    }

    /// When the contact was created.
    pub fn created_at(&self) -> Timestamp {
        self.parts.created_at
    }

    /// Records activity at `at`. Activity only moves forward: an earlier
    /// `at` (a late request) changes nothing.
    pub fn record_activity(&mut self, at: Timestamp) {
        self.parts.last_active_at = self.parts.last_active_at.max(at);
    }

    /// Whether a request at `now` should record activity.
    pub fn activity_is_stale(&self, now: Timestamp) -> bool {
        Self::activity_written_long_ago(self.parts.last_active_at, now)
    }

    /// Whether activity written at `written` is due again at `now`.
    pub fn activity_written_long_ago(written: Timestamp, now: Timestamp) -> bool {
        now.micros() - written.micros() >= Self::ACTIVITY_RESOLUTION_SECS * 1_000_000
    }
}

/// The attributes a contact may change about themself. `None`: unchanged.
///
/// A plain carrier (public fields): each attribute is a validated value and
/// stands alone, so any combination is a valid change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContactProfilePatch {
    /// The new phone number.
    pub phone_number: Option<PhoneNumber>,
    /// The new avatar URL (an empty one removes the avatar).
    pub avatar_url: Option<AvatarUrl>,
}

impl ContactProfilePatch {
    /// Whether the patch changes nothing (a use case then writes nothing
    /// and makes no event).
    pub fn is_empty(&self) -> bool {
        self.phone_number.is_none() && self.avatar_url.is_none()
    }
}

/// Who is shown an object: what they may see of it depends on who they are
/// (a contact's phone number: [`Contact::phone_number_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    /// A contact, seeing the service as themself.
    Contact(ContactId),
    /// The operator's own software (a server key on the operator's
    /// routes): sees everything stored.
    Operator,
    /// Whoever may receive a copy made once for many (an event, a
    /// webhook): sees what every contact may see of anyone.
    Anyone,
}

/// One contact's block of another ([`DomainError::Blocked`]): neither
/// writes to the other in their direct conversations, and the blocked may
/// not add the blocker to a group.
///
/// A plain pair (public fields): any contact may block any other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The contact blocked.
    pub contact: Contact,
    /// When the block was made.
    pub created_at: Timestamp,
}

/// Checks that `by` may block (or report) `other`: another contact than
/// themself.
///
/// # Errors
///
/// [`DomainError::Invalid`] on `field` with [`Rule::IsSelf`].
pub fn check_other_contact(
    by: ContactId,
    other: ContactId,
    field: Field,
) -> Result<(), DomainError> {
    if by == other {
        return Err(DomainError::breaks(field, Rule::IsSelf));
    }
    Ok(())
}
