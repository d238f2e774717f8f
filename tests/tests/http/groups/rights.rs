//! Updates and rights: the owner updates and deletes, members may only
//! leave, the last owner cannot.

use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::json;

use crate::contacts::assert_contact_shape_seen_by;
use crate::support::{group_conversation, id_of, ids, ids_of, member_ids, new_group, Case};

use super::{all_message_ids, conversation_ids, group_ids};

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
    // phone numbers are private: docs/api.md "Blocks and reports" (the owner sees only hers)
    for c in g["contacts"].as_array().expect("contacts") {
        assert_contact_shape_seen_by(c, &alice.id);
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

confab_tests::on_both_stores!(
    crate::support::on_server;
    owner_updates_the_group,
    members_may_only_leave,
    last_owner_cannot_leave,
    delete_group_takes_its_conversations,
);
