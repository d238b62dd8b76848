import { assertEquals } from "../../tests/integration/assert.ts";
import { removalWins } from "./removal_time.ts";

Deno.test("removal time: the later of a write and a removal wins, the removal on a tie", () => {
  // Deleted after the copy was written: the removal takes it.
  assertEquals(removalWins(2000, 1999), true);
  // Same millisecond: the removal, on every node alike.
  assertEquals(removalWins(2000, 2000), true);
  // Written after the removal: the copy stays (and a replica of it is taken).
  assertEquals(removalWins(2000, 2001), false);
  // A removal without a time (an older sender's) decides nothing by time.
  assertEquals(removalWins(undefined, 0), false);
});
