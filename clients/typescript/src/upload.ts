// Uploads (`POST /v1/attachments`, multipart) with progress: through
// XMLHttpRequest in browsers (the only way to see upload progress there),
// through fetch with a streamed multipart body in Node, counting the bytes
// as fetch takes them.
import { ConfabError, ConfabNetworkError, errorFrom, isAbort } from "./errors.js";
import { isRetryable, type Http } from "./http.js";
import type { Attachment } from "./types.js";
import { backoff, sleep, uuid } from "./util.js";

export interface UploadProgress {
  loaded: number;
  total: number;
  /** 0 to 1. */
  fraction: number;
}

export interface UploadOptions {
  /** The attachment's name; by default the File's own name. Required for bytes. */
  filename?: string;
  onProgress?: (progress: UploadProgress) => void;
  signal?: AbortSignal;
  /** Attempts after a network failure, a 5xx, a 409 or a 429 (default 3). */
  retries?: number;
  /**
   * A key of your own; by default a new UUID per upload. Every attempt
   * sends it as `Idempotency-Key`, so an upload whose answer was lost and
   * is tried again is stored once, and the retry gets the same attachment.
   */
  idempotencyKey?: string;
}

export type UploadInput = Blob | ArrayBuffer | Uint8Array;

const CHUNK = 64 * 1024;

export async function upload(http: Http, input: UploadInput, options: UploadOptions = {}): Promise<Attachment> {
  const blob: Blob = input instanceof Blob ? input : new Blob([input as BlobPart]);
  const filename = options.filename ?? (input as { name?: unknown }).name;
  if (typeof filename !== "string" || filename === "") {
    throw new TypeError("confab: upload needs a filename (options.filename) for bytes without a name");
  }
  const retries = options.retries ?? 3;
  const key = options.idempotencyKey ?? uuid();
  for (let attempt = 0; ; attempt++) {
    try {
      const url = http.url("/v1/attachments");
      const response = await http.withToken((token) =>
        typeof XMLHttpRequest !== "undefined"
          ? xhrUpload(url, token, key, blob, filename, options)
          : http.plain(streamedRequest(url, token, key, blob, filename, options)),
      );
      if (!response.ok) throw await errorFrom(response);
      return (await response.json()) as Attachment;
    } catch (e) {
      if (options.signal?.aborted || isAbort(e)) throw e;
      if (!isRetryable(e) || attempt >= retries) throw e;
      const wait = e instanceof ConfabError && e.retryAfter ? e.retryAfter * 1000 : backoff(attempt);
      await sleep(wait, options.signal);
    }
  }
}

function report(options: UploadOptions, loaded: number, total: number): void {
  options.onProgress?.({ loaded, total, fraction: total > 0 ? Math.min(1, loaded / total) : 1 });
}

/** A filename safe in a part header (the `filename` part carries it exactly, in UTF-8). */
function headerName(name: string): string {
  return name.replace(/[\r\n"\\]/g, "_");
}

// Node: a multipart body streamed in chunks of 64 KiB; progress counts the
// bytes fetch has pulled.
function streamedRequest(
  url: string,
  token: string,
  key: string,
  blob: Blob,
  filename: string,
  options: UploadOptions,
): Request {
  const boundary = "confab-" + Math.random().toString(36).slice(2) + Date.now().toString(36);
  const encoder = new TextEncoder();
  const head = encoder.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="filename"\r\n\r\n${filename}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${headerName(filename)}"\r\n` +
      `Content-Type: ${blob.type || "application/octet-stream"}\r\n\r\n`,
  );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const total = head.byteLength + blob.size + tail.byteLength;
  let offset = 0;
  let sentHead = false;
  let loaded = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Uint8Array;
      if (!sentHead) {
        sentHead = true;
        chunk = head;
      } else if (offset < blob.size) {
        const end = Math.min(blob.size, offset + CHUNK);
        chunk = new Uint8Array(await blob.slice(offset, end).arrayBuffer());
        offset = end;
      } else {
        controller.enqueue(tail);
        loaded += tail.byteLength;
        report(options, loaded, total);
        controller.close();
        return;
      }
      controller.enqueue(chunk);
      loaded += chunk.byteLength;
      report(options, loaded, total);
    },
  });
  report(options, 0, total);
  return new Request(url, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${token}`,
      "Idempotency-Key": key,
      "Content-Type": `multipart/form-data; boundary=${boundary}`,
    },
    body,
    signal: options.signal,
    // Node's fetch needs this for a streamed body.
    duplex: "half",
  } as RequestInit);
}

// Browsers: XMLHttpRequest, whose upload.onprogress is the only upload
// progress a page can see; its answer is turned into a Response.
async function xhrUpload(
  url: string,
  token: string,
  key: string,
  blob: Blob,
  filename: string,
  options: UploadOptions,
): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.setRequestHeader("Authorization", `Bearer ${token}`);
    xhr.setRequestHeader("Idempotency-Key", key);
    xhr.responseType = "text";
    xhr.upload.onprogress = (e) => report(options, e.loaded, e.lengthComputable ? e.total : blob.size);
    xhr.onload = () => {
      const headers = new Headers();
      for (const line of xhr.getAllResponseHeaders().trim().split(/[\r\n]+/)) {
        const i = line.indexOf(":");
        if (i > 0) headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
      }
      resolve(new Response(xhr.status === 204 ? null : xhr.responseText, { status: xhr.status, headers }));
    };
    xhr.onerror = () => reject(new ConfabNetworkError("upload: the connection failed"));
    xhr.ontimeout = () => reject(new ConfabNetworkError("upload: timed out"));
    const onAbort = () => xhr.abort();
    xhr.onabort = () => {
      const e = new Error("upload aborted");
      e.name = "AbortError";
      reject(e);
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const form = new FormData();
    form.append("filename", filename);
    form.append("file", blob, filename);
    report(options, 0, blob.size);
    xhr.send(form);
  });
}
