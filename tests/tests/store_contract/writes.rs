//! Writes that change nothing, as the stores hold them (the service leaves
//! out what it sees unchanged; the store must too, for a request that
//! raced another): no row changed, no event. A group conversation's pin is
//! one event read by the group with the shared attributes alone, and the
//! actor's own view beside it. A report past its reporter's limit of the
//! hour writes nothing, also when many come at once.

use std::sync::Arc;

use confab_domain::{
    contact_updated, conversation_updated, group_updated, AvatarUrl, ContactProfilePatch,
    EventType, GroupName, MemberStatePatch, PhoneNumber, PinnedMessageChange, Report,
    ReportDescription, ReportId, ReportReason, ReportStatus,
};
use confab_ports::GroupChange;

use crate::event_log::{by, ids, Events};
use crate::support::{at, contact, direct, group, group_conversation, new_id, S};

async fn writes_that_change_nothing_write_no_event(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = ev.send(&s, &c, &alice, "pin me", 2).await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let muted = MemberStatePatch {
        is_muted: Some(true),
        archived_at: Some(Some(at(3))),
        ..MemberStatePatch::default()
    };
    let pin = Some(PinnedMessageChange::Pin(m.id()));
    let update = |who: &confab_domain::Contact, pin, patch, shared| {
        let e = conversation_updated(by(who, at(4)), ids(), c.id(), shared);
        s.update_conversation(who.id(), c.id(), pin, patch, ev.out(e))
    };
    // Each once: a change, an event.
    update(&alice, pin, MemberStatePatch::default(), true)
        .await
        .expect("pin");
    update(&bob, None, muted, false).await.expect("mute");
    let before_alice = ev.of(&s, &alice).await;
    let before_bob = ev.of(&s, &bob).await;

    // Each again (as a request racing the first would): no event.
    let again = update(&alice, pin, MemberStatePatch::default(), true)
        .await
        .expect("pin again");
    assert_eq!(again.conversation.pinned_message_id(), Some(m.id()));
    let again = update(&bob, None, muted, false).await.expect("mute again");
    assert!(again.state.is_muted);
    assert_eq!(again.state.archived_at, Some(at(3)));
    let e = group_updated(by(&alice, at(5)), ids(), g.id(), &[]);
    let same = GroupChange {
        name: Some(GroupName::new("Team".into()).expect("name")),
        avatar_url: Some(AvatarUrl::none()),
        ..GroupChange::default()
    };
    let unchanged = s
        .update_group(g.id(), same, at(5), ev.out(e))
        .await
        .expect("same details");
    assert_eq!(unchanged.name().as_str(), "Team");
    let e = contact_updated(by(&alice, at(6)), ids(), alice.id());
    let patch = ContactProfilePatch {
        phone_number: Some(PhoneNumber::new("+15550100".into()).expect("phone")),
        avatar_url: Some(AvatarUrl::none()),
    };
    s.update_contact(alice.id(), patch, ev.out(e))
        .await
        .expect("same profile");

    // The next events are a marker's alone.
    ev.send(&s, &c, &bob, "marker", 7).await;
    for (who, before) in [(&alice, &before_alice), (&bob, &before_bob)] {
        let since = ev.since(&s, who, before).await;
        let kinds: Vec<EventType> = since.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventType::MessageCreated], "{since:?}");
    }

    // A real change among unchanged ones is written, with its event.
    let e = group_updated(by(&alice, at(8)), ids(), g.id(), &[]);
    let renamed = GroupChange {
        name: Some(GroupName::new("Crew".into()).expect("name")),
        avatar_url: Some(AvatarUrl::none()),
        ..GroupChange::default()
    };
    let group = s
        .update_group(g.id(), renamed, at(8), ev.out(e))
        .await
        .expect("rename");
    assert_eq!(group.name().as_str(), "Crew");
    let kinds = ev.kinds(&s, &bob).await;
    assert_eq!(kinds.last(), Some(&EventType::GroupUpdated), "{kinds:?}");
}

