//! Attachments on their own and the stored files' scheduled deletions
//! (`AttachmentStore`, migration `files`): the same answers on both stores.

use confab_domain::{
    AddAttachment, Attachment, AttachmentId, ContentDigest, DomainError, Field, FileSize,
    FileSource, FileType, Filename, Rule,
};
use confab_ports::{
    AttachmentFilter, ClaimOutcome, ClaimRequest, Completion, KeyClaim, StorageUse, StoreError,
    StoredResponse, Uploaded,
};

use crate::support::{assert_err, at, contact, direct, new_id, new_message, no_events, page, S};

fn upload(by: &confab_domain::Contact, t: i64) -> Attachment {
    Attachment {
        id: AttachmentId::from_uuid(new_id()),
        message_id: None,
        conversation_id: None,
        uploader: by.id(),
        filename: Filename::new("cat.png".into()).expect("name"),
        source: FileSource::Stored(ContentDigest::new([9; 32])),
        file_type: FileType::new("image/png".into()).expect("type"),
        file_size: Some(FileSize::new(42).expect("size")),
        created_at: at(t),
    }
}

/// An upload stored as `POST /v1/attachments` stores it: its deletion
/// scheduled a day on, then its row.
async fn stored_upload(s: &S, by: &confab_domain::Contact, t: i64) -> Attachment {
    let u = upload(by, t);
    s.expect_file(u.id, at(t + 86_400)).await.expect("schedule");
    match s
        .insert_upload(u, None, no_events(), None)
        .await
        .expect("insert")
    {
        Uploaded::Stored(u) => u,
        other => panic!("not stored: {other:?}"),
    }
}

/// What `who`'s stored files take.
async fn used(s: &S, who: &confab_domain::Contact) -> (u64, u64) {
    let StorageUse { bytes, files } = s.storage_use(who.id()).await.expect("use");
    (bytes, files)
}

async fn due(s: &S, t: i64) -> Vec<AttachmentId> {
    s.due_file_deletions(at(t), 100).await.expect("due")
}

async fn an_upload_is_its_uploader_s_until_attached(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let u = stored_upload(&s, &alice, 2).await;
    assert_eq!(
        s.attachment_for(alice.id(), u.id).await.expect("get"),
        Some(u.clone())
    );
    assert_eq!(s.attachment_for(bob.id(), u.id).await.expect("get"), None);
    assert_eq!(s.attachment(u.id).await.expect("get"), Some(u.clone()));
    // Due a day on, not before.
    assert_eq!(due(&s, 86_000).await, vec![]);
    assert_eq!(due(&s, 86_402).await, vec![u.id]);

    // Someone else cannot attach it; its uploader can, once.
    let mut theirs = new_message(&c, &bob, "x", at(3));
    theirs.attachments = vec![AddAttachment::Upload(u.id)];
    assert_err!(
        s.append_message(theirs, no_events(), None).await,
        StoreError::Rule(DomainError::Invalid {
            field: Field::Upload(0),
            rule: Rule::NotAttachable
        })
    );
    let mut mine = new_message(&c, &alice, "look", at(4));
    mine.attachments = vec![AddAttachment::Upload(u.id)];
    let m = s
        .append_message(mine, no_events(), None)
        .await
        .expect("attach");
    assert_eq!(m.attachments().len(), 1);
    let attached = &m.attachments()[0];
    assert_eq!(attached.message_id, Some(m.id()));
    assert_eq!(attached.conversation_id, Some(c.id()));
    assert_eq!(attached.filename, u.filename);
    assert_eq!(attached.source, u.source);
    // Attached, it is no longer due, and the members see it.
    assert_eq!(due(&s, 86_402).await, vec![]);
    assert!(s
        .attachment_for(bob.id(), u.id)
        .await
        .expect("get")
        .is_some());
    assert_eq!(s.attachment_for(carol.id(), u.id).await.expect("get"), None);
    let mut again = new_message(&c, &alice, "again", at(5));
    again.attachments = vec![AddAttachment::Upload(u.id)];
    assert_err!(
        s.append_message(again, no_events(), None).await,
        StoreError::Rule(DomainError::Invalid {
            field: Field::Upload(0),
            ..
        })
    );
    // The refused send wrote nothing.
    let list = s
        .list_messages(alice.id(), Some(c.id()).into(), page(10, None))
        .await
        .expect("list");
    assert_eq!(list.items.len(), 1);
    // A member's list, narrowed by conversation or message.
    let by_conv = s
        .list_attachments(
            bob.id(),
            AttachmentFilter {
                conversation: Some(c.id()),
                message: None,
            },
            page(10, None),
        )
        .await
        .expect("list");
    assert_eq!(by_conv.items.len(), 1);
    assert_err!(
        s.list_attachments(
            carol.id(),
            AttachmentFilter {
                conversation: Some(c.id()),
                message: None,
            },
            page(10, None),
        )
        .await,
        StoreError::NotFound
    );
}

