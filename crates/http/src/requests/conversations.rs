//! Requests of `/v1/conversations`.

use confab_domain::{
    ContactId, ConversationId, DomainError, Field, GroupId, MessageId, Page, Timestamp, TypingState,
};
use confab_service::ConversationTarget;

use super::{
    boolean, clearable_id, clearable_time, documented, id, optional, request, shape, text, Flatten,
    FromParams, Shape,
};
use crate::error::ApiError;
use crate::params::{Malformed, Params};

request! {
    /// `GET /v1/conversations`: filters, then the page.
    pub struct ListConversationsIn {
        muted: Option<bool> = optional(boolean()),
        archived: Option<bool> = optional(boolean()),
        pinned: Option<bool> = optional(boolean()),
        group_id: Option<GroupId> = optional(id(Malformed::NotFound)),
        page: Page<ConversationId> = Flatten,
    }
}

/// `POST /v1/conversations`: exactly one of `contact_id` and `group_id`.
/// Neither is 400 `parameter_missing` on `contact_id`, both is 400
/// `parameter_invalid` on `group_id`. A malformed id is the same 404 as an
/// unknown one. Written by hand: the two keys make one value.
/// `distinct=true` (with `contact_id` only) asks for the caller's existing
/// direct conversation with that contact, when there is one.
#[derive(Debug)]
pub struct CreateConversationIn {
    pub target: ConversationTarget,
    pub distinct: bool,
}

const CONTACT_ID: &str = "contact_id";
const GROUP_ID: &str = "group_id";
const DISTINCT: &str = "distinct";

impl FromParams for CreateConversationIn {
    fn knows(key: &str) -> bool {
        key == CONTACT_ID || key == GROUP_ID || key == DISTINCT
    }

    fn take(p: &mut Params) -> Result<Self, ApiError> {
        let target = match (p.has(CONTACT_ID), p.has(GROUP_ID)) {
            (true, true) => {
                return Err(ApiError::invalid(
                    GROUP_ID,
                    "give either contact_id or group_id, not both",
                ))
            }
            (false, false) => {
                return Err(ApiError::missing(CONTACT_ID)
                    .with_message("contact_id or group_id is required"))
            }
            (true, false) => ConversationTarget::Contact(
                p.required_id::<ContactId>(CONTACT_ID, Malformed::NotFound)?,
            ),
            (false, true) => {
                ConversationTarget::Group(p.required_id::<GroupId>(GROUP_ID, Malformed::NotFound)?)
            }
        };
        let distinct = p.optional_bool(DISTINCT)?.unwrap_or(false);
        if distinct && matches!(target, ConversationTarget::Group(_)) {
            return Err(ApiError::invalid(
                DISTINCT,
                "distinct applies to a direct conversation (contact_id): a group has one \
                 conversation per POST",
            ));
        }
        Ok(Self { target, distinct })
    }

    fn describe(shape: &mut Shape) {
        shape.add(
            CONTACT_ID,
            shape::described_id("the other contact of a direct conversation; not with group_id"),
            false,
        );
        shape.add(
            GROUP_ID,
            shape::described_id("the group of a group conversation; not with contact_id"),
            false,
        );
        shape.add(DISTINCT, shape::boolean(), false);
    }
}

documented!(CreateConversationIn);

request! {
    /// `PUT /v1/conversations/{id}`: `pinned_message_id` (empty or null
    /// unpins), `archived_at` in Unix seconds (empty or null unarchives).
    pub struct UpdateConversationIn {
        pinned_message_id: Option<Option<MessageId>> = clearable_id(Malformed::Invalid),
        is_pinned: Option<bool> = optional(boolean()),
        is_muted: Option<bool> = optional(boolean()),
        archived_at: Option<Option<Timestamp>> = clearable_time(),
    }
}

fn typing_state(raw: String) -> Result<TypingState, DomainError> {
    raw.parse()
        .map_err(|_| DomainError::invalid(Field::TypingState, "must be start or stop"))
}

request! {
    /// `POST /v1/conversations/{id}/typing`: `state`, `start` when absent.
    pub struct TypingIn {
        state: Option<TypingState> = optional(text(shape::typing_state, typing_state)),
    }
}
