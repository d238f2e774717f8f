// confab's client SDK. Start with `new Confab({ url, token })`.
export { Confab } from "./client.js";
export type { AttachmentInput, ConfabOptions, ReportReason, SendOptions } from "./client.js";
export { ConfabError, ConfabNetworkError } from "./errors.js";
export type { ConnectionState, EventOptions, Subscription, Transport } from "./events.js";
export type { RequestOptions, TokenSource } from "./http.js";
export { SseParser } from "./sse.js";
export type { SseMessage } from "./sse.js";
export { Store } from "./store.js";
export type { MessageList, StoreState } from "./store.js";
export type { UploadInput, UploadOptions, UploadProgress } from "./upload.js";
export { isDeleted } from "./types.js";
export type * from "./types.js";
