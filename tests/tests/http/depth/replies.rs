//! Replies that quote a message (`reply_to_id`): the quote reads as the
//! quoted message does now, becomes `{"id", "deleted": true}` once it is
//! deleted, and a bad `reply_to_id` is refused without writing anything.
//! Also a page of 50 messages that each quote, mention and (some) reply in
//! threads, whose every row is checked.

use std::collections::BTreeMap;

use confab_tests::http::{TestApp, User};
use serde_json::{json, Value};

use super::{
    all_messages, caught_up, created_of, message, quote_of, send, snapshot, trio, try_send,
    try_send_json, without_activity,
};
use crate::support::{
    conversation_created, conversation_messages, data_ids, id_of, new_group, UNKNOWN_ID,
};

async fn a_reply_quotes_the_message_as_it_reads_now(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let quoted = send(&app, &alice, &conv, "the original words", &[]).await;
    super::assert_plain(&quoted);
    let q = id_of(&quoted);

    let reply = send(&app, &bob, &conv, "agreed", &[("reply_to_id", q.as_str())]).await;
    let r = id_of(&reply);
    assert_eq!(
        reply["reply_to"],
        quote_of(&quoted, "the original words"),
        "{reply}"
    );
    assert_eq!(reply["reply_to"]["contact"]["id"], alice.id.as_str());
    assert_eq!(reply["reply_to"]["contact"]["username"], "alice");
    // A quote is not a thread reply, and mentions no one.
    assert!(reply["parent_id"].is_null(), "{reply}");
    assert_eq!(reply["reply_count"], 0);
    assert!(reply["last_reply_at"].is_null());
    assert_eq!(reply["mentions"], json!([]));
    assert!(reply["edited_at"].is_null());
    assert_eq!(reply["message"], "agreed");
    // The quoted message itself is unchanged by being quoted.
    let again = message(&app, &carol, &q).await;
    super::assert_plain(&again);

    // The same in JSON.
    let by_json = try_send_json(
        &app,
        &carol,
        &json!({"conversation_id": conv, "message": "me too", "reply_to_id": q}),
    )
    .await;
    let by_json = by_json.expect(201).clone();
    assert_eq!(by_json["reply_to"], quote_of(&quoted, "the original words"));

    // Every reader sees the quote, by id and in the list.
    for who in [&alice, &bob, &carol] {
        let got = message(&app, who, &r).await;
        assert_eq!(got["reply_to"], quote_of(&quoted, "the original words"));
        let rows = conversation_messages(&app, who, &conv).await;
        let row = rows.iter().find(|m| m["id"] == r.as_str()).expect("listed");
        assert_eq!(row["reply_to"], quote_of(&quoted, "the original words"));
    }

    // The quote follows the quoted message's text.
    app.put(
        &alice,
        &format!("/v1/messages/{q}"),
        &[("message", "the amended words")],
    )
    .await
    .expect(200);
    let got = message(&app, &carol, &r).await;
    assert_eq!(got["reply_to"], quote_of(&quoted, "the amended words"));
    let rows = conversation_messages(&app, &bob, &conv).await;
    for id in [&r, &id_of(&by_json)] {
        let row = rows
            .iter()
            .find(|m| m["id"] == id.as_str())
            .expect("listed");
        assert_eq!(row["reply_to"], quote_of(&quoted, "the amended words"));
    }
    // A reaction on the quoted message changes nothing in the quote.
    app.put(
        &bob,
        &format!("/v1/messages/{q}"),
        &[("reactions[like][]", "bob")],
    )
    .await
    .expect(200);
    let got = message(&app, &bob, &r).await;
    assert_eq!(got["reply_to"], quote_of(&quoted, "the amended words"));

    // Deleted: only its id is left, never its text.
    app.delete(&alice, &format!("/v1/messages/{q}"))
        .await
        .expect(204);
    for who in [&alice, &bob, &carol] {
        let resp = app.get(who, &format!("/v1/messages/{r}")).await;
        let got = resp.expect(200);
        assert_eq!(got["reply_to"], json!({"id": q, "deleted": true}), "{got}");
        assert_eq!(got["message"], "agreed");
        assert!(!resp.raw.contains("words"), "{}", resp.raw);
        let list = app
            .get(
                who,
                &format!("/v1/messages?conversation_id={conv}&limit=100"),
            )
            .await;
        let body = list.expect(200);
        assert!(!list.raw.contains("words"), "{}", list.raw);
        for id in [&r, &id_of(&by_json)] {
            let row = body["data"]
                .as_array()
                .expect("data")
                .iter()
                .find(|m| m["id"] == id.as_str())
                .expect("listed");
            assert_eq!(row["reply_to"], json!({"id": q, "deleted": true}));
        }
    }
    // A deleted message cannot be quoted any more.
    try_send(
        &app,
        &bob,
        &conv,
        "too late",
        &[("reply_to_id", q.as_str())],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("reply_to_id"));

    // Any message of the conversation may be quoted, a thread reply too.
    let top = send(&app, &alice, &conv, "a thread starts", &[]).await;
    let in_thread = super::thread_reply(&app, &bob, &conv, &id_of(&top), "in it").await;
    let quoting = send(
        &app,
        &carol,
        &conv,
        "quoting the thread",
        &[("reply_to_id", id_of(&in_thread).as_str())],
    )
    .await;
    assert_eq!(quoting["reply_to"], quote_of(&in_thread, "in it"));
    assert!(quoting["parent_id"].is_null());
}

