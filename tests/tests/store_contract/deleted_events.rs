//! Deleted means gone (docs/api.md "Deleted means gone"): once a message or a conversation
//! is deleted, its text, reactions and attachments are in no stored event
//! payload any more. Its earlier events read back (catch-up, the fan-out,
//! webhooks) as `{"id": <the event's subject>, "deleted": true}`; the
//! deletion's own event keeps `{"id"}`; other objects' events are untouched.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use confab_domain::{
    attachment_changed, conversation_created, conversation_deleted, conversation_opened,
    conversation_updated, group_deleted, message_deleted, message_sent, message_updated, Contact,
    Conversation, ConversationId, EventId, EventType, MemberStatePatch, PinnedMessageChange,
};
use confab_ports::FanOutLimits;

use crate::event_log::{by, ids, Events};
use crate::support::{
    at, attachment, change, contact, direct, group, group_conversation, link_url, new_id,
    new_message, rn, text, S,
};

/// Every payload each of `who` reads for each event: by catch-up
/// (`events_for`, the recipient's own payload where it has one), by the
/// fan-out (`recent_events`, the shared payload and each asked-for
/// recipient's own), and as webhooks read it (`webhook_events`).
async fn every_payload(s: &S, ev: &Events, who: &[&Contact]) -> Vec<(EventId, EventType, String)> {
    let mut out = Vec::new();
    for c in who {
        for e in ev.of(s, c).await {
            out.push((e.id, e.kind, e.payload));
        }
    }
    let to: HashSet<_> = who.iter().map(|c| c.id()).collect();
    let batch = s
        .recent_events(0, FanOutLimits::events(1000), Arc::new(to))
        .await
        .expect("recent");
    assert!(!batch.more, "every event in one batch");
    for e in batch.events {
        for (_, own) in e.recipients {
            if let Some(own) = own {
                out.push((e.event.id, e.event.kind, own));
            }
        }
        out.push((e.event.id, e.event.kind, e.event.payload));
    }
    let hooks = s
        .webhook_events(Vec::new(), 0, 1000)
        .await
        .expect("webhook events");
    for e in hooks.events {
        out.push((e.id, e.kind, e.payload));
    }
    out
}

fn scrubbed(id: impl std::fmt::Display) -> String {
    format!("{{\"id\":\"{id}\",\"deleted\":true}}")
}

fn deletion(id: impl std::fmt::Display) -> String {
    format!("{{\"id\":\"{id}\"}}")
}

/// The subject id a payload names (its `id`).
fn subject(payload: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(payload).expect("json payload");
    v["id"].as_str().expect("an id").to_owned()
}

/// Asserts that no payload holds any of `secrets`.
#[track_caller]
fn assert_gone(payloads: &[(EventId, EventType, String)], secrets: &[&str]) {
    for (id, kind, p) in payloads {
        for secret in secrets {
            assert!(
                !p.contains(secret),
                "{kind} event {id} still holds {secret:?}: {p}"
            );
        }
    }
}

