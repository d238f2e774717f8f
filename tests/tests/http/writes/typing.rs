//! Typing reaches each listener at most once per member and conversation
//! every 2 s, whatever the sequence: 200 alternating starts and stops (a
//! stop used to reset the 2 s rule, so each became a frame) reach each
//! listener as a few frames, and the last word, a stop, still arrives, so
//! nobody is left showing "typing".

use std::time::{Duration, Instant};

use confab_server::startup::RateLimits;
use confab_tests::db::Backend;
use confab_tests::http::{TestApp, User};

use crate::events::{Frame, Sse};
use crate::support::{group_conversation, new_group};

/// What a listener heard: (state, when it arrived).
async fn heard_until_quiet(sse: &mut Sse, quiet: Duration) -> Vec<(String, Instant)> {
    let mut frames = Vec::new();
    while let Some(frame) = sse.frame(quiet).await {
        if let Frame::Typing(news) = frame {
            frames.push((
                news["state"].as_str().expect("state").to_owned(),
                Instant::now(),
            ));
        }
    }
    frames
}

async fn typing(app: &TestApp, who: &User, conv: &str, state: &str) {
    app.post(
        who,
        &format!("/v1/conversations/{conv}/typing"),
        &[("state", state)],
    )
    .await
    .expect(204);
}

async fn alternating_starts_and_stops_reach_each_listener_a_few_times(backend: Backend) {
    // The per-contact limit off: the 200 requests are the test.
    let app = TestApp::spawn_with(
        backend,
        RateLimits {
            per_contact: None,
            anonymous: None,
            ..RateLimits::default()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let mut listeners = Vec::new();
    for n in 0..4 {
        listeners.push(app.user(&format!("listener{n}")).await);
    }
    let all: Vec<&User> = listeners.iter().collect();
    let group = new_group(&app, &alice, "typing", &all).await;
    let conv = group_conversation(&app, &alice, &group).await;
    // Each listener's stream read as frames come, each in a task of its
    // own, so that when one arrived is when it is read.
    let mut readers = Vec::new();
    for l in &listeners {
        let mut sse = Sse::open(&app.base_url, &l.token, "/v1/events", &[]).await;
        readers.push(tokio::spawn(async move {
            heard_until_quiet(&mut sse, Duration::from_secs(4)).await
        }));
    }

    let began = Instant::now();
    for n in 0..200 {
        typing(
            &app,
            &alice,
            &conv,
            if n % 2 == 0 { "start" } else { "stop" },
        )
        .await;
    }
    let ended = Instant::now();
    let took = ended - began;
    // At most one frame per 2 s while it lasted, and the stop after it.
    let bound = (took.as_secs_f64() / 2.0).ceil() as usize + 2;
    for (reader, who) in readers.into_iter().zip(&listeners) {
        let frames = reader.await.expect("the reader");
        assert!(
            !frames.is_empty() && frames.len() <= bound,
            "{} heard {} typing frames of 200 requests in {took:?} (at most {bound}): {:?}",
            who.username,
            frames.len(),
            frames.iter().map(|f| f.0.as_str()).collect::<Vec<_>>()
        );
        // The last word was a stop: it arrives, within its turn (2 s after
        // the last frame told) and a little.
        let (state, at) = frames.last().expect("a frame");
        assert_eq!(state, "stop", "{} is left showing typing", who.username);
        assert!(
            at.saturating_duration_since(ended) < Duration::from_millis(2_600),
            "the stop came {:?} after the last request",
            at.saturating_duration_since(ended)
        );
        // Frames are at least about 2 s apart.
        for pair in frames.windows(2) {
            let gap = pair[1].1 - pair[0].1;
            assert!(gap > Duration::from_millis(1_500), "{gap:?} apart");
        }
    }
}

confab_tests::on_both_stores!(
    crate::support::on_backend;
    alternating_starts_and_stops_reach_each_listener_a_few_times,
);
