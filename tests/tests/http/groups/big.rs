//! Big groups (docs/api.md "Groups"): the members endpoint, the group object's
//! first 100 members and count, the member limit and bad member lists,
//! unread counts worked out from positions, and events read by group for
//! members who joined or left.

use confab_tests::db::Backend;
use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::Value;

use crate::support::{group_conversation, id_of, listed_conversation, new_group};

/// `n` contacts named `{prefix}{i}`.
async fn users(app: &TestApp, prefix: &str, n: usize) -> Vec<User> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(app.user(&format!("{prefix}{i}")).await);
    }
    out
}

/// `PUT /v1/groups/{id}` adding `who` in one request.
async fn add_all(app: &TestApp, by: &User, gid: &str, who: &[User]) -> Value {
    let pairs: Vec<(&str, &str)> = who
        .iter()
        .map(|u| ("add_contact_ids[]", u.id.as_str()))
        .collect();
    let r = app.put(by, &format!("/v1/groups/{gid}"), &pairs).await;
    r.expect(200).clone()
}

/// Every member of the group, paging `limit` at a time; with each
/// page's `has_more`.
async fn all_members(app: &TestApp, by: &User, gid: &str, limit: usize) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut path = format!("/v1/groups/{gid}/members?limit={limit}");
    loop {
        let r = app.get(by, &path).await;
        let body = r.expect(200).clone();
        let data = body["data"].as_array().expect("data").clone();
        assert!(data.len() <= limit, "{body}");
        out.extend(data);
        if body["has_more"] != true {
            return out;
        }
        let last = out.last().expect("a member");
        let cursor = last["contact"]["id"].as_str().expect("id");
        path = format!("/v1/groups/{gid}/members?limit={limit}&starting_after={cursor}");
    }
}

async fn members_are_paged_oldest_first(app: TestApp) {
    let owner = app.user("owner").await;
    let first = users(&app, "first", 3).await;
    let later = users(&app, "later", 4).await;
    let outsider = app.user("outsider").await;
    let refs: Vec<&User> = first.iter().collect();
    let gid = new_group(&app, &owner, "Big", &refs).await;
    add_all(&app, &owner, &gid, &later).await;

    let members = all_members(&app, &owner, &gid, 3).await;
    let listed: Vec<&str> = members
        .iter()
        .map(|m| m["contact"]["id"].as_str().expect("id"))
        .collect();
    let expected: Vec<&str> = std::iter::once(owner.id.as_str())
        .chain(first.iter().map(|u| u.id.as_str()))
        .chain(later.iter().map(|u| u.id.as_str()))
        .collect();
    assert_eq!(listed, expected, "oldest member first");
    assert_eq!(members[0]["role"], "owner");
    for m in &members[1..] {
        assert_eq!(m["role"], "member", "{m}");
    }
    for m in &members {
        let keys: Vec<&str> = m
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 3, "{m}");
        assert!(m["joined_at"].is_i64(), "{m}");
        assert!(m["contact"]["username"].is_string(), "{m}");
    }
    // Backwards from the last one: the ones before it, in the same order.
    let last = expected[expected.len() - 1];
    let r = app
        .get(
            &owner,
            &format!("/v1/groups/{gid}/members?limit=2&ending_before={last}"),
        )
        .await;
    let body = r.expect(200);
    let back: Vec<&str> = body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| m["contact"]["id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        back,
        expected[expected.len() - 3..expected.len() - 1].to_vec()
    );

    // Any member may list them; a non-member gets 404, like a group that
    // does not exist; a cursor that is not a member is 400.
    app.get(&later[0], &format!("/v1/groups/{gid}/members"))
        .await
        .expect(200);
    app.get(&outsider, &format!("/v1/groups/{gid}/members"))
        .await
        .expect_error(404, "not_found", None);
    let r = app
        .get(
            &owner,
            &format!("/v1/groups/{gid}/members?starting_after={}", outsider.id),
        )
        .await;
    r.expect(400);
}

