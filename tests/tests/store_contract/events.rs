//! The events outbox (docs/api.md "Listen for events"): each write stores its events in
//! its own transaction, for exactly the contacts who can see the change,
//! each with the payload its recipient's own read returns; a refused or
//! rolled-back write stores none.

use std::sync::Arc;

use confab_domain::{
    contact_created, contact_updated, conversation_created, conversation_deleted,
    conversation_opened, conversation_updated, group_created, group_deleted, group_updated,
    message_deleted, message_sent, message_updated, AvatarUrl, Contact, ContactId, ContactParts,
    ContactProfilePatch, Conversation, ConversationId, EventId, EventType, GroupId, GroupName,
    MemberStatePatch, Message, PhoneNumber, PinnedMessageChange, Username,
};
use confab_ports::{
    Completion, FanOutLimits, GroupChange, KeyClaim, Outbox, PayloadRenderer, StoreError,
    StoredEvent, StoredResponse,
};
use confab_server::payloads::WirePayloads;

use crate::event_log::{by, ids, Events};
use crate::support::{
    assert_err, at, attachment, change, contact, direct, group, group_conversation, new_id,
    new_message, no_events, rn, text, S,
};

static WIRE: std::sync::LazyLock<WirePayloads> = std::sync::LazyLock::new(WirePayloads::default);

async fn message_as(s: &S, who: &Contact, m: &Message) -> String {
    WIRE.message(
        &s.message_for(who.id(), m.id())
            .await
            .expect("read")
            .expect("visible"),
    )
}

async fn conversation_as(s: &S, who: &Contact, c: ConversationId) -> String {
    WIRE.conversation(
        &s.conversation_for(who.id(), c)
            .await
            .expect("read")
            .expect("visible"),
    )
}

async fn a_sent_message_is_one_event_for_its_members_only(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = ev.send(&s, &c, &alice, "hello", 2).await;

    let (a, b) = (ev.of(&s, &alice).await, ev.of(&s, &bob).await);
    assert_eq!(a.len(), 1, "one event for the sender");
    assert_eq!(b.len(), 1, "one event for the peer");
    assert_eq!(a[0].kind, EventType::MessageCreated);
    assert_eq!(a[0].id, b[0].id, "one id for the change, for all");
    assert_eq!(a[0].created_at, at(2));
    assert_eq!(a[0].payload, message_as(&s, &alice, &m).await);
    assert_eq!(b[0].payload, message_as(&s, &bob, &m).await);
    assert!(ev.of(&s, &carol).await.is_empty(), "an outsider: nothing");

    // A group conversation: the group's members, no one else.
    let dave = contact(&s, "dave").await;
    let g = group(&s, &alice, &[&bob, &carol], at(3)).await;
    let gc = group_conversation(&s, &alice, g.id(), at(4)).await;
    let mut with_files = new_message(&gc, &carol, "files", at(5));
    with_files.attachments = vec![attachment(1), attachment(2)];
    let e = message_sent(by(&carol, at(5)), ids(), with_files.id, gc.id());
    let m = s
        .append_message(with_files, ev.out(e), None)
        .await
        .expect("append");
    for who in [&alice, &bob, &carol] {
        let got = ev.of(&s, who).await;
        let last = got.last().expect("an event");
        assert_eq!(last.kind, EventType::MessageCreated);
        assert_eq!(last.payload, message_as(&s, who, &m).await);
    }
    assert_eq!(
        ev.kinds(&s, &carol).await,
        [EventType::MessageCreated],
        "attachments sent with a message are part of it"
    );
    assert!(ev.of(&s, &dave).await.is_empty());
}

