//! Groups and group conversations (API.md sections 0, 6 and 7): the group
//! object, validation, paging, owner and member rights, live membership
//! and per-member conversation state. The authorization matrix of every
//! group and group-conversation operation is in `authorization`.

use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use crate::contacts::assert_contact_shape;
use crate::support::{
    check, data_ids, group_conversation, id_of, ids, ids_of, keys, listed_conversation, member_ids,
    new_group, now_secs, Case,
};

// ---------------------------------------------------------------- helpers

/// `by` adds `who` to the group, which must succeed; returns the group.
async fn add_member(app: &TestApp, by: &User, group_id: &str, who: &User) -> Value {
    let path = format!("/v1/groups/{group_id}");
    let r = app.put(by, &path, &[("add_contact_ids[]", &who.id)]).await;
    r.expect(200).clone()
}

/// `by` removes `who` (themself, to leave) from the group, which must
/// succeed; returns the group.
async fn remove_member(app: &TestApp, by: &User, group_id: &str, who: &User) -> Value {
    let path = format!("/v1/groups/{group_id}");
    let r = app
        .put(by, &path, &[("remove_contact_ids[]", &who.id)])
        .await;
    r.expect(200).clone()
}

/// All of `user`'s conversations (one page of 100 is plenty here).
async fn conversation_ids(app: &TestApp, user: &User, query: &str) -> Vec<String> {
    let r = app
        .get(user, &format!("/v1/conversations?limit=100{query}"))
        .await;
    data_ids(r.expect(200))
}

/// All messages `user` can see (one page of 100).
async fn all_message_ids(app: &TestApp, user: &User) -> Vec<String> {
    let r = app.get(user, "/v1/messages?limit=100").await;
    data_ids(r.expect(200))
}

async fn group_ids(app: &TestApp, user: &User) -> Vec<String> {
    let r = app.get(user, "/v1/groups?limit=100").await;
    data_ids(r.expect(200))
}

// ------------------------------------------------------- the group object

async fn create_group_returns_the_group(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;

    let before = now_secs();
    let r = app
        .post(
            &alice,
            "/v1/groups",
            &[
                ("name", "Team Rocket"),
                ("description", "We blast off"),
                ("avatar_url", "https://img.example/team.png"),
                ("contact_ids[]", &bob.id),
                ("contact_ids[]", &carol.id),
            ],
        )
        .await;
    let group = r.expect(201).clone();
    assert_eq!(
        keys(&group),
        [
            "avatar_url",
            "contacts",
            "created_at",
            "description",
            "id",
            "member_count",
            "name"
        ],
        "{group}"
    );
    assert_eq!(group["member_count"], 3, "{group}");
    let gid = id_of(&group);
    assert_eq!(gid.len(), 36, "uuid-shaped id: {gid}");
    assert_eq!(gid, gid.to_lowercase());
    let location = r.header("location").expect("Location header");
    assert!(
        location.ends_with(&format!("/v1/groups/{gid}")),
        "Location: {location}"
    );
    assert_eq!(group["name"], "Team Rocket");
    assert_eq!(group["description"], "We blast off");
    assert_eq!(group["avatar_url"], "https://img.example/team.png");
    let created = group["created_at"].as_i64().expect("created_at integer");
    assert!(
        (before - 1..=now_secs() + 1).contains(&created),
        "created_at {created} in Unix seconds"
    );
    // The creator is a member too.
    assert_eq!(member_ids(&group), ids_of(&[&alice, &bob, &carol]));
    for c in group["contacts"].as_array().expect("contacts") {
        assert_contact_shape(c);
    }
    let bob_in = group["contacts"]
        .as_array()
        .expect("contacts")
        .iter()
        .find(|c| c["id"] == bob.id.as_str())
        .expect("bob listed");
    assert_eq!(bob_in["username"], "bob");
    assert_eq!(bob_in["phone_number"], "+15550100");
    assert_eq!(bob_in["avatar_url"], "");

    // Every member gets the same group; an outsider gets 404.
    for u in [&alice, &bob, &carol] {
        let r = app.get(u, &format!("/v1/groups/{gid}")).await;
        let seen = r.expect(200);
        assert_eq!(seen["id"], gid.as_str());
        assert_eq!(seen["name"], "Team Rocket");
        assert_eq!(seen["description"], "We blast off");
        assert_eq!(seen["avatar_url"], "https://img.example/team.png");
        assert_eq!(seen["created_at"], group["created_at"]);
        assert_eq!(member_ids(seen), ids_of(&[&alice, &bob, &carol]));
    }
    app.get(&dave, &format!("/v1/groups/{gid}"))
        .await
        .expect_error(404, "not_found", None);
    app.get(&alice, &format!("/v1/groups/{}", uuid::Uuid::now_v7()))
        .await
        .expect_error(404, "not_found", None);
    app.get(&alice, "/v1/groups/not-an-id")
        .await
        .expect_error(404, "not_found", None);

    // Defaults: description and avatar_url are "" (never null); a group of
    // one is its creator.
    let r = app.post(&dave, "/v1/groups", &[("name", "Solo")]).await;
    let solo = r.expect(201);
    assert_eq!(solo["description"], "");
    assert_eq!(solo["avatar_url"], "");
    assert_eq!(member_ids(solo), ids_of(&[&dave]));

    // JSON bodies, with natural types.
    let r = app
        .json(
            Method::POST,
            &bob,
            "/v1/groups",
            &json!({"name": "Json", "description": "d", "contact_ids": [carol.id]}),
        )
        .await;
    let g = r.expect(201);
    assert_eq!(g["name"], "Json");
    assert_eq!(g["description"], "d");
    assert_eq!(member_ids(g), ids_of(&[&bob, &carol]));
}

