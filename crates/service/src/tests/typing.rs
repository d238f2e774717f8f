//! Typing: only members are heard, starts too close together and stops
//! without a start add nothing, a send ends a start, and the board learns
//! the other processes' news.
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use confab_domain::{Typing, TypingState};
use confab_ports::{MockClock, MockTypingRelay};

use crate::ServiceError;

use super::*;

/// A clock the test moves, in microseconds.
fn clock_at(now: &Arc<AtomicI64>) -> MockClock {
    let now = now.clone();
    let mut clock = MockClock::new();
    clock
        .expect_now()
        .returning(move || Timestamp::from_micros(now.load(Ordering::SeqCst)));
    clock
}

/// What the relay was handed.
type Published = Arc<Mutex<Vec<Typing>>>;

fn recording(published: &Published) -> MockTypingRelay {
    let published = published.clone();
    let mut relay = MockTypingRelay::new();
    relay
        .expect_publish()
        .returning(move |t| published.lock().expect("lock").push(t));
    relay
}

/// The service with some members of `conv_id()` and no blocks, its clock
/// (`now`, from [`NOW`]) moved by the test, its typing news recorded in
/// `published`.
struct Typists {
    now: Arc<AtomicI64>,
    published: Published,
    s: Confab,
}

impl Typists {
    fn of(members: Vec<ContactId>) -> Self {
        let now = Arc::new(AtomicI64::new(secs(NOW as f64)));
        let published = Published::default();
        let s = service_on(members, &now, recording(&published), no_blocks());
        Self { now, published, s }
    }
}

/// `who` says `state` in `conv_id()`, which the service takes (204).
async fn say(s: &Confab, who: &Contact, state: TypingState) {
    s.typing(who, conv_id(), state).await.expect("204");
}

/// The clock moves on by `seconds`.
fn wait(now: &AtomicI64, seconds: f64) {
    now.fetch_add(secs(seconds), Ordering::SeqCst);
}

/// The service with `members` members of `conv_id()`, its clock at `now`,
/// this relay and moderation store.
fn service_on(
    members: Vec<ContactId>,
    now: &Arc<AtomicI64>,
    relay: MockTypingRelay,
    moderation: MockModerationStore,
) -> Confab {
    let mut depth = confab_ports::MockDepthStore::new();
    depth.expect_members_among().returning(move |c, asked| {
        Ok(if c == conv_id() {
            asked.into_iter().filter(|a| members.contains(a)).collect()
        } else {
            vec![]
        })
    });
    Confab::new(Ports {
        depth: Arc::new(depth),
        moderation: Arc::new(moderation),
        clock: Arc::new(clock_at(now)),
        typing: Arc::new(relay),
        ..mocked_ports(NOW)
    })
}

fn secs(s: f64) -> i64 {
    (s * 1_000_000.0) as i64
}

/// What `who` was told to have started typing, as [`states`] lists it.
fn start(who: Contact) -> (ContactId, TypingState) {
    (who.id(), TypingState::Start)
}

/// What `who` was told to have stopped, as [`states`] lists it.
fn stop(who: Contact) -> (ContactId, TypingState) {
    (who.id(), TypingState::Stop)
}

fn states(published: &Published) -> Vec<(ContactId, TypingState)> {
    published
        .lock()
        .expect("lock")
        .iter()
        .map(|t| (t.contact_id(), t.state()))
        .collect()
}

#[tokio::test]
async fn a_non_member_is_not_found_and_nothing_is_published() {
    let Typists { s, published, .. } = Typists::of(vec![bob().id()]);
    for state in [TypingState::Start, TypingState::Stop] {
        match s.typing(&alice(), conv_id(), state).await {
            Err(ServiceError::NotFound { of }) => assert_eq!(of, None),
            other => panic!("expected 404, got {other:?}"),
        }
    }
    let elsewhere = ConversationId::from_uuid(Uuid::from_u128(0xE15E));
    assert!(s
        .typing(&bob(), elsewhere, TypingState::Start)
        .await
        .is_err());
    assert!(states(&published).is_empty());
}

#[tokio::test]
async fn starts_closer_than_two_seconds_are_dropped() {
    let Typists { now, published, s } = Typists::of(vec![alice().id(), bob().id()]);
    say(&s, &alice(), TypingState::Start).await;
    wait(&now, 1.999);
    say(&s, &alice(), TypingState::Start).await;
    // Another contact is not held back by alice's start.
    say(&s, &bob(), TypingState::Start).await;
    wait(&now, 0.001);
    say(&s, &alice(), TypingState::Start).await;
    assert_eq!(
        states(&published),
        vec![start(alice()), start(bob()), start(alice()),]
    );
    let first = published.lock().expect("lock")[0];
    assert_eq!(first.conversation_id(), conv_id());
    assert_eq!(first.expires_at(), Timestamp::from_secs(NOW + 8));
}

