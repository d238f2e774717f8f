//! Typing (docs/api.md "Typing"): a member says they are typing; the other
//! members connected now hear it, through each server process's hub.
//!
//! Nothing is stored. Each process keeps a board of lines, one per member
//! typing in a conversation ([`TypingLine`]: what the others were last told
//! and what waits for its turn), its own and those the other processes
//! relayed, so that every process tells at most one piece of news per
//! member and conversation every 2 s whatever the member sends (starts,
//! stops, sends, in any order), and tells the last word when its turn
//! comes: the hub asks for the news that waits ([`Confab::typing_wake`])
//! when [`Confab::typing_next_wake`] says. The board holds only lines that
//! still mean something, and is pruned as it grows.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use confab_domain::{
    Contact, ContactId, ConversationId, Timestamp, Typing, TypingLine, TypingState, TypingStep,
};

use crate::{Confab, ServiceError};

/// Lines the board holds before its first pruning.
const PRUNE_FROM: usize = 1024;

type Key = (ConversationId, ContactId);

/// Each member's line in each conversation, and the wake-ups they asked
/// for.
#[derive(Debug)]
pub(crate) struct TypingBoard {
    state: Mutex<Board>,
}

#[derive(Debug)]
struct Board {
    lines: HashMap<Key, TypingLine>,
    /// When a line's waiting news may be told, earliest first.
    wakes: BTreeSet<(Timestamp, ConversationId, ContactId)>,
    /// The size at which idle lines are dropped next.
    prune_at: usize,
}

