//! Health and contacts: ping, create and find, profile updates, activity.

use confab_domain::{
    AvatarUrl, Contact, ContactId, ContactParts, ContactProfilePatch, PhoneNumber, Username,
};
use confab_ports::StoreError;

use crate::support::no_events;
use crate::support::{assert_err, at, at_us, contact, new_id, page, S};

async fn health_ping(s: S) {
    s.ping().await.expect("ping");
}

async fn contacts_create_and_find(s: S) {
    let alice = contact(&s, "Alice").await;
    assert_eq!(
        s.contact(alice.id()).await.expect("get"),
        Some(alice.clone())
    );
    assert_eq!(
        s.contact(ContactId::from_uuid(new_id()))
            .await
            .expect("get"),
        None
    );

    // Usernames are found and unique case-insensitively.
    assert_eq!(
        s.contact_by_username("aLiCe").await.expect("by username"),
        Some(alice.clone())
    );
    assert_eq!(
        s.contact_by_username("Alice").await.expect("by username"),
        Some(alice.clone())
    );
    assert_eq!(
        s.contact_by_username("bob").await.expect("by username"),
        None
    );
    for taken in ["Alice", "alice", "ALICE"] {
        let dup = Contact::new(ContactParts {
            id: ContactId::from_uuid(new_id()),
            username: Username::new(taken.into()).expect("username"),
            ..alice.clone().into_parts()
        })
        .expect("contact");
        assert_err!(
            s.create_contact(dup, no_events()).await,
            StoreError::Conflict(_)
        );
    }
    let bob = contact(&s, "bob").await;
    assert_ne!(bob.id(), alice.id());
}

async fn contacts_update_and_touch(s: S) {
    let alice = contact(&s, "alice").await;
    let updated = s
        .update_contact(
            alice.id(),
            ContactProfilePatch {
                phone_number: Some(PhoneNumber::new("+4930123456".into()).expect("phone")),
                avatar_url: None,
            },
            no_events(),
        )
        .await
        .expect("update");
    assert_eq!(updated.phone_number().as_str(), "+4930123456");
    assert_eq!(updated.avatar_url(), alice.avatar_url());
    assert_eq!(updated.username(), alice.username());

    let avatar = AvatarUrl::new("https://img.example/a.png".into()).expect("avatar");
    let updated = s
        .update_contact(
            alice.id(),
            ContactProfilePatch {
                phone_number: None,
                avatar_url: Some(avatar.clone()),
            },
            no_events(),
        )
        .await
        .expect("update");
    assert_eq!(*updated.avatar_url(), avatar);
    assert_eq!(updated.phone_number().as_str(), "+4930123456");

    // An empty patch changes nothing.
    let same = s
        .update_contact(alice.id(), ContactProfilePatch::default(), no_events())
        .await
        .expect("empty patch");
    assert_eq!(same, updated);
    assert_eq!(
        s.contact(alice.id()).await.expect("get"),
        Some(updated.clone())
    );

    assert_err!(
        s.update_contact(
            ContactId::from_uuid(new_id()),
            ContactProfilePatch::default(),
            no_events()
        )
        .await,
        StoreError::NotFound
    );
    assert_err!(
        s.update_contact(
            ContactId::from_uuid(new_id()),
            ContactProfilePatch {
                phone_number: Some(PhoneNumber::new("+15550199".into()).expect("phone")),
                avatar_url: None
            },
            no_events()
        )
        .await,
        StoreError::NotFound
    );

    // Activity only moves forward.
    s.touch_contact(alice.id(), at(100)).await.expect("touch");
    let got = s.contact(alice.id()).await.expect("get").expect("some");
    assert_eq!(got.last_active_at(), at(100));
    s.touch_contact(alice.id(), at(50)).await.expect("touch");
    let got = s.contact(alice.id()).await.expect("get").expect("some");
    assert_eq!(got.last_active_at(), at(100));
    assert_eq!(got.created_at(), at(0));
    s.touch_contact(alice.id(), at_us(100, 1))
        .await
        .expect("touch");
    let got = s.contact(alice.id()).await.expect("get").expect("some");
    assert_eq!(got.last_active_at(), at_us(100, 1));
}

/// The server API's list of every contact: newest first, paged both ways,
/// filtered by username in any letter case.
async fn contacts_listed_newest_first_and_by_username(s: S) {
    let mut made = Vec::new();
    for name in ["ann", "Ben", "cy", "dee"] {
        made.push(contact(&s, name).await.id());
    }
    let ids = |p: &confab_domain::Paged<confab_domain::Contact>| -> Vec<confab_domain::ContactId> {
        p.items.iter().map(|c| c.id()).collect()
    };
    let first = s.list_contacts(None, page(3, None)).await.expect("list");
    assert_eq!(ids(&first), [made[3], made[2], made[1]]);
    assert!(first.has_more);
    let rest = s
        .list_contacts(None, page(3, Some(confab_domain::Cursor::After(made[1]))))
        .await
        .expect("list");
    assert_eq!(ids(&rest), [made[0]]);
    assert!(!rest.has_more);
    let back = s
        .list_contacts(None, page(2, Some(confab_domain::Cursor::Before(made[0]))))
        .await
        .expect("list");
    assert_eq!(ids(&back), [made[2], made[1]]);
    assert!(back.has_more);
    let ben = s
        .list_contacts(Some("bEN".into()), page(10, None))
        .await
        .expect("by name");
    assert_eq!(ids(&ben), [made[1]]);
    let none = s
        .list_contacts(Some("zed".into()), page(10, None))
        .await
        .expect("by name");
    assert!(none.items.is_empty() && !none.has_more);
    assert_err!(
        s.list_contacts(
            None,
            page(
                3,
                Some(confab_domain::Cursor::After(ContactId::from_uuid(new_id())))
            )
        )
        .await,
        StoreError::CursorNotFound
    );
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    health_ping,
    contacts_create_and_find,
    contacts_update_and_touch,
    contacts_listed_newest_first_and_by_username,
);
