//! Groups: who may change their members.
use crate::ServiceError;

use super::*;

#[tokio::test]
async fn a_member_may_only_remove_themself_from_a_group() {
    let mut m = Mocks::new();
    let g = group_with(&alice(), &bob());
    m.groups
        .expect_group_for()
        .returning(move |_, _| Ok(Some(g.clone())));
    let update = crate::GroupUpdate {
        remove_contact_ids: vec![alice().id()],
        ..Default::default()
    };
    assert!(matches!(
        m.service()
            .update_group(&bob(), GroupId::from_uuid(Uuid::from_u128(7)), update)
            .await,
        Err(ServiceError::Forbidden(_))
    ));
}
