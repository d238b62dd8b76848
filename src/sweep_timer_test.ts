import { assert, assertEquals } from "../tests/integration/assert.ts";
import { SweepTimer } from "./sweep_timer.ts";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (at most 3 s: a loaded machine delays timers) until `done` holds. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !done(); i++) await wait(10);
  assert(done(), "waited 3 s");
}

Deno.test("a sweep timer looks at every item each period, and only while there are items", async () => {
  const seen: string[] = [];
  const sweep = new SweepTimer<string>(50, (item) => seen.push(`${sweep.ticks}:${item}`));
  sweep.add("a");
  sweep.add("b");
  await until(() => sweep.ticks >= 2);
  assertEquals(seen.slice(0, 4).sort(), ["1:a", "1:b", "2:a", "2:b"]);
  sweep.delete("a");
  sweep.delete("b");
  // The next tick finds nothing and stops the timer: the ticks stand still from then on.
  const last = sweep.ticks;
  await until(() => sweep.ticks > last);
  const stopped = sweep.ticks;
  seen.length = 0;
  await wait(200);
  assertEquals([sweep.ticks, seen.length, sweep.size], [stopped, 0, 0]);
  // A new item starts it again; the ticks go on from where they were.
  sweep.add("c");
  await until(() => seen.length > 0);
  assertEquals(seen[0], `${stopped + 1}:c`);
  sweep.delete("c");
  const end = sweep.ticks;
  await until(() => sweep.ticks > end); // the tick that stops it
});
