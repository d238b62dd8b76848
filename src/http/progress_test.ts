import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { BodyStalledError, bodyTimeout, readWithProgress, setBodyTimeout } from "./progress.ts";

Deno.test("a body read that gets nothing within the body timeout fails and cancels the body", async () => {
  const before = bodyTimeout();
  setBodyTimeout(300);
  try {
    let cancelled = false;
    let answer: ((r: ReadableStreamReadResult<number>) => void) | undefined;
    const reader = {
      read: () => new Promise<ReadableStreamReadResult<number>>((r) => answer = r),
      cancel: () => {
        cancelled = true;
        return Promise.resolve();
      },
    };
    // A read answered in time is not affected, even after several reads.
    for (let i = 0; i < 3; i++) {
      const read = readWithProgress(reader);
      setTimeout(() => answer!({ done: false, value: i }), 150);
      assertEquals((await read).value, i);
    }
    assert(!cancelled);
    const started = performance.now();
    // The watch's timer does not keep a process alive (a server's listener does): this one does.
    const alive = setTimeout(() => {}, 5000);
    const err = await readWithProgress(reader).then(() => undefined, (e) => e);
    clearTimeout(alive);
    const waited = performance.now() - started;
    assert(err instanceof BodyStalledError, `failed with ${err}`);
    // The reads are looked at every 250 ms: noticed between the timeout and 500 ms after it.
    assert(waited >= 300 && waited < 1500, `failed after ${waited} ms`);
    assert(cancelled, "the body was cancelled");
  } finally {
    setBodyTimeout(before);
  }
});
