// The crate's documentation is its README, so that the example there is
// compiled and run as a doctest and cannot drift from the code.
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod attachment;
mod contact;
mod conversation;
mod depth;
mod error;
mod event;
mod group;
mod ids;
mod message;
mod page;
mod reaction;
mod report;
mod search;
mod time;
mod typing;
mod values;

pub use attachment::{
    check_attachment_count, AddAttachment, Attachment, ContentDigest, FileSource, NewAttachment,
    MAX_ATTACHMENTS,
};
pub use contact::{check_other_contact, Block, Contact, ContactParts, ContactProfilePatch, Viewer};
pub use conversation::{
    Conversation, ConversationKind, ConversationParts, ConversationView, MemberState,
    MemberStatePatch, PinnedMessageChange, ARCHIVE_FUTURE_TOLERANCE_SECS,
};
pub use depth::{mention_changes, Mentions, MessageEdit, Quote, QuotedMessage, MAX_MENTIONS};
pub use error::{DomainError, Field, Rule};
pub use event::{
    attachment_changed, contact_created, contact_updated, conversation_created,
    conversation_deleted, conversation_opened, conversation_updated, group_created, group_deleted,
    group_updated, message_deleted, message_sent, message_updated, report_created, Audience,
    Change, Event, EventId, EventType, ParseEventTypeError, Subject,
};
pub use group::{
    check_list, Group, GroupDetailsPatch, GroupEdit, GroupMember, GroupParts, GroupRole,
    DEFAULT_MAX_GROUP_MEMBERS, FIRST_MEMBERS,
};
pub use ids::{
    AttachmentId, ContactId, ConversationId, EditId, GroupId, MessageId, ParseIdError, ReportId,
};
pub use message::{check_message_content, Message, MessageParts};
pub use page::{Cursor, Page, PageLimit, Paged};
pub use reaction::{check_reaction_name_count, Reaction, Reactor, MAX_REACTION_NAMES};
pub use report::{
    report_hour, secs_to_next_report_hour, NewReport, ParseReportError, Report, ReportDescription,
    ReportReason, ReportStatus, ReportTarget, DEFAULT_REPORTS_PER_HOUR,
};
pub use search::{fold, SearchQuery, MAX_QUERY_CHARS, MIN_TERM_CHARS, MIN_WORD_RUN};
pub use time::Timestamp;
pub use typing::{
    ParseTypingStateError, Typing, TypingLine, TypingState, TypingStep, TYPING_EXPIRES_SECS,
    TYPING_MIN_INTERVAL_MICROS,
};
pub use values::{
    AvatarUrl, FileSize, FileType, FileUrl, Filename, GroupDescription, GroupName, MessageText,
    PhoneNumber, ReactionName, Username,
};

/// Whether some key comes twice in `keys`: sorted, so that a list of
/// thousands (a group's members, one reaction's reactors) costs no more
/// than sorting it.
pub(crate) fn has_repeats<K: Ord>(mut keys: Vec<K>) -> bool {
    keys.sort_unstable();
    keys.windows(2).any(|w| w[0] == w[1])
}
