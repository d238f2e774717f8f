//! The group object: create, validation and paging of the list.

use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::json;

use crate::contacts::assert_contact_shape_seen_by;
use crate::support::{data_ids, id_of, ids, ids_of, keys, member_ids, new_group, now_secs, Case};

use super::group_ids;

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
    // phone numbers are private: docs/api.md "Blocks and reports" (the creator sees only hers)
    for c in group["contacts"].as_array().expect("contacts") {
        assert_contact_shape_seen_by(c, &alice.id);
    }
    let listed = |id: &str| {
        group["contacts"]
            .as_array()
            .expect("contacts")
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id} listed: {group}"))
            .clone()
    };
    let bob_in = listed(&bob.id);
    assert_eq!(bob_in["username"], "bob");
    // phone numbers are private: docs/api.md "Blocks and reports"
    assert!(bob_in["phone_number"].is_null(), "{bob_in}");
    assert_eq!(bob_in["avatar_url"], "");
    assert_eq!(listed(&alice.id)["phone_number"], "+15550100");

    // Every member gets the same group, but for the phone numbers (each
    // sees only their own); an outsider gets 404.
    for u in [&alice, &bob, &carol] {
        let r = app.get(u, &format!("/v1/groups/{gid}")).await;
        let seen = r.expect(200);
        assert_eq!(seen["id"], gid.as_str());
        assert_eq!(seen["name"], "Team Rocket");
        assert_eq!(seen["description"], "We blast off");
        assert_eq!(seen["avatar_url"], "https://img.example/team.png");
        assert_eq!(seen["created_at"], group["created_at"]);
        assert_eq!(member_ids(seen), ids_of(&[&alice, &bob, &carol]));
        // phone numbers are private: docs/api.md "Blocks and reports"
        for c in seen["contacts"].as_array().expect("contacts") {
            assert_contact_shape_seen_by(c, &u.id);
        }
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

confab_tests::on_both_stores!(
    crate::support::on_server;
    create_group_returns_the_group,
    create_group_validates,
    list_groups_is_paged,
);
