//! Reactions: who reacted to a message with which name, and the rule on
//! how many names one message carries.

use crate::{has_repeats, ContactId, DomainError, Field, ReactionName, Rule, Username};

/// At most this many distinct reaction names on one message.
pub const MAX_REACTION_NAMES: usize = 32;

/// Someone who reacted.
///
/// A plain pair (public fields): that a username is the contact's own is
/// known to whoever looks it up, not a rule between the two values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reactor {
    /// Who reacted.
    pub contact_id: ContactId,
    /// Their username, so that a reaction reads without another lookup.
    pub username: Username,
}

/// All reactions of one name, reactors in the order they reacted.
///
/// Built only through [`Reaction::new`]: a reaction has at least one
/// reactor and counts each contact once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaction {
    name: ReactionName,
    reactors: Vec<Reactor>,
}

impl Reaction {
    /// The reaction `name` by `reactors`, in the order they reacted.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Reactions`] with
    /// [`Rule::EmptyReaction`] when `reactors` is empty, or with
    /// [`Rule::DuplicateReactor`] when a contact is in it twice.
    pub fn new(name: ReactionName, reactors: Vec<Reactor>) -> Result<Self, DomainError> {
        if reactors.is_empty() {
            return Err(DomainError::breaks(Field::Reactions, Rule::EmptyReaction));
        }
        if has_repeats(reactors.iter().map(|r| r.contact_id).collect()) {
            return Err(DomainError::breaks(
                Field::Reactions,
                Rule::DuplicateReactor,
            ));
        }
        Ok(Self { name, reactors })
    }

    /// The reaction's name.
    pub fn name(&self) -> &ReactionName {
        &self.name
    }

    /// Everyone who reacted with it, each once, in the order they reacted
    /// (never empty).
    pub fn reactors(&self) -> &[Reactor] {
        &self.reactors
    }

    /// Whether `contact` is among the reactors.
    pub fn has_reactor(&self, contact: ContactId) -> bool {
        self.reactors.iter().any(|r| r.contact_id == contact)
    }

    /// The name and the reactors, for a caller that takes them apart.
    pub fn into_parts(self) -> (ReactionName, Vec<Reactor>) {
        (self.name, self.reactors)
    }
}

/// The rule on reaction names: a message carries at most
/// [`MAX_REACTION_NAMES`] distinct ones. [`Message::new`](crate::Message::new) and
/// [`Message::plan_reactions`](crate::Message::plan_reactions) apply it; an adapter that counts the names
/// of a stored message itself (under a lock, say) asks it here.
///
/// # Errors
///
/// [`DomainError::Invalid`] on [`Field::Reactions`] with
/// [`Rule::TooManyReactionNames`] when `total` is over the limit.
pub fn check_reaction_name_count(total: usize) -> Result<(), DomainError> {
    if total > MAX_REACTION_NAMES {
        return Err(DomainError::breaks(
            Field::Reactions,
            Rule::TooManyReactionNames {
                max: MAX_REACTION_NAMES,
            },
        ));
    }
    Ok(())
}
