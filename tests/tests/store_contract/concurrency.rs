//! Concurrent writers into one conversation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use confab_domain::{Cursor, MessageId};

use crate::support::no_events;
use crate::support::{at, at_us, contact, direct, msg_ids, new_message, page, S};

async fn concurrent_writers_into_one_conversation(s: S) {
    const WRITERS: usize = 16;
    const MESSAGES: usize = 200;
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();

    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (s, next, c) = (s.clone(), next.clone(), c.clone());
        let sender = if w % 2 == 0 {
            alice.clone()
        } else {
            bob.clone()
        };
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= MESSAGES {
                    break mine;
                }
                // Three messages share each microsecond: ties go by id.
                let created = at_us(10, i64::try_from(n / 3).expect("small"));
                let m = s
                    .append_message(
                        new_message(&c, &sender, &format!("message {n}"), created),
                        no_events(),
                        None,
                    )
                    .await
                    .unwrap_or_else(|e| panic!("writer {w}, message {n}: {e}"));
                mine.push((m.created_at(), m.id()));
            }
        }));
    }
    let mut expected = Vec::new();
    for t in tasks {
        expected.extend(t.await.expect("writer"));
    }
    assert_eq!(expected.len(), MESSAGES);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    expected.sort_by(|a, b| b.cmp(a));
    let expected: Vec<MessageId> = expected.into_iter().map(|(_, id)| id).collect();

    // Forward, page by page: each message exactly once, in order.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let p = s
            .list_messages(bob.id(), Some(c.id()).into(), page(9, cursor))
            .await
            .expect("page");
        seen.extend(msg_ids(&p));
        if !p.has_more {
            break;
        }
        cursor = seen.last().copied().map(Cursor::After);
    }
    assert_eq!(seen, expected);

    // Backward from the oldest, through the list of all conversations.
    let oldest = *expected.last().expect("messages");
    let mut seen = vec![oldest];
    loop {
        let first = seen[0];
        let p = s
            .list_messages(
                alice.id(),
                None.into(),
                page(7, Some(Cursor::Before(first))),
            )
            .await
            .expect("page");
        let mut ids = msg_ids(&p);
        ids.extend(seen);
        seen = ids;
        if !p.has_more {
            break;
        }
    }
    assert_eq!(seen, expected);

    let v = s
        .conversation_for(alice.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(
        v.conversation.last_active_at(),
        Some(at_us(10, i64::try_from((MESSAGES - 1) / 3).expect("small")))
    );
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    concurrent_writers_into_one_conversation,
);
