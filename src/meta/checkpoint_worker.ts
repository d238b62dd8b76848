// Runs SQLite checkpoints for checkpointer.ts on a thread of its own: copying WAL pages into the
// database and flushing both takes milliseconds on a fast disk and tens on a slow one, which the
// event loop no longer spends inside a COMMIT.
import { DatabaseSync } from "node:sqlite";

export type CheckpointRequest = { kind: "checkpoint"; path: string } | { kind: "close" };
export type CheckpointReply =
  | { kind: "checkpointed"; frames: number; copied: number }
  | { kind: "failed"; error: string }
  | { kind: "closed" };

interface Scope {
  onmessage: ((e: MessageEvent<CheckpointRequest>) => void) | null;
  postMessage(message: CheckpointReply): void;
}
const scope = self as unknown as Scope;
let db: DatabaseSync | undefined;

function checkpoint(path: string): CheckpointReply {
  if (!db) {
    db = new DatabaseSync(path);
    // A checkpoint flushes the WAL before copying and the database after (any level but OFF);
    // FULL says so whatever SQLite's defaults become.
    db.exec("PRAGMA synchronous = FULL");
  }
  // PASSIVE: copies what no reader still needs, never waits for the server's writes.
  const row = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as Record<string, number>;
  return { kind: "checkpointed", frames: Number(row.log), copied: Number(row.checkpointed) };
}

scope.onmessage = (e) => {
  let reply: CheckpointReply;
  if (e.data.kind === "close") {
    db?.close();
    db = undefined;
    reply = { kind: "closed" };
  } else {
    try {
      reply = checkpoint(e.data.path);
    } catch (err) {
      reply = { kind: "failed", error: String(err) };
    }
  }
  scope.postMessage(reply);
};