async fn every_way_a_stored_file_s_row_goes_schedules_its_deletion(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let attach = |u: &Attachment, t: i64| {
        let mut m = new_message(&c, &alice, "f", at(t));
        m.attachments = vec![AddAttachment::Upload(u.id)];
        let s = s.clone();
        async move {
            s.append_message(m, no_events(), None)
                .await
                .expect("attach")
        }
    };
    // Deleted itself.
    let own = stored_upload(&s, &alice, 2).await;
    attach(&own, 3).await;
    // With its message.
    let in_message = stored_upload(&s, &alice, 4).await;
    let m = attach(&in_message, 5).await;
    // With its conversation.
    let in_conversation = stored_upload(&s, &alice, 6).await;
    attach(&in_conversation, 7).await;
    // A by-URL attachment has no file: nothing is scheduled for it.
    let mut linked = new_message(&c, &alice, "l", at(8));
    linked.attachments = vec![crate::support::attachment(1)];
    s.append_message(linked, no_events(), None)
        .await
        .expect("link");
    assert_eq!(due(&s, 9).await, vec![]);
    // Three files of 42 bytes; by-URL attachments take nothing.
    assert_eq!(used(&s, &alice).await, (126, 3));
    assert_eq!(used(&s, &bob).await, (0, 0));

    s.delete_attachment(own.id, bob.id(), no_events())
        .await
        .expect_err("not bob's");
    s.delete_attachment(own.id, alice.id(), no_events())
        .await
        .expect("delete");
    assert_eq!(used(&s, &alice).await, (84, 2));
    s.delete_message(m.id(), alice.id(), no_events())
        .await
        .expect("delete message");
    assert_eq!(used(&s, &alice).await, (42, 1));
    s.delete_conversation(c.id(), alice.id(), no_events())
        .await
        .expect("delete conversation");
    // However its row went, a file's size is given back at once.
    assert_eq!(used(&s, &alice).await, (0, 0));
    let mut got = due(&s, 10).await;
    got.sort();
    let mut want = vec![own.id, in_message.id, in_conversation.id];
    want.sort();
    assert_eq!(got, want);
    // Released (no row any more), then forgotten.
    for id in want {
        assert!(s.release_file(id, no_events()).await.expect("release"));
        s.forget_file_deletion(id).await.expect("forget");
    }
    assert_eq!(due(&s, 10).await, vec![]);
}

async fn releasing_an_expired_upload_removes_it_unless_attached(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let expired = stored_upload(&s, &alice, 2).await;
    let kept = stored_upload(&s, &alice, 3).await;
    // `kept` is attached after the sweeper listed it as due.
    let listed = due(&s, 90_000).await;
    assert_eq!(listed.len(), 2);
    let mut m = new_message(&c, &alice, "x", at(4));
    m.attachments = vec![AddAttachment::Upload(kept.id)];
    s.append_message(m, no_events(), None)
        .await
        .expect("attach");
    assert_eq!(used(&s, &alice).await, (84, 2));
    assert!(s
        .release_file(expired.id, no_events())
        .await
        .expect("release"));
    assert_eq!(s.attachment(expired.id).await.expect("get"), None);
    assert_eq!(used(&s, &alice).await, (42, 1));
    // Attached meanwhile: its file stays, its row too.
    assert!(!s.release_file(kept.id, no_events()).await.expect("release"));
    assert!(s.attachment(kept.id).await.expect("get").is_some());
    // The key that signs links: made once, then always the same.
    let first = s
        .shared_secret("file_links", "a".repeat(64))
        .await
        .expect("secret");
    let second = s
        .shared_secret("file_links", "b".repeat(64))
        .await
        .expect("secret");
    assert_eq!(first, "a".repeat(64));
    assert_eq!(second, first);
}

