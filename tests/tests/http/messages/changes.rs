//! Changes to a message: edit, react, attach, unreact and delete.

use std::time::Duration;

use confab_tests::http::TestApp;
use serde_json::{json, Value};

use crate::support::{assert_recent, id_of, pair, UNKNOWN_ID};

use super::{message_path, page, react, trio};

// ------------------------------------------------------------ edit, react

async fn edit_by_sender_only(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "first draft").await;
    let path = message_path(&m);

    let r = app.put(&bob, &path, &[("message", "bob was here")]).await;
    r.expect_error(403, "forbidden", None);
    let r = app
        .put(
            &bob,
            &path,
            &[("message", "x"), ("reactions[like][]", "bob")],
        )
        .await;
    r.expect_error(403, "forbidden", None);
    let unchanged = app.get(&alice, &path).await.expect(200).clone();
    assert_eq!(unchanged, m);

    let too_long = "z".repeat(4097);
    for bad in ["", "  ", "\u{200B}", too_long.as_str()] {
        let r = app.put(&alice, &path, &[("message", bad)]).await;
        r.expect_error(400, "parameter_invalid", Some("message"));
    }
    let r = app.put(&alice, &path, &[("id", UNKNOWN_ID)]).await;
    r.expect_error(400, "parameter_unknown", Some("id"));
    let r = app.put(&alice, &path, &[("conversation_id", &conv)]).await;
    r.expect_error(400, "parameter_unknown", Some("conversation_id"));
    assert_eq!(app.get(&alice, &path).await.expect(200), &m);

    let r = app.put(&alice, &path, &[("message", "final text")]).await;
    let edited = r.expect(200).clone();
    assert_eq!(edited["message"], "final text");
    let updated = assert_recent(&edited["updated_at"]);
    assert!(updated >= m["created_at"].as_i64().expect("created_at"));
    for key in [
        "id",
        "conversation_id",
        "contact",
        "reactions",
        "attachments",
        "read_at",
        "created_at",
    ] {
        assert_eq!(edited[key], m[key], "field {key} changed");
    }
    // phone numbers are private: docs/api.md "Blocks and reports". Bob sees the edit with
    // alice's number null; her own answer carries it.
    assert_eq!(edited["contact"]["phone_number"], "+15550100");
    let seen = app.get(&bob, &path).await.expect(200).clone();
    assert!(seen["contact"]["phone_number"].is_null(), "{seen}");
    let mut as_others_see = edited.clone();
    as_others_see["contact"]["phone_number"] = Value::Null;
    assert_eq!(seen, as_others_see);
}

async fn reactions_add_in_order(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let m = app.send_message(&alice, &conv, "react!").await;
    let path = message_path(&m);

    let r = app.put(&bob, &path, &[("reactions[like][]", "bob")]).await;
    let after = r.expect(200).clone();
    assert_eq!(after["reactions"], json!([{"like": ["bob"]}]));
    assert_recent(&after["updated_at"]);
    assert_eq!(after["message"], "react!");

    let heart = [("reactions[heart][]", "carol")];
    assert_eq!(
        react(&app, &carol, &path, &heart).await,
        json!([{"like": ["bob"]}, {"heart": ["carol"]}])
    );
    let like = [("reactions[like][]", "alice")];
    let full = json!([{"like": ["bob", "alice"]}, {"heart": ["carol"]}]);
    assert_eq!(react(&app, &alice, &path, &like).await, full);
    for u in [&alice, &bob, &carol] {
        assert_eq!(app.get(u, &path).await.expect(200)["reactions"], full);
    }

    // Several at once, by one caller: names in order of submission.
    let m2 = app.send_message(&bob, &conv, "more").await;
    let path2 = message_path(&m2);
    let both = [("reactions[tada][]", "carol"), ("reactions[+1][]", "carol")];
    assert_eq!(
        react(&app, &carol, &path2, &both).await,
        json!([{"tada": ["carol"]}, {"+1": ["carol"]}])
    );
}

async fn re_adding_a_reaction_changes_nothing(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "once").await;
    let path = message_path(&m);
    let first = app.put(&bob, &path, &[("reactions[like][]", "bob")]).await;
    let first = first.expect(200).clone();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = app.put(&bob, &path, &[("reactions[like][]", "bob")]).await;
    let again = again.expect(200).clone();
    assert_eq!(again["reactions"], json!([{"like": ["bob"]}]));
    assert_eq!(
        again["updated_at"], first["updated_at"],
        "a no-op PUT set updated_at"
    );
    assert_eq!(again, first);
    // Twice in one request is one reaction too.
    let twice = [("reactions[wow][]", "alice"), ("reactions[wow][]", "alice")];
    assert_eq!(
        react(&app, &alice, &path, &twice).await,
        json!([{"like": ["bob"]}, {"wow": ["alice"]}])
    );
}

