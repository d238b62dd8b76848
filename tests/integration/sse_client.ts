// A small Server-Sent Events reader for the feed tests: messages (id, event, data) and comments.

export interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
  /** Text of a comment line (`: ...`). */
  comment?: string;
}

export class SseReader {
  #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  readonly messages: SseMessage[] = [];

  constructor(readonly response: Response) {
    this.#reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next message or comment; undefined when the stream ends. */
  async next(timeoutMs = 10_000): Promise<SseMessage | undefined> {
    for (;;) {
      const end = this.#buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        const message: SseMessage = {};
        for (const line of block.split("\n")) {
          const colon = line.indexOf(":");
          const field = line.slice(0, colon);
          const value = line.slice(colon + 1).replace(/^ /, "");
          if (field === "") message.comment = value;
          else if (field === "id" || field === "event" || field === "data") message[field] = value;
        }
        this.messages.push(message);
        return message;
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("No feed message in time")), timeoutMs);
      });
      try {
        const { value, done } = await Promise.race([this.#reader.read(), timeout]);
        if (done) return undefined;
        this.#buffer += value;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /** The next `count` event messages (comments and control events skipped). */
  async events(count: number, timeoutMs = 10_000): Promise<SseMessage[]> {
    const out: SseMessage[] = [];
    while (out.length < count) {
      const m = await this.next(timeoutMs);
      if (!m) throw new Error(`The feed ended after ${out.length} of ${count} events`);
      if (m.data !== undefined && m.event !== "reset" && m.event !== "error") out.push(m);
    }
    return out;
  }

  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}
