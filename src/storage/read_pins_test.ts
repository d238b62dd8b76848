import { assertEquals } from "../../tests/integration/assert.ts";
import { ReadPins } from "./read_pins.ts";

Deno.test("read pins: a removal waits for the last reader of the chunk, and only for it", () => {
  const pins = new ReadPins();
  const ran: string[] = [];
  assertEquals(pins.deferWhileRead("a", () => ran.push("a")), false, "nobody reads a");
  const first = pins.pin(["a", "b", "a"]);
  const second = pins.pin(["a"]);
  assertEquals([pins.reading("a"), pins.reading("b"), pins.size], [true, true, 2]);
  assertEquals(pins.deferWhileRead("a", () => ran.push("a")), true);
  assertEquals(pins.deferWhileRead("b", () => ran.push("b")), true);
  first();
  first(); // a second call lets go of nothing more
  assertEquals(ran, ["b"], "b had one reader; a still has one");
  assertEquals(pins.reading("a"), true);
  second();
  assertEquals(ran, ["b", "a"]);
  assertEquals(pins.size, 0);
  // Pinned again later: earlier removals do not run twice.
  pins.pin(["a"])();
  assertEquals(ran, ["b", "a"]);
});
