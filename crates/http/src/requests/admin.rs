//! Requests of `/v1/admin` (the server API, docs/api.md "Server API: from an app's backend").

use confab_domain::{AvatarUrl, ContactId, Page, PhoneNumber, Username};
use uuid::Uuid;

use super::{int, optional, request, shape, strings, text, Flatten};

request! {
    /// `POST /v1/admin/contacts`.
    pub struct CreateContactIn {
        username: Username = text(shape::username, Username::new),
        phone_number: PhoneNumber = text(shape::phone_number, PhoneNumber::new),
        avatar_url: Option<AvatarUrl> = optional(text(shape::avatar_url, AvatarUrl::new)),
    }
}

request! {
    /// `GET /v1/admin/contacts`.
    pub struct ListContactsIn {
        username: Option<Username> = optional(text(shape::username, Username::new)),
        page: Page<ContactId> = Flatten,
    }
}

request! {
    /// `PUT /v1/admin/contacts/{id}`.
    pub struct UpdateContactIn {
        phone_number: Option<PhoneNumber> = optional(text(shape::phone_number, PhoneNumber::new)),
        avatar_url: Option<AvatarUrl> = optional(text(shape::avatar_url, AvatarUrl::new)),
    }
}

request! {
    /// `POST /v1/admin/contacts/{id}/tokens`: `expires_in` seconds, 60 to
    /// 31536000 (the service judges the range).
    pub struct MintTokenIn {
        expires_in: Option<i64> = optional(int(shape::expires_in, Ok)),
    }
}

request! {
    /// `GET /v1/admin/contacts/{id}/tokens`.
    pub struct ListTokensIn {
        page: Page<Uuid> = Flatten,
    }
}

request! {
    /// `POST /v1/admin/webhooks`: `events[]` absent or empty means every
    /// event type.
    pub struct CreateWebhookIn {
        url: String = text(shape::http_url, Ok),
        events: Vec<String> = strings(),
    }
}

request! {
    /// `GET /v1/admin/conversations/{id}/members`.
    pub struct ListConversationMembersIn {
        page: Page<ContactId> = Flatten,
    }
}

request! {
    /// `GET /v1/admin/webhooks/{id}/deliveries`.
    pub struct ListDeliveriesIn {
        page: Page<Uuid> = Flatten,
    }
}
