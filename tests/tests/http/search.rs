//! Search (docs/api.md "Search messages") over real HTTP on both stores: substrings in
//! any script, ignoring case, every character literal; only the caller's
//! conversations as they are now; edits and deletions at once; filters and
//! paging; and a clear 400 for every bad input. The store contract suite
//! (`store_contract/search.rs`) holds the two steps to one answer.

use confab_tests::http::{Resp, TestApp, User};

use crate::support::{
    data_ids, group_conversation, id_of, new_group, now_secs, pair, Case, UNKNOWN_ID,
};

/// `GET /v1/messages/search` with these query pairs, percent-encoded.
async fn search(app: &TestApp, user: &User, pairs: &[(&str, &str)]) -> Resp {
    let url = reqwest::Url::parse_with_params("http://x/v1/messages/search", pairs).expect("url");
    let query = url.query().unwrap_or_default();
    app.get(user, &format!("/v1/messages/search?{query}")).await
}

/// The ids a search for `query` finds, in order, and `has_more`.
async fn found(app: &TestApp, user: &User, pairs: &[(&str, &str)]) -> (Vec<String>, bool) {
    let r = search(app, user, pairs).await;
    let body = r.expect(200);
    (
        data_ids(body),
        body["has_more"].as_bool().expect("has_more"),
    )
}

async fn ids(app: &TestApp, user: &User, query: &str) -> Vec<String> {
    found(app, user, &[("query", query)]).await.0
}

async fn send(app: &TestApp, from: &User, conv: &str, text: &str) -> String {
    let r = app
        .post(
            from,
            "/v1/messages",
            &[("conversation_id", conv), ("message", text)],
        )
        .await;
    id_of(r.expect(201))
}

async fn finds_substrings_in_any_script_ignoring_case(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let hello = send(&app, &alice, &conv, "Hello World").await;
    let shout = send(&app, &bob, &conv, "HELLO there, worldwide").await;
    let tokyo = send(&app, &alice, &conv, "私は東京都に住んでいます").await;
    let anger = send(&app, &bob, &conv, "Ärger im Büro").await;
    let _other = send(&app, &alice, &conv, "nothing to see").await;

    // Newest first, both members alike.
    assert_eq!(
        ids(&app, &alice, "hello").await,
        [shout.as_str(), hello.as_str()]
    );
    assert_eq!(
        ids(&app, &bob, "HeLLo").await,
        [shout.as_str(), hello.as_str()]
    );
    // Every term, anywhere in the text, in any order.
    assert_eq!(
        ids(&app, &alice, "world hello").await,
        [shout.as_str(), hello.as_str()]
    );
    assert_eq!(ids(&app, &alice, "orldwid hello").await, [shout.as_str()]);
    assert_eq!(
        ids(&app, &alice, "hello nothing").await,
        Vec::<String>::new()
    );
    // CJK has no spaces between words: any part of the text is found.
    assert_eq!(ids(&app, &alice, "東京都").await, [tokyo.as_str()]);
    assert_eq!(ids(&app, &alice, "住んで").await, [tokyo]);
    // Case and composition: "ä" precomposed or as "a" + combining mark.
    assert_eq!(ids(&app, &alice, "ÄRGER").await, [anger.as_str()]);
    assert_eq!(ids(&app, &alice, "a\u{308}rger büro").await, [anger]);

    // The messages come whole, as in every list.
    let r = search(&app, &alice, &[("query", "hello world")]).await;
    let body = r.expect(200);
    assert_eq!(
        body["data"][0]["message"], "HELLO there, worldwide",
        "{}",
        r.raw
    );
    assert_eq!(
        body["data"][0]["contact"]["id"],
        bob.id.as_str(),
        "{}",
        r.raw
    );
    assert_eq!(
        body["data"][0]["conversation_id"],
        conv.as_str(),
        "{}",
        r.raw
    );
}