async fn reacting_in_someone_elses_name_is_403(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "mine").await;
    let path = message_path(&m);
    let r = app
        .put(&bob, &path, &[("reactions[like][]", "alice")])
        .await;
    r.expect_error(403, "forbidden", None);
    // Mixed own and foreign names: nothing at all is added.
    let r = app
        .put(
            &bob,
            &path,
            &[("reactions[like][]", "bob"), ("reactions[like][]", "alice")],
        )
        .await;
    r.expect_error(403, "forbidden", None);
    let r = app
        .put(
            &bob,
            &path,
            &[
                ("reactions[heart][]", "bob"),
                ("reactions[like][]", "carol"),
            ],
        )
        .await;
    r.expect_error(403, "forbidden", None);
    let now = app.get(&alice, &path).await.expect(200).clone();
    assert_eq!(now, m);
    assert_eq!(now["reactions"], json!([]));
}

#[track_caller]
fn expect_reactions_invalid(r: &confab_tests::http::Resp) {
    r.expect(400);
    assert_eq!(r.body["code"], "parameter_invalid", "{}", r.raw);
    assert_eq!(r.body["type"], "invalid_request", "{}", r.raw);
    let param = r.body["param"].as_str().unwrap_or_default();
    assert!(param.starts_with("reactions"), "param {param:?}: {}", r.raw);
}

async fn reaction_names_are_validated(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "names").await;
    let path = message_path(&m);
    let long = "a".repeat(65);
    for bad in ["Like", "thumbs up", "ok!", "é", long.as_str()] {
        let key = format!("reactions[{bad}][]");
        let r = app.put(&bob, &path, &[(key.as_str(), "bob")]).await;
        assert_eq!(r.status.as_u16(), 400, "name {bad:?}: {}", r.raw);
        expect_reactions_invalid(&r);
    }
    let max = "a".repeat(64);
    let key = format!("reactions[{max}][]");
    let r = app.put(&bob, &path, &[(key.as_str(), "bob")]).await;
    let mut only = serde_json::Map::new();
    only.insert(max.clone(), json!(["bob"]));
    assert_eq!(r.expect(200)["reactions"], json!([only]));
    let r = app
        .put(&bob, &path, &[("reactions[a-z_0+9][]", "bob")])
        .await;
    assert_eq!(r.expect(200)["reactions"][1], json!({"a-z_0+9": ["bob"]}));

    // 32 distinct names at most.
    let names: Vec<String> = (0..30).map(|i| format!("r{i}")).collect();
    let keys: Vec<String> = names.iter().map(|n| format!("reactions[{n}][]")).collect();
    let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "alice")).collect();
    let r = app.put(&alice, &path, &pairs).await;
    assert_eq!(
        r.expect(200)["reactions"].as_array().expect("list").len(),
        32
    );
    let r = app
        .put(&bob, &path, &[("reactions[one-more][]", "bob")])
        .await;
    expect_reactions_invalid(&r);
    // Joining an existing name is still fine.
    let r = app.put(&bob, &path, &[("reactions[r7][]", "bob")]).await;
    let body = r.expect(200);
    assert_eq!(body["reactions"].as_array().expect("list").len(), 32);
    assert_eq!(body["reactions"][9], json!({"r7": ["alice", "bob"]}));
}

async fn attachments_appended_by_sender_only(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &conv),
                ("message", "see files"),
                ("attachments[0][file_url]", "https://files.example/1"),
                ("attachments[0][filename]", "one"),
            ],
        )
        .await;
    let m = r.expect(201).clone();
    let path = message_path(&m);

    let r = app
        .put(
            &bob,
            &path,
            &[
                ("attachments[0][file_url]", "https://files.example/evil"),
                ("attachments[0][filename]", "evil"),
            ],
        )
        .await;
    r.expect_error(403, "forbidden", None);
    assert_eq!(app.get(&alice, &path).await.expect(200), &m);

    let r = app
        .put(
            &alice,
            &path,
            &[
                ("attachments[0][file_url]", "https://files.example/2"),
                ("attachments[0][filename]", "two"),
                ("attachments[0][file_size]", "7"),
            ],
        )
        .await;
    let after = r.expect(200).clone();
    let atts = after["attachments"].as_array().expect("list");
    assert_eq!(atts.len(), 2);
    assert_eq!(atts[0], m["attachments"][0]);
    assert_eq!(atts[1]["filename"], "two");
    assert_eq!(atts[1]["file_size"], 7);
    assert_eq!(atts[1]["message_id"], id_of(&m).as_str());
    assert_recent(&after["updated_at"]);

    // Up to ten in all.
    let keys: Vec<(String, String)> = (0..9)
        .map(|i| {
            (
                format!("attachments[{i}][file_url]"),
                format!("attachments[{i}][filename]"),
            )
        })
        .collect();
    let pairs: Vec<(&str, &str)> = keys
        .iter()
        .flat_map(|(u, n)| [(u.as_str(), "https://files.example/n"), (n.as_str(), "n")])
        .collect();
    let r = app.put(&alice, &path, &pairs).await;
    r.expect_error(400, "parameter_invalid", Some("attachments"));
    let r = app.put(&alice, &path, &pairs[..16]).await;
    assert_eq!(
        r.expect(200)["attachments"].as_array().expect("list").len(),
        10
    );
    let r = app.put(&alice, &path, &pairs[..2]).await;
    r.expect_error(400, "parameter_invalid", Some("attachments"));
    assert_eq!(
        app.get(&bob, &path).await.expect(200)["attachments"]
            .as_array()
            .expect("list")
            .len(),
        10
    );
}