#[tokio::test]
async fn a_stop_is_news_only_while_a_start_holds() {
    let Typists { now, published, s } = Typists::of(vec![alice().id(), bob().id()]);
    say(&s, &alice(), TypingState::Stop).await;
    assert!(
        states(&published).is_empty(),
        "no start: the stop says nothing"
    );
    say(&s, &alice(), TypingState::Start).await;
    wait(&now, 2.0);
    say(&s, &alice(), TypingState::Stop).await;
    say(&s, &alice(), TypingState::Stop).await;
    // After a stop, a new start counts in its turn: 2 s after the stop.
    wait(&now, 2.0);
    say(&s, &alice(), TypingState::Start).await;
    // A start that expired needs no stop.
    wait(&now, 8.0);
    say(&s, &alice(), TypingState::Stop).await;
    assert_eq!(
        states(&published),
        vec![start(alice()), stop(alice()), start(alice()),]
    );
    assert_eq!(s.typing_next_wake(), None, "nothing waits");
}

#[tokio::test]
async fn news_sooner_than_two_seconds_waits_its_turn_and_the_last_word_is_told() {
    let Typists { now, published, s } = Typists::of(vec![alice().id(), bob().id()]);
    say(&s, &alice(), TypingState::Start).await;
    // A stop 0.1 s later waits until 2 s after the start.
    wait(&now, 0.1);
    say(&s, &alice(), TypingState::Stop).await;
    assert_eq!(states(&published), vec![start(alice())]);
    assert_eq!(
        s.typing_next_wake(),
        Some(Timestamp::from_micros(secs(NOW as f64 + 2.0)))
    );
    let max = std::time::Duration::from_secs(5);
    assert_eq!(s.typing_wait(max), std::time::Duration::from_millis(1_900));
    assert_eq!(
        s.typing_wait(std::time::Duration::from_millis(100)),
        std::time::Duration::from_millis(100)
    );
    // Too early: nothing yet.
    wait(&now, 1.8);
    s.typing_wake();
    assert_eq!(states(&published).len(), 1);
    wait(&now, 0.1);
    s.typing_wake();
    assert_eq!(states(&published), vec![start(alice()), stop(alice())]);
    let stop = published.lock().expect("lock")[1];
    assert_eq!(
        stop.expires_at(),
        Timestamp::from_micros(secs(NOW as f64 + 2.0))
    );
    assert_eq!(s.typing_next_wake(), None);
    assert_eq!(s.typing_wait(max), max, "nothing waits");
    // A start and a stop both within the next 2 s: the stop takes the
    // start back, and the others never hear either.
    wait(&now, 0.5);
    say(&s, &alice(), TypingState::Start).await;
    say(&s, &alice(), TypingState::Stop).await;
    wait(&now, 2.0);
    s.typing_wake();
    assert_eq!(states(&published).len(), 2, "{:?}", states(&published));
}

#[tokio::test]
async fn alternating_starts_and_stops_reach_the_others_once_per_two_seconds() {
    let Typists { now, published, s } = Typists::of(vec![alice().id(), bob().id()]);
    // 200 requests, 1 ms apart, start first: what used to be 200 frames.
    for n in 0..200 {
        let state = if n % 2 == 0 {
            TypingState::Start
        } else {
            TypingState::Stop
        };
        say(&s, &alice(), state).await;
        wait(&now, 0.001);
    }
    assert_eq!(states(&published), vec![start(alice())]);
    // The last word, a stop, comes in its turn: the others are not left
    // with "typing".
    now.store(secs(NOW as f64 + 2.0), Ordering::SeqCst);
    s.typing_wake();
    assert_eq!(states(&published), vec![start(alice()), stop(alice())]);
    // The same for 20 s of it, 10 ms apart: at most one frame per 2 s.
    for n in 0..2000 {
        let state = if n % 2 == 0 {
            TypingState::Start
        } else {
            TypingState::Stop
        };
        say(&s, &alice(), state).await;
        wait(&now, 0.01);
        s.typing_wake();
    }
    let frames = states(&published).len();
    assert!(frames <= 2 + 10 + 1, "{frames} frames in 20 s");
}

#[tokio::test]
async fn a_send_ends_a_start_that_holds() {
    let Typists { now, published, s } = Typists::of(vec![alice().id(), bob().id()]);
    s.typing_ended_by_send(alice().id(), conv_id());
    assert!(states(&published).is_empty());
    say(&s, &alice(), TypingState::Start).await;
    // Sent within 2 s of the start: its stop comes in its turn.
    s.typing_ended_by_send(alice().id(), conv_id());
    s.typing_ended_by_send(alice().id(), conv_id());
    assert_eq!(states(&published), vec![start(alice())]);
    wait(&now, 2.0);
    s.typing_wake();
    s.typing_ended_by_send(alice().id(), conv_id());
    assert_eq!(states(&published), vec![start(alice()), stop(alice())]);
}