async fn refused_or_rolled_back_writes_leave_no_event(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let everyone = [&alice, &bob, &carol];

    // Not a member: NotFound.
    let m = new_message(&c, &carol, "intruder", at(2));
    let e = message_sent(by(&carol, at(2)), ids(), m.id, c.id());
    assert_err!(
        s.append_message(m, ev.out(e), None).await,
        StoreError::NotFound
    );
    // A lost idempotency claim: ClaimLost, after the message and its events
    // were written in the transaction.
    let m = new_message(&c, &alice, "lost", at(3));
    let e = message_sent(by(&alice, at(3)), ids(), m.id, c.id());
    let lost = Completion::new(
        KeyClaim {
            contact_id: alice.id(),
            key: "never-claimed".into(),
            holder: new_id(),
        },
        |_: &Message| StoredResponse {
            code: 201,
            location: None,
            body: String::new(),
        },
    );
    assert_err!(
        s.append_message(m, ev.out(e), Some(lost)).await,
        StoreError::ClaimLost
    );
    for who in everyone {
        assert!(ev.of(&s, who).await.is_empty(), "{}", who.username());
    }

    // A rule refused after writing: the 11th attachment.
    let mut full = new_message(&c, &alice, "full", at(4));
    full.attachments = (0..10).map(attachment).collect();
    let full = s.append_message(full, no_events(), None).await.expect("10");
    let mut more = change(&alice, at(5));
    more.add_attachments = vec![attachment(11)];
    let e = message_updated(
        by(&alice, at(5)),
        ids(),
        full.id(),
        c.id(),
        &[more.add_attachments[0].id()],
    );
    assert_err!(
        s.update_message(full.id(), more, ev.out(e)).await,
        StoreError::Rule(_)
    );
    // Deletions by a non-member, of what is gone.
    let e = message_deleted(by(&carol, at(6)), ids(), full.id(), c.id());
    assert_err!(
        s.delete_message(full.id(), carol.id(), ev.out(e)).await,
        StoreError::NotFound
    );
    let e = conversation_deleted(by(&carol, at(6)), ids(), c.id());
    assert_err!(
        s.delete_conversation(c.id(), carol.id(), ev.out(e)).await,
        StoreError::NotFound
    );
    let gone = GroupId::from_uuid(new_id());
    let e = group_deleted(by(&alice, at(6)), ids(), gone);
    assert_err!(s.delete_group(gone, ev.out(e)).await, StoreError::NotFound);
    // Opening by an outsider.
    let e = conversation_opened(by(&carol, at(7)), ids(), c.id());
    assert_err!(
        s.open_conversation(carol.id(), c.id(), at(7), ev.out(e))
            .await,
        StoreError::NotFound
    );
    // A taken username.
    let dup = Contact::new(ContactParts {
        id: ContactId::from_uuid(new_id()),
        username: Username::new("ALICE".into()).expect("username"),
        phone_number: PhoneNumber::new("+15550100".into()).expect("phone"),
        avatar_url: AvatarUrl::none(),
        last_active_at: at(8),
        created_at: at(8),
    })
    .expect("contact");
    let e = contact_created(at(8), ids(), dup.id());
    assert_err!(
        s.create_contact(dup, ev.out(e)).await,
        StoreError::Conflict(_)
    );
    // One write that commits, after all of them: once its event is
    // readable, so would theirs be, had they committed.
    let probe = ev.send(&s, &c, &bob, "probe", 9).await;
    for who in [&alice, &bob] {
        let got = ev.of(&s, who).await;
        assert_eq!(got.len(), 1, "{}: only the probe", who.username());
        assert_eq!(got[0].payload, message_as(&s, who, &probe).await);
    }
    assert!(ev.of(&s, &carol).await.is_empty());
    let recent = s
        .recent_events(0, FanOutLimits::events(100), Arc::default())
        .await
        .expect("recent")
        .events;
    assert_eq!(recent.len(), 1, "no other event at all: {recent:?}");
}