async fn group_object_embeds_its_first_hundred(app: TestApp) {
    let owner = app.user("owner").await;
    let many = users(&app, "m", 120).await;
    let gid = new_group(&app, &owner, "Many", &[]).await;
    let group = add_all(&app, &owner, &gid, &many).await;
    assert_eq!(group["member_count"], 121, "{}", group["member_count"]);
    let embedded: Vec<&str> = group["contacts"]
        .as_array()
        .expect("contacts")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    let expected: Vec<&str> = std::iter::once(owner.id.as_str())
        .chain(many.iter().map(|u| u.id.as_str()))
        .take(100)
        .collect();
    assert_eq!(embedded, expected, "the first 100, in join order");
    // phone numbers are private: docs/api.md "Blocks and reports". The owner sees only
    // their own; many[119], not among the 100 embedded, sees none.
    let phones = |g: &Value| -> Vec<Value> {
        g["contacts"]
            .as_array()
            .expect("contacts")
            .iter()
            .map(|c| c["phone_number"].clone())
            .collect()
    };
    let mut owners_view = vec![Value::Null; 100];
    owners_view[0] = Value::from("+15550100");
    assert_eq!(phones(&group), owners_view);
    let got = app.get(&many[119], &format!("/v1/groups/{gid}")).await;
    let got = got.expect(200);
    assert_eq!(phones(got), vec![Value::Null; 100]);
    let mut as_others_see = group.clone();
    as_others_see["contacts"][0]["phone_number"] = Value::Null;
    assert_eq!(got, &as_others_see);

    // Removing members counts them out; one who leaves sees it go.
    let pairs: Vec<(&str, &str)> = many[..50]
        .iter()
        .map(|u| ("remove_contact_ids[]", u.id.as_str()))
        .collect();
    let r = app.put(&owner, &format!("/v1/groups/{gid}"), &pairs).await;
    let after = r.expect(200);
    assert_eq!(after["member_count"], 71);
    assert_eq!(after["contacts"].as_array().expect("contacts").len(), 71);
    assert_eq!(all_members(&app, &owner, &gid, 100).await.len(), 71);
}

async fn bad_member_lists_change_nothing(app: TestApp) {
    let owner = app.user("owner").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &owner, "Team", &[&bob]).await;
    let path = format!("/v1/groups/{gid}");
    let unknown = uuid::Uuid::now_v7().to_string();
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![
                ("add_contact_ids[]", carol.id.as_str()),
                ("add_contact_ids[]", carol.id.as_str()),
            ],
            "add_contact_ids",
        ),
        (
            vec![
                ("add_contact_ids[]", carol.id.as_str()),
                ("add_contact_ids[]", unknown.as_str()),
            ],
            "add_contact_ids",
        ),
        (
            vec![
                ("remove_contact_ids[]", bob.id.as_str()),
                ("remove_contact_ids[]", bob.id.as_str()),
            ],
            "remove_contact_ids",
        ),
        (
            vec![
                ("add_contact_ids[]", carol.id.as_str()),
                ("remove_contact_ids[]", carol.id.as_str()),
            ],
            "remove_contact_ids",
        ),
        (
            vec![
                ("name", "Renamed"),
                ("add_contact_ids[]", carol.id.as_str()),
                ("add_contact_ids[]", unknown.as_str()),
                ("remove_contact_ids[]", bob.id.as_str()),
            ],
            "add_contact_ids",
        ),
    ];
    for (pairs, param) in cases {
        app.put(&owner, &path, &pairs)
            .await
            .expect_error(400, "parameter_invalid", Some(param));
    }
    // Nothing was half-applied.
    let group = app.get(&owner, &path).await.expect(200).clone();
    assert_eq!(group["name"], "Team");
    assert_eq!(group["member_count"], 2);
    let r = app
        .post(
            &owner,
            "/v1/groups",
            &[
                ("name", "Twice"),
                ("contact_ids[]", bob.id.as_str()),
                ("contact_ids[]", bob.id.as_str()),
            ],
        )
        .await;
    r.expect_error(400, "parameter_invalid", Some("contact_ids"));
}

