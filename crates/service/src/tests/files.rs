//! Files: an upload's order of writes (its deletion scheduled before any
//! byte is stored), its limit and type, who may rename and delete, and the
//! sweeper's order (row, file, deletion) and its stop at a failure.

use std::sync::{Arc, Mutex};

use confab_domain::{
    Attachment, AttachmentId, ContentDigest, ConversationId, EventType, FileSource, FileType,
    Filename, MessageId, Timestamp,
};
use confab_ports::{
    MockAttachmentStore, MockFileStorage, MockFileWriter, StorageUse, StoreError, Uploaded,
};
use mockall::predicate::eq;
use uuid::Uuid;

use super::{contact, mocked_ports, NOW};
use crate::{Confab, Ports, ServiceError, UploadLimits};

/// The service over `attachments` and `files`, uploads at most `max`
/// bytes, ids counting up from 1; no quota nor disk floor (see
/// [`limited`]).
fn service(attachments: MockAttachmentStore, files: MockFileStorage, max: u64) -> Confab {
    limited(
        attachments,
        files,
        max,
        UploadLimits {
            quota_bytes: None,
            per_contact: 4,
            min_free_bytes: 0,
        },
    )
}

/// [`service`] with these upload limits.
fn limited(
    attachments: MockAttachmentStore,
    files: MockFileStorage,
    max: u64,
    limits: UploadLimits,
) -> Confab {
    let mut ids = confab_ports::MockIdGenerator::new();
    let next = Mutex::new(0_u128);
    ids.expect_new_id().returning(move || {
        let mut n = next.lock().expect("ids");
        *n += 1;
        Uuid::from_u128(*n)
    });
    let mut signal = confab_ports::MockEventSignal::new();
    signal.expect_committed().returning(|| ());
    Confab::new(Ports {
        attachments: Arc::new(attachments),
        ids: Arc::new(ids),
        signal: Arc::new(signal),
        ..mocked_ports(NOW)
    })
    .with_files(Arc::new(files), max)
    .with_upload_limits(limits)
}

fn upload_of(uploader: u128, conversation: Option<u128>) -> Attachment {
    Attachment {
        id: AttachmentId::from_uuid(Uuid::from_u128(0xF11E)),
        message_id: conversation.map(|_| MessageId::from_uuid(Uuid::from_u128(0x3E55))),
        conversation_id: conversation.map(|c| ConversationId::from_uuid(Uuid::from_u128(c))),
        uploader: confab_domain::ContactId::from_uuid(Uuid::from_u128(uploader)),
        filename: Filename::new("a.png".into()).expect("valid"),
        source: FileSource::Stored(ContentDigest::new([1; 32])),
        file_type: FileType::new("image/png".into()).expect("valid"),
        file_size: None,
        created_at: Timestamp::from_secs(NOW),
    }
}

#[tokio::test]
async fn an_upload_schedules_its_deletion_before_storing_a_byte() {
    let order = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let mut attachments = MockAttachmentStore::new();
    let o = order.clone();
    attachments
        .expect_expect_file()
        .withf(|_, due| *due == Timestamp::from_secs(NOW).plus_secs(24 * 3600))
        .times(1)
        .returning(move |_, _| {
            o.lock().expect("order").push("deletion scheduled");
            Ok(())
        });
    let o = order.clone();
    attachments
        .expect_insert_upload()
        .times(1)
        .returning(move |upload, quota, outbox, _| {
            o.lock().expect("order").push("row written");
            assert_eq!(quota, None);
            assert_eq!(upload.message_id, None);
            assert_eq!(upload.file_type.as_str(), "image/png");
            assert_eq!(upload.file_size.map(|s| s.bytes()), Some(12));
            assert_eq!(outbox.events.len(), 1);
            assert_eq!(outbox.events[0].kind, EventType::AttachmentCreated);
            Ok(Uploaded::Stored(upload))
        });
    let mut files = MockFileStorage::new();
    let o = order.clone();
    files.expect_create().times(1).returning(move |_| {
        o.lock().expect("order").push("writer opened");
        let mut writer = MockFileWriter::new();
        let o2 = o.clone();
        writer.expect_write().returning(move |_| {
            o2.lock().expect("order").push("bytes");
            Ok(())
        });
        let o3 = o.clone();
        writer.expect_finish().times(1).returning(move || {
            o3.lock().expect("order").push("file whole");
            Ok(())
        });
        Ok(Box::new(writer))
    });
    let s = service(attachments, files, 1000);
    let alice = contact(1, "alice");
    let mut upload = s.begin_upload(&alice).await.expect("begin");
    upload
        .write(b"\x89PNG\r\n\x1a\n".to_vec())
        .await
        .expect("write");
    upload.write(b"rest".to_vec()).await.expect("write");
    let made = upload
        .finish(Filename::new("cat.png".into()).expect("valid"))
        .await
        .expect("finish");
    assert_eq!(made.uploader, alice.id());
    assert_eq!(
        *order.lock().expect("order"),
        [
            "deletion scheduled",
            "writer opened",
            "bytes",
            "bytes",
            "file whole",
            "row written"
        ]
    );
}

