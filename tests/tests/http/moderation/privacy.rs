//! Phone privacy (docs/api.md "Authentication and tokens" and "Blocks and reports"): a contact's `phone_number`
//! is shown to that contact (their own contact object anywhere) and to a
//! server key on `/v1/admin/*`; everyone else, and every event, gets
//! `null`. A key acting as a contact sees what the contact sees. Then a
//! scenario of every kind of change whose every event, for every
//! participant (listed, paged and streamed), is searched for a phone
//! number and for what a block refused.

use std::collections::HashMap;
use std::time::Duration;

use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::{
    all_events, block, events_until, server_key, try_send, user_with_phone, with_key,
    without_activity,
};
use crate::events::Sse;
use crate::support::{group_conversation, id_of};

/// Every contact object in `v` (an object with `username` and
/// `avatar_url`): its id and its `phone_number` (`None` when absent).
fn contacts_in(v: &Value, out: &mut Vec<(String, Option<Value>)>) {
    match v {
        Value::Object(map) => {
            if map.contains_key("username") && map.contains_key("avatar_url") {
                let id = map.get("id").and_then(Value::as_str).unwrap_or("?");
                out.push((id.to_owned(), map.get("phone_number").cloned()));
            }
            map.values().for_each(|v| contacts_in(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| contacts_in(v, out)),
        _ => {}
    }
}

/// Asserts what `viewer` may see of the phone numbers in `body`: their
/// own (from `phones`), `null` for everyone else. Returns how many own and
/// others' contact objects it checked.
#[track_caller]
fn assert_phones(
    body: &Value,
    viewer: &User,
    phones: &HashMap<String, String>,
    what: &str,
) -> (usize, usize) {
    let mut found = Vec::new();
    contacts_in(body, &mut found);
    let (mut own, mut others) = (0, 0);
    for (id, phone) in found {
        if id == viewer.id {
            own += 1;
            let want = phones.get(&id).expect("a known contact");
            assert_eq!(
                phone,
                Some(json!(want)),
                "{what}: {} must see their own phone number: {body}",
                viewer.username
            );
        } else {
            others += 1;
            assert_eq!(
                phone,
                Some(Value::Null),
                "{what}: {} must see null for {id}: {body}",
                viewer.username
            );
        }
    }
    (own, others)
}

/// The phone numbers of `users` as made.
fn phone_book(users: &[(&User, &str)]) -> HashMap<String, String> {
    users
        .iter()
        .map(|(u, p)| (u.id.clone(), (*p).to_owned()))
        .collect()
}

async fn phone_numbers_are_shown_to_their_contact_and_operators_only(app: TestApp) {
    let key = server_key(&app).await;
    let alice = user_with_phone(&app, "alice", "+15557770001").await;
    let bob = user_with_phone(&app, "bob", "+15557770002").await;
    let carol = user_with_phone(&app, "carol", "+15557770003").await;
    let mut phones = phone_book(&[
        (&alice, "+15557770001"),
        (&bob, "+15557770002"),
        (&carol, "+15557770003"),
    ]);
    let msg = |id: &str| format!("/v1/messages/{id}");

    // Answers to writes: the sender's own contact shows it, no one else's.
    let direct = app.direct(&alice, &bob).await;
    let sent = app.send_message(&alice, &direct, "hi bob").await;
    assert_eq!(assert_phones(&sent, &alice, &phones, "send"), (1, 0));
    let of_alice = id_of(&sent);
    let answer = app.send_message(&bob, &direct, "hi alice").await;
    assert_eq!(assert_phones(&answer, &bob, &phones, "send"), (1, 0));
    let reacted = app
        .put(&bob, &msg(&of_alice), &[("reactions[like][]", "bob")])
        .await;
    assert_eq!(
        assert_phones(reacted.expect(200), &bob, &phones, "react"),
        (0, 1)
    );
    let edited = app
        .put(&alice, &msg(&of_alice), &[("message", "hi bob!")])
        .await;
    assert_eq!(
        assert_phones(edited.expect(200), &alice, &phones, "edit"),
        (1, 0)
    );
    let made = app
        .post(
            &alice,
            "/v1/groups",
            &[
                ("name", "Trio"),
                ("contact_ids[]", bob.id.as_str()),
                ("contact_ids[]", carol.id.as_str()),
            ],
        )
        .await;
    let made = made.expect(201).clone();
    assert_eq!(
        assert_phones(&made, &alice, &phones, "create group"),
        (1, 2)
    );
    let gid = id_of(&made);
    let conv = group_conversation(&app, &carol, &gid).await;
    app.send_message(&carol, &conv, "hello all").await;
    let renamed = app
        .put(&alice, &format!("/v1/groups/{gid}"), &[("name", "Trio!")])
        .await;
    assert_eq!(
        assert_phones(renamed.expect(200), &alice, &phones, "update group"),
        (1, 2)
    );
    let blocked = app
        .post(&bob, &format!("/v1/contacts/{}/block", carol.id), &[])
        .await;
    assert_eq!(
        assert_phones(blocked.expect(201), &bob, &phones, "block"),
        (0, 1)
    );

    // Reads, by each of them: lookups, contacts, messages, groups,
    // members, blocks.
    for viewer in [&alice, &bob, &carol] {
        let mut paths = vec![
            "/v1/contacts/me".to_owned(),
            "/v1/messages?limit=100".to_owned(),
            "/v1/groups?limit=100".to_owned(),
            format!("/v1/groups/{gid}"),
            format!("/v1/groups/{gid}/members?limit=100"),
            "/v1/contacts/blocked".to_owned(),
        ];
        for u in [&alice, &bob, &carol] {
            paths.push(format!("/v1/contacts/{}", u.id));
            paths.push(format!("/v1/contacts?username={}", u.username));
        }
        let (mut own, mut others) = (0, 0);
        for path in &paths {
            let r = app.get(viewer, path).await;
            let (o, t) = assert_phones(r.expect(200), viewer, &phones, path);
            own += o;
            others += t;
        }
        // Each read message, one by one.
        let listed = app.get(viewer, "/v1/messages?limit=100").await;
        for m in listed.expect(200)["data"].as_array().expect("data") {
            let r = app.get(viewer, &msg(&id_of(m))).await;
            assert_phones(r.expect(200), viewer, &phones, "GET message");
        }
        assert!(
            own >= 6 && others >= 8,
            "{}: {own} own, {others} others",
            viewer.username
        );
    }
    let r = app
        .get(&bob, &format!("/v1/contacts/{}/block", carol.id))
        .await;
    assert_eq!(
        assert_phones(r.expect(200), &bob, &phones, "GET block"),
        (0, 1)
    );
    let r = app.get(&bob, "/v1/contacts/blocked").await;
    assert_eq!(
        assert_phones(r.expect(200), &bob, &phones, "blocked list"),
        (0, 1)
    );

    // A changed number: shown to its contact, still to no one else.
    let changed = app
        .put(
            &alice,
            "/v1/contacts/me",
            &[("phone_number", "+15557770011")],
        )
        .await;
    assert_eq!(changed.expect(200)["phone_number"], "+15557770011");
    phones.insert(alice.id.clone(), "+15557770011".into());
    let seen = app.get(&bob, &format!("/v1/contacts/{}", alice.id)).await;
    assert!(seen.expect(200)["phone_number"].is_null(), "{}", seen.raw);

    // The operator's routes show every number.
    let admin = |method: Method, path: String, body: Option<Value>| {
        let app = &app;
        let key = key.clone();
        async move { with_key(app, method, &path, &key, body, &[]).await }
    };
    for u in [&alice, &bob, &carol] {
        let r = admin(Method::GET, format!("/v1/admin/contacts/{}", u.id), None).await;
        assert_eq!(r.expect(200)["phone_number"], phones[&u.id].as_str());
        let r = admin(
            Method::GET,
            format!("/v1/admin/contacts?username={}", u.username),
            None,
        )
        .await;
        assert_eq!(
            r.expect(200)["data"][0]["phone_number"],
            phones[&u.id].as_str()
        );
    }
    let r = admin(Method::GET, "/v1/admin/contacts?limit=100".into(), None).await;
    let listed = r.expect(200)["data"].as_array().expect("data").clone();
    assert_eq!(listed.len(), 3);
    for c in &listed {
        let id = c["id"].as_str().expect("id");
        assert_eq!(c["phone_number"], phones[id].as_str(), "{c}");
    }
    let r = admin(
        Method::PUT,
        format!("/v1/admin/contacts/{}", carol.id),
        Some(json!({"phone_number": "+15557770033"})),
    )
    .await;
    assert_eq!(r.expect(200)["phone_number"], "+15557770033");
    phones.insert(carol.id.clone(), "+15557770033".into());
    let r = admin(
        Method::POST,
        "/v1/admin/contacts".into(),
        Some(json!({"username": "dave", "phone_number": "+15557770004"})),
    )
    .await;
    assert_eq!(r.expect(201)["phone_number"], "+15557770004");
    let me = app.get(&carol, "/v1/contacts/me").await;
    assert_eq!(me.expect(200)["phone_number"], "+15557770033");
    for viewer in [&alice, &bob] {
        let r = app.get(viewer, &format!("/v1/contacts/{}", carol.id)).await;
        assert!(r.expect(200)["phone_number"].is_null(), "{}", r.raw);
    }
}

async fn a_key_acting_as_a_contact_sees_what_the_contact_sees(app: TestApp) {
    let key = server_key(&app).await;
    let alice = user_with_phone(&app, "alice", "+15557770001").await;
    let bob = user_with_phone(&app, "bob", "+15557770002").await;
    let carol = user_with_phone(&app, "carol", "+15557770003").await;
    let phones = phone_book(&[
        (&alice, "+15557770001"),
        (&bob, "+15557770002"),
        (&carol, "+15557770003"),
    ]);
    let direct = app.direct(&alice, &bob).await;
    app.send_message(&alice, &direct, "from alice").await;
    app.send_message(&bob, &direct, "from bob").await;
    let gid = crate::support::new_group(&app, &alice, "Team", &[&bob, &carol]).await;
    app.post(&bob, &format!("/v1/contacts/{}/block", carol.id), &[])
        .await
        .expect(201);
    let as_bob = [("confab-contact", bob.id.as_str())];

    let mut paths = vec![
        "/v1/contacts/me".to_owned(),
        format!("/v1/messages?conversation_id={direct}"),
        format!("/v1/groups/{gid}"),
        format!("/v1/groups/{gid}/members"),
        "/v1/contacts/blocked".to_owned(),
        format!("/v1/contacts/{}/block", carol.id),
    ];
    for u in [&alice, &bob, &carol] {
        paths.push(format!("/v1/contacts/{}", u.id));
        paths.push(format!("/v1/contacts?username={}", u.username));
    }
    for path in &paths {
        let by_key = with_key(&app, Method::GET, path, &key, None, &as_bob).await;
        let by_bob = app.get(&bob, path).await;
        assert_eq!(
            without_activity(by_key.expect(200)),
            without_activity(by_bob.expect(200)),
            "{path}"
        );
        assert_phones(&by_key.body, &bob, &phones, path);
    }
    // Its writes answer as bob's would.
    let sent = with_key(
        &app,
        Method::POST,
        "/v1/messages",
        &key,
        Some(json!({"conversation_id": direct, "message": "by the backend"})),
        &as_bob,
    )
    .await;
    assert_eq!(
        assert_phones(sent.expect(201), &bob, &phones, "send"),
        (1, 0)
    );
    let blocked = with_key(
        &app,
        Method::POST,
        &format!("/v1/contacts/{}/block", alice.id),
        &key,
        None,
        &as_bob,
    )
    .await;
    assert_eq!(
        assert_phones(blocked.expect(201), &bob, &phones, "block"),
        (0, 1)
    );
}

/// What each of the leak scenario's searches looks for: every phone
/// number any contact had (with and without `+`) and every text a block
/// refused.
struct Secrets {
    phones: Vec<String>,
    refused: Vec<&'static str>,
}

impl Secrets {
    /// Asserts `event` (as received by `who`) carries none of them, shows
    /// every contact's `phone_number` as `null`, and is no report.
    #[track_caller]
    fn assert_clean(&self, event: &Value, who: &str) {
        let text = event.to_string();
        for p in &self.phones {
            let digits = p.trim_start_matches('+');
            assert!(
                !text.contains(digits),
                "{who} got a phone number ({p}) in {event}"
            );
        }
        for s in &self.refused {
            assert!(!text.contains(s), "{who} got the refused {s:?} in {event}");
        }
        assert_ne!(event["type"], "report.created", "{who}: {event}");
        let mut found = Vec::new();
        contacts_in(event, &mut found);
        for (id, phone) in found {
            assert_eq!(
                phone,
                Some(Value::Null),
                "{who}: contact {id} without a null phone_number in {event}"
            );
        }
    }
}

async fn no_event_carries_a_phone_number_or_a_refused_text(app: TestApp) {
    let key = server_key(&app).await;
    let alice = user_with_phone(&app, "alice", "+15557770101").await;
    let bob = user_with_phone(&app, "bob", "+15557770102").await;
    let carol = user_with_phone(&app, "carol", "+15557770103").await;
    let dave = user_with_phone(&app, "dave", "+15557770104").await;
    // Erin, made by the operator over HTTP, her token minted there.
    let created = with_key(
        &app,
        Method::POST,
        "/v1/admin/contacts",
        &key,
        Some(json!({"username": "erin", "phone_number": "+15557770105"})),
        &[],
    )
    .await;
    let erin_id = id_of(created.expect(201));
    let minted = with_key(
        &app,
        Method::POST,
        &format!("/v1/admin/contacts/{erin_id}/tokens"),
        &key,
        Some(json!({})),
        &[],
    )
    .await;
    let erin = User {
        id: erin_id,
        username: "erin".into(),
        token: minted.expect(201)["token"]
            .as_str()
            .expect("token")
            .to_owned(),
    };
    let secrets = Secrets {
        phones: [
            "+15557770101",
            "+15557770102",
            "+15557770103",
            "+15557770104",
            "+15557770105",
            // Set below: alice's own, bob's and erin's by the operator.
            "+15557770201",
            "+15557770202",
            "+15557770205",
        ]
        .map(str::to_owned)
        .to_vec(),
        refused: vec![
            "refused-secret-send",
            "refused-secret-edit",
            "refused_secret_reaction",
            "refused-secret-group",
            "refused-secret-json",
            "refused-secret-blocker",
        ],
    };
    let everyone = [&alice, &bob, &carol, &dave, &erin];
    let mut streams = Vec::new();
    for u in [&alice, &carol, &dave] {
        streams.push((
            u,
            Sse::open(&app.base_url, &u.token, "/v1/events", &[]).await,
        ));
    }
    let msg = |id: &str| format!("/v1/messages/{id}");

    // A direct conversation: sends, an edit, reactions given and taken
    // back, an attachment, a deletion, an opening.
    let ab = app.direct(&alice, &bob).await;
    let ae = app.direct(&erin, &alice).await;
    app.send_message(&erin, &ae, "hi alice").await;
    let a1 = id_of(&app.send_message(&alice, &ab, "hello bob").await);
    let b1 = id_of(&app.send_message(&bob, &ab, "hello alice").await);
    app.put(&bob, &msg(&b1), &[("message", "hello alice!")])
        .await
        .expect(200);
    app.put(&alice, &msg(&b1), &[("reactions[like][]", "alice")])
        .await
        .expect(200);
    app.put(&bob, &msg(&a1), &[("reactions[heart][]", "bob")])
        .await
        .expect(200);
    app.delete(&bob, &format!("{}/reactions/heart", msg(&a1)))
        .await
        .expect(200);
    app.put(
        &alice,
        &msg(&a1),
        &[
            ("attachments[0][file_url]", "https://example.com/pic.png"),
            ("attachments[0][filename]", "pic.png"),
        ],
    )
    .await
    .expect(200);
    let gone = id_of(&app.send_message(&alice, &ab, "oops").await);
    app.delete(&alice, &msg(&gone)).await.expect(204);
    app.get(&bob, &format!("/v1/conversations/{ab}"))
        .await
        .expect(200);

    // A group: roles, members in and out, its conversation.
    let made = app
        .json(
            Method::POST,
            &alice,
            "/v1/groups",
            &json!({"name": "Crew", "contact_ids": [bob.id, carol.id, dave.id]}),
        )
        .await;
    let gid = id_of(made.expect(201));
    let group = format!("/v1/groups/{gid}");
    app.put(&alice, &group, &[("add_admin_ids[]", bob.id.as_str())])
        .await
        .expect(200);
    app.put(&bob, &group, &[("add_contact_ids[]", erin.id.as_str())])
        .await
        .expect(200);
    let gc = group_conversation(&app, &carol, &gid).await;
    let mut in_group = Vec::new();
    for u in [&alice, &bob, &carol, &dave, &erin] {
        in_group.push(id_of(
            &app.send_message(u, &gc, &format!("{} in the group", u.username))
                .await,
        ));
    }
    app.put(&bob, &group, &[("remove_contact_ids[]", erin.id.as_str())])
        .await
        .expect(200);
    app.get(&carol, &format!("/v1/conversations/{gc}"))
        .await
        .expect(200);
    app.put(
        &dave,
        &format!("/v1/conversations/{gc}"),
        &[("is_muted", "true")],
    )
    .await
    .expect(200);
    app.put(
        &alice,
        &format!("/v1/conversations/{gc}"),
        &[("pinned_message_id", in_group[0].as_str())],
    )
    .await
    .expect(200);
    // The admin deletes carol's message.
    app.delete(&bob, &msg(&in_group[2])).await.expect(204);
    app.put(
        &alice,
        &group,
        &[("name", "Crew!"), ("remove_admin_ids[]", bob.id.as_str())],
    )
    .await
    .expect(200);

    // Contact changes: alice's own, and the operator's of bob and erin.
    let mine = app
        .json(
            Method::PUT,
            &alice,
            "/v1/contacts/me",
            &json!({"phone_number": "+15557770201", "avatar_url": "https://img.example/a.png"}),
        )
        .await;
    assert_eq!(mine.expect(200)["phone_number"], "+15557770201");
    for (who, phone) in [(&bob, "+15557770202"), (&erin, "+15557770205")] {
        with_key(
            &app,
            Method::PUT,
            &format!("/v1/admin/contacts/{}", who.id),
            &key,
            Some(json!({ "phone_number": phone })),
            &[],
        )
        .await
        .expect(200);
    }

    // Carol blocks dave: everything dave tries toward her is refused, and
    // so is what she tries.
    let cd = app.direct(&carol, &dave).await;
    let d1 = id_of(&app.send_message(&dave, &cd, "dave before the block").await);
    let c1 = id_of(
        &app.send_message(&carol, &cd, "carol before the block")
            .await,
    );
    block(&app, &carol, &dave).await.expect(201);
    let refusals = [
        try_send(&app, &dave, &cd, "refused-secret-send").await,
        app.json(
            Method::POST,
            &dave,
            "/v1/messages",
            &json!({"conversation_id": cd, "message": "refused-secret-json"}),
        )
        .await,
        app.put(&dave, &msg(&d1), &[("message", "refused-secret-edit")])
            .await,
        app.put(
            &dave,
            &msg(&c1),
            &[("reactions[refused_secret_reaction][]", "dave")],
        )
        .await,
        app.post(
            &dave,
            "/v1/conversations",
            &[("contact_id", carol.id.as_str())],
        )
        .await,
        app.post(
            &dave,
            "/v1/groups",
            &[
                ("name", "refused-secret-group"),
                ("contact_ids[]", carol.id.as_str()),
            ],
        )
        .await,
        try_send(&app, &carol, &cd, "refused-secret-blocker").await,
    ];
    for r in &refusals {
        assert_eq!(r.status.as_u16(), 403, "{}", r.raw);
        assert_eq!(r.body["code"], "contact_blocked", "{}", r.raw);
    }

    // Reports.
    app.post(
        &alice,
        "/v1/reports",
        &[("message_id", b1.as_str()), ("reason", "spam")],
    )
    .await
    .expect(201);
    app.post(
        &carol,
        "/v1/reports",
        &[("contact_id", dave.id.as_str()), ("reason", "harassment")],
    )
    .await
    .expect(201);

    // A last message each can hear: once listed, so is everything before.
    let last_in_group = id_of(&app.send_message(&alice, &gc, "the end").await);
    let last_for_erin = id_of(&app.send_message(&alice, &ae, "the end, erin").await);
    let mut listed: HashMap<String, Vec<Value>> = HashMap::new();
    for u in everyone {
        let last = if u.id == erin.id {
            &last_for_erin
        } else {
            &last_in_group
        };
        let events = events_until(&app, u, |e| {
            e["type"] == "message.created" && e["payload"]["id"] == last.as_str()
        })
        .await;
        // Paged 7 at a time with after=: the same events, in order.
        let paged = all_events(&app, u, 7).await;
        let ids = |list: &[Value]| -> Vec<Value> { list.iter().map(|e| e["id"].clone()).collect() };
        assert_eq!(ids(&paged), ids(&events), "{}'s events paged", u.username);
        for e in &events {
            secrets.assert_clean(e, &u.username);
        }
        listed.insert(u.username.clone(), events);
    }
    // As a key acting for each of them: the same.
    for u in everyone {
        let r = with_key(
            &app,
            Method::GET,
            "/v1/events?limit=100",
            &key,
            None,
            &[
                ("confab-contact", u.id.as_str()),
                ("accept", "application/json"),
            ],
        )
        .await;
        for e in r.expect(200)["data"].as_array().expect("data") {
            secrets.assert_clean(e, &format!("the key as {}", u.username));
        }
    }
    // The streams, up to the last message.
    for (u, mut stream) in streams {
        loop {
            let e = stream
                .event(Duration::from_secs(10))
                .await
                .unwrap_or_else(|| panic!("{}'s stream ended early", u.username));
            secrets.assert_clean(&e.data, &format!("{}'s stream", u.username));
            if e.kind == "message.created" && e.data["payload"]["id"] == last_in_group.as_str() {
                break;
            }
        }
    }

    // The scenario was heard (the searches were not of empty lists).
    let of = |name: &str, kind: &str| -> Vec<Value> {
        listed[name]
            .iter()
            .filter(|e| e["type"] == kind)
            .cloned()
            .collect()
    };
    let own_update = of("alice", "contact.updated");
    assert!(
        own_update
            .iter()
            .any(|e| e["payload"]["id"] == alice.id.as_str()
                && e["payload"]["phone_number"].is_null()
                && e["payload"]["avatar_url"] == "https://img.example/a.png"),
        "alice's own contact.updated: {own_update:#?}"
    );
    assert!(
        of("bob", "contact.updated")
            .iter()
            .any(|e| e["payload"]["id"] == alice.id.as_str()),
        "bob hears alice's change"
    );
    for kind in [
        "group.created",
        "group.updated",
        "message.updated",
        "message.deleted",
    ] {
        assert!(!of("bob", kind).is_empty(), "bob heard no {kind}");
    }
    assert!(!of("erin", "contact.created").is_empty() || !of("erin", "group.updated").is_empty());
    let carols = &listed["carol"];
    assert!(
        carols
            .iter()
            .any(|e| e["payload"]["message"] == "dave before the block"),
        "carol heard dave before the block"
    );
    let daves = &listed["dave"];
    assert!(
        daves
            .iter()
            .any(|e| e["payload"]["message"] == "carol before the block"),
        "dave heard carol before the block"
    );
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    phone_numbers_are_shown_to_their_contact_and_operators_only,
    a_key_acting_as_a_contact_sees_what_the_contact_sees,
    no_event_carries_a_phone_number_or_a_refused_text,
);
