//! Typing (API.md section 16): a member says they are typing; the other
//! members connected now hear it, through each server process's hub.
//!
//! Nothing is stored. Each process keeps a board of the starts that still
//! hold, its own and those the other processes relayed, so that every
//! process drops a start made too soon after the last (whichever process
//! took it), turns a stop or a send into news only when a start holds,
//! and forgets a start once it expires. The board holds at most the starts
//! of the last [`TYPING_EXPIRES_SECS`], and is pruned as it grows.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use confab_domain::{Contact, ContactId, ConversationId, Timestamp, Typing, TypingState};

use crate::{Confab, ServiceError};

/// Starts the board holds before its first pruning.
const PRUNE_FROM: usize = 1024;

/// The starts that still hold, by conversation and contact.
#[derive(Debug)]
pub(crate) struct TypingBoard {
    state: Mutex<Board>,
}

#[derive(Debug)]
struct Board {
    held: HashMap<(ConversationId, ContactId), Typing>,
    /// The size at which expired starts are dropped next.
    prune_at: usize,
}

impl Default for TypingBoard {
    fn default() -> Self {
        Self {
            state: Mutex::new(Board {
                held: HashMap::new(),
                prune_at: PRUNE_FROM,
            }),
        }
    }
}

impl TypingBoard {
    fn lock(&self) -> MutexGuard<'_, Board> {
        // Each change is complete before the guard drops.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `start` (made at `now`) unless a start of the same contact
    /// in the same conversation was made too recently: whether it counts.
    pub(crate) fn start(&self, start: Typing, now: Timestamp) -> bool {
        let key = (start.conversation_id(), start.contact_id());
        let mut board = self.lock();
        if board
            .held
            .get(&key)
            .is_some_and(|held| held.renewed_too_soon_at(now))
        {
            return false;
        }
        board.held.insert(key, start);
        board.prune(now);
        true
    }

    /// Forgets the start of `contact` in `conversation`: whether one held
    /// at `now`.
    fn end(&self, conversation: ConversationId, contact: ContactId, now: Timestamp) -> bool {
        self.lock()
            .held
            .remove(&(conversation, contact))
            .is_some_and(|held| held.holds_at(now))
    }

    /// Another process's news.
    fn record(&self, news: Typing, now: Timestamp) {
        let key = (news.conversation_id(), news.contact_id());
        let mut board = self.lock();
        match news.state() {
            TypingState::Start if news.holds_at(now) => {
                board.held.insert(key, news);
                board.prune(now);
            }
            TypingState::Start => {}
            TypingState::Stop => {
                board.held.remove(&key);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().held.len()
    }
}

impl Board {
    /// Drops the expired starts once the board has grown to `prune_at`;
    /// the next pruning waits until it holds twice what is left (at least
    /// [`PRUNE_FROM`]), so pruning costs O(1) per start on average.
    fn prune(&mut self, now: Timestamp) {
        if self.held.len() < self.prune_at {
            return;
        }
        self.held.retain(|_, held| held.holds_at(now));
        self.prune_at = (self.held.len() * 2).max(PRUNE_FROM);
    }
}

impl Confab {
    /// `caller` started or stopped typing in `conversation`: the other
    /// members connected now hear it, unless it adds nothing (a start too
    /// soon after the last, a stop with no start holding).
    ///
    /// # Errors
    ///
    /// `NotFound` when the caller is not a member of the conversation (or
    /// it does not exist); the `contact_blocked` refusal of a send in a
    /// direct conversation whose two members are in a block.
    pub async fn typing(
        &self,
        caller: &Contact,
        conversation: ConversationId,
        state: TypingState,
    ) -> Result<(), ServiceError> {
        let members = self
            .ports
            .depth
            .members_among(conversation, vec![caller.id()])
            .await?;
        // The conversation is the path's: no parameter to name.
        if !members.contains(&caller.id()) {
            return Err(ServiceError::not_found());
        }
        let now = self.now();
        let news = match state {
            TypingState::Start => {
                let start = Typing::start(conversation, caller.id(), now);
                if !self.typing_board.start(start, now) {
                    return Ok(());
                }
                start
            }
            TypingState::Stop => {
                if !self.typing_board.end(conversation, caller.id(), now) {
                    return Ok(());
                }
                Typing::stop(conversation, caller.id(), now)
            }
        };
        if let Some(blocked) = self
            .conversation_blocked(caller, conversation, None)
            .await?
        {
            self.typing_board.end(conversation, caller.id(), now);
            return Err(blocked);
        }
        self.ports.typing.publish(news);
        Ok(())
    }

    /// After `sender` sent a message in `conversation`: a start of theirs
    /// that still holds ends (the other members hear a stop).
    pub(crate) fn typing_ended_by_send(&self, sender: ContactId, conversation: ConversationId) {
        let now = self.now();
        if self.typing_board.end(conversation, sender, now) {
            self.ports
                .typing
                .publish(Typing::stop(conversation, sender, now));
        }
    }

    /// The typing news of every process since the last call (at least
    /// one), for the event hub: the board learns the other processes'
    /// starts and stops from it.
    pub async fn typing_news(&self) -> Vec<Typing> {
        let news = self.ports.typing.received().await;
        let now = self.now();
        for n in &news {
            self.typing_board.record(*n, now);
        }
        news
    }

    /// Who hears each piece of `news` among `connected` (the contacts
    /// with a stream on this process): the members of its conversation
    /// now, other than the one typing. One statement per conversation in
    /// `news`, bounded by `connected`, never by the conversation's size.
    pub async fn typing_audiences(
        &self,
        news: Vec<Typing>,
        connected: Vec<ContactId>,
    ) -> Result<Vec<(Typing, Vec<ContactId>)>, ServiceError> {
        let mut members: HashMap<ConversationId, Vec<ContactId>> = HashMap::new();
        let mut heard = Vec::with_capacity(news.len());
        for typing in news {
            let conversation = typing.conversation_id();
            let of_it = match members.get(&conversation) {
                Some(of_it) => of_it,
                None => {
                    let found = self
                        .ports
                        .depth
                        .members_among(conversation, connected.clone())
                        .await?;
                    members.entry(conversation).or_insert(found)
                }
            };
            let who = typing.contact_id();
            let audience: Vec<ContactId> = of_it.iter().copied().filter(|c| *c != who).collect();
            heard.push((typing, audience));
        }
        Ok(heard)
    }
}
