// The durable side of access records not yet delivered: every record is appended, as it is
// noted, to its source bucket's current spool file under `<data dir>/access-log-spool/`
// (`<bucket>~<generation>.log`; bucket names have no `~`). A delivery takes the bucket's files
// aside (new records start a new file) and removes them once the log object is committed; what is
// left at start-up is delivered again. The kernel has a record as soon as it is noted, so a
// crash of the server loses none; files are synced every second, so a power loss loses at most
// the last second's records.
import { join } from "node:path";
import { log } from "../log.ts";

const SYNC_MS = 1000;
const encoder = new TextEncoder();

/** One spool file: the records of one bucket between two deliveries. */
export class SpoolFile {
  #file?: Promise<Deno.FsFile>;
  #writes: Promise<void> = Promise.resolve();
  #dirty = false;

  constructor(readonly path: string) {}

  /** Appends a line; writes stay in the order of the calls. */
  append(line: string): void {
    this.#file ??= Deno.open(this.path, { create: true, append: true });
    const file = this.#file;
    this.#writes = this.#writes.then(async () => {
      const bytes = encoder.encode(line + "\n");
      const handle = await file;
      for (let at = 0; at < bytes.length;) at += await handle.write(bytes.subarray(at));
      this.#dirty = true;
    }).catch((err) => log("warn", "An access record could not be spooled", { error: String(err) }));
  }

  async sync(): Promise<void> {
    await this.#writes;
    if (!this.#dirty || !this.#file) return;
    this.#dirty = false;
    await (await this.#file).syncData();
  }

  /** The records are delivered: the file goes. */
  async remove(): Promise<void> {
    await this.#writes;
    if (this.#file) (await this.#file).close();
    this.#file = undefined;
    await Deno.remove(this.path).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
  }
}

export class AccessSpool {
  readonly #current = new Map<string, SpoolFile>();
  #generation = 0;
  #timer?: ReturnType<typeof setInterval>;

  constructor(readonly dir: string) {}

  /** Creates the directory; returns the records left by an earlier run, file by file. */
  async open(): Promise<{ bucket: string; file: SpoolFile; lines: string[] }[]> {
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const left: { bucket: string; file: SpoolFile; lines: string[] }[] = [];
    const names: string[] = [];
    for await (const entry of Deno.readDir(this.dir)) {
      if (entry.isFile && /^[^~]+~[0-9a-z-]+\.log$/.test(entry.name)) names.push(entry.name);
    }
    for (const name of names.sort()) {
      const path = join(this.dir, name);
      const lines = (await Deno.readTextFile(path)).split("\n").filter((l) => l !== "");
      left.push({ bucket: name.slice(0, name.indexOf("~")), file: new SpoolFile(path), lines });
    }
    this.#timer = setInterval(() => void this.#syncAll(), SYNC_MS);
    Deno.unrefTimer(this.#timer);
    return left;
  }

  /** Spools a record of `bucket` in its current file. */
  append(bucket: string, line: string): void {
    let file = this.#current.get(bucket);
    if (!file) {
      const generation = `${Date.now().toString(36)}-${(this.#generation++).toString(36)}`;
      file = new SpoolFile(join(this.dir, `${bucket}~${generation}.log`));
      this.#current.set(bucket, file);
    }
    file.append(line);
  }

  /**
   * Ends `bucket`'s current file: the records noted so far are in it (and in no later file), to
   * be removed once delivered. Undefined when nothing was noted since the last call.
   */
  takeAside(bucket: string): SpoolFile | undefined {
    const file = this.#current.get(bucket);
    this.#current.delete(bucket);
    // Synced now: the timer syncs current files only, and a delivery may fail.
    file?.sync().catch((err) =>
      log("warn", "The access log spool could not be synced", { error: String(err) })
    );
    return file;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#syncAll();
  }

  async #syncAll(): Promise<void> {
    await Promise.all(
      [...this.#current.values()].map((f) =>
        f.sync().catch((err) =>
          log("warn", "The access log spool could not be synced", { error: String(err) })
        )
      ),
    );
  }
}
