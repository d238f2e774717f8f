use std::fmt;

use thiserror::Error;

/// Why a domain rule refused something.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DomainError {
    /// An input breaks a rule: `field` names the input, `rule` the rule.
    #[error("{field} {rule}")]
    Invalid {
        /// The input that breaks the rule.
        field: Field,
        /// The rule it breaks.
        rule: Rule,
    },
    /// The actor may see the thing but may not do this to it.
    #[error("{0}")]
    Forbidden(&'static str),
    /// A block between the actor and another contact refused it
    /// ([`crate::Block`]): a write in their direct conversation, or
    /// adding to a group someone who blocked the actor. `field` names the
    /// input that brought the other contact in, when one did.
    #[error("{}", if *.by_actor {
        "you blocked this contact; unblock them first"
    } else {
        "this contact does not accept this from you"
    })]
    Blocked {
        /// The input naming the other contact (or their conversation).
        field: Option<Field>,
        /// Whether the actor is the one who blocked.
        by_actor: bool,
    },
}

impl DomainError {
    /// A value that breaks its type's own invariant, `rule` saying what it
    /// must be ("must be at most 4096 characters").
    pub const fn invalid(field: Field, rule: &'static str) -> Self {
        Self::Invalid {
            field,
            rule: Rule::Invariant(rule),
        }
    }

    /// `field` breaks `rule`.
    pub const fn breaks(field: Field, rule: Rule) -> Self {
        Self::Invalid { field, rule }
    }
}

/// The inputs of confab's operations, in the domain's words. Rules name the
/// input they are about with it; each adapter maps it to its own names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// A message's text.
    MessageText,
    /// A message's attachments, as a whole.
    Attachments,
    /// Where an attachment's bytes live.
    FileUrl,
    /// An attachment's file name.
    Filename,
    /// An attachment's MIME type.
    FileType,
    /// An attachment's size in bytes.
    FileSize,
    /// An uploaded file's bytes.
    File,
    /// The upload attached as the message's attachment at this place
    /// (counting from 0 in the order given).
    Upload(usize),
    /// Reactions to a message: their names and who reacted.
    Reactions,
    /// A contact's username.
    Username,
    /// A contact's phone number.
    PhoneNumber,
    /// A contact's or a group's avatar.
    AvatarUrl,
    /// When a contact was last active.
    LastActiveAt,
    /// A group's name.
    GroupName,
    /// A group's description.
    GroupDescription,
    /// A group's members; for a new group, the contacts it starts with.
    Members,
    /// The contacts to add to a group.
    AddedMembers,
    /// The contacts to remove from a group.
    RemovedMembers,
    /// The contact a direct conversation is with.
    Contact,
    /// The group a conversation belongs to.
    Group,
    /// The conversation a message belongs to.
    Conversation,
    /// A conversation's pinned message.
    PinnedMessage,
    /// When a member archived a conversation.
    ArchivedAt,
    /// How many items a page holds.
    PageLimit,
    /// The item a page starts after.
    PageAfter,
    /// The item a page ends before.
    PageBefore,
    /// How long a new access token stays valid.
    TokenLifetime,
    /// The key a client sends so that retrying a request cannot repeat it.
    IdempotencyKey,
    /// The event a stream or an event list resumes after.
    EventsAfter,
    /// The operator's name for a server key.
    KeyName,
    /// A server key, by id.
    KeyId,
    /// The contacts to make admins of a group.
    AddedAdmins,
    /// The admins of a group to make plain members again.
    RemovedAdmins,
    /// The contact a block is about.
    BlockedContact,
    /// The message a report is about.
    ReportedMessage,
    /// The contact a report is about.
    ReportedContact,
    /// Why a report was made.
    ReportReason,
    /// What a reporter wrote about it.
    ReportDescription,
    /// Where a report stands.
    ReportStatus,
    /// The message a new message quotes.
    ReplyTo,
    /// The message whose thread a new message replies in.
    Parent,
    /// The contacts a message mentions.
    Mentions,
    /// Whether a member started or stopped typing.
    TypingState,
    /// The text a search looks for.
    SearchQuery,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MessageText => "message text",
            Self::Attachments => "attachments",
            Self::FileUrl => "attachment file URL",
            Self::Filename => "attachment filename",
            Self::FileType => "attachment file type",
            Self::FileSize => "attachment file size",
            Self::File => "file",
            Self::Upload(_) => "upload to attach",
            Self::Reactions => "reactions",
            Self::Username => "username",
            Self::PhoneNumber => "phone number",
            Self::AvatarUrl => "avatar URL",
            Self::LastActiveAt => "last activity",
            Self::GroupName => "group name",
            Self::GroupDescription => "group description",
            Self::Members => "group members",
            Self::AddedMembers => "members to add",
            Self::RemovedMembers => "members to remove",
            Self::Contact => "contact",
            Self::Group => "group",
            Self::Conversation => "conversation",
            Self::PinnedMessage => "pinned message",
            Self::ArchivedAt => "archive time",
            Self::PageLimit => "page size",
            Self::PageAfter => "item to start the page after",
            Self::PageBefore => "item to end the page before",
            Self::TokenLifetime => "token lifetime",
            Self::IdempotencyKey => "idempotency key",
            Self::EventsAfter => "event to resume after",
            Self::KeyName => "server key name",
            Self::KeyId => "server key",
            Self::AddedAdmins => "admins to add",
            Self::RemovedAdmins => "admins to remove",
            Self::BlockedContact => "contact to block",
            Self::ReportedMessage => "reported message",
            Self::ReportedContact => "reported contact",
            Self::ReportReason => "report reason",
            Self::ReportDescription => "report description",
            Self::ReportStatus => "report status",
            Self::ReplyTo => "message replied to",
            Self::Parent => "thread's first message",
            Self::Mentions => "mentions",
            Self::TypingState => "typing state",
            Self::SearchQuery => "search query",
        })
    }
}