async fn message_changes_are_events_only_when_something_changed(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = ev.send(&s, &c, &alice, "hello", 2).await;
    let before_a = ev.of(&s, &alice).await;
    let before_b = ev.of(&s, &bob).await;

    // Text and an attachment: message.updated, then attachment.created.
    let mut edit = change(&alice, at(3));
    edit.text = Some(text("edited"));
    edit.add_attachments = vec![attachment(1)];
    let added = edit.add_attachments[0].id();
    let e = message_updated(by(&alice, at(3)), ids(), m.id(), c.id(), &[added]);
    let edited = s
        .update_message(m.id(), edit, ev.out(e))
        .await
        .expect("edit");
    for (who, before) in [(&alice, &before_a), (&bob, &before_b)] {
        let got = ev.since(&s, who, before).await;
        let got_kinds: Vec<EventType> = got.iter().map(|e| e.kind).collect();
        assert_eq!(
            got_kinds,
            [EventType::MessageUpdated, EventType::AttachmentCreated]
        );
        assert_eq!(got[0].payload, message_as(&s, who, &m).await);
        assert_eq!(got[1].payload, WIRE.attachment(&edited.attachments()[0]));
        assert_ne!(got[0].id, got[1].id);
    }

    // bob reacts: an event; the same reaction again changes nothing: none.
    let react = |t: i64| {
        let mut r = change(&bob, at(t));
        r.add_reactions = vec![rn("like")];
        r
    };
    let e = message_updated(by(&bob, at(4)), ids(), m.id(), c.id(), &[]);
    s.update_message(m.id(), react(4), ev.out(e))
        .await
        .expect("react");
    let after_react = ev.of(&s, &bob).await;
    assert_eq!(
        after_react.last().map(|e| e.kind),
        Some(EventType::MessageUpdated)
    );
    assert_eq!(
        after_react.last().map(|e| e.payload.clone()),
        Some(message_as(&s, &bob, &m).await)
    );
    let e = message_updated(by(&bob, at(5)), ids(), m.id(), c.id(), &[]);
    s.update_message(m.id(), react(5), ev.out(e))
        .await
        .expect("again");
    assert!(
        ev.since(&s, &bob, &after_react).await.is_empty(),
        "no-op: no event"
    );

    // Taking back a reaction one does not have: none; one one has: one.
    let e = message_updated(by(&bob, at(6)), ids(), m.id(), c.id(), &[]);
    s.remove_reaction(m.id(), bob.id(), rn("heart"), at(6), ev.out(e))
        .await
        .expect("unreact nothing");
    assert!(ev.since(&s, &bob, &after_react).await.is_empty());
    let e = message_updated(by(&bob, at(7)), ids(), m.id(), c.id(), &[]);
    s.remove_reaction(m.id(), bob.id(), rn("like"), at(7), ev.out(e))
        .await
        .expect("unreact");
    let got = ev.since(&s, &alice, &ev.of(&s, &alice).await[..4]).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].kind, EventType::MessageUpdated);
    assert_eq!(got[0].payload, message_as(&s, &alice, &m).await);

    // Deleted: `{"id"}` for both members, nothing for others.
    let e = message_deleted(by(&alice, at(8)), ids(), m.id(), c.id());
    s.delete_message(m.id(), alice.id(), ev.out(e))
        .await
        .expect("delete");
    for who in [&alice, &bob] {
        let last = ev.of(&s, who).await.pop().expect("event");
        assert_eq!(last.kind, EventType::MessageDeleted);
        assert_eq!(last.payload, format!("{{\"id\":\"{}\"}}", m.id()));
    }
    assert!(ev.of(&s, &carol).await.is_empty());
}

