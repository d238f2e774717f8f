use crate::{
    check_attachment_count, check_reaction_name_count, has_repeats, Attachment, Contact, ContactId,
    ConversationId, DomainError, Field, Mentions, MessageId, MessageText, Quote, Reaction,
    ReactionName, Rule, Timestamp,
};

/// The attributes of a [`Message`], unchecked: what [`Message::new`] takes
/// and [`Message::into_parts`] gives back. Its fields are public because
/// it holds no invariant; a `Message` built from it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageParts {
    /// See [`Message::id`].
    pub id: MessageId,
    /// See [`Message::conversation_id`].
    pub conversation_id: ConversationId,
    /// See [`Message::sender`].
    pub sender: Contact,
    /// See [`Message::text`].
    pub text: MessageText,
    /// See [`Message::reactions`].
    pub reactions: Vec<Reaction>,
    /// See [`Message::attachments`].
    pub attachments: Vec<Attachment>,
    /// See [`Message::read_at`].
    pub read_at: Option<Timestamp>,
    /// See [`Message::created_at`].
    pub created_at: Timestamp,
    /// See [`Message::updated_at`].
    pub updated_at: Option<Timestamp>,
    /// See [`Message::reply_to`].
    pub reply_to: Option<Quote>,
    /// See [`Message::parent_id`].
    pub parent_id: Option<MessageId>,
    /// See [`Message::reply_count`].
    pub reply_count: u64,
    /// See [`Message::last_reply_at`].
    pub last_reply_at: Option<Timestamp>,
    /// See [`Message::mentions`].
    pub mentions: Mentions,
    /// See [`Message::edited_at`].
    pub edited_at: Option<Timestamp>,
}

impl MessageParts {
    /// A new message's parts: `sender`'s `text` in `conversation_id` at
    /// `created_at`, with nothing else (no reactions, attachments, reply,
    /// thread or mentions; never read, updated or edited).
    pub fn new(
        id: MessageId,
        conversation_id: ConversationId,
        sender: Contact,
        text: MessageText,
        created_at: Timestamp,
    ) -> Self {
        Self {
            id,
            conversation_id,
            sender,
            text,
            reactions: Vec::new(),
            attachments: Vec::new(),
            read_at: None,
            created_at,
            updated_at: None,
            reply_to: None,
            parent_id: None,
            reply_count: 0,
            last_reply_at: None,
            mentions: Mentions::none(),
            edited_at: None,
        }
    }
}

/// A message with its sender, reactions (in order of each name's first
/// reaction) and attachments (in the order they were added).
///
/// Built only through [`Message::new`], which checks the rules that tie its
/// attributes together, so that a message that exists keeps them: at most
/// [`MAX_ATTACHMENTS`](crate::MAX_ATTACHMENTS) attachments, each of them its own, and at most
/// [`MAX_REACTION_NAMES`](crate::MAX_REACTION_NAMES) reaction names, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    parts: MessageParts,
}

