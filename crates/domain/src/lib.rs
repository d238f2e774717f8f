//! confab's domain: the entities (contacts, conversations, messages, groups),
//! their validated value objects and the rules that govern them (pin, mute,
//! archive, pinned message, edit, react, attach, delete).
//!
//! This crate is pure: no IO, no async, no serialization framework, no diesel,
//! no actix. Other services reuse it as it is. It must never depend on any
//! other confab crate.

mod error;
mod ids;
mod time;
mod values;
mod contact;
mod conversation;
mod group;
mod message;
mod page;

pub use contact::{Contact, ContactProfilePatch};
pub use conversation::{
    Conversation, ConversationKind, ConversationView, MemberState, MemberStatePatch,
    PinnedMessageChange, ARCHIVE_FUTURE_TOLERANCE_SECS,
};
pub use error::DomainError;
pub use group::{Group, GroupMember, GroupRole};
pub use ids::{AttachmentId, ContactId, ConversationId, GroupId, MessageId};
pub use message::{
    check_attachment_count, Attachment, Message, NewAttachment, Reaction, Reactor, MAX_ATTACHMENTS,
    MAX_REACTION_NAMES,
};
pub use page::{Cursor, Page, PageLimit, Paged};
pub use time::Timestamp;
pub use values::{
    AvatarUrl, FileSize, FileType, FileUrl, Filename, GroupDescription, GroupName, MessageText,
    PhoneNumber, ReactionName, Username,
};