async fn each_member_gets_its_own_view_of_a_conversation(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;

    // Created: each member's own view (a direct one's contact_id differs).
    let c = Conversation::new_direct(
        ConversationId::from_uuid(new_id()),
        alice.id(),
        bob.id(),
        at(1),
    )
    .expect("direct");
    let e = conversation_created(by(&alice, at(1)), ids(), c.id());
    s.create_conversation(c.clone(), ev.out(e), None)
        .await
        .expect("create");
    let (a, b) = (ev.of(&s, &alice).await, ev.of(&s, &bob).await);
    assert_eq!((a.len(), b.len()), (1, 1));
    assert_eq!(a[0].kind, EventType::ConversationCreated);
    assert_eq!(a[0].id, b[0].id);
    assert_eq!(a[0].payload, conversation_as(&s, &alice, c.id()).await);
    assert_eq!(b[0].payload, conversation_as(&s, &bob, c.id()).await);
    assert_ne!(a[0].payload, b[0].payload, "each sees the other");
    // The webhook's (the actor's) view.
    let recent = s
        .recent_events(0, FanOutLimits::events(10), Arc::default())
        .await
        .expect("recent")
        .events;
    assert_eq!(recent[0].event.payload, a[0].payload);

    // A per-member change: that member alone.
    let m = ev.send(&s, &c, &alice, "pin me", 2).await;
    let before_a = ev.of(&s, &alice).await;
    let before_b = ev.of(&s, &bob).await;
    let patch = MemberStatePatch {
        is_muted: Some(true),
        ..MemberStatePatch::default()
    };
    let e = conversation_updated(by(&bob, at(3)), ids(), c.id(), false);
    s.update_conversation(bob.id(), c.id(), None, patch, ev.out(e))
        .await
        .expect("mute");
    assert!(ev.since(&s, &alice, &before_a).await.is_empty());
    let got = ev.since(&s, &bob, &before_b).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].kind, EventType::ConversationUpdated);
    assert_eq!(got[0].payload, conversation_as(&s, &bob, c.id()).await);

    // The shared pinned message: every member, each with their own view
    // (bob's says muted, alice's does not).
    let before_a = ev.of(&s, &alice).await;
    let before_b = ev.of(&s, &bob).await;
    let e = conversation_updated(by(&alice, at(4)), ids(), c.id(), true);
    s.update_conversation(
        alice.id(),
        c.id(),
        Some(PinnedMessageChange::Pin(m.id())),
        MemberStatePatch::default(),
        ev.out(e),
    )
    .await
    .expect("pin");
    let (a, b) = (
        ev.since(&s, &alice, &before_a).await,
        ev.since(&s, &bob, &before_b).await,
    );
    assert_eq!((a.len(), b.len()), (1, 1));
    assert_eq!(a[0].id, b[0].id);
    assert_eq!(a[0].payload, conversation_as(&s, &alice, c.id()).await);
    assert_eq!(b[0].payload, conversation_as(&s, &bob, c.id()).await);
    assert!(b[0].payload.contains("\"is_muted\":true"));
    assert!(a[0].payload.contains("\"is_muted\":false"));

    // Deleted: both members, `{"id"}`.
    let e = conversation_deleted(by(&bob, at(5)), ids(), c.id());
    s.delete_conversation(c.id(), bob.id(), ev.out(e))
        .await
        .expect("delete");
    for who in [&alice, &bob] {
        let last = ev.of(&s, who).await.pop().expect("event");
        assert_eq!(last.kind, EventType::ConversationDeleted);
        assert_eq!(last.payload, format!("{{\"id\":\"{}\"}}", c.id()));
    }
    assert!(ev.of(&s, &carol).await.is_empty());

    // A group conversation: the group's members.
    let g = group(&s, &alice, &[&bob], at(6)).await;
    let gc = Conversation::new_group(ConversationId::from_uuid(new_id()), bob.id(), g.id(), at(7));
    let e = conversation_created(by(&bob, at(7)), ids(), gc.id());
    s.create_conversation(gc.clone(), ev.out(e), None)
        .await
        .expect("create");
    for who in [&alice, &bob] {
        let last = ev.of(&s, who).await.pop().expect("event");
        assert_eq!(last.kind, EventType::ConversationCreated);
        assert_eq!(last.payload, conversation_as(&s, who, gc.id()).await);
    }
    assert!(ev.of(&s, &carol).await.is_empty());
}

async fn opening_tells_the_opener_and_each_read_message_to_all(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g = group(&s, &alice, &[&bob, &carol], at(0)).await;
    let c = group_conversation(&s, &alice, g.id(), at(1)).await;
    let first = ev.send(&s, &c, &alice, "one", 2).await;
    let second = ev.send(&s, &c, &carol, "two", 3).await;
    ev.send(&s, &c, &bob, "mine", 4).await;
    let before: Vec<Vec<StoredEvent>> = vec![
        ev.of(&s, &alice).await,
        ev.of(&s, &bob).await,
        ev.of(&s, &carol).await,
    ];

    let e = conversation_opened(by(&bob, at(10)), ids(), c.id());
    s.open_conversation(bob.id(), c.id(), at(10), ev.out(e))
        .await
        .expect("open");
    let got_bob = ev.since(&s, &bob, &before[1]).await;
    let kinds_bob: Vec<EventType> = got_bob.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds_bob,
        [
            EventType::ConversationUpdated,
            EventType::MessageUpdated,
            EventType::MessageUpdated
        ]
    );
    assert_eq!(got_bob[0].payload, conversation_as(&s, &bob, c.id()).await);
    assert_eq!(got_bob[1].payload, message_as(&s, &bob, &first).await);
    assert_eq!(got_bob[2].payload, message_as(&s, &bob, &second).await);
    assert!(got_bob[1].payload.contains("\"read_at\":"));
    assert_ne!(got_bob[1].id, got_bob[2].id, "an id per message");
    for (who, since) in [(&alice, &before[0]), (&carol, &before[2])] {
        let got = ev.since(&s, who, since).await;
        let ids_seen: Vec<EventId> = got.iter().map(|e| e.id).collect();
        assert_eq!(
            ids_seen,
            [got_bob[1].id, got_bob[2].id],
            "the other members: the read marks, not the opener's state"
        );
    }

    // Nothing left to mark: the opener's event alone.
    let before_bob = ev.of(&s, &bob).await;
    let before_alice = ev.of(&s, &alice).await;
    let e = conversation_opened(by(&bob, at(11)), ids(), c.id());
    s.open_conversation(bob.id(), c.id(), at(11), ev.out(e))
        .await
        .expect("open again");
    let again: Vec<EventType> = ev
        .since(&s, &bob, &before_bob)
        .await
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(again, [EventType::ConversationUpdated]);
    assert!(ev.since(&s, &alice, &before_alice).await.is_empty());
}

