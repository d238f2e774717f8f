//! The writers' turn: who of this process may write to the SQLite file.
//!
//! Held by a batch of the group commit, by the migrations, by the
//! checkpoint thread for the one pass that lets the WAL start over
//! (`checkpoint`), and by the search indexer for each of its batches
//! (`search_index`). A plain mutex let that thread starve: under a steady
//! stream of sends the group commit's next leader takes the lock again
//! as soon as the last one lets it go, and a thread woken on a busy core
//! comes too late, every time. In one CI run the thread never got its
//! turn in 2 s and 9,348 commits, so the WAL never started over; in the
//! server that leaves the WAL to the commit backstop, which copies all of
//! it while every writer waits. So the checkpoint thread asks
//! [`WriterTurn::take_first`]: once it asks, no writer takes the turn
//! before it; at most the one writing now finishes first.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// One holder at a time; a caller of [`WriterTurn::take_first`] goes
/// before every [`WriterTurn::take`] still waiting or yet to come.
#[derive(Debug, Default)]
pub(crate) struct WriterTurn {
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    held: bool,
    /// Callers of `take_first` waiting.
    first: usize,
    /// Callers of either waiting (no wake-up is sent when none is).
    waiting: usize,
}

/// The turn, given back when dropped (a panic included: the turn guards
/// no data).
#[derive(Debug)]
pub(crate) struct Held<'a>(&'a WriterTurn);

impl WriterTurn {
    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the state is locked; should anything, the
        // counts are still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait_while(&self, mut state: MutexGuard<'_, State>, busy: fn(&State) -> bool) -> Held<'_> {
        state.waiting += 1;
        while busy(&state) {
            state = self
                .freed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.waiting -= 1;
        state.held = true;
        Held(self)
    }

    /// A writer's turn: after the holder, and after every caller of
    /// [`WriterTurn::take_first`] waiting.
    pub(crate) fn take(&self) -> Held<'_> {
        let state = self.state();
        self.wait_while(state, |s| s.held || s.first > 0)
    }

    /// The turn as soon as its holder lets it go, before any writer.
    pub(crate) fn take_first(&self) -> Held<'_> {
        let mut state = self.state();
        state.first += 1;
        let held = self.wait_while(state, |s| s.held);
        self.state().first -= 1;
        held
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.held = false;
        let anyone = state.waiting > 0;
        drop(state);
        if anyone {
            // Every waiter rechecks: a writer woken while a first caller
            // waits goes back to sleep.
            self.0.freed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    fn until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// A writer already waiting when the checkpoint thread asks, and the
    /// holder itself asking again at once, both go after it.
    #[test]
    fn the_first_caller_goes_before_writers_waiting_and_to_come() {
        let turn = Arc::new(WriterTurn::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = turn.take();
        let spawn = |name: &'static str, first: bool| {
            let (turn, order) = (turn.clone(), order.clone());
            thread::spawn(move || {
                let _held = if first {
                    turn.take_first()
                } else {
                    turn.take()
                };
                order.lock().expect("order").push(name);
            })
        };
        let writer = spawn("writer", false);
        until("the writer to wait", || turn.state().waiting == 1);
        let checkpoint = spawn("checkpoint", true);
        until("the checkpoint to wait", || turn.state().first == 1);
        drop(held);
        // The holder's next turn, asked for at once.
        let again = turn.take();
        order.lock().expect("order").push("holder again");
        drop(again);
        checkpoint.join().expect("checkpoint");
        writer.join().expect("writer");
        let order = order.lock().expect("order").clone();
        assert_eq!(order[0], "checkpoint", "{order:?}");
        assert_eq!(order.len(), 3);
        let state = turn.state();
        assert!(!state.held && state.first == 0 && state.waiting == 0);
    }
}
