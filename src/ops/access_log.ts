// The access log (STORE_ACCESS_LOG=on): one JSON line per request, written once its response has
// been sent, to stdout or to STORE_ACCESS_LOG_FILE (reopened on SIGHUP, for log rotation).
//
// The wrapper sees every request; the protocol handler adds what only it knows (operation,
// bucket, key, principal, request id) through noteRequest.
import { AsyncLocalStorage } from "node:async_hooks";

/** What the request's handler learnt about it. */
export interface RequestNotes {
  requestId?: string;
  operation?: string;
  bucket?: string;
  key?: string;
  principal?: string;
}

const current = new AsyncLocalStorage<RequestNotes>();

/** Adds to the access-log record of the request being handled (nothing when not logging). */
export function noteRequest(notes: RequestNotes): void {
  const record = current.getStore();
  if (record) Object.assign(record, notes);
}

type Sink = { write(p: Uint8Array): Promise<number>; close?(): void };

/** Lines are queued and written in order by one writer, so a slow disk never blocks requests. */
export class AccessLog {
  #sink: Sink;
  #queue: string[] = [];
  #writing: Promise<void> | undefined;

  private constructor(sink: Sink, readonly file?: string) {
    this.#sink = sink;
  }

  static async open(file?: string): Promise<AccessLog> {
    return new AccessLog(file ? await openAppend(file) : Deno.stdout, file);
  }

  /** Opens the file again (after logrotate moved it); stdout stays. */
  async reopen(): Promise<void> {
    if (!this.file) return;
    const next = await openAppend(this.file);
    await this.#writing;
    const previous = this.#sink;
    this.#sink = next;
    previous.close?.();
  }

  write(record: Record<string, unknown>): void {
    this.#queue.push(JSON.stringify(record) + "\n");
    this.#writing ??= this.#drain();
  }

  async close(): Promise<void> {
    await this.#writing;
    if (this.file) this.#sink.close?.();
  }

  async #drain(): Promise<void> {
    const encoder = new TextEncoder();
    while (this.#queue.length > 0) {
      let bytes = encoder.encode(this.#queue.splice(0).join(""));
      try {
        while (bytes.byteLength > 0) bytes = bytes.subarray(await this.#sink.write(bytes));
      } catch (err) {
        console.error(JSON.stringify({
          time: new Date().toISOString(),
          level: "error",
          message: "Writing the access log failed",
          error: String(err),
        }));
      }
    }
    this.#writing = undefined;
  }
}

function openAppend(path: string): Promise<Deno.FsFile> {
  return Deno.open(path, { append: true, create: true, mode: 0o600 });
}

function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const query = url.indexOf("?", start);
  return query < 0 ? url.slice(start) : url.slice(start, query);
}

/** Counts a streamed body's bytes as the client takes them. */
function counted(body: ReadableStream<Uint8Array>, count: (n: number) => void) {
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        count(chunk.byteLength);
        controller.enqueue(chunk);
      },
    }),
  );
}

/**
 * Wraps the server's handler: each request's line is written when its response is sent (or the
 * client went away: `"completed": false`). Bytes in are the request's Content-Length; bytes out
 * the response's, or counted when it has none. With `trustProxy` the client address is the first
 * X-Forwarded-For entry.
 */
export function withAccessLog(
  log: AccessLog,
  trustProxy: boolean,
  handler: (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response>,
): (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response> {
  return async (req, info) => {
    const time = new Date().toISOString();
    const started = performance.now();
    // Read now: the request's details are gone once its response has been sent.
    const forwarded = trustProxy
      ? req.headers.get("x-forwarded-for")?.split(",")[0].trim()
      : undefined;
    const remote = forwarded || ((info.remoteAddr as Deno.NetAddr).hostname ?? null);
    const method = req.method;
    const path = pathOf(req.url);
    const bytesIn = Number(req.headers.get("content-length") ?? 0) || 0;
    const notes: RequestNotes = {};
    let response = await current.run(notes, () => handler(req, info));
    const declared = response.headers.get("content-length");
    let bytesOut = req.method === "HEAD" || !response.body ? 0 : Number(declared ?? 0);
    if (response.body && declared === null && req.method !== "HEAD") {
      response = new Response(counted(response.body, (n) => bytesOut += n), {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    }
    const status = response.status;
    const line = (completed: boolean) =>
      log.write({
        time,
        requestId: notes.requestId ?? null,
        remote,
        principal: notes.principal ?? null,
        method,
        path,
        operation: notes.operation ?? null,
        bucket: notes.bucket ?? null,
        key: notes.key ?? null,
        status,
        bytesIn,
        bytesOut,
        ms: Math.round((performance.now() - started) * 10) / 10,
        completed,
      });
    const completed = (info as { completed?: Promise<void> }).completed;
    if (completed) completed.then(() => line(true), () => line(false));
    else line(true);
    return response;
  };
}