impl Message {
    /// The message `parts` describe, when they keep a message's rules.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`]
    /// - on [`Field::Attachments`] with [`Rule::TooManyAttachments`] when
    ///   there are more than [`MAX_ATTACHMENTS`](crate::MAX_ATTACHMENTS) attachments (see
    ///   [`check_attachment_count`]), or with [`Rule::OfAnotherMessage`]
    ///   when an attachment names another message;
    /// - on [`Field::Reactions`] with [`Rule::TooManyReactionNames`] when
    ///   there are more than [`MAX_REACTION_NAMES`](crate::MAX_REACTION_NAMES) reactions (see
    ///   [`check_reaction_name_count`]), or with
    ///   [`Rule::DuplicateReactionName`] when two have the same name.
    ///
    /// # Example
    ///
    /// ```
    /// use confab_domain::{
    ///     Attachment, AttachmentId, AvatarUrl, Contact, ContactParts, DomainError, Field, FileSource,
    ///     FileType, FileUrl, Filename, Message, MessageParts, MessageText, PhoneNumber, Rule,
    ///     Timestamp, Username,
    /// };
    ///
    /// let now = Timestamp::from_secs(1_700_000_000);
    /// let alice = Contact::new(ContactParts {
    ///     id: "0190a1b2-0000-7000-8000-00000000000a".parse()?,
    ///     username: Username::new("alice".into())?,
    ///     phone_number: PhoneNumber::new("+15550100".into())?,
    ///     avatar_url: AvatarUrl::none(),
    ///     last_active_at: now,
    ///     created_at: now,
    /// })?;
    /// let id = "0190a1b2-0000-7000-8000-0000000000d0".parse()?;
    /// let chat = "0190a1b2-0000-7000-8000-0000000000c0".parse()?;
    /// // A message of `files` scanned pages.
    /// let scans = |files: u128| -> Result<MessageParts, DomainError> {
    ///     let page = |n: u128| -> Result<Attachment, DomainError> {
    ///         Ok(Attachment {
    ///             id: AttachmentId::from_uuid(uuid::Uuid::from_u128(n)),
    ///             message_id: Some(id),
    ///             conversation_id: Some(chat),
    ///             uploader: alice.id(),
    ///             filename: Filename::new(format!("page-{n}.png"))?,
    ///             source: FileSource::Link(FileUrl::new(format!("https://files.example/{n}"))?),
    ///             file_type: FileType::new("image/png".into())?,
    ///             file_size: None,
    ///             created_at: now,
    ///         })
    ///     };
    ///     Ok(MessageParts {
    ///         attachments: (1..=files).map(page).collect::<Result<_, _>>()?,
    ///         ..MessageParts::new(id, chat, alice.clone(), MessageText::new("the scans".into())?, now)
    ///     })
    /// };
    ///
    /// // Ten attachments make a message; an eleventh breaks the rule.
    /// let ten = Message::new(scans(10)?)?;
    /// assert_eq!(ten.attachments().len(), 10);
    /// assert_eq!(
    ///     Message::new(scans(11)?),
    ///     Err(DomainError::breaks(Field::Attachments, Rule::TooManyAttachments { max: 10 }))
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(parts: MessageParts) -> Result<Self, DomainError> {
        check_attachment_count(parts.attachments.len())?;
        if parts.attachments.iter().any(|a| {
            a.message_id != Some(parts.id) || a.conversation_id != Some(parts.conversation_id)
        }) {
            return Err(DomainError::breaks(
                Field::Attachments,
                Rule::OfAnotherMessage,
            ));
        }
        check_reaction_name_count(parts.reactions.len())?;
        if has_repeats(parts.reactions.iter().map(|r| r.name().as_str()).collect()) {
            return Err(DomainError::breaks(
                Field::Reactions,
                Rule::DuplicateReactionName,
            ));
        }
        if parts.parent_id == Some(parts.id) {
            return Err(DomainError::breaks(Field::Parent, Rule::ThreadReply));
        }
        if parts.reply_to.as_ref().is_some_and(|q| q.id() == parts.id) {
            return Err(DomainError::breaks(
                Field::ReplyTo,
                Rule::OutsideConversation,
            ));
        }
        Ok(Self { parts })
    }

    /// Its attributes, for a caller that takes the message apart (and may
    /// build another through [`Message::new`]).
    pub fn into_parts(self) -> MessageParts {
        self.parts
    }

    /// Never changes.
    pub fn id(&self) -> MessageId {
        self.parts.id
    }

    /// The conversation it was sent in; never changes.
    pub fn conversation_id(&self) -> ConversationId {
        self.parts.conversation_id
    }

    /// Who sent it: the only one who may edit, delete or attach to it.
    pub fn sender(&self) -> &Contact {
        &self.parts.sender
    }

    /// The text; only the sender changes it.
    pub fn text(&self) -> &MessageText {
        &self.parts.text
    }

    /// In the order of each name's first reaction; each name once, at most
    /// [`MAX_REACTION_NAMES`](crate::MAX_REACTION_NAMES).
    pub fn reactions(&self) -> &[Reaction] {
        &self.parts.reactions
    }

    /// In the order they were added; at most [`MAX_ATTACHMENTS`](crate::MAX_ATTACHMENTS), each of
    /// this message.
    pub fn attachments(&self) -> &[Attachment] {
        &self.parts.attachments
    }

    /// When a member other than the sender first opened the conversation
    /// after it arrived; `None` until then.
    pub fn read_at(&self) -> Option<Timestamp> {
        self.parts.read_at
    }