/// With at most 4 members a group: creating or growing one past it is
/// 400 naming the list, and writes nothing.
async fn member_limit(backend: Backend) {
    let app = TestApp::spawn_with_service(backend, |s| s.with_max_group_members(4)).await;
    let owner = app.user("owner").await;
    let others = users(&app, "u", 5).await;
    let pairs: Vec<(&str, &str)> = std::iter::once(("name", "Five"))
        .chain(others[..4].iter().map(|u| ("contact_ids[]", u.id.as_str())))
        .collect();
    app.post(&owner, "/v1/groups", &pairs).await.expect_error(
        400,
        "parameter_invalid",
        Some("contact_ids"),
    );
    let list = app.get(&owner, "/v1/groups").await;
    assert_eq!(list.expect(200)["data"].as_array().map(Vec::len), Some(0));

    let gid = new_group(&app, &owner, "Three", &[&others[0], &others[1]]).await;
    let path = format!("/v1/groups/{gid}");
    app.put(
        &owner,
        &path,
        &[
            ("add_contact_ids[]", others[2].id.as_str()),
            ("add_contact_ids[]", others[3].id.as_str()),
        ],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("add_contact_ids"));
    assert_eq!(app.get(&owner, &path).await.expect(200)["member_count"], 3);
    // Up to the limit, and one in for one out, are fine.
    let full = app
        .put(
            &owner,
            &path,
            &[("add_contact_ids[]", others[2].id.as_str())],
        )
        .await;
    assert_eq!(full.expect(200)["member_count"], 4);
    let swapped = app
        .put(
            &owner,
            &path,
            &[
                ("add_contact_ids[]", others[3].id.as_str()),
                ("remove_contact_ids[]", others[0].id.as_str()),
            ],
        )
        .await;
    assert_eq!(swapped.expect(200)["member_count"], 4);
}

async fn unread(app: &TestApp, who: &User, cid: &str) -> i64 {
    listed_conversation(app, who, cid).await["unread_count"]
        .as_i64()
        .expect("unread_count")
}

async fn unread_counts_stay_exact_in_groups(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let gid = new_group(&app, &alice, "Team", &[&bob, &carol]).await;
    let cid = group_conversation(&app, &alice, &gid).await;

    let a1 = id_of(&app.send_message(&alice, &cid, "a1").await);
    let b1 = id_of(&app.send_message(&bob, &cid, "b1").await);
    app.send_message(&carol, &cid, "c1").await;
    assert_eq!(unread(&app, &alice, &cid).await, 2);
    assert_eq!(unread(&app, &bob, &cid).await, 2);
    assert_eq!(unread(&app, &carol, &cid).await, 2);

    // Bob reads; then more arrive, his own among them.
    app.get(&bob, &format!("/v1/conversations/{cid}"))
        .await
        .expect(200);
    assert_eq!(unread(&app, &bob, &cid).await, 0);
    let a2 = id_of(&app.send_message(&alice, &cid, "a2").await);
    app.send_message(&bob, &cid, "b2").await;
    assert_eq!(unread(&app, &bob, &cid).await, 1);
    assert_eq!(unread(&app, &carol, &cid).await, 4);

    // A deleted message leaves the counts of those who had not read it,
    // never of those who had, nor of its sender.
    app.delete(&alice, &format!("/v1/messages/{a2}"))
        .await
        .expect(204);
    assert_eq!(unread(&app, &bob, &cid).await, 0);
    assert_eq!(unread(&app, &carol, &cid).await, 3);
    assert_eq!(unread(&app, &alice, &cid).await, 3);
    app.delete(&alice, &format!("/v1/messages/{a1}"))
        .await
        .expect(204);
    assert_eq!(unread(&app, &bob, &cid).await, 0, "bob had read a1");
    assert_eq!(unread(&app, &carol, &cid).await, 2);
    app.delete(&bob, &format!("/v1/messages/{b1}"))
        .await
        .expect(204);
    assert_eq!(unread(&app, &bob, &cid).await, 0, "his own");
    assert_eq!(unread(&app, &carol, &cid).await, 1);
    assert_eq!(unread(&app, &alice, &cid).await, 2);

    // One who joins later has every message unread (never opened).
    add_all(&app, &alice, &gid, std::slice::from_ref(&dave)).await;
    assert_eq!(unread(&app, &dave, &cid).await, 2);
    let opened = app.get(&dave, &format!("/v1/conversations/{cid}")).await;
    assert_eq!(opened.expect(200)["unread_count"], 0);
    app.send_message(&dave, &cid, "d1").await;
    assert_eq!(unread(&app, &dave, &cid).await, 0);
    assert_eq!(unread(&app, &carol, &cid).await, 2);
}

