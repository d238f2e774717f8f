//! Changes to messages: edits, reactions, attachments (and their limits)
//! and deletion.

use confab_domain::{
    AttachmentId, DomainError, Field, MemberStatePatch, MessageId, PinnedMessageChange,
    ReactionName,
};
use confab_ports::{MessageChange, StoreError};

use crate::support::no_events;
use crate::support::{
    all_messages, assert_err, at, attachment, change, contact, direct, new_id, new_message, page,
    reactions_of, rn, send, text, S,
};

async fn messages_update_text_reactions_attachments(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = send(&s, &c, &alice, "first", at(2)).await;

    // Nothing submitted, or the same text: no change, no updated_at.
    let same = s
        .update_message(m.id(), change(&alice, at(3)), no_events())
        .await
        .expect("empty");
    assert_eq!(same, m);
    let same = s
        .update_message(
            m.id(),
            MessageChange {
                text: Some(text("first")),
                ..change(&alice, at(3))
            },
            no_events(),
        )
        .await
        .expect("same text");
    assert_eq!(same.updated_at(), None);

    let edited = s
        .update_message(
            m.id(),
            MessageChange {
                text: Some(text("second")),
                ..change(&alice, at(4))
            },
            no_events(),
        )
        .await
        .expect("edit");
    assert_eq!(edited.text().as_str(), "second");
    assert_eq!(edited.updated_at(), Some(at(4)));
    assert_eq!(edited.created_at(), m.created_at());

    // Reactions: grouped by name in order of the first reaction, reactors in
    // the order they reacted; one already had is skipped.
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_reactions: vec![rn("like")],
                ..change(&bob, at(5))
            },
            no_events(),
        )
        .await
        .expect("bob likes");
    assert_eq!(r.updated_at(), Some(at(5)));
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_reactions: vec![rn("heart"), rn("like"), rn("heart")],
                ..change(&alice, at(6))
            },
            no_events(),
        )
        .await
        .expect("alice reacts");
    assert_eq!(
        reactions_of(&r),
        vec![
            ("like".into(), vec!["bob".into(), "alice".into()]),
            ("heart".into(), vec!["alice".into()]),
        ]
    );
    assert_eq!(r.reactions()[0].reactors()[0].contact_id, bob.id());
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_reactions: vec![rn("like")],
                ..change(&bob, at(7))
            },
            no_events(),
        )
        .await
        .expect("bob likes again");
    assert_eq!(
        r.updated_at(),
        Some(at(6)),
        "a duplicate reaction changes nothing"
    );
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_reactions: vec![rn("like"), rn("heart")],
                ..change(&bob, at(8))
            },
            no_events(),
        )
        .await
        .expect("bob hearts");
    assert_eq!(r.updated_at(), Some(at(8)));
    assert_eq!(
        reactions_of(&r),
        vec![
            ("like".into(), vec!["bob".into(), "alice".into()]),
            ("heart".into(), vec!["alice".into(), "bob".into()]),
        ]
    );

    // Attachments are appended after the existing ones, in order.
    let a1 = attachment(1);
    let a2 = attachment(2);
    let a3 = attachment(3);
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_attachments: vec![a1.clone(), a2.clone()],
                ..change(&alice, at(9))
            },
            no_events(),
        )
        .await
        .expect("attach");
    assert_eq!(r.updated_at(), Some(at(9)));
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_attachments: vec![a3.clone()],
                text: Some(text("third")),
                ..change(&alice, at(10))
            },
            no_events(),
        )
        .await
        .expect("attach and edit");
    let ids: Vec<AttachmentId> = r.attachments().iter().map(|a| a.id).collect();
    assert_eq!(ids, vec![a1.id(), a2.id(), a3.id()]);
    assert_eq!(r.attachments()[2].created_at, at(10));
    assert_eq!(r.text().as_str(), "third");
    assert_eq!(r.updated_at(), Some(at(10)));
    assert_eq!(r.reactions().len(), 2);
    assert_eq!(
        s.message_for(alice.id(), m.id()).await.expect("get"),
        Some(r.clone())
    );

    // Lists show the same message.
    let listed = s
        .list_messages(bob.id(), Some(c.id()).into(), page(10, None))
        .await
        .expect("list");
    assert_eq!(listed.items, vec![r]);

    assert_err!(
        s.update_message(
            MessageId::from_uuid(new_id()),
            change(&alice, at(11)),
            no_events()
        )
        .await,
        StoreError::NotFound
    );
}

async fn messages_reaction_name_limit(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = send(&s, &c, &alice, "react", at(2)).await;
    let names: Vec<ReactionName> = (0..31).map(|i| rn(&format!("r{i}"))).collect();
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_reactions: names,
                ..change(&alice, at(3))
            },
            no_events(),
        )
        .await
        .expect("31 names");
    assert_eq!(r.reactions().len(), 31);
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_reactions: vec![rn("r31")],
                ..change(&bob, at(4))
            },
            no_events(),
        )
        .await
        .expect("the 32nd name");
    assert_eq!(r.reactions().len(), 32);

    // The 33rd name is refused, and nothing of the change is applied.
    assert_err!(
        s.update_message(
            m.id(),
            MessageChange {
                add_reactions: vec![rn("r0"), rn("r32")],
                text: Some(text("changed")),
                ..change(&bob, at(5))
            },
            no_events()
        )
        .await,
        StoreError::Rule(DomainError::Invalid {
            field: Field::Reactions,
            ..
        })
    );
    let now = s
        .message_for(alice.id(), m.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(now, r);

    // Joining an existing name is still fine.
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_reactions: vec![rn("r0"), rn("r5")],
                ..change(&bob, at(6))
            },
            no_events(),
        )
        .await
        .expect("join existing names");
    assert_eq!(r.reactions().len(), 32);
    assert_eq!(
        reactions_of(&r)[0],
        ("r0".into(), vec!["alice".into(), "bob".into()])
    );
}