#[tokio::test]
async fn an_upload_past_the_limit_is_refused_and_never_recorded() {
    let mut attachments = MockAttachmentStore::new();
    attachments.expect_expect_file().returning(|_, _| Ok(()));
    attachments.expect_insert_upload().never();
    let mut files = MockFileStorage::new();
    files.expect_create().returning(|_| {
        let mut writer = MockFileWriter::new();
        writer.expect_write().times(1).returning(|_| Ok(()));
        writer.expect_abort().times(1).returning(|| Ok(()));
        Ok(Box::new(writer))
    });
    let s = service(attachments, files, 10);
    let mut upload = s.begin_upload(&contact(1, "alice")).await.expect("begin");
    upload.write(vec![0; 10]).await.expect("at the limit");
    assert!(matches!(
        upload.write(vec![0; 1]).await,
        Err(ServiceError::TooLarge { max: 10 })
    ));
    upload.abort().await;
}

#[tokio::test]
async fn a_name_with_a_backslash_gives_the_upload_up() {
    let mut attachments = MockAttachmentStore::new();
    attachments.expect_expect_file().returning(|_, _| Ok(()));
    attachments.expect_insert_upload().never();
    let mut files = MockFileStorage::new();
    files.expect_create().returning(|_| {
        let mut writer = MockFileWriter::new();
        writer.expect_finish().never();
        writer.expect_abort().times(1).returning(|| Ok(()));
        Ok(Box::new(writer))
    });
    let s = service(attachments, files, 10);
    let upload = s.begin_upload(&contact(1, "alice")).await.expect("begin");
    let e = upload
        .finish(Filename::new("a\\b".into()).expect("a by-URL name may"))
        .await
        .expect_err("refused");
    assert!(matches!(
        e,
        ServiceError::Invalid {
            field: confab_domain::Field::Filename,
            ..
        }
    ));
}

#[tokio::test]
async fn only_the_uploader_renames_or_deletes() {
    let bob = contact(2, "bob");
    let mut attachments = MockAttachmentStore::new();
    // Bob sees Alice's attachment (a member of its conversation)...
    attachments
        .expect_attachment_for()
        .returning(|_, _| Ok(Some(upload_of(1, Some(9)))));
    // ...and changes nothing.
    attachments.expect_rename_attachment().never();
    attachments.expect_delete_attachment().never();
    let s = service(attachments, MockFileStorage::new(), 10);
    let id = upload_of(1, Some(9)).id;
    assert!(matches!(
        s.rename_attachment(&bob, id, Filename::new("b".into()).expect("valid"))
            .await,
        Err(ServiceError::Forbidden(_))
    ));
    assert!(matches!(
        s.delete_attachment(&bob, id).await,
        Err(ServiceError::Forbidden(_))
    ));
}

/// The service over `attachments`, with alice (1) a member of
/// conversation 9 when `member`, and a block in it when `blocked`.
fn renaming(attachments: MockAttachmentStore, member: bool, blocked: bool) -> Confab {
    let mut depth = confab_ports::MockDepthStore::new();
    depth
        .expect_members_among()
        .returning(move |_, asked| Ok(if member { asked } else { vec![] }));
    let mut moderation = confab_ports::MockModerationStore::new();
    moderation
        .expect_conversation_blocker()
        .returning(move |_, _| Ok(blocked.then(|| contact(2, "bob").id())));
    Confab::new(Ports {
        attachments: Arc::new(attachments),
        depth: Arc::new(depth),
        moderation: Arc::new(moderation),
        ..mocked_ports(NOW)
    })
}

#[tokio::test]
async fn an_uploader_out_of_the_conversation_or_blocked_renames_nothing() {
    let alice = contact(1, "alice");
    let id = upload_of(1, Some(9)).id;
    let new_name = || Filename::new("b.png".into()).expect("valid");
    for (member, blocked) in [(false, false), (true, true)] {
        let mut attachments = MockAttachmentStore::new();
        // Her own upload: she still sees it...
        attachments
            .expect_attachment_for()
            .returning(|_, _| Ok(Some(upload_of(1, Some(9)))));
        // ...but its new name would reach the conversation: never written.
        attachments.expect_rename_attachment().never();
        let s = renaming(attachments, member, blocked);
        match s.rename_attachment(&alice, id, new_name()).await {
            Err(ServiceError::Forbidden(_)) if !member => {}
            Err(ServiceError::Blocked {
                field: None,
                by_caller: false,
            }) if blocked => {}
            other => panic!("member {member}, blocked {blocked}: {other:?}"),
        }
    }
    // The same name: nothing to tell, nothing asked.
    let mut attachments = MockAttachmentStore::new();
    attachments
        .expect_attachment_for()
        .returning(|_, _| Ok(Some(upload_of(1, Some(9)))));
    attachments.expect_rename_attachment().never();
    let s = renaming(attachments, false, true);
    let same = s
        .rename_attachment(&alice, id, Filename::new("a.png".into()).expect("valid"))
        .await
        .expect("unchanged");
    assert_eq!(same, upload_of(1, Some(9)));
}

