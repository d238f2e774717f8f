//! Helpers shared by the modules of the suite: ids, timestamps, lists, and
//! the few fixtures every area needs.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use confab_tests::db::Backend;
use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::Value;

/// Runs `test` against a fresh server on `backend` (the runner
/// `on_both_stores!` calls for each backend).
pub(crate) async fn on_server<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(TestApp) -> Fut,
    Fut: Future<Output = ()>,
{
    test(TestApp::spawn(backend).await).await;
}

/// Runs `test` with `backend` alone, for tests that start their own server
/// (with options of their own) or none.
pub(crate) async fn on_backend<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(Backend) -> Fut,
    Fut: Future<Output = ()>,
{
    test(backend).await;
}

/// A well-formed id (a lowercase UUIDv7) that names nothing.
pub(crate) const UNKNOWN_ID: &str = "0190a5e0-0000-7000-8000-000000000000";

/// A request body that must be refused: (pairs, code, param).
pub(crate) type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);

/// Now, in Unix seconds.
pub(crate) fn now_secs() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after epoch");
    i64::try_from(d.as_secs()).expect("seconds fit")
}

/// Asserts `v` is an integer number of Unix seconds within a few minutes of
/// now; returns it.
#[track_caller]
pub(crate) fn assert_recent(v: &Value) -> i64 {
    let t = v
        .as_i64()
        .unwrap_or_else(|| panic!("timestamp is not an integer: {v}"));
    let now = now_secs();
    assert!(
        (now - 300..=now + 5).contains(&t),
        "timestamp {t} is not Unix seconds close to now ({now})"
    );
    t
}

/// Asserts `v` is an id in the wire form: a UUIDv7 as 36 lowercase,
/// hyphenated characters; returns it.
#[track_caller]
pub(crate) fn assert_id(v: &Value) -> String {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("id is not a string: {v}"));
    assert_eq!(s.len(), 36, "id {s:?} is not 36 characters");
    assert_eq!(s, s.to_lowercase(), "id {s:?} is not lowercase");
    let u = uuid::Uuid::parse_str(s).unwrap_or_else(|_| panic!("id {s:?} is not a UUID"));
    assert_eq!(u.hyphenated().to_string(), s, "id {s:?} is not hyphenated");
    assert_eq!(u.get_version_num(), 7, "id {s:?} is not a UUIDv7");
    s.to_owned()
}

/// The `id` of an object.
pub(crate) fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("object with an id").to_owned()
}

/// The ids in a list envelope's `data`, in order.
pub(crate) fn data_ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data array: {body}"))
        .iter()
        .map(id_of)
        .collect()
}

/// Owned copies of ids, to compare with what a list returned.
pub(crate) fn ids(list: &[&String]) -> Vec<String> {
    list.iter().map(|s| (*s).clone()).collect()
}

/// The field names of an object, sorted.
pub(crate) fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    k.sort_unstable();
    k
}

/// One page of a list, `GET path_and_query`: (ids, has_more).
pub(crate) async fn page(app: &TestApp, user: &User, path_and_query: &str) -> (Vec<String>, bool) {
    let r = app.get(user, path_and_query).await;
    let body = r.expect(200);
    let has_more = body["has_more"]
        .as_bool()
        .unwrap_or_else(|| panic!("has_more is not a boolean: {}", r.raw));
    (data_ids(body), has_more)
}

/// Alice and Bob, and a direct conversation of theirs.
pub(crate) async fn pair(app: &TestApp) -> (User, User, String) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let conv = app.direct(&alice, &bob).await;
    (alice, bob, conv)
}

/// Creates a group owned by `owner` with `members`; returns its id.
pub(crate) async fn new_group(
    app: &TestApp,
    owner: &User,
    name: &str,
    members: &[&User],
) -> String {
    let mut pairs = vec![("name", name)];
    for m in members {
        pairs.push(("contact_ids[]", m.id.as_str()));
    }
    let r = app.post(owner, "/v1/groups", &pairs).await;
    id_of(r.expect(201))
}

/// Creates a conversation of the group as `user`; returns its id.
pub(crate) async fn group_conversation(app: &TestApp, user: &User, group_id: &str) -> String {
    let r = app
        .post(user, "/v1/conversations", &[("group_id", group_id)])
        .await;
    id_of(r.expect(201))
}

/// The conversation as `user` sees it in the list (which, unlike GET by id,
/// does not open it).
pub(crate) async fn listed_conversation(app: &TestApp, user: &User, id: &str) -> Value {
    let r = app.get(user, "/v1/conversations?limit=100").await;
    let body = r.expect(200);
    body["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{} does not list {id}: {body}", user.username))
        .clone()
}

/// The messages of a conversation as `user` sees them (one page of 100).
pub(crate) async fn conversation_messages(app: &TestApp, user: &User, conv: &str) -> Vec<Value> {
    let r = app
        .get(
            user,
            &format!("/v1/messages?conversation_id={conv}&limit=100"),
        )
        .await;
    r.expect(200)["data"].as_array().expect("data").clone()
}

/// The member ids of a group object, sorted.
pub(crate) fn member_ids(group: &Value) -> Vec<String> {
    let mut ids: Vec<String> = group["contacts"]
        .as_array()
        .unwrap_or_else(|| panic!("no contacts array: {group}"))
        .iter()
        .map(|c| c["id"].as_str().expect("contact id").to_owned())
        .collect();
    ids.sort();
    ids
}

/// The ids of `users`, sorted (to compare with `member_ids`).
pub(crate) fn ids_of(users: &[&User]) -> Vec<String> {
    let mut ids: Vec<String> = users.iter().map(|u| u.id.clone()).collect();
    ids.sort();
    ids
}

/// Records a failed expectation of the matrix instead of panicking, so that
/// one run reports every wrong cell.
macro_rules! check {
    ($failures:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            $failures.push(format!($($fmt)+));
        }
    };
}
pub(crate) use check;

/// The id of the conversation's `conversation.created`, once `user` can
/// read it: what a client that saw it resumes after. (PostgreSQL makes an
/// event readable once every older transaction has ended, in any database
/// of the server, so it may take a moment to show.)
pub(crate) async fn conversation_created(app: &TestApp, user: &User) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = app
            .send(
                Method::GET,
                "/v1/events?limit=100",
                Some(&user.token),
                None,
                &[("accept", "application/json")],
            )
            .await;
        let body = r.expect(200);
        let data = body["data"].as_array().expect("data");
        if let Some(e) = data.iter().find(|e| e["type"] == "conversation.created") {
            return id_of(e);
        }
        assert!(
            Instant::now() < deadline,
            "no conversation.created: {}",
            r.raw
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls `check` until it holds, for up to 5 s (events are listed once
/// every older transaction has ended: a read right after a write may come
/// too early); fails the test if it never does.
pub(crate) async fn eventually<F, Fut>(mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if check().await {
            return;
        }
        assert!(Instant::now() < deadline, "still not so after 5 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
