import { ReadBudget } from "./read_budget.ts";

function assertEquals<T>(actual: T, expected: T, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

Deno.test("read budget: readers wait in line instead of going over the budget", async () => {
  const budget = new ReadBudget(10);
  const a = await budget.acquire(6);
  assertEquals(budget.tryAcquire(6), undefined, "a grant over the budget");
  const order: string[] = [];
  const b = budget.acquire(6, 3).then((g) => (order.push("b"), g));
  const c = budget.acquire(6, 0).then((g) => (order.push("c"), g));
  assertEquals(budget.waiting, 2, "waiting readers");
  a.release();
  a.release(); // a second release changes nothing
  const first = await c;
  assertEquals(order, ["c"], "a reader served less goes first");
  assertEquals(budget.used, 6, "bytes held");
  first.release();
  (await b).release();
  assertEquals(order, ["c", "b"], "then the next in line");
  assertEquals(budget.used, 0, "all given back");
});

Deno.test("read budget: a grant larger than the budget waits until nothing is held", async () => {
  const budget = new ReadBudget(4);
  const small = await budget.acquire(2);
  let big = false;
  const pending = budget.acquire(8).then((g) => (big = true, g));
  await Promise.resolve();
  assertEquals(big, false, "granted while other bytes are held");
  small.release();
  (await pending).release();
  assertEquals(big, true, "granted once nothing is held");
});