#[tokio::test]
async fn the_sweeper_takes_the_row_then_the_file_then_the_deletion() {
    let order = Arc::new(Mutex::new(Vec::<String>::new()));
    let expired = upload_of(1, None);
    let gone_row = AttachmentId::from_uuid(Uuid::from_u128(0x60E));
    let mut attachments = MockAttachmentStore::new();
    let due = vec![expired.id, gone_row];
    attachments
        .expect_due_file_deletions()
        .times(1)
        .return_once(move |_, _| Ok(due));
    let e = expired.clone();
    attachments
        .expect_attachment()
        .returning(move |id| Ok((id == e.id).then(|| e.clone())));
    let o = order.clone();
    attachments
        .expect_release_file()
        .returning(move |id, outbox| {
            // The expired upload's uploader hears of it; a row already
            // gone makes no event.
            let kinds: Vec<EventType> = outbox.events.iter().map(|e| e.kind).collect();
            o.lock()
                .expect("order")
                .push(format!("release {id} {kinds:?}"));
            Ok(true)
        });
    let o = order.clone();
    attachments
        .expect_forget_file_deletion()
        .returning(move |id| {
            o.lock().expect("order").push(format!("forget {id}"));
            Ok(())
        });
    let mut files = MockFileStorage::new();
    let o = order.clone();
    files.expect_delete().returning(move |id| {
        o.lock().expect("order").push(format!("delete {id}"));
        Ok(())
    });
    let s = service(attachments, files, 10);
    assert_eq!(s.sweep_files().await.expect("sweep"), 2);
    let (a, b) = (expired.id, gone_row);
    assert_eq!(
        *order.lock().expect("order"),
        [
            format!("release {a} [AttachmentDeleted]"),
            format!("delete {a}"),
            format!("forget {a}"),
            format!("release {b} []"),
            format!("delete {b}"),
            format!("forget {b}"),
        ]
    );
}

#[tokio::test]
async fn a_failed_file_deletion_stays_due() {
    let mut attachments = MockAttachmentStore::new();
    let id = AttachmentId::from_uuid(Uuid::from_u128(0x60E));
    attachments
        .expect_due_file_deletions()
        .times(1)
        .return_once(move |_, _| Ok(vec![id]));
    attachments.expect_attachment().returning(|_| Ok(None));
    attachments
        .expect_release_file()
        .with(eq(id), mockall::predicate::always())
        .returning(|_, _| Ok(true));
    // The storage fails: the deletion is not forgotten.
    attachments.expect_forget_file_deletion().never();
    let mut files = MockFileStorage::new();
    files
        .expect_delete()
        .returning(|_| Err(StoreError::Unavailable("down".into())));
    let s = service(attachments, files, 10);
    assert!(matches!(
        s.sweep_files().await,
        Err(ServiceError::Unavailable(_))
    ));
}

#[tokio::test]
async fn an_upload_attached_meanwhile_keeps_its_file() {
    let mut attachments = MockAttachmentStore::new();
    let id = AttachmentId::from_uuid(Uuid::from_u128(0xF11E));
    attachments
        .expect_due_file_deletions()
        .return_once(move |_, _| Ok(vec![id]));
    attachments
        .expect_attachment()
        .returning(|_| Ok(Some(upload_of(1, None))));
    // The row was attached between the two reads: nothing to delete.
    attachments
        .expect_release_file()
        .returning(|_, _| Ok(false));
    attachments.expect_forget_file_deletion().never();
    let mut files = MockFileStorage::new();
    files.expect_delete().never();
    let s = service(attachments, files, 10);
    assert_eq!(s.sweep_files().await.expect("sweep"), 1);
}

/// A writer that takes every byte and is finished or aborted.
fn writer() -> Box<dyn confab_ports::FileWriter> {
    let mut writer = MockFileWriter::new();
    writer.expect_write().returning(|_| Ok(()));
    writer.expect_finish().returning(|| Ok(()));
    writer.expect_abort().returning(|| Ok(()));
    Box::new(writer)
}

