//! Finding contacts and changing one's own profile.

use confab_domain::{contact_updated, Change, Contact, ContactId, ContactProfilePatch};

use crate::{Confab, ServiceError};

impl Confab {
    /// Any contact by id (contacts are how clients find someone to talk to).
    pub async fn contact(&self, _caller: &Contact, id: ContactId) -> Result<Contact, ServiceError> {
        self.ports
            .contacts
            .contact(id)
            .await?
            .ok_or(ServiceError::not_found())
    }

    /// Zero or one contact with this username (case-insensitive).
    pub async fn find_contacts(
        &self,
        _caller: &Contact,
        username: &str,
    ) -> Result<Vec<Contact>, ServiceError> {
        Ok(self
            .ports
            .contacts
            .contact_by_username(username)
            .await?
            .into_iter()
            .collect())
    }

    /// Changes the caller's own phone number and avatar.
    pub async fn update_me(
        &self,
        caller: &Contact,
        patch: ContactProfilePatch,
    ) -> Result<Contact, ServiceError> {
        if patch.is_empty() {
            return Ok(caller.clone());
        }
        let events = contact_updated(
            Change::new(caller.id(), self.now()),
            self.event_ids(),
            caller.id(),
        );
        let contact = self
            .ports
            .contacts
            .update_contact(caller.id(), patch, self.outbox(events))
            .await?;
        self.committed();
        // The caller's next requests see the new profile at once.
        self.tokens.refresh(&contact);
        Ok(contact)
    }
}
