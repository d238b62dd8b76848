// Metadata backups: consistent online snapshots of the SQLite database (VACUUM INTO reads one
// transaction's view while writes go on), written into the backup directory under a timestamped
// name (oldest beyond the kept count removed) or streamed as a download. The shards are not
// part of a snapshot: they stay on the drives. Restoring is scripts/restore.ts.
import { join } from "node:path";
import type { MetaStore } from "../meta/store.ts";
import { DIR_MODE } from "../storage/private_modes.ts";
import { syncDir } from "../storage/shard_files.ts";

const NAME = /^meta-\d{8}T\d{6}\d{3}Z\.db$/;

export interface BackupReport {
  path: string;
  bytes: number;
  startedAt: string;
  finishedAt: string;
  /** Older snapshots removed to keep the kept count. */
  removed: string[];
}

export interface BackupOptions {
  dir?: string;
  keep: number;
  /** Where download snapshots are written before they stream (the metadata directory). */
  scratchDir: string;
}

function snapshotName(at: Date): string {
  return `meta-${at.toISOString().replace(/[-:.]/g, "")}.db`;
}

export class Backups {
  #running?: Promise<BackupReport>;
  #last?: BackupReport;
  #timer?: ReturnType<typeof setInterval>;

  constructor(
    readonly meta: MetaStore,
    readonly opts: BackupOptions,
    readonly log: (level: "info" | "error", message: string, fields: object) => void,
  ) {}

  /** Snapshots every `seconds` into the backup directory. */
  schedule(seconds: number): void {
    if (seconds <= 0 || !this.opts.dir) return;
    this.#timer = setInterval(() => {
      this.toDirectory().catch((err) =>
        this.log("error", "Scheduled metadata backup failed", { error: String(err) })
      );
    }, seconds * 1000);
  }

  last(): BackupReport | undefined {
    return this.#last;
  }

  /** A snapshot in the backup directory (one at a time; a second caller joins the first). */
  toDirectory(): Promise<BackupReport> {
    const dir = this.opts.dir;
    if (!dir) return Promise.reject(new Error("STORE_BACKUP_DIR is not set"));
    this.#running ??= this.#write(dir).finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #write(dir: string): Promise<BackupReport> {
    const started = new Date();
    await Deno.mkdir(dir, { recursive: true, mode: DIR_MODE });
    const path = join(dir, snapshotName(started));
    const partial = `${path}.partial`;
    await Deno.remove(partial).catch(() => {});
    try {
      await this.meta.snapshot(partial);
      await fsyncFile(partial);
      await Deno.rename(partial, path);
      await syncDir(dir);
    } catch (err) {
      await Deno.remove(partial).catch(() => {});
      throw err;
    }
    const report: BackupReport = {
      path,
      bytes: (await Deno.stat(path)).size,
      startedAt: started.toISOString(),
      finishedAt: new Date().toISOString(),
      removed: await this.#prune(dir),
    };
    this.#last = report;
    this.log("info", "Metadata backup written", { ...report });
    return report;
  }

  async #prune(dir: string): Promise<string[]> {
    const names: string[] = [];
    for await (const e of Deno.readDir(dir)) if (e.isFile && NAME.test(e.name)) names.push(e.name);
    names.sort();
    const old = names.slice(0, Math.max(0, names.length - this.opts.keep));
    for (const name of old) await Deno.remove(join(dir, name)).catch(() => {});
    return old.map((n) => join(dir, n));
  }

  /** A snapshot as a stream; the scratch file is gone once the stream is open. */
  async download(): Promise<{ name: string; size: number; body: ReadableStream<Uint8Array> }> {
    const name = snapshotName(new Date());
    const scratch = join(this.opts.scratchDir, `.${name}.${crypto.randomUUID()}.download`);
    try {
      await this.meta.snapshot(scratch);
      const file = await Deno.open(scratch, { read: true });
      const size = (await file.stat()).size;
      return { name, size, body: file.readable };
    } finally {
      await Deno.remove(scratch).catch(() => {});
    }
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
  }
}

async function fsyncFile(path: string): Promise<void> {
  const file = await Deno.open(path, { read: true, write: true });
  try {
    await file.sync();
  } finally {
    file.close();
  }
}