async fn a_deleted_messages_earlier_events_keep_only_its_id(s: S) {
    let ev = Events::all_committing();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
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

    // The message to delete: sent with a file, reacted to, given another
    // file, edited, read (each an event of it); and one that stays.
    let mut doomed = new_message(&c, &alice, "the secret plan", at(2));
    doomed.attachments = vec![attachment(7)];
    let first_file = link_url(&doomed.attachments[0]);
    let e = message_sent(by(&alice, at(2)), ids(), doomed.id, c.id());
    let m = s
        .append_message(doomed, ev.out(e), None)
        .await
        .expect("send");
    let kept = ev.send(&s, &c, &bob, "this one stays", 3).await;
    let mut react = change(&bob, at(4));
    react.add_reactions = vec![rn("eyes")];
    let e = message_updated(by(&bob, at(4)), ids(), m.id(), c.id(), &[]);
    s.update_message(m.id(), react, ev.out(e))
        .await
        .expect("react");
    let mut edit = change(&alice, at(5));
    edit.text = Some(text("the secret plan, revised"));
    edit.add_attachments = vec![attachment(8)];
    let added = edit.add_attachments[0].id();
    let second_file = link_url(&edit.add_attachments[0]);
    let e = message_updated(by(&alice, at(5)), ids(), m.id(), c.id(), &[added]);
    s.update_message(m.id(), edit, ev.out(e))
        .await
        .expect("edit");
    let e = conversation_opened(by(&bob, at(6)), ids(), c.id());
    s.open_conversation(bob.id(), c.id(), at(6), ev.out(e))
        .await
        .expect("open");

    let before = every_payload(&s, &ev, &[&alice, &bob]).await;
    let of_m: HashSet<EventId> = before
        .iter()
        .filter(|(_, _, p)| p.contains("the secret plan"))
        .map(|(id, _, _)| *id)
        .collect();
    // created, reacted, edited, and a read mark; and the added file.
    assert_eq!(of_m.len(), 4, "{before:#?}");
    let added_file: Vec<EventId> = before
        .iter()
        .filter(|(_, k, _)| *k == EventType::AttachmentCreated)
        .map(|(id, _, _)| *id)
        .collect();
    assert!(!added_file.is_empty());
    let untouched: HashMap<(EventId, String), usize> = before
        .iter()
        .filter(|(id, _, _)| !of_m.contains(id) && !added_file.contains(id))
        .fold(HashMap::new(), |mut n, (id, _, p)| {
            *n.entry((*id, p.clone())).or_default() += 1;
            n
        });

    let e = message_deleted(by(&alice, at(7)), ids(), m.id(), c.id());
    let deleted_event = e[0].id;
    s.delete_message(m.id(), alice.id(), ev.out(e))
        .await
        .expect("delete");

    let after = every_payload(&s, &ev, &[&alice, &bob]).await;
    assert_gone(
        &after,
        &[
            "the secret plan",
            "eyes",
            &first_file,
            &second_file,
            "file7",
            "file8",
        ],
    );
    let mut seen_deletion = 0;
    let mut still: HashMap<(EventId, String), usize> = HashMap::new();
    for (id, kind, p) in &after {
        if of_m.contains(id) {
            assert!(
                matches!(kind, EventType::MessageCreated | EventType::MessageUpdated),
                "{kind}"
            );
            assert_eq!(p, &scrubbed(m.id()), "{kind} event {id}");
        } else if added_file.contains(id) {
            assert_eq!(p, &scrubbed(added), "attachment.created {id}");
        } else if *id == deleted_event {
            assert_eq!(p, &deletion(m.id()), "the deletion keeps its {{\"id\"}}");
            seen_deletion += 1;
        } else {
            *still.entry((*id, p.clone())).or_default() += 1;
        }
    }
    assert!(seen_deletion > 0, "the deletion was read");
    assert_eq!(still, untouched, "every other event as it was");
    assert!(
        after
            .iter()
            .any(|(_, _, p)| p.contains("this one stays") && subject(p) == kept.id().to_string()),
        "the other message's events keep it"
    );
}