async fn a_bad_reply_to_id_is_refused_and_writes_nothing(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let dave = app.user("dave").await;
    let erin = app.user("erin").await;
    let foreign_conv = app.direct(&dave, &erin).await;
    let foreign = id_of(&send(&app, &dave, &foreign_conv, "elsewhere", &[]).await);
    let since = conversation_created(&app, &bob).await;
    let q = id_of(&send(&app, &alice, &conv, "quote me", &[]).await);

    let before = snapshot(&app, &conv, &[&alice, &bob, &carol]).await;
    for bad in [foreign.as_str(), UNKNOWN_ID, "nope", &conv, &alice.id] {
        let r = try_send(
            &app,
            &alice,
            &conv,
            "refused reply",
            &[("reply_to_id", bad)],
        )
        .await;
        assert_eq!(r.status.as_u16(), 400, "reply_to_id {bad:?}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some("reply_to_id"));
    }
    for body in [
        json!({"conversation_id": conv, "message": "refused reply", "reply_to_id": foreign}),
        json!({"conversation_id": conv, "message": "refused reply", "reply_to_id": 7}),
        json!({"conversation_id": conv, "message": "refused reply", "reply_to_id": [q]}),
    ] {
        let r = try_send_json(&app, &bob, &body).await;
        assert_eq!(r.status.as_u16(), 400, "{body}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some("reply_to_id"));
    }
    // A message of the caller's other conversation is not one of this one.
    let own_other = app.direct(&alice, &dave).await;
    let other_msg = id_of(&send(&app, &alice, &own_other, "other", &[]).await);
    try_send(
        &app,
        &alice,
        &conv,
        "refused reply",
        &[("reply_to_id", other_msg.as_str())],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("reply_to_id"));

    // A non-member is told the conversation is not there, whatever else
    // the request names.
    for extra in [
        vec![("reply_to_id", q.as_str())],
        vec![("parent_id", q.as_str())],
        vec![("mentions[]", alice.id.as_str())],
        vec![
            ("reply_to_id", q.as_str()),
            ("parent_id", q.as_str()),
            ("mentions[]", bob.id.as_str()),
        ],
    ] {
        try_send(&app, &dave, &conv, "refused reply", &extra)
            .await
            .expect_error(404, "not_found", Some("conversation_id"));
    }

    assert_eq!(snapshot(&app, &conv, &[&alice, &bob, &carol]).await, before);
    // No event either: bob's catch-up holds the first message and the
    // marker, no refused one.
    let marker = id_of(&send(&app, &carol, &conv, "marker", &[]).await);
    let (raw, events) = caught_up(&app, &bob.token, &since, |e| created_of(e, &marker)).await;
    let created: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message.created")
        .collect();
    assert_eq!(created.len(), 2, "{raw}");
    assert!(!raw.contains("refused reply"), "{raw}");
}

/// A row of the page as sent: its id, sender and mentions (indices into
/// the members), the quoted message whose thread it is in, if any, and
/// its `created_at`.
struct Row {
    id: String,
    sender: usize,
    mentions: Vec<usize>,
    parent: Option<usize>,
    created: i64,
}

/// Which members a row of the page mentions (indices into the members).
fn mentioned(i: usize) -> Vec<usize> {
    (0..5).filter(|j| (i * 7 + j).is_multiple_of(3)).collect()
}

async fn a_page_of_fifty_quoting_mentioning_rows_loads_right(app: TestApp) {
    let mut members: Vec<User> = Vec::new();
    for name in ["alice", "bob", "carol", "dave", "erin"] {
        members.push(app.user(name).await);
    }
    let refs: Vec<&User> = members[1..].iter().collect();
    let group = new_group(&app, &members[0], "Fifty", &refs).await;
    let conv = crate::support::group_conversation(&app, &members[0], &group).await;

    // Ten messages to quote; three of them (0, 1, 2) get threads.
    let mut quoted: Vec<Value> = Vec::new();
    for k in 0..10 {
        let from = &members[k % 5];
        quoted.push(send(&app, from, &conv, &format!("quoted number {k}"), &[]).await);
    }
    // Fifty that quote, mention, and every fourth replies in a thread.
    let mut rows: Vec<Row> = Vec::new();
    for i in 0..50 {
        let from = &members[i % 5];
        let q = id_of(&quoted[i % 10]);
        let mut pairs = vec![("reply_to_id", q.clone())];
        for j in mentioned(i) {
            pairs.push(("mentions[]", members[j].id.clone()));
        }
        let parent = (i % 4 == 0).then_some(i % 3);
        if let Some(p) = parent {
            pairs.push(("parent_id", id_of(&quoted[p])));
        }
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let m = send(&app, from, &conv, &format!("row number {i}"), &pairs).await;
        let created = m["created_at"].as_i64().expect("created_at");
        rows.push(Row {
            id: id_of(&m),
            sender: i % 5,
            mentions: mentioned(i),
            parent,
            created,
        });
    }
    // Quoted 3 is edited, quoted 7 deleted, after they were quoted.
    app.put(
        &members[3],
        &format!("/v1/messages/{}", id_of(&quoted[3])),
        &[("message", "quoted number 3, amended")],
    )
    .await
    .expect(200);
    app.delete(&members[2], &format!("/v1/messages/{}", id_of(&quoted[7])))
        .await
        .expect(204);

    let expected_quote = |k: usize| -> Value {
        match k {
            7 => json!({"id": id_of(&quoted[7]), "deleted": true}),
            3 => quote_of(&quoted[3], "quoted number 3, amended"),
            _ => quote_of(&quoted[k], &format!("quoted number {k}")),
        }
    };
    let check_row = |row: &Value, i: usize| {
        let Row {
            id,
            sender,
            mentions,
            parent,
            created,
        } = &rows[i];
        assert_eq!(row["id"], id.as_str(), "row {i}: {row}");
        assert_eq!(row["message"], format!("row number {i}"), "row {i}: {row}");
        assert_eq!(row["contact"]["id"], members[*sender].id.as_str());
        assert_eq!(row["created_at"], *created, "row {i}: {row}");
        assert_eq!(row["reply_to"], expected_quote(i % 10), "row {i}: {row}");
        let mut want: Vec<&str> = mentions.iter().map(|j| members[*j].id.as_str()).collect();
        want.sort_unstable();
        let mut got: Vec<&str> = row["mentions"]
            .as_array()
            .unwrap_or_else(|| panic!("row {i}: mentions not an array: {row}"))
            .iter()
            .map(|v| v.as_str().expect("an id"))
            .collect();
        got.sort_unstable();
        assert_eq!(got, want, "row {i}: {row}");
        match parent {
            Some(p) => assert_eq!(row["parent_id"], id_of(&quoted[*p]), "row {i}: {row}"),
            None => assert!(row["parent_id"].is_null(), "row {i}: {row}"),
        }
        assert_eq!(row["reply_count"], 0, "row {i}: {row}");
        assert!(row["last_reply_at"].is_null(), "row {i}: {row}");
        assert!(row["edited_at"].is_null(), "row {i}: {row}");
    };

    // With the thread replies: the fifty, newest first, every field right,
    // and each row as GET by id shows it.
    let viewer = &members[1];
    let r = app
        .get(
            viewer,
            &format!("/v1/messages?conversation_id={conv}&include_replies=true&limit=50"),
        )
        .await;
    let body = r.expect(200).clone();
    assert_eq!(body["has_more"], true);
    let data = body["data"].as_array().expect("data");
    assert_eq!(data.len(), 50, "{}", r.raw);
    assert!(
        !r.raw.contains("quoted number 7"),
        "a deleted text: {}",
        r.raw
    );
    for (n, row) in data.iter().enumerate() {
        let i = 49 - n;
        check_row(row, i);
        let by_id = message(&app, viewer, &rows[i].id).await;
        assert_eq!(without_activity(&by_id), without_activity(row), "row {i}");
    }
    // The quoted messages follow, with their thread counts.
    let last = &rows[0].id;
    let r = app
        .get(
            viewer,
            &format!(
                "/v1/messages?conversation_id={conv}&include_replies=true&limit=50&starting_after={last}"
            ),
        )
        .await;
    let rest = r.expect(200).clone();
    let want: Vec<String> = (0..10)
        .rev()
        .filter(|k| *k != 7)
        .map(|k| id_of(&quoted[k]))
        .collect();
    assert_eq!(data_ids(&rest), want);
    assert_eq!(rest["has_more"], false);
    let mut threads: BTreeMap<usize, (usize, i64)> = BTreeMap::new();
    for row in &rows {
        if let Some(p) = row.parent {
            let e = threads.entry(p).or_insert((0, 0));
            e.0 += 1;
            e.1 = e.1.max(row.created);
        }
    }
    for row in rest["data"].as_array().expect("data") {
        let k = (0..10)
            .find(|k| row["id"] == id_of(&quoted[*k]).as_str())
            .expect("a quoted message");
        match threads.get(&k) {
            Some((count, latest)) => {
                assert_eq!(row["reply_count"], *count as u64, "quoted {k}: {row}");
                assert_eq!(row["last_reply_at"], *latest, "quoted {k}: {row}");
            }
            None => {
                assert_eq!(row["reply_count"], 0, "quoted {k}: {row}");
                assert!(row["last_reply_at"].is_null(), "quoted {k}: {row}");
            }
        }
        if k == 3 {
            assert!(row["edited_at"].is_i64(), "{row}");
        } else {
            assert!(row["edited_at"].is_null(), "{row}");
        }
    }

    // Without them: the rows that are not thread replies, then the quoted.
    let top: Vec<Value> = conversation_messages(&app, viewer, &conv).await;
    let want: Vec<String> = (0..50)
        .rev()
        .filter(|i| rows[*i].parent.is_none())
        .map(|i| rows[i].id.clone())
        .chain(want)
        .collect();
    let got: Vec<String> = top.iter().map(id_of).collect();
    assert_eq!(got, want);
    for row in &top {
        if let Some(i) = rows.iter().position(|r| row["id"] == r.id.as_str()) {
            check_row(row, i);
        }
    }
    // And everything once more through the helper every suite uses.
    assert_eq!(all_messages(&app, viewer, &conv).await.len(), 59);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_reply_quotes_the_message_as_it_reads_now,
    a_bad_reply_to_id_is_refused_and_writes_nothing,
    a_page_of_fifty_quoting_mentioning_rows_loads_right,
);
