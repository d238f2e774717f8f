//! Mentions (`mentions[]`): a message shows whom it mentions; each member's
//! `unread_mention_count` counts the unread messages that mention them
//! (never one's own), opening resets it, deleting an unread one takes it
//! back, and an edit of the list moves the counts of the changed members
//! only, also in a group of 200. Bad lists are refused without writing.

use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::{counts, open, send, send_mentioning, snapshot, trio, try_send, try_send_json};
use crate::support::{group_conversation, id_of, new_group, UNKNOWN_ID};

/// The ids a message mentions, sorted.
fn mentions_of(m: &Value) -> Vec<String> {
    let mut ids: Vec<String> = m["mentions"]
        .as_array()
        .unwrap_or_else(|| panic!("mentions is not an array: {m}"))
        .iter()
        .map(|v| v.as_str().expect("an id").to_owned())
        .collect();
    ids.sort();
    ids
}

/// The ids of `users`, sorted.
fn ids_of(users: &[&User]) -> Vec<String> {
    crate::support::ids_of(users)
}

/// `by` replaces the mentions of message `m` with `who` (JSON); the answer.
async fn edit_mentions(
    app: &TestApp,
    by: &User,
    m: &str,
    who: &[&User],
) -> confab_tests::http::Resp {
    let ids: Vec<&str> = who.iter().map(|u| u.id.as_str()).collect();
    app.json(
        Method::PUT,
        by,
        &format!("/v1/messages/{m}"),
        &json!({ "mentions": ids }),
    )
    .await
}

async fn mentions_count_for_the_mentioned_until_they_open(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;

    let m1 = send_mentioning(&app, &alice, &conv, "hey @bob", &[&bob]).await;
    assert_eq!(m1["mentions"], json!([bob.id]), "{m1}");
    assert_eq!(counts(&app, &bob, &conv).await, (1, 1));
    assert_eq!(counts(&app, &carol, &conv).await, (1, 0));
    assert_eq!(counts(&app, &alice, &conv).await, (0, 0));

    // In JSON, with the sender mentioning herself: that never counts.
    let m2 = try_send_json(
        &app,
        &alice,
        &json!({"conversation_id": conv, "message": "me and carol", "mentions": [alice.id, carol.id]}),
    )
    .await;
    let m2 = m2.expect(201).clone();
    assert_eq!(mentions_of(&m2), ids_of(&[&alice, &carol]));
    assert_eq!(counts(&app, &alice, &conv).await, (0, 0));
    assert_eq!(counts(&app, &carol, &conv).await, (2, 1));
    assert_eq!(counts(&app, &bob, &conv).await, (2, 1));

    // Bob mentions himself alone: no one's count moves but unread ones.
    send_mentioning(&app, &bob, &conv, "note to self", &[&bob]).await;
    assert_eq!(counts(&app, &bob, &conv).await, (2, 1));
    assert_eq!(counts(&app, &alice, &conv).await, (1, 0));
    assert_eq!(counts(&app, &carol, &conv).await, (3, 1));

    // Carol mentions both.
    let m4 = send_mentioning(&app, &carol, &conv, "you two", &[&alice, &bob]).await;
    assert_eq!(mentions_of(&m4), ids_of(&[&alice, &bob]));
    let got = super::message(&app, &bob, &id_of(&m4)).await;
    assert_eq!(mentions_of(&got), ids_of(&[&alice, &bob]));
    assert_eq!(counts(&app, &alice, &conv).await, (2, 1));
    assert_eq!(counts(&app, &bob, &conv).await, (3, 2));

    // Opening resets the opener's, and only theirs.
    let opened = open(&app, &bob, &conv).await;
    assert_eq!(opened["unread_mention_count"], 0, "{opened}");
    assert_eq!(opened["unread_count"], 0, "{opened}");
    assert_eq!(counts(&app, &bob, &conv).await, (0, 0));
    assert_eq!(counts(&app, &alice, &conv).await, (2, 1));
    assert_eq!(counts(&app, &carol, &conv).await, (3, 1));
    // A mention after opening counts again.
    send_mentioning(&app, &alice, &conv, "again @bob", &[&bob]).await;
    assert_eq!(counts(&app, &bob, &conv).await, (1, 1));
    // A new conversation starts at 0.
    let r = app
        .post(&alice, "/v1/conversations", &[("contact_id", &bob.id)])
        .await;
    let direct = r.expect(201).clone();
    assert_eq!(direct["unread_mention_count"], 0);
    // In a direct conversation its two members may be mentioned, no one
    // else.
    let direct = id_of(&direct);
    send_mentioning(&app, &alice, &direct, "direct @bob", &[&bob]).await;
    assert_eq!(counts(&app, &bob, &direct).await, (1, 1));
    try_send(
        &app,
        &alice,
        &direct,
        "direct @carol",
        &[("mentions[]", carol.id.as_str())],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("mentions"));
    assert_eq!(counts(&app, &bob, &direct).await, (1, 1));
    assert_eq!(counts(&app, &bob, &conv).await, (1, 1));
}