async fn a_deleted_conversations_earlier_events_keep_only_ids(s: S) {
    let ev = Events::all_committing();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
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
    // Another conversation, whose events stay.
    let other = direct(&s, &alice, &carol, at(1)).await;
    let stays = ev.send(&s, &other, &carol, "carol's words stay", 2).await;

    // Each member's own view (a pin), one member's own change (a mute),
    // messages with a file, a reaction, a read mark, and a message deleted
    // before the conversation (its deletion keeps its `{"id"}`).
    let mut first = new_message(&c, &alice, "confidential one", at(3));
    first.attachments = vec![attachment(3)];
    let file = link_url(&first.attachments[0]);
    let e = message_sent(by(&alice, at(3)), ids(), first.id, c.id());
    let m1 = s
        .append_message(first, ev.out(e), None)
        .await
        .expect("send");
    let m2 = ev.send(&s, &c, &bob, "confidential two", 4).await;
    let m3 = ev.send(&s, &c, &bob, "confidential three", 5).await;
    let e = conversation_updated(by(&alice, at(6)), ids(), c.id(), true);
    s.update_conversation(
        alice.id(),
        c.id(),
        Some(PinnedMessageChange::Pin(m1.id())),
        MemberStatePatch::default(),
        ev.out(e),
    )
    .await
    .expect("pin");
    let mute = MemberStatePatch {
        is_muted: Some(true),
        ..MemberStatePatch::default()
    };
    let e = conversation_updated(by(&bob, at(7)), ids(), c.id(), false);
    s.update_conversation(bob.id(), c.id(), None, mute, ev.out(e))
        .await
        .expect("mute");
    let mut react = change(&alice, at(8));
    react.add_reactions = vec![rn("sparkles")];
    let e = message_updated(by(&alice, at(8)), ids(), m2.id(), c.id(), &[]);
    s.update_message(m2.id(), react, ev.out(e))
        .await
        .expect("react");
    let e = conversation_opened(by(&alice, at(9)), ids(), c.id());
    s.open_conversation(alice.id(), c.id(), at(9), ev.out(e))
        .await
        .expect("open");
    let e = message_deleted(by(&bob, at(10)), ids(), m3.id(), c.id());
    let m3_deleted = e[0].id;
    s.delete_message(m3.id(), bob.id(), ev.out(e))
        .await
        .expect("delete m3");

    let everyone = [&alice, &bob, &carol];
    let before = every_payload(&s, &ev, &everyone).await;
    assert!(
        before
            .iter()
            .any(|(_, _, p)| p.contains("\"is_muted\":true")),
        "bob's own view was stored"
    );
    let untouched: HashMap<(EventId, String), usize> = before
        .iter()
        .filter(|(_, _, p)| p.contains("carol"))
        .fold(HashMap::new(), |mut n, (id, _, p)| {
            *n.entry((*id, p.clone())).or_default() += 1;
            n
        });
    assert!(!untouched.is_empty());

    let e = conversation_deleted(by(&bob, at(11)), ids(), c.id());
    let deleted_event = e[0].id;
    s.delete_conversation(c.id(), bob.id(), ev.out(e))
        .await
        .expect("delete");

    let after = every_payload(&s, &ev, &everyone).await;
    assert_gone(
        &after,
        &[
            "confidential",
            "sparkles",
            &file,
            "file3",
            "is_muted",
            "pinned_message_id",
        ],
    );
    let gone_ids: HashSet<String> = [c.id().to_string(), m1.id().to_string(), m2.id().to_string()]
        .into_iter()
        .chain(m1.attachments().iter().map(|a| a.id.to_string()))
        .collect();
    let mut still: HashMap<(EventId, String), usize> = HashMap::new();
    let mut deletions = 0;
    for (id, kind, p) in &after {
        if *id == deleted_event {
            assert_eq!(p, &deletion(c.id()));
            deletions += 1;
        } else if *id == m3_deleted {
            assert_eq!(p, &deletion(m3.id()), "a deletion stays {{\"id\"}}");
            deletions += 1;
        } else if p.contains("carol") {
            *still.entry((*id, p.clone())).or_default() += 1;
        } else {
            let names = subject(p);
            assert!(
                gone_ids.contains(&names) || names == m3.id().to_string(),
                "{kind} event {id} of something else: {p}"
            );
            assert_eq!(p, &scrubbed(&names), "{kind} event {id}");
        }
    }
    assert!(deletions >= 2, "both deletions read");
    assert_eq!(still, untouched, "the other conversation's events stay");
    assert!(after
        .iter()
        .any(|(_, _, p)| p.contains("carol's words stay") && subject(p) == stays.id().to_string()));
}