/// [`catch_up`], read again until `ready` holds of it (at most 5 s; then
/// as last read, for the assertions to show). An event is listed once
/// every transaction that began before its own has ended (the events'
/// horizon, docs/api.md "Listen for events"): a read right after a send may come before
/// a concurrent test's longer transaction ends.
async fn catch_up_until(
    app: &TestApp,
    who: &User,
    after: Option<&str>,
    ready: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let events = catch_up(app, who, after).await;
        if ready(&events) || std::time::Instant::now() > deadline {
            return events;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Whether `events` hold a `message.created` with this text.
fn has_message(events: &[Value], text: &str) -> bool {
    message_texts(events).iter().any(|t| t == text)
}

/// The JSON catch-up of `who` after `after` (every event, oldest first).
async fn catch_up(app: &TestApp, who: &User, after: Option<&str>) -> Vec<Value> {
    let path = match after {
        Some(a) => format!("/v1/events?limit=100&after={a}"),
        None => "/v1/events?limit=100".to_owned(),
    };
    let r = app
        .send(
            Method::GET,
            &path,
            Some(&who.token),
            None,
            &[("accept", "application/json")],
        )
        .await;
    r.expect(200)["data"].as_array().expect("data").clone()
}

fn message_texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "message.created")
        .map(|e| e["payload"]["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

async fn members_see_group_events_while_members(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &alice, "Team", &[&bob]).await;
    let cid = group_conversation(&app, &alice, &gid).await;
    app.send_message(&alice, &cid, "before carol").await;
    let bob_mark = catch_up_until(&app, &bob, None, |e| has_message(e, "before carol")).await;
    let bob_mark = bob_mark.last().expect("an event")["id"]
        .as_str()
        .expect("id")
        .to_owned();

    add_all(&app, &alice, &gid, std::slice::from_ref(&carol)).await;
    app.send_message(&alice, &cid, "with carol").await;
    // Carol sees the group from her joining on: the change that added
    // her, then what followed; nothing from before.
    let carols = catch_up_until(&app, &carol, None, |e| has_message(e, "with carol")).await;
    assert_eq!(message_texts(&carols), vec!["with carol"]);
    // (Her own contact.created comes first.)
    assert_eq!(carols[0]["type"], "contact.created", "{carols:?}");
    assert_eq!(carols[1]["type"], "group.updated", "{carols:?}");

    // Bob leaves; he hears of it, and sees nothing after.
    let path = format!("/v1/groups/{gid}");
    app.put(&bob, &path, &[("remove_contact_ids[]", &bob.id)])
        .await
        .expect(200);
    app.send_message(&alice, &cid, "after bob").await;
    // Once carol (a member) can read it, bob must not.
    let carols = catch_up_until(&app, &carol, None, |e| has_message(e, "after bob")).await;
    assert!(has_message(&carols, "after bob"), "{carols:?}");
    let bobs = catch_up(&app, &bob, Some(&bob_mark)).await;
    assert_eq!(message_texts(&bobs), vec!["with carol"]);
    let last = bobs.last().expect("events");
    assert_eq!(last["type"], "group.updated", "{bobs:?}");
    assert_eq!(last["payload"]["member_count"], 2);
    // Carol saw it all, each event once.
    assert_eq!(message_texts(&carols), vec!["with carol", "after bob"]);
    let mut ids: Vec<&str> = carols
        .iter()
        .map(|e| e["id"].as_str().expect("id"))
        .collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "no event twice");

    // A member who is also a peer of a direct conversation hears of a
    // contact's change once.
    app.direct(&alice, &carol).await;
    app.put(
        &alice,
        "/v1/contacts/me",
        &[("avatar_url", "https://example.com/a.png")],
    )
    .await
    .expect(200);
    let carols = catch_up_until(&app, &carol, None, |e| {
        e.iter().any(|e| e["type"] == "contact.updated")
    })
    .await;
    let updates = carols
        .iter()
        .filter(|e| e["type"] == "contact.updated")
        .count();
    assert_eq!(updates, 1, "{carols:?}");

    // When the group goes, its last members hear of it.
    app.delete(&alice, &path).await.expect(204);
    let carols = catch_up_until(&app, &carol, None, |e| {
        e.iter().any(|e| e["type"] == "group.deleted")
    })
    .await;
    assert_eq!(carols.last().expect("events")["type"], "group.deleted");
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    members_are_paged_oldest_first,
    group_object_embeds_its_first_hundred,
    bad_member_lists_change_nothing,
    unread_counts_stay_exact_in_groups,
    members_see_group_events_while_members,
);

mod limit {
    use super::member_limit;
    confab_tests::on_both_stores!(crate::support::on_backend; member_limit);
}
