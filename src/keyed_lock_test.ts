import { assertEquals } from "../tests/integration/assert.ts";
import { KeyedLock } from "./keyed_lock.ts";

Deno.test("KeyedLock: one at a time per key, in arrival order; other keys alongside; failures release", async () => {
  const lock = new KeyedLock();
  const log: string[] = [];
  const step = (name: string, ms: number) => () =>
    new Promise<string>((resolve) => {
      log.push(`${name}+`);
      setTimeout(() => {
        log.push(`${name}-`);
        resolve(name);
      }, ms);
    });
  const failing = lock.run("a", () => Promise.reject(new Error("no"))).catch((err) => err.message);
  const results = await Promise.all([
    lock.run("a", step("a1", 20)),
    lock.run("a", step("a2", 1)),
    lock.run("b", step("b1", 5)),
    lock.run("a", step("a3", 1)),
  ]);
  assertEquals(await failing, "no");
  assertEquals(results, ["a1", "a2", "b1", "a3"]);
  // b1 ran at once, alongside a1 (which waited for the failed one); the a's never overlapped,
  // and went in the order they came.
  assertEquals(log, ["b1+", "a1+", "b1-", "a1-", "a2+", "a2-", "a3+", "a3-"]);
});
