//! What one contact may take of the file storage (docs/api.md "Limits"
//! "Hostile load", section 15): a quota of stored bytes, exact under
//! concurrent uploads and given back however a file goes; a few uploads
//! under way at once; a least pace for an upload's body; and a floor of
//! free disk below which no upload is taken. Over real HTTP on both
//! stores; raw sockets where a client library would hide the pace.

use std::time::{Duration, Instant};

use confab_service::UploadLimits;
use confab_tests::db::Backend;
use confab_tests::http::{multipart, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::hostile::{addr, assert_error_body, read_response};

fn limits(quota: u64, per_contact: usize) -> UploadLimits {
    UploadLimits {
        quota_bytes: Some(quota),
        per_contact,
        min_free_bytes: 0,
    }
}

async fn app_with(backend: Backend, limits: UploadLimits) -> TestApp {
    TestApp::spawn_with_service(backend, move |s| s.with_upload_limits(limits)).await
}

/// The stored bytes `/metrics` shows.
async fn stored_bytes(app: &TestApp) -> u64 {
    // The figure is read from the store at most every 5 s: the service
    // answers for it here.
    app.service.stored_files().await.expect("stored").bytes
}

async fn a_contact_s_uploads_stay_within_its_quota(backend: Backend) {
    let app = app_with(backend, limits(100_000, 8)).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let first = app.upload(&alice, "a.bin", &vec![1; 60_000]).await;
    let first = first.expect(201)["id"].as_str().expect("id").to_owned();
    // 60,000 more would take alice to 120,000.
    let refused = app.upload(&alice, "b.bin", &vec![2; 60_000]).await;
    refused.expect_error(413, "storage_quota", Some("file"));
    let message = refused.body["message"].as_str().expect("message");
    assert!(
        message.contains("(60000 bytes)") && message.contains("(100000 bytes)"),
        "the usage and the limit in {message:?}"
    );
    // Nothing of the refused one is kept.
    assert_eq!(stored_bytes(&app).await, 60_000);
    if app.files.dir.is_some() {
        assert_eq!(app.stored_files().len(), 1, "{:?}", app.stored_files());
    }
    // Another contact has a quota of its own.
    app.upload(&bob, "b.bin", &vec![2; 60_000])
        .await
        .expect(201);
    // `/metrics` shows what is stored.
    let scrape = app
        .client
        .get(format!("{}/metrics", app.base_url))
        .send()
        .await;
    let text = scrape.expect("scrape").text().await.expect("text");
    assert!(
        text.lines().any(|l| l == "confab_stored_file_bytes 120000"),
        "{}",
        text.lines()
            .filter(|l| l.starts_with("confab_stor"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(text.lines().any(|l| l == "confab_stored_files 2"));
    // A deletion gives its bytes back at once.
    app.delete(&alice, &format!("/v1/attachments/{first}"))
        .await
        .expect(204);
    let again = app.upload(&alice, "c.bin", &vec![3; 60_000]).await;
    let again = again.expect(201)["id"].as_str().expect("id").to_owned();
    // So does a file going with its conversation.
    let c = app.direct(&alice, &bob).await;
    app.json(
        Method::POST,
        &alice,
        "/v1/messages",
        &json!({"conversation_id": c, "attachments": [{"id": again}]}),
    )
    .await
    .expect(201);
    assert_eq!(stored_bytes(&app).await, 120_000);
    app.delete(&alice, &format!("/v1/conversations/{c}"))
        .await
        .expect(204);
    assert_eq!(stored_bytes(&app).await, 60_000);
    app.upload(&alice, "d.bin", &vec![4; 60_000])
        .await
        .expect(201);
}

/// Uploads racing for the last room of a quota: exactly as many are kept
/// as fit, whichever finishes first.
async fn concurrent_uploads_never_pass_the_quota(backend: Backend) {
    let app = app_with(backend, limits(100_000, 8)).await;
    let carol = app.user("carol").await;
    let racing: Vec<_> = (0..8)
        .map(|i| {
            let (app_url, token) = (app.base_url.clone(), carol.token.clone());
            let client = app.client.clone();
            tokio::spawn(async move {
                let (ct, body) = multipart(&[("file", Some("r.bin"), None, &vec![i; 30_000])]);
                let r = client
                    .post(format!("{app_url}/v1/attachments"))
                    .bearer_auth(token)
                    .header("content-type", ct)
                    .body(body)
                    .send()
                    .await
                    .expect("sent");
                let status = r.status().as_u16();
                let body: Value = r.json().await.expect("json");
                (status, body["code"].clone())
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for r in racing {
        outcomes.push(r.await.expect("join"));
    }
    let kept = outcomes.iter().filter(|(s, _)| *s == 201).count();
    let refused = outcomes
        .iter()
        .filter(|(s, code)| *s == 413 && code == "storage_quota")
        .count();
    assert_eq!((kept, refused), (3, 5), "{outcomes:?}");
    assert_eq!(stored_bytes(&app).await, 90_000);
    let listed = app.get(&carol, "/v1/attachments").await;
    assert_eq!(listed.expect(200)["data"].as_array().map(Vec::len), Some(3));
    if app.files.dir.is_some() {
        assert_eq!(app.stored_files().len(), 3, "{:?}", app.stored_files());
    }
}

/// The head and the start of an upload's body on a raw connection, of a
/// declared `total` file bytes.
async fn start_upload(app: &TestApp, user: &User, total: usize) -> TcpStream {
    let (ct, body) = multipart(&[("file", Some("s.bin"), None, &vec![0; total])]);
    let mut conn = TcpStream::connect(addr(app)).await.expect("connect");
    let head = format!(
        "POST /v1/attachments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
        user.token,
        body.len()
    );
    conn.write_all(head.as_bytes()).await.expect("head");
    // The part's headers and its first bytes.
    conn.write_all(&body[..200]).await.expect("start");
    conn
}

async fn a_contact_has_a_few_uploads_under_way_at_once(backend: Backend) {
    let app = app_with(backend, limits(10_000_000, 2)).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let under_way = [
        start_upload(&app, &alice, 100_000).await,
        start_upload(&app, &alice, 100_000).await,
    ];
    tokio::time::sleep(Duration::from_millis(300)).await;
    let third = app.upload(&alice, "t.bin", b"third").await;
    third.expect_error(429, "too_many_uploads", Some("file"));
    // Others upload as usual.
    app.upload(&bob, "b.bin", b"bob's").await.expect(201);
    // An upload that ends (here: given up) gives its place back.
    drop(under_way);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = app.upload(&alice, "t.bin", b"third").await;
        if r.status.as_u16() == 201 {
            break;
        }
        r.expect_error(429, "too_many_uploads", Some("file"));
        assert!(Instant::now() < deadline, "the places never came back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A trickled upload (a byte a second) is cut within a window of 10 s;
/// a slow but steady one (1 KiB a second, with a 4 s stall) is kept.
async fn a_trickled_upload_is_cut_and_a_slow_one_is_not(backend: Backend) {
    let app = app_with(backend, limits(10_000_000, 4)).await;
    let alice = app.user("alice").await;
    let trickle = async {
        let mut conn = start_upload(&app, &alice, 100_000).await;
        let started = Instant::now();
        let (mut reader, mut writer) = conn.split();
        let drip = async {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if writer.write_all(b"x").await.is_err() {
                    break;
                }
            }
        };
        let answer = async {
            let mut buf = Vec::new();
            let mut tmp = [0u8; 1024];
            use tokio::io::AsyncReadExt as _;
            loop {
                match reader.read(&mut tmp).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&tmp[..n]),
                }
            }
            String::from_utf8_lossy(&buf).to_string()
        };
        let text = tokio::select! {
            text = answer => text,
            () = drip => String::new(),
            () = tokio::time::sleep(Duration::from_secs(25)) => panic!("a trickled upload ran 25 s"),
        };
        (text, started.elapsed())
    };
    let slow = async {
        let total = 12 * 1024;
        let (ct, body) = multipart(&[("file", Some("slow.bin"), None, &vec![5; total])]);
        let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
        let head = format!(
            "POST /v1/attachments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
             Content-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
            alice.token,
            body.len()
        );
        conn.write_all(head.as_bytes()).await.expect("head");
        for (i, piece) in body.chunks(1024).enumerate() {
            // A mobile network's stall of 4 s, once.
            let pause = if i == 4 { 4_000 } else { 700 };
            tokio::time::sleep(Duration::from_millis(pause)).await;
            conn.write_all(piece).await.expect("piece");
        }
        read_response(&mut conn, Duration::from_secs(10)).await
    };
    let ((text, took), (status, head, body, _)) = tokio::join!(trickle, slow);
    let status_line = text.lines().next().unwrap_or("");
    assert!(status_line.contains(" 408 "), "{text}");
    let answer = text.split("\r\n\r\n").nth(1).unwrap_or("");
    assert_error_body(answer, "request_timeout");
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(14),
        "cut after {took:?}"
    );
    assert_eq!(status, 201, "{head}\n{body}");
}

async fn no_upload_is_taken_below_the_disk_floor(backend: Backend) {
    let app = app_with(
        backend,
        UploadLimits {
            min_free_bytes: u64::MAX / 2,
            ..limits(10_000_000, 4)
        },
    )
    .await;
    let alice = app.user("alice").await;
    let r = app.upload(&alice, "a.bin", b"bytes").await;
    if app.files.dir.is_some() {
        r.expect_error(507, "insufficient_storage", None);
        assert!(app.stored_files().is_empty());
    } else {
        // An S3 bucket tells no free space: no floor applies.
        r.expect(201);
    }
}

/// A part with thousands of headers is a malformed body (400), not a
/// body too large (413): the overflow is the part parser's own.
async fn thousands_of_part_headers_are_a_bad_request(app: TestApp) {
    let alice = app.user("alice").await;
    let boundary = "b0undary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"h.bin\"\r\n"
    );
    for i in 0..5_000 {
        body.push_str(&format!("X-Header-{i}: v\r\n"));
    }
    body.push_str(&format!("\r\nbytes\r\n--{boundary}--\r\n"));
    let r = app
        .send(
            Method::POST,
            "/v1/attachments",
            Some(&alice.token),
            Some((
                &format!("multipart/form-data; boundary={boundary}"),
                body.into_bytes(),
            )),
            &[],
        )
        .await;
    r.expect_error(400, "body_invalid", None);
    // A file of the same size is fine.
    app.upload(&alice, "h.bin", &vec![0; 100_000])
        .await
        .expect(201);
}

confab_tests::on_both_stores!(
    crate::support::on_backend;
    a_contact_s_uploads_stay_within_its_quota,
    concurrent_uploads_never_pass_the_quota,
    a_contact_has_a_few_uploads_under_way_at_once,
    a_trickled_upload_is_cut_and_a_slow_one_is_not,
    no_upload_is_taken_below_the_disk_floor,
);

mod defaults {
    confab_tests::on_both_stores!(
        crate::support::on_server;
        thousands_of_part_headers_are_a_bad_request,
    );
    use super::thousands_of_part_headers_are_a_bad_request;
}
