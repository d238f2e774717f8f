//! confab's domain: the entities (contacts, conversations, messages, groups),
//! their validated value objects and the rules that govern them (pin, mute,
//! archive, pinned message, edit, react, attach, delete).
//!
//! This crate is pure: no IO, no async, no serialization framework, no diesel,
//! no actix. Other services reuse it as it is. It must never depend on any
//! other confab crate.

mod contact;
mod conversation;
mod error;
mod event;
mod group;
mod ids;
mod message;
mod page;
mod time;
mod values;

pub use contact::{Contact, ContactProfilePatch};
pub use conversation::{
    Conversation, ConversationKind, ConversationView, MemberState, MemberStatePatch,
    PinnedMessageChange, ARCHIVE_FUTURE_TOLERANCE_SECS,
};
pub use error::{DomainError, Field, Rule};
pub use event::{
    contact_created, contact_updated, conversation_created, conversation_deleted,
    conversation_opened, conversation_updated, group_created, group_deleted, group_updated,
    message_deleted, message_sent, message_updated, Audience, Change, Event, EventId, EventType,
    Subject,
};
pub use group::{Group, GroupMember, GroupRole};
pub use ids::{AttachmentId, ContactId, ConversationId, GroupId, MessageId};
pub use message::{
    check_attachment_count, check_reaction_name_count, Attachment, Message, NewAttachment,
    Reaction, Reactor, MAX_ATTACHMENTS, MAX_REACTION_NAMES,
};
pub use page::{Cursor, Page, PageLimit, Paged};
pub use time::Timestamp;
pub use values::{
    AvatarUrl, FileSize, FileType, FileUrl, Filename, GroupDescription, GroupName, MessageText,
    PhoneNumber, ReactionName, Username,
};
