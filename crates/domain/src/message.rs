use crate::{
    AttachmentId, Contact, ContactId, ConversationId, DomainError, Field, FileSize, FileType,
    FileUrl, Filename, MessageId, MessageText, ReactionName, Rule, Timestamp, Username,
};

/// At most this many attachments on one message.
pub const MAX_ATTACHMENTS: usize = 10;
/// At most this many distinct reaction names on one message.
pub const MAX_REACTION_NAMES: usize = 32;

/// A file attached to a message (the bytes live at `file_url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// Never changes.
    pub id: AttachmentId,
    /// The message it belongs to.
    pub message_id: MessageId,
    /// The file's name, as the sender gave it.
    pub filename: Filename,
    /// Where the bytes live; confab never fetches them.
    pub file_url: FileUrl,
    /// The file's MIME type.
    pub file_type: FileType,
    /// The file's size, when the sender gave it.
    pub file_size: Option<FileSize>,
    /// When it was added.
    pub created_at: Timestamp,
}

/// An attachment as submitted, before it has an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAttachment {
    /// See [`Attachment::filename`].
    pub filename: Filename,
    /// See [`Attachment::file_url`].
    pub file_url: FileUrl,
    /// See [`Attachment::file_type`].
    pub file_type: FileType,
    /// See [`Attachment::file_size`].
    pub file_size: Option<FileSize>,
}

/// Someone who reacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reactor {
    /// Who reacted.
    pub contact_id: ContactId,
    /// Their username, so that a reaction reads without another lookup.
    pub username: Username,
}

/// All reactions of one name, reactors in the order they reacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaction {
    /// The reaction's name.
    pub name: ReactionName,
    /// Everyone who reacted with it, each once.
    pub reactors: Vec<Reactor>,
}

/// A message with its sender, reactions (in order of each name's first
/// reaction) and attachments (in the order they were added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Never changes.
    pub id: MessageId,
    /// The conversation it was sent in; never changes.
    pub conversation_id: ConversationId,
    /// Who sent it: the only one who may edit, delete or attach to it.
    pub sender: Contact,
    /// The text; only the sender changes it.
    pub text: MessageText,
    /// In the order of each name's first reaction.
    pub reactions: Vec<Reaction>,
    /// In the order they were added; at most [`MAX_ATTACHMENTS`].
    pub attachments: Vec<Attachment>,
    /// When a member other than the sender first opened the conversation
    /// after it arrived; `None` until then.
    pub read_at: Option<Timestamp>,
    /// When it was sent.
    pub created_at: Timestamp,
    /// When it last changed (text, reactions, attachments); `None` if
    /// never.
    pub updated_at: Option<Timestamp>,
}

impl Message {
    /// Whether `contact` sent it.
    pub fn is_from(&self, contact: ContactId) -> bool {
        self.sender.id == contact
    }

    fn sender_only(&self, by: ContactId, what: &'static str) -> Result<(), DomainError> {
        if self.is_from(by) {
            Ok(())
        } else {
            Err(DomainError::Forbidden(what))
        }
    }

    /// Only the sender may change the text.
    pub fn check_edit(&self, by: ContactId) -> Result<(), DomainError> {
        self.sender_only(by, "only the sender may edit a message")
    }

    /// Only the sender may delete.
    pub fn check_delete(&self, by: ContactId) -> Result<(), DomainError> {
        self.sender_only(by, "only the sender may delete a message")
    }

    /// Only the sender may add attachments, and never beyond the limit.
    pub fn check_attach(&self, by: ContactId, adding: usize) -> Result<(), DomainError> {
        self.sender_only(by, "only the sender may add attachments")?;
        check_attachment_count(self.attachments.len() + adding)
    }

    /// Works out which reactions `by` adds when asking for `requested`
    /// (`name -> usernames`). Every username must be `by`'s own: nobody reacts
    /// in someone else's name. Reactions `by` already has are left out, and
    /// the message may not end up with more than 32 distinct names.
    pub fn plan_reactions(
        &self,
        by: &Contact,
        requested: &[(ReactionName, Vec<String>)],
    ) -> Result<Vec<ReactionName>, DomainError> {
        let mut adding: Vec<ReactionName> = Vec::new();
        for (name, usernames) in requested {
            if usernames.is_empty() {
                return Err(DomainError::breaks(
                    Field::Reactions,
                    Rule::ReactionWithoutReactor,
                ));
            }
            if usernames.iter().any(|u| !by.username.matches(u)) {
                return Err(DomainError::Forbidden(
                    "a reaction may only be added in the caller's own name",
                ));
            }
            let has_it = self
                .reactions
                .iter()
                .any(|r| &r.name == name && r.reactors.iter().any(|x| x.contact_id == by.id));
            if !has_it && !adding.contains(name) {
                adding.push(name.clone());
            }
        }
        let new_names = adding
            .iter()
            .filter(|n| !self.reactions.iter().any(|r| &r.name == *n))
            .count();
        check_reaction_name_count(self.reactions.len() + new_names)?;
        Ok(adding)
    }
}

/// A message carries at most [`MAX_REACTION_NAMES`] distinct reaction names.
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

