//! `unread_count` on the conversation object (docs/api.md "Unread counts").

use confab_tests::http::TestApp;

async fn unread_count_is_shown_and_opening_clears_it(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    app.send_message(&bob, &c, "one").await;
    app.send_message(&bob, &c, "two").await;
    app.send_message(&alice, &c, "mine").await;

    let list = app.get(&alice, "/v1/conversations").await;
    assert_eq!(list.expect(200)["data"][0]["unread_count"], 2);
    let list = app.get(&bob, "/v1/conversations").await;
    assert_eq!(list.expect(200)["data"][0]["unread_count"], 1);

    let opened = app.get(&alice, &format!("/v1/conversations/{c}")).await;
    assert_eq!(opened.expect(200)["unread_count"], 0);
    let list = app.get(&alice, "/v1/conversations").await;
    assert_eq!(list.expect(200)["data"][0]["unread_count"], 0);
    // A new conversation starts at 0.
    let carol = app.user("carol").await;
    let r = app
        .post(&alice, "/v1/conversations", &[("contact_id", &carol.id)])
        .await;
    assert_eq!(r.expect(201)["unread_count"], 0);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    unread_count_is_shown_and_opening_clears_it,
);