async fn group_events_reach_members_and_the_removed_once(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let stranger = contact(&s, "stranger").await;

    let new = confab_ports::NewGroup {
        id: GroupId::from_uuid(new_id()),
        name: GroupName::new("Team".into()).expect("name"),
        description: confab_domain::GroupDescription::empty(),
        avatar_url: AvatarUrl::none(),
        created_by: alice.id(),
        member_ids: vec![bob.id()],
        created_at: at(1),
        max_members: confab_domain::DEFAULT_MAX_GROUP_MEMBERS,
    };
    let e = group_created(by(&alice, at(1)), ids(), new.id);
    let g = s
        .create_group(new, at(1), ev.out(e), None)
        .await
        .expect("create");
    for who in [&alice, &bob] {
        let e = ev.of(&s, who).await;
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].kind, EventType::GroupCreated);
        assert_eq!(
            e[0].payload,
            WIRE.group(
                &s.group_for(who.id(), g.id())
                    .await
                    .expect("read")
                    .expect("member")
            )
        );
    }
    assert!(ev.of(&s, &carol).await.is_empty());

    // Add carol, remove bob (and a stranger who never was in): members
    // after the change, and bob, hear of it; the stranger does not.
    let e = group_updated(by(&alice, at(2)), ids(), g.id(), &[bob.id(), stranger.id()]);
    let updated = s
        .update_group(
            g.id(),
            GroupChange {
                add: vec![carol.id()],
                remove: vec![bob.id(), stranger.id()],
                ..GroupChange::default()
            },
            at(2),
            ev.out(e),
        )
        .await
        .expect("update");
    for who in [&alice, &bob, &carol] {
        let last = ev.of(&s, who).await.pop().expect("event");
        assert_eq!(last.kind, EventType::GroupUpdated, "{}", who.username());
        assert_eq!(last.payload, WIRE.group(&updated));
    }
    assert!(ev.of(&s, &stranger).await.is_empty(), "never a member");

    // After removal, bob hears nothing more of the group.
    let bob_before = ev.of(&s, &bob).await;
    let e = group_updated(by(&alice, at(3)), ids(), g.id(), &[]);
    s.update_group(
        g.id(),
        GroupChange {
            name: Some(GroupName::new("Renamed".into()).expect("name")),
            ..GroupChange::default()
        },
        at(3),
        ev.out(e),
    )
    .await
    .expect("rename");
    // A change that changes nothing: no event.
    let alice_before = ev.of(&s, &alice).await;
    let e = group_updated(by(&alice, at(4)), ids(), g.id(), &[stranger.id()]);
    s.update_group(
        g.id(),
        GroupChange {
            add: vec![carol.id()],
            remove: vec![stranger.id()],
            ..GroupChange::default()
        },
        at(4),
        ev.out(e),
    )
    .await
    .expect("no-op");
    assert!(ev.since(&s, &alice, &alice_before).await.is_empty());
    let gc = group_conversation(&s, &alice, g.id(), at(5)).await;
    ev.send(&s, &gc, &carol, "bob is gone", 6).await;
    let e = group_deleted(by(&alice, at(7)), ids(), g.id());
    s.delete_group(g.id(), ev.out(e)).await.expect("delete");
    assert!(ev.since(&s, &bob, &bob_before).await.is_empty(), "removed");
    for who in [&alice, &carol] {
        let got: Vec<EventType> = ev.of(&s, who).await.iter().map(|e| e.kind).collect();
        assert_eq!(
            got[got.len() - 3..],
            [
                EventType::GroupUpdated,
                EventType::MessageCreated,
                EventType::GroupDeleted
            ]
        );
        let last = ev.of(&s, who).await.pop().expect("event");
        assert_eq!(last.payload, format!("{{\"id\":\"{}\"}}", g.id()));
    }
}

