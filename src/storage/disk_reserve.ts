// Space kept back on the metadata disk so deletes work when it is full. A file of zeros
// (STORE_DISK_RESERVE bytes) is written at start-up; when a write fails for lack of space the
// file is removed, and until it can be written again only reads and deletes are served, so the
// freed space goes to deletes (SQLite needs room in its WAL to delete, too).
import { isDiskFull } from "./disk_errors.ts";

const BLOCK = 64 * 1024;
/** Retry writing the reserve at most this often while it is released. */
const RETRY_MS = 1000;

export class DiskReserve {
  #held = false;
  #lastTry = 0;
  #busy: Promise<boolean> | undefined;

  constructor(readonly path: string, readonly bytes: number) {}

  /** True while the reserve is in place (writes are served). */
  get held(): boolean {
    return this.#held || this.bytes === 0;
  }

  /** Writes the reserve file when it is missing; false when there is no room for it. */
  ensure(): Promise<boolean> {
    if (this.held) return Promise.resolve(true);
    this.#busy ??= this.#write().finally(() => (this.#busy = undefined));
    return this.#busy;
  }

  /** Like ensure(), but tries at most once a second (cheap to call on every request). */
  retry(): Promise<boolean> {
    if (this.held) return Promise.resolve(true);
    if (Date.now() - this.#lastTry < RETRY_MS) return this.#busy ?? Promise.resolve(false);
    return this.ensure();
  }

  /** Frees the reserved space: a write has just failed because the disk is full. */
  async release(): Promise<void> {
    if (!this.#held) return;
    this.#held = false;
    this.#lastTry = Date.now();
    await Deno.remove(this.path).catch(() => {});
  }

  async #write(): Promise<boolean> {
    this.#lastTry = Date.now();
    const existing = await Deno.stat(this.path).catch(() => undefined);
    if (existing?.size === this.bytes) return this.#held = true;
    const tmp = `${this.path}.tmp`;
    try {
      const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
      try {
        const block = new Uint8Array(BLOCK);
        for (let done = 0; done < this.bytes; done += BLOCK) {
          let offset = 0;
          const part = block.subarray(0, Math.min(BLOCK, this.bytes - done));
          while (offset < part.byteLength) offset += await file.write(part.subarray(offset));
        }
        await file.sync();
      } finally {
        file.close();
      }
      await Deno.rename(tmp, this.path);
      this.#held = true;
      return true;
    } catch (err) {
      await Deno.remove(tmp).catch(() => {});
      if (isDiskFull(err)) return false;
      throw err;
    }
  }
}
