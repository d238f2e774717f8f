//! Contacts: creating them.
use confab_ports::StoreError;

use crate::ServiceError;

use super::*;

#[tokio::test]
async fn duplicate_username_is_a_conflict() {
    let mut m = Mocks::new();
    m.contacts
        .expect_create_contact()
        .withf(|c, _| c.username().as_str() == "ALICE")
        .times(1)
        .returning(|c, _| {
            Err(StoreError::Conflict(format!(
                "username {} is taken",
                c.username()
            )))
        });
    assert!(matches!(
        m.service().create_contact("ALICE", "+15550100", None).await,
        Err(ServiceError::Conflict(_))
    ));
}