impl Default for TypingBoard {
    fn default() -> Self {
        Self {
            state: Mutex::new(Board {
                lines: HashMap::new(),
                wakes: BTreeSet::new(),
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

    /// What `news` (made at `now`) would do, without doing it.
    fn peek(&self, news: Typing, now: Timestamp) -> TypingStep {
        let key = (news.conversation_id(), news.contact_id());
        match self.lock().lines.get(&key) {
            Some(line) => {
                let mut line = *line;
                line.say(news, now)
            }
            None if news.state() == TypingState::Start => TypingStep::Tell(news),
            None => TypingStep::Nothing,
        }
    }

    /// `news` said at `now`: the news to tell now, if any (a wake-up
    /// asked for is kept on the board).
    pub(crate) fn say(&self, news: Typing, now: Timestamp) -> Option<Typing> {
        let key = (news.conversation_id(), news.contact_id());
        let mut board = self.lock();
        let step = match board.lines.get_mut(&key) {
            Some(line) => line.say(news, now),
            None if news.state() == TypingState::Start => {
                board.lines.insert(key, TypingLine::told(news));
                TypingStep::Tell(news)
            }
            None => TypingStep::Nothing,
        };
        let told = board.apply(key, step);
        board.prune(now);
        told
    }

    /// `stop` is a send's (made at `now`): the news to tell now, if any.
    fn sent(&self, stop: Typing, now: Timestamp) -> Option<Typing> {
        let key = (stop.conversation_id(), stop.contact_id());
        let mut board = self.lock();
        let step = match board.lines.get_mut(&key) {
            Some(line) => line.sent(stop, now),
            None => TypingStep::Nothing,
        };
        board.apply(key, step)
    }

    /// Forgets the line of `contact` in `conversation`.
    fn forget(&self, conversation: ConversationId, contact: ContactId) {
        self.lock().lines.remove(&(conversation, contact));
    }

    /// The earliest wake-up asked for.
    fn next_wake(&self) -> Option<Timestamp> {
        self.lock().wakes.first().map(|w| w.0)
    }

    /// The news whose turn has come at `now`.
    fn wake(&self, now: Timestamp) -> Vec<Typing> {
        let mut board = self.lock();
        let mut told = Vec::new();
        while let Some(&(at, conversation, contact)) = board.wakes.first() {
            if at > now {
                break;
            }
            board.wakes.pop_first();
            let key = (conversation, contact);
            let step = board.lines.get_mut(&key).and_then(|line| line.due(now));
            if let Some(news) = step.and_then(|step| board.apply(key, step)) {
                told.push(news);
            }
        }
        told
    }

    /// Another process's news: it was told there.
    fn record(&self, news: Typing, now: Timestamp) {
        let key = (news.conversation_id(), news.contact_id());
        let mut board = self.lock();
        match board.lines.get_mut(&key) {
            Some(line) => line.heard_elsewhere(news),
            None if news.holds_at(now) => {
                board.lines.insert(key, TypingLine::told(news));
                board.prune(now);
            }
            None => {}
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().lines.len()
    }
}

impl Board {
    /// Keeps the wake-up `step` asks for: the news it tells now, if any.
    fn apply(&mut self, key: Key, step: TypingStep) -> Option<Typing> {
        match step {
            TypingStep::Tell(news) => Some(news),
            TypingStep::WakeAt(at) => {
                self.wakes.insert((at, key.0, key.1));
                None
            }
            TypingStep::Nothing => None,
        }
    }

    /// Drops the idle lines once the board has grown to `prune_at`; the
    /// next pruning waits until it holds twice what is left (at least
    /// [`PRUNE_FROM`]), so pruning costs O(1) per line on average.
    fn prune(&mut self, now: Timestamp) {
        if self.lines.len() < self.prune_at {
            return;
        }
        self.lines.retain(|_, line| !line.is_idle_at(now));
        self.prune_at = (self.lines.len() * 2).max(PRUNE_FROM);
    }
}

impl Confab {
    /// `caller` started or stopped typing in `conversation`: the other
    /// members connected now hear it, at most once every 2 s (news that
    /// comes sooner waits its turn, see [`TypingLine`]), unless it adds
    /// nothing (a start too soon after the last, a stop with no start
    /// holding).
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
        // The conversation is the path's: no parameter to name.
        if !self.is_member(caller, conversation).await? {
            return Err(ServiceError::not_found());
        }
        let now = self.now();
        let news = match state {
            TypingState::Start => Typing::start(conversation, caller.id(), now),
            TypingState::Stop => Typing::stop(conversation, caller.id(), now),
        };
        // Only news that reaches the others (now or in its turn) asks
        // about blocks: what adds nothing costs nothing more.
        if self.typing_board.peek(news, now) != TypingStep::Nothing {
            if let Some(blocked) = self
                .conversation_blocked(caller, conversation, None)
                .await?
            {
                self.typing_board.forget(conversation, caller.id());
                return Err(blocked);
            }
        }
        if let Some(told) = self.typing_board.say(news, now) {
            self.ports.typing.publish(told);
        }
        Ok(())
    }

    /// After `sender` sent a message in `conversation`: a start of theirs
    /// that still holds ends (the other members hear a stop, in its turn).
    pub(crate) fn typing_ended_by_send(&self, sender: ContactId, conversation: ConversationId) {
        let now = self.now();
        if let Some(told) = self
            .typing_board
            .sent(Typing::stop(conversation, sender, now), now)
        {
            self.ports.typing.publish(told);
        }
    }

    /// When the next typing news that waits for its turn may be told
    /// (ask [`Confab::typing_wake`] then); `None` when none waits.
    pub fn typing_next_wake(&self) -> Option<Timestamp> {
        self.typing_board.next_wake()
    }

    /// How long to wait, by the service's clock, before
    /// [`Confab::typing_wake`] may have news to tell: until
    /// [`Confab::typing_next_wake`] (zero when it is due), at most `max`
    /// (a waiter learns of wake-ups asked for since at the latest then).
    pub fn typing_wait(&self, max: std::time::Duration) -> std::time::Duration {
        let now = self.now().micros();
        self.typing_next_wake().map_or(max, |at| {
            let micros = at.micros().saturating_sub(now).max(0).unsigned_abs();
            std::time::Duration::from_micros(micros).min(max)
        })
    }

    /// Tells the typing news whose turn has come (through the relay, like
    /// any news): for the event hub, at [`Confab::typing_next_wake`].
    pub fn typing_wake(&self) {
        for news in self.typing_board.wake(self.now()) {
            self.ports.typing.publish(news);
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