async fn create_group_validates(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let long = "x".repeat(101);
    let unknown = uuid::Uuid::now_v7().to_string();

    app.post(&alice, "/v1/groups", &[("description", "no name")])
        .await
        .expect_error(400, "parameter_missing", Some("name"));
    app.post(&alice, "/v1/groups", &[])
        .await
        .expect_error(400, "parameter_missing", Some("name"));
    let cases: Vec<Case> = vec![
        (vec![("name", "")], "parameter_invalid", "name"),
        (vec![("name", "   ")], "parameter_invalid", "name"),
        (vec![("name", " \t\n ")], "parameter_invalid", "name"),
        (vec![("name", long.as_str())], "parameter_invalid", "name"),
        (
            vec![("name", "ok"), ("contact_ids[]", unknown.as_str())],
            "parameter_invalid",
            "contact_ids",
        ),
        (
            vec![
                ("name", "ok"),
                ("contact_ids[]", bob.id.as_str()),
                ("contact_ids[]", "nope"),
            ],
            "parameter_invalid",
            "contact_ids",
        ),
        (
            vec![("name", "ok"), ("avatar_url", "ftp://img.example/a.png")],
            "parameter_invalid",
            "avatar_url",
        ),
        (
            vec![("name", "ok"), ("id", unknown.as_str())],
            "parameter_unknown",
            "id",
        ),
        (
            vec![("name", "ok"), ("owner", "bob")],
            "parameter_unknown",
            "owner",
        ),
        (
            vec![("name", "ok"), ("created_at", "0")],
            "parameter_unknown",
            "created_at",
        ),
        (
            vec![("name", "ok"), ("contacts", bob.id.as_str())],
            "parameter_unknown",
            "contacts",
        ),
    ];
    for (pairs, code, param) in &cases {
        let r = app.post(&alice, "/v1/groups", pairs).await;
        assert_eq!(r.status.as_u16(), 400, "{pairs:?}: {}", r.raw);
        r.expect_error(400, code, Some(param));
    }
    let r = app
        .json(Method::POST, &alice, "/v1/groups", &json!({"name": 5}))
        .await;
    r.expect_error(400, "parameter_invalid", Some("name"));

    // Nothing was created by any refused request (also not bob's membership).
    let r = app.get(&alice, "/v1/groups").await;
    assert_eq!(r.expect(200), &json!({"has_more": false, "data": []}));
    let r = app.get(&bob, "/v1/groups").await;
    assert_eq!(r.expect(200), &json!({"has_more": false, "data": []}));

    // 100 characters (not bytes) is the limit.
    let hundred = "é".repeat(100);
    let r = app.post(&alice, "/v1/groups", &[("name", &hundred)]).await;
    assert_eq!(r.expect(201)["name"], hundred.as_str());
}

