//! What the service's and the domain's errors become on the wire: each
//! domain [`Field`] the request parameter it is read from, each error its
//! status and code.

use confab_domain::{DomainError, Field};
use confab_service::ServiceError;

use super::{ApiError, IDEMPOTENCY_KEY};

/// The request parameter a domain input is read from. Attributes of an
/// attachment are named as inside one; [`ApiError::nested_in`] adds the
/// `attachments[i]` prefix where the handler knows it.
pub fn param(field: Field) -> std::borrow::Cow<'static, str> {
    std::borrow::Cow::Borrowed(match field {
        Field::Upload(i) => return std::borrow::Cow::Owned(format!("attachments[{i}][id]")),
        Field::File => "file",
        Field::MessageText => "message",
        Field::Attachments => "attachments",
        Field::FileUrl => "file_url",
        Field::Filename => "filename",
        Field::FileType => "file_type",
        Field::FileSize => "file_size",
        Field::Reactions => "reactions",
        Field::Username => "username",
        Field::PhoneNumber => "phone_number",
        Field::AvatarUrl => "avatar_url",
        // Never from a request: a rule of stored contacts.
        Field::LastActiveAt => "last_active_at",
        Field::GroupName => "name",
        Field::GroupDescription => "description",
        Field::Members => "contact_ids",
        Field::AddedMembers => "add_contact_ids",
        Field::RemovedMembers => "remove_contact_ids",
        Field::Contact => "contact_id",
        Field::Group => "group_id",
        Field::Conversation => "conversation_id",
        Field::PinnedMessage => "pinned_message_id",
        Field::ArchivedAt => "archived_at",
        Field::PageLimit => "limit",
        Field::PageAfter => "starting_after",
        Field::PageBefore => "ending_before",
        Field::TokenLifetime => "expires_in",
        Field::IdempotencyKey => IDEMPOTENCY_KEY,
        Field::EventsAfter => "after",
        Field::KeyName => "name",
        Field::KeyId => "id",
        Field::AddedAdmins => "add_admin_ids",
        Field::RemovedAdmins => "remove_admin_ids",
        // The path's contact.
        Field::BlockedContact => "id",
        Field::ReportedMessage => "message_id",
        Field::ReportedContact => "contact_id",
        Field::ReportReason => "reason",
        Field::ReportDescription => "description",
        Field::ReportStatus => "status",
        Field::ReplyTo => "reply_to_id",
        Field::Parent => "parent_id",
        Field::Mentions => "mentions",
        Field::TypingState => "state",
        Field::SearchQuery => "query",
    })
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid { field, rule } => Self::breaks(field, rule),
            ServiceError::Unauthorized => Self::invalid_token(),
            ServiceError::Expired => {
                Self::token_expired("the access token has expired: get a new one")
            }
            ServiceError::Forbidden(why) => Self::forbidden(why),
            ServiceError::Blocked { field, by_caller } => {
                Self::contact_blocked(by_caller, field.map(param).as_deref())
            }
            ServiceError::NotFound { of } => Self::not_found(of.map(param).as_deref()),
            ServiceError::TooLarge { max } => Self::upload_too_large(max),
            ServiceError::UploadQuota { used, limit } => Self::storage_quota(used, limit),
            ServiceError::TooManyUploads { max } => Self::too_many_uploads(max),
            ServiceError::StorageFull { .. } => Self::insufficient_storage(),
            ServiceError::TooManySearches { max } => Self::too_many_searches(max),
            ServiceError::Conflict(what) => Self::conflict(what),
            ServiceError::IdempotencyInFlight => Self::idempotency_in_flight(),
            ServiceError::IdempotencyKeyReused => Self::idempotency_key_reused(),
            ServiceError::IdempotencyQuota {
                max,
                retry_after_secs,
            } => Self::idempotency_quota(max, retry_after_secs),
            ServiceError::ReportQuota {
                max,
                retry_after_secs,
            } => Self::report_quota(max, retry_after_secs),
            e @ ServiceError::Unavailable(_) => Self::unavailable(&e),
            e @ ServiceError::Internal { .. } => Self::internal_error(&e),
        }
    }
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::Invalid { field, rule } => Self::breaks(field, rule),
            DomainError::Forbidden(why) => Self::forbidden(why),
            e @ DomainError::Blocked { .. } => ServiceError::from(e).into(),
        }
    }
}