async fn the_unfiltered_list_pages_through_what_the_viewer_sees(s: S) {
    use confab_domain::Cursor;
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let with_bob = direct(&s, &alice, &bob, at(1)).await;
    let elsewhere = direct(&s, &bob, &carol, at(1)).await;
    let mut seen = Vec::new();
    // Alice's own (one attached to her conversation with Bob), Bob's in
    // that conversation; Bob's and Carol's elsewhere are not hers to see.
    for t in 2..5 {
        seen.push(stored_upload(&s, &alice, t).await.id);
    }
    for t in 5..8 {
        let u = stored_upload(&s, &bob, t).await;
        let mut m = new_message(&with_bob, &bob, "b", at(t));
        m.attachments = vec![AddAttachment::Upload(u.id)];
        s.append_message(m, no_events(), None)
            .await
            .expect("attach");
        seen.push(u.id);
        let hidden = stored_upload(&s, &carol, t).await;
        let mut m = new_message(&elsewhere, &carol, "c", at(t));
        m.attachments = vec![AddAttachment::Upload(hidden.id)];
        s.append_message(m, no_events(), None)
            .await
            .expect("attach");
    }
    // Newest first (ids are time-ordered).
    seen.sort();
    seen.reverse();
    let all = AttachmentFilter::default();
    let mut walked = Vec::new();
    let mut cursor = None;
    loop {
        let p = s
            .list_attachments(alice.id(), all, page(2, cursor))
            .await
            .expect("page");
        walked.extend(p.items.iter().map(|a| a.id));
        if !p.has_more {
            break;
        }
        cursor = Some(Cursor::After(walked[walked.len() - 1]));
    }
    assert_eq!(walked, seen);
    // Back from the last: the two before it, in list order.
    let back = s
        .list_attachments(alice.id(), all, page(2, Some(Cursor::Before(seen[5]))))
        .await
        .expect("page");
    assert_eq!(
        back.items.iter().map(|a| a.id).collect::<Vec<_>>(),
        vec![seen[3], seen[4]]
    );
    assert!(back.has_more);
    // A cursor Alice cannot see is not in her list.
    let carols = s
        .list_attachments(carol.id(), all, page(10, None))
        .await
        .expect("carol's");
    let hidden = carols
        .items
        .iter()
        .find(|a| !seen.contains(&a.id))
        .expect("one of carol's");
    assert_err!(
        s.list_attachments(alice.id(), all, page(2, Some(Cursor::After(hidden.id))))
            .await,
        StoreError::CursorNotFound
    );
}

/// The quota holds in the upload's own transaction: an upload that would
/// pass it writes nothing, and uploads racing for the last room are
/// counted one after the other, never past it.
async fn uploads_are_counted_within_the_quota_even_together(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let quota = Some(100);
    let try_upload = |by: confab_domain::Contact, t: i64| {
        let s = s.clone();
        async move {
            let u = upload(&by, t);
            s.expect_file(u.id, at(t + 86_400)).await.expect("schedule");
            s.insert_upload(u, quota, no_events(), None)
                .await
                .expect("insert")
        }
    };
    assert!(matches!(
        try_upload(alice.clone(), 1).await,
        Uploaded::Stored(_)
    ));
    assert!(matches!(
        try_upload(alice.clone(), 2).await,
        Uploaded::Stored(_)
    ));
    let refused = try_upload(alice.clone(), 3).await;
    assert_eq!(refused, Uploaded::OverQuota { used: 84 });
    // Nothing of it was written.
    assert_eq!(used(&s, &alice).await, (84, 2));
    let mine = s
        .list_attachments(alice.id(), AttachmentFilter::default(), page(10, None))
        .await
        .expect("list");
    assert_eq!(mine.items.len(), 2);
    // A file larger than the whole quota, for a contact who has none yet.
    let mut big = upload(&bob, 4);
    big.file_size = Some(FileSize::new(101).expect("size"));
    assert_eq!(
        s.insert_upload(big, quota, no_events(), None)
            .await
            .expect("insert"),
        Uploaded::OverQuota { used: 0 }
    );
    // Ten at once for bob, room for two: exactly two are stored.
    let racing: Vec<_> = (0..10)
        .map(|i| tokio::spawn(try_upload(bob.clone(), 10 + i)))
        .collect();
    let mut stored = 0;
    for r in racing {
        if matches!(r.await.expect("join"), Uploaded::Stored(_)) {
            stored += 1;
        }
    }
    assert_eq!(stored, 2);
    assert_eq!(used(&s, &bob).await, (84, 2));
    assert_eq!(
        s.storage_total().await.expect("total"),
        StorageUse {
            bytes: 168,
            files: 4
        }
    );
}

