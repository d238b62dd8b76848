// Immutable object bodies as files: written to a temp name, fsynced, renamed into place.
import { join } from "node:path";

/** Read size when streaming a byte range out of a file. */
const READ_CHUNK = 256 * 1024;

export class BlobStore {
  readonly #blobDir: string;
  readonly #tmpDir: string;

  constructor(dataDir: string) {
    this.#blobDir = join(dataDir, "blobs");
    this.#tmpDir = join(dataDir, "tmp");
  }

  async init(): Promise<void> {
    await Deno.mkdir(this.#blobDir, { recursive: true });
    await Deno.mkdir(this.#tmpDir, { recursive: true });
  }

  #path(id: string): string {
    return join(this.#blobDir, id.slice(0, 2), id);
  }

  /** Starts a new blob; bytes go to a temp file until `commit`. */
  async create(): Promise<BlobWriter> {
    const id = crypto.randomUUID().replaceAll("-", "");
    const tmpPath = join(this.#tmpDir, id);
    const file = await Deno.open(tmpPath, { write: true, createNew: true });
    return new BlobWriter(this, id, tmpPath, file);
  }

  /** Moves a fully written, fsynced temp file to its final name and makes the rename durable. */
  async place(id: string, tmpPath: string): Promise<void> {
    const dir = join(this.#blobDir, id.slice(0, 2));
    await Deno.mkdir(dir, { recursive: true });
    await Deno.rename(tmpPath, this.#path(id));
    await syncDir(dir);
  }

  /** A second name for an existing blob (copies share bytes, not work). */
  async link(sourceId: string): Promise<string> {
    const id = crypto.randomUUID().replaceAll("-", "");
    const dir = join(this.#blobDir, id.slice(0, 2));
    await Deno.mkdir(dir, { recursive: true });
    await Deno.link(this.#path(sourceId), this.#path(id));
    // Links share the inode's mtime; refresh it so the start-up sweep sees a new file.
    const now = new Date();
    await Deno.utime(this.#path(id), now, now);
    await syncDir(dir);
    return id;
  }

  /** Streams `length` bytes from `offset`; the whole file when no range is given. */
  async read(
    id: string,
    range?: { offset: number; length: number },
  ): Promise<ReadableStream<Uint8Array>> {
    const file = await Deno.open(this.#path(id), { read: true });
    if (!range) return file.readable;
    await file.seek(range.offset, Deno.SeekMode.Start);
    let remaining = range.length;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (remaining <= 0) {
          file.close();
          controller.close();
          return;
        }
        const buf = new Uint8Array(Math.min(READ_CHUNK, remaining));
        const n = await file.read(buf);
        if (n === null) {
          file.close();
          controller.error(new Error(`Blob ${id} is shorter than its recorded size`));
          return;
        }
        remaining -= n;
        controller.enqueue(n === buf.length ? buf : buf.subarray(0, n));
      },
      cancel() {
        file.close();
      },
    });
  }

  async remove(id: string): Promise<void> {
    try {
      await Deno.remove(this.#path(id));
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }

  /**
   * Deletes temp files and blobs that no metadata refers to: what a crash between writing and
   * committing leaves behind. Only files older than `before` are touched, so writes in flight
   * while the sweep runs are safe.
   */
  async sweep(
    before: number,
    isReferenced: (id: string) => Promise<boolean>,
  ): Promise<{ tmp: number; orphans: number }> {
    let tmp = 0;
    let orphans = 0;
    for await (const entry of Deno.readDir(this.#tmpDir)) {
      const path = join(this.#tmpDir, entry.name);
      if (await olderThan(path, before)) {
        await Deno.remove(path).catch(() => {});
        tmp++;
      }
    }
    for await (const shard of Deno.readDir(this.#blobDir)) {
      if (!shard.isDirectory) continue;
      for await (const entry of Deno.readDir(join(this.#blobDir, shard.name))) {
        const path = join(this.#blobDir, shard.name, entry.name);
        if (!(await olderThan(path, before)) || (await isReferenced(entry.name))) continue;
        await Deno.remove(path).catch(() => {});
        orphans++;
      }
    }
    return { tmp, orphans };
  }
}

async function olderThan(path: string, before: number): Promise<boolean> {
  try {
    const info = await Deno.stat(path);
    return (info.mtime?.getTime() ?? 0) < before;
  } catch {
    return false;
  }
}

async function syncDir(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}

/** Bytes gathered before one write call: fewer, larger writes are much faster. */
const WRITE_BUFFER = 1024 * 1024;

/**
 * Writes a blob through two alternating buffers: while one is being written to the file (off
 * the main thread), the other fills, so hashing and file I/O overlap.
 */
export class BlobWriter {
  #size = 0;
  #closed = false;
  #buffers = [new Uint8Array(WRITE_BUFFER), new Uint8Array(WRITE_BUFFER)];
  #current = 0;
  #filled = 0;
  #pending: Promise<void> = Promise.resolve();

  constructor(
    readonly store: BlobStore,
    readonly id: string,
    readonly tmpPath: string,
    readonly file: Deno.FsFile,
  ) {}

  get size(): number {
    return this.#size;
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.#size += chunk.byteLength;
    let offset = 0;
    while (offset < chunk.byteLength) {
      const buf = this.#buffers[this.#current];
      const n = Math.min(buf.byteLength - this.#filled, chunk.byteLength - offset);
      buf.set(chunk.subarray(offset, offset + n), this.#filled);
      this.#filled += n;
      offset += n;
      if (this.#filled === buf.byteLength) await this.#flush();
    }
  }

  /** Starts writing the current buffer once the previous write is done; switches buffers. */
  async #flush(): Promise<void> {
    const data = this.#buffers[this.#current].subarray(0, this.#filled);
    await this.#pending;
    this.#pending = writeAll(this.file, data);
    // Awaited at the next flush or commit; until then a failure (a full disk) must not surface
    // as an unhandled rejection, which would end the process.
    this.#pending.catch(() => {});
    this.#current ^= 1;
    this.#filled = 0;
  }

  /** Makes the bytes durable and visible under the blob id. */
  async commit(): Promise<void> {
    if (this.#filled > 0) await this.#flush();
    await this.#pending;
    await this.file.sync();
    this.#close();
    await this.store.place(this.id, this.tmpPath);
  }

  /** Throws the partial file away. */
  async abort(): Promise<void> {
    await this.#pending.catch(() => {});
    this.#close();
    await Deno.remove(this.tmpPath).catch(() => {});
  }

  #close(): void {
    if (!this.#closed) {
      this.#closed = true;
      this.file.close();
    }
  }
}

async function writeAll(file: Deno.FsFile, data: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < data.byteLength) offset += await file.write(data.subarray(offset));
}

/** True for the operating system's "no space left on device". */
export function isDiskFull(err: unknown): boolean {
  return err instanceof Error &&
    ((err as { code?: string }).code === "ENOSPC" || /os error 28\b/.test(err.message));
}
