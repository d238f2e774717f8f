use crate::{AvatarUrl, ContactId, PhoneNumber, Timestamp, Username};

/// A user of the service: whoever holds an access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contact {
    /// Never changes.
    pub id: ContactId,
    /// Unique case-insensitively.
    pub username: Username,
    /// The contact's own phone number; they may change it.
    pub phone_number: PhoneNumber,
    /// Empty when the contact has none; they may change it.
    pub avatar_url: AvatarUrl,
    /// Time of the latest authenticated request; starts at `created_at`.
    pub last_active_at: Timestamp,
    /// When the contact was created.
    pub created_at: Timestamp,
}

impl Contact {
    /// How often `last_active_at` is written at most: it is a hint, not an
    /// audit log, and writing it on every request would make reads write.
    pub const ACTIVITY_RESOLUTION_SECS: i64 = 60;

    /// Whether a request at `now` should record activity.
    pub fn activity_is_stale(&self, now: Timestamp) -> bool {
        Self::activity_written_long_ago(self.last_active_at, now)
    }

    /// Whether activity written at `written` is due again at `now`.
    pub fn activity_written_long_ago(written: Timestamp, now: Timestamp) -> bool {
        now.micros() - written.micros() >= Self::ACTIVITY_RESOLUTION_SECS * 1_000_000
    }
}

/// The attributes a contact may change about themself. `None`: unchanged.
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
