// Small helpers shared by the transport, the stream and the store.

/** A random UUIDv4 (an Idempotency-Key); falls back where `crypto.randomUUID` is missing. */
export function uuid(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  const bytes = new Uint8Array(16);
  if (c && typeof c.getRandomValues === "function") c.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Exponential backoff with jitter: attempt 0 waits about `base`, doubling up to `max`. */
export function backoff(attempt: number, base = 500, max = 30_000): number {
  const ceiling = Math.min(max, base * 2 ** Math.min(attempt, 16));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const e = new Error("aborted");
  e.name = "AbortError";
  return e;
}

/**
 * A signal that aborts when any of the given ones does, or after `ms`
 * (AbortSignal.any is not in Node 18).
 */
export function linkSignals(
  signals: (AbortSignal | undefined)[],
  ms?: number,
): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    const f = () => controller.abort(s.reason);
    s.addEventListener("abort", f, { once: true });
    cleanups.push(() => s.removeEventListener("abort", f));
  }
  if (ms !== undefined && !controller.signal.aborted) {
    const t = setTimeout(() => {
      const e = new Error(`no answer within ${ms} ms`);
      e.name = "TimeoutError";
      controller.abort(e);
    }, ms);
    cleanups.push(() => clearTimeout(t));
  }
  return { signal: controller.signal, done: () => cleanups.forEach((f) => f()) };
}

/** Remembers the last `size` ids (an event may never be delivered twice). */
export class RecentIds {
  private readonly set = new Set<string>();
  constructor(private readonly size = 4096) {}
  has(id: string): boolean {
    return this.set.has(id);
  }
  add(id: string): void {
    this.set.add(id);
    if (this.set.size > this.size) {
      const first = this.set.values().next().value;
      if (first !== undefined) this.set.delete(first);
    }
  }
}