/// The rules an input can break. Each reads as what the input must be, after
/// the input's name: "attachments must not bring a message to more than 10
/// attachments".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A value's own invariant, in words ("must be at most 4096 characters").
    Invariant(&'static str),
    /// A message would carry more than `max` attachments.
    TooManyAttachments {
        /// The most a message may carry.
        max: usize,
    },
    /// A message would carry more than `max` distinct reaction names.
    TooManyReactionNames {
        /// The most a message may carry.
        max: usize,
    },
    /// A reaction was asked for without naming who reacts.
    ReactionWithoutReactor,
    /// A reaction that nobody made.
    EmptyReaction,
    /// The same contact twice among one reaction's reactors.
    DuplicateReactor,
    /// The same reaction name twice on one message.
    DuplicateReactionName,
    /// An attachment of another message among a message's own.
    OfAnotherMessage,
    /// The same contact twice among a group's members (or in one list of
    /// contacts to add or remove).
    DuplicateMember,
    /// A group would have more than `max` members.
    TooManyMembers {
        /// The most members a group may have.
        max: u64,
    },
    /// A contact both added to and removed from a group by one change.
    AddedAndRemoved,
    /// A contact active before it was created.
    ActiveBeforeCreation,
    /// A direct conversation with oneself.
    ConversationWithSelf,
    /// A message of another conversation (or one the caller cannot see).
    OutsideConversation,
    /// A time before the conversation was created.
    BeforeCreation,
    /// A time more than `tolerance_secs` ahead of now.
    TooFarInFuture {
        /// How far ahead of now a time may lie, in seconds.
        tolerance_secs: i64,
    },
    /// A change that would leave a group without an owner.
    LastOwnerRemoved,
    /// Contact ids of which some name no contact.
    UnknownContacts,
    /// A page cursor naming an item that is not in the list being paged.
    CursorNotInList,
    /// An event id that is unknown or older than the events kept.
    EventNotKept,
    /// An upload that is not the caller's own, or already attached.
    NotAttachable,
    /// A URL whose host is a private, loopback, link-local or otherwise
    /// reserved address.
    PrivateAddress,
    /// A message with neither text nor attachments.
    NoContent,
    /// A contact who is not a member of the group (after the change).
    NotMember,
    /// The group's owner, whose role no change of admins touches.
    IsOwner,
    /// The actor themself, where only another contact makes sense.
    IsSelf,
    /// A message the actor sent themself.
    OwnMessage,
    /// A reply in a thread, where only a message that starts one may be
    /// named (threads are one level deep).
    ThreadReply,
    /// A message would mention more than `max` contacts.
    TooManyMentions {
        /// The most a message may mention.
        max: usize,
    },
    /// The same contact mentioned twice.
    DuplicateMention,
    /// Contacts that are not members of the conversation.
    NotConversationMember,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invariant(rule) => f.write_str(rule),
            Self::TooManyAttachments { max } => {
                write!(f, "must not bring a message to more than {max} attachments")
            }
            Self::TooManyReactionNames { max } => write!(
                f,
                "must not bring a message to more than {max} distinct reaction names"
            ),
            Self::ReactionWithoutReactor => {
                f.write_str("must list the caller's own username for each reaction")
            }
            Self::EmptyReaction => f.write_str("must each have at least one reactor"),
            Self::DuplicateReactor => {
                f.write_str("must not count the same contact twice in one reaction")
            }
            Self::DuplicateReactionName => f.write_str("must not hold the same name twice"),
            Self::OfAnotherMessage => f.write_str("must all belong to the message"),
            Self::DuplicateMember => f.write_str("must not hold the same contact twice"),
            Self::TooManyMembers { max } => {
                write!(f, "must not bring the group to more than {max} members")
            }
            Self::AddedAndRemoved => {
                f.write_str("must not name a contact that the same change also adds")
            }
            Self::ActiveBeforeCreation => f.write_str("must not be before the contact was created"),
            Self::ConversationWithSelf => f.write_str("must be another contact than yourself"),
            Self::OutsideConversation => f.write_str("must be a message of this conversation"),
            Self::BeforeCreation => f.write_str("must not be before the conversation's created_at"),
            Self::TooFarInFuture { tolerance_secs } => write!(
                f,
                "must not be more than {tolerance_secs} seconds in the future"
            ),
            Self::LastOwnerRemoved => {
                f.write_str("must not remove the group's last owner; delete the group instead")
            }
            Self::UnknownContacts => f.write_str("must all be ids of existing contacts"),
            Self::CursorNotInList => {
                f.write_str("must be the id of an item in the list being paged")
            }
            Self::EventNotKept => {
                f.write_str("must be a known event, not older than the events kept")
            }
            Self::NotAttachable => {
                f.write_str("must be the id of an upload of your own that is not attached yet")
            }
            Self::PrivateAddress => f.write_str(
                "must not name a private, loopback, link-local or otherwise reserved address",
            ),
            Self::NoContent => f.write_str("is required unless the message has attachments"),
            Self::NotMember => f.write_str("must be members of the group"),
            Self::IsOwner => f.write_str("must not name the group's owner"),
            Self::IsSelf => f.write_str("must be another contact than yourself"),
            Self::OwnMessage => f.write_str("must be a message someone else sent"),
            Self::ThreadReply => {
                f.write_str("must be a message that is not itself a reply in a thread")
            }
            Self::TooManyMentions { max } => {
                write!(f, "must not name more than {max} contacts")
            }
            Self::DuplicateMention => f.write_str("must not name the same contact twice"),
            Self::NotConversationMember => f.write_str("must be members of the conversation"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_in_domain_words() {
        assert_eq!(
            DomainError::breaks(Field::Attachments, Rule::TooManyAttachments { max: 10 })
                .to_string(),
            "attachments must not bring a message to more than 10 attachments"
        );
        // The rules between an entity's fields, too.
        assert_eq!(
            DomainError::breaks(Field::Attachments, Rule::OfAnotherMessage).to_string(),
            "attachments must all belong to the message"
        );
        assert_eq!(
            DomainError::breaks(Field::LastActiveAt, Rule::ActiveBeforeCreation).to_string(),
            "last activity must not be before the contact was created"
        );
        assert_eq!(
            DomainError::breaks(Field::Members, Rule::DuplicateMember).to_string(),
            "group members must not hold the same contact twice"
        );
        assert_eq!(
            DomainError::breaks(Field::PinnedMessage, Rule::OutsideConversation).to_string(),
            "pinned message must be a message of this conversation"
        );
        assert_eq!(
            DomainError::invalid(Field::PageLimit, "must be an integer from 1 to 100").to_string(),
            "page size must be an integer from 1 to 100"
        );
        // The rule, not how an API writes the value or what a client does.
        assert_eq!(
            DomainError::breaks(
                Field::ArchivedAt,
                Rule::TooFarInFuture { tolerance_secs: 60 }
            )
            .to_string(),
            "archive time must not be more than 60 seconds in the future"
        );
        assert_eq!(
            DomainError::breaks(Field::EventsAfter, Rule::EventNotKept).to_string(),
            "event to resume after must be a known event, not older than the events kept"
        );
    }
}
