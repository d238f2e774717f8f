//! Group conversations: the object, the list by group, per-member state
//! and who may delete one.

use confab_tests::http::TestApp;
use serde_json::json;

use crate::support::{
    data_ids, group_conversation, id_of, ids, listed_conversation, new_group, now_secs,
};

use super::conversation_ids;

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
    group_conversation_object,
    list_conversations_by_group,
    per_member_state_is_independent,
    delete_group_conversation_rights,
);