async fn a_bad_mention_list_is_refused_and_writes_nothing(app: TestApp) {
    let alice = app.user("alice").await;
    let dave = app.user("dave").await;
    let mut many: Vec<User> = Vec::new();
    for i in 0..51 {
        many.push(app.user(&format!("member{i}")).await);
    }
    let refs: Vec<&User> = many.iter().collect();
    let group = new_group(&app, &alice, "Many", &refs).await;
    let conv = group_conversation(&app, &alice, &group).await;
    send(&app, &alice, &conv, "hello all", &[]).await;
    let (m0, m1) = (&many[0], &many[1]);

    let before = snapshot(&app, &conv, &[&alice, m0, m1, &many[50]]).await;
    let form_cases: Vec<Vec<&str>> = vec![
        vec![dave.id.as_str()],
        vec![m0.id.as_str(), dave.id.as_str()],
        vec![UNKNOWN_ID],
        vec!["nope"],
        vec![m0.id.as_str(), m0.id.as_str()],
        vec![alice.id.as_str(), m1.id.as_str(), alice.id.as_str()],
        // 51 members, each once: one too many.
        many.iter().map(|u| u.id.as_str()).collect(),
    ];
    for ids in &form_cases {
        let pairs: Vec<(&str, &str)> = ids.iter().map(|id| ("mentions[]", *id)).collect();
        let r = try_send(&app, &alice, &conv, "refused mention", &pairs).await;
        assert_eq!(r.status.as_u16(), 400, "{} ids: {}", ids.len(), r.raw);
        r.expect_error(400, "parameter_invalid", Some("mentions"));
    }
    let all: Vec<&str> = many.iter().map(|u| u.id.as_str()).collect();
    for mentions in [
        json!([dave.id]),
        json!([m0.id, m0.id]),
        json!(all),
        json!(m0.id),
        json!([7]),
    ] {
        let body =
            json!({"conversation_id": conv, "message": "refused mention", "mentions": mentions});
        let r = try_send_json(&app, m1, &body).await;
        assert_eq!(r.status.as_u16(), 400, "{body}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some("mentions"));
    }
    // A non-member sending: 404 on the conversation.
    try_send(
        &app,
        &dave,
        &conv,
        "refused mention",
        &[("mentions[]", alice.id.as_str())],
    )
    .await
    .expect_error(404, "not_found", Some("conversation_id"));
    assert_eq!(
        snapshot(&app, &conv, &[&alice, m0, m1, &many[50]]).await,
        before
    );

    // Fifty is the most: accepted, and counted for each of them.
    let fifty: Vec<&User> = many[..50].iter().collect();
    let m = send_mentioning(&app, &alice, &conv, "fifty of you", &fifty).await;
    assert_eq!(mentions_of(&m), ids_of(&fifty));
    assert_eq!(counts(&app, m0, &conv).await, (2, 1));
    assert_eq!(counts(&app, &many[49], &conv).await, (2, 1));
    assert_eq!(counts(&app, &many[50], &conv).await, (2, 0));
}

async fn deleting_an_unread_mention_takes_it_back(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let a1 = id_of(&send_mentioning(&app, &alice, &conv, "one @bob", &[&bob]).await);
    let a2 = id_of(&send_mentioning(&app, &alice, &conv, "two @bob", &[&bob, &carol]).await);
    let own = id_of(&send_mentioning(&app, &alice, &conv, "me", &[&alice]).await);
    assert_eq!(counts(&app, &bob, &conv).await, (3, 2));
    assert_eq!(counts(&app, &carol, &conv).await, (3, 1));

    app.delete(&alice, &format!("/v1/messages/{a1}"))
        .await
        .expect(204);
    assert_eq!(counts(&app, &bob, &conv).await, (2, 1));
    assert_eq!(counts(&app, &carol, &conv).await, (2, 1));
    app.delete(&alice, &format!("/v1/messages/{own}"))
        .await
        .expect(204);
    assert_eq!(counts(&app, &alice, &conv).await, (0, 0));
    assert_eq!(counts(&app, &bob, &conv).await, (1, 1));

    // Once read, deleting it takes nothing more back.
    open(&app, &bob, &conv).await;
    assert_eq!(counts(&app, &bob, &conv).await, (0, 0));
    app.delete(&alice, &format!("/v1/messages/{a2}"))
        .await
        .expect(204);
    assert_eq!(counts(&app, &bob, &conv).await, (0, 0));
    assert_eq!(counts(&app, &carol, &conv).await, (0, 0));
    // And a new mention counts 1, not less.
    send_mentioning(&app, &alice, &conv, "three @bob", &[&bob]).await;
    assert_eq!(counts(&app, &bob, &conv).await, (1, 1));
}

async fn an_edit_of_the_mentions_counts_the_changed_members_only(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let erin = app.user("erin").await;
    let group = new_group(&app, &alice, "Four", &[&bob, &carol, &dave]).await;
    let conv4 = group_conversation(&app, &alice, &group).await;
    let m = id_of(&send_mentioning(&app, &alice, &conv4, "hi @bob", &[&bob]).await);
    let path = format!("/v1/messages/{m}");
    assert_eq!(counts(&app, &bob, &conv4).await, (1, 1));
    assert_eq!(counts(&app, &carol, &conv4).await, (1, 0));
    assert_eq!(counts(&app, &dave, &conv4).await, (1, 0));

    // Adding carol (form): carol +1, bob stays at 1.
    let r = app
        .put(
            &alice,
            &path,
            &[
                ("mentions[]", bob.id.as_str()),
                ("mentions[]", carol.id.as_str()),
            ],
        )
        .await;
    let edited = r.expect(200).clone();
    assert_eq!(mentions_of(&edited), ids_of(&[&bob, &carol]));
    // Only the text moves edited_at.
    assert!(edited["edited_at"].is_null(), "{edited}");
    assert_eq!(edited["message"], "hi @bob");
    assert_eq!(counts(&app, &bob, &conv4).await, (1, 1));
    assert_eq!(counts(&app, &carol, &conv4).await, (1, 1));
    assert_eq!(counts(&app, &dave, &conv4).await, (1, 0));

    // Dropping bob: bob -1.
    let r = edit_mentions(&app, &alice, &m, &[&carol]).await;
    assert_eq!(mentions_of(r.expect(200)), ids_of(&[&carol]));
    assert_eq!(counts(&app, &bob, &conv4).await, (1, 0));
    assert_eq!(counts(&app, &carol, &conv4).await, (1, 1));

    // Dave has read it: mentioning him now does not count.
    open(&app, &dave, &conv4).await;
    let r = edit_mentions(&app, &alice, &m, &[&carol, &dave]).await;
    assert_eq!(mentions_of(r.expect(200)), ids_of(&[&carol, &dave]));
    assert_eq!(counts(&app, &dave, &conv4).await, (0, 0));
    assert_eq!(counts(&app, &carol, &conv4).await, (1, 1));
    // Nor does dropping him take anything from 0.
    let r = edit_mentions(&app, &alice, &m, &[&carol]).await;
    r.expect(200);
    assert_eq!(counts(&app, &dave, &conv4).await, (0, 0));

    // Refused: another member's edit (403), a non-member, a repeat (400
    // on mentions); nothing changes.
    let before = super::snapshot(&app, &conv4, &[&alice, &bob, &carol, &dave]).await;
    let r = edit_mentions(&app, &bob, &m, &[&bob]).await;
    r.expect(403);
    assert_eq!(r.body["code"], "forbidden", "{}", r.raw);
    let r = app
        .put(&carol, &path, &[("mentions[]", carol.id.as_str())])
        .await;
    r.expect(403);
    assert_eq!(r.body["code"], "forbidden", "{}", r.raw);
    edit_mentions(&app, &alice, &m, &[&carol, &erin])
        .await
        .expect_error(400, "parameter_invalid", Some("mentions"));
    edit_mentions(&app, &alice, &m, &[&bob, &bob])
        .await
        .expect_error(400, "parameter_invalid", Some("mentions"));
    app.put(&alice, &path, &[("mentions[]", "nope")])
        .await
        .expect_error(400, "parameter_invalid", Some("mentions"));
    assert_eq!(
        super::snapshot(&app, &conv4, &[&alice, &bob, &carol, &dave]).await,
        before
    );

    // Text and mentions at once: both change; bob counts again.
    let r = app
        .put(
            &alice,
            &path,
            &[
                ("message", "hi @bob, again"),
                ("mentions[]", bob.id.as_str()),
            ],
        )
        .await;
    let both = r.expect(200).clone();
    assert_eq!(both["message"], "hi @bob, again");
    assert_eq!(mentions_of(&both), ids_of(&[&bob]));
    assert!(both["edited_at"].is_i64(), "{both}");
    assert_eq!(counts(&app, &bob, &conv4).await, (1, 1));
    assert_eq!(counts(&app, &carol, &conv4).await, (1, 0));

    // An empty list mentions no one.
    let r = edit_mentions(&app, &alice, &m, &[]).await;
    assert_eq!(r.expect(200)["mentions"], json!([]));
    assert_eq!(counts(&app, &bob, &conv4).await, (1, 0));
    assert_eq!(counts(&app, &carol, &conv4).await, (1, 0));
}

async fn in_a_group_of_200_only_the_mentioned_count_moves(app: TestApp) {
    let owner = app.user("owner").await;
    let mut members: Vec<User> = Vec::new();
    for i in 0..199 {
        members.push(app.user(&format!("m{i}")).await);
    }
    let refs: Vec<&User> = members.iter().collect();
    let group = new_group(&app, &owner, "Two hundred", &refs).await;
    let conv = group_conversation(&app, &owner, &group).await;

    let m = id_of(&send_mentioning(&app, &owner, &conv, "hey m117", &[&members[117]]).await);
    for (i, u) in members.iter().enumerate() {
        let want = if i == 117 { (1, 1) } else { (1, 0) };
        assert_eq!(counts(&app, u, &conv).await, want, "{}", u.username);
    }
    assert_eq!(counts(&app, &owner, &conv).await, (0, 0));

    // An edit that adds m5: m5 alone moves.
    let r = edit_mentions(&app, &owner, &m, &[&members[117], &members[5]]).await;
    r.expect(200);
    for (i, u) in members.iter().enumerate() {
        let want = if i == 117 || i == 5 { (1, 1) } else { (1, 0) };
        assert_eq!(counts(&app, u, &conv).await, want, "{}", u.username);
    }
    // m117 opens: m117 alone resets.
    open(&app, &members[117], &conv).await;
    assert_eq!(counts(&app, &members[117], &conv).await, (0, 0));
    assert_eq!(counts(&app, &members[5], &conv).await, (1, 1));
    assert_eq!(counts(&app, &members[6], &conv).await, (1, 0));
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    mentions_count_for_the_mentioned_until_they_open,
    a_bad_mention_list_is_refused_and_writes_nothing,
    deleting_an_unread_mention_takes_it_back,
    an_edit_of_the_mentions_counts_the_changed_members_only,
    in_a_group_of_200_only_the_mentioned_count_moves,
);