async fn contact_events_reach_the_contact_and_its_circle(s: S) {
    let ev = Events::default();
    // Created by the operator: the contact alone.
    let alice = Contact::new(ContactParts {
        id: ContactId::from_uuid(new_id()),
        username: Username::new("alice".into()).expect("username"),
        phone_number: PhoneNumber::new("+15550100".into()).expect("phone"),
        avatar_url: AvatarUrl::none(),
        last_active_at: at(0),
        created_at: at(0),
    })
    .expect("contact");
    let e = contact_created(at(0), ids(), alice.id());
    let alice = s.create_contact(alice, ev.out(e)).await.expect("create");
    let e = ev.of(&s, &alice).await;
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].kind, EventType::ContactCreated);
    let read = s.contact(alice.id()).await.expect("read").expect("exists");
    assert_eq!(e[0].payload, WIRE.contact(&read));

    let peer = contact(&s, "peer").await;
    let creator = contact(&s, "creator").await;
    let mate = contact(&s, "mate").await;
    let quiet = contact(&s, "quiet").await;
    let outsider = contact(&s, "outsider").await;
    direct(&s, &alice, &peer, at(1)).await;
    direct(&s, &creator, &alice, at(1)).await;
    // A group with a conversation shares one; one without does not.
    let g = group(&s, &mate, &[&alice], at(1)).await;
    group_conversation(&s, &mate, g.id(), at(2)).await;
    group(&s, &quiet, &[&alice], at(1)).await;

    let patch = ContactProfilePatch {
        phone_number: Some(PhoneNumber::new("+15550199".into()).expect("phone")),
        avatar_url: None,
    };
    let e = contact_updated(by(&alice, at(3)), ids(), alice.id());
    let updated = s
        .update_contact(alice.id(), patch, ev.out(e))
        .await
        .expect("update");
    let mut ids_seen = Vec::new();
    for who in [&alice, &peer, &creator, &mate] {
        let e = ev.of(&s, who).await;
        assert_eq!(
            e.len(),
            if who.id() == alice.id() { 2 } else { 1 },
            "{}",
            who.username()
        );
        let last = e.last().expect("event");
        assert_eq!(last.kind, EventType::ContactUpdated);
        assert_eq!(last.payload, WIRE.contact(&updated));
        ids_seen.push(last.id);
    }
    ids_seen.dedup();
    assert_eq!(ids_seen.len(), 1, "one id for all");
    assert!(ev.of(&s, &quiet).await.is_empty(), "no conversation shared");
    assert!(ev.of(&s, &outsider).await.is_empty());
    // An empty patch changes nothing: no event.
    let e = contact_updated(by(&alice, at(4)), ids(), alice.id());
    s.update_contact(alice.id(), ContactProfilePatch::default(), ev.out(e))
        .await
        .expect("no-op");
    assert_eq!(ev.of(&s, &alice).await.len(), 2);
}

async fn positions_follow_commit_order(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut sent = Vec::new();
    for i in 0..5 {
        sent.push(ev.send(&s, &c, &alice, &format!("m{i}"), 2 + i).await.id());
    }
    let got = ev.of(&s, &bob).await;
    let positions: Vec<i64> = got.iter().map(|e| e.position).collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "increasing: {positions:?}"
    );
    let payload_ids: Vec<String> = got
        .iter()
        .map(|e| {
            let v: serde_json::Value = serde_json::from_str(&e.payload).expect("json");
            v["id"].as_str().expect("id").to_owned()
        })
        .collect();
    let want: Vec<String> = sent.iter().map(ToString::to_string).collect();
    assert_eq!(payload_ids, want, "in the order of the writes");
    // Reading after a position resumes exactly there.
    let rest = s
        .events_for(bob.id(), positions[1], 100)
        .await
        .expect("events");
    assert_eq!(rest.len(), 3);
    assert_eq!(rest[0].position, positions[2]);
}