    /// When it was sent.
    pub fn created_at(&self) -> Timestamp {
        self.parts.created_at
    }

    /// When it last changed (text, reactions, attachments); `None` if
    /// never.
    pub fn updated_at(&self) -> Option<Timestamp> {
        self.parts.updated_at
    }

    /// The message it quotes, as that message reads now; `None` for a
    /// message that quotes none.
    pub fn reply_to(&self) -> Option<&Quote> {
        self.parts.reply_to.as_ref()
    }

    /// The message whose thread it replies in; `None` for a message of the
    /// conversation itself (which may start a thread).
    pub fn parent_id(&self) -> Option<MessageId> {
        self.parts.parent_id
    }

    /// How many replies its thread holds (0 for a thread reply).
    pub fn reply_count(&self) -> u64 {
        self.parts.reply_count
    }

    /// When its thread's latest reply was sent; `None` without replies.
    pub fn last_reply_at(&self) -> Option<Timestamp> {
        self.parts.last_reply_at
    }

    /// The members it mentions.
    pub fn mentions(&self) -> &Mentions {
        &self.parts.mentions
    }

    /// When its text last changed; `None` if never (reactions and
    /// attachments move [`Message::updated_at`] only).
    pub fn edited_at(&self) -> Option<Timestamp> {
        self.parts.edited_at
    }

    /// Whether `contact` sent it.
    pub fn is_from(&self, contact: ContactId) -> bool {
        self.parts.sender.id() == contact
    }

    /// Whether `contact` reacted with `name`.
    pub fn has_reaction(&self, name: &ReactionName, contact: ContactId) -> bool {
        self.parts
            .reactions
            .iter()
            .any(|r| r.name() == name && r.has_reactor(contact))
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

    /// The sender may delete it; so may whoever moderates its conversation
    /// (`moderator`: the owner or an admin of its group,
    /// [`crate::GroupRole::moderates`]).
    pub fn check_delete(&self, by: ContactId, moderator: bool) -> Result<(), DomainError> {
        if moderator {
            return Ok(());
        }
        self.sender_only(
            by,
            "only the sender, or the group's owner or an admin, may delete a message",
        )
    }

    /// Only the sender may add attachments, and never beyond the limit
    /// ([`check_attachment_count`] on what it has and what is added).
    pub fn check_attach(&self, by: ContactId, adding: usize) -> Result<(), DomainError> {
        self.sender_only(by, "only the sender may add attachments")?;
        check_attachment_count(self.parts.attachments.len() + adding)
    }

    /// Works out which reactions `by` adds when asking for `requested`
    /// (`name -> usernames`). Every username must be `by`'s own: nobody reacts
    /// in someone else's name. Reactions `by` already has are left out, and
    /// the message may not end up with more than [`MAX_REACTION_NAMES`](crate::MAX_REACTION_NAMES)
    /// distinct names ([`check_reaction_name_count`]).
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
            if usernames.iter().any(|u| !by.username().matches(u)) {
                return Err(DomainError::Forbidden(
                    "a reaction may only be added in the caller's own name",
                ));
            }
            if !self.has_reaction(name, by.id()) && !adding.contains(name) {
                adding.push(name.clone());
            }
        }
        let new_names = adding
            .iter()
            .filter(|n| !self.parts.reactions.iter().any(|r| r.name() == *n))
            .count();
        check_reaction_name_count(self.parts.reactions.len() + new_names)?;
        Ok(adding)
    }
}

/// The rule on a new message's content: text, attachments, or both. A
/// message without text ([`MessageText::none`]) needs at least one
/// attachment.
///
/// # Errors
///
/// [`DomainError::Invalid`] on [`Field::MessageText`] with
/// [`Rule::NoContent`] when `text` is none and `attachments` is 0.
///
/// ```
/// use confab_domain::{check_message_content, MessageText};
///
/// assert!(check_message_content(&MessageText::none(), 1).is_ok());
/// assert!(check_message_content(&MessageText::none(), 0).is_err());
/// ```
pub fn check_message_content(text: &MessageText, attachments: usize) -> Result<(), DomainError> {
    if text.is_none() && attachments == 0 {
        return Err(DomainError::breaks(Field::MessageText, Rule::NoContent));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
