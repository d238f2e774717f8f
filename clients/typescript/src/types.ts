// The SDK's types, derived from the generated `paths` of the server's own
// OpenAPI document: by route and status, never by schema name, so that a
// renamed or reshaped schema changes nothing here.
import type { paths } from "./generated/openapi.js";

export type { paths };

type JsonBody<R> = R extends { content: { "application/json": infer B } } ? B : never;
type Answer<Op, Code extends number> = Op extends { responses: infer Rs }
  ? Code extends keyof Rs
    ? JsonBody<Rs[Code]>
    : never
  : never;

/** `{online, last_seen_at}`: on contacts seen by those who share a conversation with them. */
export interface Presence {
  online: boolean;
  last_seen_at: number | null;
}

/**
 * Profile fields the server may not send yet: both are optional here so
 * that the SDK works with servers with and without them. `presence` is
 * `null` when the contact hides it; absent when the server has none.
 */
export interface ProfileExtras {
  display_name?: string | null;
  presence?: Presence | null;
}

export type Contact = Answer<paths["/v1/contacts/{id}"]["get"], 200> & ProfileExtras;
export type Message = Answer<paths["/v1/messages/{id}"]["get"], 200>;
export type Conversation = Answer<paths["/v1/conversations/{id}"]["get"], 200>;
export type Group = Answer<paths["/v1/groups/{id}"]["get"], 200>;
export type Attachment = Answer<paths["/v1/attachments/{id}"]["get"], 200>;
export type Ticket = Answer<paths["/v1/events/tickets"]["post"], 201>;
export type Block = Answer<paths["/v1/contacts/{id}/block"]["get"], 200>;
export type Report = Answer<paths["/v1/reports/{id}"]["get"], 200>;
export type ErrorBody = Answer<paths["/v1/messages"]["post"], 400>;

/** The list envelope of every paged route. */
export interface Page<T> {
  has_more: boolean;
  data: T[];
}

/** What an earlier event of a since-deleted object carries on replay. */
export interface Deleted {
  id: string;
  deleted: true;
}

/** `{"id"}`: the payload of every `*.deleted` event. */
export interface Gone {
  id: string;
}

/** A `typing` frame: never stored, never replayed, has no event id. */
export interface Typing {
  conversation_id: string;
  contact_id: string;
  state: "start" | "stop";
  expires_at: number;
}

/** A member's read position in a conversation (`GET /v1/conversations/:id/reads`). */
export interface ReadPosition {
  contact: Contact | { id: string };
  last_read_message_id: string | null;
  read_at: number | null;
}

/** The payload of `conversation.read`. */
export interface ConversationRead {
  conversation_id: string;
  contact_id?: string;
  contact?: Contact | { id: string };
  last_read_message_id: string | null;
  read_at: number | null;
}

/** The payload of `presence.changed`. */
export interface PresenceChanged {
  contact_id?: string;
  id?: string;
  presence?: Presence | null;
  online?: boolean;
  last_seen_at?: number | null;
}

/** Every stored event type a contact's stream carries, with its payload. */
export interface EventPayloads {
  "message.created": Message | Deleted;
  "message.updated": Message | Deleted;
  "message.deleted": Gone;
  "conversation.created": Conversation | Deleted;
  "conversation.updated": Conversation | Deleted;
  "conversation.deleted": Gone;
  "conversation.read": ConversationRead;
  "group.created": Group | Deleted;
  "group.updated": Group | Deleted;
  "group.deleted": Gone;
  "contact.created": Contact;
  "contact.updated": Contact;
  "attachment.created": Attachment | Deleted;
  "attachment.updated": Attachment | Deleted;
  "attachment.deleted": Gone;
  "presence.changed": PresenceChanged;
}

export type EventType = keyof EventPayloads;

/** A stored event: `id` names the change, the same for every recipient. */
export type ConfabEvent = {
  [K in EventType]: { id: string; type: K; created_at: number; payload: EventPayloads[K] };
}[EventType];

/** A typing frame as the stream delivers it (no id, never replayed). */
export interface TypingEvent {
  id?: undefined;
  type: "typing";
  created_at?: undefined;
  payload: Typing;
}

/** Everything `client.events(handler)` delivers, discriminated by `type`. */
export type StreamEvent = ConfabEvent | TypingEvent;

/** One handler per event type, each typed by its payload. */
export type EventHandlers = {
  [K in StreamEvent["type"]]?: (event: Extract<StreamEvent, { type: K }>) => void;
};

export function isDeleted(payload: unknown): payload is Deleted {
  return (
    typeof payload === "object" &&
    payload !== null &&
    (payload as { deleted?: unknown }).deleted === true
  );
}
