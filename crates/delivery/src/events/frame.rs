//! The wire form of an event, `{"id","type","created_at","payload"}`, and
//! its Server-Sent Events frame. [`write_event`] is the event object's one
//! writer: the stream's frames, the catch-up list (`GET /v1/events` with
//! `Accept: application/json`) and the webhooks' deliveries carry what it
//! writes.

use std::io::Write as _;

use actix_web::web::Bytes;
use confab_domain::Typing;
use confab_service::StoredEvent;
use serde_json::Value;

/// The payload as a JSON value (never a string holding JSON). The store
/// keeps what the renderer wrote, so it parses; if it did not, the client
/// still gets valid JSON.
fn payload_value(payload: &str) -> Value {
    serde_json::from_str(payload).unwrap_or(Value::Null)
}

/// Appends the event object to `out`, with `payload` as one recipient
/// sees it. The stored payload is inserted as it is (no parse on the hot
/// path) when it is on one line, as the compact JSON the renderer writes
/// is; otherwise it is re-encoded (an empty one as `null`), so that the
/// object stays on one line, which an SSE `data:` field needs.
pub fn write_event(out: &mut Vec<u8>, event: &StoredEvent, payload: &str) {
    let payload = payload.trim();
    let reencoded;
    let payload = if payload.is_empty() || payload.contains(['\n', '\r']) {
        reencoded = payload_value(payload).to_string();
        reencoded.as_str()
    } else {
        payload
    };
    // Writing to a Vec cannot fail.
    let _ = write!(
        out,
        r#"{{"id":"{}","type":"{}","created_at":{},"payload":"#,
        event.id,
        event.kind.name(),
        event.created_at.secs(),
    );
    out.extend_from_slice(payload.as_bytes());
    out.push(b'}');
}

/// One SSE frame: `id:`, `event:` and the event object on one `data:` line.
///
/// The hub builds an event's frame with its shared payload once and hands
/// the same bytes to every stream that sees that payload.
pub fn sse_frame(event: &StoredEvent) -> Bytes {
    sse_frame_with(event, &event.payload)
}

/// [`sse_frame`] with the payload as one recipient sees it. The payload is
/// copied once, into the frame.
pub fn sse_frame_with(event: &StoredEvent, payload: &str) -> Bytes {
    let kind = event.kind.name();
    let mut frame = Vec::with_capacity(payload.len() + 2 * kind.len() + 160);
    // Writing to a Vec cannot fail.
    let _ = write!(frame, "id: {}\nevent: {kind}\ndata: ", event.id);
    write_event(&mut frame, event, payload);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

/// The SSE frame of typing news (docs/api.md "Typing"): `event: typing` and
/// `{"conversation_id","contact_id","state","expires_at"}`, without an
/// `id:` line, so that a client's `Last-Event-ID` stays on the last stored
/// event (typing is never replayed).
pub fn typing_frame(typing: &Typing) -> Bytes {
    let mut frame = Vec::with_capacity(192);
    // Writing to a Vec cannot fail.
    let _ = write!(
        frame,
        "event: typing\ndata: {{\"conversation_id\":\"{}\",\"contact_id\":\"{}\",\"state\":\"{}\",\"expires_at\":{}}}\n\n",
        typing.conversation_id(),
        typing.contact_id(),
        typing.state(),
        typing.expires_at().secs(),
    );
    Bytes::from(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use confab_domain::{EventId, EventType, Timestamp};
    use uuid::Uuid;

    fn event(payload: &str) -> StoredEvent {
        StoredEvent {
            id: EventId::from_uuid(Uuid::from_u128(7)),
            kind: EventType::MessageCreated,
            created_at: Timestamp::from_secs(1_700_000_000),
            position: 3,
            payload: payload.to_owned(),
        }
    }

    #[test]
    fn frame_carries_the_event_object_on_one_data_line() {
        let frame = sse_frame(&event(r#"{"id":"m","message":"a\nb"}"#));
        let text = std::str::from_utf8(&frame).expect("utf-8");
        let id = "00000000-0000-0000-0000-000000000007";
        assert!(text.starts_with(&format!("id: {id}\nevent: message.created\ndata: ")));
        assert!(text.ends_with("\n\n"));
        let data = text
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("data line");
        assert_eq!(
            data,
            format!(
                r#"{{"id":"{id}","type":"message.created","created_at":1700000000,"payload":{}}}"#,
                r#"{"id":"m","message":"a\nb"}"#
            )
        );
        let v: Value = serde_json::from_str(data).expect("json");
        assert_eq!(v["payload"]["message"], "a\nb");
        assert_eq!(v["created_at"], 1_700_000_000);
        assert_eq!(text.matches('\n').count(), 4, "{text}");
    }

    #[test]
    fn a_payload_on_several_lines_is_reencoded() {
        let frame = sse_frame(&event("{\n\"id\": \"m\"\n}"));
        let text = std::str::from_utf8(&frame).expect("utf-8");
        assert_eq!(text.matches('\n').count(), 4, "{text}");
        assert!(text.contains(r#""payload":{"id":"m"}"#), "{text}");
    }

    #[test]
    fn a_typing_frame_has_no_id_and_the_contract_fields() {
        let typing = confab_domain::Typing::start(
            confab_domain::ConversationId::from_uuid(Uuid::from_u128(1)),
            confab_domain::ContactId::from_uuid(Uuid::from_u128(2)),
            Timestamp::from_micros(1_700_000_000_500_000),
        );
        let frame = typing_frame(&typing);
        let text = std::str::from_utf8(&frame).expect("utf-8");
        assert!(text.starts_with("event: typing\ndata: {"), "{text}");
        assert!(text.ends_with("}\n\n"), "{text}");
        assert!(!text.contains("id: "), "{text}");
        let data = text.lines().nth(1).and_then(|l| l.strip_prefix("data: "));
        let v: Value = serde_json::from_str(data.expect("data")).expect("json");
        assert_eq!(
            v,
            serde_json::json!({
                "conversation_id": "00000000-0000-0000-0000-000000000001",
                "contact_id": "00000000-0000-0000-0000-000000000002",
                "state": "start",
                "expires_at": 1_700_000_008,
            })
        );
    }

    #[test]
    fn an_empty_payload_is_null() {
        let mut out = Vec::new();
        write_event(&mut out, &event(""), " ");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.ends_with(r#""payload":null}"#), "{text}");
    }
}