async fn remove_own_reaction_only(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let m = app.send_message(&carol, &conv, "unreact").await;
    let path = message_path(&m);
    react(&app, &bob, &path, &[("reactions[like][]", "bob")]).await;
    react(&app, &alice, &path, &[("reactions[like][]", "alice")]).await;
    react(&app, &alice, &path, &[("reactions[heart][]", "alice")]).await;

    let r = app.delete(&bob, &format!("{path}/reactions/like")).await;
    let after = r.expect(200).clone();
    assert_eq!(id_of(&after), id_of(&m));
    assert_eq!(
        after["reactions"],
        json!([{"like": ["alice"]}, {"heart": ["alice"]}])
    );

    // Not had: 200, no change.
    let before = app.get(&carol, &path).await.expect(200).clone();
    // phone numbers are private: docs/api.md "Blocks and reports". The sender carol sees
    // her number; bob sees the same message with it null.
    assert_eq!(before["contact"]["phone_number"], "+15550100");
    let mut as_others_see = before.clone();
    as_others_see["contact"]["phone_number"] = Value::Null;
    let r = app.delete(&bob, &format!("{path}/reactions/heart")).await;
    let bobs = r.expect(200);
    assert!(bobs["contact"]["phone_number"].is_null(), "{bobs}");
    assert_eq!(bobs, &as_others_see);
    let r = app
        .delete(&carol, &format!("{path}/reactions/nothing"))
        .await;
    assert_eq!(r.expect(200), &before);

    // The last reactor's removal removes the name.
    let r = app.delete(&alice, &format!("{path}/reactions/like")).await;
    assert_eq!(r.expect(200)["reactions"], json!([{"heart": ["alice"]}]));
    let r = app.delete(&alice, &format!("{path}/reactions/heart")).await;
    assert_eq!(r.expect(200)["reactions"], json!([]));
    assert_eq!(
        app.get(&bob, &path).await.expect(200)["reactions"],
        json!([])
    );

    // Unknown message: 404.
    let r = app
        .delete(&alice, &format!("/v1/messages/{UNKNOWN_ID}/reactions/like"))
        .await;
    r.expect_error(404, "not_found", None);
}

// -------------------------------------------------------------------- delete

async fn delete_by_sender_only(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "delete me").await;
    let keep = app.send_message(&bob, &conv, "keep me").await;
    let path = message_path(&m);
    app.put(&bob, &path, &[("reactions[like][]", "bob")])
        .await
        .expect(200);

    let r = app.delete(&bob, &path).await;
    r.expect_error(403, "forbidden", None);
    app.get(&alice, &path).await.expect(200);

    let r = app.delete(&alice, &path).await;
    r.expect(204);
    assert!(r.raw.is_empty());
    app.get(&alice, &path)
        .await
        .expect_error(404, "not_found", None);
    app.get(&bob, &path)
        .await
        .expect_error(404, "not_found", None);
    app.put(&alice, &path, &[("message", "back?")])
        .await
        .expect_error(404, "not_found", None);
    app.delete(&alice, &format!("{path}/reactions/like"))
        .await
        .expect_error(404, "not_found", None);
    app.delete(&alice, &path)
        .await
        .expect_error(404, "not_found", None);
    let (left, _) = page(&app, &bob, &format!("conversation_id={conv}")).await;
    assert_eq!(left, vec![id_of(&keep)]);
}

async fn deleting_the_pinned_message_unpins(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&bob, &conv, "pin me").await;
    let conv_path = format!("/v1/conversations/{conv}");
    let r = app
        .put(&alice, &conv_path, &[("pinned_message_id", &id_of(&m))])
        .await;
    assert_eq!(r.expect(200)["pinned_message_id"], id_of(&m).as_str());
    app.delete(&bob, &message_path(&m)).await.expect(204);
    for u in [&alice, &bob] {
        let c = app.get(u, &conv_path).await;
        assert!(c.expect(200)["pinned_message_id"].is_null(), "{}", c.raw);
    }
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    edit_by_sender_only,
    reactions_add_in_order,
    re_adding_a_reaction_changes_nothing,
    reacting_in_someone_elses_name_is_403,
    reaction_names_are_validated,
    attachments_appended_by_sender_only,
    remove_own_reaction_only,
    delete_by_sender_only,
    deleting_the_pinned_message_unpins,
);