async fn list_groups_is_paged(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;

    let g1 = new_group(&app, &alice, "one", &[]).await;
    let foreign = new_group(&app, &bob, "bob's", &[&carol]).await;
    let g2 = new_group(&app, &carol, "carol's with alice", &[&alice]).await;
    let g3 = new_group(&app, &alice, "three", &[&bob]).await;
    let g4 = new_group(&app, &alice, "four", &[]).await;

    // Only the caller's groups, newest first.
    let r = app.get(&alice, "/v1/groups").await;
    let body = r.expect(200);
    assert_eq!(body["has_more"], false);
    assert_eq!(data_ids(body), ids(&[&g4, &g3, &g2, &g1]));
    for g in body["data"].as_array().expect("data") {
        assert_eq!(
            keys(g),
            [
                "avatar_url",
                "contacts",
                "created_at",
                "description",
                "id",
                "member_count",
                "name"
            ]
        );
        assert_eq!(
            g["member_count"].as_u64(),
            g["contacts"].as_array().map(|c| c.len() as u64),
            "{g}"
        );
    }
    assert_eq!(group_ids(&app, &bob).await, ids(&[&g3, &foreign]));

    // Forward.
    let r = app.get(&alice, "/v1/groups?limit=2").await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&g4, &g3]));
    assert_eq!(body["has_more"], true);
    let r = app
        .get(&alice, &format!("/v1/groups?limit=2&starting_after={g3}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&g2, &g1]));
    assert_eq!(body["has_more"], false);
    let r = app
        .get(&alice, &format!("/v1/groups?limit=3&starting_after={g4}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&g3, &g2, &g1]));
    assert_eq!(body["has_more"], false);
    let r = app
        .get(&alice, &format!("/v1/groups?limit=1&starting_after={g3}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&g2]));
    assert_eq!(body["has_more"], true);

    // Backward: the page before, still in list order.
    let r = app
        .get(&alice, &format!("/v1/groups?limit=2&ending_before={g2}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&g4, &g3]));
    assert_eq!(body["has_more"], false);
    let r = app
        .get(&alice, &format!("/v1/groups?limit=1&ending_before={g2}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&g3]));
    assert_eq!(body["has_more"], true);

    // Cursors and limits are checked.
    app.get(&alice, &format!("/v1/groups?starting_after={foreign}"))
        .await
        .expect_error(400, "parameter_invalid", Some("starting_after"));
    app.get(&alice, &format!("/v1/groups?ending_before={foreign}"))
        .await
        .expect_error(400, "parameter_invalid", Some("ending_before"));
    let r = app
        .get(
            &alice,
            &format!("/v1/groups?starting_after={g3}&ending_before={g1}"),
        )
        .await;
    assert_eq!(r.expect(400)["code"], "parameter_invalid", "{}", r.raw);
    for bad in ["0", "101", "-1", "ten", ""] {
        app.get(&alice, &format!("/v1/groups?limit={bad}"))
            .await
            .expect_error(400, "parameter_invalid", Some("limit"));
    }
    app.get(&alice, "/v1/groups?name=one").await.expect_error(
        400,
        "parameter_unknown",
        Some("name"),
    );

    // Default page size is 10.
    for i in 0..7 {
        new_group(&app, &alice, &format!("more {i}"), &[]).await;
    }
    let r = app.get(&alice, "/v1/groups").await;
    let body = r.expect(200);
    assert_eq!(data_ids(body).len(), 10);
    assert_eq!(body["has_more"], true);
    let last = data_ids(body).pop().expect("ten ids");
    let r = app
        .get(&alice, &format!("/v1/groups?starting_after={last}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&g1]));
    assert_eq!(body["has_more"], false);
}

// ---------------------------------------------------- updates and rights

async fn owner_updates_the_group(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let r = app
        .post(
            &alice,
            "/v1/groups",
            &[
                ("name", "Team"),
                ("description", "old"),
                ("avatar_url", "https://img.example/a.png"),
                ("contact_ids[]", &bob.id),
            ],
        )
        .await;
    let original = r.expect(201).clone();
    let gid = id_of(&original);
    let path = format!("/v1/groups/{gid}");

    // Only the submitted attributes change.
    let r = app.put(&alice, &path, &[("name", "Renamed")]).await;
    let g = r.expect(200);
    assert_eq!(g["id"], gid.as_str());
    assert_eq!(g["name"], "Renamed");
    assert_eq!(g["description"], "old");
    assert_eq!(g["avatar_url"], "https://img.example/a.png");
    assert_eq!(g["created_at"], original["created_at"]);
    assert_eq!(member_ids(g), ids_of(&[&alice, &bob]));

    let r = app
        .put(&alice, &path, &[("description", ""), ("avatar_url", "")])
        .await;
    let g = r.expect(200);
    assert_eq!(g["name"], "Renamed");
    assert_eq!(g["description"], "");
    assert_eq!(g["avatar_url"], "");

    // Add and remove members, in one request.
    let r = app
        .put(
            &alice,
            &path,
            &[
                ("add_contact_ids[]", &carol.id),
                ("add_contact_ids[]", &dave.id),
                ("remove_contact_ids[]", &bob.id),
            ],
        )
        .await;
    let g = r.expect(200);
    assert_eq!(member_ids(g), ids_of(&[&alice, &carol, &dave]));
    for c in g["contacts"].as_array().expect("contacts") {
        assert_contact_shape(c);
    }
    app.get(&bob, &path)
        .await
        .expect_error(404, "not_found", None);
    let r = app.get(&carol, &path).await;
    assert_eq!(member_ids(r.expect(200)), ids_of(&[&alice, &carol, &dave]));
    assert_eq!(group_ids(&app, &dave).await, ids(&[&gid]));
    assert!(group_ids(&app, &bob).await.is_empty());

    // JSON with arrays.
    let r = app
        .json(
            Method::PUT,
            &alice,
            &path,
            &json!({"add_contact_ids": [bob.id], "remove_contact_ids": [dave.id], "name": "J"}),
        )
        .await;
    let g = r.expect(200);
    assert_eq!(g["name"], "J");
    assert_eq!(member_ids(g), ids_of(&[&alice, &bob, &carol]));

    // An empty PUT returns the group unchanged.
    let r = app.put(&alice, &path, &[]).await;
    let g = r.expect(200);
    assert_eq!(g["name"], "J");
    assert_eq!(member_ids(g), ids_of(&[&alice, &bob, &carol]));

    // Validation; a refused request changes nothing.
    let unknown = uuid::Uuid::now_v7().to_string();
    let long = "n".repeat(101);
    let cases: Vec<Case> = vec![
        (vec![("name", "")], "parameter_invalid", "name"),
        (vec![("name", "  ")], "parameter_invalid", "name"),
        (vec![("name", long.as_str())], "parameter_invalid", "name"),
        (
            vec![("name", "Changed"), ("avatar_url", "mailto:a@b")],
            "parameter_invalid",
            "avatar_url",
        ),
        (
            vec![("name", "Changed"), ("add_contact_ids[]", unknown.as_str())],
            "parameter_invalid",
            "add_contact_ids",
        ),
        (
            vec![
                ("add_contact_ids[]", dave.id.as_str()),
                ("add_contact_ids[]", "nope"),
            ],
            "parameter_invalid",
            "add_contact_ids",
        ),
        (
            vec![("remove_contact_ids[]", "nope"), ("name", "Changed")],
            "parameter_invalid",
            "remove_contact_ids",
        ),
        (
            vec![("name", "Changed"), ("contact_ids[]", dave.id.as_str())],
            "parameter_unknown",
            "contact_ids",
        ),
        (
            vec![("name", "Changed"), ("id", unknown.as_str())],
            "parameter_unknown",
            "id",
        ),
        (
            vec![("name", "Changed"), ("created_at", "0")],
            "parameter_unknown",
            "created_at",
        ),
    ];
    for (pairs, code, param) in &cases {
        let r = app.put(&alice, &path, pairs).await;
        assert_eq!(r.status.as_u16(), 400, "{pairs:?}: {}", r.raw);
        r.expect_error(400, code, Some(param));
    }
    let r = app.get(&alice, &path).await;
    let g = r.expect(200);
    assert_eq!(g["name"], "J");
    assert_eq!(member_ids(g), ids_of(&[&alice, &bob, &carol]));
}

async fn members_may_only_leave(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let gid = new_group(&app, &alice, "Team", &[&bob, &carol]).await;
    let path = format!("/v1/groups/{gid}");

    // A member trying an owner's action: 403, and nothing changes.
    let forbidden: Vec<Vec<(&str, &str)>> = vec![
        vec![("name", "Mine now")],
        vec![("description", "x")],
        vec![("avatar_url", "https://img.example/x.png")],
        vec![("add_contact_ids[]", dave.id.as_str())],
        vec![("remove_contact_ids[]", carol.id.as_str())],
        vec![("remove_contact_ids[]", alice.id.as_str())],
        // Leaving while taking someone along is still removing someone else.
        vec![
            ("remove_contact_ids[]", bob.id.as_str()),
            ("remove_contact_ids[]", carol.id.as_str()),
        ],
        vec![("remove_contact_ids[]", bob.id.as_str()), ("name", "Bye")],
    ];
    for pairs in &forbidden {
        let r = app.put(&bob, &path, pairs).await;
        assert_eq!(r.status.as_u16(), 403, "{pairs:?}: {}", r.raw);
        r.expect_error(403, "forbidden", None);
    }
    app.delete(&bob, &path)
        .await
        .expect_error(403, "forbidden", None);
    let r = app.get(&alice, &path).await;
    let g = r.expect(200);
    assert_eq!(g["name"], "Team");
    assert_eq!(g["description"], "");
    assert_eq!(member_ids(g), ids_of(&[&alice, &bob, &carol]));

    // An outsider: 404 for everything, also "leaving".
    app.get(&dave, &path)
        .await
        .expect_error(404, "not_found", None);
    app.put(&dave, &path, &[("name", "x")])
        .await
        .expect_error(404, "not_found", None);
    app.put(&dave, &path, &[("remove_contact_ids[]", &dave.id)])
        .await
        .expect_error(404, "not_found", None);
    app.delete(&dave, &path)
        .await
        .expect_error(404, "not_found", None);

    // A member may remove themself, and is gone at once.
    let r = app
        .put(&bob, &path, &[("remove_contact_ids[]", &bob.id)])
        .await;
    let g = r.expect(200);
    assert_eq!(member_ids(g), ids_of(&[&alice, &carol]));
    app.get(&bob, &path)
        .await
        .expect_error(404, "not_found", None);
    app.put(&bob, &path, &[("remove_contact_ids[]", &bob.id)])
        .await
        .expect_error(404, "not_found", None);
    app.delete(&bob, &path)
        .await
        .expect_error(404, "not_found", None);
    assert!(group_ids(&app, &bob).await.is_empty());
    let r = app.get(&carol, &path).await;
    assert_eq!(member_ids(r.expect(200)), ids_of(&[&alice, &carol]));
}

async fn last_owner_cannot_leave(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let gid = new_group(&app, &alice, "Team", &[&bob]).await;
    let path = format!("/v1/groups/{gid}");

    app.put(&alice, &path, &[("remove_contact_ids[]", &alice.id)])
        .await
        .expect_error(400, "parameter_invalid", Some("remove_contact_ids"));
    // Also not together with other changes (which then do not happen).
    app.put(
        &alice,
        &path,
        &[
            ("remove_contact_ids[]", &bob.id),
            ("remove_contact_ids[]", &alice.id),
            ("name", "Gone"),
        ],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("remove_contact_ids"));
    let r = app.get(&alice, &path).await;
    let g = r.expect(200);
    assert_eq!(g["name"], "Team");
    assert_eq!(member_ids(g), ids_of(&[&alice, &bob]));

    // A group of one: same.
    let solo = new_group(&app, &bob, "Solo", &[]).await;
    app.put(
        &bob,
        &format!("/v1/groups/{solo}"),
        &[("remove_contact_ids[]", &bob.id)],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("remove_contact_ids"));
    assert_eq!(group_ids(&app, &bob).await, ids(&[&solo, &gid]));

    // Deleting is the way out.
    let r = app.delete(&bob, &format!("/v1/groups/{solo}")).await;
    r.expect(204);
    assert!(r.raw.is_empty(), "204 has an empty body: {}", r.raw);
    assert_eq!(group_ids(&app, &bob).await, ids(&[&gid]));
}

async fn delete_group_takes_its_conversations(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let gid = new_group(&app, &alice, "Team", &[&bob]).await;
    let other = new_group(&app, &alice, "Other", &[&bob]).await;
    let c1 = group_conversation(&app, &bob, &gid).await;
    let c2 = group_conversation(&app, &alice, &gid).await;
    let kept = group_conversation(&app, &alice, &other).await;
    let direct = app.direct(&alice, &bob).await;
    let m1 = id_of(&app.send_message(&bob, &c1, "in c1").await);
    let m2 = id_of(&app.send_message(&alice, &c2, "in c2").await);
    let mk = id_of(&app.send_message(&bob, &kept, "kept").await);
    let md = id_of(&app.send_message(&alice, &direct, "direct").await);

    let r = app.delete(&alice, &format!("/v1/groups/{gid}")).await;
    r.expect(204);
    assert!(r.raw.is_empty(), "204 has an empty body: {}", r.raw);

    for u in [&alice, &bob] {
        app.get(u, &format!("/v1/groups/{gid}"))
            .await
            .expect_error(404, "not_found", None);
        for c in [&c1, &c2] {
            app.get(u, &format!("/v1/conversations/{c}"))
                .await
                .expect_error(404, "not_found", None);
            app.get(u, &format!("/v1/messages?conversation_id={c}"))
                .await
                .expect_error(404, "not_found", Some("conversation_id"));
        }
        for m in [&m1, &m2] {
            app.get(u, &format!("/v1/messages/{m}"))
                .await
                .expect_error(404, "not_found", None);
        }
        // Everything else is untouched.
        assert_eq!(group_ids(&app, u).await, ids(&[&other]));
        let mut convs = conversation_ids(&app, u, "").await;
        convs.sort();
        let mut want = vec![kept.clone(), direct.clone()];
        want.sort();
        assert_eq!(convs, want);
        let mut msgs = all_message_ids(&app, u).await;
        msgs.sort();
        let mut want = vec![mk.clone(), md.clone()];
        want.sort();
        assert_eq!(msgs, want);
    }
    app.post(&alice, "/v1/conversations", &[("group_id", &gid)])
        .await
        .expect_error(404, "not_found", Some("group_id"));
    app.delete(&alice, &format!("/v1/groups/{gid}"))
        .await
        .expect_error(404, "not_found", None);
}

// ------------------------------------------------- group conversations

async fn group_conversation_object(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let dave = app.user("dave").await;
    let gid = new_group(&app, &alice, "Team", &[&bob]).await;
    let daves = new_group(&app, &dave, "Dave's", &[]).await;

    let r = app
        .post(&bob, "/v1/conversations", &[("group_id", &gid)])
        .await;
    let conv = r.expect(201).clone();
    let cid = id_of(&conv);
    let location = r.header("location").expect("Location header");
    assert!(
        location.ends_with(&format!("/v1/conversations/{cid}")),
        "Location: {location}"
    );
    assert_eq!(conv["group_id"], gid.as_str());
    assert!(conv["contact_id"].is_null(), "{conv}");
    assert_eq!(conv["is_pinned"], false);
    assert_eq!(conv["is_muted"], false);
    for k in [
        "pinned_message_id",
        "archived_at",
        "last_active_at",
        "last_opened_at",
    ] {
        assert!(conv[k].is_null(), "{k}: {conv}");
    }
    assert!(conv["created_at"].is_i64(), "{conv}");

    // Every member sees the same conversation, with group_id set and no
    // contact_id.
    for u in [&alice, &bob] {
        let r = app.get(u, &format!("/v1/conversations/{cid}")).await;
        let seen = r.expect(200);
        assert_eq!(seen["id"], cid.as_str());
        assert_eq!(seen["group_id"], gid.as_str());
        assert!(seen["contact_id"].is_null(), "{seen}");
        assert_eq!(seen["created_at"], conv["created_at"]);
        let listed = listed_conversation(&app, u, &cid).await;
        assert_eq!(listed["group_id"], gid.as_str());
        assert!(listed["contact_id"].is_null(), "{listed}");
    }
    app.get(&dave, &format!("/v1/conversations/{cid}"))
        .await
        .expect_error(404, "not_found", None);

    // A group one is not in, or that does not exist: 404 naming group_id.
    app.post(&alice, "/v1/conversations", &[("group_id", &daves)])
        .await
        .expect_error(404, "not_found", Some("group_id"));
    let unknown = uuid::Uuid::now_v7().to_string();
    app.post(&alice, "/v1/conversations", &[("group_id", &unknown)])
        .await
        .expect_error(404, "not_found", Some("group_id"));
    // Both targets at once: 400.
    let r = app
        .post(
            &alice,
            "/v1/conversations",
            &[("group_id", &gid), ("contact_id", &bob.id)],
        )
        .await;
    r.expect(400);
    assert_eq!(conversation_ids(&app, &alice, "").await, ids(&[&cid]));

    // Every POST makes a new conversation.
    let second = group_conversation(&app, &alice, &gid).await;
    assert_ne!(second, cid);
}

async fn list_conversations_by_group(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let g1 = new_group(&app, &alice, "one", &[&bob]).await;
    let g2 = new_group(&app, &bob, "two", &[&alice]).await;
    let foreign = new_group(&app, &carol, "carol's", &[&bob]).await;
    let a = group_conversation(&app, &alice, &g1).await;
    let b = group_conversation(&app, &bob, &g1).await;
    let c = group_conversation(&app, &bob, &g2).await;
    let d = group_conversation(&app, &carol, &foreign).await;
    let direct = app.direct(&alice, &bob).await;

    // Newest activity first; a filter shows only that group's conversations.
    assert_eq!(
        conversation_ids(&app, &alice, &format!("&group_id={g1}")).await,
        ids(&[&b, &a])
    );
    assert_eq!(
        conversation_ids(&app, &bob, &format!("&group_id={g1}")).await,
        ids(&[&b, &a])
    );
    assert_eq!(
        conversation_ids(&app, &alice, &format!("&group_id={g2}")).await,
        ids(&[&c])
    );
    assert_eq!(
        conversation_ids(&app, &bob, &format!("&group_id={foreign}")).await,
        ids(&[&d])
    );
    // A message makes a conversation the most recently active (a second
    // later, so that no ordering depends on sub-second timestamps).
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    app.send_message(&bob, &a, "bump").await;
    assert_eq!(
        conversation_ids(&app, &alice, &format!("&group_id={g1}")).await,
        ids(&[&a, &b])
    );
    assert_eq!(
        conversation_ids(&app, &alice, "").await,
        ids(&[&a, &direct, &c, &b])
    );
    // Combined with another filter.
    app.put(
        &alice,
        &format!("/v1/conversations/{b}"),
        &[("is_muted", "true")],
    )
    .await
    .expect(200);
    assert_eq!(
        conversation_ids(&app, &alice, &format!("&group_id={g1}&muted=true")).await,
        ids(&[&b])
    );
    assert_eq!(
        conversation_ids(&app, &alice, &format!("&group_id={g1}&muted=false")).await,
        ids(&[&a])
    );

    // A group the caller is not in, or none at all: 404 naming group_id.
    app.get(&alice, &format!("/v1/conversations?group_id={foreign}"))
        .await
        .expect_error(404, "not_found", Some("group_id"));
    app.get(
        &alice,
        &format!("/v1/conversations?group_id={}", uuid::Uuid::now_v7()),
    )
    .await
    .expect_error(404, "not_found", Some("group_id"));
    // Paging within the filter.
    let r = app
        .get(&alice, &format!("/v1/conversations?group_id={g1}&limit=1"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&a]));
    assert_eq!(body["has_more"], true);
    let r = app
        .get(
            &alice,
            &format!("/v1/conversations?group_id={g1}&limit=1&starting_after={a}"),
        )
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&b]));
    assert_eq!(body["has_more"], false);
    // A cursor outside the filtered list.
    app.get(
        &alice,
        &format!("/v1/conversations?group_id={g1}&starting_after={c}"),
    )
    .await
    .expect_error(400, "parameter_invalid", Some("starting_after"));
}

async fn added_member_sees_everything_at_once(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &alice, "Team", &[&bob]).await;
    let c1 = group_conversation(&app, &alice, &gid).await;
    let c2 = group_conversation(&app, &bob, &gid).await;
    let m1 = id_of(&app.send_message(&alice, &c1, "before carol").await);
    let m2 = id_of(&app.send_message(&bob, &c1, "still before").await);
    let m3 = id_of(&app.send_message(&bob, &c2, "other conversation").await);

    // Not a member yet: nothing is visible.
    app.get(&carol, &format!("/v1/conversations/{c1}"))
        .await
        .expect_error(404, "not_found", None);
    app.get(&carol, &format!("/v1/messages/{m1}"))
        .await
        .expect_error(404, "not_found", None);
    app.get(&carol, &format!("/v1/messages?conversation_id={c1}"))
        .await
        .expect_error(404, "not_found", Some("conversation_id"));
    app.post(
        &carol,
        "/v1/messages",
        &[("conversation_id", &c1), ("message", "hi?")],
    )
    .await
    .expect_error(404, "not_found", Some("conversation_id"));
    assert!(conversation_ids(&app, &carol, "").await.is_empty());
    assert!(all_message_ids(&app, &carol).await.is_empty());

    add_member(&app, &alice, &gid, &carol).await;

    // At once: the group, all its conversations and all their messages.
    assert_eq!(group_ids(&app, &carol).await, ids(&[&gid]));
    assert_eq!(conversation_ids(&app, &carol, "").await, ids(&[&c2, &c1]));
    assert_eq!(
        conversation_ids(&app, &carol, &format!("&group_id={gid}")).await,
        ids(&[&c2, &c1])
    );
    assert_eq!(all_message_ids(&app, &carol).await, ids(&[&m3, &m2, &m1]));
    let r = app
        .get(&carol, &format!("/v1/messages?conversation_id={c1}"))
        .await;
    assert_eq!(data_ids(r.expect(200)), ids(&[&m2, &m1]));
    let r = app.get(&carol, &format!("/v1/messages/{m1}")).await;
    let m = r.expect(200);
    assert_eq!(m["message"], "before carol");
    assert_eq!(m["contact"]["id"], alice.id.as_str());
    let r = app.get(&carol, &format!("/v1/conversations/{c1}")).await;
    let conv = r.expect(200);
    assert_eq!(conv["group_id"], gid.as_str());
    assert!(conv["contact_id"].is_null());
    // A newcomer's own per-member state starts at the defaults.
    assert_eq!(conv["is_pinned"], false);
    assert_eq!(conv["is_muted"], false);
    assert!(conv["archived_at"].is_null());

    // And can take part: send, react, and the others see it.
    let m4 = id_of(&app.send_message(&carol, &c1, "hi all").await);
    let r = app
        .put(
            &carol,
            &format!("/v1/messages/{m2}"),
            &[("reactions[like][]", "carol")],
        )
        .await;
    assert_eq!(r.expect(200)["reactions"], json!([{"like": ["carol"]}]));
    for u in [&alice, &bob] {
        let r = app
            .get(u, &format!("/v1/messages?conversation_id={c1}"))
            .await;
        let body = r.expect(200);
        assert_eq!(data_ids(body), ids(&[&m4, &m2, &m1]));
        assert_eq!(body["data"][0]["contact"]["username"], "carol");
        assert_eq!(body["data"][1]["reactions"], json!([{"like": ["carol"]}]));
    }
}

async fn removed_member_loses_everything_at_once(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &alice, "Team", &[&bob, &carol]).await;
    let c = group_conversation(&app, &carol, &gid).await;
    let mb = id_of(&app.send_message(&bob, &c, "bob's words").await);
    let mc = id_of(&app.send_message(&carol, &c, "carol's words").await);
    let direct = app.direct(&alice, &bob).await;
    let md = id_of(&app.send_message(&alice, &direct, "direct").await);
    app.put(
        &bob,
        &format!("/v1/conversations/{c}"),
        &[("is_pinned", "true")],
    )
    .await
    .expect(200);

    let g = remove_member(&app, &alice, &gid, &bob).await;
    assert_eq!(member_ids(&g), ids_of(&[&alice, &carol]));

    // Every endpoint, at once.
    let conv = format!("/v1/conversations/{c}");
    app.get(&bob, &conv)
        .await
        .expect_error(404, "not_found", None);
    app.put(&bob, &conv, &[("is_muted", "true")])
        .await
        .expect_error(404, "not_found", None);
    app.put(&bob, &conv, &[("pinned_message_id", &mb)])
        .await
        .expect_error(404, "not_found", None);
    app.delete(&bob, &conv)
        .await
        .expect_error(404, "not_found", None);
    assert_eq!(conversation_ids(&app, &bob, "").await, ids(&[&direct]));
    assert!(conversation_ids(&app, &bob, "&pinned=true")
        .await
        .is_empty());
    app.get(&bob, &format!("/v1/conversations?group_id={gid}"))
        .await
        .expect_error(404, "not_found", Some("group_id"));
    app.post(&bob, "/v1/conversations", &[("group_id", &gid)])
        .await
        .expect_error(404, "not_found", Some("group_id"));
    app.get(&bob, &format!("/v1/messages?conversation_id={c}"))
        .await
        .expect_error(404, "not_found", Some("conversation_id"));
    assert_eq!(all_message_ids(&app, &bob).await, ids(&[&md]));
    app.post(
        &bob,
        "/v1/messages",
        &[("conversation_id", &c), ("message", "still here?")],
    )
    .await
    .expect_error(404, "not_found", Some("conversation_id"));
    for m in [&mb, &mc] {
        let path = format!("/v1/messages/{m}");
        app.get(&bob, &path)
            .await
            .expect_error(404, "not_found", None);
        app.put(&bob, &path, &[("reactions[like][]", "bob")])
            .await
            .expect_error(404, "not_found", None);
        app.delete(&bob, &format!("{path}/reactions/like"))
            .await
            .expect_error(404, "not_found", None);
    }
    // Not even his own message.
    let own = format!("/v1/messages/{mb}");
    app.put(&bob, &own, &[("message", "edited after leaving")])
        .await
        .expect_error(404, "not_found", None);
    app.delete(&bob, &own)
        .await
        .expect_error(404, "not_found", None);
    app.get(&bob, &format!("/v1/groups/{gid}"))
        .await
        .expect_error(404, "not_found", None);
    assert!(group_ids(&app, &bob).await.is_empty());

    // Nothing he tried had an effect; the others keep everything, including
    // what he wrote.
    let r = app
        .get(&carol, &format!("/v1/messages?conversation_id={c}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&mc, &mb]));
    assert_eq!(body["data"][1]["message"], "bob's words");
    assert!(body["data"][1]["updated_at"].is_null());
    assert_eq!(body["data"][1]["reactions"], json!([]));
    assert_eq!(body["data"][1]["contact"]["username"], "bob");
    let r = app.get(&alice, &conv).await;
    let seen = r.expect(200);
    assert!(seen["pinned_message_id"].is_null(), "{seen}");
    assert_eq!(seen["is_muted"], false);

    // Membership is live both ways: added back, he sees it all again.
    add_member(&app, &alice, &gid, &bob).await;
    let r = app.get(&bob, &conv).await;
    assert_eq!(r.expect(200)["group_id"], gid.as_str());
    let r = app
        .get(&bob, &format!("/v1/messages?conversation_id={c}"))
        .await;
    assert_eq!(data_ids(r.expect(200)), ids(&[&mc, &mb]));

    // Leaving by oneself works the same way.
    remove_member(&app, &bob, &gid, &bob).await;
    app.get(&bob, &conv)
        .await
        .expect_error(404, "not_found", None);
    app.get(&bob, &format!("/v1/messages/{mc}"))
        .await
        .expect_error(404, "not_found", None);
    assert_eq!(conversation_ids(&app, &bob, "").await, ids(&[&direct]));
    assert_eq!(all_message_ids(&app, &bob).await, ids(&[&md]));
}

/// Creating a group conversation gives no access of its own: a creator who
/// leaves the group, or is removed, loses the conversation like anyone else.
async fn removed_creator_loses_the_conversation(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &alice, "Team", &[&bob, &carol]).await;
    let by_bob = group_conversation(&app, &bob, &gid).await;
    let by_carol = group_conversation(&app, &carol, &gid).await;
    let mb = id_of(&app.send_message(&bob, &by_bob, "bob's").await);
    let mc = id_of(&app.send_message(&carol, &by_carol, "carol's").await);

    // Bob is removed by the owner, carol leaves by herself.
    remove_member(&app, &alice, &gid, &bob).await;
    remove_member(&app, &carol, &gid, &carol).await;

    let mut failures = Vec::new();
    for (user, conv, msg) in [(&bob, &by_bob, &mb), (&carol, &by_carol, &mc)] {
        let who = &user.username;
        let path = format!("/v1/conversations/{conv}");
        let mpath = format!("/v1/messages/{msg}");
        let listed = conversation_ids(&app, user, "").await;
        check!(
            failures,
            !listed.contains(conv),
            "{who}: list conversations still shows {conv}"
        );
        let listed = all_message_ids(&app, user).await;
        check!(
            failures,
            !listed.contains(msg),
            "{who}: list messages still shows {msg}"
        );
        let answers = [
            ("GET conversation", app.get(user, &path).await, None),
            (
                "PUT conversation",
                app.put(user, &path, &[("is_muted", "true")]).await,
                None,
            ),
            (
                "GET messages of it",
                app.get(user, &format!("/v1/messages?conversation_id={conv}"))
                    .await,
                Some("conversation_id"),
            ),
            (
                "send a message",
                app.post(
                    user,
                    "/v1/messages",
                    &[("conversation_id", conv.as_str()), ("message", "x")],
                )
                .await,
                Some("conversation_id"),
            ),
            ("GET own message", app.get(user, &mpath).await, None),
            (
                "edit own message",
                app.put(user, &mpath, &[("message", "y")]).await,
                None,
            ),
            ("DELETE own message", app.delete(user, &mpath).await, None),
            ("DELETE conversation", app.delete(user, &path).await, None),
        ];
        for (what, r, param) in answers {
            check!(
                failures,
                r.status.as_u16() == 404
                    && r.body["code"] == "not_found"
                    && r.body["param"] == json!(param),
                "{who}, creator, after leaving: {what}: want 404 param {param:?}, got {}: {}",
                r.status.as_u16(),
                r.raw
            );
        }
    }
    // Whatever they tried, the conversations and messages are all there for
    // the owner.
    for (conv, msg, text) in [(&by_bob, &mb, "bob's"), (&by_carol, &mc, "carol's")] {
        let r = app
            .get(&alice, &format!("/v1/messages?conversation_id={conv}"))
            .await;
        check!(
            failures,
            r.status.as_u16() == 200
                && data_ids(&r.body) == ids(&[msg])
                && r.body["data"][0]["message"] == text,
            "the owner should still see {conv} with {text:?}: {}",
            r.raw
        );
    }
    assert!(
        failures.is_empty(),
        "{} wrong answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

async fn membership_changes_seen_by_another_member(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &alice, "Team", &[&bob]).await;
    let c = group_conversation(&app, &bob, &gid).await;
    let m1 = id_of(&app.send_message(&bob, &c, "just us").await);

    // Mid-conversation, the owner adds carol; bob sees her in the group and
    // her message in the conversation he is reading.
    add_member(&app, &alice, &gid, &carol).await;
    let r = app.get(&bob, &format!("/v1/groups/{gid}")).await;
    assert_eq!(member_ids(r.expect(200)), ids_of(&[&alice, &bob, &carol]));
    let m2 = id_of(&app.send_message(&carol, &c, "hello, I'm new").await);
    let r = app
        .get(&bob, &format!("/v1/messages?conversation_id={c}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&m2, &m1]));
    assert_eq!(body["data"][0]["contact"]["id"], carol.id.as_str());
    assert_contact_shape(&body["data"][0]["contact"]);

    // Bob opening the conversation marks carol's message read.
    let r = app.get(&bob, &format!("/v1/conversations/{c}")).await;
    r.expect(200);
    let r = app.get(&alice, &format!("/v1/messages/{m2}")).await;
    assert!(r.expect(200)["read_at"].is_i64(), "{}", r.raw);

    // Carol is removed; bob sees that too, and her words stay.
    remove_member(&app, &alice, &gid, &carol).await;
    let r = app.get(&bob, &format!("/v1/groups/{gid}")).await;
    assert_eq!(member_ids(r.expect(200)), ids_of(&[&alice, &bob]));
    let m3 = id_of(&app.send_message(&bob, &c, "she left").await);
    let r = app
        .get(&bob, &format!("/v1/messages?conversation_id={c}"))
        .await;
    let body = r.expect(200);
    assert_eq!(data_ids(body), ids(&[&m3, &m2, &m1]));
    assert_eq!(body["data"][1]["message"], "hello, I'm new");
    app.get(&carol, &format!("/v1/messages/{m3}"))
        .await
        .expect_error(404, "not_found", None);
}

async fn per_member_state_is_independent(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &alice, "Team", &[&bob, &carol]).await;
    let c = group_conversation(&app, &alice, &gid).await;
    let path = format!("/v1/conversations/{c}");
    let m1 = id_of(&app.send_message(&alice, &c, "from alice").await);

    // Alice pins and mutes; bob archives; carol does nothing.
    let r = app
        .put(
            &alice,
            &path,
            &[("is_pinned", "true"), ("is_muted", "true")],
        )
        .await;
    let v = r.expect(200);
    assert_eq!(v["is_pinned"], true);
    assert_eq!(v["is_muted"], true);
    assert!(v["archived_at"].is_null());
    let at = now_secs();
    let r = app
        .put(&bob, &path, &[("archived_at", &at.to_string())])
        .await;
    let v = r.expect(200);
    assert_eq!(v["archived_at"], at);
    assert_eq!(v["is_pinned"], false);
    assert_eq!(v["is_muted"], false);

    let a = listed_conversation(&app, &alice, &c).await;
    assert_eq!(
        (&a["is_pinned"], &a["is_muted"]),
        (&json!(true), &json!(true))
    );
    assert!(a["archived_at"].is_null(), "{a}");
    let b = listed_conversation(&app, &bob, &c).await;
    assert_eq!(
        (&b["is_pinned"], &b["is_muted"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(b["archived_at"], at);
    let k = listed_conversation(&app, &carol, &c).await;
    assert_eq!(
        (&k["is_pinned"], &k["is_muted"]),
        (&json!(false), &json!(false))
    );
    assert!(k["archived_at"].is_null(), "{k}");

    // The list filters use the caller's own state.
    for (user, query, listed) in [
        (&alice, "&pinned=true", true),
        (&bob, "&pinned=true", false),
        (&carol, "&pinned=true", false),
        (&alice, "&muted=true", true),
        (&bob, "&muted=true", false),
        (&bob, "&muted=false", true),
        (&alice, "&archived=true", false),
        (&bob, "&archived=true", true),
        (&bob, "&archived=false", false),
        (&carol, "&archived=false", true),
    ] {
        let ids = conversation_ids(&app, user, query).await;
        assert_eq!(
            ids.contains(&c),
            listed,
            "{} {query}: {ids:?}",
            user.username
        );
    }

    // The pinned message is shared.
    let r = app.put(&carol, &path, &[("pinned_message_id", &m1)]).await;
    assert_eq!(r.expect(200)["pinned_message_id"], m1.as_str());
    for u in [&alice, &bob] {
        assert_eq!(
            listed_conversation(&app, u, &c).await["pinned_message_id"],
            m1.as_str()
        );
    }

    // Bob unarchives: only his state changes.
    let r = app.put(&bob, &path, &[("archived_at", "")]).await;
    assert!(r.expect(200)["archived_at"].is_null());
    let a = listed_conversation(&app, &alice, &c).await;
    assert_eq!(a["is_pinned"], true);

    // Opening: last_opened_at is per member; messages from others get read.
    assert!(listed_conversation(&app, &alice, &c).await["last_opened_at"].is_null());
    let r = app.get(&alice, &path).await;
    let opened = r.expect(200);
    let alice_opened = opened["last_opened_at"].as_i64().expect("alice opened");
    assert!((at - 1..=now_secs() + 1).contains(&alice_opened));
    // Her own message is not read by her opening.
    let r = app.get(&alice, &format!("/v1/messages/{m1}")).await;
    assert!(r.expect(200)["read_at"].is_null(), "{}", r.raw);
    assert!(listed_conversation(&app, &bob, &c).await["last_opened_at"].is_null());
    assert!(listed_conversation(&app, &carol, &c).await["last_opened_at"].is_null());

    let r = app.get(&bob, &path).await;
    let v = r.expect(200);
    assert!(v["last_opened_at"].is_i64(), "{v}");
    // Bob's view still shows his own pin/mute state, not alice's.
    assert_eq!(v["is_pinned"], false);
    assert_eq!(v["is_muted"], false);
    let r = app.get(&carol, &format!("/v1/messages/{m1}")).await;
    let read_at = r.expect(200)["read_at"]
        .as_i64()
        .expect("read after bob opened");
    assert!(read_at >= alice_opened);
    assert!(listed_conversation(&app, &carol, &c).await["last_opened_at"].is_null());
    assert_eq!(
        listed_conversation(&app, &alice, &c).await["last_opened_at"],
        alice_opened
    );

    // Carol writes; nobody has opened since, so it is unread; bob's opening
    // reads it, carol's own opening would not.
    let m2 = id_of(&app.send_message(&carol, &c, "from carol").await);
    app.get(&carol, &path).await.expect(200);
    let r = app.get(&carol, &format!("/v1/messages/{m2}")).await;
    assert!(r.expect(200)["read_at"].is_null(), "{}", r.raw);
    app.get(&bob, &path).await.expect(200);
    let r = app.get(&carol, &format!("/v1/messages/{m2}")).await;
    assert!(r.expect(200)["read_at"].is_i64(), "{}", r.raw);
}

async fn delete_group_conversation_rights(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let gid = new_group(&app, &alice, "Team", &[&bob, &carol]).await;

    // Bob's conversation: carol (a member) may not delete it, dave (an
    // outsider) does not see it, alice (owner) may.
    let by_bob = group_conversation(&app, &bob, &gid).await;
    let m = id_of(&app.send_message(&carol, &by_bob, "mine").await);
    app.delete(&carol, &format!("/v1/conversations/{by_bob}"))
        .await
        .expect_error(403, "forbidden", None);
    app.delete(&dave, &format!("/v1/conversations/{by_bob}"))
        .await
        .expect_error(404, "not_found", None);
    let r = app.get(&carol, &format!("/v1/messages/{m}")).await;
    assert_eq!(r.expect(200)["message"], "mine");
    let r = app
        .delete(&alice, &format!("/v1/conversations/{by_bob}"))
        .await;
    r.expect(204);
    assert!(r.raw.is_empty(), "{}", r.raw);
    for u in [&alice, &bob, &carol] {
        app.get(u, &format!("/v1/conversations/{by_bob}"))
            .await
            .expect_error(404, "not_found", None);
        app.get(u, &format!("/v1/messages/{m}"))
            .await
            .expect_error(404, "not_found", None);
    }
    app.delete(&alice, &format!("/v1/conversations/{by_bob}"))
        .await
        .expect_error(404, "not_found", None);

    // Its creator may delete it.
    let by_bob = group_conversation(&app, &bob, &gid).await;
    app.delete(&bob, &format!("/v1/conversations/{by_bob}"))
        .await
        .expect(204);
    app.get(&alice, &format!("/v1/conversations/{by_bob}"))
        .await
        .expect_error(404, "not_found", None);

    // The owner's own conversation: members may not.
    let by_alice = group_conversation(&app, &alice, &gid).await;
    for u in [&bob, &carol] {
        app.delete(u, &format!("/v1/conversations/{by_alice}"))
            .await
            .expect_error(403, "forbidden", None);
    }
    assert_eq!(conversation_ids(&app, &bob, "").await, ids(&[&by_alice]));
    app.delete(&alice, &format!("/v1/conversations/{by_alice}"))
        .await
        .expect(204);
    assert!(conversation_ids(&app, &bob, "").await.is_empty());
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    create_group_returns_the_group,
    create_group_validates,
    list_groups_is_paged,
    owner_updates_the_group,
    members_may_only_leave,
    last_owner_cannot_leave,
    delete_group_takes_its_conversations,
    group_conversation_object,
    list_conversations_by_group,
    added_member_sees_everything_at_once,
    removed_member_loses_everything_at_once,
    removed_creator_loses_the_conversation,
    membership_changes_seen_by_another_member,
    per_member_state_is_independent,
    delete_group_conversation_rights,
);
