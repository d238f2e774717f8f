// A Server-Sent Events parser (the HTML standard's rules): fed text as it
// arrives, in any split, it reports each dispatched event, each comment
// and each `retry:`.

export interface SseMessage {
  /** The `id:` field of this event, if it had one. */
  id: string | undefined;
  event: string;
  data: string;
}

export interface SseCallbacks {
  onMessage(message: SseMessage): void;
  onComment?(text: string): void;
  onRetry?(ms: number): void;
}

export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private id: string | undefined;
  private sawData = false;

  constructor(private readonly callbacks: SseCallbacks) {}

  push(text: string): void {
    this.buffer += text;
    let start = 0;
    for (;;) {
      let end = -1;
      let next = -1;
      for (let i = start; i < this.buffer.length; i++) {
        const c = this.buffer.charCodeAt(i);
        if (c === 10) {
          end = i;
          next = i + 1;
          break;
        }
        if (c === 13) {
          // A CR at the very end may be the first half of CRLF: wait.
          if (i + 1 === this.buffer.length) break;
          end = i;
          next = this.buffer.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
          break;
        }
      }
      if (end < 0) break;
      this.line(this.buffer.slice(start, end));
      start = next;
    }
    this.buffer = this.buffer.slice(start);
  }

  private line(line: string): void {
    if (line === "") {
      this.dispatch();
      return;
    }
    if (line.startsWith(":")) {
      this.callbacks.onComment?.(line.slice(1).trimStart());
      return;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        this.sawData = true;
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.callbacks.onRetry?.(Number(value));
        break;
      default:
        break;
    }
  }

  private dispatch(): void {
    const id = this.id;
    this.id = undefined;
    if (!this.sawData) {
      this.event = "";
      return;
    }
    const message: SseMessage = { id, event: this.event || "message", data: this.data.join("\n") };
    this.data = [];
    this.event = "";
    this.sawData = false;
    this.callbacks.onMessage(message);
  }
}
