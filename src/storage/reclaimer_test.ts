// The freed-chunk removal queue: answers before removals, a bounded backlog, errors logged, stop.
import { assertEquals } from "../../tests/integration/assert.ts";
import type { ChunkRecord } from "../meta/store.ts";
import { setLogSink } from "../log.ts";
import { Reclaimer } from "./reclaimer.ts";

function rec(id: string): ChunkRecord {
  return {
    id,
    plainSize: 1,
    storedSize: 1,
    compression: "none",
    encrypted: false,
    dataShards: 1,
    parityShards: 0,
    drives: [0],
  };
}

/** A removal that finishes when the test says so. */
function gatedRemovals() {
  const started: string[] = [];
  const gates = new Map<string, () => void>();
  const remove = (r: ChunkRecord) =>
    new Promise<void>((resolve) => {
      started.push(r.id);
      gates.set(r.id, resolve);
    });
  const finish = (id: string) => gates.get(id)!();
  return { started, remove, finish };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("reclaimer: add resolves before the removals, drained waits for them", async () => {
  const { started, remove, finish } = gatedRemovals();
  const r = new Reclaimer({ remove, parallel: 2, backlog: 100 });
  await r.add([rec("a"), rec("b"), rec("c")]);
  assertEquals(started, ["a", "b"]);
  assertEquals(r.pending, 3);
  let drained = false;
  const done = r.drained().then(() => drained = true);
  finish("a");
  await tick();
  assertEquals(started, ["a", "b", "c"]);
  finish("b");
  await tick();
  assertEquals(drained, false);
  finish("c");
  await done;
  assertEquals([r.pending, r.removed], [0, 3]);
});

Deno.test("reclaimer: a full backlog makes the next add wait for room", async () => {
  const { started, remove, finish } = gatedRemovals();
  const r = new Reclaimer({ remove, parallel: 1, backlog: 2 });
  await r.add([rec("a"), rec("b")]);
  let added = false;
  const next = r.add([rec("c")]).then(() => added = true);
  await tick();
  assertEquals(added, false);
  finish("a");
  await next;
  assertEquals(r.pending, 2);
  finish("b");
  await tick();
  finish("c");
  await r.drained();
  assertEquals(started, ["a", "b", "c"]);
});

Deno.test("reclaimer: a failed removal is logged and the queue goes on", async () => {
  const logged: string[] = [];
  setLogSink((_level, message, fields) => logged.push(`${message} ${fields.chunk}`));
  try {
    const removed: string[] = [];
    const r = new Reclaimer({
      remove: (x) =>
        x.id === "bad" ? Promise.reject(new Error("EIO")) : (removed.push(x.id), Promise.resolve()),
      parallel: 1,
      backlog: 10,
    });
    await r.add([rec("bad"), rec("ok")]);
    await r.drained();
    assertEquals(removed, ["ok"]);
    assertEquals(logged.length, 1);
    assertEquals(logged[0].endsWith(" bad"), true);
  } finally {
    setLogSink(undefined);
  }
});

Deno.test("reclaimer: stop gives up on what is queued after its wait", async () => {
  const { started, remove, finish } = gatedRemovals();
  const r = new Reclaimer({ remove, parallel: 1, backlog: 10 });
  await r.add([rec("a"), rec("b")]);
  await r.stop(20);
  finish("a");
  await tick();
  assertEquals(started, ["a"]);
  await r.add([rec("c")]);
  await r.drained();
  assertEquals(started, ["a"]);
});