async fn messages_attachment_limit(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut new = new_message(&c, &alice, "files", at(2));
    new.attachments = (0..9).map(attachment).collect();
    let m = s
        .append_message(new, no_events(), None)
        .await
        .expect("9 attachments");

    let tenth = attachment(9);
    let r = s
        .update_message(
            m.id(),
            MessageChange {
                add_attachments: vec![tenth.clone()],
                ..change(&alice, at(3))
            },
            no_events(),
        )
        .await
        .expect("the 10th");
    assert_eq!(r.attachments().len(), 10);
    assert_eq!(r.attachments()[9].id, tenth.id());

    assert_err!(
        s.update_message(
            m.id(),
            MessageChange {
                add_attachments: vec![attachment(10)],
                ..change(&alice, at(4))
            },
            no_events()
        )
        .await,
        StoreError::Rule(DomainError::Invalid {
            field: Field::Attachments,
            ..
        })
    );
    assert_eq!(
        s.message_for(alice.id(), m.id()).await.expect("get"),
        Some(r)
    );
}

async fn messages_remove_reaction(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = send(&s, &c, &alice, "hi", at(2)).await;
    s.update_message(
        m.id(),
        MessageChange {
            add_reactions: vec![rn("like"), rn("wave")],
            ..change(&bob, at(3))
        },
        no_events(),
    )
    .await
    .expect("bob");
    s.update_message(
        m.id(),
        MessageChange {
            add_reactions: vec![rn("like")],
            ..change(&alice, at(4))
        },
        no_events(),
    )
    .await
    .expect("alice");

    let r = s
        .remove_reaction(m.id(), bob.id(), rn("like"), at(5), no_events())
        .await
        .expect("remove");
    // Names follow their first remaining reaction: bob's "wave" now comes
    // before alice's "like".
    assert_eq!(
        reactions_of(&r),
        vec![
            ("wave".into(), vec!["bob".into()]),
            ("like".into(), vec!["alice".into()])
        ]
    );
    assert_eq!(r.updated_at(), Some(at(5)));
    // Not having it is not an error, and changes nothing.
    let r = s
        .remove_reaction(m.id(), bob.id(), rn("like"), at(6), no_events())
        .await
        .expect("remove again");
    assert_eq!(r.updated_at(), Some(at(5)));
    let r = s
        .remove_reaction(m.id(), alice.id(), rn("nope"), at(6), no_events())
        .await
        .expect("never had it");
    assert_eq!(r.updated_at(), Some(at(5)));
    // The last reactor of a name takes the name with them.
    let r = s
        .remove_reaction(m.id(), alice.id(), rn("like"), at(7), no_events())
        .await
        .expect("remove");
    assert_eq!(reactions_of(&r), vec![("wave".into(), vec!["bob".into()])]);
    assert_eq!(r.updated_at(), Some(at(7)));

    assert_err!(
        s.remove_reaction(
            MessageId::from_uuid(new_id()),
            bob.id(),
            rn("like"),
            at(8),
            no_events()
        )
        .await,
        StoreError::NotFound
    );
}

async fn messages_delete_clears_pin(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut new = new_message(&c, &alice, "pinned", at(2));
    new.attachments = vec![attachment(1)];
    let m = s
        .append_message(new, no_events(), None)
        .await
        .expect("append");
    let other = send(&s, &c, &bob, "other", at(3)).await;
    s.update_message(
        m.id(),
        MessageChange {
            add_reactions: vec![rn("like")],
            ..change(&bob, at(4))
        },
        no_events(),
    )
    .await
    .expect("react");
    s.update_conversation(
        alice.id(),
        c.id(),
        Some(PinnedMessageChange::Pin(m.id())),
        MemberStatePatch::default(),
        no_events(),
    )
    .await
    .expect("pin");

    s.delete_message(m.id(), alice.id(), no_events())
        .await
        .expect("delete");
    assert_eq!(s.message_for(alice.id(), m.id()).await.expect("get"), None);
    assert_eq!(all_messages(&s, &bob, Some(c.id())).await, vec![other.id()]);
    let v = s
        .conversation_for(bob.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.pinned_message_id(), None);
    assert_err!(
        s.delete_message(m.id(), alice.id(), no_events()).await,
        StoreError::NotFound
    );
    assert_err!(
        s.delete_message(MessageId::from_uuid(new_id()), alice.id(), no_events())
            .await,
        StoreError::NotFound
    );
    // The other message and its conversation are untouched.
    assert!(s
        .message_for(alice.id(), other.id())
        .await
        .expect("get")
        .is_some());
    // Deleting a message that is not pinned leaves the pin alone.
    let third = send(&s, &c, &bob, "third", at(5)).await;
    s.update_conversation(
        alice.id(),
        c.id(),
        Some(PinnedMessageChange::Pin(third.id())),
        MemberStatePatch::default(),
        no_events(),
    )
    .await
    .expect("pin");
    s.delete_message(other.id(), alice.id(), no_events())
        .await
        .expect("delete");
    let v = s
        .conversation_for(bob.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.pinned_message_id(), Some(third.id()));
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    messages_update_text_reactions_attachments,
    messages_reaction_name_limit,
    messages_attachment_limit,
    messages_remove_reaction,
    messages_delete_clears_pin,
);