#[tokio::test]
async fn a_start_soon_after_a_send_is_told_in_its_turn() {
    let Typists { now, published, s } = Typists::of(vec![alice().id(), bob().id()]);
    say(&s, &alice(), TypingState::Start).await;
    // The message ends the start on the others' screens: a start 0.5 s
    // later is news to them (before, it was taken for a renewal of the
    // first and dropped, with the stop that waited).
    wait(&now, 0.3);
    s.typing_ended_by_send(alice().id(), conv_id());
    wait(&now, 0.2);
    say(&s, &alice(), TypingState::Start).await;
    assert_eq!(states(&published), vec![start(alice())]);
    wait(&now, 1.5);
    s.typing_wake();
    assert_eq!(states(&published), vec![start(alice()), start(alice())]);
    // Without a send in between, a start within 2 s of the one told (made
    // at 0.5 s) is still a renewal that adds nothing.
    wait(&now, 0.1);
    say(&s, &alice(), TypingState::Start).await;
    wait(&now, 2.0);
    s.typing_wake();
    assert_eq!(states(&published).len(), 2);
}

#[tokio::test]
async fn typing_in_a_blocked_direct_conversation_is_refused() {
    let now = Arc::new(AtomicI64::new(secs(NOW as f64)));
    let published = Published::default();
    let mut moderation = MockModerationStore::new();
    moderation
        .expect_conversation_blocker()
        .returning(|_, _| Ok(Some(bob().id())));
    let members = vec![alice().id(), bob().id()];
    let s = service_on(members, &now, recording(&published), moderation);
    match s.typing(&alice(), conv_id(), TypingState::Start).await {
        Err(ServiceError::Blocked { .. }) => {}
        other => panic!("expected contact_blocked, got {other:?}"),
    }
    assert!(states(&published).is_empty());
    assert_eq!(s.typing_board.len(), 0, "a refused start is not held");
}

#[tokio::test]
async fn other_processes_news_holds_back_and_ends_starts_here() {
    let now = Arc::new(AtomicI64::new(secs(NOW as f64)));
    let published = Published::default();
    let elsewhere = vec![
        Typing::start(conv_id(), alice().id(), Timestamp::from_secs(NOW)),
        Typing::start(conv_id(), bob().id(), Timestamp::from_secs(NOW)),
        Typing::stop(conv_id(), bob().id(), Timestamp::from_secs(NOW)),
    ];
    let mut relay = recording(&published);
    let news = elsewhere.clone();
    relay.expect_received().return_once(move || news);
    let members = vec![alice().id(), bob().id()];
    let s = service_on(members, &now, relay, no_blocks());
    assert_eq!(s.typing_news().await, elsewhere);
    // Alice's start elsewhere holds: hers here is too soon. Bob's ended
    // elsewhere now: his start here, and alice's send (a stop), wait for
    // their turn, 2 s after what was told elsewhere.
    say(&s, &alice(), TypingState::Start).await;
    say(&s, &bob(), TypingState::Start).await;
    s.typing_ended_by_send(alice().id(), conv_id());
    assert!(states(&published).is_empty());
    wait(&now, 2.0);
    s.typing_wake();
    let mut told = states(&published);
    told.sort_by_key(|(who, _)| *who);
    assert_eq!(told, vec![stop(alice()), start(bob())]);
}

#[tokio::test]
async fn the_audience_is_the_connected_members_but_the_typist_one_read_per_conversation() {
    let carol = contact(3, "carol");
    let elsewhere = ConversationId::from_uuid(Uuid::from_u128(0xE15E));
    let mut depth = confab_ports::MockDepthStore::new();
    let members = [alice().id(), bob().id()];
    depth
        .expect_members_among()
        .with(eq(conv_id()), mockall::predicate::always())
        .times(1)
        .returning(move |_, asked| Ok(asked.into_iter().filter(|a| members.contains(a)).collect()));
    depth
        .expect_members_among()
        .with(eq(elsewhere), mockall::predicate::always())
        .times(1)
        .returning(|_, _| Ok(vec![]));
    let s = Confab::new(Ports {
        depth: Arc::new(depth),
        ..mocked_ports(NOW)
    });
    let at = Timestamp::from_secs(NOW);
    let news = vec![
        Typing::start(conv_id(), alice().id(), at),
        Typing::start(conv_id(), bob().id(), at),
        Typing::start(elsewhere, carol.id(), at),
    ];
    let heard = s
        .typing_audiences(news.clone(), vec![alice().id(), bob().id(), carol.id()])
        .await
        .expect("audiences");
    assert_eq!(
        heard,
        vec![
            (news[0], vec![bob().id()]),
            (news[1], vec![alice().id()]),
            (news[2], vec![]),
        ]
    );
}

#[test]
fn the_board_forgets_expired_starts_as_it_grows() {
    let board = crate::typing::TypingBoard::default();
    let at = Timestamp::from_secs(NOW);
    for n in 0..5000u128 {
        let who = ContactId::from_uuid(Uuid::from_u128(n + 100));
        assert!(board.say(Typing::start(conv_id(), who, at), at).is_some());
    }
    assert_eq!(board.len(), 5000, "all hold");
    let later = Timestamp::from_secs(NOW + 9);
    for n in 0..6000u128 {
        let who = ContactId::from_uuid(Uuid::from_u128(n + 100_000));
        board.say(Typing::start(conv_id(), who, later), later);
    }
    // Pruned when it reached twice what held at the last pruning: the
    // 5,000 expired starts are gone, the 6,000 that hold are kept.
    assert_eq!(board.len(), 6000);
}
