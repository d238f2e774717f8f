//! An upload retried with its `Idempotency-Key`: the retry of the same
//! upload (same parts, same bytes) gets the first answer again and stores
//! nothing (no second file, no second count in the quota, also when the
//! first filled it); the key sent with other bytes or another name is 422.
//! Over real HTTP on both stores.

use confab_service::UploadLimits;
use confab_tests::db::Backend;
use confab_tests::http::{multipart, Resp, TestApp, User};
use reqwest::Method;

use crate::support::data_ids;

/// Uploads `bytes` as `filename`, with `key` as its `Idempotency-Key`.
async fn upload_with_key(
    app: &TestApp,
    user: &User,
    key: &str,
    filename: &str,
    bytes: &[u8],
) -> Resp {
    let (content_type, body) = multipart(&[(
        "file",
        Some(filename),
        Some("application/octet-stream"),
        bytes,
    )]);
    app.send(
        Method::POST,
        "/v1/attachments",
        Some(&user.token),
        Some((&content_type, body)),
        &[("Idempotency-Key", key)],
    )
    .await
}

async fn a_retried_upload_is_replayed_and_stored_once(backend: Backend) {
    // Room for one file of 60,000 bytes, not two.
    let limits = UploadLimits {
        quota_bytes: Some(100_000),
        per_contact: 4,
        min_free_bytes: 0,
    };
    let app = TestApp::spawn_with_service(backend, move |s| s.with_upload_limits(limits)).await;
    let alice = app.user("alice").await;
    let bytes = vec![7u8; 60_000];
    let first = upload_with_key(&app, &alice, "photo-1", "a.bin", &bytes).await;
    let made = first.expect(201).clone();
    assert_eq!(first.header("idempotent-replayed"), None);
    let stored = || async { app.service.stored_files().await.expect("stored") };
    assert_eq!(stored().await.bytes, 60_000);

    // The retry: the first answer again, byte for byte; its quota's room
    // (40,000 left) does not refuse it, and nothing more is stored.
    for _ in 0..2 {
        let retry = upload_with_key(&app, &alice, "photo-1", "a.bin", &bytes).await;
        assert_eq!(retry.status.as_u16(), 201, "{}", retry.raw);
        assert_eq!(retry.header("idempotent-replayed"), Some("true"));
        assert_eq!(retry.raw, first.raw);
        assert_eq!(retry.header("location"), first.header("location"));
    }
    let use_now = stored().await;
    assert_eq!((use_now.bytes, use_now.files), (60_000, 1));
    if app.files.dir.is_some() {
        assert_eq!(app.stored_files().len(), 1, "{:?}", app.stored_files());
    }
    let listed = app.get(&alice, "/v1/attachments").await;
    assert_eq!(
        data_ids(listed.expect(200)),
        [made["id"].as_str().expect("id")]
    );

    // The key with other bytes, or another name: another request.
    let mut other = bytes.clone();
    other[59_999] = 8;
    for (filename, bytes) in [("a.bin", &other), ("b.bin", &bytes)] {
        upload_with_key(&app, &alice, "photo-1", filename, bytes)
            .await
            .expect_error(422, "idempotency_key_reused", Some("Idempotency-Key"));
    }
    let use_now = stored().await;
    assert_eq!((use_now.bytes, use_now.files), (60_000, 1));
    if app.files.dir.is_some() {
        assert_eq!(app.stored_files().len(), 1, "{:?}", app.stored_files());
    }

    // The quota still holds for new uploads, with a key or without.
    upload_with_key(&app, &alice, "photo-2", "c.bin", &bytes)
        .await
        .expect_error(413, "storage_quota", Some("file"));
    app.upload(&alice, "c.bin", &bytes)
        .await
        .expect_error(413, "storage_quota", Some("file"));
    // A quota refusal frees its key: after room is made, its retry runs.
    let id = made["id"].as_str().expect("id");
    app.delete(&alice, &format!("/v1/attachments/{id}"))
        .await
        .expect(204);
    let later = upload_with_key(&app, &alice, "photo-2", "c.bin", &bytes).await;
    later.expect(201);
    assert_eq!(later.header("idempotent-replayed"), None);
    assert_eq!(stored().await.bytes, 60_000);
}

/// A retry of a refused upload (a bad name, decided by the request
/// itself) gets the same refusal; a key is the caller's own.
async fn an_upload_s_key_is_its_caller_s(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let a = upload_with_key(&app, &alice, "same key", "a.txt", b"alice").await;
    let b = upload_with_key(&app, &bob, "same key", "b.txt", b"bob").await;
    let (a, b) = (a.expect(201).clone(), b.expect(201).clone());
    assert_ne!(a["id"], b["id"]);
    assert_eq!(b["filename"], "b.txt");
    // A misshapen key is refused before the body is read.
    upload_with_key(&app, &alice, "", "a.txt", b"alice")
        .await
        .expect_error(400, "parameter_invalid", Some("Idempotency-Key"));
}

confab_tests::on_both_stores!(
    crate::support::on_backend;
    a_retried_upload_is_replayed_and_stored_once,
);

mod defaults {
    confab_tests::on_both_stores!(
        crate::support::on_server;
        an_upload_s_key_is_its_caller_s,
    );
    use super::an_upload_s_key_is_its_caller_s;
}