/// An upload's idempotency key is completed in the upload's own
/// transaction: stored with its answer, or (over the quota, or with its
/// claim lost) neither written nor answered.
async fn an_upload_completes_its_key_with_its_row(s: S) {
    let alice = contact(&s, "alice").await;
    let claim_of = |key: &str| KeyClaim {
        contact_id: alice.id(),
        key: key.to_owned(),
        holder: crate::support::new_id(),
    };
    let claim = |c: &KeyClaim, t: i64| {
        let (s, c) = (s.clone(), c.clone());
        async move {
            s.claim_key(ClaimRequest {
                claim: c,
                fingerprint: "upload".into(),
                now: at(t),
                locked_until: at(t + 10),
                expired_before: at(t - 86_400),
                new_keys_per_day: None,
            })
            .await
            .expect("claim")
        }
    };
    let completion = |c: &KeyClaim| {
        Completion::new(c.clone(), |a: &Attachment| StoredResponse {
            code: 201,
            location: None,
            body: a.id.to_string(),
        })
    };
    let answered = |key: &'static str, since: i64| {
        let s = s.clone();
        let who = alice.id();
        async move {
            s.key_answered(who, key.into(), at(since))
                .await
                .expect("answered")
        }
    };
    let first = claim_of("u1");
    assert_eq!(claim(&first, 1).await, ClaimOutcome::Claimed);
    assert!(!answered("u1", 0).await, "claimed, not answered yet");
    let u = upload(&alice, 1);
    s.expect_file(u.id, at(86_401)).await.expect("schedule");
    let stored = s
        .insert_upload(u.clone(), Some(100), no_events(), Some(completion(&first)))
        .await
        .expect("insert");
    assert_eq!(stored, Uploaded::Stored(u.clone()));
    assert!(answered("u1", 0).await);
    assert!(!answered("u1", 2).await, "answered before `since`");
    assert!(!answered("u2", 0).await, "never claimed");
    match claim(&claim_of("u1"), 3).await {
        ClaimOutcome::Completed {
            same_request: true,
            response,
        } => assert_eq!(response.body, u.id.to_string()),
        other => panic!("not replayed: {other:?}"),
    }
    // Over the quota: nothing written, the key left unanswered.
    let over = claim_of("u3");
    assert_eq!(claim(&over, 4).await, ClaimOutcome::Claimed);
    let mut big = upload(&alice, 4);
    big.file_size = Some(FileSize::new(60).expect("size"));
    assert_eq!(
        s.insert_upload(big, Some(100), no_events(), Some(completion(&over)))
            .await
            .expect("insert"),
        Uploaded::OverQuota { used: 42 }
    );
    assert!(!answered("u3", 0).await);
    // A claim lost meanwhile: the upload's row is not written either.
    let lost = claim_of("u4");
    assert_eq!(claim(&lost, 5).await, ClaimOutcome::Claimed);
    let taken_over = KeyClaim {
        holder: crate::support::new_id(),
        ..lost.clone()
    };
    assert_err!(
        s.insert_upload(
            upload(&alice, 5),
            None,
            no_events(),
            Some(completion(&taken_over))
        )
        .await,
        StoreError::ClaimLost
    );
    assert_eq!(used(&s, &alice).await, (42, 1));
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    an_upload_completes_its_key_with_its_row,
    uploads_are_counted_within_the_quota_even_together,
    the_unfiltered_list_pages_through_what_the_viewer_sees,
    an_upload_is_its_uploader_s_until_attached,
    every_way_a_stored_file_s_row_goes_schedules_its_deletion,
    releasing_an_expired_upload_removes_it_unless_attached,
);
