//! Replies, threads and mentions: what a send names is checked before
//! anything is written, and a plain send reads nothing for them.
use confab_domain::{Field, MessageParts, Rule};

use crate::{MessageUpdate, SendMessage, ServiceError};

use super::*;

fn other_conversation() -> ConversationId {
    ConversationId::from_uuid(Uuid::from_u128(0xC0FFEE))
}

fn send(
    reply_to: Option<MessageId>,
    parent: Option<MessageId>,
    mentions: Vec<ContactId>,
) -> SendMessage {
    SendMessage {
        conversation_id: conv_id(),
        text: text("re"),
        attachments: vec![],
        reply_to_id: reply_to,
        parent_id: parent,
        mentions,
    }
}

/// The caller (and those listed) are members, as the store says.
fn members(m: &mut Mocks, who: Vec<ContactId>) {
    m.depth
        .expect_members_among()
        .returning(move |_, asked| Ok(asked.into_iter().filter(|c| who.contains(c)).collect()));
}

/// A send must never reach the store.
fn no_append(m: &mut Mocks) {
    m.messages.expect_append_message().never();
}

fn invalid(result: Result<Message, ServiceError>, field: Field, rule: Rule) {
    match result {
        Err(ServiceError::Invalid { field: f, rule: r }) => {
            assert_eq!((f, r), (field, rule));
        }
        other => panic!("expected 400 on {field:?}, got {other:?}"),
    }
}

/// Bob, a member, sends `send`, naming a message the store reads as
/// `named`: refused on `field` with `rule`, and nothing is written.
async fn refused_before_any_write(
    named: Option<Message>,
    send: SendMessage,
    field: Field,
    rule: Rule,
) {
    let mut m = Mocks::new();
    members(&mut m, vec![bob().id()]);
    m.messages
        .expect_message_for()
        .returning(move |_, _| Ok(named.clone()));
    no_append(&mut m);
    invalid(
        m.service().send_message(&bob(), send, None).await,
        field,
        rule,
    );
}

#[tokio::test]
async fn a_quote_of_another_conversation_is_refused_before_any_write() {
    let elsewhere = Message::new(MessageParts {
        conversation_id: other_conversation(),
        ..message_from(alice()).into_parts()
    })
    .expect("valid");
    let send = send(Some(msg_id()), None, vec![]);
    refused_before_any_write(
        Some(elsewhere),
        send,
        Field::ReplyTo,
        Rule::OutsideConversation,
    )
    .await;
}

#[tokio::test]
async fn a_quote_the_caller_cannot_see_is_the_same_400() {
    let send = send(Some(msg_id()), None, vec![]);
    refused_before_any_write(None, send, Field::ReplyTo, Rule::OutsideConversation).await;
}

#[tokio::test]
async fn a_reply_to_a_thread_reply_is_refused_threads_are_one_level() {
    let reply = Message::new(MessageParts {
        parent_id: Some(MessageId::from_uuid(Uuid::from_u128(0xF1257))),
        ..message_from(alice()).into_parts()
    })
    .expect("valid");
    let send = send(None, Some(msg_id()), vec![]);
    refused_before_any_write(Some(reply), send, Field::Parent, Rule::ThreadReply).await;
}

#[tokio::test]
async fn a_mention_of_a_non_member_is_refused_before_any_write() {
    let mut m = Mocks::new();
    members(&mut m, vec![bob().id(), alice().id()]);
    no_append(&mut m);
    let svc = m.service();
    let stranger = contact(9, "stranger");
    invalid(
        svc.send_message(
            &bob(),
            send(None, None, vec![alice().id(), stranger.id()]),
            None,
        )
        .await,
        Field::Mentions,
        Rule::NotConversationMember,
    );
    invalid(
        svc.send_message(
            &bob(),
            send(None, None, vec![alice().id(), alice().id()]),
            None,
        )
        .await,
        Field::Mentions,
        Rule::DuplicateMention,
    );
}

#[tokio::test]
async fn a_non_member_naming_a_quote_learns_only_that_they_are_not_a_member() {
    let mut m = Mocks::new();
    // Nobody listed is a member: the caller neither.
    members(&mut m, vec![]);
    m.messages.expect_message_for().never();
    no_append(&mut m);
    let svc = m.service();
    let outcome = svc
        .send_message(
            &contact(3, "carol"),
            send(Some(msg_id()), None, vec![]),
            None,
        )
        .await;
    assert!(
        matches!(
            outcome,
            Err(ServiceError::NotFound {
                of: Some(Field::Conversation)
            })
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_quoting_thread_reply_reaches_the_store_with_the_quote_as_read() {
    let mut m = Mocks::new();
    members(&mut m, vec![bob().id(), alice().id()]);
    let quoted = message_from(alice());
    m.messages
        .expect_message_for()
        .returning(move |_, _| Ok(Some(quoted.clone())));
    m.messages
        .expect_append_message()
        .withf(|n, _, _| {
            n.parent_id == Some(msg_id())
                && matches!(&n.reply_to, Some(confab_domain::Quote::Message(q))
                    if q.id == msg_id() && q.text.as_str() == "hello" && q.sender == alice().id())
                && n.mentions.contacts() == [alice().id()]
        })
        .times(1)
        .returning(|_, _, _| Ok(message_from(bob())));
    let svc = m.service();
    assert!(svc
        .send_message(
            &bob(),
            send(Some(msg_id()), Some(msg_id()), vec![alice().id()]),
            None
        )
        .await
        .is_ok());
}

#[tokio::test]
async fn only_the_sender_changes_the_mentions() {
    let mut m = Mocks::new();
    let msg = message_from(alice());
    m.messages
        .expect_message_for()
        .returning(move |_, _| Ok(Some(msg.clone())));
    m.messages.expect_update_message().never();
    let svc = m.service();
    let update = MessageUpdate {
        mentions: Some(vec![bob().id()]),
        ..MessageUpdate::default()
    };
    assert!(matches!(
        svc.update_message(&bob(), msg_id(), update).await,
        Err(ServiceError::Forbidden(_))
    ));
}
