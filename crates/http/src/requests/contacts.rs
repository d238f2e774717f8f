//! Requests of `/v1/contacts`.

use confab_domain::{AvatarUrl, ContactId, Page, PhoneNumber, Username};

use super::{optional, request, shape, text, Flatten};

request! {
    /// `GET /v1/contacts?username=<name>`.
    pub struct FindContactsIn {
        username: Username = text(shape::username, Username::new),
    }
}

request! {
    /// `PUT /v1/contacts/me`.
    pub struct UpdateMeIn {
        phone_number: Option<PhoneNumber> = optional(text(shape::phone_number, PhoneNumber::new)),
        avatar_url: Option<AvatarUrl> = optional(text(shape::avatar_url, AvatarUrl::new)),
    }
}

request! {
    /// `GET /v1/contacts/blocked`.
    pub struct ListBlockedIn {
        page: Page<ContactId> = Flatten,
    }
}