/// A message carries at most [`MAX_ATTACHMENTS`] attachments.
pub fn check_attachment_count(total: usize) -> Result<(), DomainError> {
    if total > MAX_ATTACHMENTS {
        return Err(DomainError::breaks(
            Field::Attachments,
            Rule::TooManyAttachments {
                max: MAX_ATTACHMENTS,
            },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AvatarUrl, PhoneNumber};
    use uuid::Uuid;

    fn contact(n: u128, name: &str) -> Contact {
        Contact {
            id: ContactId::from_uuid(Uuid::from_u128(n)),
            username: Username::new(name.into()).expect("valid"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
            avatar_url: AvatarUrl::none(),
            last_active_at: Timestamp::from_secs(0),
            created_at: Timestamp::from_secs(0),
        }
    }

    fn rn(s: &str) -> ReactionName {
        ReactionName::new(s.into()).expect("valid")
    }

    fn message(sender: Contact) -> Message {
        Message {
            id: MessageId::from_uuid(Uuid::from_u128(77)),
            conversation_id: ConversationId::from_uuid(Uuid::from_u128(9)),
            sender,
            text: MessageText::new("hi".into()).expect("valid"),
            reactions: vec![],
            attachments: vec![],
            read_at: None,
            created_at: Timestamp::from_secs(0),
            updated_at: None,
        }
    }

    fn attachment(m: &Message) -> Attachment {
        Attachment {
            id: AttachmentId::from_uuid(Uuid::from_u128(1)),
            message_id: m.id,
            filename: Filename::new("a".into()).expect("valid"),
            file_url: FileUrl::new("https://x.example/a".into()).expect("valid"),
            file_type: FileType::octet_stream(),
            file_size: None,
            created_at: Timestamp::from_secs(0),
        }
    }

    #[test]
    fn only_sender_edits_deletes_attaches() {
        let alice = contact(1, "alice");
        let bob = contact(2, "bob");
        let m = message(alice.clone());
        assert!(m.check_edit(alice.id).is_ok());
        assert!(matches!(
            m.check_edit(bob.id),
            Err(DomainError::Forbidden(_))
        ));
        assert!(m.check_delete(alice.id).is_ok());
        assert!(matches!(
            m.check_delete(bob.id),
            Err(DomainError::Forbidden(_))
        ));
        assert!(m.check_attach(alice.id, 10).is_ok());
        assert!(matches!(
            m.check_attach(bob.id, 1),
            Err(DomainError::Forbidden(_))
        ));
    }

    #[test]
    fn attachment_limit_counts_existing_ones() {
        let alice = contact(1, "alice");
        let mut m = message(alice.clone());
        let a = attachment(&m);
        m.attachments = vec![a; 9];
        assert!(m.check_attach(alice.id, 1).is_ok());
        assert!(matches!(
            m.check_attach(alice.id, 2),
            Err(DomainError::Invalid {
                field: Field::Attachments,
                rule: Rule::TooManyAttachments { max: 10 }
            })
        ));
    }

    #[test]
    fn reacting_only_in_own_name() {
        let alice = contact(1, "alice");
        let bob = contact(2, "bob");
        let m = message(alice.clone());
        let ok = m.plan_reactions(&bob, &[(rn("like"), vec!["BOB".into()])]);
        assert_eq!(ok, Ok(vec![rn("like")]));
        let forged = m.plan_reactions(&bob, &[(rn("like"), vec!["alice".into()])]);
        assert!(matches!(forged, Err(DomainError::Forbidden(_))));
        let mixed = m.plan_reactions(&bob, &[(rn("like"), vec!["bob".into(), "alice".into()])]);
        assert!(matches!(mixed, Err(DomainError::Forbidden(_))));
        let empty = m.plan_reactions(&bob, &[(rn("like"), vec![])]);
        assert!(matches!(
            empty,
            Err(DomainError::Invalid {
                field: Field::Reactions,
                rule: Rule::ReactionWithoutReactor
            })
        ));
    }

    #[test]
    fn existing_reaction_is_not_added_twice() {
        let alice = contact(1, "alice");
        let bob = contact(2, "bob");
        let mut m = message(alice.clone());
        m.reactions = vec![Reaction {
            name: rn("like"),
            reactors: vec![Reactor {
                contact_id: bob.id,
                username: bob.username.clone(),
            }],
        }];
        let plan = m.plan_reactions(
            &bob,
            &[
                (rn("like"), vec!["bob".into()]),
                (rn("heart"), vec!["bob".into()]),
            ],
        );
        assert_eq!(plan, Ok(vec![rn("heart")]));
        // alice may still add "like": same name, another reactor.
        assert_eq!(
            m.plan_reactions(&alice, &[(rn("like"), vec!["alice".into()])]),
            Ok(vec![rn("like")])
        );
    }

    #[test]
    fn at_most_32_distinct_names() {
        let alice = contact(1, "alice");
        let mut m = message(alice.clone());
        m.reactions = (0..32)
            .map(|i| Reaction {
                name: rn(&format!("r{i}")),
                reactors: vec![Reactor {
                    contact_id: alice.id,
                    username: alice.username.clone(),
                }],
            })
            .collect();
        let bob = contact(2, "bob");
        // Joining an existing name is fine; a 33rd name is not.
        assert!(m
            .plan_reactions(&bob, &[(rn("r3"), vec!["bob".into()])])
            .is_ok());
        assert!(matches!(
            m.plan_reactions(&bob, &[(rn("new"), vec!["bob".into()])]),
            Err(DomainError::Invalid {
                field: Field::Reactions,
                rule: Rule::TooManyReactionNames { max: 32 }
            })
        ));
    }
}