async fn a_group_pin_is_one_event_with_the_shared_attributes(s: S) {
    let ev = Events::all_committing();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g = group(&s, &alice, &[&bob, &carol], at(1)).await;
    let c = group_conversation(&s, &alice, g.id(), at(2)).await;
    let e = conversation_updated(by(&bob, at(3)), ids(), c.id(), false);
    let mute = MemberStatePatch {
        is_muted: Some(true),
        ..MemberStatePatch::default()
    };
    s.update_conversation(bob.id(), c.id(), None, mute, ev.out(e))
        .await
        .expect("mute");
    let m = ev.send(&s, &c, &carol, "pin me", 4).await;
    let before: Vec<_> = [&alice, &bob, &carol]
        .into_iter()
        .map(|who| (who, ()))
        .collect();
    let mut seen = Vec::new();
    for (who, ()) in &before {
        seen.push(ev.of(&s, who).await);
    }

    let e = conversation_updated(by(&alice, at(5)), ids(), c.id(), true);
    let pinned = e[0].id;
    let mine = MemberStatePatch {
        is_pinned: Some(true),
        ..MemberStatePatch::default()
    };
    let view = s
        .update_conversation(
            alice.id(),
            c.id(),
            Some(PinnedMessageChange::Pin(m.id())),
            mine,
            ev.out(e),
        )
        .await
        .expect("pin");
    assert!(view.state.is_pinned);

    let shared = format!(
        "{{\"id\":\"{}\",\"contact_id\":null,\"group_id\":\"{}\",\"pinned_message_id\":\"{}\",\
         \"last_active_at\":{},\"created_at\":{}}}",
        c.id(),
        g.id(),
        m.id(),
        at(4).secs(),
        at(2).secs()
    );
    for ((who, ()), before) in before.iter().zip(&seen) {
        let since = ev.since(&s, who, before).await;
        assert_eq!(since.len(), 1, "{since:?}");
        assert_eq!(since[0].id, pinned);
        if who.id() == alice.id() {
            // The actor's own view, their own pin in it.
            let v: serde_json::Value = serde_json::from_str(&since[0].payload).expect("json");
            assert_eq!(v["is_pinned"], true, "{v}");
            assert_eq!(v["pinned_message_id"], m.id().to_string());
        } else {
            assert_eq!(since[0].payload, shared, "{}", who.username());
        }
    }
    // The fan-out reads the same: the shared payload, the actor's own.
    let to = Arc::new([alice.id(), bob.id(), carol.id()].into_iter().collect());
    let start = seen[0].last().map_or(0, |e| e.position);
    let batch = s
        .recent_events(start, confab_ports::FanOutLimits::events(100), to)
        .await
        .expect("recent");
    let event = batch
        .events
        .iter()
        .find(|e| e.event.id == pinned)
        .expect("the pin's event");
    assert_eq!(event.event.payload, shared, "webhooks read the shared one");
    let mut recipients = event.recipients.clone();
    recipients.sort_by_key(|(who, _)| *who);
    assert_eq!(recipients.len(), 3, "{recipients:?}");
    for (who, own) in recipients {
        assert_eq!(own.is_some(), who == alice.id(), "{who}: {own:?}");
    }
}

fn report(reporter: &confab_domain::Contact, about: &confab_domain::Contact, t: i64) -> Report {
    Report {
        id: ReportId::from_uuid(new_id()),
        reporter: reporter.id(),
        message_id: Some(confab_domain::MessageId::from_uuid(new_id())),
        contact_id: about.id(),
        reason: ReportReason::Spam,
        description: ReportDescription::new(String::new()).expect("text"),
        status: ReportStatus::Open,
        created_at: at(t),
        updated_at: at(t),
    }
}

async fn reports_past_the_hours_limit_write_nothing_even_at_once(s: S) {
    let ev = Events::default();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let out = || ev.out(Vec::new());
    // 12 at once within one hour: exactly 3 filed.
    let hour = 3_600 * 500_000;
    let mut asks = Vec::new();
    for n in 0..12 {
        let (s, r) = (s.clone(), report(&alice, &bob, hour + n));
        let outbox = out();
        asks.push(tokio::spawn(async move {
            s.file_report(r, Some(3), outbox, None).await
        }));
    }
    let mut filed = Vec::new();
    for ask in asks {
        if let Some(made) = ask.await.expect("join").expect("no error") {
            assert!(made.created);
            filed.push(made.item);
        }
    }
    assert_eq!(filed.len(), 3);
    let listed = s
        .reports_by(alice.id(), crate::support::page(100, None))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 3, "a refused report was written");
    // Past the limit, the same open target again is that report.
    let same = Report {
        message_id: filed[0].message_id,
        ..report(&alice, &bob, hour + 20)
    };
    let again = s
        .file_report(same, Some(3), out(), None)
        .await
        .expect("again")
        .expect("the open one");
    assert!(!again.created);
    assert_eq!(again.item, filed[0]);
    // The next hour starts over; another reporter has a count of their own.
    assert!(s
        .file_report(report(&alice, &bob, hour + 3_600), Some(3), out(), None)
        .await
        .expect("next hour")
        .is_some());
    assert!(s
        .file_report(report(&bob, &alice, hour + 30), Some(3), out(), None)
        .await
        .expect("bob")
        .is_some());
    // No limit: no count.
    for n in 0..5 {
        assert!(s
            .file_report(report(&alice, &bob, hour + 40 + n), None, out(), None)
            .await
            .expect("no limit")
            .is_some());
    }
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    writes_that_change_nothing_write_no_event,
    a_group_pin_is_one_event_with_the_shared_attributes,
    reports_past_the_hours_limit_write_nothing_even_at_once,
);
