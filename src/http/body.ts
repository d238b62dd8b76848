// The request body as a stream of chunks, verified against the signed payload hash as it flows.
import { createHash, type Hash } from "node:crypto";
import { S3Error } from "./errors.ts";

export class RequestBody {
  readonly #stream: ReadableStream<Uint8Array> | null;
  readonly #expectedSha256?: string;
  #consumed = false;

  constructor(stream: ReadableStream<Uint8Array> | null, expectedSha256?: string) {
    this.#stream = stream;
    this.#expectedSha256 = expectedSha256;
  }

  /**
   * Yields the body's chunks. After the last chunk the signed payload hash is checked; a
   * mismatch throws before the consumer sees the end, so nothing is committed from a bad body.
   */
  async *chunks(): AsyncGenerator<Uint8Array> {
    if (this.#consumed) throw new Error("Request body read twice");
    this.#consumed = true;
    const hash: Hash | undefined = this.#expectedSha256 ? createHash("sha256") : undefined;
    if (this.#stream) {
      const reader = this.#stream.getReader();
      try {
        while (true) {
          const { done, value } = await reader.read();
          if (done) break;
          if (value.byteLength === 0) continue;
          hash?.update(value);
          yield value;
        }
      } catch (err) {
        if (err instanceof S3Error) throw err;
        throw new S3Error("IncompleteBody", "The request body ended before it was complete.");
      } finally {
        reader.releaseLock();
      }
    }
    if (hash && hash.digest("hex") !== this.#expectedSha256) {
      throw new S3Error(
        "ContentSHA256Mismatch",
        "The provided content SHA-256 does not match what was computed.",
      );
    }
  }

  /** Reads a small body whole; larger than `limit` bytes is an error. */
  async bytes(limit: number): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of this.chunks()) {
      size += chunk.byteLength;
      if (size > limit) {
        throw new S3Error("InvalidRequest", `The request body is larger than ${limit} bytes.`);
      }
      parts.push(chunk);
    }
    const out = new Uint8Array(size);
    let offset = 0;
    for (const p of parts) {
      out.set(p, offset);
      offset += p.byteLength;
    }
    return out;
  }

  async text(limit: number): Promise<string> {
    return new TextDecoder().decode(await this.bytes(limit));
  }

  /** Drains an unused body so its hash is still verified and the connection stays usable. */
  async discard(): Promise<void> {
    if (this.#consumed) return;
    for await (const _ of this.chunks()) { /* drain */ }
  }
}