async fn a_deleted_groups_conversations_leave_their_events(s: S) {
    let ev = Events::all_committing();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let gc = group_conversation(&s, &alice, g.id(), at(2)).await;
    let e = conversation_updated(by(&bob, at(3)), ids(), gc.id(), false);
    let mute = MemberStatePatch {
        is_muted: Some(true),
        ..MemberStatePatch::default()
    };
    s.update_conversation(bob.id(), gc.id(), None, mute, ev.out(e))
        .await
        .expect("mute");
    let m = ev.send(&s, &gc, &bob, "the team's secret", 4).await;
    // Each member's own view (bob's says muted).
    let e = conversation_updated(by(&alice, at(4)), ids(), gc.id(), true);
    s.update_conversation(
        alice.id(),
        gc.id(),
        Some(PinnedMessageChange::Pin(m.id())),
        MemberStatePatch::default(),
        ev.out(e),
    )
    .await
    .expect("pin");
    let before = every_payload(&s, &ev, &[&alice, &bob]).await;
    assert!(before
        .iter()
        .any(|(_, k, p)| *k == EventType::ConversationUpdated && p.contains("\"is_muted\":true")));
    // A direct conversation of the same members stays.
    let d = direct(&s, &alice, &bob, at(5)).await;
    ev.send(&s, &d, &alice, "a direct word", 6).await;

    let e = group_deleted(by(&alice, at(7)), ids(), g.id());
    s.delete_group(g.id(), ev.out(e))
        .await
        .expect("delete group");

    let after = every_payload(&s, &ev, &[&alice, &bob]).await;
    assert_gone(&after, &["the team's secret", "is_muted"]);
    for (id, kind, p) in &after {
        match *kind {
            EventType::MessageCreated if p.contains("a direct word") => {}
            EventType::MessageCreated => assert_eq!(p, &scrubbed(m.id()), "{id}"),
            EventType::ConversationUpdated => assert_eq!(p, &scrubbed(gc.id()), "{id}"),
            EventType::GroupDeleted => assert_eq!(p, &deletion(g.id())),
            other => panic!("unexpected {other} event {id}: {p}"),
        }
    }
    assert!(after.iter().any(|(_, _, p)| p.contains("a direct word")));
}

async fn a_deleted_attachment_leaves_its_messages_earlier_events(s: S) {
    let ev = Events::all_committing();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut m = new_message(&c, &alice, "two files", at(2));
    m.attachments = vec![attachment(7), attachment(8)];
    let gone = m.attachments[0].id();
    let gone_url = link_url(&m.attachments[0]);
    let e = message_sent(by(&alice, at(2)), ids(), m.id, c.id());
    let m = s.append_message(m, ev.out(e), None).await.expect("send");
    let mut edit = change(&alice, at(3));
    edit.text = Some(text("two files, see"));
    let e = message_updated(by(&alice, at(3)), ids(), m.id(), c.id(), &[]);
    s.update_message(m.id(), edit, ev.out(e))
        .await
        .expect("edit");
    let before = every_payload(&s, &ev, &[&alice, &bob]).await;
    assert!(before.iter().any(|(_, _, p)| p.contains("file7")));

    let current = s
        .attachment(gone)
        .await
        .expect("read")
        .expect("the attachment");
    let e = attachment_changed(
        by(&alice, at(4)),
        ids(),
        EventType::AttachmentDeleted,
        &current,
    );
    s.delete_attachment(gone, alice.id(), ev.out(e))
        .await
        .expect("delete");

    let after = every_payload(&s, &ev, &[&alice, &bob]).await;
    assert_gone(&after, &["file7", &gone_url]);
    let of_message: Vec<serde_json::Value> = after
        .iter()
        .filter(|(_, k, _)| matches!(k, EventType::MessageCreated | EventType::MessageUpdated))
        .map(|(_, _, p)| serde_json::from_str(p).expect("json"))
        .collect();
    assert!(!of_message.is_empty());
    for p in of_message {
        assert_eq!(
            p["attachments"][0],
            serde_json::json!({"id": gone.to_string(), "deleted": true}),
            "{p}"
        );
        assert_eq!(p["attachments"][1]["filename"], "file8.txt", "{p}");
        assert_eq!(p["id"], m.id().to_string(), "the message stays: {p}");
    }
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    a_deleted_attachment_leaves_its_messages_earlier_events,
    a_deleted_messages_earlier_events_keep_only_its_id,
    a_deleted_conversations_earlier_events_keep_only_ids,
    a_deleted_groups_conversations_leave_their_events,
);