async fn concurrent_writes_each_get_their_own_positions(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut tasks = Vec::new();
    for i in 0..20_i64 {
        let (s, c, alice) = (s.clone(), c.clone(), alice.clone());
        tasks.push(tokio::spawn(async move {
            let m = new_message(&c, &alice, &format!("m{i}"), at(2 + i));
            let e = message_sent(by(&alice, at(2 + i)), ids(), m.id, c.id());
            s.append_message(m, Outbox::new(e, Arc::new(WirePayloads::default())), None)
                .await
                .expect("append")
                .id()
        }));
    }
    let mut sent = Vec::new();
    for t in tasks {
        sent.push(t.await.expect("join"));
    }
    // A last write, after all of them: once it is readable, so are they.
    ev.send(&s, &c, &bob, "last", 30).await;
    let got = ev.of(&s, &alice).await;
    assert_eq!(got.len(), 21, "every commit has its event");
    let positions: Vec<i64> = got.iter().map(|e| e.position).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    let mut seen: Vec<String> = got[..20]
        .iter()
        .map(|e| {
            let v: serde_json::Value = serde_json::from_str(&e.payload).expect("json");
            v["id"].as_str().expect("id").to_owned()
        })
        .collect();
    seen.sort();
    let mut want: Vec<String> = sent.iter().map(ToString::to_string).collect();
    want.sort();
    assert_eq!(seen, want);
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    concurrent_writes_each_get_their_own_positions,
    a_sent_message_is_one_event_for_its_members_only,
    refused_or_rolled_back_writes_leave_no_event,
    message_changes_are_events_only_when_something_changed,
    each_member_gets_its_own_view_of_a_conversation,
    opening_tells_the_opener_and_each_read_message_to_all,
    group_events_reach_members_and_the_removed_once,
    contact_events_reach_the_contact_and_its_circle,
    positions_follow_commit_order,
);

/// The payloads the server's renderer writes are the bodies its GET
/// endpoints answer, byte for byte as JSON values: the whole stack (HTTP,
/// service, store) on each store.
mod wire {
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use confab_domain::{ContactId, EventType};
    use confab_ports::{Store, StoredEvent};
    use confab_server::payloads::WirePayloads;
    use confab_server::startup::{Application, ServerOptions};
    use confab_service::{Confab, NoSignal, Ports};
    use confab_store_postgres::PgStore;
    use confab_store_sqlite::SqliteStore;
    use confab_tests::db::{Backend, TestDb};
    use serde_json::Value;

    struct App {
        base: String,
        http: reqwest::Client,
        service: Confab,
        store: Arc<dyn Store>,
        _db: TestDb,
    }

