//! Live membership: added members see everything at once, removed ones
//! (creators too) lose it at once, and others see the changes.

use confab_tests::http::TestApp;
use serde_json::json;

use crate::contacts::assert_contact_shape_seen_by;
use crate::support::{
    check, data_ids, group_conversation, id_of, ids, ids_of, member_ids, new_group,
};

use super::{add_member, all_message_ids, conversation_ids, group_ids, remove_member};

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
    // phone numbers are private: docs/api.md "Blocks and reports"
    assert_contact_shape_seen_by(&body["data"][0]["contact"], &bob.id);
    assert!(
        body["data"][0]["contact"]["phone_number"].is_null(),
        "{body}"
    );

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

confab_tests::on_both_stores!(
    crate::support::on_server;
    added_member_sees_everything_at_once,
    removed_member_loses_everything_at_once,
    removed_creator_loses_the_conversation,
    membership_changes_seen_by_another_member,
);