#[tokio::test]
async fn a_contact_has_at_most_its_uploads_under_way() {
    let mut attachments = MockAttachmentStore::new();
    attachments.expect_expect_file().returning(|_, _| Ok(()));
    let mut files = MockFileStorage::new();
    files.expect_create().returning(|_| Ok(writer()));
    let limits = UploadLimits {
        quota_bytes: None,
        per_contact: 2,
        min_free_bytes: 0,
    };
    let s = limited(attachments, files, 10, limits);
    let (alice, bob) = (contact(1, "alice"), contact(2, "bob"));
    let first = s.begin_upload(&alice).await.expect("first");
    let second = s.admit_upload(&alice, None).await.expect("second");
    assert!(matches!(
        s.admit_upload(&alice, None).await,
        Err(ServiceError::TooManyUploads { max: 2 })
    ));
    // Another contact has places of its own.
    s.admit_upload(&bob, None).await.expect("bob's");
    // An upload that ends, however it ends, gives its place back.
    first.abort().await;
    let third = s
        .admit_upload(&alice, None)
        .await
        .expect("a place came back");
    drop(second);
    drop(third);
    let mut n = Vec::new();
    for _ in 0..2 {
        n.push(s.admit_upload(&alice, None).await.expect("both back"));
    }
}

#[tokio::test]
async fn the_quota_refuses_before_reading_while_writing_and_at_the_row() {
    let mut attachments = MockAttachmentStore::new();
    attachments.expect_expect_file().returning(|_, _| Ok(()));
    // Alice takes 95 of her 100 bytes; Bob 0.
    attachments.expect_storage_use().returning(|who| {
        Ok(StorageUse {
            bytes: if who == contact(1, "alice").id() {
                95
            } else {
                0
            },
            files: 1,
        })
    });
    // The row's own check (uploads finished meanwhile) has the last word.
    attachments
        .expect_insert_upload()
        .times(1)
        .returning(|_, quota, _, _| {
            assert_eq!(quota, Some(100));
            Ok(Uploaded::OverQuota { used: 97 })
        });
    let mut files = MockFileStorage::new();
    files.expect_create().returning(|_| Ok(writer()));
    // The refused file goes at once.
    files.expect_delete().times(1).returning(|_| Ok(()));
    let limits = UploadLimits {
        quota_bytes: Some(100),
        per_contact: 4,
        min_free_bytes: 0,
    };
    let s = limited(attachments, files, 1000, limits);
    let (alice, bob) = (contact(1, "alice"), contact(2, "bob"));
    let mut upload = s.begin_upload(&alice).await.expect("room for 5 more");
    upload.write(vec![0; 5]).await.expect("fits");
    assert!(matches!(
        upload.write(vec![0; 1]).await,
        Err(ServiceError::UploadQuota {
            used: 95,
            limit: 100
        })
    ));
    upload.abort().await;
    let upload = s.begin_upload(&bob).await.expect("bob");
    assert!(matches!(
        upload
            .finish(Filename::new("a.bin".into()).expect("valid"))
            .await,
        Err(ServiceError::UploadQuota {
            used: 97,
            limit: 100
        })
    ));
}

#[tokio::test]
async fn a_full_quota_or_disk_refuses_before_a_byte_is_read() {
    let mut attachments = MockAttachmentStore::new();
    attachments.expect_storage_use().returning(|_| {
        Ok(StorageUse {
            bytes: 100,
            files: 3,
        })
    });
    // Nothing is stored: only the quota and the disk's free space are read.
    let admitting_nothing = |mut attachments: MockAttachmentStore, limits| {
        attachments.expect_expect_file().never();
        let mut files = MockFileStorage::new();
        files.expect_create().never();
        files.expect_free_space().returning(|| Ok(Some(1_000)));
        limited(attachments, files, 10, limits)
    };
    let full = admitting_nothing(
        attachments,
        UploadLimits {
            quota_bytes: Some(100),
            per_contact: 4,
            min_free_bytes: 0,
        },
    );
    assert!(matches!(
        full.admit_upload(&contact(1, "alice"), None).await,
        Err(ServiceError::UploadQuota {
            used: 100,
            limit: 100
        })
    ));
    let low = admitting_nothing(
        MockAttachmentStore::new(),
        UploadLimits {
            quota_bytes: None,
            per_contact: 4,
            min_free_bytes: 900,
        },
    );
    // 1,000 free less a declared 200 would leave less than the floor of 900.
    assert!(matches!(
        low.admit_upload(&contact(1, "alice"), Some(200)).await,
        Err(ServiceError::StorageFull {
            free: 1_000,
            floor: 900
        })
    ));
    low.admit_upload(&contact(1, "alice"), Some(50))
        .await
        .expect("50 more keeps the floor");
}