async fn every_character_is_literal(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let percent = send(&app, &alice, &conv, "we are 100% done").await;
    let _digits = send(&app, &alice, &conv, "we are 1000 done").await;
    let snake = send(&app, &alice, &conv, "call snake_case_name()").await;
    let _camel = send(&app, &alice, &conv, "call snakeXcase").await;
    let slash = send(&app, &alice, &conv, r"a back\slash path").await;
    let quoted = send(&app, &alice, &conv, r#"she said "it's fine" -- OR NOT"#).await;
    let dotted = send(&app, &alice, &conv, "version a.b.c released").await;

    // `%` and `_` match themselves only, never any character (a term of
    // punctuation alone goes beside a word: alone it is refused).
    assert_eq!(ids(&app, &alice, "100%").await, [percent.as_str()]);
    assert_eq!(ids(&app, &alice, "e_c call").await, [snake.as_str()]);
    assert_eq!(ids(&app, &alice, "%%% are").await, Vec::<String>::new());
    assert_eq!(ids(&app, &alice, "___ call").await, Vec::<String>::new());
    assert_eq!(ids(&app, &alice, r"k\s path").await, [slash]);
    assert_eq!(ids(&app, &alice, r"\\\ path").await, Vec::<String>::new());
    // Quotes and query words of SQL or FTS5 are text.
    assert_eq!(ids(&app, &alice, r#""it's said"#).await, [quoted.as_str()]);
    assert_eq!(ids(&app, &alice, "fine\"").await, [quoted.as_str()]);
    assert_eq!(ids(&app, &alice, "'1'='1' she").await, Vec::<String>::new());
    assert_eq!(ids(&app, &alice, "\"AND\"").await, Vec::<String>::new());
    assert_eq!(ids(&app, &alice, "NOT").await, [quoted.as_str()]);
    // Terms with no three letters or digits in a row, beside one with.
    assert_eq!(ids(&app, &alice, "a.b.c version").await, [dotted.as_str()]);
    assert_eq!(ids(&app, &alice, "released a.b.c").await, [dotted]);
    assert_eq!(ids(&app, &alice, "e() snake").await, [snake]);
}

/// Where a query is refused, the same query counts as a 400 on `query`:
/// `ids` of a refused query would fail, so these go through `search`.
async fn bad_input_is_a_clear_400(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    send(&app, &alice, &conv, "something to find").await;
    let too_long = "x".repeat(201);
    let cases: Vec<Case> = vec![
        (vec![], "parameter_missing", "query"),
        (vec![("query", "")], "parameter_invalid", "query"),
        (vec![("query", "   ")], "parameter_invalid", "query"),
        (vec![("query", "ab")], "parameter_invalid", "query"),
        (
            vec![("query", "something to")],
            "parameter_invalid",
            "query",
        ),
        (vec![("query", "--")], "parameter_invalid", "query"),
        // No term with three letters or digits in a row.
        (vec![("query", "...")], "parameter_invalid", "query"),
        (vec![("query", "a.b.c e()")], "parameter_invalid", "query"),
        (vec![("query", &too_long)], "parameter_invalid", "query"),
        (vec![("query", "abc\0def")], "parameter_invalid", "query"),
        (
            vec![("query", "something"), ("conversation_id", "nope")],
            "parameter_invalid",
            "conversation_id",
        ),
        (
            vec![("query", "something"), ("sender_id", "1234")],
            "parameter_invalid",
            "sender_id",
        ),
        (
            vec![("query", "something"), ("starting_after", "x")],
            "parameter_invalid",
            "starting_after",
        ),
        (
            vec![("query", "something"), ("created_after", "yesterday")],
            "parameter_invalid",
            "created_after",
        ),
        (
            vec![("query", "something"), ("created_before", "1.5")],
            "parameter_invalid",
            "created_before",
        ),
        (
            vec![("query", "something"), ("limit", "0")],
            "parameter_invalid",
            "limit",
        ),
        (
            vec![("query", "something"), ("ending_before", UNKNOWN_ID)],
            "parameter_unknown",
            "ending_before",
        ),
        (
            vec![("query", "something"), ("q", "x")],
            "parameter_unknown",
            "q",
        ),
        // A cursor that is not a message of the caller's.
        (
            vec![("query", "something"), ("starting_after", UNKNOWN_ID)],
            "parameter_invalid",
            "starting_after",
        ),
    ];
    for (pairs, code, param) in cases {
        search(&app, &alice, &pairs)
            .await
            .expect_error(400, code, Some(param));
    }
    // Exactly 200 characters is fine.
    let longest = "y".repeat(200);
    assert_eq!(ids(&app, &alice, &longest).await, Vec::<String>::new());
    // A query that is not UTF-8 names its parameter.
    app.get(&alice, "/v1/messages/search?query=%FF%FEabc")
        .await
        .expect_error(400, "parameter_invalid", Some("query"));
    // Someone else's conversation, or none: 404 on `conversation_id`.
    let carol = app.user("carol").await;
    for (who, c) in [(&carol, conv.as_str()), (&bob, UNKNOWN_ID)] {
        search(&app, who, &[("query", "something"), ("conversation_id", c)])
            .await
            .expect_error(404, "not_found", Some("conversation_id"));
    }
    // No token: 401.
    let r = reqwest::get(format!(
        "{}/v1/messages/search?query=something",
        app.base_url
    ))
    .await
    .expect("request");
    assert_eq!(r.status().as_u16(), 401);
}

async fn only_the_callers_conversations_as_they_are_now(app: TestApp) {
    let (alice, bob, direct) = pair(&app).await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let group = new_group(&app, &alice, "Team", &[&bob, &carol]).await;
    let in_group = group_conversation(&app, &alice, &group).await;
    let private = send(&app, &alice, &direct, "secret plans").await;
    let shared = send(&app, &carol, &in_group, "secret party").await;
    let other = app.direct(&carol, &dave).await;
    let theirs = send(&app, &dave, &other, "secret elsewhere").await;

    assert_eq!(
        ids(&app, &alice, "secret").await,
        [shared.as_str(), private.as_str()]
    );
    assert_eq!(
        ids(&app, &bob, "secret").await,
        [shared.as_str(), private.as_str()]
    );
    assert_eq!(
        ids(&app, &carol, "secret").await,
        [theirs.as_str(), shared.as_str()]
    );
    assert_eq!(ids(&app, &dave, "secret").await, [theirs]);
    // A cursor of a message the caller cannot see is refused.
    search(
        &app,
        &dave,
        &[("query", "secret"), ("starting_after", &private)],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("starting_after"));

    // Removed from the group: its messages are no longer found.
    app.put(
        &alice,
        &format!("/v1/groups/{group}"),
        &[("remove_contact_ids[]", bob.id.as_str())],
    )
    .await
    .expect(200);
    assert_eq!(ids(&app, &bob, "secret").await, [private]);
    search(
        &app,
        &bob,
        &[("query", "secret"), ("conversation_id", &in_group)],
    )
    .await
    .expect_error(404, "not_found", Some("conversation_id"));
}

async fn edits_and_deletions_show_at_once(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = send(&app, &alice, &conv, "meet at the station").await;
    assert_eq!(ids(&app, &bob, "station").await, [m.as_str()]);
    app.put(
        &alice,
        &format!("/v1/messages/{m}"),
        &[("message", "meet at the Harbour")],
    )
    .await
    .expect(200);
    assert_eq!(ids(&app, &bob, "station").await, Vec::<String>::new());
    assert_eq!(ids(&app, &bob, "harbour").await, [m.as_str()]);
    app.delete(&alice, &format!("/v1/messages/{m}"))
        .await
        .expect(204);
    assert_eq!(ids(&app, &bob, "harbour").await, Vec::<String>::new());
}

async fn filters_and_pages(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let carol = app.user("carol").await;
    let other = app.direct(&alice, &carol).await;
    let before = now_secs();
    let mut mine = Vec::new();
    for i in 0..5 {
        mine.push(send(&app, &alice, &conv, &format!("report number {i}")).await);
    }
    let bobs = send(&app, &bob, &conv, "report by bob").await;
    let elsewhere = send(&app, &carol, &other, "report from carol").await;
    mine.reverse();

    // Pages of 3, forward, with has_more.
    let (first, more) = found(&app, &alice, &[("query", "report"), ("limit", "3")]).await;
    assert_eq!(first, [elsewhere.as_str(), bobs.as_str(), mine[0].as_str()]);
    assert!(more);
    let (second, more) = found(
        &app,
        &alice,
        &[
            ("query", "report"),
            ("limit", "3"),
            ("starting_after", &first[2]),
        ],
    )
    .await;
    assert_eq!(second, mine[1..4]);
    assert!(more);
    let (third, more) = found(
        &app,
        &alice,
        &[
            ("query", "report"),
            ("limit", "3"),
            ("starting_after", &second[2]),
        ],
    )
    .await;
    assert_eq!(third, mine[4..]);
    assert!(!more);

    // By conversation, by sender, and both.
    let (in_conv, _) = found(
        &app,
        &alice,
        &[("query", "report"), ("conversation_id", &conv)],
    )
    .await;
    assert_eq!(in_conv.len(), 6);
    assert!(!in_conv.contains(&elsewhere));
    let (by_bob, _) = found(&app, &alice, &[("query", "report"), ("sender_id", &bob.id)]).await;
    assert_eq!(by_bob, [bobs.as_str()]);
    let (none, _) = found(
        &app,
        &alice,
        &[
            ("query", "report"),
            ("conversation_id", &other),
            ("sender_id", &bob.id),
        ],
    )
    .await;
    assert!(none.is_empty());
    // An unknown sender filters everything out: no error, nothing learned.
    let (none, _) = found(
        &app,
        &alice,
        &[("query", "report"), ("sender_id", UNKNOWN_ID)],
    )
    .await;
    assert!(none.is_empty());

    // By time, in whole seconds: after a second is from the next one.
    let after = (before - 1).to_string();
    let (all, _) = found(
        &app,
        &alice,
        &[("query", "report"), ("created_after", &after)],
    )
    .await;
    assert_eq!(all.len(), 7);
    let later = (now_secs() + 5).to_string();
    let (none, _) = found(
        &app,
        &alice,
        &[("query", "report"), ("created_after", &later)],
    )
    .await;
    assert!(none.is_empty());
    let early = (before - 1).to_string();
    let (none, _) = found(
        &app,
        &alice,
        &[("query", "report"), ("created_before", &early)],
    )
    .await;
    assert!(none.is_empty());
    let (all, _) = found(
        &app,
        &alice,
        &[("query", "report"), ("created_before", &later)],
    )
    .await;
    assert_eq!(all.len(), 7);
    // Extreme seconds are no error.
    let (none, _) = found(
        &app,
        &alice,
        &[
            ("query", "report"),
            ("created_after", &i64::MAX.to_string()),
        ],
    )
    .await;
    assert!(none.is_empty());
    let (all, _) = found(
        &app,
        &alice,
        &[
            ("query", "report"),
            ("created_after", &i64::MIN.to_string()),
        ],
    )
    .await;
    assert_eq!(all.len(), 7);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    finds_substrings_in_any_script_ignoring_case,
    every_character_is_literal,
    bad_input_is_a_clear_400,
    only_the_callers_conversations_as_they_are_now,
    edits_and_deletions_show_at_once,
    filters_and_pages,
);