    async fn app(backend: Backend) -> App {
        let (db, service, store) = tokio::task::spawn_blocking(move || {
            fn wire<St: Store + Clone + 'static>(st: St) -> (Confab, Arc<dyn Store>) {
                let ports = Ports::from_store(
                    st.clone(),
                    Arc::new(WirePayloads::default()),
                    Arc::new(NoSignal),
                );
                (Confab::new(ports), Arc::new(st))
            }
            let db = TestDb::new(backend);
            let (service, store) = match backend {
                Backend::Postgres => wire(PgStore::connect(&db.url).expect("connect")),
                Backend::Sqlite => wire(SqliteStore::open(&db.url).expect("open")),
            };
            (db, service, store)
        })
        .await
        .expect("join");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let server =
            Application::build_with_options(service.clone(), listener, ServerOptions::default())
                .await
                .expect("build");
        tokio::spawn(server.run_until_stopped());
        App {
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
            service,
            store,
            _db: db,
        }
    }

    impl App {
        async fn call(
            &self,
            method: reqwest::Method,
            path: &str,
            token: &str,
            form: &str,
        ) -> Value {
            let mut req = self
                .http
                .request(method, format!("{}{path}", self.base))
                .bearer_auth(token);
            if !form.is_empty() {
                req = req
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(form.to_owned());
            }
            let resp = req.send().await.expect("sent");
            assert!(resp.status().is_success(), "{path}: {}", resp.status());
            resp.json().await.expect("json")
        }

        async fn get(&self, path: &str, token: &str) -> Value {
            self.call(reqwest::Method::GET, path, token, "").await
        }

        /// `who`'s events once there are `n` (PostgreSQL makes them readable
        /// once older transactions ended).
        async fn events(&self, who: ContactId, n: usize) -> Vec<StoredEvent> {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let got = self.store.events_for(who, 0, 100).await.expect("events");
                if got.len() >= n || Instant::now() > deadline {
                    assert_eq!(got.len(), n, "{got:?}");
                    return got;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    fn json(payload: &str) -> Value {
        serde_json::from_str(payload).expect("payload is JSON")
    }

    async fn payloads_are_the_get_bodies(backend: Backend) {
        let app = app(backend).await;
        let alice = app
            .service
            .create_contact("alice", "+15550100", None)
            .await
            .expect("alice");
        let bob = app
            .service
            .create_contact("bob", "+15550101", None)
            .await
            .expect("bob");
        let ta = app.service.issue_token("alice", None).await.expect("token");
        let tb = app.service.issue_token("bob", None).await.expect("token");
        // A payload is made once for every recipient and webhook, so it
        // is what anyone else reads (no phone number: docs/api.md "Blocks and reports"),
        // as bob GETs it; alice's own GET differs only by her number.
        let alice_path = format!("/v1/contacts/{}", alice.id());
        let without_phone = |mut v: Value| {
            v["phone_number"] = Value::Null;
            v
        };

        // contact.created: GET /v1/contacts/:id.
        let e = app.events(alice.id(), 1).await;
        assert_eq!(e[0].kind, EventType::ContactCreated);
        assert_eq!(json(&e[0].payload), app.get(&alice_path, &tb).await);
        assert_eq!(
            json(&e[0].payload),
            without_phone(app.get("/v1/contacts/me", &ta).await)
        );

        // conversation.created: the conversation as the list shows it (a GET
        // of the one conversation would open it first).
        let conv = app
            .call(
                reqwest::Method::POST,
                "/v1/conversations",
                &ta,
                &format!("contact_id={}", bob.id()),
            )
            .await;
        let e = app.events(alice.id(), 2).await;
        assert_eq!(e[1].kind, EventType::ConversationCreated);
        let list = app.get("/v1/conversations", &ta).await;
        assert_eq!(json(&e[1].payload), list["data"][0]);
        assert_eq!(list["data"][0]["id"], conv["id"]);

        // message.created (with an attachment): GET /v1/messages/:id.
        let form = format!(
            "conversation_id={}&message=hi&attachments[0][file_url]=https://f.example/a&attachments[0][filename]=a.txt",
            conv["id"].as_str().expect("id")
        );
        let sent = app
            .call(reqwest::Method::POST, "/v1/messages", &ta, &form)
            .await;
        let e = app.events(alice.id(), 3).await;
        assert_eq!(e[2].kind, EventType::MessageCreated);
        let path = format!("/v1/messages/{}", sent["id"].as_str().expect("id"));
        assert_eq!(json(&e[2].payload), app.get(&path, &tb).await);

        // group.created: GET /v1/groups/:id.
        let g = app
            .call(
                reqwest::Method::POST,
                "/v1/groups",
                &ta,
                &format!("name=Team&contact_ids[]={}", bob.id()),
            )
            .await;
        let e = app.events(alice.id(), 4).await;
        assert_eq!(e[3].kind, EventType::GroupCreated);
        let path = format!("/v1/groups/{}", g["id"].as_str().expect("id"));
        // Bob's GET shows his own number, the payload nobody's.
        let mut as_bob = app.get(&path, &tb).await;
        for c in as_bob["contacts"].as_array_mut().expect("contacts") {
            c["phone_number"] = Value::Null;
        }
        assert_eq!(json(&e[3].payload), as_bob);

        // contact.updated: GET /v1/contacts/me.
        app.call(
            reqwest::Method::PUT,
            "/v1/contacts/me",
            &ta,
            "phone_number=%2B15550199",
        )
        .await;
        let e = app.events(alice.id(), 5).await;
        assert_eq!(e[4].kind, EventType::ContactUpdated);
        assert_eq!(json(&e[4].payload), app.get(&alice_path, &tb).await);
        assert_eq!(json(&e[4].payload)["phone_number"], Value::Null);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_payloads_are_the_get_bodies() {
        payloads_are_the_get_bodies(Backend::Postgres).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_payloads_are_the_get_bodies() {
        payloads_are_the_get_bodies(Backend::Sqlite).await;
    }
}
