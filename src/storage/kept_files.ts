// Shard files a reader keeps open between its reads. A GET reads a 4 MiB chunk in 1 MiB pieces,
// and opening and closing the shard file for each piece cost ~22 µs of the event loop's time (an
// async open, then a close): about a tenth of what a 64 MiB GET costs it. A file is lent to one
// read at a time (a read seeks, then reads), and the files kept are bounded per reader and
// across the server, so that descriptors stay for connections.

/** Files one reader keeps at most (the data shards of the chunk it reads, and of the next). */
const KEPT_PER_READER = 16;
/** Files kept by all readers together at most; beyond it a read closes its file as before. */
const KEPT_AT_MOST = 64;

let keptEverywhere = 0;

export class KeptFiles {
  /** Idle files by path, the one used longest ago first. */
  readonly #idle = new Map<string, Deno.FsFile>();
  #closed = false;

  /** The file at `path`, opened for reading: a kept one, or opened now. */
  async open(path: string): Promise<Deno.FsFile> {
    const kept = this.#idle.get(path);
    if (!kept) return await Deno.open(path, { read: true });
    this.#idle.delete(path);
    keptEverywhere--;
    return kept;
  }

  /**
   * A read is done with `file` (of `path`): kept for the next read of that path if it went well
   * and there is room, otherwise closed.
   */
  done(path: string, file: Deno.FsFile, ok: boolean): void {
    if (!ok || this.#closed || this.#idle.has(path) || keptEverywhere >= KEPT_AT_MOST) {
      file.close();
      return;
    }
    if (this.#idle.size >= KEPT_PER_READER) this.#closeOldest();
    this.#idle.set(path, file);
    keptEverywhere++;
  }

  /** Closes every kept file; files lent out meanwhile are closed when their reads are done. */
  close(): void {
    this.#closed = true;
    this.release();
  }

  /** Closes the kept files (the reader pauses); later reads open and keep files again. */
  release(): void {
    while (this.#idle.size > 0) this.#closeOldest();
  }

  #closeOldest(): void {
    const [path, file] = this.#idle.entries().next().value!;
    this.#idle.delete(path);
    keptEverywhere--;
    file.close();
  }
}

/** Files kept by all readers now (tests). */
export function keptFileCount(): number {
  return keptEverywhere;
}
