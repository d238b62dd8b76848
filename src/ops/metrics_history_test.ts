import { assertEquals } from "../../tests/integration/assert.ts";
import { TotalsHistory } from "./metrics_history.ts";

const totals = (n: number) => () => ({
  requests: n,
  received: 2 * n,
  sent: 3 * n,
  seconds: n / 10,
});

Deno.test("metrics history: one sample per interval, the oldest dropped past the limit", () => {
  const history = new TotalsHistory(1000, 3);
  history.offer(0, totals(1));
  history.offer(500, totals(2)); // within the interval: not kept
  history.offer(1000, totals(3));
  history.offer(2500, totals(4));
  assertEquals(history.samples().map((s) => [s.at, s.requests]), [[0, 1], [1000, 3], [2500, 4]]);
  history.offer(3600, totals(5));
  assertEquals(history.samples().map((s) => s.at), [1000, 2500, 3600]);
  assertEquals(history.samples()[2], {
    at: 3600,
    requests: 5,
    received: 10,
    sent: 15,
    seconds: 0.5,
  });
});
