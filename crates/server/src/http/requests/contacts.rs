//! Requests of `/v1/contacts`.

use confab_domain::{AvatarUrl, PhoneNumber, Username};

use super::{optional, request, text};

request! {
    /// `GET /v1/contacts?username=<name>`.
    pub struct FindContactsIn {
        username: Username = text(Username::new),
    }
}

request! {
    /// `PUT /v1/contacts/me`.
    pub struct UpdateMeIn {
        phone_number: Option<PhoneNumber> = optional(text(PhoneNumber::new)),
        avatar_url: Option<AvatarUrl> = optional(text(AvatarUrl::new)),
    }
}
