// Which drives are usable. A drive whose shard reads and writes keep failing with I/O errors is
// taken offline: reads go around it (its shards count as missing and are rebuilt from the
// others) and writes skip it while the other shards keep the write quorum. Offline drives, and
// drives missing since start-up, are probed periodically; one that answers again is put back and
// healed (see Healer). Every drive that misses a shard write is flagged in the metadata until a
// heal of it finishes, so a restart does not forget it.
import { isDiskFull } from "./disk_errors.ts";
import {
  type Drive,
  type DriveSet,
  type MissingDrive,
  probeDrive,
  readIdentity,
  reopenDrive,
} from "./drives.ts";

export type DriveState = "online" | "offline" | "missing";

export interface DriveStatus {
  id: number;
  uuid: string;
  path: string;
  state: DriveState;
  /** I/O errors since start-up, and in a row since the last success. */
  errors: number;
  consecutiveErrors: number;
  lastError?: string;
  lastErrorAt?: string;
  needsHeal: boolean;
}

export interface DriveMonitorOptions {
  /** I/O errors in a row after which a drive is taken offline. */
  errorLimit: number;
  /** A drive was put back (or replaced while missing): heal it. */
  onReturn: (driveId: number) => void;
  /** Persists the flag of a drive that missed a shard write. */
  flagForHeal: (driveId: number) => Promise<void>;
  warn: (message: string, fields?: Record<string, unknown>) => void;
}

interface Entry {
  status: DriveStatus;
  missing?: MissingDrive;
}

export class DriveMonitor {
  readonly #entries = new Map<number, Entry>();
  #probing = false;

  constructor(readonly drives: DriveSet, flagged: number[], readonly opts: DriveMonitorOptions) {
    const status = (d: { id: number; uuid: string; path: string }, state: DriveState) => ({
      id: d.id,
      uuid: d.uuid,
      path: d.path,
      state,
      errors: 0,
      consecutiveErrors: 0,
      needsHeal: flagged.includes(d.id),
    });
    for (const d of drives.list) this.#entries.set(d.id, { status: status(d, "online") });
    for (const m of drives.missing) {
      this.#entries.set(m.id, { status: status(m, "missing"), missing: m });
    }
  }

  /** The drive when it may be used for shard I/O. */
  usable(id: number): Drive | undefined {
    return this.#entries.get(id)?.status.state === "online" ? this.drives.byId.get(id) : undefined;
  }

  succeeded(id: number): void {
    const entry = this.#entries.get(id);
    if (entry) entry.status.consecutiveErrors = 0;
  }

  /**
   * An I/O error of a shard read or write on the drive (not a checksum mismatch). A full disk
   * is not a failing one: it still serves reads, so it is not counted.
   */
  failed(id: number, err: unknown): void {
    const entry = this.#entries.get(id);
    if (!entry || isDiskFull(err)) return;
    const s = entry.status;
    s.errors++;
    s.consecutiveErrors++;
    s.lastError = String(err);
    s.lastErrorAt = new Date().toISOString();
    if (s.state === "online" && s.consecutiveErrors >= this.opts.errorLimit) {
      this.#offline(s, `${s.consecutiveErrors} I/O errors in a row, the last: ${s.lastError}`);
    }
  }

  /** A shard meant for the drive was not written: it needs a heal once it is back. */
  async missedWrite(id: number): Promise<void> {
    const entry = this.#entries.get(id);
    if (!entry || entry.status.needsHeal) return;
    entry.status.needsHeal = true;
    await this.opts.flagForHeal(id).catch((err) =>
      this.opts.warn("Could not flag a drive for healing", { drive: id, error: String(err) })
    );
  }

  /** A heal of the drive finished without errors. */
  healed(id: number): void {
    const entry = this.#entries.get(id);
    if (entry) entry.status.needsHeal = false;
  }

  /**
   * Takes drives whose identity file is gone or changed offline (a disk swapped while running),
   * puts back offline drives that answer again (an empty directory in place of one adopts its
   * identity, as at start-up) and opens missing ones that appeared.
   */
  async probe(): Promise<void> {
    if (this.#probing) return;
    this.#probing = true;
    try {
      for (const entry of this.#entries.values()) {
        const s = entry.status;
        const drive = this.drives.byId.get(s.id);
        if (s.state === "online" && drive) {
          const uuid = await readIdentity(drive.path).catch(() => undefined);
          if (uuid !== drive.uuid) this.#offline(s, "the identity file is gone or changed");
        }
        if (s.state === "offline" && drive) {
          if (await probeDrive(drive)) this.#back(entry, "Drive is back online");
          else if (await reopenDrive(drive).catch(() => undefined)) {
            this.#back(entry, "Drive was replaced by an empty one");
          }
        } else if (s.state === "missing" && entry.missing) {
          const opened = await reopenDrive(entry.missing).catch(() => undefined);
          if (!opened) continue;
          this.drives.list.push(opened);
          this.drives.byId.set(opened.id, opened);
          entry.missing = undefined;
          this.#back(entry, "Missing drive appeared");
        }
      }
    } finally {
      this.#probing = false;
    }
  }

  #offline(s: DriveStatus, reason: string): void {
    s.state = "offline";
    s.lastError = reason;
    s.lastErrorAt = new Date().toISOString();
    this.opts.warn("Drive taken offline", { drive: s.path, reason });
  }

  #back(entry: Entry, message: string): void {
    entry.status.state = "online";
    entry.status.consecutiveErrors = 0;
    entry.status.needsHeal = true;
    this.opts.warn(`${message}; healing it`, { drive: entry.status.path });
    void this.opts.flagForHeal(entry.status.id).catch(() => {});
    this.opts.onReturn(entry.status.id);
  }

  list(): DriveStatus[] {
    return [...this.#entries.values()].map((e) => ({ ...e.status }));
  }

  onlineCount(): number {
    return [...this.#entries.values()].filter((e) => e.status.state === "online").length;
  }
}
